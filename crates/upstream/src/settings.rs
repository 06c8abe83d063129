//! The upstream cache's settings, one definition for `tfreg serve`, `tfreg sync` and the
//! mirror function (clap, each with its environment variable).

use std::path::PathBuf;
use std::time::Duration;

use tfreg_core::upstream::{FetchMode, Rules, UpstreamSettings};
use tfreg_core::Platform;

/// The platforms fetched eagerly unless told otherwise: what teams' laptops and CI run.
pub const DEFAULT_PLATFORMS: [&str; 5] = [
    "linux_amd64",
    "linux_arm64",
    "darwin_amd64",
    "darwin_arm64",
    "windows_amd64",
];

use crate::{parse_host, ClientSettings, HttpUpstream, Reach};

/// A setting that cannot work: which flag, and why. [`SettingError::env`] names its
/// environment variable, read from the flag's own definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--{flag}: {problem}")]
pub struct SettingError {
    /// The flag, without its dashes (`upstream-refresh`).
    pub flag: &'static str,
    /// What is wrong with it.
    pub problem: String,
}

impl SettingError {
    fn new(flag: &'static str, problem: impl Into<String>) -> SettingError {
        SettingError {
            flag,
            problem: problem.into(),
        }
    }

    /// The flag's environment variable (`TFREG_UPSTREAM_REFRESH`), as its definition names it.
    pub fn env(&self) -> String {
        #[derive(clap::Parser)]
        struct Flags {
            #[command(flatten)]
            upstream: UpstreamArgs,
        }
        <Flags as clap::CommandFactory>::command()
            .get_arguments()
            .find(|a| a.get_long() == Some(self.flag))
            .and_then(|a| a.get_env())
            .map(|e| e.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.flag.to_owned())
    }
}

/// How to reach upstream registries (shared by the cache and `tfreg sync`).
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientArgs {
    /// Reads HOST's service discovery at URL/.well-known/terraform.json instead of
    /// https://HOST/ (as a Terraform CLI `host` block): `HOST=URL`, repeatable.
    #[arg(
        long = "upstream-host",
        env = "TFREG_UPSTREAM_HOSTS",
        value_delimiter = ','
    )]
    pub hosts: Vec<String>,

    /// PEM certificates trusted for upstream registries, beside the built-in web roots.
    #[arg(long = "upstream-ca", env = "TFREG_UPSTREAM_CA")]
    pub ca: Option<PathBuf>,

    /// How long each upstream metadata call may take.
    #[arg(long = "upstream-timeout", env = "TFREG_UPSTREAM_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,

    /// Private networks (CIDR or address, repeatable) the registry may fetch release files
    /// and packages from when an upstream's answers point there (a company registry serving
    /// downloads from another internal host). Without it, only the upstream's own origin
    /// and public addresses are reached.
    #[arg(
        long = "upstream-allow-address",
        env = "TFREG_UPSTREAM_ALLOW_ADDRESSES",
        value_delimiter = ','
    )]
    pub allow_addresses: Vec<String>,
}

impl ClientArgs {
    /// The HTTP client, or why the settings cannot work.
    pub fn client(&self) -> Result<HttpUpstream, SettingError> {
        let hosts = self
            .hosts
            .iter()
            .filter(|h| !h.trim().is_empty())
            .map(|h| parse_host(h).map_err(|e| SettingError::new("upstream-host", e)))
            .collect::<Result<_, _>>()?;
        let extra_ca = match &self.ca {
            Some(path) => Some(std::fs::read(path).map_err(|e| {
                SettingError::new(
                    "upstream-ca",
                    format!("cannot read {}: {e}", path.display()),
                )
            })?),
            None => None,
        };
        if self.timeout < Duration::from_secs(1) || self.timeout > Duration::from_secs(25) {
            return Err(SettingError::new(
                "upstream-timeout",
                "must be between 1s and 25s",
            ));
        }
        let reach = Reach::parse(&self.allow_addresses)
            .map_err(|e| SettingError::new("upstream-allow-address", e))?;
        HttpUpstream::new(ClientSettings {
            hosts,
            extra_ca,
            reach,
            timeout: self.timeout,
            ..ClientSettings::default()
        })
        .map_err(|e| SettingError::new("upstream-ca", e))
    }
}

