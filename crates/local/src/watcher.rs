//! Keeps the index in step with the data directory. Filesystem notifications (`notify`)
//! bring changes within a fraction of a second; a periodic rescan is the safety net for
//! filesystems and situations where notifications are lost. Each change becomes the same
//! "key K changed" hint an S3 event notification gives the indexer Lambda.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, EventKind, MetadataKind, ModifyKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tfreg_core::store::ObjectMeta;
use tfreg_core::{ArtifactStore, Indexer, StoreError};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::fs_store::FsArtifactStore;

#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// How often the whole directory is compared with the index.
    pub rescan_interval: Duration,
    /// How long to gather notifications before indexing them, so a burst of writes to one
    /// file is indexed once.
    pub debounce: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self {
            rescan_interval: Duration::from_secs(10),
            debounce: Duration::from_millis(150),
        }
    }
}

/// Runs until dropped.
pub struct DataDirWatcher {
    // Held for its side effect: dropping it stops notifications.
    _notify: Option<RecommendedWatcher>,
    task: JoinHandle<()>,
}

impl Drop for DataDirWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl DataDirWatcher {
    /// Indexes everything in the data directory, then keeps watching it. Returns once the
    /// first full index is complete, so the server never answers from a partial index.
    pub async fn start(
        store: Arc<FsArtifactStore>,
        indexer: Arc<Indexer>,
        options: WatchOptions,
    ) -> Result<Self, StoreError> {
        let (tx, rx) = mpsc::unbounded_channel();
        // Notifications start before the first scan, so nothing written during it is missed.
        let notify = match start_notify(store.root(), tx) {
            Ok(watcher) => Some(watcher),
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    "file notifications are unavailable; changes are picked up by rescans every {}s",
                    options.rescan_interval.as_secs()
                );
                None
            }
        };
        let mut sync = Sync {
            store,
            indexer,
            known: HashMap::new(),
            failed: BTreeSet::new(),
        };
        sync.rescan().await?;
        let task = tokio::spawn(sync.run(rx, options));
        Ok(Self {
            _notify: notify,
            task,
        })
    }
}

fn start_notify(
    root: &Path,
    tx: mpsc::UnboundedSender<notify::Result<notify::Event>>,
) -> notify::Result<RecommendedWatcher> {
    let mut watcher = notify::recommended_watcher(move |event| {
        // The receiver only goes away when the watcher is being dropped.
        let _ = tx.send(event);
    })?;
    watcher.watch(root, RecursiveMode::Recursive)?;
    Ok(watcher)
}

/// Events that cannot change what a key holds: reads (including our own downloads) and
/// access-time updates.
fn is_read_only(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Access(
            AccessKind::Open(_)
                | AccessKind::Read
                | AccessKind::Close(notify::event::AccessMode::Read)
        ) | EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime))
    )
}

struct Sync {
    store: Arc<FsArtifactStore>,
    indexer: Arc<Indexer>,
    /// What the index was last told about each key.
    known: HashMap<String, ObjectMeta>,
    /// Keys whose indexing failed: retried on every rescan until it succeeds (a failed
    /// delete is in neither `known` nor on disk, so nothing else would bring it back).
    failed: BTreeSet<String>,
}

impl Sync {
    async fn run(
        mut self,
        mut rx: mpsc::UnboundedReceiver<notify::Result<notify::Event>>,
        options: WatchOptions,
    ) {
        let mut rescan = tokio::time::interval(options.rescan_interval);
        rescan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        rescan.tick().await; // the first tick is immediate; start() just scanned
        loop {
            tokio::select! {
                first = rx.recv() => {
                    let Some(first) = first else { return };
                    let mut paths = Vec::new();
                    let mut full_rescan = false;
                    collect(first, &mut paths, &mut full_rescan);
                    // Gather the rest of the burst.
                    let deadline = tokio::time::Instant::now() + options.debounce;
                    while let Ok(Some(event)) = tokio::time::timeout_at(deadline, rx.recv()).await {
                        collect(event, &mut paths, &mut full_rescan);
                    }
                    let result = if full_rescan {
                        self.rescan().await
                    } else {
                        self.settle_paths(paths).await
                    };
                    if let Err(e) = result {
                        tracing::error!(error = %e, "could not index changes in the data directory");
                    }
                }
                _ = rescan.tick() => {
                    if let Err(e) = self.rescan().await {
                        tracing::error!(error = %e, "could not rescan the data directory");
                    }
                }
            }
        }
    }

