//! The one bootstrap every tfreg Lambda function runs: configuration from environment
//! variables (checked at cold start, naming any bad setting), the shared router under
//! `lambda_http`, or the indexer for S3 event notifications. The function packages only call
//! [`run_api`] or [`run_indexer`].

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::s3::S3Event;
use lambda_runtime::{service_fn, LambdaEvent};
use tfreg_core::signing::UrlSigner;
use tfreg_core::tokens::TokenStore;
use tfreg_core::{ArtifactStore, Hostname, IndexOutcome, Indexer, MetadataStore, Registry};
use tfreg_http::AppState;

pub type Error = lambda_runtime::Error;

/// A setting that is missing or wrong, by its environment variable.
#[derive(Debug, thiserror::Error)]
#[error("configuration: {variable}: {problem}")]
pub struct ConfigError {
    pub variable: &'static str,
    pub problem: String,
}

/// What the functions are configured with (see template.yaml).
#[derive(Clone, PartialEq, Eq)]
pub struct Config {
    /// `TFREG_TABLE`: the DynamoDB table.
    pub table: String,
    /// `TFREG_BUCKET`: the S3 bucket.
    pub bucket: String,
    /// `TFREG_PUBLIC` (`true`/`false`, default `false`): answer without tokens.
    pub public: bool,
    /// `TFREG_URL_TTL` (default `5m`): how long presigned download URLs stay valid.
    pub url_ttl: Duration,
    /// `TFREG_HOSTNAME` (optional): the registry's hostname, under which the mirror serves
    /// its own providers.
    pub hostname: Option<Hostname>,
    /// `TFREG_DOWNLOADS=redirect` with `TFREG_URL_SECRET`: download URLs point at the
    /// registry's `/v1/artifacts/` (signed with this secret), which redirects each GET or
    /// HEAD to a URL presigned for that method. Default (`presigned`): presigned GET URLs.
    pub redirect_secret: Option<Vec<u8>>,
}

/// The functions of the stack (template.yaml), by what they serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    Discovery,
    Modules,
    Providers,
    Mirror,
    Downloads,
    Indexer,
}

impl Function {
    pub const ALL: [Function; 6] = [
        Function::Discovery,
        Function::Modules,
        Function::Providers,
        Function::Mirror,
        Function::Downloads,
        Function::Indexer,
    ];

    /// The function's package name under `crates/functions/` (and `build/lambda/`).
    pub fn name(self) -> &'static str {
        match self {
            Function::Discovery => "discovery",
            Function::Modules => "modules",
            Function::Providers => "providers",
            Function::Mirror => "mirror",
            Function::Downloads => "downloads",
            Function::Indexer => "indexer",
        }
    }

    /// True for the functions that hand out or follow download URLs, and so read
    /// `TFREG_DOWNLOADS`, `TFREG_URL_SECRET` and `TFREG_URL_TTL`. The others never look at
    /// them: a setting they do not use can never stop their cold start.
    pub fn makes_download_urls(self) -> bool {
        matches!(
            self,
            Function::Modules | Function::Providers | Function::Mirror | Function::Downloads
        )
    }
}

