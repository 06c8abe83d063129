//! Each function's settings, holding only what its family reads: parsed from the flags
//! `tfreg` shares (`tfreg_aws::settings`), then checked (a required value is there, redirect
//! mode has its secret, a private registry's pages can sign sessions). [`crate::Function`]
//! names which type each function reads.

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use tfreg_aws::settings::{
    BucketSetting, CacheSetting, DownloadMode, DownloadSettings, HostnameSetting, IdentityDocument,
    IdentitySettings, PublicSetting, TableSetting, WebSettings,
};
use tfreg_core::signing::UrlSigner;
use tfreg_core::token_cache::CacheSettings;
use tfreg_core::Hostname;
use tfreg_http::web::WebOptions;

use crate::config::{required, ConfigError, FunctionSettings};

pub mod sdk;
mod upstream;
pub use upstream::{FetcherFlags, FetcherSettings, LambdaUpstream, MirrorFlags, MirrorSettings};

/// How a function makes download URLs: how long they last, and in redirect mode the secret
/// that signs the registry's own.
#[derive(Clone, PartialEq, Eq)]
pub struct UrlSettings {
    /// `TFREG_URL_TTL`
    pub url_ttl: Duration,
    /// `TFREG_URL_SECRET` in redirect mode (`TFREG_DOWNLOADS=redirect`); `None`: presigned.
    pub redirect_secret: Option<Vec<u8>>,
}

impl Default for UrlSettings {
    /// Presigned URLs that last the default time: what a function that makes no download
    /// URL of its own holds.
    fn default() -> Self {
        UrlSettings {
            url_ttl: DownloadSettings::default().url_ttl,
            redirect_secret: None,
        }
    }
}

impl UrlSettings {
    fn from_flags(flags: &DownloadSettings) -> Result<UrlSettings, ConfigError> {
        let redirect_secret = match (flags.mode, &flags.url_secret) {
            (DownloadMode::Presigned, _) => None,
            (DownloadMode::Redirect, Some(secret)) => Some(secret.0.clone()),
            (DownloadMode::Redirect, None) => {
                return Err(ConfigError::new(
                    "TFREG_URL_SECRET",
                    "is not set, and TFREG_DOWNLOADS=redirect needs it",
                ))
            }
        };
        Ok(UrlSettings {
            url_ttl: flags.url_ttl,
            redirect_secret,
        })
    }

    /// The signer of registry download URLs in redirect mode.
    pub fn redirect_signer(&self) -> Option<Arc<UrlSigner>> {
        self.redirect_secret
            .as_ref()
            .map(|secret| Arc::new(UrlSigner::new(secret.clone(), self.url_ttl)))
    }
}

impl std::fmt::Debug for UrlSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secret.
        f.debug_struct("UrlSettings")
            .field("url_ttl", &self.url_ttl)
            .field("redirects", &self.redirect_secret.is_some())
            .finish()
    }
}

/// The table and the bucket, both required.
#[derive(clap::Args, Debug)]
pub struct StoreFlags {
    #[command(flatten)]
    table: TableSetting,
    #[command(flatten)]
    bucket: BucketSetting,
}

impl StoreFlags {
    fn required(self) -> Result<(String, String), ConfigError> {
        let table = required("TFREG_TABLE", self.table.table)?;
        Ok((table, required("TFREG_BUCKET", self.bucket.bucket)?))
    }
}

/// The modules, providers and mirror functions: the registry, read with tokens unless
/// public, and download URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiSettings {
    /// `TFREG_TABLE`: the DynamoDB table of records, documents and tokens.
    pub table: String,
    /// `TFREG_BUCKET`: the S3 bucket of the published files.
    pub bucket: String,
    /// `TFREG_PUBLIC`: answer without tokens.
    pub public: bool,
    /// `TFREG_HOSTNAME`: the registry's own hostname, when it has a custom domain.
    pub hostname: Option<Hostname>,
    /// `TFREG_DOWNLOADS`, `TFREG_URL_TTL`, `TFREG_URL_SECRET`: how download URLs are made.
    pub downloads: UrlSettings,
    /// `TFREG_CACHE_TTL`, `TFREG_LAST_USED_INTERVAL`: how tokens are kept in memory.
    pub cache: CacheSettings,
}

/// The flags of [`ApiSettings`].
#[derive(Parser, Debug)]
pub struct ApiFlags {
    #[command(flatten)]
    store: StoreFlags,
    #[command(flatten)]
    public: PublicSetting,
    #[command(flatten)]
    hostname: HostnameSetting,
    #[command(flatten)]
    downloads: DownloadSettings,
    #[command(flatten)]
    cache: CacheSetting,
}

impl FunctionSettings for ApiSettings {
    type Flags = ApiFlags;

