//! The AWS shape's settings, defined once: each is a command-line flag of `tfreg` and an
//! environment variable of the Lambda functions (clap's `env`), with the same parsing and
//! the same limits everywhere. A function or command flattens the groups it uses and no
//! others, so a setting meant for one family can never stop another from starting.

use std::sync::Arc;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use tfreg_core::identity::IdentityConfig;
use tfreg_core::Hostname;

/// The shortest and longest download-URL lifetimes. A presigned URL dies with the temporary
/// credentials that signed it, whatever its own expiry says; Lambda's last hours, not days.
pub const URL_TTL_RANGE: (Duration, Duration) =
    (Duration::from_secs(10), Duration::from_secs(3600));

/// S3's smallest and largest part of a multipart upload (all but the last part must be at
/// least the smallest).
pub const PART_SIZE_RANGE: (u64, u64) = (5 * 1024 * 1024, 5 * 1024 * 1024 * 1024);

/// The shortest secret that may sign download URLs.
pub const MIN_SECRET_LEN: usize = 32;

/// The DynamoDB table (template.yaml's `Table`).
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct TableSetting {
    /// The registry's DynamoDB table.
    #[arg(long, env = "TFREG_TABLE", value_parser = non_empty)]
    pub table: Option<String>,
}

/// The S3 bucket (template.yaml's `Bucket`).
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct BucketSetting {
    /// The registry's S3 bucket.
    #[arg(long, env = "TFREG_BUCKET", value_parser = non_empty)]
    pub bucket: Option<String>,
}

/// How Terraform downloads files.
#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DownloadMode {
    /// S3 URLs presigned for GET (HEAD on them answers 403, after which Terraform 1.11 GETs).
    #[default]
    Presigned,
    /// The registry's own signed URLs, which redirect GET and HEAD each to a URL presigned
    /// for that method.
    Redirect,
}

/// How download URLs are made (the functions that make or follow them only).
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct DownloadSettings {
    /// `presigned`: Terraform gets S3 URLs presigned for GET; `redirect`: the registry's own
    /// signed URLs, redirected per method to presigned ones.
    #[arg(
        long = "downloads",
        env = "TFREG_DOWNLOADS",
        value_enum,
        default_value = "presigned"
    )]
    pub mode: DownloadMode,
    /// How long a download URL stays valid (10s to 1h).
    #[arg(long, env = "TFREG_URL_TTL", default_value = "5m", value_parser = url_ttl)]
    pub url_ttl: Duration,
    /// The secret (32+ characters) that signs the registry's own download URLs (redirect).
    #[arg(long, env = "TFREG_URL_SECRET", hide_env_values = true, value_parser = secret)]
    pub url_secret: Option<Secret>,
}

impl Default for DownloadSettings {
    fn default() -> Self {
        Self {
            mode: DownloadMode::Presigned,
            url_ttl: Duration::from_secs(300),
            url_secret: None,
        }
    }
}

/// Who may read the registry.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct PublicSetting {
    /// Answer every request without a token (`true`/`false`).
    #[arg(
        long,
        env = "TFREG_PUBLIC",
        value_parser = BoolishValueParser::new(),
        num_args = 0..=1,
        default_value = "false",
        default_missing_value = "true"
    )]
    pub public: bool,
}

/// The web pages' settings.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct WebSettings {
    /// Show README images from `https://` URLs (`true`/`false`). Off, their alt text shows
    /// instead: a remote image tells its server who reads the page.
    #[arg(
        long = "web-remote-images",
        env = "TFREG_WEB_REMOTE_IMAGES",
        value_parser = BoolishValueParser::new(),
        num_args = 0..=1,
        default_value = "false",
        default_missing_value = "true"
    )]
    pub remote_images: bool,
    /// How long a web session lasts at most (5m to 30d); never past its token's expiry.
    #[arg(long, env = "TFREG_SESSION_LIFETIME", default_value = "12h", value_parser = session_lifetime)]
    pub session_lifetime: Duration,
    /// The secret (32+ characters) that signs web sessions. The local server derives one
    /// from its URL secret when this is not given.
    #[arg(long, env = "TFREG_SESSION_SECRET", hide_env_values = true, value_parser = secret)]
    pub session_secret: Option<Secret>,
}

impl Default for WebSettings {
    fn default() -> Self {
        Self {
            remote_images: false,
            session_lifetime: Duration::from_secs(12 * 3600),
            session_secret: None,
        }
    }
}

/// The longest a function may keep a token's record: the longest delay before a revocation
/// takes effect.
pub const CACHE_TTL_MAX: Duration = Duration::from_secs(300);

