//! Progress of a large batch of files: logged every few seconds and, for a server, kept in
//! `DATA/.tfreg/indexing.json` meanwhile, so `tfreg status` can say that the running
//! server has not indexed everything yet, how fast it goes and about how long is left. The
//! file is removed when the batch ends; one left behind by a server that stopped goes stale
//! and is ignored.
//!
//! Every [`MILESTONE`] files, a `debug` event of the target `tfreg::index_progress` says how
//! long the batch has run: `make bench` reads them to compare the cost of the first
//! thousand files with the last (a per-file cost that grows with the index shows as a
//! ratio).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use crate::fs_store::STATE_DIR_NAME;

/// How often progress is logged (and its file rewritten) while a batch runs.
const REPORT_EVERY: Duration = Duration::from_secs(2);

/// The progress file's name, in the state folder.
pub const PROGRESS_FILE: &str = "indexing.json";

/// Files between two `tfreg::index_progress` events.
pub const MILESTONE: usize = 1000;

/// A progress file older than this was left by a server that no longer indexes.
const STALE_AFTER: Duration = Duration::from_secs(20);

/// How far a batch of files is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexingProgress {
    /// Files indexed.
    pub done: usize,
    /// Files in the batch (it grows when files are added meanwhile).
    pub total: usize,
    /// Files indexed per second, over the last few seconds (absent before the first
    /// report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_second: Option<u64>,
    /// Seconds left at that pace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_left: Option<u64>,
}

impl IndexingProgress {
    /// `3518/23013 files, 1750 files/s, about 11 s left`
    pub fn describe(&self) -> String {
        let mut said = format!("{}/{} files", self.done, self.total);
        if let (Some(rate), Some(left)) = (self.per_second, self.seconds_left) {
            said.push_str(&format!(", {rate} files/s, about {} left", duration(left)));
        }
        said
    }
}

/// `11 s`, `4 min`, `2 h 5 min`
fn duration(seconds: u64) -> String {
    match seconds {
        0..=99 => format!("{seconds} s"),
        100..=5999 => format!("{} min", seconds.div_ceil(60)),
        _ => format!("{} h {} min", seconds / 3600, (seconds % 3600) / 60),
    }
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
    /// Files done at the last report, to measure the pace since.
    done_at_report: usize,
    per_second: Option<f64>,
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
        if let (Some(started), true) = (self.started, self.done.is_multiple_of(MILESTONE)) {
            tracing::debug!(
                target: "tfreg::index_progress",
                done = self.done,
                seconds = started.elapsed().as_secs_f64(),
                "indexed {} files of the batch",
                self.done
            );
        }
        let since = self.last_report.map(|at| at.elapsed());
        if let (Some(since), true) = (since, left > 0) {
            if since >= REPORT_EVERY {
                // The pace over the last period: a first index slows down on big files,
                // and a rate since the start would hide it.
                let rate = (self.done - self.done_at_report) as f64 / since.as_secs_f64();
                self.per_second = Some(rate);
                self.done_at_report = self.done;
                self.last_report = Some(Instant::now());
                tracing::info!("indexing the data directory: {}", self.now().describe());
                self.keep();
            }
        }
        if left == 0 {
            if let Some(started) = self.started.take() {
                let seconds = started.elapsed().as_secs_f64();
                tracing::debug!(
                    target: "tfreg::index_progress",
                    done = self.done,
                    seconds,
                    "the batch of {} files is indexed",
                    self.done
                );
                if started.elapsed() >= REPORT_EVERY {
                    tracing::info!(
                        "indexed {} files in {seconds:.1}s ({:.0} files/s)",
                        self.done,
                        self.done as f64 / seconds
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

    /// Where the batch is, with the pace of the last period and the time left at it.
    fn now(&self) -> IndexingProgress {
        let left = self.total - self.done;
        let rate = self.per_second.filter(|rate| *rate > 0.0);
        IndexingProgress {
            done: self.done,
            total: self.total,
            per_second: rate.map(|rate| rate.round().max(1.0) as u64),
            seconds_left: rate.map(|rate| (left as f64 / rate).ceil() as u64),
        }
    }

    /// Rewrites the progress file (a few dozen bytes; a failure only costs `tfreg status`
    /// its line).
    fn keep(&self) {
        let (Some(file), true) = (&self.file, self.total > 0) else {
            return;
        };
        let Ok(json) = serde_json::to_vec(&self.now()) else {
            return;
        };
        let temporary = file.with_extension("json.tmp");
        if std::fs::write(&temporary, json).is_ok() {
            let _ = std::fs::rename(&temporary, file);
        }
    }
}
