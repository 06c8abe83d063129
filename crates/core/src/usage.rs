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

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};
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
/// The most consumers kept per version by [`MemoryUsage`] ([`Usage::add_bounded`]): a flood
/// of distinct token holders cannot grow the counters without bound.
pub const MAX_CONSUMERS: usize = 1000;

/// The day of `at`, as days since 1970-01-01 UTC.
pub fn day_of(at: SystemTime) -> u32 {
    let secs = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    (secs / 86_400) as u32
}

/// The date of a [`day_of`] day, `YYYY-MM-DD` (UTC).
pub fn date_of(day: u32) -> String {
    // Days to a civil date (proleptic Gregorian), as in H. Hinnant's `civil_from_days`.
    let z = i64::from(day) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
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

    /// As [`Usage::add`], keeping at most `max_consumers` consumers of the version: past
    /// that, the one seen longest ago (the first by name among equals) gives way, so the
    /// consumers kept are the most recent ones.
    pub fn add_bounded(&mut self, download: &Download, max_consumers: usize) {
        self.add(download);
        let Some(usage) = self.versions.get_mut(download.installed.version()) else {
            return;
        };
        while usage.consumers.len() > max_consumers {
            let oldest = usage
                .consumers
                .iter()
                .min_by_key(|(who, day)| (**day, *who))
                .map(|(who, _)| who.clone());
            match oldest {
                Some(who) => usage.consumers.remove(&who),
                None => break,
            };
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

    /// All versions' downloads of all time (the details' `downloads`): an adapter whose
    /// [`UsageReader::usage`] reads more than it answers here keeps this total apart.
    async fn total(&self, subject: &Subject) -> Result<u64, StoreError> {
        Ok(self
            .usage(subject)
            .await?
            .versions
            .values()
            .map(|v| v.tally.total)
            .sum())
    }
}

/// Reads nothing: no counts.
#[async_trait]
impl UsageReader for NoCount {
    async fn usage(&self, _subject: &Subject) -> Result<Usage, StoreError> {
        Ok(Usage::default())
    }
}

/// Downloads folded in memory, per module or provider: a [`DownloadSink`] whose `record`
/// takes a lock for one fold (no I/O, no wait on a store), and the [`UsageReader`] of what it
/// folded. The local shape saves it between runs (`tfreg_local::usage`); tests use it alone.
/// Memory is bounded by what is downloaded: one entry per version (and platform) actually
/// downloaded, [`WINDOW_DAYS`] days each, and at most [`MAX_CONSUMERS`] consumers a version.
#[derive(Debug, Default)]
pub struct MemoryUsage {
    state: Mutex<MemoryState>,
}

#[derive(Debug, Default)]
struct MemoryState {
    subjects: HashMap<Subject, Usage>,
    /// Downloads folded in since start: a saver compares it with what it last saved.
    changes: u64,
}

impl MemoryUsage {
    /// Counters restored from what was saved.
    pub fn from_saved(saved: impl IntoIterator<Item = (Subject, Usage)>) -> Self {
        let subjects = saved.into_iter().collect();
        MemoryUsage {
            state: Mutex::new(MemoryState {
                subjects,
                changes: 0,
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, MemoryState> {
        // A panic while folding leaves counters that are still counters: keep counting.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many downloads were folded in since start (or since [`MemoryUsage::from_saved`]).
    pub fn changes(&self) -> u64 {
        self.state().changes
    }

    /// Everything, pruned to the window ending `today`, to save; with [`MemoryUsage::changes`]
    /// as of that copy.
    pub fn saved(&self, today: u32) -> (u64, Vec<(Subject, Usage)>) {
        let mut state = self.state();
        let mut all = Vec::with_capacity(state.subjects.len());
        for (subject, usage) in &mut state.subjects {
            usage.prune(today);
            all.push((subject.clone(), usage.clone()));
        }
        (state.changes, all)
    }

    /// One subject's counters, pruned to the window ending `today`.
    pub fn usage_on(&self, subject: &Subject, today: u32) -> Usage {
        let mut usage = self
            .state()
            .subjects
            .get(subject)
            .cloned()
            .unwrap_or_default();
        usage.prune(today);
        usage
    }
}

impl DownloadSink for MemoryUsage {
    fn record(&self, download: Download) {
        let mut state = self.state();
        state
            .subjects
            .entry(download.installed.subject())
            .or_default()
            .add_bounded(&download, MAX_CONSUMERS);
        state.changes += 1;
    }
}

#[async_trait]
impl UsageReader for MemoryUsage {
    async fn usage(&self, subject: &Subject) -> Result<Usage, StoreError> {
        Ok(self.usage_on(subject, day_of(SystemTime::now())))
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

    #[test]
    fn consumers_are_bounded_and_the_most_recent_are_kept() {
        let memory = MemoryUsage::default();
        for (who, day) in [("c0", 100), ("c1", 90), ("c2", 110)] {
            memory.record(module_download("1.0.0", day, Some(who)));
        }
        let subject = module_download("1.0.0", 0, None).installed.subject();
        assert_eq!(memory.usage_on(&subject, 110).versions.len(), 1);
        assert_eq!(memory.changes(), 3);

        let mut usage = Usage::default();
        for (who, day) in [("a", 100), ("b", 90), ("c", 110), ("d", 105)] {
            usage.add_bounded(&module_download("1.0.0", day, Some(who)), 2);
        }
        let kept = &usage.versions.values().next().unwrap().consumers;
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["c", "d"]);
        assert_eq!(usage.counts(110).total, 4, "every download is counted");
    }

    #[test]
    fn days_are_dates() {
        assert_eq!(date_of(0), "1970-01-01");
        assert_eq!(date_of(11_016), "2000-02-29");
        assert_eq!(date_of(20_420), "2025-11-28");
        assert_eq!(date_of(20_785), "2026-11-28");
    }
}
