//! The cache itself: per provider, one version list refreshed after a bounded time (and at
//! once for a version it does not hold); per release and per package, one fetch at a time
//! whoever asks (later askers wait for it and share its result); fetches under bounds with a
//! share per upstream host ([`pool`]), releases and packages apart. What is verified is
//! written to the store and served from it from then on.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod packages;
mod pool;
mod slots;

use pool::{Pool, Slot};
use slots::Slots;

use super::clients::{ClientShares, Share};
use super::fetch::{self, unix_now};
use super::record::{self, encode, PlatformPackage, Refusal};
use super::{
    ReleaseRecord, UpstreamClient, UpstreamError, UpstreamProvider, UpstreamSettings, VersionList,
};
use crate::names::{Hostname, Platform, ProviderAddress};
use crate::store::{ArtifactStore, ArtifactWriter};
use crate::version::Version;

/// How soon a failed refresh is tried again (sooner than a good list is refreshed).
const RETRY_FAILED: Duration = Duration::from_secs(30);
/// How soon a background fetch is asked for again.
const ASK_AGAIN: Duration = Duration::from_secs(600);
/// Most entries kept per kind; entries not in use are dropped past it.
const MAX_SLOTS: usize = 10_000;

#[derive(Default)]
struct ListSlot {
    loaded: bool,
    list: Option<VersionList>,
    checked: Option<Instant>,
    failure: Option<String>,
    /// The upstream said it has no such provider: answered again without asking until the
    /// next refresh, so asking for made-up names costs the upstream nothing.
    missing: Option<String>,
}

/// One package's fetches: the last failure, shared with whoever waited for it.
#[derive(Default)]
struct PackageSlot {
    failed: Option<(Instant, UpstreamError)>,
}

#[derive(Default)]
struct ReleaseSlot {
    record: Option<Arc<ReleaseRecord>>,
    refused: Option<(Instant, String)>,
}

/// How fresh a version list must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Reused until it is older than the refresh time (the metadata of versions it lists).
    Reuse,
    /// Asked again, unless asked while this request waited for it (the mirror's
    /// `index.json`, which is all Terraform reads before it picks a version: a new upstream
    /// release is listed at once, and concurrent requests share one call).
    Revalidate,
    /// Asked again now (a version the list does not hold; `tfreg sync`).
    Force,
}

/// A provider's versions as the mirror lists them.
#[derive(Debug, Clone)]
pub struct Listing {
    /// The list (upstream's last good answer, plus what is cached for good).
    pub list: VersionList,
    /// Why the list may be out of date: the last refresh failed.
    pub stale: Option<String>,
}

/// One platform's package of a verified release, as the mirror offers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorPackage {
    /// Its platform.
    pub platform: Platform,
    /// Where the cache stores it (`mirror/...`).
    pub key: String,
    /// From the verified SHA256SUMS.
    pub package: PlatformPackage,
}

/// A package ready to serve: verified, in a local file.
pub struct PackageFile {
    /// The open file.
    pub file: std::fs::File,
    /// Its size.
    pub size: u64,
    /// The spool file it was read into, if any: deleted when dropped, so it must live as
    /// long as the file is read.
    pub spool: Option<tempfile::NamedTempFile>,
}

/// The pull-through cache of upstream providers.
pub struct UpstreamCache {
    settings: UpstreamSettings,
    client: Arc<dyn UpstreamClient>,
    files: Arc<dyn ArtifactStore>,
    writer: Arc<dyn ArtifactWriter>,
    lists: Slots<UpstreamProvider, ListSlot>,
    releases: Slots<(UpstreamProvider, Version), ReleaseSlot>,
    packages: Slots<String, PackageSlot>,
    /// Each upstream host's `providers.v1` base, and when it was read: reused for the
    /// refresh time, so a request costs the upstream one call, not two.
    discovery: Slots<Hostname, Option<(Instant, String)>>,
    /// Version-list refreshes: a bound per upstream host.
    refreshes: Pool,
    /// The providers whose list the upstream has answered (or the store held): what the
    /// pages report beside the allow-list's exact names. Made-up names never get here.
    listed: Mutex<std::collections::BTreeSet<UpstreamProvider>>,
    /// Release fetches (metadata: download answers, SHA256SUMS, its signature).
    metadata: Pool,
    /// Package downloads.
    downloads: Pool,
    spool: Option<PathBuf>,
    /// When each background fetch was last asked for.
    asked: Mutex<HashMap<String, Instant>>,
    /// Each client's fetches in flight.
    clients: Arc<ClientShares>,
}

