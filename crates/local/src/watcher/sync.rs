//! The watcher's loop: notices gathered for a moment (a burst of writes to one file is
//! indexed once) while indexing tasks keep being joined and started, so gathering never
//! holds up indexing; rescans; documents made once per subject per batch; the index saved
//! when idle.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tfreg_core::store::ObjectMeta;
use tfreg_core::{IndexOutcome, Indexer, StoreError};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::events::Notice;
use super::progress::Progress;
use super::saving::Saving;
use super::WatchOptions;
use crate::fs_store::FsArtifactStore;

/// How long the watcher stays idle after a change before it saves the index.
const SAVE_AFTER: Duration = Duration::from_secs(2);

/// How often modules indexed meanwhile are listed while a batch of files is indexed.
const LIST_EVERY: Duration = Duration::from_secs(2);

/// Notices gathered since the last were settled, until a deadline set by the first.
#[derive(Default)]
struct Gathered {
    paths: Vec<PathBuf>,
    rescan: bool,
    until: Option<tokio::time::Instant>,
}

impl Gathered {
    fn add(&mut self, notice: Notice, debounce: Duration) {
        match notice {
            Notice::Paths(paths) => self.paths.extend(paths),
            Notice::Rescan => self.rescan = true,
        }
        self.until
            .get_or_insert_with(|| tokio::time::Instant::now() + debounce);
    }
}

/// Sleeps until `at` (never returns without one: the branch is disabled then).
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// What one indexing task reports back.
struct Indexed {
    key: String,
    outcome: Result<IndexOutcome, StoreError>,
    meta: Result<Option<ObjectMeta>, StoreError>,
}

pub(super) struct Sync {
    store: Arc<FsArtifactStore>,
    indexer: Arc<Indexer>,
    concurrency: usize,
    /// How often the index is saved while a batch runs.
    checkpoint_every: Duration,
    /// What the index was last told about each key (ordered, so the keys under a folder
    /// are one range).
    known: BTreeMap<String, ObjectMeta>,
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
    saving: Option<Saving>,
    /// When the index last changed without being saved since.
    changed_at: Option<Instant>,
    saved_once: bool,
    /// When the indexer's deferred listings were last made.
    listed_at: Instant,
    /// Notifications were lost while a batch ran: a rescan follows its end.
    rescan_due: bool,
    /// Every path that reached the loop, for tests.
    #[cfg(test)]
    pub(super) noticed: Arc<std::sync::Mutex<Vec<PathBuf>>>,
}

impl Sync {
    pub(super) fn new(
        store: Arc<FsArtifactStore>,
        indexer: Arc<Indexer>,
        options: &WatchOptions,
        persistence: Option<super::Persistence>,
        first_done: watch::Sender<bool>,
    ) -> Self {
        // A server's watcher (one that saves the index) says how far a batch is in its
        // state folder too.
        let (known, saving, progress) = match persistence {
            Some(p) => (
                p.known
                    .iter()
                    .map(|(k, m)| (k.clone(), m.clone()))
                    .collect(),
                Some(Saving::new(&p)),
                Progress::kept_in(store.root()),
            ),
            None => (BTreeMap::new(), None, Progress::default()),
        };
        Self {
            store,
            indexer,
            concurrency: options.concurrency.max(1),
            checkpoint_every: options.checkpoint_every,
            known,
            saving,
            changed_at: None,
            saved_once: false,
            listed_at: Instant::now(),
            rescan_due: false,
            failed: BTreeSet::new(),
            queue: VecDeque::new(),
            queued: HashSet::new(),
            running: HashSet::new(),
            again: HashSet::new(),
            tasks: JoinSet::new(),
            first_done: Some(first_done),
            progress,
            #[cfg(test)]
            noticed: Default::default(),
        }
    }

    /// Scans the data directory at start and counts what it queued.
    pub(super) async fn first_scan(&mut self) {
        if let Err(e) = self.rescan().await {
            tracing::error!(error = %e, "could not scan the data directory; retrying at the next rescan");
        }
        let total = self.queue.len();
        if total > 0 {
            tracing::info!("indexing {total} files in the background");
        }
        self.progress.start(total);
    }

