//! The data directory store's own promises, beyond the storage contract.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::fs::Mode;
use tfreg_core::store::contract::{self, Uploads};
use tfreg_core::store::Kept;
use tfreg_core::ArtifactStore;
use tokio::io::AsyncReadExt;

use super::FsArtifactStore;

fn store(root: &Path) -> FsArtifactStore {
    FsArtifactStore::new(root.to_path_buf())
}

/// Uploads are files written into the data directory.
#[async_trait::async_trait]
impl Uploads for FsArtifactStore {
    async fn upload(&self, key: &str, bytes: &[u8]) {
        let path = self.path_for(key).expect("a key of the data directory");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        // A new file, as publishers copy one in: a rewrite in place is tested on its own.
        let _ = std::fs::remove_file(&path);
        std::fs::write(path, bytes).unwrap();
    }

    async fn remove(&self, key: &str) {
        std::fs::remove_file(self.path_for(key).unwrap()).unwrap();
    }
}

#[tokio::test]
async fn the_data_directory_keeps_the_storage_contract() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    contract::artifact_store(&s, &s).await;
}

#[tokio::test]
async fn with_group_commits_kept_bytes_read_while_staged_and_land_at_the_commit() {
    use sha2::Digest;
    let dir = tempfile::tempdir().unwrap();
    let commits = std::sync::Arc::new(crate::Commits::new(dir.path().to_path_buf()));
    let s = store(dir.path()).with_commits(commits.clone());
    contract::artifact_store(&s, &s).await;
    assert!(!commits.is_empty(), "the contract's kept copies are staged");
    assert!(s.commit().await.unwrap() > 0);
    assert!(commits.is_empty());

    // Staged, the copy already serves its revision after a rewrite; committed, it is a
    // file of its own under the kept folder, with no temporary file beside it.
    let key = "modules/a/b/c/1.0.0.zip";
    s.upload(key, b"original").await;
    let first = s.head(key).await.unwrap().unwrap().revision;
    let sha = hex::encode(sha2::Sha256::digest(b"original"));
    assert_eq!(s.keep(key, &first, &sha).await.unwrap(), Kept::Yes);
    assert_eq!(s.keep(key, &first, &sha).await.unwrap(), Kept::Yes);
    assert_eq!(commits.len(), 1);
    s.upload(key, b"changed!").await;
    let read = |s: FsArtifactStore, revision: String| async move {
        let mut body = s.open_revision(key, &revision).await.unwrap().unwrap();
        let mut content = Vec::new();
        body.reader.read_to_end(&mut content).await.unwrap();
        content
    };
    assert_eq!(read(s.clone(), first.clone()).await, b"original");
    assert_eq!(s.commit().await.unwrap(), 1);
    assert_eq!(read(s.clone(), first.clone()).await, b"original");
    let kept = dir.path().join(".tfreg").join("kept");
    assert!(std::fs::read_dir(&kept).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with('.')));
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
async fn folders_and_the_state_folder_are_never_objects() {
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
