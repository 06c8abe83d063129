//! Download counts of the local shape, kept between runs: counters in memory
//! ([`MemoryUsage`], one fold under a lock per download, no I/O on the request path), saved
//! to `DATA/.tfreg/usage.json` by a background task at most every [`SAVE_EVERY`] when
//! something was counted, and once more at a clean stop. The file is replaced atomically
//! (a temporary file, synced, then renamed) and is owner-only: it names consumers.
//!
//! How exact: every successful download is counted once while the server runs; a crash (or
//! a kill without a clean stop) loses at most the downloads of the last [`SAVE_EVERY`].
//! At start the file is loaded; one that cannot be used (damaged, of an unknown format, too
//! large) is logged, kept aside as `usage.json.damaged-UNIXSECONDS`, and counting starts
//! afresh: counts never stop a server from starting.
//!
//! Memory and the file hold counters only for versions actually downloaded through the
//! token-checked API, [`WINDOW_DAYS`] days each (older days are pruned at each save), and at
//! most [`MAX_CONSUMERS`] consumers a version (the most recent kept).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tfreg_core::store::ErrorChain;
use tfreg_core::usage::{day_of, Download, DownloadSink, MemoryUsage, Subject, Usage, UsageReader};
#[cfg(doc)]
use tfreg_core::usage::{MAX_CONSUMERS, WINDOW_DAYS};
use tfreg_core::StoreError;

/// The counters' file name, in the state folder (`DATA/.tfreg`).
pub const USAGE_FILE: &str = "usage.json";
/// How often the counters are saved at most, when something was counted: what a crash may
/// lose.
pub const SAVE_EVERY: Duration = Duration::from_secs(2);
/// The file's shape: a file of another is kept aside, not read.
const FORMAT: u32 = 1;
/// The largest file read (counters of every version of a large registry are a few MB).
const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Serialize, Deserialize)]
struct UsageFile {
    format: u32,
    subjects: Vec<SavedSubject>,
}

#[derive(Serialize, Deserialize)]
struct SavedSubject {
    subject: Subject,
    usage: Usage,
}

/// The local [`DownloadSink`] and [`UsageReader`]: counters in memory, saved in the state
/// folder.
#[derive(Debug)]
pub struct LocalUsage {
    path: PathBuf,
    counters: MemoryUsage,
    /// [`MemoryUsage::changes`] as of the last save; held while saving, so saves do not
    /// interleave.
    saved: Mutex<u64>,
    /// The last save failure logged, so a failing disk is reported once, not every save.
    problem: Mutex<Option<String>>,
}

fn failed(
    what: &str,
    path: &Path,
    e: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> StoreError {
    StoreError::with_source(format!("cannot {what} {}", path.display()), e)
}

impl LocalUsage {
    /// The counters of the state folder `state_dir` (`DATA/.tfreg`), for the server: loaded
    /// from its file, or empty when there is none or it cannot be used (then logged and kept
    /// aside).
    pub fn open(state_dir: &Path) -> Self {
        let path = state_dir.join(USAGE_FILE);
        let counters = match read_file(&path) {
            Ok(saved) => MemoryUsage::from_saved(saved),
            Err(e) => {
                let aside = keep_aside(&path);
                tracing::warn!(
                    path = %path.display(),
                    error = %ErrorChain(&e),
                    kept_aside = aside.as_ref().map(|p| p.display().to_string()),
                    "the saved download counts cannot be used; counting starts afresh"
                );
                MemoryUsage::default()
            }
        };
        Self::with(path, counters)
    }

    /// The counters saved in the state folder `state_dir`, read for a command (`tfreg
    /// status --consumers`): nothing is moved, and a file that cannot be used is an error.
    pub fn read(state_dir: &Path) -> Result<Self, StoreError> {
        let path = state_dir.join(USAGE_FILE);
        let counters = MemoryUsage::from_saved(read_file(&path)?);
        Ok(Self::with(path, counters))
    }

    fn with(path: PathBuf, counters: MemoryUsage) -> Self {
        let changes = counters.changes();
        LocalUsage {
            path,
            counters,
            saved: Mutex::new(changes),
            problem: Mutex::default(),
        }
    }

    /// The file the counters are saved to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Saves the counters if anything was counted since the last save; true when it wrote.
    /// Blocking (file I/O): call it off the async threads.
    pub fn save_if_changed(&self) -> Result<bool, StoreError> {
        let mut saved = self.saved.lock().unwrap_or_else(|p| p.into_inner());
        if self.counters.changes() == *saved {
            return Ok(false);
        }
        let (changes, subjects) = self.counters.saved(day_of(SystemTime::now()));
        let file = UsageFile {
            format: FORMAT,
            subjects: subjects
                .into_iter()
                .map(|(subject, usage)| SavedSubject { subject, usage })
                .collect(),
        };
        let json = serde_json::to_vec(&file)
            .map_err(|e| StoreError::new(format!("cannot encode the download counts: {e}")))?;
        write_atomically(&self.path, &json)?;
        *saved = changes;
        Ok(true)
    }

    /// Saves the counters every [`SAVE_EVERY`] when something was counted, until the last
    /// other holder of them is gone; a failure is logged (once until it changes), and the
    /// next round tries again.
    pub fn start_saving(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let usage = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(SAVE_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                let Some(usage) = usage.upgrade() else {
                    return;
                };
                let _ = tokio::task::spawn_blocking(move || usage.save_logged()).await;
            }
        })
    }

    /// [`LocalUsage::save_if_changed`], its failure logged rather than returned.
    pub fn save_logged(&self) {
        let outcome = self.save_if_changed();
        let mut problem = self.problem.lock().unwrap_or_else(|p| p.into_inner());
        match outcome {
            Ok(_) => {
                if problem.take().is_some() {
                    tracing::info!(path = %self.path.display(), "download counts saved again");
                }
            }
            Err(e) => {
                let text = ErrorChain(&e).to_string();
                if problem.as_deref() != Some(text.as_str()) {
                    tracing::warn!(
                        error = text,
                        "could not save the download counts; trying again"
                    );
                    *problem = Some(text);
                }
            }
        }
    }

    /// One subject's counters as of `today` (for commands and tests).
    pub fn usage_on(&self, subject: &Subject, today: u32) -> Usage {
        self.counters.usage_on(subject, today)
    }
}

