//! A data directory indexed as `tfreg serve` indexes it, with its served files built, for
//! the tests of `served` and of `publish::wait`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tfreg_core::{ArtifactStore, Downloads, Indexer, Registry};
use tfreg_local::changes::{ChangeFeed, Changed};
use tfreg_local::fs_store::FsArtifactStore;
use tfreg_local::metadata::LocalMetadataStore;

use super::build::Keeper;
use super::files::{Item, ServerInfo};

/// A module archive whose content names `version` (so each version's bytes differ).
pub fn archive(version: &str) -> Vec<u8> {
    let content = format!("# version {version}\n");
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    let mut header = tar::Header::new_gnu();
    header.set_size(content.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    builder
        .append_data(&mut header, "main.tf", content.as_bytes())
        .unwrap();
    builder.into_inner().unwrap().finish().unwrap()
}

pub struct Server {
    pub data: tempfile::TempDir,
    indexer: Indexer,
    feed: ChangeFeed,
    keeper: Keeper,
}

impl Server {
    /// `modules/ns<i>/net/aws/1.0.0.tar.gz` for each `i < n`, indexed, every file built.
    pub async fn with_modules(n: usize) -> Server {
        let data = tempfile::tempdir().unwrap();
        let root = data.path().to_path_buf();
        std::fs::create_dir_all(root.join(tfreg_local::fs_store::STATE_DIR_NAME)).unwrap();
        for i in 0..n {
            put(
                &root,
                &format!("modules/ns{i}/net/aws/1.0.0.tar.gz"),
                &archive("1.0.0"),
            );
        }
        let artifacts = Arc::new(FsArtifactStore::new(root.clone()));
        let metadata = Arc::new(LocalMetadataStore::open(&root, false).unwrap());
        let indexer = Indexer::new(metadata.clone(), artifacts.clone());
        for key in artifacts.list().await.unwrap() {
            indexer.index_key(&key).await.unwrap();
        }
        let feed = metadata.changes();
        let downloads = Downloads::served(crate::backend::throwaway_signer(), artifacts);
        let server = ServerInfo {
            pid: 1,
            url: "https://127.0.0.1:1".into(),
            hostname: "registry.test".into(),
        };
        let mut keeper = Keeper::new(
            &root,
            metadata.clone(),
            Registry::new(metadata, downloads),
            server,
        );
        keeper.begin().unwrap();
        for item in keeper.everything().await.unwrap() {
            keeper.refresh(&item).await.unwrap();
        }
        Server {
            data,
            indexer,
            feed,
            keeper,
        }
    }

    /// Writes `bytes` at `key` and indexes it, as the watcher would.
    pub async fn publish(&self, key: &str, bytes: &[u8]) {
        put(self.data.path(), key, bytes);
        self.indexer.index_key(key).await.unwrap();
    }

    /// Takes the index's changes and rebuilds what they touch, as the server does; the
    /// files written, relative to `DATA/.tfreg/served/`.
    pub async fn follow(&mut self) -> BTreeSet<PathBuf> {
        self.keeper.log.clear();
        for item in self.keeper.touched(&self.feed.take()) {
            self.keeper.refresh(&item).await.unwrap();
        }
        self.keeper
            .log
            .iter()
            .map(|p| p.strip_prefix(&self.keeper.dir).unwrap().to_path_buf())
            .collect()
    }

    /// `DATA/.tfreg/served/`
    pub fn dir(&self) -> &Path {
        &self.keeper.dir
    }

    pub(super) fn keeper_begin(&self) {
        self.keeper.begin().unwrap();
    }

    pub(super) fn keeper_touched(&self, changed: &Changed) -> BTreeSet<Item> {
        self.keeper.touched(changed)
    }
}

fn put(root: &Path, key: &str, bytes: &[u8]) {
    let path = root.join(key);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}
