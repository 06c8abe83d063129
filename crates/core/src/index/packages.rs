//! Provider packages (zips), under `providers/` and `mirror/`.
//!
//! Cheap checks come before expensive work. Every package gets its SHA-256 (one pass over
//! the file, the `zh:` hash SHA256SUMS lists). A registry package is unpacked for its `h1:`
//! only once a signed SHA256SUMS lists that very SHA-256, so an unsigned upload, however
//! crafted, costs one pass of SHA-256. When the signed listing names a package before it is
//! indexed (a release copied in whole), both hashes come from one pass, and bytes that
//! differ from the listing's keep only their SHA-256; an upload under a listed name thus
//! costs at most one unpacking within the limits. Mirror uploads have no signatures: they
//! are unpacked at once, within the same [`crate::hash::PackageLimits`].
//!
//! Unpacking also checks what Terraform checks after it unpacks a package, from a registry
//! or a mirror alike: that it holds the provider's executable
//! ([`crate::hash::is_provider_executable`]). A package without one is refused.

use std::collections::BTreeMap;
use std::fs::File;

use super::spool::{self, Opened, Verdict};
use super::Indexer;
use crate::hash::{self, HashError, PackageHashes};
use crate::names::{Hostname, Platform, ProviderAddress};
use crate::providers::signed_entries;
use crate::store::{PackageRecord, Record, RecordId, StoreError};
use crate::version::Version;

impl Indexer {
    /// Records a package's hashes, or forgets it when it is gone. Returns the problem.
    pub(super) async fn index_package(
        &self,
        key: &str,
        mirror_hostname: Option<&Hostname>,
        provider: &ProviderAddress,
        version: &Version,
        platform: &Platform,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::package(mirror_hostname, provider, version, key);
        if let Some(host) = mirror_hostname.filter(|h| Some(*h) == self.hostname.as_ref()) {
            self.metadata.delete(&id).await?;
            return Ok(Some(format!(
                "uploads under mirror/{host}/ are ignored: {host} is this registry's own hostname, whose providers the mirror serves from signed releases under providers/ only"
            )));
        }
        let Some(meta) = self.artifacts.head(key).await? else {
            self.metadata.delete(&id).await?;
            return Ok(None);
        };
        if let Some(Record::Package(existing)) = self.metadata.get(&id).await? {
            if existing.revision == meta.revision {
                // Already hashed: replays cost nothing, unless it now needs unpacking.
                if existing.hashes.h1.is_none() {
                    return self.unpack_if_signed(existing).await;
                }
                return Ok(None);
            }
        }
        let opened = match self.open_package(key).await? {
            Ok(Some(opened)) => opened,
            Ok(None) => {
                self.metadata.delete(&id).await?;
                return Ok(None);
            }
            Err(reason) => {
                self.metadata.delete(&id).await?;
                return Ok(Some(reason));
            }
        };
        let (sha256, h1) = match self
            .hash_once(key, mirror_hostname, &opened, provider, version)
            .await?
        {
            Ok(hashed) => hashed,
            Err(reason) => {
                self.metadata.delete(&id).await?;
                return Ok(Some(reason));
            }
        };
        // A file that changed while it was hashed is being written: its next event (or the
        // next rescan) hashes the final content.
        if self.artifacts.head(key).await?.as_ref() != Some(&opened.meta) {
            return Ok(Some("the file changed while it was being read".into()));
        }
        let record = PackageRecord {
            mirror_hostname: mirror_hostname.cloned(),
            provider: provider.clone(),
            version: version.clone(),
            platform: platform.clone(),
            key: key.to_owned(),
            revision: opened.meta.revision.clone(),
            size: opened.meta.size,
            hashes: PackageHashes { sha256, h1 },
        };
        if record.hashes.h1.is_some() {
            self.record_unpacked(record).await?;
            return Ok(None);
        }
        self.metadata.put(Record::Package(record.clone())).await?;
        // A signature verified meanwhile may have missed this record: look again, now that
        // it is written (the verifier does the same the other way round).
        if record.mirror_hostname.is_none() {
            return self.unpack_if_signed(record).await;
        }
        Ok(None)
    }

