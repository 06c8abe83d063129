//! The bootstrap of every tfreg Lambda function: its configuration from the environment
//! (checked at cold start; a bad setting is reported to the Lambda Runtime API's init-error
//! endpoint, naming the variable), its route family under `lambda_http`, or the indexer for
//! S3 event notifications. Each function package calls one `run_*` function and reaches
//! only its own family's code: discovery connects to nothing, downloads only to S3.

#![forbid(unsafe_code)]

pub mod config;
mod deadline;
pub mod download_log;
pub mod fetcher;
pub mod function;
pub mod indexer;
pub mod settings;
pub mod upstream;
pub mod usage;

use std::sync::Arc;

use aws_lambda_events::event::s3::S3Event;
use tfreg_core::protocol::Discovery;
use tfreg_core::token_cache::{CacheSettings, CachedTokens};
use tfreg_core::tokens::TokenStore;
use tfreg_core::{ArtifactStore, Downloads, MetadataStore, Registry};
use tfreg_http::{ApiState, AppState, Family};

pub use config::{ConfigError, FunctionSettings};
pub use deadline::{request_deadline, within_deadline};
pub use function::Function;
pub use indexer::{handle_s3_event, run_indexer, IndexFailure};
use settings::{
    ApiSettings, DiscoverySettings, DownloadsSettings, IndexerSettings, LoginSettings, UrlSettings,
    WebFunctionSettings,
};
pub use usage::run_usage;

/// What a function stops with: the Lambda runtime's boxed error.
pub type Error = lambda_runtime::Error;

/// The adapters a function needs.
pub struct Stores {
    /// The table's records and documents (large documents in the bucket).
    pub metadata: Arc<dyn MetadataStore>,
    /// The bucket's published files.
    pub artifacts: Arc<dyn ArtifactStore>,
    /// How the bucket's files reach clients: presigned URLs, or redirect mode's own URLs.
    pub downloads: Downloads,
    /// The table's tokens, kept in memory as the function's cache settings say.
    pub tokens: Arc<dyn TokenStore>,
}

impl Stores {
    /// The stores of a function that answers requests over `table` and `bucket`.
    pub async fn connect(
        table: &str,
        bucket: &str,
        urls: &UrlSettings,
        cache: CacheSettings,
    ) -> Stores {
        let aws = tfreg_aws::Aws::for_function(tfreg_aws::config::Budget::REQUESTS).await;
        Stores::connect_with(&aws, table, bucket, urls, cache, false)
    }

    /// The stores of the indexer over `aws`'s clients: its queries read consistently, so
    /// concurrent invocations see each other's records.
    pub fn connect_for_indexing(aws: &tfreg_aws::Aws, settings: &IndexerSettings) -> Stores {
        let (table, bucket) = (&settings.table, &settings.bucket);
        let urls = UrlSettings::default();
        Stores::connect_with(aws, table, bucket, &urls, CacheSettings::DEFAULT, true)
    }

    /// The stores of a function that answers requests, over `aws`'s clients.
    pub fn connect_with(
        aws: &tfreg_aws::Aws,
        table: &str,
        bucket: &str,
        urls: &UrlSettings,
        cache: CacheSettings,
        indexing: bool,
    ) -> Stores {
        let files = Arc::new(aws.artifacts(bucket, urls.url_ttl));
        Stores {
            // The indexer reads consistently: it is what judges every file. Requests read
            // the documents it keeps, never the keys.
            metadata: Arc::new(aws.metadata(table, bucket, indexing)),
            artifacts: files.clone(),
            downloads: Downloads::presigned(files, urls.redirect_signer()),
            tokens: Arc::new(CachedTokens::new(Arc::new(aws.tokens(table)), cache)),
        }
    }
}

/// The registry-reading families' state over some stores: tokens unless public.
pub fn api_state(settings: &ApiSettings, stores: Stores) -> ApiState {
    registry_state(settings.hostname.as_ref(), settings.public, stores)
}