    pub(super) async fn run(
        mut self,
        mut rx: mpsc::UnboundedReceiver<Notice>,
        options: WatchOptions,
    ) {
        let mut rescan = tokio::time::interval(options.rescan_interval);
        rescan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        rescan.tick().await; // the first tick is immediate; start() just scanned
        let mut gathered = Gathered::default();
        self.pump();
        self.list_modules().await;
        loop {
            let settle_at = gathered.until;
            tokio::select! {
                notice = rx.recv() => {
                    let Some(notice) = notice else { return };
                    #[cfg(test)]
                    if let Notice::Paths(paths) = &notice {
                        self.noticed.lock().unwrap().extend(paths.iter().cloned());
                    }
                    gathered.add(notice, options.debounce);
                }
                // The burst is over: index what it touched.
                _ = sleep_until(settle_at), if settle_at.is_some() => {
                    let Gathered { paths, rescan, .. } = std::mem::take(&mut gathered);
                    let busy = !self.idle();
                    let result = match rescan {
                        // Notifications were lost (the kernel's queue overflowed, as a
                        // large first index can make it): every file is looked at again
                        // once the batch is done; a walk meanwhile would find mostly the
                        // keys already queued.
                        true if busy => {
                            self.rescan_due = true;
                            self.settle_paths(paths).await
                        }
                        true => self.rescan().await,
                        false => self.settle_paths(paths).await,
                    };
                    if let Err(e) = result {
                        tracing::error!(error = %e, "could not index changes in the data directory");
                    }
                }
                // The safety net waits for a batch to end: a rescan meanwhile walks every
                // file again, and would index again every key being indexed.
                _ = rescan.tick(), if self.idle() => {
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
            self.save().await;
            if self.rescan_due && self.idle() {
                self.rescan_due = false;
                if let Err(e) = self.rescan().await {
                    tracing::error!(error = %e, "could not rescan the data directory");
                }
                self.pump();
            }
        }
    }

    /// Saves the index: once nothing has been indexed for [`SAVE_AFTER`] (the rescan tick
    /// brings the loop back here), and every `checkpoint_every` while a batch runs. The
    /// saved files agree with the saved records: a file is saved as indexed only once its
    /// task has ended (a record written by a task still running is saved without its file,
    /// which the next start indexes again), and keys that failed are left out.
    async fn save(&mut self) {
        let idle = self.idle();
        let Some(saving) = &self.saving else {
            return;
        };
        // The first save comes as soon as the first index is complete; later ones wait for
        // a burst of changes to end.
        let due = match self.changed_at {
            None => false,
            Some(at) if idle => !self.saved_once || at.elapsed() >= SAVE_AFTER,
            Some(_) => saving.saved_at.elapsed() >= self.checkpoint_every,
        };
        if !due {
            return;
        }
        // The documents saved must be those of the records saved, and the pins and kept
        // bytes of the files saved durable: none may wait.
        if let Err(e) = self.flush_documents().await {
            return tracing::warn!(error = %e, "could not save the index");
        }
        self.changed_at = None;
        if idle {
            self.saved_once = true;
        }
        if let Some(saving) = &mut self.saving {
            saving.save(&self.known, &self.failed).await;
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
            keys.extend(
                self.known
                    .range(below.clone()..)
                    .map(|(k, _)| k)
                    .take_while(|k| k.starts_with(&below))
                    .cloned(),
            );
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
        if !self.progress.running() && self.queue.len() > 1 {
            self.progress.start(self.queue.len() + self.running.len());
        }
    }

    /// Starts tasks for queued keys, up to the concurrency bound. Signing keys and policy
    /// files (`keys/`, queued first) are indexed before anything else starts, so no module
    /// version is judged, and served, under a namespace policy not yet read.
    fn pump(&mut self) {
        while self.tasks.len() < self.concurrency {
            let Some(next) = self.queue.front() else {
                break;
            };
            let keys_running =
                !self.tasks.is_empty() && self.running.iter().any(|k| k.starts_with("keys/"));
            if keys_running && !next.starts_with("keys/") {
                break;
            }
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

    /// Nothing is queued or being indexed: a batch is over.
    fn idle(&self) -> bool {
        self.queue.is_empty() && self.tasks.is_empty()
    }

    /// Makes the pins and kept bytes of what was indexed durable (one group commit, when the
    /// store stages them), then its documents: nothing is served before it is durable.
    async fn flush_documents(&self) -> Result<usize, StoreError> {
        self.store.commit().await?;
        self.indexer.flush_documents().await
    }

    /// Makes the documents (and module listings) of what was indexed since the last time
    /// (the indexer defers them, so a module of N versions is made again once per batch,
    /// not N times): every [`LIST_EVERY`] while a batch runs, and when it ends. Then tells
    /// who waits for the first index, once it is whole.
    async fn list_modules(&mut self) {
        let idle = self.idle();
        if idle || self.listed_at.elapsed() >= LIST_EVERY {
            self.listed_at = Instant::now();
            match self.flush_documents().await {
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
        if let Some(saving) = &mut self.saving {
            saving.file_changed(&key);
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
