//! The local index, saved so a restart need not rebuild it. `DATA/.tfreg/index.json` (the
//! snapshot) holds the index's records (pins have files of their own), the documents made
//! from them (what requests read), and what the watcher last knew of each file (size and
//! revision); `DATA/.tfreg/index.journal` ([`journal`]) holds what changed since, appended
//! a checkpoint at a time. Saving a change costs what changed: the snapshot is written whole
//! only when the journal has grown past it (so each change is rewritten a bounded number of
//! times on average), at the first save of a start that found none, and never per file.
//!
//! The watcher saves a checkpoint every few seconds while it indexes (a first index cut
//! short resumes where its last checkpoint was), and when it has been idle for a moment
//! after a change (every document made by then). Both files are owner-only.
//!
//! At the next start the snapshot and its journal are loaded (a snapshot without documents,
//! from an earlier tfreg, has them made from its records) and the watcher starts from those
//! files: its first scan lists the data directory (one `stat` per file) and indexes only
//! the files that changed, appeared or disappeared meanwhile, or that were being indexed
//! when the last checkpoint was saved. A file's revision changes with any rewrite, so
//! nothing changed goes unnoticed; nothing unchanged is hashed again.
//!
//! A snapshot of another tfreg version, or one that cannot be read, is ignored (the start
//! indexes everything, as without one) and says so in the log.

mod journal;

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tfreg_core::store::{ObjectMeta, Record, RecordId};
use tfreg_core::StoreError;

use crate::fs_store::STATE_DIR_NAME;

/// The snapshot's file name, in the state folder.
pub const SNAPSHOT_FILE: &str = "index.json";
/// The journal's file name, in the state folder.
pub const JOURNAL_FILE: &str = "index.journal";

/// The journal is folded into a new snapshot once it is larger than the snapshot and this.
const MIN_JOURNAL_BYTES: u64 = 8 * 1024 * 1024;

pub(crate) use journal::Entry;

/// Changes whenever the records' or the revisions' meaning changes; with tfreg's version,
/// it decides whether a snapshot may be used. 2: signature and key verdicts by the one
/// judgement of `tfreg_core::gpg` (EdDSA and expired keys accepted, revocations refused
/// everywhere), so a snapshot of 1 is judged again whole. 3: modules' search words keep
/// input and output names whole (`name_prefix`), so a snapshot of 2 is indexed again.
const FORMAT: u32 = 3;

/// The largest snapshot read (a million records is a few hundred MB).
const MAX_SNAPSHOT_BYTES: u64 = 2 * 1024 * 1024 * 1024;

#[derive(Serialize, Deserialize)]
struct SnapshotFile {
    format: u32,
    tfreg: String,
    /// Names the snapshot, for its journal to say which one it follows (none in a
    /// snapshot from before journals: it has none).
    #[serde(default)]
    id: String,
    records: Vec<Record>,
    /// The documents made from the records (none in a snapshot from before them: they
    /// are made again at restore).
    #[serde(default)]
    documents: Vec<SavedDocument>,
    /// Key → (size, revision), as the watcher last indexed it.
    files: BTreeMap<String, (u64, String)>,
}

/// A document as saved: its id and its JSON.
#[derive(Serialize, Deserialize)]
struct SavedDocument {
    partition: String,
    sort: String,
    body: String,
}

/// What a snapshot restores.
pub struct Restored {
    /// The index's records (without pins, which have files of their own).
    pub records: Vec<Record>,
    /// The documents made from them, saved with them; empty when the snapshot has none.
    pub documents: Vec<(RecordId, Vec<u8>)>,
    /// What the watcher last knew of each file (size and revision), by key.
    pub files: HashMap<String, ObjectMeta>,
    /// Where the journal goes on, for the next saves to append to it.
    pub journal: Option<Continuation>,
}

/// A loaded snapshot's journal, to append to.
#[derive(Debug, Clone)]
pub struct Continuation {
    base_bytes: u64,
    /// Where its last whole checkpoint ends.
    end: u64,
}

