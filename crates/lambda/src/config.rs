//! Each function's configuration, read from its environment through the same settings the
//! `tfreg` command line takes as flags (`tfreg_aws::settings`): a function parses only the
//! settings it uses. A missing or bad setting becomes a [`ConfigError`] that names its
//! environment variable, in words a person reads in the Lambda console.

use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser};
use tfreg_aws::settings::{
    BucketSetting, CacheSetting, DownloadMode, DownloadSettings, HostnameSetting, IdentityDocument,
    IdentitySettings, PublicSetting, TableSetting, WebSettings,
};
use tfreg_core::signing::UrlSigner;
use tfreg_core::token_cache::CacheSettings;
use tfreg_core::Hostname;

/// A setting that is missing or wrong, by its environment variable.
#[derive(Debug, thiserror::Error)]
#[error("configuration: {variable}: {problem}")]
pub struct ConfigError {
    pub variable: String,
    pub problem: String,
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
    /// The web pages.
    Web,
    /// Signing in: `terraform login`, the pages' sign-in with the provider, CI exchange.
    Login,
}

impl Function {
    pub const ALL: [Function; 8] = [
        Function::Discovery,
        Function::Modules,
        Function::Providers,
        Function::Mirror,
        Function::Downloads,
        Function::Indexer,
        Function::Web,
        Function::Login,
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
            Function::Web => "web",
            Function::Login => "login",
        }
    }

    /// True for the functions that hand out or follow download URLs, and so read
    /// `TFREG_DOWNLOADS`, `TFREG_URL_SECRET` and `TFREG_URL_TTL`.
    pub fn makes_download_urls(self) -> bool {
        matches!(
            self,
            Function::Modules | Function::Providers | Function::Mirror | Function::Downloads
        )
    }
}

/// The settings of the functions that read the registry (modules, providers, mirror).
#[derive(Parser, Debug)]
struct ApiSettings {
    #[command(flatten)]
    table: TableSetting,
    #[command(flatten)]
    bucket: BucketSetting,
    #[command(flatten)]
    public: PublicSetting,
    #[command(flatten)]
    hostname: HostnameSetting,
    #[command(flatten)]
    downloads: DownloadSettings,
    #[command(flatten)]
    cache: CacheSetting,
}

/// The settings of the downloads function (redirect mode): the bucket and the URLs.
#[derive(Parser, Debug)]
struct DownloadsSettings {
    #[command(flatten)]
    bucket: BucketSetting,
    #[command(flatten)]
    downloads: DownloadSettings,
}

/// The settings of the indexer.
#[derive(Parser, Debug)]
struct IndexerSettings {
    #[command(flatten)]
    table: TableSetting,
    #[command(flatten)]
    bucket: BucketSetting,
    #[command(flatten)]
    hostname: HostnameSetting,
}

/// The settings of the web pages' function: the registry's, and the pages' own.
#[derive(Parser, Debug)]
struct WebFunctionSettings {
    #[command(flatten)]
    table: TableSetting,
    #[command(flatten)]
    bucket: BucketSetting,
    #[command(flatten)]
    public: PublicSetting,
    #[command(flatten)]
    hostname: HostnameSetting,
    #[command(flatten)]
    web: WebSettings,
    #[command(flatten)]
    cache: CacheSetting,
    #[command(flatten)]
    identity: IdentitySettings,
}

/// The settings of the login function: the tokens it issues, the sessions it starts, and
/// the identity provider and CI rules it trusts.
#[derive(Parser, Debug)]
struct LoginFunctionSettings {
    #[command(flatten)]
    table: TableSetting,
    #[command(flatten)]
    hostname: HostnameSetting,
    #[command(flatten)]
    web: WebSettings,
    #[command(flatten)]
    identity: IdentitySettings,
}

/// The discovery function reads only whether people sign in (`login.v1`).
#[derive(Parser, Debug)]
struct DiscoverySettings {
    #[command(flatten)]
    identity: IdentitySettings,
}