    fn from_flags(s: ApiFlags) -> Result<Self, ConfigError> {
        let (table, bucket) = s.store.required()?;
        Ok(ApiSettings {
            table,
            bucket,
            public: s.public.public,
            hostname: s.hostname.get(),
            downloads: UrlSettings::from_flags(&s.downloads)?,
            cache: s.cache.get(),
        })
    }
}

/// The downloads function (redirect mode only): the bucket, and the URLs it follows.
#[derive(Clone)]
pub struct DownloadsSettings {
    /// `TFREG_BUCKET`: where the URLs it redirects to point.
    pub bucket: String,
    /// `TFREG_URL_TTL`: how long the presigned URLs it redirects to last.
    pub url_ttl: Duration,
    /// `TFREG_URL_SECRET`: what the URLs it follows are signed with.
    pub signer: Arc<UrlSigner>,
}

impl std::fmt::Debug for DownloadsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secret.
        f.debug_struct("DownloadsSettings")
            .field("bucket", &self.bucket)
            .field("url_ttl", &self.url_ttl)
            .finish_non_exhaustive()
    }
}

/// The flags of [`DownloadsSettings`].
#[derive(Parser, Debug)]
pub struct DownloadsFlags {
    #[command(flatten)]
    bucket: BucketSetting,
    #[command(flatten)]
    downloads: DownloadSettings,
}

impl FunctionSettings for DownloadsSettings {
    type Flags = DownloadsFlags;

    fn from_flags(s: DownloadsFlags) -> Result<Self, ConfigError> {
        let bucket = required("TFREG_BUCKET", s.bucket.bucket)?;
        let downloads = UrlSettings::from_flags(&s.downloads)?;
        let Some(signer) = downloads.redirect_signer() else {
            return Err(ConfigError::new(
                "TFREG_DOWNLOADS",
                "the downloads function serves redirect mode only: set it to redirect",
            ));
        };
        Ok(DownloadsSettings {
            bucket,
            url_ttl: downloads.url_ttl,
            signer,
        })
    }
}

/// The indexer: the table and bucket, and the hostname its documents name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexerSettings {
    /// `TFREG_TABLE`: where the records and documents are kept.
    pub table: String,
    /// `TFREG_BUCKET`: the S3 bucket whose events it indexes.
    pub bucket: String,
    /// `TFREG_HOSTNAME`: the registry's own hostname; uploads under `mirror/<it>/` are refused.
    pub hostname: Option<Hostname>,
}

/// The flags of [`IndexerSettings`].
#[derive(Parser, Debug)]
pub struct IndexerFlags {
    #[command(flatten)]
    store: StoreFlags,
    #[command(flatten)]
    hostname: HostnameSetting,
}

impl FunctionSettings for IndexerSettings {
    type Flags = IndexerFlags;

    fn from_flags(s: IndexerFlags) -> Result<Self, ConfigError> {
        let (table, bucket) = s.store.required()?;
        Ok(IndexerSettings {
            table,
            bucket,
            hostname: s.hostname.get(),
        })
    }
}

/// The usage function: the table it adds download counts to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageSettings {
    /// `TFREG_TABLE`: where the counts are kept.
    pub table: String,
}

/// The flags of [`UsageSettings`].
#[derive(Parser, Debug)]
pub struct UsageFlags {
    #[command(flatten)]
    table: TableSetting,
}

impl FunctionSettings for UsageSettings {
    type Flags = UsageFlags;

    fn from_flags(s: UsageFlags) -> Result<Self, ConfigError> {
        Ok(UsageSettings {
            table: required("TFREG_TABLE", s.table.table)?,
        })
    }
}

/// The web pages' function: the registry's settings, and the pages' own.
#[derive(Clone, PartialEq, Eq)]
pub struct WebFunctionSettings {
    /// `TFREG_TABLE`: the DynamoDB table of records, documents and tokens.
    pub table: String,
    /// `TFREG_BUCKET`: the S3 bucket of the published files.
    pub bucket: String,
    /// `TFREG_PUBLIC`: answer without tokens.
    pub public: bool,
    /// `TFREG_HOSTNAME`: the registry's own hostname, when it has a custom domain.
    pub hostname: Option<Hostname>,
    /// `TFREG_WEB_REMOTE_IMAGES`, `TFREG_SESSION_LIFETIME`
    pub web: WebOptions,
    /// `TFREG_SESSION_SECRET`: signs the pages' sessions (required unless public).
    pub session_secret: Option<Vec<u8>>,
    /// `TFREG_CACHE_TTL`, `TFREG_LAST_USED_INTERVAL`: how tokens are kept in memory.
    pub cache: CacheSettings,
    /// What the sign-in button calls the identity provider (`TFREG_IDENTITY`).
    pub sign_in_with: Option<String>,
}

