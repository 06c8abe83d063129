//! ARCHITECTURE.md's bird's-eye view and code map name only what exists, and its list of a new
//! function's wiring ("Adding an endpoint family") has as many files as it says.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use tfreg_e2e::workspace_root;

use super::markdown::{code_spans, number, section, spans_in_context};
use super::repo::{rust_path_problem, Repo, REPO_FOLDERS};
use super::{architecture, assert_none, files_under, planted, read, repo};

/// Every word of the files under `dirs` (identifiers, and names with `-`), with the files'
/// and folders' own names.
fn words_under(root: &Path, dirs: &[PathBuf]) -> (HashSet<String>, String) {
    let mut files = Vec::new();
    for dir in dirs {
        if dir.is_file() {
            files.push(dir.clone());
        } else {
            files_under(dir, &mut files);
        }
    }
    let mut words = HashSet::new();
    let mut all = String::new();
    for file in files {
        for part in file.strip_prefix(root).unwrap_or(&file) {
            let part = part.to_string_lossy();
            words.insert(part.split('.').next().unwrap_or("").to_owned());
        }
        let text = read(&file);
        for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-')) {
            words.insert(word.trim_matches('-').to_owned());
            for part in word.split('-') {
                words.insert(part.to_owned());
            }
        }
        all.push_str(&text);
    }
    (words, all)
}

/// `snake_case` as `UpperCamelCase` (a subcommand `undeprecate` is a variant `Undeprecate`).
fn camel(word: &str) -> String {
    word.split('_')
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or(String::new(), |first| {
                first.to_uppercase().chain(chars).collect::<String>()
            })
        })
        .collect()
}

/// Does a path of the code map resolve under one of `dirs` (or their `src/`, or as the end
/// of a path below them)?
fn path_resolves(root: &Path, dirs: &[PathBuf], path: &str) -> bool {
    let path = path.trim_end_matches('/');
    let mut bases = vec![root.to_path_buf(), root.join("crates")];
    for dir in dirs {
        bases.push(dir.clone());
        bases.push(dir.join("src"));
    }
    if let Some((head, tail)) = path.split_once('*') {
        // One `*` in one name: `crates/functions/*/Cargo.toml`, `routes/*.rs`.
        let folder = head.trim_end_matches(|c| c != '/');
        let prefix = &head[folder.len()..];
        let (suffix, below) = tail.split_once('/').unwrap_or((tail, ""));
        return bases.iter().any(|base| {
            std::fs::read_dir(base.join(folder)).is_ok_and(|entries| {
                entries.flatten().any(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.starts_with(prefix)
                        && name.ends_with(suffix)
                        && (below.is_empty() || e.path().join(below).exists())
                })
            })
        });
    }
    if bases.iter().any(|base| base.join(path).exists()) {
        return true;
    }
    let mut files = Vec::new();
    for dir in dirs {
        files_under(dir, &mut files);
    }
    let ending = format!("/{path}");
    files.iter().any(|f| {
        let shown = f.display().to_string();
        shown.ends_with(&ending) || shown.contains(&format!("{ending}/"))
    })
}