/// The pull-through cache of upstream providers in the network mirror.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct UpstreamArgs {
    /// Upstream providers the mirror fetches and caches: HOST/NAMESPACE/TYPE, `*` within a
    /// part (`registry.terraform.io/hashicorp/*`); repeatable. None by default.
    #[arg(long = "upstream", env = "TFREG_UPSTREAM", value_delimiter = ',')]
    pub patterns: Vec<String>,

    /// The longest an upstream version list is served before the upstream is asked again
    /// (a version not in it is asked for at once).
    #[arg(long = "upstream-refresh", env = "TFREG_UPSTREAM_REFRESH", default_value = "5m", value_parser = humantime::parse_duration)]
    pub refresh: Duration,

    /// How a package not cached yet reaches Terraform: `wait` (this registry fetches,
    /// verifies and stores it, then serves it) or `pass-through` (the upstream's own URL
    /// with its checksum, cached meanwhile).
    #[arg(
        long = "upstream-fetch",
        env = "TFREG_UPSTREAM_FETCH",
        default_value = "wait"
    )]
    pub fetch: FetchMode,

    /// Platforms (OS_ARCH) whose packages are fetched as soon as a release is asked for,
    /// so lock files made through the mirror get each one's `h1:`; `none` for only what is
    /// installed.
    #[arg(
        long = "upstream-platforms",
        env = "TFREG_UPSTREAM_PLATFORMS",
        value_delimiter = ',',
        default_value = "linux_amd64,linux_arm64,darwin_amd64,darwin_arm64,windows_amd64"
    )]
    pub platforms: Vec<String>,

    /// Most upstream fetches at once, across all clients.
    #[arg(
        long = "upstream-max-fetches",
        env = "TFREG_UPSTREAM_MAX_FETCHES",
        default_value_t = 4
    )]
    pub max_fetches: usize,

    /// How upstream registries are reached.
    #[command(flatten)]
    pub client: ClientArgs,
}

impl Default for UpstreamArgs {
    fn default() -> Self {
        Self {
            patterns: vec![],
            refresh: Duration::from_secs(300),
            fetch: FetchMode::Wait,
            platforms: DEFAULT_PLATFORMS.iter().map(|p| p.to_string()).collect(),
            max_fetches: 4,
            client: ClientArgs {
                timeout: Duration::from_secs(10),
                ..ClientArgs::default()
            },
        }
    }
}

impl UpstreamArgs {
    /// The cache's settings and client, `None` when no upstream is allowed; or why the
    /// settings cannot work.
    pub fn configured(&self) -> Result<Option<(UpstreamSettings, HttpUpstream)>, SettingError> {
        let rules = Rules::parse(&self.patterns).map_err(|e| SettingError::new("upstream", e))?;
        if rules.is_empty() {
            return Ok(None);
        }
        if self.refresh < Duration::from_secs(1) || self.refresh > Duration::from_secs(3600) {
            return Err(SettingError::new(
                "upstream-refresh",
                "must be between 1s and 1h",
            ));
        }
        if self.max_fetches == 0 || self.max_fetches > 64 {
            return Err(SettingError::new(
                "upstream-max-fetches",
                "must be between 1 and 64",
            ));
        }
        let client = self.client.client()?;
        let eager_platforms = self
            .platforms
            .iter()
            .map(|p| p.trim())
            .filter(|p| !p.is_empty() && *p != "none")
            .map(|p| {
                Platform::parse_joined(p).map_err(|_| {
                    SettingError::new("upstream-platforms", format!("{p:?} is not OS_ARCH"))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Some((
            UpstreamSettings {
                rules,
                refresh: self.refresh,
                fetch: self.fetch,
                max_fetches: self.max_fetches,
                eager_platforms,
                ..UpstreamSettings::default()
            },
            client,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_setting_names_its_flag_and_variable() {
        let args = UpstreamArgs {
            patterns: vec!["registry.terraform.io/hashicorp/*".into()],
            refresh: Duration::from_secs(7200),
            ..UpstreamArgs::default()
        };
        let e = args.configured().err().unwrap();
        assert_eq!(
            e.to_string(),
            "--upstream-refresh: must be between 1s and 1h"
        );
        assert_eq!(e.env(), "TFREG_UPSTREAM_REFRESH");
        let e = UpstreamArgs {
            patterns: vec!["nope".into()],
            ..UpstreamArgs::default()
        }
        .configured()
        .err()
        .unwrap();
        assert_eq!(e.env(), "TFREG_UPSTREAM");
        let ca = std::env::temp_dir().join(format!("tfreg-not-pem-{}", std::process::id()));
        std::fs::write(
            &ca,
            "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let e = ClientArgs {
            ca: Some(ca.clone()),
            ..UpstreamArgs::default().client
        }
        .client()
        .err()
        .unwrap();
        std::fs::remove_file(&ca).unwrap();
        assert_eq!(e.env(), "TFREG_UPSTREAM_CA", "{e}");
        let e = ClientArgs {
            allow_addresses: vec!["10.0.0.0/8".into(), "intranet".into()],
            ..UpstreamArgs::default().client
        }
        .client()
        .err()
        .unwrap();
        assert_eq!(e.env(), "TFREG_UPSTREAM_ALLOW_ADDRESSES", "{e}");
    }
}
