//! What the fuzz targets assert of the Lambda glue: S3 event notifications into the indexer,
//! API Gateway (HTTP API, payload 2.0) requests into the router, over in-memory stores.
//!
//! Compiled twice: into the `cargo fuzz` targets (through `src/lib.rs`) and, as is, into
//! `crates/lambda/tests/fuzz_regressions.rs`. So it may only use what the Lambda crate's tests
//! can reach.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use aws_lambda_events::event::s3::S3Event;
use axum::body::Body;
use axum::http::{header, Method};
use axum::Router;
use tfreg_core::memory::{MemoryArtifactStore, MemoryMetadataStore, MemoryTokenStore};
use tfreg_core::tokens::{self, TokenStore};
use tfreg_core::{Hostname, Indexer};
use tfreg_lambda::settings::ApiSettings;
use tfreg_lambda::{app_state, decode_event_key, handle_s3_event, FunctionSettings, Stores};
use tower::ServiceExt;

/// The bucket the indexer is configured with, as in `events/s3-*.json`.
const BUCKET: &str = "tfreg-artifacts";

/// The registry's own hostname, as in `events/apigw-*.json`.
const HOSTNAME: &str = "registry.example.com";

/// The bearer token of `events/apigw-*.json`; replaced by a valid token before each request,
/// so seeds and what the fuzzer makes of them get past authentication.
const TOKEN_PLACEHOLDER: &str = "REPLACED-BY-TESTS";

macro_rules! fixture {
    ($name:literal) => {
        include_bytes!(concat!("../../crates/core/tests/fixtures/", $name)).as_slice()
    };
}

/// What the stores hold: a module in two versions, the signed acme/widget 1.0.0 release with
/// its key, and a mirrored provider; the keys `events/*.json` name.
const FILES: [(&str, &[u8]); 8] = [
    ("modules/acme/network/aws/1.0.0.tar.gz", b"module 1.0.0"),
    (
        "modules/acme/network/aws/1.1.0+build.7.tar.gz",
        b"module 1.1.0",
    ),
    (
        "providers/acme/widget/1.0.0/terraform-provider-widget_1.0.0_linux_amd64.zip",
        fixture!("terraform-provider-widget_1.0.0_linux_amd64.zip"),
    ),
    (
        "providers/acme/widget/1.0.0/terraform-provider-widget_1.0.0_darwin_arm64.zip",
        fixture!("terraform-provider-widget_1.0.0_darwin_arm64.zip"),
    ),
    (
        "providers/acme/widget/1.0.0/terraform-provider-widget_1.0.0_SHA256SUMS",
        fixture!("terraform-provider-widget_1.0.0_SHA256SUMS"),
    ),
    (
        "providers/acme/widget/1.0.0/terraform-provider-widget_1.0.0_SHA256SUMS.sig",
        fixture!("terraform-provider-widget_1.0.0_SHA256SUMS.sig"),
    ),
    ("keys/acme/release.asc", fixture!("release.asc")),
    (
        "mirror/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip",
        fixture!("terraform-provider-widget_1.0.0_linux_amd64.zip"),
    ),
];

/// A module archive that passes the indexer's checks, told apart by `content` (its
/// `main.tf`'s comment), under a module key; any other file's content as is.
fn as_published(key: &str, content: &[u8]) -> Vec<u8> {
    match tfreg_core::layout::ArchiveFormat::split(key) {
        Some((_, format)) if key.starts_with("modules/") => {
            let main = [b"# ", content].concat();
            tfreg_core::module_archive::archive_of(format, &[("main.tf", &main)])
        }
        _ => content.to_vec(),
    }
}

/// One runtime for every input: building one per input would dominate the fuzzer's time.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

struct World {
    metadata: Arc<MemoryMetadataStore>,
    artifacts: Arc<MemoryArtifactStore>,
}

impl World {
    /// Fresh stores holding [`FILES`], not indexed yet.
    fn new() -> World {
        let artifacts = Arc::new(MemoryArtifactStore::new());
        for (key, content) in FILES {
            artifacts.put(key, as_published(key, content));
        }
        World {
            metadata: Arc::new(MemoryMetadataStore::new()),
            artifacts,
        }
    }

    /// The indexer as the indexer function builds it (`TFREG_HOSTNAME` set).
    fn indexer(&self) -> Indexer {
        Indexer::new(self.metadata.clone(), self.artifacts.clone())
            .with_hostname(Some(Hostname::parse(HOSTNAME).expect("a valid hostname")))
    }
}

/// `s3_event`: any JSON the indexer function could be invoked with. Keys decode to no more
/// than they were, unchanged when nothing is escaped; the indexer, over fresh stores, never
/// panics and reports at most one outcome per record (errors are fine: Lambda retries them).
pub fn s3_event(data: &[u8]) {
    s3_outcomes(data);
}

/// [`s3_event`]'s checks, returning what the indexer said (`None` when the input is no event).
pub fn s3_outcomes(data: &[u8]) -> Option<Result<Vec<String>, String>> {
    let event = serde_json::from_slice::<S3Event>(data).ok()?;
    for record in &event.records {
        let Some(raw) = record.s3.object.key.as_deref() else {
            continue;
        };
        if let Ok(key) = decode_event_key(raw) {
            assert!(key.len() <= raw.len(), "{raw:?} decoded to {key:?}");
            if !raw.contains(['%', '+']) {
                assert_eq!(key, raw);
            }
        }
    }
    let records = event.records.len();
    let world = World::new();
    let indexer = world.indexer();
    let outcomes = runtime().block_on(handle_s3_event(&indexer, BUCKET, event));
    if let Ok(outcomes) = &outcomes {
        assert!(outcomes.len() <= records, "{outcomes:?}");
    }
    Some(outcomes.map_err(|e| e.to_string()))
}