/// How long the functions that read the registry keep tokens in memory
/// (the local server reads its token file and index in place and needs no such cache).
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct CacheSetting {
    /// How long a function keeps a token's record before reading it again (0s to 5m): a
    /// revoked token is refused in every function at most this long afterwards. (Signing
    /// keys are not read by requests: the indexer judges releases when keys change.)
    #[arg(long, env = "TFREG_CACHE_TTL", default_value = "60s", value_parser = cache_ttl)]
    pub cache_ttl: Duration,
    /// How often a token's "last used" time is written at most, per function instance (1m
    /// to 24h).
    #[arg(long, env = "TFREG_LAST_USED_INTERVAL", default_value = "1h", value_parser = last_used_interval)]
    pub last_used_interval: Duration,
}

impl Default for CacheSetting {
    fn default() -> Self {
        let d = tfreg_core::token_cache::CacheSettings::DEFAULT;
        Self {
            cache_ttl: d.ttl,
            last_used_interval: d.last_used_interval,
        }
    }
}

impl CacheSetting {
    /// The settings as the token cache takes them.
    pub fn get(&self) -> tfreg_core::token_cache::CacheSettings {
        tfreg_core::token_cache::CacheSettings {
            ttl: self.cache_ttl,
            last_used_interval: self.last_used_interval,
        }
    }
}

/// Parses a cache time to live, at most [`CACHE_TTL_MAX`].
pub fn cache_ttl(value: &str) -> Result<Duration, String> {
    duration_within(
        value,
        "60s",
        (Duration::ZERO, CACHE_TTL_MAX),
        "must be at most 5m (it is how long a revoked token or a removed key still works)",
    )
}

/// Parses how often "last used" is written, between a minute and a day.
pub fn last_used_interval(value: &str) -> Result<Duration, String> {
    duration_within(
        value,
        "1h",
        (Duration::from_secs(60), Duration::from_secs(24 * 3600)),
        "must be between 1m and 24h",
    )
}

/// Parses a duration (`example` shows the form) that must lie within `min..=max`;
/// `out_of_range` says what else it must be.
fn duration_within(
    value: &str,
    example: &str,
    (min, max): (Duration, Duration),
    out_of_range: &str,
) -> Result<Duration, String> {
    let duration = humantime::parse_duration(value.trim())
        .map_err(|e| format!("is not a duration like {example} ({e})"))?;
    if duration < min || duration > max {
        return Err(out_of_range.into());
    }
    Ok(duration)
}

/// The shortest and longest web sessions.
pub const SESSION_LIFETIME_RANGE: (Duration, Duration) = (
    Duration::from_secs(300),
    Duration::from_secs(30 * 24 * 3600),
);

/// Parses a session lifetime within [`SESSION_LIFETIME_RANGE`].
pub fn session_lifetime(value: &str) -> Result<Duration, String> {
    duration_within(
        value,
        "12h",
        SESSION_LIFETIME_RANGE,
        "must be between 5m and 30d",
    )
}

/// The registry's hostname, when it has a name of its own.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct HostnameSetting {
    /// The registry's hostname (a custom domain): the mirror serves the registry's own
    /// providers under it, and the indexer refuses uploads under `mirror/<it>/`.
    #[arg(long, env = "TFREG_HOSTNAME", value_parser = hostname)]
    pub hostname: Option<MaybeHostname>,
}

impl HostnameSetting {
    /// The hostname, unless none or an empty value was given.
    pub fn get(&self) -> Option<Hostname> {
        self.hostname.clone().and_then(|h| h.0)
    }
}

/// A hostname, or none (an empty value: the template passes "" without a custom domain).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaybeHostname(pub Option<Hostname>);

/// A secret that is never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

fn non_empty(value: &str) -> Result<String, String> {
    let value = value.trim();
    if value.is_empty() {
        return Err("must not be empty".into());
    }
    Ok(value.to_owned())
}

/// Parses a lifetime within [`URL_TTL_RANGE`].
pub fn url_ttl(value: &str) -> Result<Duration, String> {
    duration_within(
        value,
        "5m",
        URL_TTL_RANGE,
        "must be between 10s and 1h (presigned URLs cannot outlive the credentials that sign them)",
    )
}

fn secret(value: &str) -> Result<Secret, String> {
    if value.len() < MIN_SECRET_LEN {
        return Err(format!("must be at least {MIN_SECRET_LEN} characters"));
    }
    Ok(Secret(value.as_bytes().to_vec()))
}

