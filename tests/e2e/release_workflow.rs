//! The release workflow keeps its signing key and its write token away from third-party code:
//! `tests/tools/workflow_policy.py` (run by `make lint-workflows`) passes on
//! `.github/workflows/release.yml` as written, and fails on each way of bringing them back
//! together: an install step in the signing job, its checkout keeping git credentials, the
//! write token in it, or a second job that may write.

use std::path::Path;
use std::process::Command;

use tfreg_e2e::{venv_tool, workspace_root, TempDir};

fn policy(workflow: &Path) -> (bool, String) {
    let output = Command::new(venv_tool("python"))
        .arg(workspace_root().join("tests/tools/workflow_policy.py"))
        .arg(workflow)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// `text` with the first `from` after `after` replaced by `to` (which must be there).
fn edit(text: &str, after: &str, from: &str, to: &str) -> String {
    let start = text.find(after).unwrap_or_else(|| panic!("no {after:?}"));
    let at = start
        + text[start..]
            .find(from)
            .unwrap_or_else(|| panic!("no {from:?}"));
    format!("{}{to}{}", &text[..at], &text[at + from.len()..])
}

#[test]
fn the_signing_job_installs_nothing_and_only_the_publishing_job_can_write() {
    // Given the release workflow as written, the policy passes.
    let path = workspace_root().join(".github/workflows/release.yml");
    let (ok, out) = policy(&path);
    assert!(ok, "{out}");
    assert!(out.contains("all 4 policy checks pass"), "{out}");

    // Each way of putting third-party code or the write token beside the signing key fails.
    let written = std::fs::read_to_string(&path).unwrap();
    let sign = "\n  sign:\n";
    let signing_step = "      - name: import the signing key\n";
    let cases = [
        (
            "signing-installs-nothing",
            "a pip install in the signing job",
            edit(
                &written,
                sign,
                signing_step,
                &format!("      - run: python3 -m pip install gh-release-helper\n{signing_step}"),
            ),
        ),
        (
            "signing-installs-nothing",
            "an action that installs Python in the signing job",
            edit(
                &written,
                sign,
                signing_step,
                &format!("      - uses: actions/setup-python@v5\n{signing_step}"),
            ),
        ),
        (
            "signing-installs-nothing",
            "the signing job run in a container image",
            edit(
                &written,
                sign,
                "    timeout-minutes: 10\n",
                "    timeout-minutes: 10\n    container: python:3.12\n",
            ),
        ),
        (
            "signing-no-credentials",
            "the signing job's checkout keeping its credentials",
            edit(&written, sign, "persist-credentials: false", "fetch-depth: 1"),
        ),
        (
            "signing-no-credentials",
            "the write token in the signing job",
            edit(
                &written,
                sign,
                "RELEASE_SIGNING_KEY: ${{ secrets.RELEASE_SIGNING_KEY }}",
                "RELEASE_SIGNING_KEY: ${{ secrets.RELEASE_SIGNING_KEY }}\n          GH_TOKEN: ${{ github.token }}",
            ),
        ),
        (
            "one-writing-job",
            "the signing job allowed to write",
            edit(&written, sign, "contents: read", "contents: write"),
        ),
        (
            "one-writing-job",
            "the publishing job checking out and building",
            edit(
                &written,
                "\n  publish:\n",
                "      - uses: actions/download-artifact@v4\n",
                "      - uses: actions/checkout@v4\n      - run: make release\n      - uses: actions/download-artifact@v4\n",
            ),
        ),
    ];
    let scratch = TempDir::new().unwrap();
    for (check, what, workflow) in cases {
        let file = scratch.path().join("release.yml");
        std::fs::write(&file, workflow).unwrap();
        let (ok, out) = policy(&file);
        assert!(!ok, "the policy passed {what}:\n{out}");
        assert!(out.contains(&format!("FAIL {check}:")), "{what}:\n{out}");
    }
}
