//! Who installs what: downloads counted per module version and per provider version and
//! platform (last 7 days, last 30 days, all time), and per version the consumers (the person
//! or CI job a token was issued to, or a token's description) seen in the last 30 days.
//!
//! A download is counted where Terraform asks for it: a module's `.../download` (which
//! answers `X-Terraform-Get`) and a provider's `.../download/OS/ARCH`. The request path only
//! hands a [`Download`] to a [`DownloadSink`], which must not wait on storage: locally it
//! folds into counters saved between runs; on AWS it is one structured log line, and a
//! separate aggregation folds the lines into the table. Counts are read through a
//! [`UsageReader`], never on the protocol's request path.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::names::{ModuleAddress, Platform, ProviderAddress};
use crate::store::StoreError;
use crate::version::Version;

/// Days a consumer and a day's count are kept.
pub const WINDOW_DAYS: u32 = 30;
/// The longest consumer name kept, in characters.
pub const MAX_WHO_CHARS: usize = 200;

/// The day of `at`, as days since 1970-01-01 UTC.
pub fn day_of(at: SystemTime) -> u32 {
    let secs = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    (secs / 86_400) as u32
}

/// What was downloaded.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Installed {
    /// A module version (its `download` endpoint).
    Module {
        /// The module.
        address: ModuleAddress,
        /// The version.
        version: Version,
    },
    /// A provider version's package for one platform.
    Provider {
        /// The provider.
        provider: ProviderAddress,
        /// The version.
        version: Version,
        /// The platform.
        platform: Platform,
    },
}

/// What a [`UsageReader`] is asked about: a module or a provider, all its versions.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Subject {
    /// A module.
    Module {
        /// The module.
        address: ModuleAddress,
    },
    /// A provider.
    Provider {
        /// The provider.
        provider: ProviderAddress,
    },
}

impl Installed {
    /// The module or provider.
    pub fn subject(&self) -> Subject {
        match self {
            Installed::Module { address, .. } => Subject::Module {
                address: address.clone(),
            },
            Installed::Provider { provider, .. } => Subject::Provider {
                provider: provider.clone(),
            },
        }
    }

    /// The version.
    pub fn version(&self) -> &Version {
        match self {
            Installed::Module { version, .. } | Installed::Provider { version, .. } => version,
        }
    }

    /// The platform of a provider package.
    pub fn platform(&self) -> Option<&Platform> {
        match self {
            Installed::Module { .. } => None,
            Installed::Provider { platform, .. } => Some(platform),
        }
    }
}

/// Who downloaded: known only for a request that carried a token.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Consumer {
    /// The token's public ID.
    pub token: String,
    /// The person or CI job the token was issued to (`subject`, with how it was issued), or
    /// the token's description for a token made by `tfreg token create`. Capped at
    /// [`MAX_WHO_CHARS`]; shown escaped, and only to tokens that read the namespace.
    pub who: String,
}

impl Consumer {
    /// The consumer a token record names.
    pub fn of(record: &crate::tokens::TokenRecord) -> Self {
        let who = match (&record.subject, &record.issued_via) {
            (Some(subject), Some(via)) => format!("{subject} ({via})"),
            (Some(subject), None) => subject.clone(),
            (None, _) if !record.description.is_empty() => record.description.clone(),
            (None, _) => format!("token {}", record.id),
        };
        Consumer {
            token: record.id.clone(),
            who: who.chars().take(MAX_WHO_CHARS).collect(),
        }
    }
}

/// One download, as the request path hands it over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Download {
    /// What was downloaded.
    pub installed: Installed,
    /// Who, when the request carried a token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer: Option<Consumer>,
    /// The day ([`day_of`]).
    pub day: u32,
}

/// Where the request path hands each download. Must return at once: it never waits on a
/// store, and a failure to count never fails the download.
pub trait DownloadSink: Send + Sync {
    /// Counts one download.
    fn record(&self, download: Download);
}

/// Counts nothing (the shapes that do not count, and tests).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoCount;

impl DownloadSink for NoCount {
    fn record(&self, _download: Download) {}
}

/// Downloads in the last 7 days, the last 30 days (today included) and all time: the
/// public registry's `week`/`month`/`total` summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// The last 7 days, today included.
    pub week: u64,
    /// The last 30 days, today included.
    pub month: u64,
    /// Since counting began.
    pub total: u64,
}

/// A count per day for the last [`WINDOW_DAYS`] days, and all time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Since counting began.
    pub total: u64,
    /// Day ([`day_of`]) to count, for the last [`WINDOW_DAYS`] days.
    #[serde(default)]
    pub days: BTreeMap<u32, u64>,
}

impl Tally {
    /// Adds `n` on `day`.
    pub fn add(&mut self, day: u32, n: u64) {
        self.total += n;
        *self.days.entry(day).or_default() += n;
    }