impl DownloadSink for LocalUsage {
    fn record(&self, download: Download) {
        self.counters.record(download);
    }
}

#[async_trait]
impl UsageReader for LocalUsage {
    async fn usage(&self, subject: &Subject) -> Result<Usage, StoreError> {
        self.counters.usage(subject).await
    }
}

/// The saved counters; none when there is no file.
fn read_file(path: &Path) -> Result<Vec<(Subject, Usage)>, StoreError> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(failed("read", path, e)),
    };
    let mut bytes = Vec::new();
    let read = file
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| failed("read", path, e))?;
    if read as u64 > MAX_FILE_BYTES {
        return Err(StoreError::new(format!(
            "{} is larger than {MAX_FILE_BYTES} bytes",
            path.display()
        )));
    }
    let file: UsageFile = serde_json::from_slice(&bytes).map_err(|e| failed("parse", path, e))?;
    if file.format != FORMAT {
        return Err(StoreError::new(format!(
            "{} is of format {}, not {FORMAT}",
            path.display(),
            file.format
        )));
    }
    Ok(file
        .subjects
        .into_iter()
        .map(|s| (s.subject, s.usage))
        .collect())
}

/// Moves an unusable file aside, so counting afresh does not overwrite it; where to.
fn keep_aside(path: &Path) -> Option<PathBuf> {
    let secs = tfreg_core::tokens::unix(SystemTime::now());
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".damaged-{secs}"));
    let aside = PathBuf::from(aside);
    match std::fs::rename(path, &aside) {
        Ok(()) => Some(aside),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "could not keep the unusable download counts aside");
            None
        }
    }
}