/// The registry under its hostname, and the tokens it checks unless public.
fn registry_state(
    hostname: Option<&tfreg_core::Hostname>,
    public: bool,
    stores: Stores,
) -> ApiState {
    let mut registry = Registry::new(stores.metadata, stores.downloads);
    if let Some(hostname) = hostname {
        registry = registry.with_hostname(hostname.clone());
    }
    let tokens = (!public).then_some(stores.tokens);
    ApiState {
        registry,
        tokens,
        upstream: None,
        downloads: Arc::new(tfreg_core::usage::NoCount),
        usage: Arc::new(tfreg_core::usage::NoCount),
    }
}

/// Every family's state over some stores (for tests that serve the whole API).
pub fn app_state(settings: &ApiSettings, stores: Stores) -> AppState {
    let downloads = stores.downloads.clone();
    let api = api_state(settings, stores);
    AppState::new(api.registry, downloads, api.tokens)
}

pub(crate) fn init_tracing() {
    // Every request's line, successes included: CloudWatch Logs Insights reads them.
    tfreg_http::logging::init(
        "info,tfreg::access=debug",
        tfreg_http::logging::LogStyle {
            ansi: false,
            time: false,
            json: true,
        },
    );
}

/// Reads the function's settings; a bad one is reported to the Runtime API's init-error
/// endpoint (so the console shows the message) before the function stops.
pub(crate) async fn configure<S: FunctionSettings>() -> Result<S, Error> {
    match S::from_env() {
        Ok(config) => Ok(config),
        Err(e) => {
            tracing::error!(variable = e.variable, problem = e.problem, "cannot start");
            report_init_error(&e.to_string()).await;
            Err(e.into())
        }
    }
}

/// `function`'s AWS clients: Amazon Trust Services' roots, and the retries and timeouts of
/// its kind ([`settings::sdk`]), as `TFREG_AWS_ATTEMPT_TIMEOUT_MS` and
/// `TFREG_AWS_MAX_ATTEMPTS` override them; a bad setting is reported like any other.
pub(crate) async fn connect_aws(function: Function) -> Result<tfreg_aws::Aws, Error> {
    match settings::sdk::budget(function, &|name| std::env::var(name).ok()) {
        Ok(budget) => {
            tracing::debug!(function = function.name(), ?budget, "AWS clients' budget");
            Ok(tfreg_aws::Aws::for_function(budget).await)
        }
        Err(e) => {
            tracing::error!(variable = e.variable, problem = e.problem, "cannot start");
            report_init_error(&e.to_string()).await;
            Err(e.into())
        }
    }
}

/// Posts an init error to the Lambda Runtime API, as the console shows it.
async fn report_init_error(message: &str) {
    use lambda_runtime_api_client::{body::Body, build_request, Client};
    let body = serde_json::json!({
        "errorType": "tfreg.ConfigurationError",
        "errorMessage": message,
    });
    let request = build_request()
        .method("POST")
        .uri("/2018-06-01/runtime/init/error")
        .header(
            "lambda-runtime-function-error-type",
            "tfreg.ConfigurationError",
        )
        .body(Body::from(body.to_string()));
    let sent = match (Client::builder().build(), request) {
        (Ok(client), Ok(request)) => client.call(request).await.map(|_| ()),
        (Err(e), _) => Err(e.into()),
        (_, Err(e)) => Err(e.into()),
    };
    if let Err(e) = sent {
        tracing::error!(error = %e, "could not report the init error to the Runtime API");
    }
}

/// The discovery function: the document, and no AWS client at all.
pub async fn run_discovery() -> Result<(), Error> {
    init_tracing();
    let settings = configure::<DiscoverySettings>().await?;
    let routes = tfreg_http::routes::discovery::routes(discovery(&settings));
    lambda_http::run(tfreg_http::family(Family::Discovery, routes)).await
}

/// The discovery document: `login.v1` when people sign in.
pub fn discovery(settings: &DiscoverySettings) -> Discovery {
    let signs_in = settings
        .identity
        .as_ref()
        .is_some_and(|d| d.config.sign_in.is_some());
    match signs_in {
        true => Discovery::default().with_login(),
        false => Discovery::default(),
    }
}

