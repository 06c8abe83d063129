//! The Lambda glue, fed the sample events of `events/`: API Gateway requests through
//! `lambda_http` into the router, S3 notifications through `aws_lambda_events` into the
//! indexer. In-memory stores stand in for DynamoDB and S3 (the adapters are tested against
//! the emulator elsewhere).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_lambda_events::event::s3::S3Event;
use axum::body::Body;
use tfreg_core::memory::{MemoryArtifactStore, MemoryMetadataStore, MemoryTokenStore};
use tfreg_core::signing::UrlSigner;
use tfreg_core::tokens::{self, TokenStore};
use tfreg_core::Indexer;
use tfreg_lambda::settings::ApiSettings;
use tfreg_lambda::{app_state, decode_event_key, handle_s3_event, FunctionSettings, Stores};
use tower::ServiceExt;

fn read(path: &str) -> String {
    let path = format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../core/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A module archive that passes the indexer's checks.
fn module() -> Vec<u8> {
    use tfreg_core::module_archive::{archive_of, ArchiveFormat};
    archive_of(ArchiveFormat::TarGz, &[("main.tf", b"")])
}

fn config() -> ApiSettings {
    ApiSettings::from_lookup(|name| {
        match name {
            "TFREG_TABLE" => Some("tfreg"),
            "TFREG_BUCKET" => Some("tfreg-artifacts"),
            "TFREG_HOSTNAME" => Some("registry.example.com"),
            _ => None,
        }
        .map(str::to_owned)
    })
    .unwrap()
}

struct World {
    signer: Arc<UrlSigner>,
    artifacts: Arc<MemoryArtifactStore>,
    metadata: Arc<MemoryMetadataStore>,
    tokens: Arc<MemoryTokenStore>,
}

impl World {
    fn new() -> World {
        let signer = Arc::new(UrlSigner::new(vec![9; 32], Duration::from_secs(60)));
        World {
            signer,
            artifacts: Arc::new(MemoryArtifactStore::new()),
            metadata: Arc::new(MemoryMetadataStore::new()),
            tokens: Arc::new(MemoryTokenStore::default()),
        }
    }

    fn stores(&self) -> Stores {
        Stores {
            metadata: self.metadata.clone(),
            artifacts: self.artifacts.clone(),
            downloads: tfreg_core::Downloads::served(self.signer.clone(), self.artifacts.clone()),
            tokens: self.tokens.clone(),
        }
    }

    fn indexer(&self) -> Indexer {
        Indexer::new(self.metadata.clone(), self.artifacts.clone())
    }

    /// A module and the signed acme/widget release, indexed.
    async fn published() -> World {
        let world = World::new();
        let dir = "providers/acme/widget/1.0.0";
        let sums = "terraform-provider-widget_1.0.0_SHA256SUMS";
        let linux = "terraform-provider-widget_1.0.0_linux_amd64.zip";
        world
            .artifacts
            .put("modules/acme/network/aws/1.0.0.tar.gz", module());
        world
            .artifacts
            .put(&format!("{dir}/{linux}"), fixture(linux));
        world.artifacts.put(&format!("{dir}/{sums}"), fixture(sums));
        world.artifacts.put(
            &format!("{dir}/{sums}.sig"),
            fixture(&format!("{sums}.sig")),
        );
        world
            .artifacts
            .put("keys/acme/release.asc", fixture("release.asc"));
        world.indexer().reindex_all(|_, _| {}).await.unwrap();
        world
    }
}

#[test]
fn configuration_errors_name_the_setting() {
    let err = ApiSettings::from_lookup(|_| None).unwrap_err();
    assert_eq!(err.to_string(), "configuration: TFREG_TABLE: is not set");
    let with = |extra: (&'static str, &'static str)| {
        ApiSettings::from_lookup(move |name| match name {
            "TFREG_TABLE" => Some("t".into()),
            "TFREG_BUCKET" => Some("b".into()),
            n if n == extra.0 => Some(extra.1.into()),
            _ => None,
        })
    };
    assert!(with(("TFREG_PUBLIC", "maybe"))
        .unwrap_err()
        .to_string()
        .contains("TFREG_PUBLIC"));
    assert!(with(("TFREG_URL_TTL", "soon"))
        .unwrap_err()
        .to_string()
        .contains("TFREG_URL_TTL"));
    assert!(with(("TFREG_URL_TTL", "2h"))
        .unwrap_err()
        .to_string()
        .contains("1h"));
    assert!(with(("TFREG_HOSTNAME", "bad host"))
        .unwrap_err()
        .to_string()
        .contains("TFREG_HOSTNAME"));
    assert!(with(("TFREG_DOWNLOADS", "redirect"))
        .unwrap_err()
        .to_string()
        .contains("TFREG_URL_SECRET"));
    assert!(with(("TFREG_DOWNLOADS", "proxy"))
        .unwrap_err()
        .to_string()
        .contains("TFREG_DOWNLOADS"));
    let ok = with(("TFREG_PUBLIC", "true")).unwrap();
    assert!(ok.public);
    assert_eq!(ok.downloads.url_ttl, Duration::from_secs(300));
}

#[tokio::test]
async fn every_api_gateway_event_gets_its_answer() {
    let world = World::published().await;
    let token = tokens::generate(vec![], String::new(), None, SystemTime::now());
    world.tokens.put(token.record.clone()).await.unwrap();
    let app = tfreg_http::router(app_state(&config(), world.stores()));

    let cases = [
        ("apigw-discovery", 200, "\"modules.v1\":\"/v1/modules/\""),
        ("apigw-module-versions", 200, "\"version\":\"1.0.0\""),
        ("apigw-module-download", 204, ""),
        (
            "apigw-provider-versions",
            200,
            "\"platforms\":[{\"os\":\"linux\",\"arch\":\"amd64\"}]",
        ),
        (
            "apigw-provider-download",
            200,
            "\"shasums_signature_url\":\"https://registry.example.com/",
        ),
        ("apigw-mirror-index", 200, "{\"versions\":{\"1.0.0\":{}}}"),
        ("apigw-mirror-version", 200, "\"hashes\":[\"h1:"),
    ];
    for (event, status, body_contains) in cases {
        let mut request = lambda_http::request::from_str(&read(&format!("events/{event}.json")))
            .unwrap_or_else(|e| panic!("{event}: {e}"));
        request.headers_mut().insert(
            "authorization",
            format!("Bearer {}", token.token).parse().unwrap(),
        );
        let (parts, body) = request.into_parts();
        let request = axum::http::Request::from_parts(parts, Body::from(body.to_vec()));
        let response = app.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{event}");
        if event == "apigw-module-download" {
            let url = response.headers()["x-terraform-get"].to_str().unwrap();
            assert!(url.starts_with("https://registry.example.com/"), "{url}");
        }
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let body = String::from_utf8_lossy(&body);
        assert!(body.contains(body_contains), "{event}: {body}");
    }

    // The same event without a token is refused.
    let request =
        lambda_http::request::from_str(&read("events/apigw-module-versions.json")).unwrap();
    let (parts, body) = request.into_parts();
    let request = axum::http::Request::from_parts(parts, Body::from(body.to_vec()));
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status().as_u16(), 401);
}

