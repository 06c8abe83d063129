//! Keeps the index in step with the data directory. Filesystem notifications (`notify`)
//! bring changes within a fraction of a second; a periodic rescan is the safety net for
//! filesystems and situations where notifications are lost. Each change becomes the same
//! "key K changed" hint an S3 event notification gives the indexer Lambda.
//!
//! Keys are indexed concurrently, at most [`WatchOptions::concurrency`] at a time, each on
//! its own task: a slow file (a large package, or a hostile one running into its limits)
//! never holds up another, and the server answers from what is indexed meanwhile. A key
//! that changes while it is being indexed is indexed again when that run ends.
//!
//! With [`Persistence`], the index is saved whenever the watcher has been idle for a moment
//! after a change ([`crate::snapshot`]), and a start from a saved index indexes only what
//! changed since.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, EventKind, MetadataKind, ModifyKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tfreg_core::store::ObjectMeta;
use tfreg_core::{IndexOutcome, Indexer, StoreError};
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};

use crate::fs_store::FsArtifactStore;
use crate::metadata::LocalMetadataStore;
use crate::snapshot::Snapshot;

/// How long the watcher stays idle after a change before it saves the index.
const SAVE_AFTER: Duration = Duration::from_secs(2);

/// How often modules indexed meanwhile are listed while a batch of files is indexed.
const LIST_EVERY: Duration = Duration::from_secs(2);

/// Where the watcher keeps the index between runs.
pub struct Persistence {
    /// Where the index is saved.
    pub snapshot: Snapshot,
    /// The index it saves.
    pub metadata: Arc<LocalMetadataStore>,
    /// The files as the restored index knows them (empty without a saved index).
    pub known: HashMap<String, ObjectMeta>,
}

/// How the watcher finds and indexes changes.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// How often the whole directory is compared with the index.
    pub rescan_interval: Duration,
    /// How long to gather notifications before indexing them, so a burst of writes to one
    /// file is indexed once.
    pub debounce: Duration,
    /// How many keys are indexed at once.
    pub concurrency: usize,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self {
            rescan_interval: Duration::from_secs(10),
            debounce: Duration::from_millis(150),
            concurrency: 8,
        }
    }
}

/// Runs until dropped.
pub struct DataDirWatcher {
    task: JoinHandle<()>,
    first_index: watch::Receiver<bool>,
}

impl Drop for DataDirWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl DataDirWatcher {
    /// Lists the data directory and starts indexing it in the background, then keeps
    /// watching it. Returns at once: [`DataDirWatcher::first_index_done`] tells when every
    /// file found at start has been indexed.
    pub fn start(
        store: Arc<FsArtifactStore>,
        indexer: Arc<Indexer>,
        options: WatchOptions,
    ) -> Self {
        Self::start_with(store, indexer, options, None)
    }

    /// As [`DataDirWatcher::start`], from a restored index and saving it as it changes.
    ///
    /// Returns at once: setting up notifications and the first scan (one `stat` per file,
    /// which over tens of thousands of files takes a second or more) run in the background
    /// too, so a server restored from a saved index can answer from it meanwhile.
    /// Needs a Tokio runtime; a scan that fails is logged and retried at the next rescan.
    pub fn start_with(
        store: Arc<FsArtifactStore>,
        indexer: Arc<Indexer>,
        options: WatchOptions,
        persistence: Option<Persistence>,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let (first_done, first_index) = watch::channel(false);
        let (known, saving) = match persistence {
            Some(p) => (p.known, Some((p.snapshot, p.metadata))),
            None => (HashMap::new(), None),
        };
        let root = store.root().to_path_buf();
        let mut sync = Sync {
            store,
            indexer,
            concurrency: options.concurrency.max(1),
            known,
            saving,
            changed_at: None,
            saved_once: false,
            listed_at: Instant::now(),
            failed: BTreeSet::new(),
            queue: VecDeque::new(),
            queued: HashSet::new(),
            running: HashSet::new(),
            again: HashSet::new(),
            tasks: JoinSet::new(),
            first_done: Some(first_done),
            progress: Progress::default(),
        };
        let rescan_interval = options.rescan_interval;
        let task = tokio::spawn(async move {
            // Notifications start before the first scan, so nothing written during it is
            // missed. Watching a tree walks it: off the request threads.
            let notify = tokio::task::spawn_blocking(move || start_notify(&root, tx)).await;
            let _notify = match notify {
                Ok(Ok(watcher)) => Some(watcher),
                Ok(Err(e)) => {
                    tracing::warn!(
                        error = %e,
                        "file notifications are unavailable; changes are picked up by rescans every {}s",
                        rescan_interval.as_secs()
                    );
                    None
                }
                Err(e) => {
                    tracing::warn!(error = %e, "starting file notifications stopped; relying on rescans");
                    None
                }
            };
            if let Err(e) = sync.rescan().await {
                tracing::error!(error = %e, "could not scan the data directory; retrying at the next rescan");
            }
            let total = sync.queue.len();
            if total > 0 {
                tracing::info!("indexing {total} files in the background");
            }
            sync.progress.start(total);
            // Held until the watcher stops: dropping it ends notifications.
            sync.run(rx, options).await;
        });
        Self { task, first_index }
    }