    /// Forgets the days before the window ending `today`.
    pub fn prune(&mut self, today: u32) {
        let first = today.saturating_sub(WINDOW_DAYS - 1);
        self.days.retain(|day, _| *day >= first);
    }

    /// The counts as of `today`.
    pub fn counts(&self, today: u32) -> Counts {
        let within = |days: u32| -> u64 {
            let first = today.saturating_sub(days - 1);
            self.days.range(first..=today).map(|(_, n)| n).sum()
        };
        Counts {
            week: within(7),
            month: within(WINDOW_DAYS),
            total: self.total,
        }
    }
}

/// One version's downloads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionUsage {
    /// Every download of the version (for a provider, of any platform).
    pub tally: Tally,
    /// A provider version's downloads per platform (`os_arch`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub platforms: BTreeMap<String, Tally>,
    /// Consumer (`who`) to the last day it downloaded the version, for the last
    /// [`WINDOW_DAYS`] days.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub consumers: BTreeMap<String, u32>,
}

/// A module's or provider's downloads, per version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Version to its downloads.
    pub versions: BTreeMap<Version, VersionUsage>,
}

impl Usage {
    /// Folds one download in.
    pub fn add(&mut self, download: &Download) {
        let usage = self
            .versions
            .entry(download.installed.version().clone())
            .or_default();
        usage.tally.add(download.day, 1);
        if let Some(platform) = download.installed.platform() {
            let key = format!("{}_{}", platform.os, platform.arch);
            usage.platforms.entry(key).or_default().add(download.day, 1);
        }
        if let Some(consumer) = &download.consumer {
            let last = usage.consumers.entry(consumer.who.clone()).or_default();
            *last = (*last).max(download.day);
        }
    }

    /// Forgets days and consumers before the window ending `today`.
    pub fn prune(&mut self, today: u32) {
        let first = today.saturating_sub(WINDOW_DAYS - 1);
        for usage in self.versions.values_mut() {
            usage.tally.prune(today);
            for tally in usage.platforms.values_mut() {
                tally.prune(today);
            }
            usage.consumers.retain(|_, day| *day >= first);
        }
    }

    /// All versions' counts together.
    pub fn counts(&self, today: u32) -> Counts {
        self.versions
            .values()
            .map(|v| v.tally.counts(today))
            .fold(Counts::default(), |a, b| Counts {
                week: a.week + b.week,
                month: a.month + b.month,
                total: a.total + b.total,
            })
    }
}

/// Where counts are read: by the read API, the pages and `tfreg status --consumers`, never by
/// the protocol's requests.
#[async_trait]
pub trait UsageReader: Send + Sync {
    /// Every version's downloads of a module or provider; empty when none was counted.
    async fn usage(&self, subject: &Subject) -> Result<Usage, StoreError>;
}

/// Reads nothing: no counts.
#[async_trait]
impl UsageReader for NoCount {
    async fn usage(&self, _subject: &Subject) -> Result<Usage, StoreError> {
        Ok(Usage::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module_download(version: &str, day: u32, who: Option<&str>) -> Download {
        Download {
            installed: Installed::Module {
                address: ModuleAddress::parse("acme", "network", "aws").unwrap(),
                version: Version::parse(version).unwrap(),
            },
            consumer: who.map(|w| Consumer {
                token: "0123456789abcdef".into(),
                who: w.into(),
            }),
            day,
        }
    }

    #[test]
    fn counts_cover_the_last_week_month_and_all_time() {
        let mut usage = Usage::default();
        for day in [100, 120, 125, 130, 130] {
            usage.add(&module_download("1.0.0", day, None));
        }
        let counts = usage.counts(130);
        assert_eq!(
            counts,
            Counts {
                week: 3,
                month: 4,
                total: 5
            }
        );
        usage.prune(130);
        assert_eq!(usage.counts(130), counts, "pruning keeps the counts");
        assert_eq!(usage.versions.values().next().unwrap().tally.days.len(), 3);
    }

    #[test]
    fn consumers_keep_their_last_day_within_the_window() {
        let mut usage = Usage::default();
        usage.add(&module_download("1.0.0", 100, Some("alice")));
        usage.add(&module_download("1.0.0", 90, Some("alice")));
        usage.add(&module_download("1.0.0", 95, Some("ci")));
        let consumers = &usage.versions.values().next().unwrap().consumers;
        assert_eq!(consumers["alice"], 100);
        usage.prune(125);
        let consumers = &usage.versions.values().next().unwrap().consumers;
        assert_eq!(consumers.keys().collect::<Vec<_>>(), ["alice"]);
    }

    #[test]
    fn a_download_line_round_trips() {
        let download = module_download("1.2.0", 20_420, Some("repo:acme/infra"));
        let line = serde_json::to_string(&download).unwrap();
        assert!(line.contains(r#""kind":"module""#), "{line}");
        assert_eq!(serde_json::from_str::<Download>(&line).unwrap(), download);
    }
}