#[tokio::test]
async fn s3_events_drive_the_indexer() {
    let world = World::published().await;
    let indexer = world.indexer();
    let event = |name: &str| -> S3Event {
        serde_json::from_str(&read(&format!("events/{name}.json"))).unwrap()
    };

    // The event's key arrives URL-encoded; the object is stored under the decoded key.
    let key = "modules/acme/network/aws/1.1.0+build.7.tar.gz";
    assert_eq!(
        decode_event_key("modules/acme/network/aws/1.1.0%2Bbuild.7.tar.gz").unwrap(),
        key
    );
    assert_eq!(
        decode_event_key("modules/a/b/c/my+file.zip").unwrap(),
        "modules/a/b/c/my file.zip"
    );
    world.artifacts.put(key, module());
    let outcomes = handle_s3_event(&indexer, "tfreg-artifacts", event("s3-put-module"))
        .await
        .unwrap();
    assert_eq!(
        outcomes,
        ["published module acme/network/aws 1.1.0+build.7"]
    );

    let outcomes = handle_s3_event(&indexer, "tfreg-artifacts", event("s3-put-provider-sums"))
        .await
        .unwrap();
    assert_eq!(
        outcomes,
        ["published provider acme/widget 1.0.0 SHA256SUMS"]
    );

    // A delete event whose object is gone unpublishes it; a replayed put event for an
    // object that no longer exists does too (events may arrive late and out of order).
    world.artifacts.delete(key);
    let outcomes = handle_s3_event(&indexer, "tfreg-artifacts", event("s3-delete-module"))
        .await
        .unwrap();
    assert_eq!(
        outcomes,
        ["unpublished module acme/network/aws 1.1.0+build.7"]
    );
    let outcomes = handle_s3_event(&indexer, "tfreg-artifacts", event("s3-put-module"))
        .await
        .unwrap();
    assert_eq!(
        outcomes,
        ["unpublished module acme/network/aws 1.1.0+build.7"]
    );

    // Events of another bucket are ignored.
    let outcomes = handle_s3_event(&indexer, "another-bucket", event("s3-put-module"))
        .await
        .unwrap();
    assert!(outcomes.is_empty());
}

