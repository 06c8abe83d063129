//! The cache's packages: each platform of a verified release, fetched once, checked against
//! the signed SHA256SUMS, stored under `mirror/`, and checked again whenever it is served
//! from the store; in pass-through mode, fetched in the background (here, or by the
//! fetcher function through a request object).

use std::sync::Arc;
use std::time::Instant;

use tokio::io::AsyncReadExt;

use super::{MirrorPackage, PackageFile, UpstreamCache, ASK_AGAIN, MAX_SLOTS};
use crate::names::Platform;
use crate::upstream::fetch::{self, unix_now};
use crate::upstream::record::{encode, PlatformPackage};
use crate::upstream::{Background, UpstreamError, UpstreamProvider};
use crate::version::Version;

impl UpstreamCache {
    /// The packages of a verified release, by platform.
    pub async fn packages(
        &self,
        up: &UpstreamProvider,
        version: &Version,
    ) -> Result<Vec<MirrorPackage>, UpstreamError> {
        let record = self.release(up, version).await?;
        Ok(record
            .packages()
            .map(|(platform, package)| MirrorPackage {
                key: up.package_key(version, &platform),
                platform,
                package: package.clone(),
            })
            .collect())
    }

    /// One package, verified and stored: what is stored already when it matches the signed
    /// SHA256SUMS, else fetched now.
    pub async fn package(
        &self,
        up: &UpstreamProvider,
        version: &Version,
        platform: &Platform,
    ) -> Result<PackageFile, UpstreamError> {
        let record = self.release(up, version).await?;
        let Some(package) = record.platforms.get(&platform.to_string()).cloned() else {
            return Err(UpstreamError::NotFound(format!(
                "{up} {version} has no package for {platform} at the upstream"
            )));
        };
        self.fetch_package(up, version, platform, &package, None)
            .await
    }

    /// `package` of `up` `version` for `platform`, fetched in the download `slot` given
    /// (a prefetch's) or one taken now, unless it is stored already or a fetch that this
    /// request waited for just failed (its failure is the answer: one fetch serves every
    /// request, whatever its outcome).
    async fn fetch_package(
        &self,
        up: &UpstreamProvider,
        version: &Version,
        platform: &Platform,
        package: &PlatformPackage,
        slot: Option<super::Slot>,
    ) -> Result<PackageFile, UpstreamError> {
        let arrived = Instant::now();
        let key = up.package_key(version, platform);
        let one = self.packages.get(&key);
        let mut one = one.lock().await;
        if let Some(stored) = self.stored(&key, package).await? {
            return Ok(stored);
        }
        if let Some((at, e)) = &one.failed {
            if *at > arrived {
                return Err(e.clone());
            }
        }
        let _permit = match slot {
            Some(slot) => (slot, None),
            None => self.permit(&self.downloads, up).await?,
        };
        let fetched = self.download(up, version, platform, package).await;
        if let Err(e) = &fetched {
            one.failed = Some((Instant::now(), e.clone()));
        }
        fetched
    }

    async fn download(
        &self,
        up: &UpstreamProvider,
        version: &Version,
        platform: &Platform,
        package: &PlatformPackage,
    ) -> Result<PackageFile, UpstreamError> {
        let key = up.package_key(version, platform);
        let spool = self.spool_file()?;
        let fetched = fetch::package(
            self.client.as_ref(),
            up,
            version,
            package,
            self.settings.max_package_bytes,
            spool.path(),
        )
        .await;
        if let Err(UpstreamError::Refused(reason)) = &fetched {
            self.refuse(up, version, reason).await;
        }
        fetched?;
        self.writer.put_file(&key, spool.path()).await?;
        tracing::info!(provider = %up, %version, %platform, "cached an upstream package");
        let file = spool.reopen().map_err(|e| {
            UpstreamError::Internal(format!("cannot reopen a spooled package: {e}"))
        })?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(PackageFile {
            file,
            size,
            spool: Some(spool),
        })
    }

    fn spool_file(&self) -> Result<tempfile::NamedTempFile, UpstreamError> {
        match &self.spool {
            Some(dir) => tempfile::NamedTempFile::new_in(dir),
            None => tempfile::NamedTempFile::new(),
        }
        .map_err(|e| UpstreamError::Internal(format!("cannot create a spool file: {e}")))
    }

