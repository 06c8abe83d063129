//! Running the README as a new user would: its `sh` blocks, section by section, and the
//! `tfreg serve` a block starts, in the background until the test ends.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The `sh` blocks of the README section titled `title` (up to the next `## `).
pub fn sh_blocks(readme: &str, title: &str) -> Vec<String> {
    let start = readme
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("the README has no section {title:?}"));
    let section = &readme[start + 1..];
    let section = match section[3..].find("\n## ") {
        Some(end) => &section[..end + 3],
        None => section,
    };
    let mut found = Vec::new();
    let mut current: Option<String> = None;
    for line in section.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(block), "```") => {
                found.push(std::mem::take(block));
                current = None;
            }
            (Some(block), line) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(!found.is_empty(), "section {title:?} has no sh blocks");
    found
}

/// A server started by a README line, stopped when dropped.
pub struct Background(Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `command` (a `tfreg serve`) with its stdout read, and waits at most `timeout` for
/// its first line, the banner's `tfreg serving https://...` (empty when none came).
pub fn serve_in_background(mut command: Command, timeout: Duration) -> (Background, String) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (first_tx, first) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(line)) = lines.next() {
            let _ = first_tx.send(line);
        }
        for _ in lines {}
    });
    let banner = first.recv_timeout(timeout).unwrap_or_default();
    (Background(child), banner)
}

/// Runs `command` (a shell running `script`) with no input; its stdout and stderr, once it
/// succeeded (else the test fails showing the script and what it printed).
pub fn run_script(mut command: Command, script: &str) -> String {
    let output = command.stdin(Stdio::null()).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "the README's commands failed:\n{script}\n---\n{text}"
    );
    text
}
