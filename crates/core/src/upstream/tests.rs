//! The cache against an in-memory upstream (the real one, a second registry, drives the
//! end-to-end tests): what is verified before it is stored, how lists are refreshed, what
//! an outage leaves served, and that one fetch serves every concurrent request.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::*;
use crate::memory::MemoryArtifactStore;
use crate::names::{Hostname, Platform, ProviderAddress};
use crate::store::ArtifactStore;

const BASE: &str = "https://up.test/v1/providers/";
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}")).unwrap()
}

/// An upstream registry in memory: answers by URL, counts calls, can go down.
#[derive(Default)]
struct FakeUpstream {
    answers: Mutex<BTreeMap<String, Vec<u8>>>,
    calls: Mutex<BTreeMap<String, usize>>,
    down: AtomicBool,
    /// Calls in progress now, and the most at once so far.
    inflight: AtomicUsize,
    peak: AtomicUsize,
}

impl FakeUpstream {
    fn with_widget(key: &str) -> Arc<FakeUpstream> {
        let up = FakeUpstream::default();
        let sums = fixture("terraform-provider-widget_1.0.0_SHA256SUMS");
        let sig = match key {
            "release" => fixture("terraform-provider-widget_1.0.0_SHA256SUMS.sig"),
            _ => fixture("terraform-provider-widget_1.0.0_SHA256SUMS.other.sig"),
        };
        let armor = String::from_utf8(fixture("release.asc")).unwrap();
        up.set(
            "https://up.test/.well-known/terraform.json",
            br#"{"providers.v1":"/v1/providers/"}"#.to_vec(),
        );
        up.set_versions(&["1.0.0"]);
        for platform in ["linux_amd64", "darwin_arm64"] {
            let (os, arch) = platform.split_once('_').unwrap();
            let file = format!("terraform-provider-widget_1.0.0_{platform}.zip");
            let zip = fixture(&file);
            let answer = serde_json::json!({
                "protocols": ["5.0"], "os": os, "arch": arch, "filename": file,
                "download_url": format!("/files/{file}"),
                "shasums_url": "/files/SHA256SUMS",
                "shasums_signature_url": "/files/SHA256SUMS.sig",
                "shasum": crate::hash::sha256_hex(&zip[..]).unwrap(),
                "signing_keys": {"gpg_public_keys": [{"key_id": "K", "ascii_armor": armor}]},
            });
            up.set(
                &format!("{BASE}acme/widget/1.0.0/download/{os}/{arch}"),
                serde_json::to_vec(&answer).unwrap(),
            );
            up.set(&format!("https://up.test/files/{file}"), zip);
        }
        up.set("https://up.test/files/SHA256SUMS", sums);
        up.set("https://up.test/files/SHA256SUMS.sig", sig);
        Arc::new(up)
    }

    fn set(&self, url: &str, body: Vec<u8>) {
        self.answers.lock().unwrap().insert(url.to_owned(), body);
    }

    fn set_versions(&self, versions: &[&str]) {
        let list: Vec<_> = versions
            .iter()
            .map(|v| {
                serde_json::json!({"version": v, "protocols": ["5.0"], "platforms": [
                {"os": "linux", "arch": "amd64"}, {"os": "darwin", "arch": "arm64"}]})
            })
            .collect();
        let body = serde_json::to_vec(&serde_json::json!({ "versions": list })).unwrap();
        self.set(&format!("{BASE}acme/widget/versions"), body);
    }

    fn calls(&self, url_part: &str) -> usize {
        let calls = self.calls.lock().unwrap();
        calls
            .iter()
            .filter(|(url, _)| url.contains(url_part))
            .map(|(_, n)| n)
            .sum()
    }

    fn answer(&self, url: &str) -> Result<Vec<u8>, CallError> {
        *self
            .calls
            .lock()
            .unwrap()
            .entry(url.to_owned())
            .or_default() += 1;
        if self.down.load(Ordering::SeqCst) {
            return Err(CallError::Failed(format!("{url}: cannot connect")));
        }
        self.answers
            .lock()
            .unwrap()
            .get(url)
            .cloned()
            .ok_or_else(|| CallError::NotFound(format!("{url}: 404 Not Found")))
    }
}

#[async_trait]
impl UpstreamClient for FakeUpstream {
    fn discovery_url(&self, host: &Hostname) -> String {
        format!("https://{host}/.well-known/terraform.json")
    }