/// What a function is configured with: the settings it parsed, the others at their
/// defaults (and never read).
#[derive(Clone, PartialEq, Eq)]
pub struct Config {
    /// `TFREG_TABLE`
    pub table: String,
    /// `TFREG_BUCKET`
    pub bucket: String,
    /// `TFREG_PUBLIC`: answer without tokens.
    pub public: bool,
    /// `TFREG_URL_TTL`: how long download URLs stay valid.
    pub url_ttl: Duration,
    /// `TFREG_HOSTNAME`: the registry's own hostname, when it has a custom domain.
    pub hostname: Option<Hostname>,
    /// `TFREG_DOWNLOADS`
    pub downloads: DownloadMode,
    /// `TFREG_URL_SECRET`: signs the registry's own download URLs (redirect mode).
    pub redirect_secret: Option<Vec<u8>>,
    /// `TFREG_WEB_REMOTE_IMAGES`, `TFREG_SESSION_LIFETIME`: the web pages' settings.
    pub web: tfreg_http::web::WebOptions,
    /// `TFREG_SESSION_SECRET`: signs the web pages' sessions.
    pub session_secret: Option<Vec<u8>>,
    /// `TFREG_CACHE_TTL`, `TFREG_LAST_USED_INTERVAL`: how tokens are kept in memory.
    pub cache: CacheSettings,
    /// `TFREG_IDENTITY`: the sign-in provider and CI rules.
    pub identity: Option<IdentityDocument>,
    /// `TFREG_OIDC_CLIENT_SECRET`: the sign-in client's secret, given directly.
    pub oidc_client_secret: Option<String>,
    /// `TFREG_OIDC_CLIENT_SECRET_ARN`: the Secrets Manager secret holding it.
    pub oidc_client_secret_arn: Option<String>,
    /// What the web pages' sign-in button calls the identity provider.
    pub sign_in_with: Option<String>,
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
            .field("downloads", &self.downloads)
            .field("web", &self.web)
            .field("cache", &self.cache)
            .field("identity", &self.identity)
            .field("oidc_client_secret_arn", &self.oidc_client_secret_arn)
            .finish_non_exhaustive()
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            table: String::new(),
            bucket: String::new(),
            public: false,
            url_ttl: DownloadSettings::default().url_ttl,
            hostname: None,
            downloads: DownloadMode::Presigned,
            redirect_secret: None,
            web: tfreg_http::web::WebOptions::DEFAULT,
            session_secret: None,
            cache: CacheSettings::DEFAULT,
            identity: None,
            oidc_client_secret: None,
            oidc_client_secret_arn: None,
            sign_in_with: None,
        }
    }
}

/// Parses `T` from the values `get` gives its settings' environment variables (and from
/// nothing else: the process environment is read only through `get`).
fn parse<T: Parser>(get: &dyn Fn(&str) -> Option<String>) -> Result<T, ConfigError> {
    let command = T::command();
    let mut env_of_flag = Vec::new();
    let mut argv = vec!["tfreg-function".to_owned()];
    for arg in command.get_arguments() {
        let (Some(env), Some(long)) = (arg.get_env(), arg.get_long()) else {
            continue;
        };
        let env = env.to_string_lossy().into_owned();
        if let Some(value) = get(&env).filter(|v| !v.trim().is_empty()) {
            argv.push(format!("--{long}={value}"));
        }
        env_of_flag.push((format!("--{long}"), env));
    }
    let command = command.mut_args(|arg| arg.env(None));
    let matches = command
        .try_get_matches_from(argv)
        .map_err(|e| readable(&e, &env_of_flag))?;
    T::from_arg_matches(&matches).map_err(|e| readable(&e, &env_of_flag))
}

/// A clap error in the words of environment variables: `TFREG_URL_TTL: invalid value
/// "2h": must be between 10s and 1h`.
fn readable(error: &clap::Error, env_of_flag: &[(String, String)]) -> ConfigError {
    use clap::error::{ContextKind, ContextValue};
    let flag = match error.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(flag)) => flag.split([' ', '=']).next().unwrap_or("").to_owned(),
        _ => String::new(),
    };
    let variable = env_of_flag
        .iter()
        .find(|(f, _)| *f == flag)
        .map_or_else(|| "configuration".to_owned(), |(_, env)| env.clone());
    let value = match error.get(ContextKind::InvalidValue) {
        // A secret is never repeated, not even a wrong one: it reaches the console's log.
        Some(ContextValue::String(_)) if variable.contains("SECRET") => String::new(),
        // A document is long, and its error names the field at fault.
        Some(ContextValue::String(_)) if variable == "TFREG_IDENTITY" => String::new(),
        Some(ContextValue::String(value)) => format!("{value:?} "),
        _ => String::new(),
    };
    let reason = match std::error::Error::source(error) {
        Some(source) => source.to_string(),
        None => match error.get(ContextKind::ValidValue) {
            Some(ContextValue::Strings(valid)) => format!("is not one of {}", valid.join(", ")),
            _ => error
                .kind()
                .as_str()
                .unwrap_or("is not valid")
                .to_lowercase(),
        },
    };
    ConfigError {
        variable,
        problem: format!("{value}{reason}").trim().to_owned(),
    }
}

fn required(variable: &str, value: Option<String>) -> Result<String, ConfigError> {
    value.ok_or_else(|| ConfigError {
        variable: variable.to_owned(),
        problem: "is not set".into(),
    })
}

/// The secret, which redirect mode requires.
fn redirect_secret(downloads: &DownloadSettings) -> Result<Option<Vec<u8>>, ConfigError> {
    match (downloads.mode, &downloads.url_secret) {
        (DownloadMode::Presigned, _) => Ok(None),
        (DownloadMode::Redirect, Some(secret)) => Ok(Some(secret.0.clone())),
        (DownloadMode::Redirect, None) => Err(ConfigError {
            variable: "TFREG_URL_SECRET".into(),
            problem: "is not set, and TFREG_DOWNLOADS=redirect needs it".into(),
        }),
    }
}