/// The problems of the bird's-eye view and the code map: paths that do not exist, modules and
/// items no source names.
fn code_map_problems(repo: &Repo, architecture: &str) -> Vec<String> {
    let root = &repo.root;
    // The bird's-eye view speaks of every crate, and so does the map's introduction; each
    // `### ` part of the map of the folders its heading names.
    let map = format!(
        "{}\n{}",
        section(architecture, "## Bird's-eye view"),
        section(architecture, "## Code map")
    );
    let global = [root.join("Makefile"), root.join("template.yaml")];
    let mut problems = Vec::new();
    let mut parts: Vec<(Vec<PathBuf>, String)> = vec![(vec![root.join("crates")], String::new())];
    for line in map.lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            let mut dirs = Vec::new();
            for named in code_spans(heading) {
                if let Some(parent) = named.strip_suffix("/*") {
                    if let Ok(entries) = std::fs::read_dir(root.join(parent)) {
                        dirs.extend(entries.flatten().map(|e| e.path()));
                    }
                } else {
                    dirs.push(root.join(named.trim_end_matches('/')));
                }
            }
            parts.push((dirs, String::new()));
        } else {
            let text = &mut parts.last_mut().unwrap().1;
            text.push_str(line);
            text.push('\n');
        }
    }
    let manifests: String = {
        let mut files = Vec::new();
        files_under(&root.join("crates"), &mut files);
        files_under(&root.join("tests"), &mut files);
        files.push(root.join("Cargo.toml"));
        files
            .iter()
            .filter(|f| f.ends_with("Cargo.toml"))
            .map(|f| read(f))
            .collect()
    };
    let tfreg_cli = words_under(root, &[root.join("crates/cli")]).0;
    for (dirs, text) in parts {
        let mut searched = dirs.clone();
        searched.extend(global.iter().cloned());
        let (words, all) = words_under(root, &searched);
        let has_word = |w: &str| words.contains(w) || words.contains(&camel(w));
        for (before, span) in spans_in_context(&text) {
            let span = span.trim();
            let problem = if let Some(target) = span.strip_prefix("make ") {
                (!repo.make.contains_key(target)).then(|| "no such make target".to_owned())
            } else if let Some(command) = span.strip_prefix("tfreg ") {
                let command = command.split_whitespace().next().unwrap_or("");
                (!tfreg_cli.contains(&camel(command))).then(|| "no such tfreg command".into())
            } else if before.trim_end().ends_with("e2e") {
                repo.e2e_tests(span).err()
            } else if span.starts_with("tfreg_") {
                rust_path_problem(repo, span)
            } else if span.contains("::") {
                let missing: Vec<&str> = span
                    .split("::")
                    .flat_map(|s| s.trim_matches(['{', '}']).split(','))
                    .map(str::trim)
                    .filter(|name| !name.is_empty() && *name != "*")
                    .filter(|name| match name.strip_suffix('*') {
                        Some(prefix) => !words.iter().any(|w| w.starts_with(prefix)),
                        None => !has_word(name),
                    })
                    .collect();
                (!missing.is_empty()).then(|| format!("no source names {missing:?}"))
            } else if span.contains(char::is_whitespace)
                || span.contains(['<', '…', '=', ':'].as_slice())
                || span.starts_with(['/', '-', '$', '#'])
                || span.starts_with("DATA/")
            {
                None
            } else if span.contains('/')
                || [".rs", ".py", ".sh", ".yaml", ".yml", ".toml"]
                    .iter()
                    .any(|e| span.ends_with(e))
            {
                let in_repo = REPO_FOLDERS.iter().any(|p| span.starts_with(p))
                    || span.ends_with(".rs")
                    || span.ends_with(".py");
                let found = path_resolves(root, &dirs, span)
                    || !in_repo && all.contains(&format!("\"{}", span.trim_end_matches('/')));
                (!found).then(|| "no such file or folder".to_owned())
            } else if span.contains('-') {
                let named = manifests.contains(&format!("\"{span}\""))
                    || manifests.contains(&format!("{span}.workspace"))
                    || manifests.contains(&format!("{span} ="))
                    || words.contains(span);
                (!named).then(|| "no package, binary or feature of that name".to_owned())
            } else {
                let missing: Vec<&str> = span
                    .split('.')
                    .filter(|w| !w.is_empty() && !has_word(w))
                    .collect();
                (!missing.is_empty()).then(|| format!("no source names {missing:?}"))
            };
            if let Some(problem) = problem {
                problems.push(format!("code map: `{span}`: {problem}"));
            }
        }
    }
    problems
}