impl Config {
    /// Reads the configuration of a function that makes download URLs through `get` (the
    /// process environment in Lambda).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        Config::for_function(Function::Modules, get)
    }

    /// Reads what `function` needs of the configuration through `get`.
    pub fn for_function(
        function: Function,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let urls = function.makes_download_urls();
        let get = |name: &str| {
            let download_setting = matches!(
                name,
                "TFREG_DOWNLOADS" | "TFREG_URL_SECRET" | "TFREG_URL_TTL"
            );
            if download_setting && !urls {
                return None;
            }
            get(name)
        };
        let required = |variable: &'static str| {
            get(variable)
                .filter(|v| !v.trim().is_empty())
                .ok_or(ConfigError {
                    variable,
                    problem: "is not set".into(),
                })
        };
        let public = match get("TFREG_PUBLIC").as_deref().map(str::trim) {
            None | Some("") | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(ConfigError {
                    variable: "TFREG_PUBLIC",
                    problem: format!("{other:?} is neither true nor false"),
                })
            }
        };
        let url_ttl = match get("TFREG_URL_TTL") {
            None => Duration::from_secs(300),
            Some(text) => humantime::parse_duration(text.trim()).map_err(|e| ConfigError {
                variable: "TFREG_URL_TTL",
                problem: format!("{text:?} is not a duration like 5m: {e}"),
            })?,
        };
        // A presigned URL dies with the temporary credentials of the function's role that
        // signed it, whatever its own expiry says; Lambda's last for hours, not days.
        if url_ttl < Duration::from_secs(10) || url_ttl > Duration::from_secs(3600) {
            return Err(ConfigError {
                variable: "TFREG_URL_TTL",
                problem: "must be between 10s and 1h (presigned URLs cannot outlive the function's temporary credentials)".into(),
            });
        }
        let hostname = match get("TFREG_HOSTNAME").filter(|h| !h.trim().is_empty()) {
            None => None,
            Some(text) => Some(Hostname::parse(text.trim()).map_err(|e| ConfigError {
                variable: "TFREG_HOSTNAME",
                problem: e.to_string(),
            })?),
        };
        let redirect_secret = match get("TFREG_DOWNLOADS").as_deref().map(str::trim) {
            None | Some("") | Some("presigned") => None,
            Some("redirect") => {
                let secret = required("TFREG_URL_SECRET")?;
                if secret.len() < 32 {
                    return Err(ConfigError {
                        variable: "TFREG_URL_SECRET",
                        problem: "must be at least 32 characters".into(),
                    });
                }
                Some(secret.into_bytes())
            }
            Some(other) => {
                return Err(ConfigError {
                    variable: "TFREG_DOWNLOADS",
                    problem: format!("{other:?} is neither presigned nor redirect"),
                })
            }
        };
        Ok(Config {
            table: required("TFREG_TABLE")?,
            bucket: required("TFREG_BUCKET")?,
            public,
            url_ttl,
            hostname,
            redirect_secret,
        })
    }

    pub fn from_env(function: Function) -> Result<Config, ConfigError> {
        Config::for_function(function, |name| std::env::var(name).ok())
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secret.
        f.debug_struct("Config")
            .field("table", &self.table)
            .field("bucket", &self.bucket)
            .field("public", &self.public)
            .field("url_ttl", &self.url_ttl)
            .field("hostname", &self.hostname)
            .field("redirect", &self.redirect_secret.is_some())
            .finish()
    }
}

impl Config {
    /// The signer of registry download URLs in redirect mode.
    pub fn redirect_signer(&self) -> Option<Arc<UrlSigner>> {
        self.redirect_secret
            .as_ref()
            .map(|secret| Arc::new(UrlSigner::new(secret.clone(), self.url_ttl)))
    }
}

/// The adapters a function needs.
pub struct Stores {
    pub metadata: Arc<dyn MetadataStore>,
    pub artifacts: Arc<dyn ArtifactStore>,
    pub tokens: Arc<dyn TokenStore>,
}

impl Stores {
    pub async fn connect(config: &Config) -> Stores {
        Stores::connect_with(config, false).await
    }

    /// The stores of the indexer: its queries read consistently, so concurrent invocations
    /// see each other's records.
    pub async fn connect_for_indexing(config: &Config) -> Stores {
        Stores::connect_with(config, true).await
    }