impl UpstreamCache {
    /// A cache fetching with `client`, reading from `files` and storing with `writer`;
    /// packages are spooled in `spool` (else the system's temporary folder).
    pub fn new(
        settings: UpstreamSettings,
        client: Arc<dyn UpstreamClient>,
        files: Arc<dyn ArtifactStore>,
        writer: Arc<dyn ArtifactWriter>,
        spool: Option<PathBuf>,
    ) -> Arc<Self> {
        let metadata = Pool::new(settings.max_fetches);
        let downloads = Pool::new(settings.max_fetches);
        // One host may refresh as many lists at once as there are fetches in all.
        let refreshes = Pool::new(settings.max_fetches.saturating_mul(2));
        Arc::new(Self {
            settings,
            client,
            files,
            writer,
            lists: Slots::new(),
            releases: Slots::new(),
            packages: Slots::new(),
            discovery: Slots::new(),
            refreshes,
            listed: Mutex::default(),
            metadata,
            downloads,
            spool,
            asked: Mutex::new(HashMap::new()),
            clients: Arc::default(),
        })
    }

    /// The settings it runs with.
    pub fn settings(&self) -> &UpstreamSettings {
        &self.settings
    }

    /// The upstream provider `host/provider`, if the allow-list takes it.
    pub fn allowed(&self, host: &Hostname, provider: &ProviderAddress) -> Option<UpstreamProvider> {
        self.settings
            .rules
            .allows(host, provider)
            .then(|| UpstreamProvider {
                host: host.clone(),
                provider: provider.clone(),
            })
    }

    async fn permit(
        &self,
        pool: &Pool,
        up: &UpstreamProvider,
    ) -> Result<(Slot, Option<Share>), UpstreamError> {
        let share = self
            .clients
            .take(self.settings.max_fetches_per_client)
            .map_err(|active| {
                UpstreamError::Busy(format!(
                    "this client already has {active} upstream fetches in progress; {up} waits: try again shortly"
                ))
            })?;
        match pool.acquire(&up.host, self.settings.queue_wait).await {
            Some(slot) => Ok((slot, share)),
            None => Err(UpstreamError::Busy(format!(
                "the registry is fetching as many upstream files as it may at once ({} from {}, \
                 {} in all); {up} waits: try again shortly",
                pool.per_host(),
                up.host,
                pool.size()
            ))),
        }
    }

    async fn within_deadline<T>(
        &self,
        up: &UpstreamProvider,
        work: impl std::future::Future<Output = Result<T, UpstreamError>>,
    ) -> Result<T, UpstreamError> {
        tokio::time::timeout(self.settings.deadline, work)
            .await
            .unwrap_or_else(|_| {
                Err(UpstreamError::Unreachable(format!(
                    "the upstream registry {} did not answer for {up} within {}s",
                    up.host,
                    self.settings.deadline.as_secs()
                )))
            })
    }

    async fn write(&self, key: &str, bytes: Vec<u8>) {
        if let Err(e) = self.writer.put_bytes(key, bytes).await {
            tracing::warn!(key, error = %crate::store::ErrorChain(&e), "cannot store an upstream cache record");
        }
    }

    /// `up`'s `providers.v1` base: read from its service discovery at most once per refresh
    /// time (one read at a time per host; a failure is not kept).
    async fn providers_base(&self, up: &UpstreamProvider) -> Result<String, UpstreamError> {
        let slot = self.discovery.get(&up.host);
        let mut s = slot.lock().await;
        if let Some((at, base)) = &*s {
            if at.elapsed() < self.settings.refresh {
                return Ok(base.clone());
            }
        }
        let base = fetch::providers_base(self.client.as_ref(), up).await?;
        *s = Some((Instant::now(), base.clone()));
        Ok(base)
    }