    async fn get(&self, _up: &Hostname, url: &str, _limit: u64) -> Result<Vec<u8>, CallError> {
        // A call takes a moment, as over a network: concurrent askers overlap.
        let now = self.inflight.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(2)).await;
        self.inflight.fetch_sub(1, Ordering::SeqCst);
        self.answer(url)
    }

    async fn get_file(&self, up: &Hostname, url: &str, limit: u64) -> Result<Vec<u8>, CallError> {
        self.get(up, url, limit).await
    }

    async fn download(
        &self,
        _up: &Hostname,
        url: &str,
        _limit: u64,
        to: &Path,
    ) -> Result<u64, CallError> {
        // Slow enough for concurrent askers to pile up behind the first.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let body = self.answer(url)?;
        std::fs::write(to, &body).unwrap();
        Ok(body.len() as u64)
    }
}

/// An upstream with widget 1.0.0 signed by `key` (`release` or another), and an empty store.
fn fresh(key: &str) -> (Arc<FakeUpstream>, Arc<MemoryArtifactStore>) {
    (
        FakeUpstream::with_widget(key),
        Arc::new(MemoryArtifactStore::new()),
    )
}

/// The failure a request gets when the upstream does not answer: it names the upstream.
fn assert_unreachable_naming_the_upstream(e: &UpstreamError) {
    assert!(
        matches!(e, UpstreamError::Unreachable(_)) && e.to_string().contains("up.test"),
        "{e}"
    );
}

fn widget() -> UpstreamProvider {
    UpstreamProvider {
        host: Hostname::parse("up.test").unwrap(),
        provider: ProviderAddress::parse("acme", "widget").unwrap(),
    }
}

fn v(text: &str) -> crate::Version {
    crate::Version::parse(text).unwrap()
}

fn linux() -> Platform {
    Platform::parse("linux", "amd64").unwrap()
}

fn cache(
    up: &Arc<FakeUpstream>,
    store: &Arc<MemoryArtifactStore>,
    refresh: Duration,
) -> Arc<UpstreamCache> {
    let settings = UpstreamSettings {
        rules: Rules::parse(&["up.test/acme/*"]).unwrap(),
        refresh,
        ..UpstreamSettings::default()
    };
    UpstreamCache::new(settings, up.clone(), store.clone(), store.clone(), None)
}

#[tokio::test]
async fn a_verified_release_is_kept_and_served_again_without_the_upstream() {
    let (up, store) = fresh("release");
    let first = cache(&up, &store, Duration::from_secs(300));
    let packages = first.packages(&widget(), &v("1.0.0")).await.unwrap();
    assert_eq!(packages.len(), 2);
    let package = first
        .package(&widget(), &v("1.0.0"), &linux())
        .await
        .unwrap();
    assert_eq!(
        package.size,
        fixture("terraform-provider-widget_1.0.0_linux_amd64.zip").len() as u64
    );
    let key = widget().package_key(&v("1.0.0"), &linux());
    assert!(
        store.head(&key).await.unwrap().is_some(),
        "the verified zip is stored under mirror/"
    );
    assert!(store
        .head(&widget().release_key(&v("1.0.0")))
        .await
        .unwrap()
        .is_some());

    // A new process over the same store, the upstream down: everything cached is served.
    up.down.store(true, Ordering::SeqCst);
    let second = cache(&up, &store, Duration::from_secs(300));
    let listing = second.versions(&widget(), Freshness::Reuse).await.unwrap();
    assert!(listing.list.versions.contains_key(&v("1.0.0")));
    assert!(
        listing.stale.is_some(),
        "the list is marked stale while the upstream is down"
    );
    second
        .package(&widget(), &v("1.0.0"), &linux())
        .await
        .unwrap();
    // The uncached platform fails with the upstream's name.
    let darwin = Platform::parse("darwin", "arm64").unwrap();
    let e = second
        .package(&widget(), &v("1.0.0"), &darwin)
        .await
        .err()
        .unwrap();
    assert_unreachable_naming_the_upstream(&e);
}

#[tokio::test]
async fn a_release_signed_by_another_key_is_refused_and_nothing_is_stored() {
    let (up, store) = fresh("other");
    let cache = cache(&up, &store, Duration::from_secs(300));
    let e = cache
        .package(&widget(), &v("1.0.0"), &linux())
        .await
        .err()
        .unwrap();
    assert!(matches!(e, UpstreamError::Refused(_)), "{e}");
    assert!(
        e.to_string()
            .contains("not signed by any of the upstream's signing keys"),
        "{e}"
    );
    assert!(store
        .head(&widget().refusal_key(&v("1.0.0")))
        .await
        .unwrap()
        .is_some());
    assert!(store
        .head(&widget().package_key(&v("1.0.0"), &linux()))
        .await
        .unwrap()
        .is_none());
    // Asked again soon, the refusal is the answer without asking the upstream again.
    let before = up.calls("SHA256SUMS.sig");
    assert!(cache.release(&widget(), &v("1.0.0")).await.is_err());
    assert_eq!(up.calls("SHA256SUMS.sig"), before);
}

