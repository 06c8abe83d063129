//! The server's side: [`start`] runs the keeper on a thread of its own that builds every file
//! at start, then follows the index's changes and refreshes time-dependent verdicts, a slice
//! at a time; the [`Snapshots`] it returns stops it and sets the files aside when dropped.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tfreg_core::Registry;
use tfreg_local::changes::ChangeFeed;
use tfreg_local::metadata::LocalMetadataStore;

use super::build::Keeper;
use super::disk::set_aside;
use super::files::{dir, path, Item, ServerInfo, HEARTBEAT};

/// How often the index's changes are taken while little else is to be done: taking none
/// costs a lock, and a publisher waits at most this long more.
const POLL: Duration = Duration::from_millis(100);
/// Verdicts that depend on time (a key's expiry) are refreshed this often.
const REFRESH: Duration = Duration::from_secs(60);
/// The longest stretch of a full pass between two looks at the index's changes: a change
/// waits at most this long for a pass (then the rest, twice as long, is the pass's).
const SLICE: Duration = Duration::from_millis(50);

/// Keeps the files while it lives; removes them when dropped.
pub struct Snapshots {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    data: PathBuf,
    run: String,
}

impl Drop for Snapshots {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // `served.json` first: without it, nothing under `served/` is believed. Deleting
        // tens of thousands of files would hold up the stop: the folder is set aside in one
        // rename, and the next start deletes it.
        let _ = std::fs::remove_file(path(&self.data));
        let _ = set_aside(&dir(&self.data), &format!("{}-stop", self.run));
    }
}

/// Starts keeping the files of the data directory `data` from `metadata`, read through
/// `registry`.
///
/// It runs on a thread of its own: the first build and the periodic refresh read every
/// module and provider, which at tens of thousands of files takes long enough to hold up
/// requests if it shared their threads.
pub fn start(
    data: &Path,
    metadata: Arc<LocalMetadataStore>,
    registry: Registry,
    server: ServerInfo,
) -> std::io::Result<Snapshots> {
    // Subscribed before anything is read, so no change falls between the first build and
    // the feed.
    let feed = metadata.changes();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let keeper = Keeper::new(data, metadata, registry, server);
    let run = keeper.run.clone();
    let thread = std::thread::Builder::new()
        .name("served-files".into())
        .spawn(move || {
            runtime.block_on(async move {
                tokio::select! {
                    _ = keep(keeper, feed) => {}
                    _ = stopped => {}
                }
            });
        })?;
    Ok(Snapshots {
        stop: Some(stop),
        thread: Some(thread),
        data: data.to_path_buf(),
        run,
    })
}

async fn keep(mut keeper: Keeper, feed: ChangeFeed) {
    let mut warned = false;
    let dir = keeper.dir.clone();
    let warn = |warned: &mut bool, e: &dyn std::fmt::Display| {
        if !*warned {
            tracing::warn!(path = %dir.display(), error = %e, "cannot keep the files `tfreg publish` waits on; publishing works, waiting for it does not");
            *warned = true;
        }
    };
    if let Err(e) = keeper.begin() {
        warn(&mut warned, &e);
    }
    let mut beat = Instant::now();
    // The full pass under way (the first build, then each refresh), and when the last one
    // ended.
    let mut pass = loop {
        match keeper.everything().await {
            Ok(items) => break items,
            Err(e) => {
                warn(&mut warned, &e);
                tokio::time::sleep(POLL).await;
            }
        }
    };
    let mut passed: Option<Instant> = None;
    // Items whose rebuild failed, tried again next time round.
    let mut dirty: BTreeSet<Item> = BTreeSet::new();
    loop {
        let working = Instant::now();
        let mut failed = false;
        // What changed first, whatever a pass is doing: a publisher waits on it.
        dirty.extend(keeper.touched(&feed.take()));
        for item in std::mem::take(&mut dirty) {
            if let Err(e) = keeper.refresh(&item).await {
                warn(&mut warned, &e);
                failed = true;
                dirty.insert(item);
            }
        }
        let slice = Instant::now();
        while slice.elapsed() < SLICE {
            let Some(item) = pass.pop_front() else { break };
            if let Err(e) = keeper.refresh(&item).await {
                warn(&mut warned, &e);
                failed = true;
                dirty.insert(item);
            }
        }
        match passed {
            None if pass.is_empty() => passed = Some(Instant::now()),
            Some(at) if at.elapsed() >= REFRESH => {
                pass = keeper.subjects();
                passed = None;
            }
            _ => {}
        }
        if beat.elapsed() >= HEARTBEAT {
            match keeper.heartbeat() {
                Ok(()) => beat = Instant::now(),
                Err(e) => {
                    warn(&mut warned, &e);
                    failed = true;
                }
            }
        }
        if !failed {
            warned = false;
        }
        // At most a third of one core, however much there is to do: a pass over every
        // module and provider goes on a slice at a time, and the files lag a little more
        // while the index keeps changing (a large first index).
        tokio::time::sleep((working.elapsed() * 2).max(POLL)).await;
    }
}
