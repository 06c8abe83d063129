//! What a running `tfreg serve` serves, kept in `DATA/.tfreg/served.json` for `tfreg
//! publish`: the status document of its own index (the one its answers come from), rewritten
//! within a second of any change, and touched every few seconds while the server runs, so a
//! file that has not moved for a while means no server is watching the data directory. It is
//! removed when the server stops.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};
use tfreg_core::{MetadataStore, Registry};
use tfreg_local::metadata::LocalMetadataStore;

use crate::report::{self, Filter, Scope, StatusDoc};

/// The file's name, in the data directory's state folder.
pub const FILE: &str = "served.json";
/// How often the server touches the file while nothing changes.
pub const HEARTBEAT: Duration = Duration::from_secs(5);
/// A file older than this is not kept by a running server.
pub const STALE_AFTER: Duration = Duration::from_secs(20);
/// How often the index's generation is compared with the file's.
const POLL: Duration = Duration::from_millis(500);
/// Verdicts that depend on time (a key's expiry) are refreshed this often.
const REFRESH: Duration = Duration::from_secs(60);
/// The largest file read (a registry of many thousands of versions stays far below).
const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// The file's content.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServedFile {
    pub server: ServerInfo,
    pub status: StatusDoc,
}

/// Which server writes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerInfo {
    /// Its process id.
    pub pid: u32,
    /// `https://ADDR`
    pub url: String,
    /// Its `--hostname`.
    pub hostname: String,
}

/// `DATA/.tfreg/served.json`
pub fn path(data: &Path) -> PathBuf {
    data.join(tfreg_local::fs_store::STATE_DIR_NAME).join(FILE)
}

/// Keeps the file while it lives; removes it when dropped.
pub struct Snapshots {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    path: PathBuf,
}

impl Drop for Snapshots {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Starts keeping `DATA/.tfreg/served.json` from `metadata`, read through `registry`.
///
/// It runs on a thread of its own: rebuilding the document reads the whole index, which
/// at tens of thousands of files takes long enough to hold up requests if it shared their
/// threads.
pub fn start(
    data: &Path,
    metadata: Arc<LocalMetadataStore>,
    registry: Registry,
    server: ServerInfo,
) -> std::io::Result<Snapshots> {
    let path = path(data);
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let file = path.clone();
    let thread = std::thread::Builder::new()
        .name("served-file".into())
        .spawn(move || {
            runtime.block_on(async move {
                tokio::select! {
                    _ = keep(file, metadata, registry, server) => {}
                    _ = stopped => {}
                }
            });
        })?;
    Ok(Snapshots {
        stop: Some(stop),
        thread: Some(thread),
        path,
    })
}

async fn keep(
    path: PathBuf,
    metadata: Arc<LocalMetadataStore>,
    registry: Registry,
    server: ServerInfo,
) {
    // The index's generation when the file was last written, and when.
    let mut last: Option<(u64, Instant)> = None;
    let mut touched = Instant::now();
    let mut warned = false;
    let mut rest = POLL;
    loop {
        let generation = metadata.generation();
        let changed = last
            .as_ref()
            .is_none_or(|(seen, at)| *seen != generation || at.elapsed() >= REFRESH);
        let written = if changed {
            let building = Instant::now();
            let records = match metadata.scan().await {
                Ok(records) => records,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the index for {FILE}");
                    tokio::time::sleep(POLL).await;
                    continue;
                }
            };
            let scope = Scope::from_records(&records);
            let metadata: &dyn MetadataStore = metadata.as_ref();
            match report::build(&registry, metadata, &scope, &Filter::all()).await {
                Ok(status) => {
                    let file = ServedFile {
                        server: server.clone(),
                        status,
                    };
                    let written = write(&path, &file);
                    if written.is_ok() {
                        last = Some((generation, Instant::now()));
                    }
                    // While the index keeps changing (a large first index), rebuilding
                    // takes at most a third of one core: the document lags a little more.
                    rest = (building.elapsed() * 2).max(POLL);
                    written
                }
                Err(e) => Err(std::io::Error::other(e)),
            }
        } else if touched.elapsed() >= HEARTBEAT {
            touch(&path)
        } else {
            tokio::time::sleep(POLL).await;
            continue;
        };
        match written {
            Ok(()) => {
                touched = Instant::now();
                warned = false;
            }
            Err(e) if !warned => {
                tracing::warn!(path = %path.display(), error = %e, "cannot keep the file `tfreg publish` waits on; publishing works, waiting for it does not");
                warned = true;
            }
            Err(_) => {}
        }
        tokio::time::sleep(rest).await;
        rest = POLL;
    }
}

/// Replaces the file at once (a temporary file, then a rename), readable by whoever may
/// read the state folder: publishers read it to wait.
fn write(path: &Path, file: &ServedFile) -> std::io::Result<()> {
    let json = tfreg_core::text::json::to_vec(file).map_err(std::io::Error::other)?;
    let temporary = path.with_extension("json.tmp");
    std::fs::write(&temporary, json)?;
    std::fs::rename(&temporary, path)
}

fn touch(path: &Path) -> std::io::Result<()> {
    std::fs::File::options()
        .write(true)
        .open(path)?
        .set_modified(SystemTime::now())
}

/// Reads the file, if a server keeps it: `Err` says why there is none to read.
pub fn read(data: &Path) -> Result<ServedFile, String> {
    let path = path(data);
    let meta = std::fs::metadata(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("{} does not exist", path.display()),
        _ => format!("cannot read {}: {e}", path.display()),
    })?;
    let age = meta
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .unwrap_or_default();
    if meta.len() > MAX_BYTES {
        return Err(format!(
            "{} is larger than {MAX_BYTES} bytes",
            path.display()
        ));
    }
    if age > STALE_AFTER {
        return Err(format!(
            "{} was last updated {}s ago",
            path.display(),
            age.as_secs()
        ));
    }
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("cannot read {}: {e}", path.display()))
}
