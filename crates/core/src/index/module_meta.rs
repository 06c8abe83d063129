//! The publisher's metadata sidecar of a module version (`<version>.json` beside the archive,
//! see [`crate::module_docs::publisher`]): checked, and copied into the archive's record. A bad
//! sidecar is a problem record for the sidecar; the version stays served without it.

use super::{Indexer, Small};
use crate::layout::{ArchiveFormat, MODULE_METADATA_SUFFIX};
use crate::module_docs::publisher::{PublisherMetadata, MAX_SIDECAR_BYTES};
use crate::names::ModuleAddress;
use crate::store::{Record, RecordId, StoreError};
use crate::version::Version;

/// The sidecar key of an archive key (`.../1.0.0.tar.gz` -> `.../1.0.0.json`).
pub fn sidecar_key(archive_key: &str) -> Option<String> {
    let (stem, _) = ArchiveFormat::split(archive_key)?;
    Some(format!("{stem}{MODULE_METADATA_SUFFIX}"))
}

impl Indexer {
    /// The sidecar's metadata: `Ok(None)` when there is none, `Err` with the reason when it is
    /// refused.
    pub(super) async fn publisher_metadata(
        &self,
        key: &str,
    ) -> Result<Result<Option<PublisherMetadata>, String>, StoreError> {
        Ok(
            match self.read_small(key, MAX_SIDECAR_BYTES as u64).await? {
                Small::Missing => Ok(None),
                Small::Unreadable(reason, _) => Err(reason),
                Small::Bytes(bytes, _) => PublisherMetadata::parse(&bytes).map(Some),
            },
        )
    }

    /// Indexes a sidecar: checks it and updates the records of the archives beside it (of the
    /// same spelling). Returns the problem, if any.
    pub(super) async fn index_module_metadata(
        &self,
        key: &str,
        address: &ModuleAddress,
        version: &Version,
    ) -> Result<Option<String>, StoreError> {
        let verdict = self.publisher_metadata(key).await?;
        let metadata = verdict.clone().ok().flatten().unwrap_or_default();
        let stem = key.strip_suffix(MODULE_METADATA_SUFFIX).unwrap_or(key);
        for format in ArchiveFormat::ALL {
            let archive_key = format!("{stem}{}", format.suffix());
            let id = RecordId::module_archive(address, version, &archive_key);
            if let Some(Record::ModuleArchive(mut record)) = self.metadata.get(&id).await? {
                if record.source != metadata.source || record.description != metadata.description {
                    record.source = metadata.source.clone();
                    record.description = metadata.description.clone();
                    self.metadata.put(Record::ModuleArchive(record)).await?;
                }
            }
        }
        Ok(verdict.err())
    }
}
