//! Docs that cannot drift (issue 43): what the docs say the code is, checked against the code.
//!
//! - ARCHITECTURE.md's invariants: every file, test, e2e module and make target a row cites
//!   exists, and the row's tier ("gate", "deep", "gate and deep") is the tier of what it cites.
//!   A test is in the deep tier (`make test-deep`) when it is marked
//!   `#[ignore = "deep tier: ..."]`, in the gate (`make test`) when it is not ignored at all; a
//!   make target is deep when `test-deep` reaches it and `test` does not.
//! - ARCHITECTURE.md's code map names only files, folders, modules and items that exist, and
//!   its list of a new function's wiring has as many files as it says.
//! - The number of functions in the docs is `Function::ALL`'s and template.yaml's, and so are
//!   the quota figures made from it; the idle cost's alarm figure is the template's metrics.
//! - Every `TFREG_` variable the crates read is in the configuration reference, and the docs
//!   name no other; the pages' stylesheet and script are as small as docs/web.md says.
//! - README's performance lines are what `make bench` writes from BENCHMARKS.md's targets.
//! - Every test, repository path and make target the other docs cite exists.
//!
//! Each check reads the docs' text and returns its problems, so the tests beside each check plant
//! a stale count, a dead citation and a wrong tier in a copy of the text and see them caught.

mod citations;
mod code_map;
mod counts;
mod invariants;
mod markdown;
mod repo;

use std::path::{Path, PathBuf};

use tfreg_e2e::workspace_root;

use repo::Repo;

/// The file's text, or nothing when it is not text.
fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The files under `dir` (any depth), leaving out build output and hidden folders.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if !name.starts_with('.') && !["target", "build", "node_modules"].contains(&&*name) {
                files_under(&entry.path(), out);
            }
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
}

/// The Markdown files whose claims are checked: the front page, the architecture, scaling,
/// security and every page of docs/.
fn doc_files(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "SCALING.md", "SECURITY.md"]
        .iter()
        .map(|f| root.join(f))
        .collect();
    let mut docs = Vec::new();
    files_under(&root.join("docs"), &mut docs);
    files.extend(
        docs.into_iter()
            .filter(|f| f.extension().is_some_and(|e| e == "md")),
    );
    files
}

fn repo() -> Repo {
    Repo::load(&workspace_root())
}

fn architecture() -> String {
    read(&workspace_root().join("ARCHITECTURE.md"))
}

fn docs() -> Vec<(String, String)> {
    let root = workspace_root();
    doc_files(&root)
        .into_iter()
        .map(|f| {
            let name = f.strip_prefix(&root).unwrap().display().to_string();
            (name, read(&f))
        })
        .collect()
}

fn assert_none(problems: Vec<String>) {
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The real text with `from` replaced by `to` (which must be there).
fn planted(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "nothing to plant over: {from:?}");
    text.replacen(from, to, 1)
}
