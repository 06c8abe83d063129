//! The data directory as an [`ArtifactStore`]: object keys are paths relative to its root.
//!
//! Publishers may put anything in the data directory, so nothing in it is trusted. A key is
//! resolved one folder at a time from the root without ever following a symbolic link
//! (`openat` with `O_NOFOLLOW`), so no link can lead a read out of the data directory or
//! into its state folder; only regular files are read (a FIFO would block the reader
//! forever), and a hard link to one of the state folder's files is refused. Anything that
//! is there but never read gets a reason, which the indexer records for `tfreg status`.

mod kept;
mod lookup;
mod scan;
#[cfg(test)]
mod tests;
mod writer;

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use rustix::fs::Stat;
use rustix::io::Errno;
use tfreg_core::store::{Kept, ObjectBody, ObjectMeta};
use tfreg_core::{ArtifactStore, StoreError};

use crate::commits::Commits;

/// The folder, under the data directory, that holds the server's own state. Never published.
pub const STATE_DIR_NAME: &str = ".tfreg";

/// The folder, in the state folder, that keeps the bytes of every published version, so
/// different bytes copied over a published file never change what is served.
pub const KEPT_DIR_NAME: &str = "kept";

const LINK: &str =
    "a symbolic link: links in the data directory are never followed; copy the file in instead";
const SPECIAL: &str =
    "not a regular file (a FIFO, socket or device): only regular files are published";
const STATE_LINK: &str =
    "a hard link to a file of the server's own state folder (.tfreg): never served";

/// The data directory, read without following links (see the module docs).
#[derive(Debug, Clone)]
pub struct FsArtifactStore {
    root: PathBuf,
    /// Where kept copies wait to be made durable a batch at a time; without it, each is
    /// synced as it is written.
    commits: Option<Arc<Commits>>,
}

/// What lies at a key's path, looked up without following links.
enum Lookup {
    Missing,
    /// Something that is never read, and why.
    Refused {
        reason: &'static str,
        stat: Stat,
    },
    /// A regular file, in the folder `parent` (an open descriptor: the file is opened
    /// relative to it, so a folder swapped for a link meanwhile changes nothing).
    File {
        parent: OwnedFd,
        name: String,
        stat: Stat,
    },
}

/// The parts of a `stat` the store uses, whatever the platform's field types.
#[allow(clippy::unnecessary_cast)]
fn identity(stat: &Stat) -> (u64, u64, u64) {
    (stat.st_dev as u64, stat.st_ino as u64, stat.st_nlink as u64)
}

/// A file's revision: its size, modification and change times, and inode. The change time
/// cannot be set by a user (restoring the modification time after rewriting a file in place
/// moves it), and a replaced file has a new inode, so any change of content changes it.
#[allow(clippy::unnecessary_cast)]
fn meta_of(stat: &Stat) -> ObjectMeta {
    let size = (stat.st_size as i64).max(0) as u64;
    let nanos = |secs: i64, nsec: u128| secs.max(0) as u128 * 1_000_000_000 + nsec;
    let modified = nanos(stat.st_mtime as i64, stat.st_mtime_nsec as u128);
    let changed = nanos(stat.st_ctime as i64, stat.st_ctime_nsec as u128);
    let inode = stat.st_ino as u64;
    ObjectMeta {
        size,
        revision: format!("{modified:x}-{size:x}-{changed:x}-{inode:x}"),
    }
}

