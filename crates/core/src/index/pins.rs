//! Immutable versions. The first bytes served for a version's file are *pinned*: a
//! [`PinRecord`] remembers their key, SHA-256 and revision, and the artifact store keeps
//! those bytes ([`ArtifactStore::keep`]). From then on:
//!
//! - the indexer sees a pinned key only as its pinned bytes (`PinnedArtifacts`), so the
//!   records, and every answer and download URL built from them, never change;
//! - different bytes uploaded under the key are refused with the reason, while the version
//!   keeps being served from the kept bytes; the same bytes again change nothing;
//! - another key for the same version (another spelling, another archive format) is refused;
//! - deleting the file yanks the version (it is no longer offered); uploading the same bytes
//!   again un-yanks it.
//!
//! A version's file is served, and so pinned, when: a module archive is recorded; a mirror
//! package is recorded; a provider release's SHA256SUMS, signature and each matching
//! package once the release is served (signed by a current key of its namespace).

use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;

use super::Indexer;
use crate::hash::sha256_of_reader;
use crate::layout::pin_slot as slot;
use crate::layout::{classify, Artifact, Classified, ReleaseFile};
use crate::names::ProviderAddress;
use crate::providers::{evaluate, CurrentKeys};
use crate::store::{
    partition, ArtifactStore, Kept, MetadataStore, ObjectBody, ObjectMeta, PinRecord, Record,
    RecordId, StoreError,
};
use crate::version::Version;

/// The version a pinned file belongs to, in words, for reasons shown to publishers.
fn describe(artifact: &Artifact) -> String {
    match artifact {
        Artifact::ModuleArchive {
            address, version, ..
        } => format!("version {version} of module {address}"),
        Artifact::ModuleMetadata { address, version } => {
            format!("the metadata of version {version} of module {address}")
        }
        Artifact::ProviderPackage {
            provider,
            version,
            platform,
        } => format!("version {version} of provider {provider} for {platform}"),
        Artifact::ProviderReleaseFile {
            provider,
            version,
            file,
        } => format!(
            "the {} of version {version} of provider {provider}",
            file.suffix().trim_start_matches('_')
        ),
        Artifact::MirrorPackage {
            hostname,
            provider,
            version,
            platform,
        } => format!("version {version} of mirrored provider {hostname}/{provider} for {platform}"),
        Artifact::SigningKey { namespace } => format!("a key of namespace {namespace}"),
        Artifact::ModuleSignature {
            address, version, ..
        } => format!("the signature of version {version} of module {address}"),
        Artifact::NamespacePolicy { namespace } => format!("the policy of namespace {namespace}"),
        Artifact::ProviderDocs { provider, version } => {
            format!("the documentation of version {version} of provider {provider}")
        }
        Artifact::Notice {
            target,
            version,
            kind,
        } => format!("the {} of version {version} of {target}", kind.noun()),
        Artifact::Attachment {
            target, version, ..
        } => format!("an attachment of version {version} of {target}"),
    }
}

/// The record a key's indexing writes, for removing it when the key may not be served.
fn record_id(artifact: &Artifact, key: &str) -> Option<RecordId> {
    Some(match artifact {
        Artifact::ModuleArchive {
            address, version, ..
        } => RecordId::module_archive(address, version, key),
        Artifact::ProviderPackage {
            provider, version, ..
        } => RecordId::package(None, provider, version, key),
        Artifact::MirrorPackage {
            hostname,
            provider,
            version,
            ..
        } => RecordId::package(Some(hostname), provider, version, key),
        Artifact::ProviderReleaseFile {
            provider,
            version,
            file: ReleaseFile::Sums,
        } => RecordId::sums(provider, version, key),
        Artifact::ProviderReleaseFile {
            provider,
            version,
            file: ReleaseFile::Signature,
        } => RecordId::signature(provider, version, key),
        _ => return None,
    })
}

async fn pin_of(
    metadata: &dyn MetadataStore,
    artifact: &Artifact,
) -> Result<Option<PinRecord>, StoreError> {
    let Some(slot) = slot(artifact) else {
        return Ok(None);
    };
    Ok(match metadata.get(&RecordId::pin(&slot)).await? {
        Some(Record::Pin(pin)) => Some(pin),
        _ => None,
    })
}