impl Config {
    /// Reads the configuration of a function that makes download URLs through `get`.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        Config::for_function(Function::Modules, get)
    }

    /// Reads what `function` needs of the configuration through `get`.
    pub fn for_function(
        function: Function,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let get: &dyn Fn(&str) -> Option<String> = &get;
        match function {
            Function::Discovery => {
                let s = parse::<DiscoverySettings>(get)?;
                Ok(Config {
                    sign_in_with: s.identity.sign_in_with(),
                    identity: s.identity.identity,
                    ..Config::default()
                })
            }
            Function::Login => {
                let s = parse::<LoginFunctionSettings>(get)?;
                let Some(identity) = s.identity.identity.clone() else {
                    return Err(ConfigError {
                        variable: "TFREG_IDENTITY".into(),
                        problem: "is not set: the login function needs an identity document (the sign-in provider or CI rules)".into(),
                    });
                };
                Ok(Config {
                    table: required("TFREG_TABLE", s.table.table)?,
                    hostname: s.hostname.get(),
                    web: tfreg_http::web::WebOptions {
                        remote_images: s.web.remote_images,
                        session_lifetime: s.web.session_lifetime,
                    },
                    session_secret: s.web.session_secret.map(|secret| secret.0),
                    sign_in_with: s.identity.sign_in_with(),
                    identity: Some(identity),
                    oidc_client_secret: s.identity.oidc_client_secret,
                    oidc_client_secret_arn: s.identity.oidc_client_secret_arn,
                    ..Config::default()
                })
            }
            Function::Modules | Function::Providers | Function::Mirror => {
                let s = parse::<ApiSettings>(get)?;
                Ok(Config {
                    table: required("TFREG_TABLE", s.table.table)?,
                    bucket: required("TFREG_BUCKET", s.bucket.bucket)?,
                    public: s.public.public,
                    url_ttl: s.downloads.url_ttl,
                    hostname: s.hostname.get(),
                    downloads: s.downloads.mode,
                    redirect_secret: redirect_secret(&s.downloads)?,
                    cache: s.cache.get(),
                    ..Config::default()
                })
            }
            Function::Downloads => {
                let s = parse::<DownloadsSettings>(get)?;
                let bucket = required("TFREG_BUCKET", s.bucket.bucket)?;
                if s.downloads.mode != DownloadMode::Redirect {
                    return Err(ConfigError {
                        variable: "TFREG_DOWNLOADS".into(),
                        problem:
                            "the downloads function serves redirect mode only: set it to redirect"
                                .into(),
                    });
                }
                Ok(Config {
                    bucket,
                    url_ttl: s.downloads.url_ttl,
                    downloads: s.downloads.mode,
                    redirect_secret: redirect_secret(&s.downloads)?,
                    ..Config::default()
                })
            }
            Function::Web => {
                let s = parse::<WebFunctionSettings>(get)?;
                let public = s.public.public;
                let session_secret = s.web.session_secret.map(|secret| secret.0);
                if !public && session_secret.is_none() {
                    return Err(ConfigError {
                        variable: "TFREG_SESSION_SECRET".into(),
                        problem: "is not set, and a registry that is not public needs it to sign the web pages' sessions".into(),
                    });
                }
                Ok(Config {
                    table: required("TFREG_TABLE", s.table.table)?,
                    bucket: required("TFREG_BUCKET", s.bucket.bucket)?,
                    public,
                    hostname: s.hostname.get(),
                    web: tfreg_http::web::WebOptions {
                        remote_images: s.web.remote_images,
                        session_lifetime: s.web.session_lifetime,
                    },
                    session_secret,
                    cache: s.cache.get(),
                    sign_in_with: s.identity.sign_in_with(),
                    ..Config::default()
                })
            }
            Function::Indexer => {
                let s = parse::<IndexerSettings>(get)?;
                Ok(Config {
                    table: required("TFREG_TABLE", s.table.table)?,
                    bucket: required("TFREG_BUCKET", s.bucket.bucket)?,
                    hostname: s.hostname.get(),
                    ..Config::default()
                })
            }
        }
    }

    pub fn from_env(function: Function) -> Result<Config, ConfigError> {
        Config::for_function(function, |name| std::env::var(name).ok())
    }

    /// The signer of registry download URLs in redirect mode.
    pub fn redirect_signer(&self) -> Option<Arc<UrlSigner>> {
        self.redirect_secret
            .as_ref()
            .map(|secret| Arc::new(UrlSigner::new(secret.clone(), self.url_ttl)))
    }
}

/// The settings of a function, by flag, for its environment variable names.
pub fn environment_of(function: Function) -> Vec<String> {
    fn names<T: Args>() -> Vec<String> {
        T::augment_args(clap::Command::new("x"))
            .get_arguments()
            .filter_map(|a| a.get_env().map(|e| e.to_string_lossy().into_owned()))
            .collect()
    }
    match function {
        Function::Discovery => names::<DiscoverySettings>(),
        Function::Login => names::<LoginFunctionSettings>(),
        Function::Modules | Function::Providers | Function::Mirror => names::<ApiSettings>(),
        Function::Downloads => names::<DownloadsSettings>(),
        Function::Indexer => names::<IndexerSettings>(),
        Function::Web => names::<WebFunctionSettings>(),
    }
}
