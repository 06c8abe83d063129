//! The saved index: its snapshot and its journal come back as saved, and what cannot be
//! trusted is ignored.

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

fn problem(key: &str, text: &str) -> Record {
    Record::Problem(ProblemRecord {
        key: key.into(),
        problem: text.into(),
    })
}

fn file(key: &str, revision: &str) -> Entry {
    Entry::File {
        key: key.into(),
        size: 1,
        revision: revision.into(),
    }
}

#[test]
fn checkpoints_appended_to_the_journal_come_back_and_one_cut_short_is_ignored_whole() {
    let data = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(data.path().join(STATE_DIR_NAME)).unwrap();
    let snapshot = Snapshot::of(data.path());
    // Given a snapshot of one record and one file
    let mut journal = snapshot
        .save(
            vec![problem("a", "first")],
            vec![],
            &HashMap::from([(
                "a".to_owned(),
                ObjectMeta {
                    size: 1,
                    revision: "r1".into(),
                },
            )]),
        )
        .unwrap();
    let base = std::fs::metadata(data.path().join(STATE_DIR_NAME).join(SNAPSHOT_FILE))
        .unwrap()
        .modified()
        .unwrap();
    // When two checkpoints are appended (a record replaced, one added, one deleted; files
    // likewise) and a third is cut short by a crash
    journal
        .append(&[
            Entry::Record(Box::new(problem("a", "second"))),
            Entry::Record(Box::new(problem("b", "new"))),
            file("b", "r1"),
        ])
        .unwrap();
    journal
        .append(&[
            Entry::RecordGone {
                partition: "problems".into(),
                sort: "b".into(),
            },
            Entry::Document {
                partition: "doc/x".into(),
                sort: "v".into(),
                body: "{}".into(),
            },
            Entry::FileGone { key: "a".into() },
        ])
        .unwrap();
    let path = data.path().join(STATE_DIR_NAME).join(JOURNAL_FILE);
    let whole = std::fs::metadata(&path).unwrap().len();
    let mut torn = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    let line = serde_json::to_string(&Entry::Record(Box::new(problem("c", "never")))).unwrap();
    writeln!(torn, "{line}").unwrap();
    torn.write_all(b"{\"record\":{\"kind\":").unwrap();
    drop(torn);
    // Then the load has both whole checkpoints and nothing of the third
    let restored = snapshot.load().unwrap();
    assert_eq!(restored.records, [problem("a", "second")]);
    assert_eq!(
        restored.documents,
        [(
            RecordId {
                partition: "doc/x".into(),
                sort: "v".into()
            },
            b"{}".to_vec()
        )]
    );
    assert_eq!(
        restored.files.keys().collect::<Vec<_>>(),
        ["b"],
        "a file gone and one added"
    );
    // And appending goes on after the last whole checkpoint, the torn one cut off
    let mut journal = snapshot
        .continue_journal(restored.journal.as_ref().unwrap())
        .unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), whole);
    journal
        .append(&[Entry::Record(Box::new(problem("d", "after")))])
        .unwrap();
    let restored = snapshot.load().unwrap();
    assert_eq!(restored.records.len(), 2, "{:?}", restored.records);
    // without the snapshot ever being rewritten
    let now = std::fs::metadata(data.path().join(STATE_DIR_NAME).join(SNAPSHOT_FILE))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(base, now);
}

#[test]
fn a_damaged_checkpoint_or_a_journal_of_another_snapshot_is_not_trusted() {
    let data = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(data.path().join(STATE_DIR_NAME)).unwrap();
    let snapshot = Snapshot::of(data.path());
    let mut journal = snapshot
        .save(vec![problem("a", "first")], vec![], &HashMap::new())
        .unwrap();
    journal
        .append(&[Entry::Record(Box::new(problem("b", "x")))])
        .unwrap();
    let path = data.path().join(STATE_DIR_NAME).join(JOURNAL_FILE);
    let kept = std::fs::read(&path).unwrap();
    // A damaged line followed by a checkpoint: the whole saved index is ignored (the start
    // indexes everything) rather than a part of it trusted.
    let mut damaged = kept.clone();
    damaged.extend_from_slice(b"not json\n\"checkpoint\"\n");
    std::fs::write(&path, &damaged).unwrap();
    assert!(snapshot.load().is_none());
    // A journal that follows another snapshot is ignored: the snapshot alone is loaded.
    let other =
        String::from_utf8(kept)
            .unwrap()
            .replacen("{\"follows\":\"", "{\"follows\":\"other-", 1);
    std::fs::write(&path, other).unwrap();
    let restored = snapshot.load().unwrap();
    assert_eq!(restored.records, [problem("a", "first")]);
    assert!(restored.journal.is_none());
}

#[test]
fn the_journal_asks_for_a_new_snapshot_once_it_outgrows_the_old() {
    let data = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(data.path().join(STATE_DIR_NAME)).unwrap();
    let snapshot = Snapshot::of(data.path());
    let mut journal = snapshot.save(vec![], vec![], &HashMap::new()).unwrap();
    assert!(!journal.wants_snapshot());
    let body = "x".repeat(1024 * 1024);
    for i in 0..9 {
        journal
            .append(&[Entry::Document {
                partition: "doc/x".into(),
                sort: format!("{i}"),
                body: body.clone(),
            }])
            .unwrap();
    }
    assert!(journal.wants_snapshot());
}