    /// A package's SHA-256, and its `h1:` when it is to be unpacked (every mirror upload; a
    /// registry package once a signed SHA256SUMS lists that very SHA-256), in one pass over
    /// the file when the listing is known before: the `h1:` then comes from the bytes whose
    /// SHA-256 is recorded. `Err` is why the package is refused.
    async fn hash_once(
        &self,
        key: &str,
        mirror_hostname: Option<&Hostname>,
        opened: &Opened,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Result<(String, Option<String>), String>, StoreError> {
        let listed = match mirror_hostname {
            Some(_) => None,
            None => {
                let name = crate::store::file_name(key);
                self.signed_sha256s(provider, version).await?.remove(name)
            }
        };
        let mut unpacked = None;
        if mirror_hostname.is_some() || listed.is_some() {
            match self.hash_package(opened, provider).await? {
                // Not the bytes a signature vouches for: its `zh:` is all it gets.
                Ok(hashes) if listed.as_ref().is_some_and(|l| *l != hashes.sha256) => {
                    return Ok(Ok((hashes.sha256, None)))
                }
                Ok(hashes) => return Ok(Ok((hashes.sha256, hashes.h1))),
                Err(e) => unpacked = Some(e),
            }
        }
        // SHA-256 alone: what an unsigned package costs, and, when unpacking failed, whether
        // the bytes that failed were those to be unpacked.
        let limits = self.limits.clone();
        let sha256 = match blocking(opened, move |f| hash::sha256_of_package(f, &limits)).await? {
            Ok(sha256) => sha256,
            Err(e) => return Ok(Err(e.to_string())),
        };
        Ok(match unpacked {
            Some(e) if mirror_hostname.is_some() || listed == Some(sha256.clone()) => {
                Err(unpack_problem(e))
            }
            _ => Ok((sha256, None)),
        })
    }

    /// Unpacks every package of a release that a signed SHA256SUMS now lists, and records
    /// its `h1:`. Called once a signature verifies.
    pub(super) async fn unpack_signed_packages(
        &self,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<(), StoreError> {
        let records = self.release_records(provider, version).await?;
        let signed = signed_entries(&records, version);
        for record in records {
            let Record::Package(package) = record else {
                continue;
            };
            let listed = signed.get(package.filename()) == Some(&package.hashes.sha256);
            if &package.version == version && package.hashes.h1.is_none() && listed {
                let key = package.key.clone();
                // A package refused here is not the event's own key: say so as for any key.
                if let Some(reason) = self.unpack(package).await? {
                    tracing::warn!(key, reason, "refused: this file is never served");
                    self.set_problem(&key, Some(reason)).await?;
                }
            }
        }
        Ok(())
    }

    /// Unpacks a recorded package if a signed SHA256SUMS lists it; returns the problem.
    async fn unpack_if_signed(&self, package: PackageRecord) -> Result<Option<String>, StoreError> {
        let signed = self
            .signed_sha256s(&package.provider, &package.version)
            .await?;
        if signed.get(package.filename()) != Some(&package.hashes.sha256) {
            return Ok(None); // not (yet) vouched for: its `zh:` is all it gets
        }
        self.unpack(package).await
    }

    /// Computes and records a package's `h1:`, for the revision that was recorded; a
    /// package that cannot be unpacked is forgotten, with the reason returned.
    async fn unpack(&self, package: PackageRecord) -> Result<Option<String>, StoreError> {
        let id = RecordId::package(None, &package.provider, &package.version, &package.key);
        let opened = match self.open_package(&package.key).await? {
            Ok(Some(opened)) if opened.meta.revision == package.revision => opened,
            // Gone or replaced: the newer revision's own event settles it.
            Ok(_) => return Ok(None),
            Err(reason) => {
                self.metadata.delete(&id).await?;
                return Ok(Some(reason));
            }
        };
        match self.hash_package(&opened, &package.provider).await? {
            // Unpacked from the very bytes that were vouched for: same SHA-256, and the
            // file unchanged meanwhile (a rewrite in place changes its revision).
            Ok(hashes) if hashes.sha256 != package.hashes.sha256 => Ok(None),
            Ok(_) if self.artifacts.head(&package.key).await? != Some(opened.meta) => Ok(None),
            Ok(hashes) => {
                let mut package = package;
                package.hashes.h1 = hashes.h1;
                self.record_unpacked(package).await?;
                Ok(None)
            }
            Err(e) => {
                self.metadata.delete(&id).await?;
                Ok(Some(unpack_problem(e)))
            }
        }
    }

    /// Records a package that was unpacked and passed every check, with its `h1:`: from
    /// here on it is served (a registry package as soon as its release's signature holds,
    /// as it does whenever this is reached for one). The one place where that happens.
    async fn record_unpacked(&self, package: PackageRecord) -> Result<(), StoreError> {
        debug_assert!(package.hashes.h1.is_some());
        self.metadata.put(Record::Package(package)).await
    }

    /// Unpacks a package for its `h1:` (and `zh:` again), within the limits, checking that
    /// it holds the provider's executable.
    async fn hash_package(
        &self,
        opened: &Opened,
        provider: &ProviderAddress,
    ) -> Result<Result<PackageHashes, HashError>, StoreError> {
        let limits = self.limits.clone();
        let type_ = provider.type_.as_str().to_owned();
        blocking(opened, move |f| hash::hash_package(f, &limits, &type_)).await
    }

    /// File name to SHA-256 of every package a verified signature vouches for.
    async fn signed_sha256s(
        &self,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<BTreeMap<String, String>, StoreError> {
        let records = self.release_records(provider, version).await?;
        Ok(signed_entries(&records, version))
    }

    /// Opens a package for hashing: in place when the store keeps local files, else as a
    /// spooled copy. `Ok(Err(_))` is a verdict (too large); `Ok(Ok(None))`: no such file.
    async fn open_package(&self, key: &str) -> Verdict<Option<Opened>> {
        let max = self.limits.max_package_bytes;
        let too_large = |size: u64| HashError::TooLarge { size, max }.to_string();
        spool::open(self.artifacts.as_ref(), key, max, too_large).await
    }
}

/// Why a package that could not be unpacked (or lacks its executable) is refused.
fn unpack_problem(error: HashError) -> String {
    match error {
        HashError::NoExecutable { .. } => error.to_string(),
        other => format!("the package cannot be unpacked: {other}"),
    }
}

/// Runs a hashing function on a blocking thread over the opened file; a hashing error that
/// is the store's (I/O) is an error, any other is a verdict on the file.
async fn blocking<T: Send + 'static>(
    opened: &Opened,
    work: impl FnOnce(&File) -> Result<T, HashError> + Send + 'static,
) -> Result<Result<T, HashError>, StoreError> {
    let file = opened
        .file
        .try_clone()
        .map_err(|e| StoreError::with_source("cannot reopen a package", e))?;
    let result = tokio::task::spawn_blocking(move || work(&file))
        .await
        .map_err(|e| StoreError::with_source("hashing stopped", e))?;
    match result {
        Ok(value) => Ok(Ok(value)),
        Err(e) if e.is_io() => Err(StoreError::with_source("cannot read a package", e)),
        Err(e) => Ok(Err(e)),
    }
}