/// What the registry sees at a key.
enum Seen {
    /// The object as it is: no pin applies (its state not looked up yet).
    Live,
    /// The object as it is, at its pinned revision (looked up already).
    AtPin(ObjectMeta),
    /// The pinned bytes, whatever is at the key now.
    Pinned(PinRecord),
    /// Nothing: the file is gone (yanked), or the key is not the one its version was
    /// published under.
    Hidden,
}

/// The artifact store as the indexer sees it: every pinned key reads as its pinned bytes.
pub(crate) struct PinnedArtifacts {
    metadata: Arc<dyn MetadataStore>,
    inner: Arc<dyn ArtifactStore>,
}

impl PinnedArtifacts {
    pub(crate) fn new(metadata: Arc<dyn MetadataStore>, inner: Arc<dyn ArtifactStore>) -> Self {
        Self { metadata, inner }
    }

    async fn seen(&self, key: &str) -> Result<Seen, StoreError> {
        let Classified::Artifact(artifact) = classify(key) else {
            return Ok(Seen::Live);
        };
        let Some(pin) = pin_of(self.metadata.as_ref(), &artifact).await? else {
            return Ok(Seen::Live);
        };
        if pin.key != key {
            return Ok(Seen::Hidden);
        }
        Ok(match self.inner.head(key).await? {
            None => Seen::Hidden,
            Some(meta) if meta.revision == pin.revision => Seen::AtPin(meta),
            Some(_) => Seen::Pinned(pin),
        })
    }
}

#[async_trait]
impl ArtifactStore for PinnedArtifacts {
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        match self.seen(key).await? {
            Seen::Live => self.inner.head(key).await,
            Seen::AtPin(meta) => Ok(Some(meta)),
            Seen::Hidden => Ok(None),
            Seen::Pinned(pin) => Ok(self
                .inner
                .open_revision(key, &pin.revision)
                .await?
                .map(|body| body.meta)),
        }
    }

    async fn list(&self) -> Result<Vec<String>, StoreError> {
        self.inner.list().await
    }

    async fn open(&self, key: &str) -> Result<Option<ObjectBody>, StoreError> {
        match self.seen(key).await? {
            Seen::Live | Seen::AtPin(_) => self.inner.open(key).await,
            Seen::Hidden => Ok(None),
            Seen::Pinned(pin) => self.inner.open_revision(key, &pin.revision).await,
        }
    }

    async fn refusal(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.inner.refusal(key).await
    }

    async fn open_revision(
        &self,
        key: &str,
        revision: &str,
    ) -> Result<Option<ObjectBody>, StoreError> {
        self.inner.open_revision(key, revision).await
    }

    async fn keep(&self, key: &str, revision: &str, sha256: &str) -> Result<Kept, StoreError> {
        self.inner.keep(key, revision, sha256).await
    }
}

/// Whether a provider file's release is served now, after indexing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Served {
    Yes,
    No,
}

impl Indexer {
    /// Why the object now at `key` is refused because its version was published with other
    /// bytes, or under another key; `None` when it may be indexed as usual.
    pub(super) async fn pin_refusal(
        &self,
        key: &str,
        artifact: &Artifact,
    ) -> Result<Option<String>, StoreError> {
        let Some(pin) = pin_of(self.metadata.as_ref(), artifact).await? else {
            return Ok(None);
        };
        let Some(meta) = self.store.head(key).await? else {
            return Ok(None); // gone: the version is yanked, nothing is refused
        };
        let what = describe(artifact);
        if pin.key != key {
            return Ok(Some(format!(
                "{what} was published as {} (sha256 {}): a published version never changes; publish a new version",
                pin.key, pin.sha256
            )));
        }
        if meta.revision == pin.revision {
            return Ok(None);
        }
        let Some(body) = self.store.open(key).await? else {
            return Ok(None);
        };
        let (sha256, _) = sha256_of_reader(body.reader, None)
            .await
            .map_err(|e| StoreError::with_source(format!("cannot read {key}"), e))?;
        if sha256 == pin.sha256 {
            return Ok(None); // the same bytes again: nothing changes
        }
        let served = match pin.kept {
            true => "the registry keeps serving the published bytes",
            false => "the published bytes are gone (the bucket keeps no versions), so the version is no longer offered",
        };
        Ok(Some(format!(
            "{what} was published with sha256 {}; this file has sha256 {sha256}: a published version never changes, so publish a new version ({served}; uploading the original bytes again ends this refusal)",
            pin.sha256
        )))
    }