/// Appends checkpoints to the journal of the snapshot last written or loaded.
#[derive(Debug)]
pub struct JournalWriter {
    file: std::fs::File,
    path: PathBuf,
    base_bytes: u64,
    journal_bytes: u64,
}

impl JournalWriter {
    /// Appends `entries` as one checkpoint, synced before it returns.
    pub(crate) fn append(&mut self, entries: &[Entry]) -> Result<(), StoreError> {
        let written = journal::append(&mut self.file, entries).map_err(|e| {
            StoreError::with_source(format!("cannot write {}", self.path.display()), e)
        })?;
        self.journal_bytes += written;
        Ok(())
    }

    /// The journal has grown past the snapshot: the next save should write a new one.
    pub fn wants_snapshot(&self) -> bool {
        self.journal_bytes > self.base_bytes.max(MIN_JOURNAL_BYTES)
    }
}

/// Where the snapshot of a data directory lives.
#[derive(Debug, Clone)]
pub struct Snapshot {
    path: PathBuf,
}

impl Snapshot {
    /// The snapshot of the data directory `data`, in its state folder.
    pub fn of(data: &Path) -> Self {
        Self {
            path: data.join(STATE_DIR_NAME).join(SNAPSHOT_FILE),
        }
    }

    fn journal_path(&self) -> PathBuf {
        self.path.with_file_name(JOURNAL_FILE)
    }

    /// Opens the journal `continuation` describes for appending, cutting off a checkpoint
    /// a crash left unfinished.
    pub fn continue_journal(
        &self,
        continuation: &Continuation,
    ) -> Result<JournalWriter, StoreError> {
        let path = self.journal_path();
        let failed = |e: std::io::Error| {
            StoreError::with_source(format!("cannot write {}", path.display()), e)
        };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(failed)?;
        file.set_len(continuation.end).map_err(failed)?;
        file.seek(std::io::SeekFrom::End(0)).map_err(failed)?;
        Ok(JournalWriter {
            file,
            path,
            base_bytes: continuation.base_bytes,
            journal_bytes: continuation.end,
        })
    }