#[tokio::test]
async fn a_zip_that_does_not_match_the_signed_sums_is_never_stored() {
    let (up, store) = fresh("release");
    up.set(
        "https://up.test/files/terraform-provider-widget_1.0.0_linux_amd64.zip",
        b"PK tampered".to_vec(),
    );
    let cache = cache(&up, &store, Duration::from_secs(300));
    let e = cache
        .package(&widget(), &v("1.0.0"), &linux())
        .await
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("does not match its signed SHA256SUMS"),
        "{e}"
    );
    assert!(store
        .head(&widget().package_key(&v("1.0.0"), &linux()))
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn lists_are_refreshed_after_the_refresh_time_and_at_once_for_an_unknown_version() {
    let (up, store) = fresh("release");
    let cache = cache(&up, &store, Duration::from_millis(200));
    cache.versions(&widget(), Freshness::Reuse).await.unwrap();
    cache.versions(&widget(), Freshness::Reuse).await.unwrap();
    assert_eq!(up.calls("/versions"), 1, "a fresh list is not asked again");
    // A new upstream version: asked for by name, it is found at once.
    up.set_versions(&["1.0.0", "1.1.0"]);
    let e = cache.release(&widget(), &v("1.1.0")).await.err().unwrap();
    assert_eq!(
        up.calls("/versions"),
        2,
        "an unknown version refreshes the list at once"
    );
    // (1.1.0 has no download answers in the fake: the fetch fails, but it was listed.)
    assert!(
        !matches!(e, UpstreamError::NotFound(ref m) if m.contains("no version")),
        "{e}"
    );
    let e = cache.release(&widget(), &v("9.9.9")).await.err().unwrap();
    assert!(e.to_string().contains("has no version 9.9.9"), "{e}");
    tokio::time::sleep(Duration::from_millis(250)).await;
    let listing = cache.versions(&widget(), Freshness::Reuse).await.unwrap();
    assert!(listing.list.versions.contains_key(&v("1.1.0")));
    assert_eq!(
        up.calls("/versions"),
        4,
        "a list older than the refresh time is asked again"
    );
}

#[tokio::test]
async fn the_mirror_index_lists_a_new_upstream_release_at_once_and_a_burst_costs_one_call() {
    let (up, store) = fresh("release");
    let cache = cache(&up, &store, Duration::from_secs(3600));
    cache.versions(&widget(), Freshness::Reuse).await.unwrap();
    let burst: Vec<_> = (0..10)
        .map(|_| {
            let cache = cache.clone();
            tokio::spawn(async move { cache.versions(&widget(), Freshness::Revalidate).await })
        })
        .collect();
    for asker in burst {
        asker.await.unwrap().unwrap();
    }
    let calls = up.calls("/versions");
    assert_eq!(calls, 2, "a burst of 10 shares one call");
    up.set_versions(&["1.0.0", "1.2.0"]);
    let before = up.calls("/versions");
    let listing = cache
        .versions(&widget(), Freshness::Revalidate)
        .await
        .unwrap();
    assert!(
        listing.list.versions.contains_key(&v("1.2.0")),
        "listed at once despite a refresh time of an hour"
    );
    // The upstream down: the last list, stale, and not asked again at every request.
    up.down.store(true, Ordering::SeqCst);
    for _ in 0..5 {
        let listing = cache
            .versions(&widget(), Freshness::Revalidate)
            .await
            .unwrap();
        assert!(listing.stale.is_some());
    }
    // One more call for the release, one for the failure, then none while it is down.
    assert_eq!(up.calls("/versions"), before + 2);
}

#[tokio::test]
async fn with_no_list_and_the_upstream_down_the_failure_names_the_upstream() {
    let (up, store) = fresh("release");
    up.down.store(true, Ordering::SeqCst);
    let e = cache(&up, &store, Duration::from_secs(300))
        .versions(&widget(), Freshness::Reuse)
        .await
        .err()
        .unwrap();
    assert_unreachable_naming_the_upstream(&e);
}

#[tokio::test]
async fn one_download_serves_every_concurrent_request() {
    let (up, store) = fresh("release");
    let cache = cache(&up, &store, Duration::from_secs(300));
    let askers = (0..20).map(|_| {
        let cache = cache.clone();
        tokio::spawn(async move {
            cache
                .package(&widget(), &v("1.0.0"), &linux())
                .await
                .map(|p| p.size)
        })
    });
    for asker in askers {
        asker.await.unwrap().unwrap();
    }
    assert_eq!(up.calls("linux_amd64.zip"), 1);
    assert_eq!(up.calls("/download/linux/amd64"), 1);
}

#[tokio::test]
async fn a_provider_the_upstream_does_not_have_is_not_asked_again_until_the_refresh() {
    let (up, store) = fresh("release");
    let cache = cache(&up, &store, Duration::from_secs(300));
    let missing = UpstreamProvider {
        provider: ProviderAddress::parse("acme", "nothing").unwrap(),
        ..widget()
    };
    for _ in 0..5 {
        let e = cache
            .versions(&missing, Freshness::Reuse)
            .await
            .err()
            .unwrap();
        assert!(
            matches!(e, UpstreamError::NotFound(ref m) if m.contains("has no provider")),
            "{e}"
        );
    }
    assert_eq!(up.calls("acme/nothing/versions"), 1);
    assert!(
        store.list().await.unwrap().is_empty(),
        "nothing is stored for it"
    );
}

#[tokio::test]
async fn the_record_names_the_key_that_verified_not_the_id_the_upstream_claims() {
    // Given an upstream that lists its release key under a made-up key ID ("K"),
    let (up, store) = fresh("release");
    let cache = cache(&up, &store, Duration::from_secs(300));

    // when the release is verified and kept,
    let record = cache.release(&widget(), &v("1.0.0")).await.unwrap();

    // then its record names the fingerprint of the key that verified it (as gpg prints it
    // for the fixture), in memory and in the store.
    const RELEASE_KEY: &str = "2935BD1C58C49A242C4789D36ED38C978424D2D4";
    assert_eq!(record.signed_by, RELEASE_KEY);
    let stored: ReleaseRecord = record::read(store.as_ref(), &widget().release_key(&v("1.0.0")))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.signed_by, RELEASE_KEY);
}