    /// Pins what indexing `key` made served. Returns a refusal when another key of the same
    /// version was pinned first (two uploads racing), and whether a provider file's release
    /// is served.
    pub(super) async fn pin_served(
        &self,
        key: &str,
        artifact: &Artifact,
    ) -> Result<(Option<String>, Served), StoreError> {
        match artifact {
            Artifact::ModuleArchive { .. } | Artifact::MirrorPackage { .. } => {
                let Some(id) = record_id(artifact, key) else {
                    return Ok((None, Served::No));
                };
                let (revision, sha256, size, h1) = match self.metadata.get(&id).await? {
                    Some(Record::ModuleArchive(a)) => (a.revision, a.sha256, a.size, a.h1),
                    Some(Record::Package(p)) if p.hashes.h1.is_some() => {
                        (p.revision, p.hashes.sha256, p.size, None)
                    }
                    _ => return Ok((None, Served::No)),
                };
                let refused = self
                    .pin(artifact, key, &revision, &sha256, size, &id)
                    .await?;
                if let (None, Some(h1)) = (&refused, h1) {
                    self.pin_h1(artifact, key, &sha256, h1).await?;
                }
                let served = if refused.is_some() {
                    Served::No
                } else {
                    Served::Yes
                };
                Ok((refused, served))
            }
            Artifact::ProviderPackage {
                provider, version, ..
            }
            | Artifact::ProviderReleaseFile {
                provider, version, ..
            } => {
                let served = self.pin_release(provider, version).await?;
                // This key lost a race for its version's slot: its record is gone now.
                let refused = match record_id(artifact, key) {
                    Some(id) if self.metadata.get(&id).await?.is_none() => {
                        self.pin_refusal(key, artifact).await?
                    }
                    _ => None,
                };
                Ok((refused, served))
            }
            Artifact::SigningKey { namespace } => {
                let listed = self
                    .metadata
                    .query(&partition::namespace(namespace))
                    .await?;
                for record in listed {
                    if let Record::NamespaceProvider(provider) = record {
                        self.pin_releases(&provider).await?;
                    }
                }
                Ok((None, Served::No))
            }
            // Not a version's bytes: the publisher's metadata and docs may change.
            Artifact::ModuleMetadata { .. }
            | Artifact::ProviderDocs { .. }
            | Artifact::Notice { .. }
            | Artifact::Attachment { .. } => Ok((None, Served::No)),
            // A module signature is pinned where it is judged (`module_signatures`), once
            // its version is served with it; a policy is not a version's bytes.
            Artifact::ModuleSignature { .. } | Artifact::NamespacePolicy { .. } => {
                Ok((None, Served::No))
            }
        }
    }

    /// Pins every served release of a provider (after its namespace's keys changed).
    async fn pin_releases(&self, provider: &ProviderAddress) -> Result<(), StoreError> {
        let records = self.metadata.query(&partition::provider(provider)).await?;
        let versions: std::collections::BTreeSet<Version> = records
            .iter()
            .filter_map(|r| match r {
                Record::Sums(s) => Some(s.version.clone()),
                _ => None,
            })
            .collect();
        for version in versions {
            self.pin_release(provider, &version).await?;
        }
        Ok(())
    }