/// The login function: `terraform login`, the pages' sign-in with the identity provider,
/// and CI token exchange, over the table (tokens and one-time records).
pub async fn run_login() -> Result<(), Error> {
    init_tracing();
    let config = configure::<LoginSettings>().await?;
    let aws = connect_aws(Function::Login).await?;
    let state = match login_state(&config, &aws).await {
        Ok(state) => state,
        Err(e) => {
            let message = format!(
                "configuration: TFREG_OIDC_CLIENT_SECRET_ARN: {}",
                error_chain(&e)
            );
            tracing::error!(error = message, "cannot start");
            report_init_error(&message).await;
            return Err(e.into());
        }
    };
    let routes = tfreg_http::login::routes(state);
    let routes = within_deadline(routes, request_deadline(Function::Login));
    lambda_http::run(tfreg_http::family(Family::Login, routes)).await
}

/// The login family's state: the identity document with its client secret (from Secrets
/// Manager when `TFREG_OIDC_CLIENT_SECRET_ARN` names one), over the table.
pub async fn login_state(
    config: &LoginSettings,
    aws: &tfreg_aws::Aws,
) -> Result<tfreg_http::login::LoginState, tfreg_core::StoreError> {
    let mut identity = config.identity.config.as_ref().clone();
    if identity.sign_in.is_some() && config.session_secret.is_none() {
        tracing::warn!("people cannot sign in: TFREG_SESSION_SECRET is empty, and sign-ins in progress are sealed with it (CI exchanges still work)");
    }
    for warning in identity.warnings() {
        tracing::warn!("a CI rule may trust other owners' jobs: {warning}");
    }
    if let Some(sign_in) = identity.sign_in.as_mut() {
        sign_in.client_secret = match &config.oidc_client_secret_arn {
            Some(arn) => Some(aws.secret_string(arn).await?),
            None => config.oidc_client_secret.clone(),
        };
    }
    Ok(tfreg_http::login::LoginState {
        identity: Arc::new(identity),
        tokens: Arc::new(aws.tokens(&config.table)),
        grants: tfreg_core::identity::Grants::new(Arc::new(aws.grants(&config.table))),
        oidc: Arc::new(tfreg_http::login::Oidc::new()),
        sessions: config
            .session_secret
            .as_deref()
            .map(tfreg_http::web::SessionKey::from_secret),
        session_lifetime: config.session_lifetime,
        public_origin: config
            .hostname
            .as_ref()
            .and_then(|hostname| tfreg_core::Origin::https(hostname.as_str())),
    })
}

/// The modules, providers and mirror functions: their family's routes (`routes`, e.g.
/// `tfreg_http::routes::modules::routes`) over DynamoDB and S3, counting downloads as log
/// lines ([`download_log::LogSink`]) and reading the counts from the table. Each function
/// passes its own family's routes, so its binary holds no other family's code.
pub async fn run_api(
    function: Function,
    routes: fn(ApiState) -> axum::Router,
) -> Result<(), Error> {
    init_tracing();
    let family = function
        .spec()
        .family
        .ok_or("run_api serves an HTTP family")?;
    let config = configure::<ApiSettings>().await?;
    let aws = connect_aws(function).await?;
    let (table, bucket) = (&config.table, &config.bucket);
    let stores = Stores::connect_with(&aws, table, bucket, &config.downloads, config.cache, false);
    // Each download is one line on stdout, never a write on the request path; the counts
    // the usage function made of the lines are read from the table by the read API.
    let state = api_state(&config, stores).with_usage(
        Arc::new(download_log::LogSink),
        Arc::new(aws.usage(&config.table)),
    );
    let routes = within_deadline(routes(state), request_deadline(function));
    lambda_http::run(tfreg_http::family(family, routes)).await
}

/// The web pages' function: the catalogue and the pages over DynamoDB, with sessions
/// signed by `TFREG_SESSION_SECRET`.
pub async fn run_web() -> Result<(), Error> {
    init_tracing();
    let config = configure::<WebFunctionSettings>().await?;
    let urls = UrlSettings::default();
    let aws = connect_aws(Function::Web).await?;
    let stores = Stores::connect_with(
        &aws,
        &config.table,
        &config.bucket,
        &urls,
        config.cache,
        false,
    );
    let mut state = web_state(&config, stores);
    // The pages show the counts the usage function keeps (one query of a subject's items).
    state.usage = Arc::new(aws.usage(&config.table));
    let routes = tfreg_http::web::routes(state);
    let routes = within_deadline(routes, request_deadline(Function::Web));
    lambda_http::run(tfreg_http::family(Family::Web, routes)).await
}

