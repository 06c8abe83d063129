//! The watcher's loop: what wakes it, and that waking never stops indexing.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tfreg_core::memory::MemoryMetadataStore;
use tfreg_core::Indexer;

use super::{DataDirWatcher, WatchOptions};
use crate::fs_store::{FsArtifactStore, STATE_DIR_NAME};

/// Far longer than any of these tests takes: only a loop that stopped runs into it.
const STUCK: Duration = Duration::from_secs(120);

fn watcher(root: &Path, concurrency: usize) -> DataDirWatcher {
    let store = Arc::new(FsArtifactStore::new(root.to_path_buf()));
    let indexer = Arc::new(Indexer::new(
        Arc::new(MemoryMetadataStore::new()),
        store.clone(),
    ));
    let options = WatchOptions {
        rescan_interval: Duration::from_secs(3600),
        debounce: Duration::from_millis(150),
        concurrency,
        checkpoint_every: Duration::from_secs(5),
    };
    DataDirWatcher::start(store, indexer, options)
}

fn data_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    (dir, root)
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let waited = tokio::time::timeout(STUCK, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_own_writes_never_wake_the_watcher() {
    // Given a watched data directory, indexed
    let (_dir, root) = data_dir();
    let watcher = watcher(&root, 2);
    tokio::time::timeout(STUCK, watcher.first_index_done())
        .await
        .unwrap();

    // When the server writes and replaces its own files, then a publisher copies a file in
    let state = root.join(STATE_DIR_NAME);
    for folder in ["kept", "pins", "spool"] {
        std::fs::create_dir_all(state.join(folder)).unwrap();
        for n in 0..20 {
            let file = state.join(folder).join(format!("{n}.tmp"));
            std::fs::write(&file, b"state").unwrap();
            std::fs::rename(&file, state.join(folder).join(n.to_string())).unwrap();
        }
    }
    std::fs::write(state.join("index.json"), b"{}").unwrap();
    let published = root.join("notes.txt");
    std::fs::write(&published, b"hello").unwrap();

    // Then the publisher's file reaches the loop (so every earlier notification has been
    // seen), and none of the server's own did
    let noticed = Arc::clone(&watcher.noticed);
    until("the published file never reached the watcher", || {
        noticed.lock().unwrap().contains(&published)
    })
    .await;
    let noticed = noticed.lock().unwrap().clone();
    assert!(
        noticed.iter().all(|path| !path.starts_with(&state)),
        "the state folder woke the watcher: {noticed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexing_goes_on_while_notifications_keep_arriving() {
    // Given files to index, one at a time
    let (_dir, root) = data_dir();
    for n in 0..40 {
        let folder = root.join(format!("folder{n}"));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("file.txt"), b"x").unwrap();
    }
    // and a publisher who keeps writing a file, more often than the notifications of a
    // burst are gathered
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, busy) = (Arc::clone(&stop), root.join("busy.txt"));
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::fs::write(&busy, n.to_string()).unwrap();
                n += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };

    // When the watcher starts
    let watcher = watcher(&root, 1);

    // Then the first index completes while the writes go on
    let done = tokio::time::timeout(STUCK, watcher.first_index_done()).await;
    // (a short first index may end before the first notification of the writes arrives:
    // the writes go on until one has)
    let busy = root.join("busy.txt");
    let noticed = tokio::time::timeout(STUCK, async {
        while !watcher.noticed.lock().unwrap().contains(&busy) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let still_writing = !writer.is_finished();
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert!(
        done.is_ok(),
        "the first index stalled while notifications arrived"
    );
    assert!(still_writing);
    assert!(noticed.is_ok(), "the writes were never noticed");
}

#[test]
fn a_servers_batch_is_told_in_its_state_folder_until_it_ends() {
    use super::progress::Progress;
    use super::{read_progress, IndexingProgress};
    // Given a server's watcher starting a batch of three files
    let (_dir, root) = data_dir();
    std::fs::create_dir_all(root.join(STATE_DIR_NAME)).unwrap();
    let mut progress = Progress::kept_in(&root);
    progress.start(3);
    // Then the state folder says so
    assert_eq!(
        read_progress(&root),
        Some(IndexingProgress {
            done: 0,
            total: 3,
            per_second: None,
            seconds_left: None
        })
    );
    // When the batch ends, it no longer does
    for left in [2, 1, 0] {
        progress.step(left);
    }
    assert_eq!(read_progress(&root), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_index_cut_short_resumes_from_its_last_checkpoint() {
    use crate::metadata::LocalMetadataStore;
    use crate::snapshot::Snapshot;
    use tfreg_core::store::partition;
    use tfreg_core::MetadataReader as _;

    const FILES: usize = 1000;
    // Given a data directory of many files (refused archives: each leaves a record)
    let (_dir, root) = data_dir();
    std::fs::create_dir_all(root.join(STATE_DIR_NAME)).unwrap();
    let folder = root.join("modules/acme/many/aws");
    std::fs::create_dir_all(&folder).unwrap();
    for n in 0..FILES {
        std::fs::write(folder.join(format!("1.0.{n}.tar.gz")), b"not an archive").unwrap();
    }
    let start = |restored: Option<crate::snapshot::Restored>, checkpoint_every| {
        let store = Arc::new(FsArtifactStore::new(root.clone()));
        let metadata = Arc::new(LocalMetadataStore::open(&root, true).unwrap());
        let (known, journal, records) = match restored {
            Some(r) => (r.files, r.journal, r.records),
            None => Default::default(),
        };
        let indexer = Arc::new(Indexer::new(metadata.clone(), store.clone()));
        let persistence = super::Persistence {
            snapshot: Snapshot::of(&root),
            metadata: metadata.clone(),
            known,
            journal,
        };
        let options = WatchOptions {
            rescan_interval: Duration::from_secs(3600),
            debounce: Duration::from_millis(150),
            concurrency: 1,
            checkpoint_every,
        };
        (metadata, records, store, indexer, options, persistence)
    };

    // When its first index is stopped once some checkpoints are saved
    let (_, _, store, indexer, options, persistence) = start(None, Duration::ZERO);
    let watcher = DataDirWatcher::start_with(store, indexer, options, Some(persistence));
    let journal = root.join(STATE_DIR_NAME).join("index.journal");
    until("no checkpoint was saved", || {
        std::fs::metadata(&journal).is_ok_and(|m| m.len() > 10_000)
    })
    .await;
    drop(watcher);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let restored = Snapshot::of(&root).load().expect("a saved index");
    let saved = restored.files.len();
    assert!(
        (1..FILES).contains(&saved),
        "{saved} of {FILES} files saved as indexed"
    );

    // Then a new start restores what was saved and indexes only the rest
    let (metadata, records, store, indexer, options, persistence) =
        start(Some(restored), Duration::from_secs(5));
    metadata.restore(records).await.unwrap();
    let feed = metadata.changes();
    let watcher = DataDirWatcher::start_with(store, indexer, options, Some(persistence));
    tokio::time::timeout(STUCK, watcher.first_index_done())
        .await
        .unwrap();
    let indexed_again = feed
        .take()
        .records
        .iter()
        .filter(|id| id.partition == partition::PROBLEMS)
        .count();
    let left = FILES - saved;
    assert!(
        (left..=left + 1).contains(&indexed_again),
        "{indexed_again} files indexed at the second start; {left} were left"
    );
    let problems = metadata.query(partition::PROBLEMS).await.unwrap();
    assert_eq!(problems.len(), FILES, "every file is in the index");
}