    /// Compares the whole directory with what the index knows and settles the differences.
    async fn rescan(&mut self) -> Result<(), StoreError> {
        let scanned = self.scan(self.store.root().to_path_buf()).await?;
        let mut changed: BTreeSet<String> = self
            .known
            .keys()
            .filter(|k| !scanned.contains_key(*k))
            .cloned()
            .collect();
        changed.extend(
            scanned
                .iter()
                .filter(|(k, meta)| self.known.get(*k) != Some(meta))
                .map(|(k, _)| k.clone()),
        );
        changed.extend(std::mem::take(&mut self.failed));
        self.settle(changed).await;
        Ok(())
    }

    /// Settles the keys behind changed paths. A path may be a file, a new folder (whose
    /// files may have been written before its watch began), or a removed or renamed folder.
    async fn settle_paths(&mut self, paths: Vec<PathBuf>) -> Result<(), StoreError> {
        let mut keys = BTreeSet::new();
        for path in paths {
            let Some(key) = self.store.key_for(&path) else {
                continue;
            };
            let below = format!("{key}/");
            keys.extend(self.known.keys().filter(|k| k.starts_with(&below)).cloned());
            if path.is_dir() {
                keys.extend(self.scan(path).await?.into_keys());
            } else if path.exists() || self.known.contains_key(&key) {
                keys.insert(key);
            }
        }
        self.settle(keys).await;
        Ok(())
    }

    async fn scan(&self, dir: PathBuf) -> Result<HashMap<String, ObjectMeta>, StoreError> {
        let store = Arc::clone(&self.store);
        let found = tokio::task::spawn_blocking(move || store.scan_under_blocking(&dir))
            .await
            .map_err(|e| StoreError::with_source("the data directory scan stopped", e))??;
        Ok(found.into_iter().collect())
    }

    /// Indexes each key, logging progress for large batches. Per-key failures are logged
    /// and left for the next rescan to retry (they stay out of `known`).
    async fn settle(&mut self, keys: BTreeSet<String>) {
        let total = keys.len();
        let started = Instant::now();
        let mut last_report = Instant::now();
        for (done, key) in keys.into_iter().enumerate() {
            let indexed = self.indexer.index_key(&key).await;
            match (indexed, self.store.head(&key).await) {
                (Ok(_), Ok(Some(meta))) => {
                    self.known.insert(key, meta);
                }
                (Ok(_), Ok(None)) => {
                    self.known.remove(&key);
                }
                (Err(e), _) | (_, Err(e)) => {
                    tracing::error!(key, error = %e, "could not index; will retry on the next rescan");
                    self.known.remove(&key);
                    self.failed.insert(key);
                }
            }
            if last_report.elapsed() >= Duration::from_secs(2) {
                tracing::info!("indexing the data directory: {}/{total} files", done + 1);
                last_report = Instant::now();
            }
        }
        if total > 0 && started.elapsed() >= Duration::from_secs(2) {
            tracing::info!(
                "indexed {total} files in {:.1}s",
                started.elapsed().as_secs_f64()
            );
        }
    }
}

fn collect(event: notify::Result<notify::Event>, paths: &mut Vec<PathBuf>, full: &mut bool) {
    match event {
        Ok(event) if is_read_only(&event.kind) => {}
        // The kernel dropped events (queue overflow) or asks for a rescan.
        Ok(event) if event.need_rescan() => *full = true,
        Ok(event) => paths.extend(event.paths),
        Err(e) => {
            tracing::warn!(error = %e, "file notification error; rescanning");
            *full = true;
        }
    }
}