    /// The provider's versions: the last good list, asked again as `freshness` says. An
    /// upstream failure leaves the last good list served, marked stale (and the upstream is
    /// not asked again for 30 seconds, unless forced); with no list at all, the failure is
    /// the answer.
    pub async fn versions(
        &self,
        up: &UpstreamProvider,
        freshness: Freshness,
    ) -> Result<Listing, UpstreamError> {
        let arrived = Instant::now();
        let slot = self.lists.get(up);
        let mut s = slot.lock().await;
        if !s.loaded {
            s.list = record::read(self.files.as_ref(), &up.list_key()).await?;
            s.failure = s
                .list
                .as_ref()
                .and_then(|l| l.last_failure.as_ref())
                .map(|f| f.reason.clone());
            s.loaded = true;
        }
        // A provider the upstream said it does not have is answered from memory until the
        // next refresh: made-up names cost the upstream one call each per refresh time.
        if let (None, Some(missing), Some(t), false) = (
            &s.list,
            &s.missing,
            s.checked,
            freshness == Freshness::Force,
        ) {
            if t.elapsed() < self.settings.refresh {
                return Err(UpstreamError::NotFound(missing.clone()));
            }
        }
        let due = match (freshness, s.failure.is_some(), s.checked) {
            (_, _, None) => true,
            (_, true, Some(t)) => t.elapsed() >= RETRY_FAILED.min(self.settings.refresh),
            // Asked again unless it was asked while this request waited for the slot: a
            // burst of requests shares one call.
            (Freshness::Revalidate, false, Some(t)) => t < arrived,
            (_, false, Some(t)) => t.elapsed() >= self.settings.refresh,
        };
        let refresh = if due || freshness == Freshness::Force {
            let slot = self
                .refreshes
                .acquire(&up.host, self.settings.queue_wait)
                .await;
            if slot.is_none() && s.list.is_none() {
                return Err(UpstreamError::Busy(format!(
                    "the registry is refreshing as many lists from {} as it may at once; {up} \
                     waits: try again shortly",
                    up.host
                )));
            }
            // Too many refreshes at this host: the list held is served as it is.
            slot
        } else {
            None
        };
        if let Some(_refreshing) = refresh {
            let fetched = self
                .within_deadline(up, async {
                    let base = self.providers_base(up).await?;
                    fetch::version_list(self.client.as_ref(), up, &base).await
                })
                .await;
            // When the answer came: whoever waited meanwhile shares it.
            s.checked = Some(Instant::now());
            match fetched {
                Ok(mut fresh) => {
                    if let Some(old) = &s.list {
                        for version in &old.cached {
                            if let Some(entry) = old.versions.get(version) {
                                fresh
                                    .versions
                                    .entry(version.clone())
                                    .or_insert(entry.clone());
                            }
                        }
                        fresh.cached = old.cached.clone();
                        // A refusal stays reported (its record is still stored) until the
                        // release verifies.
                        fresh.refused = old.refused.clone();
                    }
                    self.write(&up.list_key(), encode(&fresh)).await;
                    s.list = Some(fresh);
                    s.failure = None;
                    s.missing = None;
                }
                Err(UpstreamError::NotFound(m)) if s.list.is_none() => {
                    s.missing = Some(m.clone());
                    return Err(UpstreamError::NotFound(m));
                }
                Err(e) => {
                    tracing::warn!(provider = %up, error = %e, "an upstream version list could not be refreshed");
                    let reason = e.to_string();
                    if let Some(list) = s.list.as_mut() {
                        list.last_failure = Some(Refusal {
                            at: unix_now(),
                            reason: reason.clone(),
                        });
                        let bytes = encode(&*list);
                        self.write(&up.list_key(), bytes).await;
                    }
                    s.failure = Some(reason);
                }
            }
        }
        if let (None, Some(missing)) = (&s.list, &s.missing) {
            return Err(UpstreamError::NotFound(missing.clone()));
        }
        if s.list.is_some() {
            self.listed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(up.clone());
        }
        match &s.list {
            Some(list) => Ok(Listing {
                list: list.clone(),
                stale: s.failure.clone(),
            }),
            None => Err(UpstreamError::Unreachable(
                s.failure
                    .clone()
                    .unwrap_or_else(|| format!("the upstream registry {} did not answer", up.host)),
            )),
        }
    }

