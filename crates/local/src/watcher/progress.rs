//! Progress of a large batch of files: logged every few seconds and, for a server, kept in
//! `DATA/.tfreg/indexing.json` meanwhile, so `tfreg status` can say that the running
//! server has not indexed everything yet. The file is removed when the batch ends; one
//! left behind by a server that stopped goes stale and is ignored.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use crate::fs_store::STATE_DIR_NAME;

/// How often progress is logged (and its file rewritten) while a batch runs.
const REPORT_EVERY: Duration = Duration::from_secs(2);

/// The progress file's name, in the state folder.
pub const PROGRESS_FILE: &str = "indexing.json";

/// A progress file older than this was left by a server that no longer indexes.
const STALE_AFTER: Duration = Duration::from_secs(20);

/// How far a batch of files is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexingProgress {
    /// Files indexed.
    pub done: usize,
    /// Files in the batch (it grows when files are added meanwhile).
    pub total: usize,
}

/// What a running server says of the batch it is indexing in the data directory `data`, if
/// it is indexing one (a file it has not rewritten lately is not believed).
pub fn read_progress(data: &Path) -> Option<IndexingProgress> {
    let path = data.join(STATE_DIR_NAME).join(PROGRESS_FILE);
    let meta = std::fs::metadata(&path).ok()?;
    let age = SystemTime::now()
        .duration_since(meta.modified().ok()?)
        .ok()?;
    if age > STALE_AFTER || meta.len() > 4096 {
        return None;
    }
    serde_json::from_slice(&std::fs::read(&path).ok()?).ok()
}

#[derive(Default)]
pub(super) struct Progress {
    total: usize,
    done: usize,
    started: Option<Instant>,
    last_report: Option<Instant>,
    /// Where progress is kept for `tfreg status`, if it is.
    file: Option<PathBuf>,
}

impl Progress {
    /// Progress kept in the state folder of the data directory `data` too.
    pub(super) fn kept_in(data: &Path) -> Self {
        Progress {
            file: Some(data.join(STATE_DIR_NAME).join(PROGRESS_FILE)),
            ..Progress::default()
        }
    }

    pub(super) fn start(&mut self, total: usize) {
        *self = Progress {
            total,
            started: Some(Instant::now()),
            last_report: Some(Instant::now()),
            file: self.file.take(),
            ..Progress::default()
        };
        self.keep();
    }

    /// Whether a batch is being counted.
    pub(super) fn running(&self) -> bool {
        self.started.is_some()
    }

    /// One file done, with `left` still queued or running.
    pub(super) fn step(&mut self, left: usize) {
        self.done += 1;
        self.total = self.total.max(self.done + left);
        let due = self
            .last_report
            .is_some_and(|at| at.elapsed() >= REPORT_EVERY);
        if due && left > 0 {
            tracing::info!(
                "indexing the data directory: {}/{} files",
                self.done,
                self.total
            );
            self.last_report = Some(Instant::now());
            self.keep();
        }
        if left == 0 {
            if let Some(started) = self.started.take() {
                if started.elapsed() >= REPORT_EVERY {
                    tracing::info!(
                        "indexed {} files in {:.1}s",
                        self.done,
                        started.elapsed().as_secs_f64()
                    );
                }
            }
            if let Some(file) = &self.file {
                let _ = std::fs::remove_file(file);
            }
            *self = Progress {
                file: self.file.take(),
                ..Progress::default()
            };
        }
    }

    /// Rewrites the progress file (a few dozen bytes; a failure only costs `tfreg status`
    /// its line).
    fn keep(&self) {
        let (Some(file), true) = (&self.file, self.total > 0) else {
            return;
        };
        let progress = IndexingProgress {
            done: self.done,
            total: self.total,
        };
        let Ok(json) = serde_json::to_vec(&progress) else {
            return;
        };
        let temporary = file.with_extension("json.tmp");
        if std::fs::write(&temporary, json).is_ok() {
            let _ = std::fs::rename(&temporary, file);
        }
    }
}