/// The API as the Lambda functions build it, over published stores: one public registry with
/// presigned-style downloads, one that wants tokens and serves `/v1/artifacts/` itself.
struct Api {
    public: Router,
    private: Router,
    token: String,
}

fn api() -> &'static Api {
    static API: OnceLock<Api> = OnceLock::new();
    API.get_or_init(|| {
        runtime().block_on(async {
            let world = World::new();
            world
                .indexer()
                .reindex_all(|_, _| {})
                .await
                .expect("the fixtures index");
            let tokens = Arc::new(MemoryTokenStore::default());
            let token = tokens::generate(vec![], "fuzz".into(), None, SystemTime::now());
            tokens
                .put(token.record.clone())
                .await
                .expect("a token store in memory");
            let router = |settings: &[(&str, &str)]| {
                let config = ApiSettings::from_lookup(|name| {
                    settings
                        .iter()
                        .chain(&[
                            ("TFREG_TABLE", "tfreg"),
                            ("TFREG_BUCKET", BUCKET),
                            ("TFREG_HOSTNAME", HOSTNAME),
                        ])
                        .find(|(n, _)| *n == name)
                        .map(|(_, v)| (*v).to_owned())
                })
                .expect("a valid configuration");
                let stores = Stores {
                    metadata: world.metadata.clone(),
                    artifacts: world.artifacts.clone(),
                    downloads: tfreg_core::Downloads::presigned(
                        world.artifacts.clone(),
                        config.downloads.redirect_signer(),
                    ),
                    tokens: tokens.clone(),
                };
                tfreg_http::router(app_state(&config, stores))
            };
            Api {
                public: router(&[("TFREG_PUBLIC", "true")]),
                private: router(&[
                    ("TFREG_DOWNLOADS", "redirect"),
                    ("TFREG_URL_SECRET", "0123456789abcdef0123456789abcdef"),
                ]),
                token: token.token,
            }
        })
    })
}

/// `apigw_event`: any JSON the API functions could be invoked with, through `lambda_http`'s
/// conversion into both routers. Never a panic, never a 5xx, and every 4xx is the API's JSON
/// error, `{"errors": ["..."]}` (a HEAD answer has no body to check).
pub fn apigw_event(data: &[u8]) {
    apigw_statuses(data);
}

/// [`apigw_event`]'s checks, returning the public and the private router's statuses (none
/// when the input is no request).
pub fn apigw_statuses(data: &[u8]) -> Vec<u16> {
    let mut statuses = Vec::new();
    let Ok(text) = std::str::from_utf8(data) else {
        return statuses;
    };
    let api = api();
    let text = text.replace(TOKEN_PLACEHOLDER, &api.token);
    for router in [&api.public, &api.private] {
        let Some(request) = lambda_request(&text) else {
            return statuses;
        };
        let method = request.method().clone();
        let uri = request.uri().clone();
        let (parts, body) = request.into_parts();
        let request = axum::http::Request::from_parts(parts, Body::from(body.to_vec()));
        let (status, headers, body) = runtime().block_on(async {
            let response = router
                .clone()
                .oneshot(request)
                .await
                .expect("a router never fails");
            let (parts, body) = response.into_parts();
            let body = axum::body::to_bytes(body, usize::MAX)
                .await
                .expect("an in-memory body reads");
            (parts.status, parts.headers, body)
        });
        statuses.push(status.as_u16());
        let shown = String::from_utf8_lossy(&body);
        assert!(
            !status.is_server_error(),
            "{method} {uri} answered {status}: {shown}"
        );
        if !status.is_client_error() || method == Method::HEAD {
            continue;
        }
        assert_eq!(
            headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
            Some("application/json"),
            "{method} {uri} answered {status} without a JSON content type: {shown}"
        );
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
            panic!("{method} {uri} answered {status} with a body that is not JSON ({e}): {shown}")
        });
        let errors = json
            .get("errors")
            .and_then(|e| e.as_array())
            .unwrap_or_else(|| panic!("{method} {uri} answered {status} without errors: {json}"));
        assert!(
            !errors.is_empty()
                && errors
                    .iter()
                    .all(|e| e.as_str().is_some_and(|s| !s.is_empty())),
            "{method} {uri} answered {status} with {json}"
        );
    }
    statuses
}

/// `lambda_http::request::from_str`, with the panics raised inside `lambda_http` itself
/// counted as "no request".
///
/// lambda_http 1.3 panics (`failed to build request: http::Error(InvalidUri(..))`) on events
/// whose Host header (an empty one, or one with `}`) makes no valid URI, before any tfreg
/// code runs; in Lambda that fails the invocation and API Gateway answers its own 500. The
/// inputs are kept in `regressions/apigw_event/` and reported; tolerating exactly these
/// panics lets fuzzing go on into the router, and a panic anywhere else still fails.
fn lambda_request(text: &str) -> Option<lambda_http::Request> {
    /// Where the last panic happened, and what it said.
    static PANIC: Mutex<Option<(String, String)>> = Mutex::new(None);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        let place = info.location().map(|l| l.to_string()).unwrap_or_default();
        if let Ok(mut panic) = PANIC.lock() {
            *panic = Some((place, info.to_string()));
        }
    }));
    let result = std::panic::catch_unwind(|| lambda_http::request::from_str(text));
    std::panic::set_hook(previous);
    match result {
        Ok(parsed) => parsed.ok(),
        Err(_) => {
            let (place, message) = PANIC
                .lock()
                .ok()
                .and_then(|mut p| p.take())
                .unwrap_or_default();
            let in_lambda_http = place.contains("lambda_http") && place.contains("request.rs");
            assert!(in_lambda_http, "converting the event panicked: {message}");
            None
        }
    }
}