/// Replaces `path` with `bytes` at once: a temporary file beside it, synced, then renamed;
/// owner-only.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut out = options.open(&tmp).map_err(|e| failed("write", &tmp, e))?;
    out.write_all(bytes).map_err(|e| failed("write", &tmp, e))?;
    out.sync_all().map_err(|e| failed("write", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| failed("replace", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfreg_core::usage::{Consumer, Installed, MAX_CONSUMERS};
    use tfreg_core::{ModuleAddress, Platform, ProviderAddress, Version};

    fn module() -> Subject {
        Subject::Module {
            address: ModuleAddress::parse("acme", "network", "aws").unwrap(),
        }
    }

    fn download(version: &str, who: Option<&str>, day: u32) -> Download {
        Download {
            installed: Installed::Module {
                address: ModuleAddress::parse("acme", "network", "aws").unwrap(),
                version: Version::parse(version).unwrap(),
            },
            consumer: who.map(|who| Consumer {
                token: "0123456789abcdef".into(),
                who: who.into(),
            }),
            day,
        }
    }

    fn today() -> u32 {
        day_of(SystemTime::now())
    }

    #[test]
    fn counts_survive_a_restart() {
        // Given counts of a module and a provider, saved,
        let state = tempfile::tempdir().unwrap();
        let usage = LocalUsage::open(state.path());
        assert!(!usage.save_if_changed().unwrap(), "nothing to save yet");
        assert!(!usage.path().exists());
        for _ in 0..3 {
            usage.record(download("1.0.0", Some("alice"), today()));
        }
        usage.record(download("1.1.0", None, today() - 40));
        let provider = ProviderAddress::parse("acme", "widget").unwrap();
        usage.record(Download {
            installed: Installed::Provider {
                provider: provider.clone(),
                version: Version::parse("2.0.0").unwrap(),
                platform: Platform::parse("linux", "arm64").unwrap(),
            },
            consumer: None,
            day: today(),
        });
        assert!(usage.save_if_changed().unwrap());
        assert!(!usage.save_if_changed().unwrap(), "saved once per change");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(usage.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "owner-only: it names consumers");
        }

        // when the server starts again, they are all there.
        let again = LocalUsage::open(state.path());
        let counts = again.usage_on(&module(), today());
        assert_eq!(counts.counts(today()).total, 4);
        assert_eq!(counts.counts(today()).month, 3);
        let v1 = &counts.versions[&Version::parse("1.0.0").unwrap()];
        assert_eq!(v1.consumers["alice"], today());
        let provider = again.usage_on(&Subject::Provider { provider }, today());
        let v2 = &provider.versions[&Version::parse("2.0.0").unwrap()];
        assert_eq!(v2.platforms["linux_arm64"].total, 1);
        // Reading for a command sees the same.
        let read = LocalUsage::read(state.path()).unwrap();
        assert_eq!(read.usage_on(&module(), today()), counts);
        assert!(!state.path().join("usage.json.tmp").exists());
    }

    #[test]
    fn a_damaged_file_is_kept_aside_and_counting_starts_afresh() {
        let state = tempfile::tempdir().unwrap();
        let path = state.path().join(USAGE_FILE);
        for damaged in [&b"{not json"[..], br#"{"format":99,"subjects":[]}"#] {
            std::fs::write(&path, damaged).unwrap();
            assert!(LocalUsage::read(state.path()).is_err(), "a command says so");
            let usage = LocalUsage::open(state.path());
            assert!(!path.exists(), "moved aside");
            assert_eq!(usage.usage_on(&module(), today()), Usage::default());
            let kept: Vec<_> = std::fs::read_dir(state.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|name| name.starts_with("usage.json.damaged-"))
                .collect();
            assert_eq!(kept.len(), 1, "{kept:?}");
            let aside = state.path().join(&kept[0]);
            assert_eq!(std::fs::read(&aside).unwrap(), damaged);
            std::fs::remove_file(aside).unwrap();
            // Counting goes on, and is saved over nothing lost.
            usage.record(download("1.0.0", None, today()));
            assert!(usage.save_if_changed().unwrap());
            std::fs::remove_file(&path).unwrap();
        }
    }

    #[test]
    fn consumers_are_bounded_and_old_days_pruned_when_saved() {
        let state = tempfile::tempdir().unwrap();
        let usage = LocalUsage::open(state.path());
        for i in 0..MAX_CONSUMERS + 50 {
            usage.record(download("1.0.0", Some(&format!("token {i:05}")), today()));
        }
        usage.record(download("1.0.0", Some("long ago"), today() - 45));
        usage.save_if_changed().unwrap();
        let again = LocalUsage::open(state.path());
        let counts = again.usage_on(&module(), today());
        let version = &counts.versions[&Version::parse("1.0.0").unwrap()];
        assert_eq!(version.consumers.len(), MAX_CONSUMERS);
        assert!(!version.consumers.contains_key("long ago"));
        assert!(version.tally.days.keys().all(|d| *d + 30 > today()));
        assert_eq!(version.tally.total, MAX_CONSUMERS as u64 + 51);
    }

    #[tokio::test]
    async fn the_saver_writes_within_its_interval_and_stops_with_the_counters() {
        let state = tempfile::tempdir().unwrap();
        let usage = Arc::new(LocalUsage::open(state.path()));
        let saver = usage.start_saving();
        usage.record(download("1.0.0", None, today()));
        let path = usage.path().to_path_buf();
        let deadline = std::time::Instant::now() + SAVE_EVERY * 3;
        while !path.exists() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(path.exists(), "saved within its interval");
        drop(usage);
        tokio::time::timeout(SAVE_EVERY * 3, saver)
            .await
            .expect("the saver stops once the counters are gone")
            .unwrap();
    }
}