    async fn connect_with(config: &Config, consistent: bool) -> Stores {
        let sdk = tfreg_aws::sdk_config().await;
        let dynamodb = tfreg_aws::dynamodb_client(&sdk);
        let s3 = tfreg_aws::s3_client(&sdk);
        let mut artifacts = tfreg_aws::S3ArtifactStore::new(s3, &config.bucket, config.url_ttl);
        if let Some(signer) = config.redirect_signer() {
            artifacts = artifacts.with_redirects(signer);
        }
        let mut metadata = tfreg_aws::DynamoMetadataStore::new(dynamodb.clone(), &config.table);
        if consistent {
            metadata = metadata.with_consistent_reads();
        }
        Stores {
            metadata: Arc::new(metadata),
            artifacts: Arc::new(artifacts),
            tokens: Arc::new(tfreg_aws::DynamoTokenStore::new(dynamodb, &config.table)),
        }
    }
}

/// The API's state over some stores: presigned downloads, tokens unless public.
pub fn app_state(config: &Config, stores: Stores) -> AppState {
    let mut registry = Registry::new(stores.metadata, stores.artifacts);
    if let Some(hostname) = &config.hostname {
        registry = registry.with_hostname(hostname.clone());
    }
    let tokens = (!config.public).then_some(stores.tokens);
    AppState::new(registry, config.redirect_signer(), tokens)
}

fn init_tracing() {
    // CloudWatch adds timestamps; colours would be noise there.
    let style = tfreg_http::logging::LogStyle {
        ansi: false,
        time: false,
    };
    tfreg_http::logging::init("info", style);
}

/// The entry point of every API function.
pub async fn run_api(function: Function) -> Result<(), Error> {
    init_tracing();
    let config = Config::from_env(function)?;
    let state = app_state(&config, Stores::connect(&config).await);
    lambda_http::run(tfreg_http::router(state)).await
}

/// The entry point of the indexer function.
pub async fn run_indexer() -> Result<(), Error> {
    init_tracing();
    let config = Config::from_env(Function::Indexer)?;
    let stores = Stores::connect_for_indexing(&config).await;
    let indexer = Arc::new(
        Indexer::new(stores.metadata, stores.artifacts).with_hostname(config.hostname.clone()),
    );
    let bucket = config.bucket.clone();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<S3Event>| {
        let indexer = Arc::clone(&indexer);
        let bucket = bucket.clone();
        async move { handle_s3_event(&indexer, &bucket, event.payload).await }
    }))
    .await
}

/// An S3 object key as event notifications give it: URL-encoded, spaces as `+`.
pub fn decode_event_key(raw: &str) -> Result<String, Error> {
    let spaced = raw.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8()
        .map(|k| k.into_owned())
        .map_err(|e| format!("the event's object key {raw:?} is not UTF-8: {e}").into())
}

/// Indexes every object an S3 event names. The event kind (created or removed) is only a
/// hint: the indexer reads each key's current state, so duplicate, late or reordered events
/// are harmless. A failure fails the invocation, so Lambda retries it and, past its retries,
/// parks the event in the dead-letter queue.
pub async fn handle_s3_event(
    indexer: &Indexer,
    bucket: &str,
    event: S3Event,
) -> Result<Vec<String>, Error> {
    let mut outcomes = Vec::new();
    for record in event.records {
        let event_bucket = record.s3.bucket.name.as_deref().unwrap_or_default();
        if event_bucket != bucket {
            tracing::warn!(event_bucket, bucket, "ignoring an event for another bucket");
            continue;
        }
        let Some(raw) = record.s3.object.key.as_deref() else {
            continue;
        };
        let key = decode_event_key(raw)?;
        let kind = record.event_name.as_deref().unwrap_or("unknown");
        tracing::info!(key, kind, "S3 event");
        let outcome = indexer.index_key(&key).await?;
        outcomes.push(match outcome {
            IndexOutcome::Published(a) => format!("published {a}"),
            IndexOutcome::Unpublished(a) => format!("unpublished {a}"),
            IndexOutcome::Rejected { key, reason } => format!("rejected {key}: {reason}"),
            IndexOutcome::Ignored => format!("ignored {key}"),
        });
    }
    Ok(outcomes)
}
