//! The local index, saved so a restart need not rebuild it: `DATA/.tfreg/index.json` holds
//! the index's records (pins have files of their own), the documents made from them (what
//! requests read), and what the watcher last knew of each file (size and revision). It is
//! written whenever the watcher has been idle for a moment after a change (every document
//! made by then), atomically and owner-only.
//!
//! At the next start the records and documents are loaded (a snapshot without documents,
//! from an earlier tfreg, has them made from its records) and the watcher starts from those
//! files: its
//! first scan lists the data directory (one `stat` per file) and indexes only the files
//! that changed, appeared or disappeared meanwhile. A file's revision changes with any
//! rewrite, so nothing changed goes unnoticed; nothing unchanged is hashed again.
//!
//! A snapshot of another tfreg version, or one that cannot be read, is ignored (the start
//! indexes everything, as without one) and says so in the log.

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tfreg_core::store::{ObjectMeta, Record, RecordId};
use tfreg_core::StoreError;

use crate::fs_store::STATE_DIR_NAME;

/// The snapshot's file name, in the state folder.
pub const SNAPSHOT_FILE: &str = "index.json";

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
        let files = snapshot
            .files
            .into_iter()
            .map(|(key, (size, revision))| (key, ObjectMeta { size, revision }))
            .collect();
        let documents = snapshot
            .documents
            .into_iter()
            .map(|d| {
                let id = RecordId {
                    partition: d.partition,
                    sort: d.sort,
                };
                (id, d.body.into_bytes())
            })
            .collect();
        Some(Restored {
            records: snapshot.records,
            documents,
            files,
        })
    }

    /// Saves `records` (pins left out), the `documents` made from them, and `files`,
    /// replacing the previous snapshot at once.
    pub fn save(
        &self,
        records: Vec<Record>,
        documents: Vec<(RecordId, Vec<u8>)>,
        files: &HashMap<String, ObjectMeta>,
    ) -> Result<(), StoreError> {
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
        let snapshot = SnapshotFile {
            format: FORMAT,
            tfreg: env!("CARGO_PKG_VERSION").to_owned(),
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
        let failed = |what: &str, e: std::io::Error| {
            StoreError::with_source(format!("cannot {what} {}", self.path.display()), e)
        };
        let json = serde_json::to_vec(&snapshot)
            .map_err(|e| StoreError::new(format!("cannot encode the index: {e}")))?;
        let tmp = self.path.with_extension("json.tmp");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut out = options.open(&tmp).map_err(|e| failed("write", e))?;
        out.write_all(&json).map_err(|e| failed("write", e))?;
        out.sync_all().map_err(|e| failed("write", e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| failed("replace", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfreg_core::store::ProblemRecord;

    #[test]
    fn a_snapshot_comes_back_as_saved_and_others_are_ignored() {
        let data = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(data.path().join(STATE_DIR_NAME)).unwrap();
        let snapshot = Snapshot::of(data.path());
        assert!(snapshot.load().is_none());
        let record = Record::Problem(ProblemRecord {
            key: "modules/a/b/c/1.0.0.zip".into(),
            problem: "bad".into(),
        });
        let files = HashMap::from([(
            "modules/a/b/c/1.0.0.zip".to_owned(),
            ObjectMeta {
                size: 3,
                revision: "r1".into(),
            },
        )]);
        let document = (
            RecordId::module_versions(&tfreg_core::ModuleAddress::parse("a", "b", "c").unwrap()),
            br#"{"versions":{}}"#.to_vec(),
        );
        snapshot
            .save(vec![record.clone()], vec![document.clone()], &files)
            .unwrap();
        let restored = snapshot.load().unwrap();
        assert_eq!(restored.records, [record]);
        assert_eq!(restored.documents, [document]);
        assert_eq!(restored.files, files);
        // Another version's, or a damaged one, is not used.
        let path = data.path().join(STATE_DIR_NAME).join(SNAPSHOT_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        let other = text.replace(env!("CARGO_PKG_VERSION"), "0.0.0-other");
        std::fs::write(&path, other).unwrap();
        assert!(snapshot.load().is_none());
        std::fs::write(&path, "{not json").unwrap();
        assert!(snapshot.load().is_none());
    }
}