    /// What turns true once every file present at start has been indexed (for a task of
    /// its own to wait on).
    pub fn first_index_signal(&self) -> watch::Receiver<bool> {
        self.first_index.clone()
    }

    /// Waits until every file present at start has been indexed.
    pub async fn first_index_done(&self) {
        let mut done = self.first_index.clone();
        let _ = done.wait_for(|done| *done).await;
    }
}

fn start_notify(
    root: &Path,
    tx: mpsc::UnboundedSender<notify::Result<notify::Event>>,
) -> notify::Result<RecommendedWatcher> {
    let config = notify::Config::default().with_follow_symlinks(false);
    let mut watcher = RecommendedWatcher::new(
        move |event| {
            // The receiver only goes away when the watcher is being dropped.
            let _ = tx.send(event);
        },
        config,
    )?;
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

/// What one indexing task reports back.
struct Indexed {
    key: String,
    outcome: Result<IndexOutcome, StoreError>,
    meta: Result<Option<ObjectMeta>, StoreError>,
}

/// Progress of a large batch, logged every few seconds.
#[derive(Default)]
struct Progress {
    total: usize,
    done: usize,
    started: Option<Instant>,
    last_report: Option<Instant>,
}

impl Progress {
    fn start(&mut self, total: usize) {
        *self = Progress {
            total,
            started: Some(Instant::now()),
            last_report: Some(Instant::now()),
            ..Progress::default()
        };
    }

    fn step(&mut self, left: usize) {
        self.done += 1;
        let total = self.total.max(self.done + left);
        let due = self
            .last_report
            .is_some_and(|at| at.elapsed() >= Duration::from_secs(2));
        if due && left > 0 {
            tracing::info!("indexing the data directory: {}/{total} files", self.done);
            self.last_report = Some(Instant::now());
        }
        if left == 0 {
            if let Some(started) = self.started.take() {
                if started.elapsed() >= Duration::from_secs(2) {
                    tracing::info!(
                        "indexed {} files in {:.1}s",
                        self.done,
                        started.elapsed().as_secs_f64()
                    );
                }
            }
            *self = Progress::default();
        }
    }
}

struct Sync {
    store: Arc<FsArtifactStore>,
    indexer: Arc<Indexer>,
    concurrency: usize,
    /// What the index was last told about each key.
    known: HashMap<String, ObjectMeta>,
    /// Keys whose indexing failed: retried on every rescan until it succeeds (a failed
    /// delete is in neither `known` nor on disk, so nothing else would bring it back).
    failed: BTreeSet<String>,
    /// Keys waiting for a task, in order.
    queue: VecDeque<String>,
    queued: HashSet<String>,
    /// Keys being indexed, and those among them that changed meanwhile.
    running: HashSet<String>,
    again: HashSet<String>,
    tasks: JoinSet<Indexed>,
    /// Told once the files found at start are all indexed.
    first_done: Option<watch::Sender<bool>>,
    progress: Progress,
    /// Where the index is saved, if it is.
    saving: Option<(Snapshot, Arc<LocalMetadataStore>)>,
    /// When the index last changed without being saved since.
    changed_at: Option<Instant>,
    saved_once: bool,
    /// When the indexer's deferred listings were last made.
    listed_at: Instant,
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
        self.pump();
        self.list_modules().await;
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
                Some(done) = self.tasks.join_next(), if !self.tasks.is_empty() => {
                    match done {
                        Ok(indexed) => self.finish(indexed),
                        Err(e) if e.is_cancelled() => {}
                        Err(e) => tracing::error!(error = %e, "an indexing task failed"),
                    }
                }
            }
            self.pump();
            self.list_modules().await;
            self.save_when_idle().await;
        }
    }

    /// Saves the index once nothing has been indexed for [`SAVE_AFTER`] (the rescan tick
    /// brings the loop back here), so the saved files agree with the saved records: no
    /// task is running, and keys that failed are left out (indexed again at the next start).
    async fn save_when_idle(&mut self) {
        let idle = self.queue.is_empty() && self.tasks.is_empty();
        // The first save comes as soon as the first index is complete; later ones wait for
        // a burst of changes to end.
        let due = self
            .changed_at
            .is_some_and(|at| !self.saved_once || at.elapsed() >= SAVE_AFTER);
        let Some((snapshot, metadata)) = &self.saving else {
            return;
        };
        if !idle || !due {
            return;
        }
        // The documents saved must be those of the records saved: none may wait.
        if let Err(e) = self.indexer.flush_documents().await {
            return tracing::warn!(error = %e, "could not save the index");
        }
        self.changed_at = None;
        self.saved_once = true;
        let saved = async {
            let records = tfreg_core::MetadataStore::scan(metadata.as_ref()).await?;
            let documents = metadata.documents().await?;
            Ok::<_, StoreError>((records, documents))
        };
        let (records, documents) = match saved.await {
            Ok(saved) => saved,
            Err(e) => return tracing::warn!(error = %e, "could not save the index"),
        };
        let mut files = self.known.clone();
        files.retain(|k, _| !self.failed.contains(k));
        let snapshot = snapshot.clone();
        let saved =
            tokio::task::spawn_blocking(move || snapshot.save(records, documents, &files)).await;
        match saved {
            Ok(Ok(())) => tracing::debug!("saved the index"),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "could not save the index; the next start indexes everything")
            }
            Err(e) => tracing::warn!(error = %e, "saving the index stopped"),
        }
    }

    /// Compares the whole directory with what the index knows and queues the differences.
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
        self.enqueue(changed);
        Ok(())
    }

    /// Queues the keys behind changed paths. A path may be a file, a new folder (whose
    /// files may have been written before its watch began), or a removed or renamed folder.
    /// Links are never followed: a link is a key of its own (refused by the indexer).
    async fn settle_paths(&mut self, paths: Vec<PathBuf>) -> Result<(), StoreError> {
        let mut keys = BTreeSet::new();
        for path in paths {
            let Some(key) = self.store.key_for(&path) else {
                continue;
            };
            let below = format!("{key}/");
            keys.extend(self.known.keys().filter(|k| k.starts_with(&below)).cloned());
            let kind = std::fs::symlink_metadata(&path).map(|m| m.file_type());
            match kind {
                Ok(kind) if kind.is_dir() => keys.extend(self.scan(path).await?.into_keys()),
                Ok(_) => {
                    keys.insert(key);
                }
                Err(_) if self.known.contains_key(&key) => {
                    keys.insert(key);
                }
                Err(_) => {}
            }
        }
        self.enqueue(keys);
        Ok(())
    }

    async fn scan(&self, dir: PathBuf) -> Result<HashMap<String, ObjectMeta>, StoreError> {
        let store = Arc::clone(&self.store);
        let found = tokio::task::spawn_blocking(move || store.scan_under_blocking(&dir))
            .await
            .map_err(|e| StoreError::with_source("the data directory scan stopped", e))??;
        Ok(found.into_iter().collect())
    }

    /// Queues keys for indexing; signing keys go first, so releases verify on the first pass.
    fn enqueue(&mut self, keys: impl IntoIterator<Item = String>) {
        let (signing, others): (Vec<String>, Vec<String>) =
            keys.into_iter().partition(|k| k.starts_with("keys/"));
        for key in signing.into_iter().rev() {
            if self.running.contains(&key) {
                self.again.insert(key);
            } else if self.queued.insert(key.clone()) {
                self.queue.push_front(key);
            }
        }
        for key in others {
            if self.running.contains(&key) {
                self.again.insert(key);
            } else if self.queued.insert(key.clone()) {
                self.queue.push_back(key);
            }
        }
        if self.progress.started.is_none() && self.queue.len() > 1 {
            self.progress.start(self.queue.len() + self.running.len());
        }
    }

    /// Starts tasks for queued keys, up to the concurrency bound.
    fn pump(&mut self) {
        while self.tasks.len() < self.concurrency {
            let Some(key) = self.queue.pop_front() else {
                break;
            };
            self.queued.remove(&key);
            self.running.insert(key.clone());
            let (indexer, store) = (Arc::clone(&self.indexer), Arc::clone(&self.store));
            self.tasks.spawn(async move {
                let outcome = indexer.index_key(&key).await;
                let entry = {
                    let (store, key) = (Arc::clone(&store), key.clone());
                    tokio::task::spawn_blocking(move || store.entry_meta(&key)).await
                };
                let meta = match entry {
                    Ok(Ok(meta)) => Ok(meta),
                    Ok(Err(e)) => Err(StoreError::with_source(format!("cannot read {key}"), e)),
                    Err(e) => Err(StoreError::with_source("a data directory read stopped", e)),
                };
                Indexed { key, outcome, meta }
            });
        }
    }

    /// Makes the documents (and module listings) of what was indexed since the last time
    /// (the indexer defers them, so a module of N versions is made again once per batch,
    /// not N times): every [`LIST_EVERY`] while a batch runs, and when it ends. Then tells
    /// who waits for the first index, once it is whole.
    async fn list_modules(&mut self) {
        let idle = self.queue.is_empty() && self.tasks.is_empty();
        if idle || self.listed_at.elapsed() >= LIST_EVERY {
            self.listed_at = Instant::now();
            match self.indexer.flush_documents().await {
                Ok(0) => {}
                Ok(_) => self.changed_at = Some(Instant::now()),
                Err(e) => {
                    tracing::error!(error = %e, "could not make the answers of what changed; will retry");
                }
            }
        }
        if idle {
            if let Some(done) = self.first_done.take() {
                let _ = done.send(true);
            }
        }
    }

    /// Records what a task did. Per-key failures are logged and left for the next rescan
    /// to retry (they stay out of `known`).
    fn finish(&mut self, indexed: Indexed) {
        let Indexed { key, outcome, meta } = indexed;
        self.running.remove(&key);
        self.changed_at = Some(Instant::now());
        // Once the data directory has been indexed at start (one summary line, by `tfreg
        // serve`), each change is worth a line of its own.
        if self.first_done.is_none() {
            match &outcome {
                Ok(IndexOutcome::Published(artifact)) => tracing::info!(key, "indexed {artifact}"),
                Ok(IndexOutcome::Unpublished(artifact)) => {
                    tracing::info!(key, "unpublished {artifact}")
                }
                _ => {}
            }
        }
        match (outcome, meta) {
            (Ok(_), Ok(Some(meta))) => {
                self.known.insert(key.clone(), meta);
            }
            (Ok(_), Ok(None)) => {
                self.known.remove(&key);
            }
            (Err(e), _) | (_, Err(e)) => {
                tracing::error!(key, error = %e, "could not index; will retry on the next rescan");
                self.known.remove(&key);
                self.failed.insert(key.clone());
            }
        }
        if self.again.remove(&key) {
            self.enqueue([key]);
        }
        self.progress.step(self.queue.len() + self.running.len());
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
