//! The repository's Markdown files link to each other: every relative link must lead to a
//! file or folder that exists, and every `#anchor` to a heading of the file it names, as
//! GitHub makes anchors (lowercase, spaces as `-`, other punctuation dropped, `-1`, `-2` for
//! repeated headings). Links in code blocks and code spans are not links; web links are not
//! checked (the test needs no network).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use tfreg_e2e::workspace_root;

/// The Markdown files under `dir`, leaving out hidden folders and build output.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            if !name.starts_with('.') && !["target", "build", "node_modules"].contains(&&*name) {
                markdown_files(&entry.path(), out);
            }
        } else if kind.is_file() && name.ends_with(".md") {
            out.push(entry.path());
        }
    }
}

/// The lines of `text` outside fenced code blocks, with their numbers (from 1).
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
        } else if !fenced {
            lines.push((n + 1, line));
        }
    }
    lines
}

/// `line` without its code spans.
fn without_code(line: &str) -> String {
    line.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

/// The targets of the inline links (and images) of `line`.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code(line);
    let mut targets = Vec::new();
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        let target = rest[..end].split_whitespace().next().unwrap_or("");
        targets.push(target.trim_matches(['<', '>']).to_string());
        rest = &rest[end..];
    }
    targets
}

/// GitHub's anchor for a heading's text.
fn slug(heading: &str) -> String {
    // What GitHub renders: code spans' text, a link's text.
    let mut text = heading.replace('`', "");
    while let (Some(open), Some(mid)) = (text.find('['), text.find("](")) {
        let Some(close) = text[mid..].find(')').map(|c| mid + c) else {
            break;
        };
        if open > mid {
            break;
        }
        text = format!(
            "{}{}{}",
            &text[..open],
            &text[open + 1..mid],
            &text[close + 1..]
        );
    }
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut found = HashSet::new();
    for (_, line) in prose(text) {
        let level = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&level) || !line[level..].starts_with(' ') {
            continue;
        }
        let base = slug(line[level..].trim().trim_end_matches('#'));
        let count = seen.entry(base.clone()).or_insert(0);
        found.insert(match *count {
            0 => base.clone(),
            n => format!("{base}-{n}"),
        });
        *count += 1;
    }
    found
}

#[test]
fn anchors_are_made_as_github_makes_them() {
    assert_eq!(
        slug("Publishing with `tfreg publish`"),
        "publishing-with-tfreg-publish"
    );
    assert_eq!(
        slug("Signing in and CI: `terraform login`, and tokens without stored secrets"),
        "signing-in-and-ci-terraform-login-and-tokens-without-stored-secrets"
    );
    assert_eq!(
        slug("Trying the stack without an AWS account: `make stack`"),
        "trying-the-stack-without-an-aws-account-make-stack"
    );
    assert_eq!(slug("See [the docs](docs/x.md) now"), "see-the-docs-now");
    let repeated = anchors("# A\n## Notes\n```sh\n# not a heading\n```\n## Notes\n");
    let mut repeated: Vec<_> = repeated.into_iter().collect();
    repeated.sort();
    assert_eq!(repeated, ["a", "notes", "notes-1"]);
    assert_eq!(
        link_targets("[a](x.md#b) `[c](d.md)` ![e](f.png \"t\") [g](<h i.md>)"),
        ["x.md#b", "f.png", "h"]
    );
}

#[test]
fn every_relative_link_of_the_markdown_files_leads_somewhere() {
    let root = workspace_root();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    for expected in ["README.md", "ARCHITECTURE.md", "CHANGELOG.md", "docs"] {
        assert!(
            files.iter().any(|f| f.starts_with(root.join(expected))),
            "no {expected} among the Markdown files"
        );
    }
    let mut dead = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(&root).unwrap().display().to_string();
        for (n, line) in prose(&text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
                let linked = if path.is_empty() {
                    file.clone()
                } else {
                    file.parent().unwrap().join(path)
                };
                if !linked.exists() {
                    dead.push(format!("{shown}:{n}: {target}: no such file"));
                } else if !anchor.is_empty() {
                    let headings = if linked.is_file() && path_is_markdown(&linked) {
                        anchors(&std::fs::read_to_string(&linked).unwrap())
                    } else {
                        HashSet::new()
                    };
                    if !headings.contains(anchor) {
                        dead.push(format!("{shown}:{n}: {target}: no such heading"));
                    }
                }
            }
        }
    }
    assert!(dead.is_empty(), "dead links:\n{}", dead.join("\n"));
}

fn path_is_markdown(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "md")
}