#[tokio::test]
async fn an_event_of_many_records_makes_each_document_once() {
    use tfreg_core::documents::{decode, ModuleVersionsDoc};
    use tfreg_core::store::RecordId;
    use tfreg_core::MetadataReader;

    // Given five versions of a module uploaded, and one event naming them all (a batch),
    let world = World::published().await;
    let mut event: serde_json::Value =
        serde_json::from_str(&read("events/s3-put-module.json")).unwrap();
    let record = event["Records"][0].clone();
    let records: Vec<serde_json::Value> = (1..=5)
        .map(|minor| {
            let key = format!("modules/acme/network/aws/1.{minor}.0.tar.gz");
            world.artifacts.put(&key, module());
            let mut record = record.clone();
            record["s3"]["object"]["key"] = key.into();
            record
        })
        .collect();
    event["Records"] = records.into();
    let event: S3Event = serde_json::from_value(event).unwrap();

    // when the function's indexer (documents deferred to the end of the event) handles it,
    let indexer = world.indexer().with_deferred_documents();
    let outcomes = handle_s3_event(&indexer, "tfreg-artifacts", event)
        .await
        .unwrap();

    // then every version is published, the module's versions document written once, and it
    // lists them all beside the version published before.
    assert_eq!(outcomes.len(), 5, "{outcomes:?}");
    assert!(
        outcomes.iter().all(|o| o.starts_with("published module")),
        "{outcomes:?}"
    );
    assert_eq!(indexer.document_stats().written, 1);
    let address = tfreg_core::ModuleAddress::parse("acme", "network", "aws").unwrap();
    let id = RecordId::module_versions(&address);
    let stored = world.metadata.get_document(&id).await.unwrap().unwrap();
    let document: ModuleVersionsDoc = decode(&id, &stored.body).unwrap();
    assert_eq!(document.versions.len(), 6);
}

/// The whole trip Lambda makes: event JSON in, through `lambda_http`'s adapter (what
/// `lambda_http::run` wraps around the router), API Gateway response JSON out.
#[tokio::test]
async fn responses_come_back_as_api_gateway_expects_them() {
    use lambda_http::request::LambdaRequest;
    use lambda_http::{Adapter, Context, LambdaEvent, Service};

    let world = World::published().await;
    let token = tokens::generate(vec![], String::new(), None, SystemTime::now());
    world.tokens.put(token.record.clone()).await.unwrap();
    let router = tfreg_http::router(app_state(&config(), world.stores()));
    let mut adapter = Adapter::from(router);
    let call = |event: &str| {
        let mut json: serde_json::Value =
            serde_json::from_str(&read(&format!("events/{event}.json"))).unwrap();
        json["headers"]["authorization"] = format!("Bearer {}", token.token).into();
        let request: LambdaRequest = serde_json::from_value(json).unwrap();
        LambdaEvent::new(request, Context::default())
    };

    let response = adapter.call(call("apigw-discovery")).await.unwrap();
    let json = serde_json::to_value(&response).unwrap();
    assert_eq!(json["statusCode"], 200, "{json}");
    let body: serde_json::Value = serde_json::from_str(json["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["modules.v1"], "/v1/modules/");

    let response = adapter.call(call("apigw-module-download")).await.unwrap();
    let json = serde_json::to_value(&response).unwrap();
    assert_eq!(json["statusCode"], 204, "{json}");
    let location = json["headers"]["x-terraform-get"].as_str().unwrap();
    assert!(
        location.starts_with("https://registry.example.com/"),
        "{json}"
    );

    let mut unauthorised = call("apigw-provider-versions");
    unauthorised.payload = {
        let mut json: serde_json::Value =
            serde_json::from_str(&read("events/apigw-provider-versions.json")).unwrap();
        json["headers"]
            .as_object_mut()
            .unwrap()
            .remove("authorization");
        serde_json::from_value(json).unwrap()
    };
    let json = serde_json::to_value(adapter.call(unauthorised).await.unwrap()).unwrap();
    assert_eq!(json["statusCode"], 401, "{json}");
    assert!(
        json["headers"]["www-authenticate"]
            .as_str()
            .unwrap()
            .starts_with("Bearer"),
        "{json}"
    );
}

#[test]
fn the_indexer_reads_the_uploader_as_tfreg_redrive_does() {
    // The function's events go through aws_lambda_events, redriven ones through
    // tfreg_core::s3_event: both name the same uploader and revision.
    let text = read("events/s3-put-module.json");
    let event: S3Event = serde_json::from_str(&text).unwrap();
    let function = tfreg_lambda::event_uploads("tfreg-artifacts", event).unwrap();
    let redriven = tfreg_core::s3_event::parse(&text, "tfreg-artifacts").unwrap();
    assert_eq!(function, redriven);
    let upload = function[0].upload().unwrap();
    assert_eq!(upload.principal, "AWS:AIDAEXAMPLE");
    assert_eq!(upload.revision, "v:3HL4kqtJlcpXroDTDmJ-rmSpXd3dIbrHY");
    // A principal ID that is not one is an unknown uploader, not an error.
    let hostile = text.replace("AWS:AIDAEXAMPLE", "AWS:A\\u001b[2J");
    let event: S3Event = serde_json::from_str(&hostile).unwrap();
    let function = tfreg_lambda::event_uploads("tfreg-artifacts", event).unwrap();
    assert_eq!(function[0].principal, None);
    assert_eq!(function[0].upload(), None);
}
