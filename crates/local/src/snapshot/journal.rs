//! The saved index's journal, `DATA/.tfreg/index.journal`: what changed since the snapshot
//! (`index.json`) was written, appended a checkpoint at a time, so saving costs what changed
//! rather than the whole index. One JSON entry per line; the first names the snapshot it
//! follows, and each checkpoint ends with a `checkpoint` line, written with the entries and
//! synced before the next. Loading replays the entries up to the last checkpoint line: a
//! checkpoint cut short by a crash is ignored whole, and the files it would have said are
//! indexed again at the next start.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};
use tfreg_core::store::{Record, RecordId};

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Entry {
    /// The first line: the id of the snapshot the journal follows.
    Follows(String),
    /// A record written (never a pin: pins have files of their own).
    Record(Box<Record>),
    /// A record deleted.
    RecordGone { partition: String, sort: String },
    /// A document written: its JSON, as text.
    Document {
        partition: String,
        sort: String,
        body: String,
    },
    /// A document deleted.
    DocumentGone { partition: String, sort: String },
    /// A file indexed, as the watcher knows it.
    File {
        key: String,
        size: u64,
        revision: String,
    },
    /// A file no longer in the index (deleted, or its indexing failed).
    FileGone { key: String },
    /// The entries before it are whole.
    Checkpoint,
}

/// What replaying a journal changes in a loaded snapshot.
pub(super) struct Replayed<'a> {
    pub records: &'a mut BTreeMap<RecordId, Record>,
    pub documents: &'a mut BTreeMap<RecordId, String>,
    pub files: &'a mut BTreeMap<String, (u64, String)>,
}

/// Appends `entries` and a checkpoint line to `out`, then syncs it.
pub(super) fn append(out: &mut std::fs::File, entries: &[Entry]) -> std::io::Result<u64> {
    let mut bytes = Vec::new();
    for entry in entries.iter().chain([&Entry::Checkpoint]) {
        serde_json::to_writer(&mut bytes, entry).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
    }
    out.write_all(&bytes)?;
    out.sync_data()?;
    Ok(bytes.len() as u64)
}

/// Replays the journal read from `input` onto `into`, if it follows the snapshot `id`.
/// Returns where its last checkpoint ends (what a writer continuing it keeps: anything after
/// is a checkpoint cut short), or `None` when it follows another snapshot (it is ignored);
/// an error when a line before the last checkpoint cannot be read.
pub(super) fn replay(
    mut input: impl BufRead,
    id: &str,
    into: Replayed<'_>,
) -> Result<Option<u64>, String> {
    let mut line = Vec::new();
    let mut read_line = |line: &mut Vec<u8>| -> Result<usize, String> {
        line.clear();
        input.read_until(b'\n', line).map_err(|e| e.to_string())
    };
    let mut end = read_line(&mut line)? as u64;
    match serde_json::from_slice::<Entry>(&line) {
        Ok(Entry::Follows(follows)) if follows == id && line.ends_with(b"\n") => {}
        _ => return Ok(None),
    }
    let mut checkpointed = end;
    // Entries wait here until their checkpoint line says they are whole.
    let mut pending: Vec<Entry> = Vec::new();
    let mut unreadable: Option<String> = None;
    let mut number = 1;
    loop {
        let n = read_line(&mut line)?;
        if n == 0 {
            break;
        }
        end += n as u64;
        number += 1;
        let whole = line.ends_with(b"\n");
        match serde_json::from_slice::<Entry>(&line) {
            Ok(Entry::Checkpoint) if whole => {
                if let Some(why) = unreadable.take() {
                    return Err(why);
                }
                for entry in pending.drain(..) {
                    apply(
                        entry,
                        &mut *into.records,
                        &mut *into.documents,
                        &mut *into.files,
                    );
                }
                checkpointed = end;
            }
            Ok(entry) if whole => pending.push(entry),
            // A torn last line is expected after a crash; a bad line followed by a
            // checkpoint is not.
            Ok(_) => {}
            Err(e) => {
                unreadable.get_or_insert(format!("line {number}: {e}"));
            }
        }
    }
    Ok(Some(checkpointed))
}

fn apply(
    entry: Entry,
    records: &mut BTreeMap<RecordId, Record>,
    documents: &mut BTreeMap<RecordId, String>,
    files: &mut BTreeMap<String, (u64, String)>,
) {
    match entry {
        Entry::Record(record) => {
            records.insert(record.id(), *record);
        }
        Entry::RecordGone { partition, sort } => {
            records.remove(&RecordId { partition, sort });
        }
        Entry::Document {
            partition,
            sort,
            body,
        } => {
            documents.insert(RecordId { partition, sort }, body);
        }
        Entry::DocumentGone { partition, sort } => {
            documents.remove(&RecordId { partition, sort });
        }
        Entry::File {
            key,
            size,
            revision,
        } => {
            files.insert(key, (size, revision));
        }
        Entry::FileGone { key } => {
            files.remove(&key);
        }
        Entry::Follows(_) | Entry::Checkpoint => {}
    }
}
