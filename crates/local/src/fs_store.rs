//! The data directory as an [`ArtifactStore`]: object keys are paths relative to its root.
//!
//! Publishers may put anything in the data directory, so nothing in it is trusted. A key is
//! resolved one folder at a time from the root without ever following a symbolic link
//! (`openat` with `O_NOFOLLOW`), so no link can lead a read out of the data directory or
//! into its state folder; only regular files are read (a FIFO would block the reader
//! forever), and a hard link to one of the state folder's files is refused. Anything that
//! is there but never read gets a reason, which the indexer records for `tfreg status`.

use std::collections::HashSet;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use tfreg_core::signing::UrlSigner;
use tfreg_core::store::{Kept, ObjectBody, ObjectMeta};
use tfreg_core::{ArtifactStore, Origin, StoreError};
use tokio::io::AsyncReadExt;

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

#[derive(Debug, Clone)]
pub struct FsArtifactStore {
    root: PathBuf,
    signer: Arc<UrlSigner>,
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
    pub fn new(root: PathBuf, signer: Arc<UrlSigner>) -> Self {
        Self { root, signer }
    }

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

    /// Looks a key up one folder at a time from the root, never following a link. Blocking.
    fn lookup(&self, key: &str) -> io::Result<Lookup> {
        let Some(parts) = self.parts(key) else {
            return Ok(Lookup::Missing);
        };
        let Some((last, folders)) = parts.split_last() else {
            return Ok(Lookup::Missing);
        };
        let folder_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut dir = match rustix::fs::open(
            &self.root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(dir) => dir,
            Err(Errno::NOENT) => return Ok(Lookup::Missing),
            Err(e) => return Err(errno(e)),
        };
        for folder in folders {
            match rustix::fs::openat(&dir, *folder, folder_flags, Mode::empty()) {
                Ok(next) => dir = next,
                Err(Errno::NOENT) => return Ok(Lookup::Missing),
                // A link, or a file where a folder should be: which one decides the answer.
                Err(Errno::LOOP | Errno::NOTDIR) => {
                    return match rustix::fs::statat(&dir, *folder, AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                            Ok(Lookup::Refused { reason: LINK, stat })
                        }
                        Ok(_) | Err(Errno::NOENT) => Ok(Lookup::Missing),
                        Err(e) => Err(errno(e)),
                    };
                }
                Err(e) => return Err(errno(e)),
            }
        }
        let stat = match rustix::fs::statat(&dir, *last, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::NOENT | Errno::NOTDIR) => return Ok(Lookup::Missing),
            Err(e) => return Err(errno(e)),
        };
        Ok(match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile if identity(&stat).2 > 1 && self.is_state_file(&stat) => {
                Lookup::Refused {
                    reason: STATE_LINK,
                    stat,
                }
            }
            FileType::RegularFile => Lookup::File {
                parent: dir,
                name: (*last).to_owned(),
                stat,
            },
            FileType::Directory => Lookup::Missing,
            FileType::Symlink => Lookup::Refused { reason: LINK, stat },
            _ => Lookup::Refused {
                reason: SPECIAL,
                stat,
            },
        })
    }

    /// True when a file with several links is one of the state folder's files.
    fn is_state_file(&self, stat: &Stat) -> bool {
        let (dev, ino, _) = identity(stat);
        let mut state = HashSet::new();
        let walker = walkdir::WalkDir::new(self.root.join(STATE_DIR_NAME))
            .follow_links(false)
            .max_depth(4);
        for entry in walker.into_iter().flatten() {
            if let Ok(m) = entry.metadata() {
                use std::os::unix::fs::MetadataExt;
                state.insert((m.dev(), m.ino()));
            }
        }
        state.contains(&(dev, ino))
    }

    /// Opens the regular file behind `key` for reading. Blocking.
    fn open_blocking(&self, key: &str) -> io::Result<Option<(std::fs::File, ObjectMeta)>> {
        let Lookup::File { parent, name, stat } = self.lookup(key)? else {
            return Ok(None);
        };
        // Non-blocking, so a FIFO swapped in since the lookup cannot hang the open.
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&parent, name.as_str(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::LOOP) => return Ok(None),
            Err(e) => return Err(errno(e)),
        };
        let opened = rustix::fs::fstat(&fd).map_err(errno)?;
        let same =
            identity(&opened).0 == identity(&stat).0 && identity(&opened).1 == identity(&stat).1;
        if !same || FileType::from_raw_mode(opened.st_mode) != FileType::RegularFile {
            return Ok(None); // replaced since the lookup: the next event settles it
        }
        Ok(Some((std::fs::File::from(fd), meta_of(&opened))))
    }

    /// Where the bytes of `key` at `revision` are kept once published.
    fn kept_path(&self, key: &str, revision: &str) -> PathBuf {
        use sha2::Digest;
        let mut hasher = sha2::Sha256::new();
        hasher.update(key.as_bytes());
        hasher.update([0]);
        hasher.update(revision.as_bytes());
        self.root
            .join(STATE_DIR_NAME)
            .join(KEPT_DIR_NAME)
            .join(hex::encode(hasher.finalize()))
    }

    /// Copies the file at `key`, if it is still at `revision` and its bytes are those of
    /// `sha256`, into the state folder: written under a temporary name, synced, then renamed,
    /// so a kept copy is always whole. Blocking.
    fn keep_blocking(&self, key: &str, revision: &str, sha256: &str) -> io::Result<Kept> {
        use sha2::Digest;
        use std::io::{Read, Write};
        let target = self.kept_path(key, revision);
        if target.is_file() {
            return Ok(Kept::Yes);
        }
        let Some((mut file, meta)) = self.open_blocking(key)? else {
            return Ok(Kept::Changed);
        };
        if meta.revision != revision {
            return Ok(Kept::Changed);
        }
        let folder = target.parent().expect("a kept path has a folder");
        std::fs::create_dir_all(folder)?;
        let mut copy = tempfile::NamedTempFile::new_in(folder)?;
        let mut hasher = sha2::Sha256::new();
        let mut buffer = vec![0u8; 64 * 1024];
        let mut left = meta.size;
        while left > 0 {
            let n = file.read(&mut buffer[..(left.min(64 * 1024) as usize)])?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
            copy.write_all(&buffer[..n])?;
            left -= n as u64;
        }
        if left > 0 || hex::encode(hasher.finalize()) != sha256 {
            return Ok(Kept::Changed);
        }
        copy.as_file().sync_all()?;
        copy.persist(&target).map_err(|e| e.error)?;
        if let Ok(dir) = std::fs::File::open(folder) {
            let _ = dir.sync_all();
        }
        Ok(Kept::Yes)
    }

    /// Opens `key` at `revision`: the file itself while it is at that revision, else its
    /// kept copy. Blocking.
    fn open_revision_blocking(
        &self,
        key: &str,
        revision: &str,
    ) -> io::Result<Option<(std::fs::File, ObjectMeta)>> {
        if let Some((file, meta)) = self.open_blocking(key)? {
            if meta.revision == revision {
                return Ok(Some((file, meta)));
            }
        }
        if self.parts(key).is_none() {
            return Ok(None);
        }
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::open(self.kept_path(key, revision), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::LOOP) => return Ok(None),
            Err(e) => return Err(errno(e)),
        };
        let stat = rustix::fs::fstat(&fd).map_err(errno)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Ok(None);
        }
        let meta = ObjectMeta {
            size: meta_of(&stat).size,
            revision: revision.to_owned(),
        };
        Ok(Some((std::fs::File::from(fd), meta)))
    }

    /// What is at `key`, whatever it is (a refused link or FIFO included): what the watcher
    /// compares between scans. Blocking.
    pub fn entry_meta(&self, key: &str) -> io::Result<Option<ObjectMeta>> {
        Ok(match self.lookup(key)? {
            Lookup::Missing => None,
            Lookup::Refused { stat, .. } | Lookup::File { stat, .. } => Some(meta_of(&stat)),
        })
    }

    /// Every entry with a key (regular files, and the links and special files that are
    /// refused), and its metadata. Blocking: call from a blocking context.
    pub fn scan_blocking(&self) -> Result<Vec<(String, ObjectMeta)>, StoreError> {
        self.scan_under_blocking(&self.root)
    }

    /// Every entry with a key below `dir` (a path under the root). The walk goes folder by
    /// folder through open descriptors, each opened without following links, so a folder
    /// swapped for a link while it is walked is never walked into. Blocking.
    pub fn scan_under_blocking(&self, dir: &Path) -> Result<Vec<(String, ObjectMeta)>, StoreError> {
        let failed = |e: io::Error| {
            StoreError::with_source(
                format!("cannot read the data directory {}", dir.display()),
                e,
            )
        };
        let prefix = match dir == self.root {
            true => String::new(),
            false => match self.key_for(dir) {
                Some(key) => key,
                None => return Ok(Vec::new()),
            },
        };
        let Some(start) = self.open_folder(&prefix).map_err(failed)? else {
            return Ok(Vec::new());
        };
        let mut found = Vec::new();
        self.walk(start, &prefix, 0, &mut found);
        found.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(found)
    }

    /// Opens the folder `key` (the root for `""`) without following links; `None` if it is
    /// not a folder.
    fn open_folder(&self, key: &str) -> io::Result<Option<OwnedFd>> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut dir = match rustix::fs::open(&self.root, flags, Mode::empty()) {
            Ok(dir) => dir,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(errno(e)),
        };
        if key.is_empty() {
            return Ok(Some(dir));
        }
        let Some(parts) = self.parts(key) else {
            return Ok(None);
        };
        for part in parts {
            match rustix::fs::openat(&dir, part, flags | OFlags::NOFOLLOW, Mode::empty()) {
                Ok(next) => dir = next,
                Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => return Ok(None),
                Err(e) => return Err(errno(e)),
            }
        }
        Ok(Some(dir))
    }

    /// Lists the folder `dir` (whose key is `prefix`) and the folders below it.
    fn walk(
        &self,
        dir: OwnedFd,
        prefix: &str,
        depth: usize,
        found: &mut Vec<(String, ObjectMeta)>,
    ) {
        // Deeper than any key of the publishing layout needs, with room to spare.
        const MAX_DEPTH: usize = 16;
        let entries = match rustix::fs::Dir::read_from(&dir) {
            Ok(entries) => entries,
            Err(e) => {
                tracing::warn!(folder = prefix, error = %e, "skipping an unreadable folder in the data directory");
                return;
            }
        };
        for entry in entries {
            let Ok(entry) = entry else { continue };
            let Ok(name) = entry.file_name().to_str() else {
                tracing::warn!(folder = prefix, "skipping a file whose name is not UTF-8");
                continue;
            };
            if name.starts_with('.') {
                continue; // `.`, `..`, hidden files and the state folder
            }
            let key = match prefix.is_empty() {
                true => name.to_owned(),
                false => format!("{prefix}/{name}"),
            };
            let stat = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                Err(Errno::NOENT) => continue, // removed meanwhile
                Err(e) => {
                    tracing::warn!(key, error = %e, "skipping an unreadable entry");
                    continue;
                }
            };
            if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
                found.push((key, meta_of(&stat)));
                continue;
            }
            if depth >= MAX_DEPTH {
                tracing::warn!(key, "not walking folders nested deeper than {MAX_DEPTH}");
                continue;
            }
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match rustix::fs::openat(&dir, name, flags, Mode::empty()) {
                Ok(child) => self.walk(child, &key, depth + 1, found),
                // Swapped for a link (or a file) since it was listed: listed as what it is
                // now on the next scan, never walked into.
                Err(Errno::LOOP | Errno::NOTDIR | Errno::NOENT) => {}
                Err(e) => tracing::warn!(key, error = %e, "skipping an unreadable folder"),
            }
        }
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

    async fn open(&self, key: &str) -> Result<Option<ObjectBody>, StoreError> {
        let Some((file, meta)) = self.blocking(key, |s, k| s.open_blocking(k)).await? else {
            return Ok(None);
        };
        // The size comes from the open handle, and reading stops there, so the length we
        // announce is the length we send even if the file grows meanwhile.
        Ok(Some(ObjectBody {
            reader: Box::pin(tokio::fs::File::from_std(file).take(meta.size)),
            meta,
        }))
    }

    async fn open_local(
        &self,
        key: &str,
    ) -> Result<Option<(std::fs::File, ObjectMeta)>, StoreError> {
        self.blocking(key, |s, k| s.open_blocking(k)).await
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
        Ok(opened.map(|(file, meta)| ObjectBody {
            reader: Box::pin(tokio::fs::File::from_std(file).take(meta.size)),
            meta,
        }))
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

    /// The URL names one revision of the file: a download after the file changed is refused
    /// (the client asks the registry again), so what was checked is what is served.
    async fn download_url(
        &self,
        key: &str,
        revision: Option<&str>,
        origin: &Origin,
    ) -> Result<String, StoreError> {
        Ok(self
            .signer
            .url_for_revision(origin, key, revision, SystemTime::now()))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn store(root: &Path) -> FsArtifactStore {
        let signer = Arc::new(UrlSigner::new(vec![0; 32], Duration::from_secs(60)));
        FsArtifactStore::new(root.to_path_buf(), signer)
    }

    #[test]
    fn keys_cannot_escape_the_root_or_reach_state() {
        let s = store(Path::new("/data"));
        assert_eq!(
            s.path_for("modules/a/b/c/1.0.0.zip"),
            Some(PathBuf::from("/data/modules/a/b/c/1.0.0.zip"))
        );
        for bad in [
            "",
            "../etc/passwd",
            "modules/../../x",
            "/etc/passwd",
            ".tfreg/url-signing.key",
            "modules/./a",
            "modules//a",
            "a\\b",
            "a\0b",
            "modules/a/",
        ] {
            assert_eq!(s.path_for(bad), None, "{bad:?}");
        }
        assert_eq!(
            s.key_for(Path::new("/data/modules/a/b/c/1.0.0.zip"))
                .as_deref(),
            Some("modules/a/b/c/1.0.0.zip")
        );
        assert_eq!(s.key_for(Path::new("/data/.tfreg/tls/cert.pem")), None);
        assert_eq!(s.key_for(Path::new("/elsewhere/x")), None);
    }

    #[tokio::test]
    async fn head_open_and_scan_see_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        std::fs::create_dir_all(dir.path().join("modules/a/b/c")).unwrap();
        std::fs::create_dir_all(dir.path().join(".tfreg")).unwrap();
        std::fs::write(dir.path().join("modules/a/b/c/1.0.0.zip"), b"12345").unwrap();
        std::fs::write(dir.path().join(".tfreg/secret"), b"x").unwrap();

        assert_eq!(
            s.head("modules/a/b/c/1.0.0.zip")
                .await
                .unwrap()
                .unwrap()
                .size,
            5
        );
        assert_eq!(s.head("modules/a/b/c/2.0.0.zip").await.unwrap(), None);
        assert_eq!(s.head("modules/a/b/c/1.0.0.zip/x").await.unwrap(), None);
        assert_eq!(
            s.head("modules/a").await.unwrap(),
            None,
            "folders are not objects"
        );
        assert_eq!(s.list().await.unwrap(), ["modules/a/b/c/1.0.0.zip"]);

        let mut body = s.open("modules/a/b/c/1.0.0.zip").await.unwrap().unwrap();
        let mut content = Vec::new();
        body.reader.read_to_end(&mut content).await.unwrap();
        assert_eq!(content, b"12345");
    }

    /// Reads everything `key` gives, if anything.
    async fn read(s: &FsArtifactStore, key: &str) -> Option<Vec<u8>> {
        let mut body = s.open(key).await.unwrap()?;
        let mut content = Vec::new();
        body.reader.read_to_end(&mut content).await.unwrap();
        Some(content)
    }

    #[tokio::test]
    async fn kept_bytes_outlive_a_rewrite_in_place_and_a_delete() {
        use sha2::Digest;
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let key = "modules/a/b/c/1.0.0.zip";
        std::fs::create_dir_all(dir.path().join("modules/a/b/c")).unwrap();
        std::fs::write(dir.path().join(key), b"original").unwrap();
        let first = s.head(key).await.unwrap().unwrap().revision;
        let sha = hex::encode(sha2::Sha256::digest(b"original"));

        assert_eq!(s.keep(key, &first, "00").await.unwrap(), Kept::Changed);
        assert_eq!(s.keep(key, "other", &sha).await.unwrap(), Kept::Changed);
        assert_eq!(s.keep(key, &first, &sha).await.unwrap(), Kept::Yes);
        assert_eq!(
            s.keep(key, &first, &sha).await.unwrap(),
            Kept::Yes,
            "idempotent"
        );

        // Rewritten in place (what `cp` does), then deleted: the kept revision still reads.
        std::fs::write(dir.path().join(key), b"changed!").unwrap();
        let read_at = |revision: String| {
            let s = s.clone();
            async move {
                let mut body = s.open_revision(key, &revision).await.unwrap()?;
                let mut content = Vec::new();
                body.reader.read_to_end(&mut content).await.unwrap();
                Some((content, body.meta.revision))
            }
        };
        assert_eq!(
            read_at(first.clone()).await,
            Some((b"original".to_vec(), first.clone()))
        );
        let second = s.head(key).await.unwrap().unwrap().revision;
        assert_eq!(read_at(second.clone()).await.unwrap().0, b"changed!");
        std::fs::remove_file(dir.path().join(key)).unwrap();
        assert_eq!(read_at(first.clone()).await.unwrap().0, b"original");
        assert_eq!(read_at(second).await, None, "never kept");
        // The kept copies are state: never published under a key of their own.
        assert!(s.list().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn links_are_never_followed_out_of_the_root_or_into_state() {
        use std::os::unix::fs::symlink;
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("passwd"), b"root:x:0:0").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let s = store(root);
        std::fs::create_dir_all(root.join(".tfreg")).unwrap();
        std::fs::write(root.join(".tfreg/url-signing.key"), b"secret").unwrap();
        std::fs::create_dir_all(root.join("modules/a/b")).unwrap();
        // A link to a file outside, to the state folder's secret, and to a folder outside.
        symlink(
            outside.path().join("passwd"),
            root.join("modules/a/b/c.tar.gz"),
        )
        .unwrap();
        symlink(
            root.join(".tfreg/url-signing.key"),
            root.join("modules/a/b/k.tar.gz"),
        )
        .unwrap();
        symlink(outside.path(), root.join("modules/a/out")).unwrap();
        // A hard link to the secret (same user, same filesystem).
        std::fs::hard_link(
            root.join(".tfreg/url-signing.key"),
            root.join("modules/a/b/h.tar.gz"),
        )
        .unwrap();

        for key in [
            "modules/a/b/c.tar.gz",
            "modules/a/b/k.tar.gz",
            "modules/a/out/passwd",
            "modules/a/b/h.tar.gz",
        ] {
            assert_eq!(s.head(key).await.unwrap(), None, "{key}");
            assert_eq!(read(&s, key).await, None, "{key}");
            assert!(s.open_local(key).await.unwrap().is_none(), "{key}");
            let reason = s.refusal(key).await.unwrap();
            assert!(reason.is_some(), "{key} is refused with a reason");
        }
        assert!(s
            .refusal("modules/a/b/c.tar.gz")
            .await
            .unwrap()
            .unwrap()
            .contains("symbolic link"));
        assert!(s
            .refusal("modules/a/b/h.tar.gz")
            .await
            .unwrap()
            .unwrap()
            .contains("state folder"));
        // The scan lists the links (so their refusal is reported) but never walks into them.
        let keys = s.list().await.unwrap();
        assert!(
            keys.contains(&"modules/a/b/c.tar.gz".to_owned()),
            "{keys:?}"
        );
        assert!(keys.contains(&"modules/a/out".to_owned()), "{keys:?}");
        assert!(!keys.iter().any(|k| k.contains("passwd")), "{keys:?}");
    }

    #[tokio::test]
    async fn a_rewrite_in_place_with_its_time_restored_is_a_new_revision() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let path = dir.path().join("modules/a/b/c/1.0.0.zip");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"signed").unwrap();
        let key = "modules/a/b/c/1.0.0.zip";
        let before = s.head(key).await.unwrap().unwrap();
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        // Same size, same modification time: only the change time tells.
        std::fs::write(&path, b"forged").unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_modified(modified).unwrap();
        let after = s.head(key).await.unwrap().unwrap();
        assert_eq!(before.size, after.size);
        assert_ne!(before.revision, after.revision);
    }

    #[tokio::test]
    async fn fifos_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        std::fs::create_dir_all(dir.path().join("modules/a/b/c")).unwrap();
        let fifo = dir.path().join("modules/a/b/c/1.0.0.tar.gz");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, Mode::from_raw_mode(0o644)).unwrap();
        let key = "modules/a/b/c/1.0.0.tar.gz";
        let opened = tokio::time::timeout(Duration::from_secs(10), s.open(key)).await;
        assert!(opened
            .expect("opening a FIFO must not block")
            .unwrap()
            .is_none());
        assert_eq!(s.head(key).await.unwrap(), None);
        assert!(s.refusal(key).await.unwrap().unwrap().contains("FIFO"));
        assert_eq!(s.list().await.unwrap(), [key]);
    }
}