/// The flags of [`WebFunctionSettings`].
#[derive(Parser, Debug)]
pub struct WebFlags {
    #[command(flatten)]
    store: StoreFlags,
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

impl FunctionSettings for WebFunctionSettings {
    type Flags = WebFlags;

    fn from_flags(s: WebFlags) -> Result<Self, ConfigError> {
        let public = s.public.public;
        let session_secret = s.web.session_secret.as_ref().map(|secret| secret.0.clone());
        if !public && session_secret.is_none() {
            return Err(ConfigError::new(
                "TFREG_SESSION_SECRET",
                "is not set, and a registry that is not public needs it to sign the web pages' sessions",
            ));
        }
        let (table, bucket) = s.store.required()?;
        Ok(WebFunctionSettings {
            table,
            bucket,
            public,
            hostname: s.hostname.get(),
            web: web_options(&s.web),
            session_secret,
            cache: s.cache.get(),
            sign_in_with: s.identity.sign_in_with(),
        })
    }
}

impl std::fmt::Debug for WebFunctionSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secret.
        f.debug_struct("WebFunctionSettings")
            .field("table", &self.table)
            .field("bucket", &self.bucket)
            .field("public", &self.public)
            .field("hostname", &self.hostname)
            .field("web", &self.web)
            .field("cache", &self.cache)
            .field("sign_in_with", &self.sign_in_with)
            .finish_non_exhaustive()
    }
}

fn web_options(web: &WebSettings) -> WebOptions {
    WebOptions {
        remote_images: web.remote_images,
        session_lifetime: web.session_lifetime,
    }
}

/// The login function: the tokens it issues, the sessions it starts, and the identity
/// provider and CI rules it trusts.
#[derive(Clone, PartialEq, Eq)]
pub struct LoginSettings {
    /// `TFREG_TABLE`: where tokens and one-time records are kept.
    pub table: String,
    /// `TFREG_HOSTNAME`: the origin every URL given to the identity provider is made from;
    /// `None`: the request's `Host`.
    pub hostname: Option<Hostname>,
    /// `TFREG_SESSION_LIFETIME` (`remote_images` is the pages' alone).
    pub session_lifetime: Duration,
    /// `TFREG_SESSION_SECRET`: seals sign-ins in progress and signs the sessions they start.
    pub session_secret: Option<Vec<u8>>,
    /// `TFREG_IDENTITY` (required).
    pub identity: IdentityDocument,
    /// `TFREG_OIDC_CLIENT_SECRET`: the sign-in client's secret, given directly.
    pub oidc_client_secret: Option<String>,
    /// `TFREG_OIDC_CLIENT_SECRET_ARN`: the Secrets Manager secret holding it.
    pub oidc_client_secret_arn: Option<String>,
}

/// The flags of [`LoginSettings`].
#[derive(Parser, Debug)]
pub struct LoginFlags {
    #[command(flatten)]
    table: TableSetting,
    #[command(flatten)]
    hostname: HostnameSetting,
    #[command(flatten)]
    web: WebSettings,
    #[command(flatten)]
    identity: IdentitySettings,
}

impl FunctionSettings for LoginSettings {
    type Flags = LoginFlags;

    fn from_flags(s: LoginFlags) -> Result<Self, ConfigError> {
        let Some(identity) = s.identity.identity else {
            return Err(ConfigError::new(
                "TFREG_IDENTITY",
                "is not set: the login function needs an identity document (the sign-in provider or CI rules)",
            ));
        };
        Ok(LoginSettings {
            table: required("TFREG_TABLE", s.table.table)?,
            hostname: s.hostname.get(),
            session_lifetime: s.web.session_lifetime,
            session_secret: s.web.session_secret.map(|secret| secret.0),
            identity,
            oidc_client_secret: s.identity.oidc_client_secret,
            oidc_client_secret_arn: s.identity.oidc_client_secret_arn,
        })
    }
}

impl std::fmt::Debug for LoginSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secrets.
        f.debug_struct("LoginSettings")
            .field("table", &self.table)
            .field("hostname", &self.hostname)
            .field("session_lifetime", &self.session_lifetime)
            .field("identity", &self.identity)
            .field("oidc_client_secret_arn", &self.oidc_client_secret_arn)
            .finish_non_exhaustive()
    }
}

/// The discovery function reads only whether people sign in (`login.v1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoverySettings {
    /// `TFREG_IDENTITY`
    pub identity: Option<IdentityDocument>,
}

/// The flags of [`DiscoverySettings`].
#[derive(Parser, Debug)]
pub struct DiscoveryFlags {
    #[command(flatten)]
    identity: IdentitySettings,
}

impl FunctionSettings for DiscoverySettings {
    type Flags = DiscoveryFlags;

    fn from_flags(s: DiscoveryFlags) -> Result<Self, ConfigError> {
        Ok(DiscoverySettings {
            identity: s.identity.identity,
        })
    }
}
