//! The data directory as an [`ArtifactStore`]: object keys are paths relative to its root.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use tfreg_core::signing::UrlSigner;
use tfreg_core::store::{ObjectBody, ObjectMeta};
use tfreg_core::{ArtifactStore, Origin, StoreError};
use tokio::io::AsyncReadExt;

/// The folder, under the data directory, that holds the server's own state. Never published.
pub const STATE_DIR_NAME: &str = ".tfreg";

#[derive(Debug, Clone)]
pub struct FsArtifactStore {
    root: PathBuf,
    signer: Arc<UrlSigner>,
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
    pub fn path_for(&self, key: &str) -> Option<PathBuf> {
        if key.is_empty() || key.contains(['\\', '\0']) {
            return None;
        }
        let relative = Path::new(key);
        let plain = relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
        let hidden = key.split('/').any(|p| p.is_empty() || p.starts_with('.'));
        (plain && !hidden).then(|| self.root.join(relative))
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

    /// Every file with a key, and its metadata. Blocking: call from a blocking context.
    pub fn scan_blocking(&self) -> Result<Vec<(String, ObjectMeta)>, StoreError> {
        self.scan_under_blocking(&self.root)
    }

    /// Every file with a key below `dir` (a path under the root). Blocking.
    pub fn scan_under_blocking(&self, dir: &Path) -> Result<Vec<(String, ObjectMeta)>, StoreError> {
        let mut found = Vec::new();
        let walker = walkdir::WalkDir::new(dir)
            .follow_links(true)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
        for entry in walker {
            let entry = match entry {
                Ok(entry) => entry,
                // A file removed mid-walk is simply gone; the next event or rescan settles it.
                Err(e) if e.io_error().map(io::Error::kind) == Some(io::ErrorKind::NotFound) => {
                    continue
                }
                Err(e) if e.depth() > 0 => {
                    tracing::warn!(error = %e, "skipping an unreadable entry in the data directory");
                    continue;
                }
                Err(e) => {
                    if e.io_error().map(io::Error::kind) == Some(io::ErrorKind::NotFound) {
                        return Ok(found);
                    }
                    return Err(StoreError::with_source(
                        format!("cannot read the data directory {}", dir.display()),
                        e,
                    ));
                }
            };
            if !entry.file_type().is_file() {
                continue;
            }
            let Some(key) = self.key_for(entry.path()) else {
                tracing::warn!(path = %entry.path().display(), "skipping a file whose name is not UTF-8");
                continue;
            };
            match entry.metadata() {
                Ok(m) => found.push((key, meta_of(&m))),
                Err(e) => tracing::warn!(key, error = %e, "skipping an unreadable file"),
            }
        }
        Ok(found)
    }
}

fn meta_of(m: &std::fs::Metadata) -> ObjectMeta {
    let modified = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    ObjectMeta {
        size: m.len(),
        revision: format!("{modified:x}-{:x}", m.len()),
    }
}

/// `Ok(None)` for the errors that mean "no such file".
fn absent_ok<T>(result: io::Result<T>, key: &str) -> Result<Option<T>, StoreError> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(StoreError::with_source(format!("cannot read {key}"), e)),
    }
}

#[async_trait]
impl ArtifactStore for FsArtifactStore {
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        let Some(path) = self.path_for(key) else {
            return Ok(None);
        };
        let meta = absent_ok(tokio::fs::metadata(&path).await, key)?;
        Ok(meta.filter(|m| m.is_file()).map(|m| meta_of(&m)))
    }

    async fn list(&self) -> Result<Vec<String>, StoreError> {
        let store = self.clone();
        let scanned = tokio::task::spawn_blocking(move || store.scan_blocking())
            .await
            .map_err(|e| StoreError::with_source("the data directory scan stopped", e))??;
        Ok(scanned.into_iter().map(|(key, _)| key).collect())
    }

    async fn open(&self, key: &str) -> Result<Option<ObjectBody>, StoreError> {
        let Some(path) = self.path_for(key) else {
            return Ok(None);
        };
        let Some(file) = absent_ok(tokio::fs::File::open(&path).await, key)? else {
            return Ok(None);
        };
        // The size comes from the open handle, and reading stops there, so the length we
        // announce is the length we send even if the file grows meanwhile.
        let metadata = file
            .metadata()
            .await
            .map_err(|e| StoreError::with_source(format!("cannot read {key}"), e))?;
        if !metadata.is_file() {
            return Ok(None);
        }
        let meta = meta_of(&metadata);
        Ok(Some(ObjectBody {
            reader: Box::pin(file.take(meta.size)),
            meta,
        }))
    }

    /// Files have no versions here: the URL names the current file.
    async fn download_url(
        &self,
        key: &str,
        _revision: Option<&str>,
        origin: &Origin,
    ) -> Result<String, StoreError> {
        Ok(self.signer.url(origin, key, SystemTime::now()))
    }

    fn local_path(&self, key: &str) -> Option<PathBuf> {
        self.path_for(key)
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
}