fn errno(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

impl FsArtifactStore {
    /// `root` should be absolute (canonical), so paths from the watcher map back to keys.
    pub fn new(root: PathBuf) -> Self {
        Self {
            root,
            commits: None,
        }
    }

    /// Kept copies are staged in `commits` rather than synced one by one: whoever serves
    /// what this store indexes commits them first ([`Commits`]).
    pub fn with_commits(mut self, commits: Arc<Commits>) -> Self {
        self.commits = Some(commits);
        self
    }

    /// Makes every staged file durable (see [`Commits::commit`]); nothing to do without
    /// group commits.
    pub async fn commit(&self) -> Result<usize, StoreError> {
        let Some(commits) = self.commits.clone() else {
            return Ok(0);
        };
        if commits.is_empty() {
            return Ok(0);
        }
        tokio::task::spawn_blocking(move || commits.commit())
            .await
            .map_err(|e| StoreError::with_source("a commit stopped", e))?
            .map(|c| c.files)
            .map_err(|e| StoreError::with_source("cannot make published files durable", e))
    }

    /// The data directory: the folder keys are relative to.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file behind `key`, or `None` for keys that could escape the root or name state.
    /// Only a path: reads go through the link-refusing lookup.
    pub fn path_for(&self, key: &str) -> Option<PathBuf> {
        self.parts(key).map(|_| self.root.join(key))
    }

    /// The path segments of a key, or `None` if it is not a plain relative path of visible
    /// names.
    fn parts<'k>(&self, key: &'k str) -> Option<Vec<&'k str>> {
        if key.is_empty() || key.contains(['\\', '\0']) {
            return None;
        }
        let plain = Path::new(key)
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
        let parts: Vec<&str> = key.split('/').collect();
        let hidden = parts.iter().any(|p| p.is_empty() || p.starts_with('.'));
        (plain && !hidden).then_some(parts)
    }

    /// The key of a file under the root, if it has one (UTF-8, not hidden, not state).
    pub fn key_for(&self, path: &Path) -> Option<String> {
        let relative = path.strip_prefix(&self.root).ok()?;
        let mut parts = Vec::new();
        for component in relative.components() {
            let Component::Normal(part) = component else {
                return None;
            };
            let part = part.to_str()?;
            if part.starts_with('.') {
                return None;
            }
            parts.push(part);
        }
        (!parts.is_empty()).then(|| parts.join("/"))
    }

    async fn blocking<T: Send + 'static>(
        &self,
        key: &str,
        work: impl FnOnce(&FsArtifactStore, &str) -> io::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let store = self.clone();
        let owned = key.to_owned();
        tokio::task::spawn_blocking(move || work(&store, &owned))
            .await
            .map_err(|e| StoreError::with_source("a data directory read stopped", e))?
            .map_err(|e| StoreError::with_source(format!("cannot read {key}"), e))
    }
}

#[async_trait]
impl ArtifactStore for FsArtifactStore {
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        self.blocking(key, |store, key| {
            Ok(match store.lookup(key)? {
                Lookup::File { stat, .. } => Some(meta_of(&stat)),
                _ => None,
            })
        })
        .await
    }

    async fn list(&self) -> Result<Vec<String>, StoreError> {
        let store = self.clone();
        let scanned = tokio::task::spawn_blocking(move || store.scan_blocking())
            .await
            .map_err(|e| StoreError::with_source("the data directory scan stopped", e))??;
        Ok(scanned.into_iter().map(|(key, _)| key).collect())
    }

    /// The file itself: streamed, or read in place by checks that seek.
    async fn open(&self, key: &str) -> Result<Option<ObjectBody>, StoreError> {
        let opened = self.blocking(key, |s, k| s.open_blocking(k)).await?;
        body_of(key, opened)
    }

    async fn open_revision(
        &self,
        key: &str,
        revision: &str,
    ) -> Result<Option<ObjectBody>, StoreError> {
        let revision_owned = revision.to_owned();
        let opened = self
            .blocking(key, move |s, k| {
                s.open_revision_blocking(k, &revision_owned)
            })
            .await?;
        body_of(key, opened)
    }

    async fn keep(&self, key: &str, revision: &str, sha256: &str) -> Result<Kept, StoreError> {
        let (revision, sha256) = (revision.to_owned(), sha256.to_owned());
        self.blocking(key, move |s, k| s.keep_blocking(k, &revision, &sha256))
            .await
    }

    async fn refusal(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.blocking(key, |store, key| {
            Ok(match store.lookup(key)? {
                Lookup::Refused { reason, .. } => Some(reason.to_owned()),
                _ => None,
            })
        })
        .await
    }
}

/// An opened file as a body. The size comes from the open handle, and reading stops there,
/// so the length announced is the length sent even if the file grows meanwhile.
fn body_of(
    key: &str,
    opened: Option<(std::fs::File, ObjectMeta)>,
) -> Result<Option<ObjectBody>, StoreError> {
    opened
        .map(|(file, meta)| ObjectBody::from_file(meta, file))
        .transpose()
        .map_err(|e| StoreError::with_source(format!("cannot read {key}"), e))
}
