//! Keeps the index in step with the data directory. Filesystem notifications (`notify`)
//! bring changes within a fraction of a second; a periodic rescan is the safety net for
//! filesystems and situations where notifications are lost. Each change becomes the same
//! "key K changed" hint an S3 event notification gives the indexer Lambda.
//!
//! Keys are indexed concurrently, at most [`WatchOptions::concurrency`] at a time (by
//! default a few per core), each on its own task: a slow file (a large package, or a
//! hostile one running into its limits) never holds up another, and the server answers
//! from what is indexed meanwhile. A key that changes while it is being indexed is indexed
//! again when that run ends. Notifications are sifted where they arrive ([`events`]): the
//! server's own files never wake the loop, and gathering a burst never stops indexing
//! ([`sync`]).
//!
//! With [`Persistence`], the index is saved whenever the watcher has been idle for a moment
//! after a change, and every few seconds while it indexes ([`crate::snapshot`]; each save
//! appends what changed), and a start from a saved index indexes only what changed since,
//! or what a first index cut short had not reached.

mod events;
mod progress;
mod saving;
mod sync;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tfreg_core::store::ObjectMeta;
use tfreg_core::Indexer;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::fs_store::FsArtifactStore;
use crate::metadata::LocalMetadataStore;
use crate::snapshot::{Continuation, Snapshot};

pub use progress::{read_progress, IndexingProgress, PROGRESS_FILE};

/// Where the watcher keeps the index between runs.
pub struct Persistence {
    /// Where the index is saved.
    pub snapshot: Snapshot,
    /// The index it saves.
    pub metadata: Arc<LocalMetadataStore>,
    /// The files as the restored index knows them (empty without a saved index).
    pub known: HashMap<String, ObjectMeta>,
    /// The restored index's journal, to go on appending to; none when the first save is
    /// to write the index whole (nothing was restored, or what was restored was changed
    /// without the index's change feed seeing it).
    pub journal: Option<Continuation>,
}

/// How the watcher finds and indexes changes.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// How often the whole directory is compared with the index.
    pub rescan_interval: Duration,
    /// How long to gather notifications before indexing them, so a burst of writes to one
    /// file is indexed once. Indexing goes on meanwhile.
    pub debounce: Duration,
    /// How many keys are indexed at once.
    pub concurrency: usize,
    /// How often the index is saved while a batch runs (with [`Persistence`]), so a
    /// first index cut short resumes from there.
    pub checkpoint_every: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self {
            rescan_interval: Duration::from_secs(10),
            debounce: Duration::from_millis(150),
            concurrency: default_concurrency(),
            checkpoint_every: Duration::from_secs(5),
        }
    }
}

/// Keys indexed at once: a few per core, since a file's indexing alternates between
/// hashing (on the blocking pool, never on the threads that answer requests) and waiting
/// for the disk; bounded so a large machine does not open hundreds of files at once.
pub fn default_concurrency() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    (cores * 4).clamp(8, 64)
}

/// Runs until dropped.
pub struct DataDirWatcher {
    task: JoinHandle<()>,
    first_index: watch::Receiver<bool>,
    #[cfg(test)]
    noticed: Arc<std::sync::Mutex<Vec<std::path::PathBuf>>>,
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
        let notified = Arc::clone(&store);
        let mut sync = sync::Sync::new(store, indexer, &options, persistence, first_done);
        #[cfg(test)]
        let noticed = Arc::clone(&sync.noticed);
        let rescan_interval = options.rescan_interval;
        let task = tokio::spawn(async move {
            // Notifications start before the first scan, so nothing written during it is
            // missed. Watching a tree walks it: off the request threads.
            let notify = tokio::task::spawn_blocking(move || events::start(notified, tx)).await;
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
            sync.first_scan().await;
            // Held until the watcher stops: dropping it ends notifications.
            sync.run(rx, options).await;
        });
        Self {
            task,
            first_index,
            #[cfg(test)]
            noticed,
        }
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