/// The web pages' state over some stores.
pub fn web_state(config: &WebFunctionSettings, stores: Stores) -> tfreg_http::web::WebState {
    let api = registry_state(config.hostname.as_ref(), config.public, stores);
    let sessions = config
        .session_secret
        .as_deref()
        .map(tfreg_http::web::SessionKey::from_secret);
    tfreg_http::web::WebState {
        registry: api.registry,
        tokens: api.tokens,
        sessions,
        options: config.web.clone(),
        sign_in_with: config.sign_in_with.clone(),
        // The cache's records are in the bucket: `tfreg status --table --bucket` shows them.
        upstream: None,
        rendered: Default::default(),
        usage: Arc::new(tfreg_core::usage::NoCount),
    }
}

/// The downloads function (redirect mode): signed URLs redirected to presigned ones; S3
/// only.
pub async fn run_downloads() -> Result<(), Error> {
    init_tracing();
    let config = configure::<DownloadsSettings>().await?;
    let signer = config.signer;
    let aws = connect_aws(Function::Downloads).await?;
    let bucket = Arc::new(aws.artifacts(&config.bucket, config.url_ttl));
    let routes = tfreg_http::routes::artifacts::routes(Downloads::presigned(bucket, Some(signer)));
    let routes = within_deadline(routes, request_deadline(Function::Downloads));
    lambda_http::run(tfreg_http::family(Family::Downloads, routes)).await
}

/// An error and its sources, as one line.
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    tfreg_core::store::ErrorChain(error).to_string()
}

/// An S3 object key as event notifications give it: URL-encoded, spaces as `+`.
pub fn decode_event_key(raw: &str) -> Result<String, Error> {
    Ok(tfreg_core::s3_event::decode_key(raw)?)
}

/// The decoded key and the event name of each record of an S3 event about `bucket` (records
/// about another bucket are left out, with a warning).
pub fn event_keys(bucket: &str, event: S3Event) -> Result<Vec<(String, String)>, Error> {
    Ok(event_uploads(bucket, event)?
        .into_iter()
        .map(|k| (k.key, k.kind))
        .collect())
}

/// Each record of an S3 event about `bucket` (records about another bucket are left out,
/// with a warning): its decoded key and event name, who made the request
/// (`userIdentity.principalId`, checked as [`tfreg_core::s3_event::principal_id`] does) and
/// the object revision it is about.
pub fn event_uploads(
    bucket: &str,
    event: S3Event,
) -> Result<Vec<tfreg_core::s3_event::EventKey>, Error> {
    use tfreg_core::s3_event::{object_revision, principal_id, EventKey};
    let mut keys = Vec::new();
    for record in event.records {
        let event_bucket = record.s3.bucket.name.as_deref().unwrap_or_default();
        if event_bucket != bucket {
            tracing::warn!(event_bucket, bucket, "ignoring an event for another bucket");
            continue;
        }
        let Some(raw) = record.s3.object.key.as_deref() else {
            continue;
        };
        let raw_principal = record.principal_id.principal_id.as_deref();
        let principal = raw_principal.and_then(principal_id);
        if raw_principal.is_some() && principal.is_none() {
            tracing::warn!(
                "the event's principalId is not a principal ID: the uploader is unknown"
            );
        }
        keys.push(EventKey {
            key: decode_event_key(raw)?,
            kind: record.event_name.as_deref().unwrap_or("unknown").to_owned(),
            principal,
            revision: object_revision(
                record.s3.object.version_id.as_deref(),
                record.s3.object.e_tag.as_deref(),
            ),
            // S3's own form, as `tfreg redrive` reads it from the raw event.
            time: Some(
                record
                    .event_time
                    .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                    .to_string(),
            ),
        });
    }
    Ok(keys)
}