    /// Pins the SHA256SUMS, signature and matching packages of a release, if it is served.
    async fn pin_release(
        &self,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Served, StoreError> {
        let records = self.release_records(provider, version).await?;
        let keys = self
            .metadata
            .query(&partition::keys(&provider.namespace))
            .await?;
        let keys = CurrentKeys::from_records(&keys);
        let Some(release) = evaluate(&records, &keys, SystemTime::now())
            .into_iter()
            .filter_map(|(_, served)| served)
            .find(|served| &served.version == version)
        else {
            return Ok(Served::No);
        };
        if !self.pins_written {
            return Ok(Served::Yes);
        }
        for (key, revision, file) in [
            (&release.sums.key, &release.sums.revision, ReleaseFile::Sums),
            (
                &release.signature_key,
                &release.signature_revision,
                ReleaseFile::Signature,
            ),
        ] {
            let artifact = Artifact::ProviderReleaseFile {
                provider: provider.clone(),
                version: version.clone(),
                file,
            };
            let Some(id) = record_id(&artifact, key) else {
                continue;
            };
            if pin_of(self.metadata.as_ref(), &artifact).await?.is_some() {
                continue;
            }
            let Some(body) = self.artifacts.open_revision(key, revision).await? else {
                continue; // replaced meanwhile: its own event settles it
            };
            let (sha256, size) = sha256_of_reader(body.reader, None)
                .await
                .map_err(|e| StoreError::with_source(format!("cannot read {key}"), e))?;
            self.pin(&artifact, key, revision, &sha256, size, &id)
                .await?;
        }
        for (platform, package) in &release.packages {
            let artifact = Artifact::ProviderPackage {
                provider: provider.clone(),
                version: version.clone(),
                platform: platform.clone(),
            };
            let id = RecordId::package(None, provider, version, &package.key);
            self.pin(
                &artifact,
                &package.key,
                &package.revision,
                &package.hashes.sha256,
                package.size,
                &id,
            )
            .await?;
        }
        Ok(Served::Yes)
    }

    /// Pins one file at `revision`, unless its version is pinned already. When another key
    /// of the version was pinned first, this key's record (`id`) is removed and the refusal
    /// returned.
    pub(super) async fn pin(
        &self,
        artifact: &Artifact,
        key: &str,
        revision: &str,
        sha256: &str,
        size: u64,
        id: &RecordId,
    ) -> Result<Option<String>, StoreError> {
        let Some(slot) = slot(artifact) else {
            return Ok(None);
        };
        if let Some(pin) = pin_of(self.metadata.as_ref(), artifact).await? {
            if pin.key == key {
                return Ok(None);
            }
            self.metadata.delete(id).await?;
            return Ok(Some(format!(
                "{} was published as {} (sha256 {}): a published version never changes; publish a new version",
                describe(artifact),
                pin.key,
                pin.sha256
            )));
        }
        if !self.pins_written {
            return Ok(None);
        }
        let kept = match self.artifacts.keep(key, revision, sha256).await? {
            Kept::Yes => true,
            Kept::No(reason) => {
                tracing::warn!(key, reason, "the published bytes cannot be kept");
                false
            }
            // Changed since it was indexed: its next event pins what is there then.
            Kept::Changed => return Ok(None),
        };
        let pin = PinRecord {
            slot,
            key: key.to_owned(),
            sha256: sha256.to_owned(),
            size,
            revision: revision.to_owned(),
            kept,
            published_at: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            h1: None,
        };
        if self.metadata.put_new(Record::Pin(pin)).await? {
            tracing::debug!(
                key,
                sha256,
                "pinned: {} is served with these bytes from now on",
                describe(artifact)
            );
            return Ok(None);
        }
        // Another key of the version was pinned meanwhile: settle it as above.
        Box::pin(self.pin(artifact, key, revision, sha256, size, id)).await
    }

    /// Keeps a module archive's `h1:` in its version's pin (`key` with SHA-256 `sha256`),
    /// once: a pin that has one keeps it.
    async fn pin_h1(
        &self,
        artifact: &Artifact,
        key: &str,
        sha256: &str,
        h1: String,
    ) -> Result<(), StoreError> {
        if !self.pins_written {
            return Ok(());
        }
        match pin_of(self.metadata.as_ref(), artifact).await? {
            Some(pin) if pin.key == key && pin.sha256 == sha256 && pin.h1.is_none() => {
                let h1 = Some(h1);
                self.metadata
                    .put(Record::Pin(PinRecord { h1, ..pin }))
                    .await
            }
            _ => Ok(()),
        }
    }

    /// The `h1:` pinned for a module archive's bytes (`key` with SHA-256 `sha256`), when
    /// its pin keeps one: what a check of those bytes must find again.
    pub(super) async fn pinned_h1(
        &self,
        artifact: &Artifact,
        key: &str,
        sha256: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(match pin_of(self.metadata.as_ref(), artifact).await? {
            Some(pin) if pin.key == key && pin.sha256 == sha256 => pin.h1,
            _ => None,
        })
    }
}