/// The "Adding an endpoint family" section: as many numbered files as its count says, each a path
/// that exists for some function or family (`<name>`, `<family>` stand for any).
fn wiring_problems(repo: &Repo, architecture: &str) -> Vec<String> {
    let part = section(architecture, "## Adding an endpoint family");
    if part.is_empty() {
        return vec!["ARCHITECTURE.md has no \"## Adding an endpoint family\"".into()];
    }
    let prose = part.split_whitespace().collect::<Vec<_>>().join(" ");
    let Some(at) = prose.find(" files of wiring") else {
        return vec!["its section says no \"N files of wiring\"".into()];
    };
    let said_word = prose[..at].split_whitespace().last().unwrap_or("?");
    let said = number(said_word);
    let items: Vec<&str> = part
        .lines()
        .filter(|l| {
            let digits = l.chars().take_while(char::is_ascii_digit).count();
            digits > 0 && l[digits..].starts_with(". ")
        })
        .collect();
    let mut problems = Vec::new();
    if said != Some(items.len()) {
        problems.push(format!(
            "it says {said_word} files of wiring and lists {}",
            items.len()
        ));
    }
    for item in &items {
        if code_spans(item).into_iter().next().is_none() {
            problems.push(format!("a wiring item names no file: {item}"));
        }
    }
    // Every file the section names (the list's, the HTTP family's in `crates/http`, the
    // read side's in `crates/core`) exists for some function or family.
    let crates = ["http", "lambda", "core"].map(|c| repo.root.join("crates").join(c));
    for path in code_spans(part) {
        let file_like = path.contains('/')
            || [".rs", ".py", ".lock", ".yaml"]
                .iter()
                .any(|e| path.ends_with(e));
        if !file_like || path.starts_with("docs/") {
            continue;
        }
        if !path_resolves(&repo.root, &crates, &placeholders_as_globs(path)) {
            problems.push(format!("wiring: `{path}`: no such file for any function"));
        }
    }
    problems
}

/// `crates/functions/<name>/Cargo.toml` as `crates/functions/*/Cargo.toml`.
fn placeholders_as_globs(path: &str) -> String {
    let mut glob = String::new();
    let mut placeholder = false;
    for c in path.chars() {
        match c {
            '<' => placeholder = true,
            '>' => {
                placeholder = false;
                glob.push('*');
            }
            _ if placeholder => {}
            _ => glob.push(c),
        }
    }
    glob
}

#[test]
fn the_code_map_names_only_files_modules_and_items_that_exist() {
    assert_none(code_map_problems(&repo(), &architecture()));
}

#[test]
fn the_wiring_of_a_new_function_is_as_many_files_as_it_says_and_each_exists() {
    assert_none(wiring_problems(&repo(), &architecture()));
}

#[test]
fn paths_with_a_placeholder_resolve_when_some_file_matches() {
    let root = workspace_root();
    for found in [
        "crates/functions/*/Cargo.toml",
        "crates/http/src/routes/*.rs",
        "crates/functions/*",
    ] {
        assert!(path_resolves(&root, &[], found), "{found}");
    }
    for missing in [
        "crates/functions/*/Makefile",
        "crates/http/src/routes/*.py",
        "crates/nothing/*",
    ] {
        assert!(!path_resolves(&root, &[], missing), "{missing}");
    }
    // Relative to a crate named beside it.
    let http = [root.join("crates/http")];
    assert!(path_resolves(&root, &http, "src/routes/*.rs"));
    assert!(!path_resolves(&root, &http, "src/paths/*.rs"));
}

#[test]
fn a_dead_name_in_the_code_map_or_a_wrong_wiring_count_fails() {
    let (repo, architecture) = (repo(), architecture());
    let dead = planted(&architecture, "`token_cache`)", "`token_kept`)");
    assert!(!code_map_problems(&repo, &dead).is_empty());
    let moved = planted(
        &architecture,
        "(`registry/answers.rs`)",
        "(`registry/kept.rs`)",
    );
    assert!(!code_map_problems(&repo, &moved).is_empty());
    // The count one off, wherever the line breaks.
    let at = architecture.find("files of wiring").unwrap();
    let before = architecture[..at].trim_end();
    let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    let said = number(&before[start..]).expect("a count before \"files of wiring\"");
    let miscounted = format!(
        "{}{}{}",
        &architecture[..start],
        said + 1,
        &architecture[before.len()..]
    );
    assert!(!wiring_problems(&repo, &miscounted).is_empty());
}
