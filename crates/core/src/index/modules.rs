//! Module archives: checked as `terraform init` would unpack them ([`crate::module_archive`])
//! and their configuration parsed ([`crate::module_docs`]), then recorded with their size,
//! revision, SHA-256, the `h1:` of the tree they unpack to (kept in the version's pin too),
//! docs and the publisher's sidecar metadata. A version whose archive fails
//! the check, or whose configuration does not parse, is never offered: its record is deleted
//! and the reason becomes its problem record. An archive holding secret-shaped files
//! ([`crate::module_archive::secrets`]) is served all the same, with a warning in the log and
//! in its record (which `tfreg status` shows).
//!
//! Each revision is checked once: a replayed event for a recorded revision reads only the
//! record. A refused revision is checked again on its next event, which is cheap, since
//! every check is bounded by [`ModuleLimits`].

use std::fs::File;

use super::spool::{self, Verdict};
use super::Indexer;
use crate::layout::{ArchiveFormat, Artifact};
use crate::module_archive::secrets::SecretShapedFiles;
use crate::module_archive::{ModuleArchiveError, ModuleLimits, ModuleSummary};
use crate::module_docs::{self, DocsError, ModuleDocs};
use crate::names::ModuleAddress;
use crate::store::{ModuleArchive, Record, RecordId, StoreError};
use crate::version::Version;

/// The largest module archive published (real ones are kilobytes to a few megabytes).
pub const MAX_MODULE_ARCHIVE_BYTES: u64 = 1024 * 1024 * 1024;

impl Indexer {
    /// Records a module archive, or forgets it when it is gone or refused. Returns the
    /// problem, if any.
    pub(super) async fn index_module(
        &self,
        key: &str,
        address: &ModuleAddress,
        version: &Version,
        format: ArchiveFormat,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::module_archive(address, version, key);
        let Some(meta) = self.artifacts.head(key).await? else {
            self.metadata.delete(&id).await?;
            return Ok(None);
        };
        if let Some(Record::ModuleArchive(known)) = self.metadata.get(&id).await? {
            // Records from before docs (or secret-shaped files, or the `h1:`) were read are
            // read again, once.
            let complete =
                known.docs.is_some() && known.secret_shaped.is_some() && known.h1.is_some();
            if known.revision == meta.revision && complete {
                return Ok(None); // checked and recorded already
            }
        }
        let opened = match spool::open(
            self.artifacts.as_ref(),
            key,
            MAX_MODULE_ARCHIVE_BYTES,
            too_large,
        )
        .await?
        {
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
        let checked = check(&opened.file, format, self.module_limits.clone()).await?;
        let Checked {
            docs,
            summary,
            sha256,
            read,
        } = match checked {
            Ok(checked) => checked,
            Err(reason) => {
                self.metadata.delete(&id).await?;
                return Ok(Some(reason));
            }
        };
        // A file that changed while it was read is being written: its next event (or the
        // next rescan) checks the final content.
        if read != opened.meta.size
            || self.artifacts.head(key).await?.as_ref() != Some(&opened.meta)
        {
            return Ok(Some("the file changed while it was being read".into()));
        }
        // Pinned bytes hash to what they hashed to when first served: another `h1:` now
        // (a change in how trees are hashed) is said, never served silently.
        let artifact = Artifact::ModuleArchive {
            address: address.clone(),
            version: version.clone(),
            format,
        };
        if let Some(pinned) = self.pinned_h1(&artifact, key, &sha256).await? {
            if pinned != summary.h1 {
                self.metadata.delete(&id).await?;
                return Ok(Some(format!(
                    "the archive's files hash to {} now, but to {pinned} when version {version} was published with these bytes: the registry will not serve a published version under another hash (reindexing with the tfreg release that published it serves it again)",
                    summary.h1
                )));
            }
        }
        // The version was published when it was first recorded.
        let published_at = match self.metadata.get(&id).await? {
            Some(Record::ModuleArchive(known)) if known.published_at > 0 => known.published_at,
            _ => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        };
        // The publisher's sidecar, read last so a sidecar written meanwhile is seen; a bad one
        // is its own problem record, and the version is served without it.
        let publisher = match super::module_meta::sidecar_key(key) {
            Some(sidecar) => self.publisher_metadata(&sidecar).await?.ok().flatten(),
            None => None,
        }
        .unwrap_or_default();
        let secret_shaped = SecretShapedFiles::from_names(&summary.secret_shaped);
        if !secret_shaped.is_empty() {
            // Served all the same (an uploaded archive is served as uploaded), but said.
            tracing::warn!(
                key,
                module = %address,
                %version,
                files = ?summary.secret_shaped,
                "the archive holds secret-shaped files that every reader of the namespace can download: publish a new version without them, and rotate those secrets"
            );
        }
        // Not served until its signature is judged (the caller judges it next).
        self.mark_module_pending(address, version, key).await?;
        self.metadata
            .put(Record::ModuleArchive(ModuleArchive {
                address: address.clone(),
                version: version.clone(),
                key: key.to_owned(),
                format,
                size: opened.meta.size,
                revision: opened.meta.revision,
                sha256,
                published_at,
                source: publisher.source,
                description: publisher.description,
                docs: Some(std::sync::Arc::new(docs)),
                secret_shaped: Some(secret_shaped),
                h1: Some(summary.h1),
                signed_by: None,
            }))
            .await?;
        Ok(None)
    }
}

fn too_large(size: u64) -> String {
    format!(
        "the archive is {size} bytes, more than the {MAX_MODULE_ARCHIVE_BYTES} a module archive may have"
    )
}

/// What checking an archive found, and its SHA-256 (hex) with how many bytes it read.
struct Checked {
    docs: ModuleDocs,
    summary: ModuleSummary,
    sha256: String,
    read: u64,
}

/// Hashes an archive, checks it and reads its docs ([`module_docs::read_checked`]: the
/// archive check, then its configuration parsed), all on one blocking thread: hashing is
/// CPU work that must not hold up the threads answering requests, and the second pass
/// over the file reads it from memory.
async fn check(file: &File, format: ArchiveFormat, limits: ModuleLimits) -> Verdict<Checked> {
    let file = file
        .try_clone()
        .map_err(|e| StoreError::with_source("cannot reopen a module archive", e))?;
    let work = move || {
        let hashed = sha256_of(&file).map_err(ModuleArchiveError::Io)?;
        module_docs::read_checked(&file, format, &limits).map(|checked| (checked, hashed))
    };
    let verdict = tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| StoreError::with_source("checking a module archive stopped", e))?;
    match verdict {
        Ok(((docs, summary), (sha256, read))) => Ok(Ok(Checked {
            docs,
            summary,
            sha256,
            read,
        })),
        Err(DocsError::Archive(ModuleArchiveError::Io(e))) => {
            Err(StoreError::with_source("cannot read a module archive", e))
        }
        Err(verdict) => Ok(Err(verdict.to_string())),
    }
}

/// The SHA-256 (hex) of an opened archive from its start, and how many bytes it read, by
/// position (the file's offset is left for the check). Blocking.
fn sha256_of(file: &File) -> std::io::Result<(String, u64)> {
    use sha2::Digest;
    use std::os::unix::fs::FileExt;
    let mut hasher = sha2::Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    while total <= MAX_MODULE_ARCHIVE_BYTES {
        let n = match file.read_at(&mut buffer, total) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buffer[..n]);
        total += n as u64;
    }
    Ok((hex::encode(hasher.finalize()), total))
}
