//! The local shape: the registry's files in a data directory laid out exactly like the S3
//! bucket, watched for changes, plus the server's own state under `DATA/.tfreg/`.

#![forbid(unsafe_code)]

pub mod changes;
pub mod commits;
pub mod fs_store;
pub mod grants;
pub mod metadata;
pub mod server;
pub mod snapshot;
pub mod state;
pub mod tokens;
pub mod usage;
pub mod watcher;

pub use commits::Commits;
pub use fs_store::FsArtifactStore;
pub use grants::FileGrantStore;
pub use metadata::LocalMetadataStore;
pub use snapshot::Snapshot;
pub use state::StateDir;
pub use tokens::FileTokenStore;
pub use usage::LocalUsage;
pub use watcher::{DataDirWatcher, Persistence, WatchOptions};
