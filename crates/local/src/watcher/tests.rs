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
