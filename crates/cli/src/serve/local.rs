//! The local shape's side of `tfreg serve`: the data directory indexed (from the index saved
//! at the last stop, when there is one), watched for changes, and what it serves kept in
//! `served.json` and `served/` for `tfreg publish` ([`crate::served`]); tokens in its state
//! folder.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tfreg_core::signing::UrlSigner;
use tfreg_core::tokens::TokenStore;
use tfreg_core::{Downloads, Hostname, Indexer, Registry};
use tfreg_local::{
    Commits, DataDirWatcher, FileTokenStore, FsArtifactStore, LocalMetadataStore, Persistence,
    Snapshot, StateDir, WatchOptions,
};
use tokio::sync::watch;

use crate::served::{ServerInfo, Snapshots};

/// How long the server waits for the first index of the data directory before it starts
/// answering from what is indexed so far: long enough for a small data directory to be
/// whole from the first answer; a large one is served as it is indexed (what is not
/// indexed yet is answered "not found yet", [`super::indexing`]).
const FIRST_INDEX_WAIT: Duration = Duration::from_secs(2);

/// With a saved index, how long the server waits for the check of what changed while it
/// was down before it answers from the saved index (and takes the changes in as they are
/// found): long enough for a small data directory to be exact from the first answer, short
/// enough that a restart answers within a second however many files there are.
const RESTORED_WAIT: Duration = Duration::from_millis(250);

/// The data directory, being indexed.
pub struct Started {
    /// What the server answers from.
    pub registry: Registry,
    /// How its files reach clients: URLs this server signs and answers.
    pub downloads: Downloads,
    /// The data directory's files (read, and written by the upstream cache).
    pub artifacts: Arc<FsArtifactStore>,
    pub watching: Watching,
}

/// What keeps the index current while the server runs; dropped, it stops (the served file
/// first, then the watcher).
pub struct Watching {
    _snapshots: Snapshots,
    watcher: DataDirWatcher,
    /// The index was restored from the one saved at the last stop.
    restored: bool,
}

/// Starts indexing and watching the data directory `data` (canonical), whose download URLs
/// `signer` signs; `hostname` is the registry's, `server` what `served.json` says of it.
pub async fn start(
    data: &Path,
    signer: &Arc<UrlSigner>,
    hostname: Hostname,
    server: ServerInfo,
    rescan_interval: Duration,
    started: Instant,
) -> anyhow::Result<Started> {
    // Pins and kept bytes are made durable a batch at a time, by the watcher, before the
    // documents that serve them.
    let commits = Arc::new(Commits::new(data.to_path_buf()));
    let artifacts =
        Arc::new(FsArtifactStore::new(data.to_path_buf()).with_commits(commits.clone()));
    let downloads = Downloads::served(signer.clone(), artifacts.clone());
    let metadata = Arc::new(LocalMetadataStore::open(data, true)?.with_commits(commits));
    let indexer = Arc::new(
        Indexer::new(metadata.clone(), artifacts.clone())
            .with_hostname(Some(hostname.clone()))
            // The watcher makes documents and listings after each batch of files.
            .with_deferred_documents(),
    );
    tracing::info!(data = %data.display(), "indexing the data directory");
    let watch = WatchOptions {
        rescan_interval,
        ..WatchOptions::default()
    };
    // The index saved at the last stop, if any: then only what changed since is indexed
    // before serving.
    let snapshot = Snapshot::of(data);
    let loaded = snapshot.load();
    let restored = loaded.is_some();
    let (known, journal) = match loaded {
        Some(restored) => {
            tracing::info!(
                records = restored.records.len(),
                files = restored.files.len(),
                "restored the saved index; indexing only what changed since"
            );
            let made_again = restored.documents.is_empty() && !restored.records.is_empty();
            metadata.restore(restored.records).await?;
            metadata.restore_documents(restored.documents).await?;
            // A saved index from before documents: they are made from its records.
            if made_again {
                indexer.rebuild_all_documents().await?;
            }
            // Documents made now are in no journal: the first save writes the index whole.
            let journal = restored.journal.filter(|_| !made_again);
            (restored.files, journal)
        }
        None => Default::default(),
    };
    let persistence = Persistence {
        snapshot,
        metadata: metadata.clone(),
        known,
        journal,
    };
    let watcher = DataDirWatcher::start_with(artifacts.clone(), indexer, watch, Some(persistence));
    // What is served, for `tfreg publish` to wait on, from the first file indexed.
    let snapshots = crate::served::start(
        data,
        metadata.clone(),
        Registry::new(metadata.clone(), downloads.clone()).with_hostname(hostname.clone()),
        server,
    )?;
    let registry = Registry::new(metadata, downloads.clone()).with_hostname(hostname);
    log_first_index(&watcher, registry.clone(), started);
    Ok(Started {
        registry,
        downloads,
        artifacts,
        watching: Watching {
            _snapshots: snapshots,
            watcher,
            restored,
        },
    })
}

/// One line once the data directory is indexed, instead of one per file.
fn log_first_index(watcher: &DataDirWatcher, registry: Registry, started: Instant) {
    let mut indexed = watcher.first_index_signal();
    tokio::spawn(async move {
        if indexed.wait_for(|done| *done).await.is_err() {
            return;
        }
        match registry.counts().await {
            Ok(counts) => tracing::info!(
                "indexed {} modules, {} providers in {:.1}s",
                counts.modules,
                counts.providers,
                started.elapsed().as_secs_f64()
            ),
            Err(e) => tracing::warn!(error = %e, "could not count what is indexed"),
        }
    });
}

impl Watching {
    /// What turns true once the data directory's first index is whole.
    pub fn first_index_signal(&self) -> watch::Receiver<bool> {
        self.watcher.first_index_signal()
    }

    /// Waits until the first index is done, or not much longer: answering from a complete
    /// index is worth a short wait, a slow or hostile file is worth none. False when `stop`
    /// turned meanwhile.
    pub async fn first_index(&self, mut stop: watch::Receiver<bool>) -> bool {
        let wait = if self.restored {
            RESTORED_WAIT
        } else {
            FIRST_INDEX_WAIT
        };
        tokio::select! {
            _ = self.watcher.first_index_done() => true,
            _ = tokio::time::sleep(wait) => {
                if self.restored {
                    tracing::info!("serving from the saved index while the data directory is checked for what changed meanwhile");
                } else {
                    tracing::info!(
                        "serving what is indexed so far while the first index of the data directory runs; what is not indexed yet is answered 503 (not found yet) until it is"
                    );
                }
                true
            }
            _ = stop.wait_for(|stop| *stop) => false,
        }
    }
}

/// The data directory's tokens. Unless the registry is public, long-expired ones are purged
/// now, and uses ("last used") are written together, at most about once a minute.
pub fn tokens(state_dir: &StateDir, public: bool) -> Arc<dyn TokenStore> {
    let tokens = Arc::new(FileTokenStore::new(state_dir.path()));
    if public {
        return tokens;
    }
    if let Err(e) = tokens.purge() {
        tracing::warn!(error = %e, "could not purge long-expired tokens");
    }
    let flushing = Arc::clone(&tokens);
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(30));
        loop {
            every.tick().await;
            let tokens = Arc::clone(&flushing);
            let _ = tokio::task::spawn_blocking(move || tokens.flush_uses()).await;
        }
    });
    tokens
}