    /// The stored package at `key`, checked against the signed SHA256SUMS before it is
    /// served; `None` when nothing is stored.
    async fn stored(
        &self,
        key: &str,
        package: &PlatformPackage,
    ) -> Result<Option<PackageFile>, UpstreamError> {
        let Some(body) = self.files.open(key).await? else {
            return Ok(None);
        };
        let (file, spool) = match body.into_file() {
            Ok((file, _)) => (file, None),
            Err(body) => {
                let spool = self.spool_file()?;
                let mut out = tokio::fs::File::create(spool.path())
                    .await
                    .map_err(|e| UpstreamError::Internal(e.to_string()))?;
                let mut limited = body.reader.take(self.settings.max_package_bytes);
                tokio::io::copy(&mut limited, &mut out)
                    .await
                    .map_err(|e| UpstreamError::Internal(format!("cannot read {key}: {e}")))?;
                let file = spool
                    .reopen()
                    .map_err(|e| UpstreamError::Internal(e.to_string()))?;
                (file, Some(spool))
            }
        };
        let check = file
            .try_clone()
            .map_err(|e| UpstreamError::Internal(e.to_string()))?;
        let sha256 = tokio::task::spawn_blocking(move || crate::hash::sha256_hex(&check))
            .await
            .map_err(|e| UpstreamError::Internal(e.to_string()))?
            .map_err(|e| UpstreamError::Internal(format!("cannot read {key}: {e}")))?;
        if sha256 != package.sha256 {
            return Err(UpstreamError::Refused(format!(
                "{key} holds other bytes than the upstream's signed SHA256SUMS lists for it \
                 (sha256 {sha256}, expected {}): remove it and it is fetched again",
                package.sha256
            )));
        }
        use std::io::Seek;
        let mut file = file;
        file.rewind()
            .map_err(|e| UpstreamError::Internal(e.to_string()))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(Some(PackageFile { file, size, spool }))
    }

    /// Has a package fetched into the cache in the background, once per ten minutes at
    /// most: here, if a fetch is free now (else a later request asks again), or by the
    /// fetcher function. For packages handed out passing through, and for the platforms
    /// fetched eagerly so lock files get every platform's `h1:`.
    pub async fn prefetch(
        self: &Arc<Self>,
        up: UpstreamProvider,
        version: Version,
        platform: Platform,
    ) {
        let key = up.package_key(&version, &platform);
        let asked_lately = |key: &String| {
            let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
            if asked.len() >= MAX_SLOTS {
                asked.retain(|_, at| at.elapsed() < ASK_AGAIN);
            }
            asked.get(key).is_some_and(|at| at.elapsed() < ASK_AGAIN)
        };
        let mark_asked = |key: String| {
            let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
            asked.insert(key, Instant::now());
        };
        if asked_lately(&key) {
            return;
        }
        if self.settings.background == Background::Requested {
            mark_asked(key);
            let request = serde_json::json!({
                "provider": up.to_string(),
                "version": version.to_string(),
                "platform": platform.to_string(),
                "at": unix_now(),
            });
            self.write(&up.fetch_request_key(&version, &platform), encode(&request))
                .await;
            return;
        }
        // Only in a slot free now, within the host's share: prefetches never queue, and
        // never take another host's slots. Not marked asked otherwise, so a later request
        // asks again.
        let Some(slot) = self.downloads.try_acquire(&up.host) else {
            return;
        };
        mark_asked(key);
        let cache = Arc::clone(self);
        tokio::spawn(async move {
            let fetched = match cache.release(&up, &version).await {
                Ok(record) => match record.platforms.get(&platform.to_string()) {
                    Some(package) => {
                        let package = package.clone();
                        cache
                            .fetch_package(&up, &version, &platform, &package, Some(slot))
                            .await
                            .map(|_| ())
                    }
                    None => Ok(()),
                },
                Err(e) => Err(e),
            };
            if let Err(e) = fetched {
                tracing::warn!(provider = %up, %version, %platform, error = %e, "could not cache an upstream package");
            }
        });
    }
}

impl UpstreamCache {
    /// The fetcher's work for one stored key: a fetch request (`upstream/.../fetch/...`)
    /// fetches, verifies and stores its package, unless it is stored already. Other keys are
    /// not its business (`Ok(false)`).
    pub async fn fetch_requested(&self, key: &str) -> Result<bool, UpstreamError> {
        let Some((up, version, platform)) = UpstreamProvider::from_fetch_request_key(key) else {
            return Ok(false);
        };
        if !self.settings.rules.allows(&up.host, &up.provider) {
            tracing::warn!(
                key,
                "a fetch request for a provider the allow-list does not take; ignored"
            );
            return Ok(false);
        }
        if self
            .files
            .head(&up.package_key(&version, &platform))
            .await?
            .is_some()
        {
            return Ok(true);
        }
        self.package(&up, &version, &platform).await.map(|_| true)
    }
}
