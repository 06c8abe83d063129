//! The storage ports. The core reads and writes only through these traits; the local data
//! directory, S3 and DynamoDB are adapters behind them.
//!
//! - [`artifacts`]: published files ([`ArtifactStore`]);
//! - [`metadata`]: what requests read ([`MetadataReader`]) and the indexer writes
//!   ([`MetadataStore`]);
//! - [`records`]: what the indexer records; [`keys`]: where each record lives;
//! - [`writer`]: the registry's own writes ([`ArtifactWriter`]: the upstream cache);
//! - [`error`]: the one storage failure;
//! - `contract` (feature `test-support`): the tests every adapter passes.

pub mod artifacts;
#[cfg(any(test, feature = "test-support"))]
pub mod contract;
pub mod error;
pub mod keys;
pub mod metadata;
pub mod records;
pub mod writer;

pub use artifacts::{ArtifactStore, Kept, ObjectBody, ObjectMeta};
pub use error::{ErrorChain, StoreError};
pub use keys::{partition, RecordId, RELEASE_PREFIX};
pub use metadata::{Document, Expected, MetadataReader, MetadataStore};
pub use records::AttachmentRecord;
pub use records::UploadRecord;
pub use records::{
    file_name, KeyRecord, ManifestRecord, ModuleArchive, ModuleSummary, NoticeRecord,
    PackageRecord, PinRecord, ProblemRecord, ProviderDocsRecord, Record, SignatureRecord, SignedBy,
    SumsRecord,
};
pub use records::{ModuleSignatureRecord, ModuleSignatureVerdict, PolicyRecord};
pub use writer::ArtifactWriter;

/// Where the client reached the registry; kept here too for the paths that name it so.
pub use crate::origin::Origin;
