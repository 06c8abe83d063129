//! The emulator the AWS tests run on: moto, through `tests/tools/moto_server.py`, which
//! reads a queried partition instead of sorting the whole table first (tests/src/moto.rs).
//! That change must leave every answer as moto's own.

use std::process::Command;

use tfreg_e2e::{venv_tool, workspace_root};

#[test]
fn the_emulators_partition_read_answers_every_query_as_moto_does() {
    // Given the same items in two fresh emulated tables, one in moto as installed and one with
    // the partition read, when every shape of Query the registry makes (key conditions,
    // filters, projections, limits and their pages, backwards, on an index) runs on both,
    let output = Command::new(venv_tool("python"))
        .arg(workspace_root().join("tests/tools/test_moto_server.py"))
        .output()
        .expect("the tests' virtualenv's python runs");

    // then every page of every answer is the same.
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{text}");
    assert!(text.contains("the same answers"), "{text}");
}