fn hostname(value: &str) -> Result<MaybeHostname, String> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(MaybeHostname(None));
    }
    Hostname::parse(value)
        .map(|h| MaybeHostname(Some(h)))
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser, Debug)]
    struct All {
        #[command(flatten)]
        table: TableSetting,
        #[command(flatten)]
        bucket: BucketSetting,
        #[command(flatten)]
        downloads: DownloadSettings,
        #[command(flatten)]
        public: PublicSetting,
        #[command(flatten)]
        hostname: HostnameSetting,
        #[command(flatten)]
        tokens: CacheSetting,
    }

    fn parse(args: &[&str]) -> Result<All, String> {
        let mut all = vec!["x"];
        all.extend_from_slice(args);
        All::try_parse_from(all).map_err(|e| e.to_string())
    }

    #[test]
    fn settings_parse_with_the_same_limits_as_flags() {
        let all = parse(&["--table", "t", "--downloads", "redirect", "--url-ttl", "1h"]).unwrap();
        assert_eq!(all.table.table.as_deref(), Some("t"));
        assert_eq!(all.downloads.mode, DownloadMode::Redirect);
        assert!(!all.public.public);
        assert!(parse(&["--public"]).unwrap().public.public);
        assert!(!parse(&["--public=false"]).unwrap().public.public);
        assert!(
            parse(&["--public=flase"]).is_err(),
            "a typo never opens the registry"
        );
        assert!(parse(&["--url-ttl", "2h"])
            .unwrap_err()
            .contains("between 10s and 1h"));
        assert!(parse(&["--downloads", "direct"]).is_err());
        assert!(parse(&["--url-secret", "short"]).is_err());
        assert_eq!(parse(&["--hostname", ""]).unwrap().hostname.get(), None);
        assert_eq!(
            parse(&["--hostname", "Registry.Example.com"])
                .unwrap()
                .hostname
                .get()
                .unwrap()
                .as_str(),
            "registry.example.com"
        );
        assert!(format!("{:?}", Secret(b"x".to_vec())).contains(".."));
        assert_eq!(parse(&[]).unwrap().tokens, CacheSetting::default());
        assert_eq!(
            parse(&["--cache-ttl", "0s"]).unwrap().tokens.cache_ttl,
            Duration::ZERO
        );
        assert!(parse(&["--cache-ttl", "10m"])
            .unwrap_err()
            .contains("at most 5m"));
        assert!(parse(&["--last-used-interval", "1s"])
            .unwrap_err()
            .contains("between 1m and 24h"));
    }
}

/// Signing in (`terraform login`, the web pages) with an identity provider, and CI token
/// exchange (README: "Signing in and CI").
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct IdentitySettings {
    /// The identity document (JSON: the sign-in provider, the claims-to-namespaces
    /// mapping, the CI rules), or the path of a file holding it.
    #[arg(long = "identity", env = "TFREG_IDENTITY", value_parser = identity_document)]
    pub identity: Option<IdentityDocument>,
    /// The client secret of the sign-in provider's client; none for a public client.
    #[arg(long, env = "TFREG_OIDC_CLIENT_SECRET", hide_env_values = true, value_parser = non_empty)]
    pub oidc_client_secret: Option<String>,
    /// The ARN of a Secrets Manager secret whose string is the client secret (read at
    /// start; what the Lambda functions use).
    #[arg(long, env = "TFREG_OIDC_CLIENT_SECRET_ARN", value_parser = non_empty)]
    pub oidc_client_secret_arn: Option<String>,
}

impl IdentitySettings {
    /// The checked identity settings, if any.
    pub fn config(&self) -> Option<Arc<IdentityConfig>> {
        self.identity.as_ref().map(|d| Arc::clone(&d.config))
    }

    /// What the web pages' sign-in button calls the provider, when there is one.
    pub fn sign_in_with(&self) -> Option<String> {
        let identity = self.identity.as_ref()?;
        Some(identity.config.sign_in.as_ref()?.display_name().to_owned())
    }
}

/// A checked identity document, and its text (two are equal when their texts are).
#[derive(Clone)]
pub struct IdentityDocument {
    /// The document as given (inline, or read from its file): what equality compares.
    pub text: String,
    /// The document, parsed and checked.
    pub config: Arc<IdentityConfig>,
}

impl PartialEq for IdentityDocument {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}
impl Eq for IdentityDocument {}

impl std::fmt::Debug for IdentityDocument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityDocument")
            .field("sign_in", &self.config.sign_in.as_ref().map(|s| &s.issuer))
            .field("ci_rules", &self.config.ci.len())
            .finish()
    }
}

/// An identity document given inline (starting with `{`) or as a file path.
pub fn identity_document(value: &str) -> Result<IdentityDocument, String> {
    let value = value.trim();
    let text = if value.starts_with('{') {
        value.to_owned()
    } else {
        let path = std::path::Path::new(value);
        let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {value}: {e}"))?;
        if meta.len() > tfreg_core::identity::config::MAX_DOCUMENT_BYTES as u64 {
            return Err(format!(
                "{value} is larger than an identity document may be"
            ));
        }
        std::fs::read_to_string(path).map_err(|e| format!("cannot read {value}: {e}"))?
    };
    let config = IdentityConfig::parse(&text)?;
    Ok(IdentityDocument {
        text,
        config: Arc::new(config),
    })
}