    async fn mark_cached(&self, up: &UpstreamProvider, version: &Version) {
        let slot = self.lists.get(up);
        let mut s = slot.lock().await;
        if let Some(list) = s.list.as_mut() {
            // A release refused before and verified now is no longer refused.
            let unrefused = list.refused.remove(version).is_some();
            if list.cached.insert(version.clone()) || unrefused {
                let bytes = encode(&*list);
                self.write(&up.list_key(), bytes).await;
            }
        }
    }

    /// One verified release: from memory, else the store, else fetched from the upstream
    /// (refreshing the list first if it does not hold the version) and verified.
    pub async fn release(
        &self,
        up: &UpstreamProvider,
        version: &Version,
    ) -> Result<Arc<ReleaseRecord>, UpstreamError> {
        let slot = self.releases.get(&(up.clone(), version.clone()));
        let mut s = slot.lock().await;
        if let Some(record) = &s.record {
            return Ok(Arc::clone(record));
        }
        if let Some(record) =
            record::read::<ReleaseRecord>(self.files.as_ref(), &up.release_key(version)).await?
        {
            let record = Arc::new(record);
            s.record = Some(Arc::clone(&record));
            return Ok(record);
        }
        if let Some((at, reason)) = &s.refused {
            if at.elapsed() < self.settings.refresh.min(RETRY_FAILED * 10) {
                return Err(UpstreamError::Refused(reason.clone()));
            }
        }
        let mut listing = self.versions(up, Freshness::Reuse).await?;
        if !listing.list.versions.contains_key(version) {
            listing = self.versions(up, Freshness::Force).await?;
        }
        let Some(entry) = listing.list.versions.get(version) else {
            let why = listing
                .stale
                .map(|f| format!(" (its list could not be refreshed: {f})"))
                .unwrap_or_default();
            return Err(UpstreamError::NotFound(format!(
                "the upstream registry {} has no version {version} of {}{why}",
                up.host, up.provider
            )));
        };
        let _permit = self.permit(&self.metadata, up).await?;
        let fetched = async {
            let base = self.providers_base(up).await?;
            fetch::release(self.client.as_ref(), up, &base, version, &entry.platforms).await
        };
        match self.within_deadline(up, fetched).await {
            Ok(record) => {
                self.write(&up.release_key(version), encode(&record)).await;
                let record = Arc::new(record);
                s.record = Some(Arc::clone(&record));
                drop(s);
                self.mark_cached(up, version).await;
                Ok(record)
            }
            Err(UpstreamError::Refused(reason)) => {
                self.refuse(up, version, &reason).await;
                s.refused = Some((Instant::now(), reason.clone()));
                Err(UpstreamError::Refused(reason))
            }
            Err(e) => Err(e),
        }
    }

    async fn refuse(&self, up: &UpstreamProvider, version: &Version, reason: &str) {
        tracing::warn!(provider = %up, %version, reason, "refused an upstream release");
        let refusal = Refusal {
            at: unix_now(),
            reason: reason.to_owned(),
        };
        self.write(&up.refusal_key(version), encode(&refusal)).await;
        let slot = self.lists.get(up);
        let mut s = slot.lock().await;
        if let Some(list) = s.list.as_mut() {
            list.refused.insert(version.clone(), refusal);
            let bytes = encode(&*list);
            self.write(&up.list_key(), bytes).await;
        }
    }

    /// What the cache holds of `up`, from its records: for the pages and `tfreg status`.
    pub async fn report(&self, up: &UpstreamProvider) -> super::report::UpstreamReport {
        super::report::read_one(self.files.as_ref(), up).await
    }

    /// The upstream providers to report on: those the allow-list names exactly, and those
    /// asked for since this process started.
    pub fn known(&self) -> Vec<UpstreamProvider> {
        let mut known: std::collections::BTreeSet<UpstreamProvider> =
            self.settings.rules.exact().collect();
        known.extend(
            self.listed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .cloned(),
        );
        known.into_iter().collect()
    }
}