    /// The saved index, if there is a usable one.
    pub fn load(&self) -> Option<Restored> {
        let file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot read the saved index; indexing everything");
                return None;
            }
        };
        let mut bytes = Vec::new();
        let read = file.take(MAX_SNAPSHOT_BYTES + 1).read_to_end(&mut bytes);
        let parsed: Result<SnapshotFile, String> = match read {
            Ok(n) if n as u64 > MAX_SNAPSHOT_BYTES => Err("it is too large".into()),
            Ok(_) => serde_json::from_slice(&bytes).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        let snapshot = match parsed {
            Ok(snapshot) => snapshot,
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = e, "the saved index is unreadable; indexing everything");
                return None;
            }
        };
        if snapshot.format != FORMAT || snapshot.tfreg != env!("CARGO_PKG_VERSION") {
            tracing::info!(
                saved_by = snapshot.tfreg,
                "the saved index is of another tfreg version; indexing everything"
            );
            return None;
        }
        let base_bytes = bytes.len() as u64;
        drop(bytes);
        let mut records: BTreeMap<RecordId, Record> =
            snapshot.records.into_iter().map(|r| (r.id(), r)).collect();
        let mut documents: BTreeMap<RecordId, String> = snapshot
            .documents
            .into_iter()
            .map(|d| {
                let id = RecordId {
                    partition: d.partition,
                    sort: d.sort,
                };
                (id, d.body)
            })
            .collect();
        let mut files = snapshot.files;
        let journal = match self.replay_journal(
            &snapshot.id,
            journal::Replayed {
                records: &mut records,
                documents: &mut documents,
                files: &mut files,
            },
        ) {
            Ok(journal) => journal,
            Err(e) => {
                tracing::warn!(path = %self.journal_path().display(), error = e, "the saved index's journal is unreadable; indexing everything");
                return None;
            }
        };
        Some(Restored {
            records: records.into_values().collect(),
            documents: documents
                .into_iter()
                .map(|(id, body)| (id, body.into_bytes()))
                .collect(),
            files: files
                .into_iter()
                .map(|(key, (size, revision))| (key, ObjectMeta { size, revision }))
                .collect(),
            journal: journal.map(|end| Continuation { base_bytes, end }),
        })
    }

    /// Replays the journal of the snapshot `id`, if there is one: where its last
    /// checkpoint ends, for appending to it.
    fn replay_journal(&self, id: &str, into: journal::Replayed<'_>) -> Result<Option<u64>, String> {
        if id.is_empty() {
            return Ok(None);
        }
        let file = match std::fs::File::open(self.journal_path()) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let input = std::io::BufReader::new(file.take(MAX_SNAPSHOT_BYTES));
        journal::replay(input, id, into)
    }

    /// Saves `records` (pins left out), the `documents` made from them, and `files` as a
    /// new snapshot with an empty journal, replacing the previous ones at once; returns the
    /// writer of that journal.
    pub fn save(
        &self,
        records: Vec<Record>,
        documents: Vec<(RecordId, Vec<u8>)>,
        files: &HashMap<String, ObjectMeta>,
    ) -> Result<JournalWriter, StoreError> {
        let documents = documents
            .into_iter()
            .map(|(id, body)| {
                let body = String::from_utf8(body)
                    .map_err(|e| StoreError::with_source("a document is not UTF-8 JSON", e))?;
                Ok(SavedDocument {
                    partition: id.partition,
                    sort: id.sort,
                    body,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        let id = new_id();
        let snapshot = SnapshotFile {
            format: FORMAT,
            tfreg: env!("CARGO_PKG_VERSION").to_owned(),
            id: id.clone(),
            records: records
                .into_iter()
                .filter(|r| !matches!(r, Record::Pin(_)))
                .collect(),
            documents,
            files: files
                .iter()
                .map(|(k, m)| (k.clone(), (m.size, m.revision.clone())))
                .collect(),
        };
        let json = serde_json::to_vec(&snapshot)
            .map_err(|e| StoreError::new(format!("cannot encode the index: {e}")))?;
        let mut follows = serde_json::to_vec(&Entry::Follows(id))
            .map_err(|e| StoreError::new(format!("cannot encode the index: {e}")))?;
        follows.push(b'\n');
        // Both written whole under temporary names, then renamed: a crash between the two
        // renames leaves a journal that follows another snapshot, which is ignored.
        let journal_path = self.journal_path();
        let base = write_new(&self.path, &json)?;
        let journal = write_new(&journal_path, &follows)?;
        rename(base, &self.path)?;
        rename(journal, &journal_path)?;
        if let Some(Ok(dir)) = self.path.parent().map(std::fs::File::open) {
            let _ = dir.sync_all();
        }
        let failed = |e: std::io::Error| {
            StoreError::with_source(format!("cannot write {}", journal_path.display()), e)
        };
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&journal_path)
            .map_err(failed)?;
        file.seek(std::io::SeekFrom::End(0)).map_err(failed)?;
        Ok(JournalWriter {
            file,
            path: journal_path,
            base_bytes: json.len() as u64,
            journal_bytes: follows.len() as u64,
        })
    }
}

/// A name no other snapshot has had.
fn new_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{:x}", std::process::id())
}

/// Writes `bytes` to a new owner-only file beside `path`, synced; returns its name.
fn write_new(path: &Path, bytes: &[u8]) -> Result<PathBuf, StoreError> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!("{name}.tmp"));
    let failed =
        |e: std::io::Error| StoreError::with_source(format!("cannot write {}", tmp.display()), e);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut out = options.open(&tmp).map_err(failed)?;
    out.write_all(bytes).map_err(failed)?;
    out.sync_all().map_err(failed)?;
    Ok(tmp)
}

fn rename(from: PathBuf, to: &Path) -> Result<(), StoreError> {
    std::fs::rename(&from, to)
        .map_err(|e| StoreError::with_source(format!("cannot replace {}", to.display()), e))
}

#[cfg(test)]
mod tests;
