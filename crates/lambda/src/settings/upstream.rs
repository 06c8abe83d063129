//! The settings of the functions of the upstream cache: the mirror function (the registry's
//! settings and the allow-list) and the fetcher (the bucket and the allow-list), both read
//! through `tfreg serve`'s own `--upstream` flags ([`UpstreamArgs`]).

use clap::Parser;
use tfreg_aws::settings::BucketSetting;
use tfreg_core::upstream::{Background, FetchMode, Rules, UpstreamSettings};
use tfreg_upstream::settings::UpstreamArgs;
use tfreg_upstream::HttpUpstream;

use super::{ApiFlags, ApiSettings};
use crate::config::{required, ConfigError, FunctionSettings};

/// The upstream cache as a function runs it: what the allow-list takes, how long a version
/// list lasts, how upstream registries are reached. Uncached packages always pass through to
/// the upstream's own URLs (no request may wait for a download within API Gateway's 30
/// seconds), and their fetches are requested from the fetcher through the bucket, so
/// `TFREG_UPSTREAM_FETCH` changes nothing on Lambda.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LambdaUpstream {
    /// `TFREG_UPSTREAM`, `TFREG_UPSTREAM_REFRESH`, `TFREG_UPSTREAM_HOSTS`,
    /// `TFREG_UPSTREAM_CA`, `TFREG_UPSTREAM_TIMEOUT`, `TFREG_UPSTREAM_MAX_FETCHES`.
    pub args: UpstreamArgs,
}

impl LambdaUpstream {
    /// Checks the settings as a cold start does.
    fn checked(args: UpstreamArgs) -> Result<LambdaUpstream, ConfigError> {
        let upstream = LambdaUpstream { args };
        upstream.configured()?;
        Ok(upstream)
    }

    /// Whether any upstream provider is allowed (an empty allow-list turns the cache off).
    pub fn enabled(&self) -> bool {
        Rules::parse(&self.args.patterns).is_ok_and(|rules| !rules.is_empty())
    }

    /// The cache's settings (pass-through, fetches requested through the bucket) and its
    /// client; `None` when no upstream provider is allowed.
    pub fn configured(&self) -> Result<Option<(UpstreamSettings, HttpUpstream)>, ConfigError> {
        let configured = self
            .args
            .configured()
            .map_err(|e| ConfigError::new(&e.env(), e.problem))?;
        Ok(configured.map(|(settings, client)| {
            let settings = UpstreamSettings {
                fetch: FetchMode::PassThrough,
                background: Background::Requested,
                ..settings
            };
            (settings, client)
        }))
    }
}

/// The mirror function: the registry-reading functions' settings, and the upstream cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorSettings {
    /// What the modules and providers functions read too.
    pub api: ApiSettings,
    /// The upstream providers it answers for (none: the cache is off).
    pub upstream: LambdaUpstream,
}

/// The flags of [`MirrorSettings`].
#[derive(Parser, Debug)]
pub struct MirrorFlags {
    #[command(flatten)]
    api: ApiFlags,
    #[command(flatten)]
    upstream: UpstreamArgs,
}

impl FunctionSettings for MirrorSettings {
    type Flags = MirrorFlags;

    fn from_flags(s: MirrorFlags) -> Result<Self, ConfigError> {
        Ok(MirrorSettings {
            api: ApiSettings::from_flags(s.api)?,
            upstream: LambdaUpstream::checked(s.upstream)?,
        })
    }
}

/// The fetcher: the bucket it reads fetch requests from and stores packages in, and the
/// upstream cache's settings (a request for a provider the allow-list does not take is
/// ignored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetcherSettings {
    /// `TFREG_BUCKET`
    pub bucket: String,
    /// The upstream providers it fetches for.
    pub upstream: LambdaUpstream,
}

/// The flags of [`FetcherSettings`].
#[derive(Parser, Debug)]
pub struct FetcherFlags {
    #[command(flatten)]
    bucket: BucketSetting,
    #[command(flatten)]
    upstream: UpstreamArgs,
}

impl FunctionSettings for FetcherSettings {
    type Flags = FetcherFlags;

    fn from_flags(s: FetcherFlags) -> Result<Self, ConfigError> {
        Ok(FetcherSettings {
            bucket: required("TFREG_BUCKET", s.bucket.bucket)?,
            upstream: LambdaUpstream::checked(s.upstream)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetcher(extra: &[(&str, &str)]) -> Result<FetcherSettings, ConfigError> {
        let extra: Vec<(String, String)> = extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        FetcherSettings::from_lookup(|name| match name {
            "TFREG_BUCKET" => Some("b".to_owned()),
            _ => extra
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone()),
        })
    }

    #[test]
    fn an_empty_allow_list_turns_the_cache_off() {
        let settings = fetcher(&[("TFREG_UPSTREAM", "")]).unwrap();
        assert!(!settings.upstream.enabled());
        assert!(settings.upstream.configured().unwrap().is_none());
    }

    #[test]
    fn the_cache_passes_packages_through_and_requests_their_fetches() {
        let settings = fetcher(&[
            ("TFREG_UPSTREAM", "registry.terraform.io/hashicorp/*"),
            ("TFREG_UPSTREAM_FETCH", "wait"),
        ])
        .unwrap();
        let (cache, _) = settings.upstream.configured().unwrap().unwrap();
        assert_eq!(cache.fetch, FetchMode::PassThrough);
        assert_eq!(cache.background, Background::Requested);
    }

    #[test]
    fn a_bad_upstream_setting_names_its_variable() {
        let e = fetcher(&[
            ("TFREG_UPSTREAM", "registry.terraform.io/hashicorp/*"),
            ("TFREG_UPSTREAM_REFRESH", "2h"),
        ])
        .unwrap_err();
        assert_eq!(e.variable, "TFREG_UPSTREAM_REFRESH");
        assert!(e.problem.contains("between 1s and 1h"), "{e}");
        let e = fetcher(&[("TFREG_UPSTREAM", "not a pattern")]).unwrap_err();
        assert_eq!(e.variable, "TFREG_UPSTREAM", "{e}");
    }
}