#[tokio::test]
async fn a_refused_release_stays_reported_when_the_list_is_refreshed() {
    // Given a release refused for its signature,
    let (up, store) = fresh("other");
    let cache = cache(&up, &store, Duration::from_secs(300));
    assert!(cache.release(&widget(), &v("1.0.0")).await.is_err());
    let refused = |report: &super::report::UpstreamReport| {
        report
            .refused
            .iter()
            .map(|r| r.version.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(refused(&cache.report(&widget()).await), ["1.0.0"]);

    // when the version list is refreshed (the upstream has published 1.1.0 meanwhile),
    up.set_versions(&["1.0.0", "1.1.0"]);
    let listing = cache.versions(&widget(), Freshness::Force).await.unwrap();
    assert!(listing.list.versions.contains_key(&v("1.1.0")));

    // then the refusal is still reported, from memory and from the stored list.
    assert!(listing.list.refused.contains_key(&v("1.0.0")));
    assert_eq!(refused(&cache.report(&widget()).await), ["1.0.0"]);
}

#[tokio::test]
async fn made_up_names_cost_the_upstream_one_call_each_and_refreshes_per_host_are_bounded() {
    // Given a cache of up.test/acme/* with the default four fetches,
    let (up, store) = fresh("release");
    let cache = cache(&up, &store, Duration::from_secs(300));
    let made_up = |n: usize| UpstreamProvider {
        host: Hostname::parse("up.test").unwrap(),
        provider: ProviderAddress::parse("acme", &format!("madeup{n}")).unwrap(),
    };

    // when twenty made-up providers' lists are asked for at once, as index.json asks,
    let asks = (0..20).map(|n| {
        let cache = Arc::clone(&cache);
        async move { cache.versions(&made_up(n), Freshness::Revalidate).await }
    });
    let answers = futures_util::future::join_all(asks).await;

    // then each is not found, the upstream's discovery was read once, and at most eight
    // calls (the host's share of list refreshes) were in flight at once;
    for answer in &answers {
        assert!(
            matches!(answer, Err(UpstreamError::NotFound(_))),
            "{:?}",
            answer.as_ref().err()
        );
    }
    assert_eq!(up.calls(".well-known"), 1, "discovery read more than once");
    let peak = up.peak.load(Ordering::SeqCst);
    assert!(
        peak <= 8,
        "{peak} upstream calls at once from one host's refreshes"
    );

    // asked again, they are answered from memory until the next refresh,
    let before = up.calls("/versions");
    for n in 0..20 {
        let again = cache.versions(&made_up(n), Freshness::Revalidate).await;
        assert!(matches!(again, Err(UpstreamError::NotFound(_))));
    }
    assert_eq!(up.calls("/versions"), before, "made-up names asked again");
    // and none of them is reported on the pages, while a provider that exists is.
    assert!(cache.known().is_empty(), "{:?}", cache.known());
    cache
        .versions(&widget(), Freshness::Revalidate)
        .await
        .unwrap();
    assert_eq!(cache.known(), [widget()]);
    assert_eq!(up.calls(".well-known"), 1, "discovery read again");
}
