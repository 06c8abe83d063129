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
//! Each check reads the docs' text and returns its problems, so the last tests here plant a
//! stale count, a dead citation and a wrong tier in a copy of the text and see them caught.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use tfreg_e2e::bench::targets::{parse_targets, readme_block, readme_lines};
use tfreg_e2e::workspace_root;
use tfreg_lambda::Function;

/// Which run proves something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Tier {
    /// `make test`, on every change.
    Gate,
    /// `make test-deep`.
    Deep,
}

/// A test function: the file it is in (from the root), its name, its tier (`None`: ignored
/// for another reason, so in no tier).
#[derive(Debug, Clone)]
struct TestFn {
    file: String,
    name: String,
    tier: Option<Tier>,
}

/// What the checks read once: the repository's tests and make targets.
struct Repo {
    root: PathBuf,
    tests: Vec<TestFn>,
    /// Each make target and what it reaches (prerequisites and `$(MAKE) target` lines).
    make: BTreeMap<String, Vec<String>>,
}

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

/// The test functions of a Rust file: `#[test]` or `#[tokio::test]` (any attribute ending in
/// `test]` or `test(...)]`), with the `#[ignore]` among its attributes.
fn tests_of(file: &str, text: &str) -> Vec<TestFn> {
    let mut found = Vec::new();
    let (mut is_test, mut ignore): (bool, Option<bool>) = (false, None);
    for line in text.lines().map(str::trim) {
        if line.starts_with("#[") {
            let attribute = line.split('(').next().unwrap_or(line);
            if attribute.ends_with("test]") || attribute.ends_with("::test") {
                is_test = true;
            } else if let Some(rest) = line.strip_prefix("#[ignore") {
                ignore = Some(rest.trim_start().starts_with("= \"deep tier"));
            }
            continue;
        }
        if line.starts_with("//") {
            continue;
        }
        if is_test {
            let signature = line
                .trim_start_matches("pub ")
                .trim_start_matches("async ")
                .strip_prefix("fn ");
            if let Some(signature) = signature {
                let name: String = signature
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    found.push(TestFn {
                        file: file.to_owned(),
                        name,
                        tier: match ignore {
                            None => Some(Tier::Gate),
                            Some(true) => Some(Tier::Deep),
                            Some(false) => None,
                        },
                    });
                }
            }
        }
        (is_test, ignore) = (false, None);
    }
    found
}

/// The Makefile's targets and what each reaches directly: its prerequisites and the targets
/// its recipe runs through `$(MAKE)`.
fn make_targets(makefile: &str) -> BTreeMap<String, Vec<String>> {
    let mut targets: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Vec<String> = Vec::new();
    for line in makefile.lines() {
        if let Some(recipe) = line.strip_prefix('\t') {
            for call in recipe.split("$(MAKE)").skip(1) {
                let called = call
                    .split_whitespace()
                    .take_while(|w| !w.contains(['>', ';', '&', '|']))
                    .filter(|w| !w.starts_with('-') && !w.contains('='))
                    .map(str::to_owned);
                let called: Vec<String> = called.collect();
                for target in &current {
                    targets
                        .entry(target.clone())
                        .or_default()
                        .extend(called.clone());
                }
            }
            continue;
        }
        current.clear();
        if line.starts_with(['#', ' ', '.']) || line.contains(":=") || line.contains("?=") {
            continue;
        }
        if let Some((names, prerequisites)) = line.split_once(':') {
            if names.contains('$') || prerequisites.starts_with('=') {
                continue;
            }
            let prerequisites: Vec<String> = prerequisites
                .split_whitespace()
                .filter(|p| !p.contains('$'))
                .map(str::to_owned)
                .collect();
            for name in names.split_whitespace() {
                targets
                    .entry(name.to_owned())
                    .or_default()
                    .extend(prerequisites.clone());
                current.push(name.to_owned());
            }
        }
    }
    targets
}

impl Repo {
    fn load(root: &Path) -> Repo {
        let mut files = Vec::new();
        for dir in ["crates", "tests"] {
            files_under(&root.join(dir), &mut files);
        }
        let mut tests = Vec::new();
        for file in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        {
            let shown = file.strip_prefix(root).unwrap().display().to_string();
            tests.extend(tests_of(&shown, &read(file)));
        }
        Repo {
            root: root.to_path_buf(),
            tests,
            make: make_targets(&read(&root.join("Makefile"))),
        }
    }

    /// The targets `from` reaches, itself included.
    fn reached_from(&self, from: &str) -> HashSet<String> {
        let mut seen = HashSet::new();
        let mut next = vec![from.to_owned()];
        while let Some(target) = next.pop() {
            if seen.insert(target.clone()) {
                next.extend(self.make.get(&target).into_iter().flatten().cloned());
            }
        }
        seen
    }

    /// A make target's tier: the gate when `make test` reaches it, deep when only
    /// `make test-deep` does.
    fn make_tier(&self, target: &str) -> Result<Option<Tier>, String> {
        if !self.make.contains_key(target) {
            return Err(format!("`make {target}`: the Makefile has no such target"));
        }
        if self.reached_from("test").contains(target) {
            Ok(Some(Tier::Gate))
        } else if self.reached_from("test-deep").contains(target) {
            Ok(Some(Tier::Deep))
        } else {
            Ok(None)
        }
    }

    /// The tests of a file, or of the folder of its submodules (`x.rs` and `x/`).
    fn tests_in(&self, file: &str) -> Vec<&TestFn> {
        let folder = format!("{}/", file.trim_end_matches(".rs"));
        let folder = folder.trim_end_matches("/mod/").to_owned() + "/";
        self.tests
            .iter()
            .filter(|t| t.file == file || t.file.starts_with(&folder))
            .collect()
    }

    /// The e2e tests a citation names: `module::name`, `module::*` or `module::prefix*`
    /// (`prefix...` too), or a whole `module`.
    fn e2e_tests(&self, citation: &str) -> Result<Vec<&TestFn>, String> {
        let (module, name) = citation.split_once("::").unwrap_or((citation, "*"));
        let file = format!("tests/e2e/{module}.rs");
        if !self.root.join(&file).is_file() {
            return Err(format!("`{citation}`: no e2e module {file}"));
        }
        let in_module = self.tests_in(&file);
        let prefix = name.strip_suffix('*').or_else(|| name.strip_suffix("..."));
        let named: Vec<&TestFn> = match prefix {
            Some(prefix) => in_module
                .into_iter()
                .filter(|t| t.name.starts_with(prefix))
                .collect(),
            None => in_module.into_iter().filter(|t| t.name == name).collect(),
        };
        if named.is_empty() {
            return Err(format!("`{citation}`: no such test in {file}"));
        }
        Ok(named)
    }

    /// Does a path exist from the root, or (`tests/router.rs` after a crate's name) in a crate?
    fn exists_in_a_crate(&self, path: &str) -> bool {
        self.exists(path)
            || std::fs::read_dir(self.root.join("crates"))
                .is_ok_and(|crates| crates.flatten().any(|c| c.path().join(path).exists()))
    }

    fn exists(&self, path: &str) -> bool {
        self.root.join(path.trim_end_matches('/')).exists()
    }
}

/// The backticked spans of `text`.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The backticked spans of `text`, each with the text since the span before it.
fn spans_in_context(text: &str) -> Vec<(&str, &str)> {
    let parts: Vec<&str> = text.split('`').collect();
    (1..parts.len())
        .step_by(2)
        .map(|i| (parts[i - 1], parts[i]))
        .collect()
}

/// The repository's top folders, which a cited path starting with one must be under.
const REPO_FOLDERS: [&str; 7] = [
    "crates/",
    "tests/",
    "tools/",
    "packaging/",
    "events/",
    "fuzz/",
    ".github/",
];

/// `text`'s section under the heading line `heading` (up to the next heading of its level or
/// above), or "" when there is none.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let level = heading.chars().take_while(|&c| c == '#').count();
    let Some(start) = text.find(&format!("\n{heading}\n")) else {
        return "";
    };
    let body = &text[start + heading.len() + 2..];
    let mut at = 0;
    let mut fenced = false;
    for line in body.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !fenced && (1..=level).contains(&hashes) && line[hashes..].starts_with(' ') {
            return &body[..at];
        }
        at += line.len() + 1;
    }
    body
}

/// The cells of a Markdown table row, splitting on `|` outside code spans.
fn cells(row: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut code = false;
    for c in row
        .trim()
        .trim_start_matches('|')
        .trim_end_matches('|')
        .chars()
    {
        match c {
            '`' => {
                code = !code;
                cells.last_mut().unwrap().push(c);
            }
            '|' if !code => cells.push(String::new()),
            _ => cells.last_mut().unwrap().push(c),
        }
    }
    cells.iter().map(|c| c.trim().to_owned()).collect()
}

fn is_snake_name(token: &str) -> bool {
    token.contains('_')
        && token
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Does `source` define `name` as a `kind` (`fn name`, `struct name`...), the whole word?
fn defines(source: &str, kind: &str, name: &str) -> bool {
    let declared = format!("{kind} {name}");
    source.match_indices(&declared).any(|(at, _)| {
        let after = source[at + declared.len()..].chars().next();
        !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// Does a Rust path (`tfreg_core::store::contract`, `tfreg_lambda::run_*`) name a module of a
/// workspace crate, and items that its modules define?
fn rust_path_problem(repo: &Repo, path: &str) -> Option<String> {
    let mut segments = path.split("::");
    let krate = segments.next()?.strip_prefix("tfreg_")?;
    let mut dir = repo.root.join("crates").join(krate).join("src");
    let mut module = dir.join("lib.rs");
    let mut rest: Vec<&str> = Vec::new();
    for segment in segments {
        if !rest.is_empty() {
            rest.push(segment);
        } else if dir.join(format!("{segment}.rs")).is_file() {
            module = dir.join(format!("{segment}.rs"));
            dir = dir.join(segment);
        } else if dir.join(segment).join("mod.rs").is_file() {
            dir = dir.join(segment);
            module = dir.join("mod.rs");
        } else {
            rest.push(segment);
        }
    }
    let mut source = read(&module);
    if source.is_empty() {
        return Some(format!("`{path}`: no crate or module {}", module.display()));
    }
    if module.ends_with("mod.rs") || module.ends_with("lib.rs") || dir.is_dir() {
        let mut files = Vec::new();
        files_under(&dir, &mut files);
        source.extend(files.iter().map(|f| read(f)));
    }
    for item in rest {
        let defined = match item.strip_suffix('*') {
            Some(prefix) => source.contains(&format!("fn {prefix}")),
            None => ["fn", "struct", "enum", "trait", "type", "const", "mod"]
                .iter()
                .any(|kind| defines(&source, kind, item)),
        };
        if !defined {
            return Some(format!("`{path}`: {} defines no {item}", module.display()));
        }
    }
    None
}

/// A citation of the invariants table: what it names and the tiers that run it.
fn citation_tiers(repo: &Repo, held_by: &str) -> Result<BTreeSet<Tier>, Vec<String>> {
    let mut problems = Vec::new();
    let mut tiers = BTreeSet::new();
    // Files cited, each with the test names that followed it.
    let mut files: Vec<(String, Vec<String>)> = Vec::new();
    let text: Vec<&str> = held_by.split('`').collect();
    for span in text.iter().skip(1).step_by(2) {
        let mut add = |tier: Option<Tier>, what: &str| match tier {
            Some(tier) => {
                tiers.insert(tier);
            }
            None => problems.push(format!("{what} runs in no tier")),
        };
        if let Some(target) = span.strip_prefix("make ") {
            match repo.make_tier(target) {
                Ok(tier) => add(tier, &format!("`make {target}`")),
                Err(e) => problems.push(e),
            }
        } else if span.starts_with("tfreg_") {
            problems.extend(rust_path_problem(repo, span));
        } else if span.contains("::") {
            // Every `a::b` of the table that is not a crate's path is an e2e test.
            match repo.e2e_tests(span) {
                Ok(found) => {
                    for test in found {
                        add(test.tier, &format!("e2e `{span}`"));
                    }
                }
                Err(e) => problems.push(e),
            }
        } else if span.contains('/') {
            if !repo.exists(span) {
                problems.push(format!("`{span}`: no such file"));
            }
            files.push((span.to_string(), Vec::new()));
        } else if is_snake_name(span) {
            match files.last_mut() {
                Some((_, names)) => names.push(span.to_string()),
                None => problems.push(format!("`{span}`: a test name without the file before it")),
            }
        }
    }
    for (file, names) in files {
        if !file.ends_with(".rs") {
            continue;
        }
        let in_file = repo.tests_in(&file);
        if names.is_empty() {
            if in_file.is_empty() {
                problems.push(format!("`{file}` is cited for its tests and has none"));
            }
            for test in &in_file {
                let name = format!("`{file}` `{}`", test.name);
                match test.tier {
                    Some(tier) => {
                        tiers.insert(tier);
                    }
                    None => problems.push(format!("{name} runs in no tier")),
                }
            }
        }
        for name in names {
            match in_file.iter().find(|t| t.name == name) {
                Some(test) => match test.tier {
                    Some(tier) => {
                        tiers.insert(tier);
                    }
                    None => problems.push(format!("`{file}` `{name}` runs in no tier")),
                },
                None => problems.push(format!("`{file}` has no test `{name}`")),
            }
        }
    }
    if problems.is_empty() {
        Ok(tiers)
    } else {
        Err(problems)
    }
}

/// The invariants table's problems: dead citations, and tiers other than the cited tests'.
fn invariant_problems(repo: &Repo, architecture: &str) -> Vec<String> {
    let table = section(architecture, "## Invariants");
    let mut rows = table.lines().filter(|l| l.starts_with('|'));
    let header = rows.next().map(cells).unwrap_or_default();
    if header != ["invariant", "tier", "held by"] {
        return vec![format!(
            "the invariants table's header is {header:?}, not invariant | tier | held by"
        )];
    }
    let mut problems = Vec::new();
    let mut count = 0;
    for row in rows.skip(1) {
        count += 1;
        let cells = cells(row);
        let [invariant, tier, held_by] = &cells[..] else {
            problems.push(format!("a row has not three cells: {row}"));
            continue;
        };
        let short: String = invariant.chars().take(60).collect();
        let claimed: BTreeSet<Tier> = match tier.as_str() {
            "gate" => [Tier::Gate].into(),
            "deep" => [Tier::Deep].into(),
            "gate and deep" => [Tier::Gate, Tier::Deep].into(),
            other => {
                problems.push(format!(
                    "{short}...: tier {other:?} is not gate, deep, or gate and deep"
                ));
                continue;
            }
        };
        for span in code_spans(invariant) {
            if span.starts_with("crates/") && !repo.exists(span) {
                problems.push(format!("{short}...: `{span}`: no such file"));
            }
        }
        match citation_tiers(repo, held_by) {
            Err(dead) => problems.extend(dead.into_iter().map(|p| format!("{short}...: {p}"))),
            Ok(cited) if cited != claimed => problems.push(format!(
                "{short}...: says {tier:?}, but what it cites runs in {cited:?}"
            )),
            Ok(_) => {}
        }
    }
    if count == 0 {
        problems.push("the invariants table has no rows".into());
    }
    problems
}

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

/// Number words up to twelve, and numerals.
fn number(word: &str) -> Option<usize> {
    const WORDS: [&str; 13] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    let word = word.to_lowercase();
    WORDS
        .iter()
        .position(|w| *w == word)
        .or_else(|| word.parse().ok())
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

/// The functions template.yaml declares, by logical id, with the condition of each that has
/// one; and a parameter's default.
struct Template {
    functions: Vec<(String, Option<String>, String)>,
    alarms: Vec<(String, Option<String>, usize)>,
    text: String,
}

impl Template {
    fn parse(text: &str) -> Template {
        let resources = text.split("\nResources:\n").nth(1).unwrap_or("");
        let mut functions = Vec::new();
        let mut alarms = Vec::new();
        let mut blocks: Vec<(String, String)> = Vec::new();
        for line in resources.lines() {
            let name = line
                .strip_prefix("  ")
                .filter(|l| !l.starts_with([' ', '#']))
                .and_then(|l| l.strip_suffix(':'));
            match name {
                Some(name) => blocks.push((name.to_owned(), String::new())),
                None if !line.starts_with(|c: char| !c.is_whitespace()) => {
                    if let Some((_, block)) = blocks.last_mut() {
                        block.push_str(line);
                        block.push('\n');
                    }
                }
                None => break,
            }
        }
        for (name, block) in blocks {
            let field = |key: &str| {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(&format!("    {key}: ")))
                    .map(str::to_owned)
            };
            let condition = field("Condition");
            match field("Type").as_deref() {
                Some("AWS::Serverless::Function") => {
                    let code = block
                        .lines()
                        .find_map(|l| l.trim().strip_prefix("CodeUri: "))
                        .unwrap_or_default();
                    let code = code.trim_start_matches("build/lambda/");
                    let function = code.split('/').next().unwrap_or("").to_owned();
                    functions.push((name, condition, function));
                }
                Some("AWS::CloudWatch::Alarm") => {
                    let metrics = block.matches("MetricName:").count();
                    alarms.push((name, condition, metrics));
                }
                _ => {}
            }
        }
        Template {
            functions,
            alarms,
            text: text.to_owned(),
        }
    }

    fn default_of(&self, parameter: &str) -> Option<String> {
        let parameters = self.text.split("\nParameters:\n").nth(1)?;
        let at = parameters.find(&format!("\n  {parameter}:\n"))?;
        parameters[at..]
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with("    "))
            .find_map(|l| l.trim().strip_prefix("Default: "))
            .map(|d| d.trim_matches('"').to_owned())
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

/// The text of the doc named `name` among `docs` ("" when there is none).
fn doc_text<'a>(docs: &'a [(String, String)], name: &str) -> &'a str {
    docs.iter()
        .find(|(file, _)| file == name)
        .map_or("", |(_, text)| text.as_str())
}

/// What the docs say of the number of functions and what it makes, against the template
/// and `Function::ALL`: `docs` are `(file name, text)`.
fn function_count_problems(template: &Template, docs: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    let total = template.functions.len();
    if total != Function::ALL.len() {
        problems.push(format!(
            "template.yaml has {total} functions, Function::ALL {}",
            Function::ALL.len()
        ));
    }
    let conditional: Vec<&str> = template
        .functions
        .iter()
        .filter(|(_, condition, _)| condition.is_some())
        .map(|(_, _, function)| function.as_str())
        .collect();
    let always = total - conditional.len();
    let limit: usize = template
        .default_of("FunctionConcurrencyLimit")
        .and_then(|d| d.parse().ok())
        .unwrap_or(0);
    let joined = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let scaling = joined(doc_text(docs, "SCALING.md"));
    let aws = joined(doc_text(docs, "docs/aws.md"));
    let mut named = conditional
        .iter()
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>();
    named.sort();
    let expected = [
        (
            "SCALING.md",
            &scaling,
            format!(
                "There are {total} functions: {always} always, plus {} when those features are on",
                named.join(" and ")
            ),
        ),
        (
            "SCALING.md",
            &scaling,
            format!(
                "`{total} functions × FunctionConcurrencyLimit ≤ quota − 100`, which allows at most {} at the default quota of 1,000",
                900 / total.max(1)
            ),
        ),
        (
            "docs/aws.md",
            &aws,
            format!(
                "so up to {total} functions × {limit} need a quota of {}",
                total * limit + 100
            ),
        ),
    ];
    for (file, text, sentence) in expected {
        if !text.contains(&sentence) {
            problems.push(format!("{file} does not say: {sentence}"));
        }
    }
    // Any other count of functions anywhere is the same number.
    for (file, text) in docs {
        let words: Vec<&str> = text.split_whitespace().collect();
        for (i, word) in words.iter().enumerate().skip(1) {
            let word = word.trim_end_matches([',', '.', ';', ':', ')']);
            if word != "functions" {
                continue;
            }
            let before = words[i - 1].trim_start_matches(['(', '`']);
            let before = if before.eq_ignore_ascii_case("lambda") && i >= 2 {
                words[i - 2].trim_start_matches(['(', '`'])
            } else {
                before
            };
            if let Some(n) = number(before) {
                if n != total {
                    problems.push(format!(
                        "{file}: \"{before} functions\": the template has {total}"
                    ));
                }
            }
        }
    }
    problems
}

/// The idle cost's alarm figure (docs/aws.md) against the metrics the template's alarms read,
/// at CloudWatch's $0.10 a metric a month.
fn idle_cost_problems(template: &Template, aws: &str) -> Vec<String> {
    let always: usize = template
        .alarms
        .iter()
        .filter(|(_, c, _)| c.is_none())
        .map(|(_, _, n)| n)
        .sum();
    let all: usize = template.alarms.iter().map(|(_, _, n)| n).sum();
    let idle = section(aws, "### What an idle stack costs");
    let idle = idle.split_whitespace().collect::<Vec<_>>().join(" ");
    let sentence = format!(
        "its alarms, which read {always} metrics at $0.10 each: ${:.2} a month ({all} metrics and ${:.2} with the upstream cache",
        always as f64 * 0.10,
        all as f64 * 0.10
    );
    if idle.contains(&sentence) {
        vec![]
    } else {
        vec![format!(
            "docs/aws.md's \"What an idle stack costs\" does not say: {sentence}"
        )]
    }
}

/// The `TFREG_` variables of `text`.
fn variables(text: &str) -> BTreeSet<String> {
    text.match_indices("TFREG_")
        .map(|(at, _)| {
            text[at..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect::<String>()
        })
        .filter(|v| v.len() > "TFREG_".len() && !v.ends_with('_'))
        .collect()
}

/// Every `TFREG_` variable the crates' sources name is in the configuration reference, and
/// every one the docs name is in the sources or the tests' tools (docs/upgrading.md names
/// retired ones).
fn settings_problems(root: &Path, docs: &[(String, String)]) -> Vec<String> {
    let mut files = Vec::new();
    files_under(&root.join("crates"), &mut files);
    let source: String = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        .filter(|f| !f.components().any(|c| c.as_os_str() == "tests"))
        .map(|f| read(f))
        .collect();
    let read_by_code = variables(&source);
    // The tests' own settings (`TFREG_SOAK_SEED`) are named by the docs too.
    let mut tools = Vec::new();
    files_under(&root.join("tests/src"), &mut tools);
    let mut known = read_by_code.clone();
    known.extend(tools.iter().flat_map(|f| variables(&read(f))));
    let reference = variables(doc_text(docs, "docs/configuration.md"));
    let mut problems: Vec<String> = read_by_code
        .difference(&reference)
        .map(|v| format!("docs/configuration.md does not name {v}, which the code reads"))
        .collect();
    for (file, text) in docs.iter().filter(|(f, _)| f != "docs/upgrading.md") {
        for v in variables(text).difference(&known) {
            problems.push(format!("{file} names {v}, which no crate reads"));
        }
    }
    problems
}

/// docs/web.md's sizes of the pages' one stylesheet and one script, against the files.
fn asset_problems(root: &Path, web: &str) -> Vec<String> {
    let assets = root.join("crates/http/src/web/assets");
    let web = web.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut problems = Vec::new();
    for (what, file) in [("stylesheet", "tfreg.css"), ("script", "tfreg.js")] {
        let said = web
            .split(&format!("one {what} under "))
            .nth(1)
            .and_then(|rest| rest.split(" KB").next())
            .and_then(|n| n.parse::<u64>().ok());
        let size = std::fs::metadata(assets.join(file)).map_or(0, |m| m.len());
        match said {
            Some(kb) if size <= kb * 1024 => {}
            Some(kb) => problems.push(format!(
                "docs/web.md: one {what} under {kb} KB, but {file} is {size} bytes"
            )),
            None => problems.push(format!("docs/web.md says no \"one {what} under N KB\"")),
        }
    }
    problems
}

/// README's performance lines against what `make bench` writes from BENCHMARKS.md.
fn performance_problems(readme: &str, benchmarks: &str) -> Vec<String> {
    let targets = match parse_targets(benchmarks) {
        Ok(targets) => targets,
        Err(e) => return vec![format!("BENCHMARKS.md: {e}")],
    };
    match readme_block(readme) {
        Err(e) => vec![format!("README.md: {e}")],
        Ok(block) if block != readme_lines(&targets) => vec![format!(
            "README.md's performance lines are not BENCHMARKS.md's targets (run `tfreg-bench --readme`):\n{block}\nwhere make bench writes:\n{}",
            readme_lines(&targets)
        )],
        Ok(_) => vec![],
    }
}

/// The other docs' citations: e2e tests (`module::name`), repository paths and make targets;
/// a page that says every test it names runs in `make test` names no deep tier test.
fn citation_problems(repo: &Repo, file: &str, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let gate_only = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .contains("every test named here runs in `make test`");
    let all_tests: HashSet<&str> = repo.tests.iter().map(|t| t.name.as_str()).collect();
    for (before, span) in spans_in_context(text) {
        let span = span.trim();
        if let Some(target) = span.strip_prefix("make ") {
            let target = target.split_whitespace().next().unwrap_or("");
            if !target.contains('=') && !repo.make.contains_key(target) {
                problems.push(format!("{file}: `{span}`: no such make target"));
            }
        } else if before.trim_end().ends_with("e2e") {
            match repo.e2e_tests(span) {
                Err(e) => problems.push(format!("{file}: {e}")),
                Ok(tests) if gate_only => problems.extend(
                    tests
                        .iter()
                        .filter(|t| t.tier != Some(Tier::Gate))
                        .map(|t| format!("{file}: `{span}`: {} is not in `make test`", t.name)),
                ),
                Ok(_) => {}
            }
        } else if let Some((module, name)) = span.split_once("::") {
            // `module::test_name` of an e2e module: the test exists (there, or in a crate's
            // tests of that name).
            let e2e = repo.root.join(format!("tests/e2e/{module}.rs")).is_file();
            let a_test = e2e && is_snake_name(name) && name.matches('_').count() >= 2;
            if a_test && !all_tests.contains(name) {
                problems.push(format!("{file}: `{span}`: no such test"));
            }
            let deep = repo
                .tests
                .iter()
                .any(|t| t.name == name && t.tier != Some(Tier::Gate));
            if a_test && gate_only && deep {
                problems.push(format!("{file}: `{span}` is not in `make test`"));
            }
        } else if REPO_FOLDERS.iter().any(|p| span.starts_with(p))
            && !span.contains(['<', '*', ' ', '…'].as_slice())
            && !repo.exists_in_a_crate(span.split(':').next().unwrap_or(span))
        {
            problems.push(format!("{file}: `{span}`: no such file"));
        }
    }
    problems
}

fn repo() -> Repo {
    Repo::load(&workspace_root())
}

fn architecture() -> String {
    read(&workspace_root().join("ARCHITECTURE.md"))
}

fn template() -> Template {
    Template::parse(&read(&workspace_root().join("template.yaml")))
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

#[test]
fn every_invariant_cites_tests_that_exist_in_the_tier_it_claims() {
    assert_none(invariant_problems(&repo(), &architecture()));
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
fn the_docs_count_the_functions_the_template_and_function_all_have() {
    assert_none(function_count_problems(&template(), &docs()));
}

#[test]
fn the_idle_cost_is_what_the_templates_alarms_read() {
    let aws = read(&workspace_root().join("docs/aws.md"));
    assert_none(idle_cost_problems(&template(), &aws));
}

#[test]
fn the_readme_performance_lines_are_benchmarks_targets() {
    let root = workspace_root();
    assert_none(performance_problems(
        &read(&root.join("README.md")),
        &read(&root.join("BENCHMARKS.md")),
    ));
}

#[test]
fn every_test_path_and_make_target_the_docs_cite_exists() {
    let repo = repo();
    let problems = docs()
        .iter()
        .flat_map(|(file, text)| citation_problems(&repo, file, text))
        .collect();
    assert_none(problems);
}

#[test]
fn every_setting_the_code_reads_is_in_the_reference_and_no_doc_names_another() {
    assert_none(settings_problems(&workspace_root(), &docs()));
}

#[test]
fn the_web_pages_assets_are_as_small_as_the_docs_say() {
    let root = workspace_root();
    assert_none(asset_problems(&root, &read(&root.join("docs/web.md"))));
}

#[test]
fn tests_and_make_targets_are_read_into_their_tiers() {
    let source = "#[test]\nfn gate_one() {}\n\n#[tokio::test(flavor = \"multi_thread\")]\n#[ignore = \"deep tier: make test-deep (big)\"]\nasync fn deep_one() {}\n\n#[test]\n#[ignore = \"flaky\"]\nfn neither() {}\n\nfn helper() {}\n";
    let found = tests_of("x.rs", source);
    let tiers: Vec<(&str, Option<Tier>)> =
        found.iter().map(|t| (t.name.as_str(), t.tier)).collect();
    assert_eq!(
        tiers,
        [
            ("gate_one", Some(Tier::Gate)),
            ("deep_one", Some(Tier::Deep)),
            ("neither", None)
        ]
    );
    let make = make_targets(
        "test: lint\n\tcargo test\ntest-deep: venv\n\t$(MAKE) --no-print-directory zips >log 2>&1\nlint:\nzips: build\nbuild:\nvenv: $(VENV)/.installed\n",
    );
    let repo = Repo {
        root: workspace_root(),
        tests: found,
        make,
    };
    assert_eq!(repo.make_tier("lint"), Ok(Some(Tier::Gate)));
    assert_eq!(repo.make_tier("build"), Ok(Some(Tier::Deep)));
    assert!(repo.make_tier("nothing").is_err());
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

/// The real text with `from` replaced by `to` (which must be there).
fn planted(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "nothing to plant over: {from:?}");
    text.replacen(from, to, 1)
}

/// `docs` with `from` replaced by `to` in `file`.
fn planted_in(
    docs: &[(String, String)],
    file: &str,
    from: &str,
    to: &str,
) -> Vec<(String, String)> {
    docs.iter()
        .map(|(name, text)| match name == file {
            true => (name.clone(), planted(text, from, to)),
            false => (name.clone(), text.clone()),
        })
        .collect()
}

#[test]
fn a_dead_citation_or_a_wrong_tier_fails_the_invariants() {
    let (repo, architecture) = (repo(), architecture());
    assert_none(invariant_problems(&repo, &architecture));
    // A test renamed away,
    let renamed = planted(
        &architecture,
        "`lifecycle::a_deprecated_version_installs_and_a_yanked_one_is_not_chosen`",
        "`lifecycle::a_deprecated_version_installs`",
    );
    assert!(!invariant_problems(&repo, &renamed).is_empty());
    // a file moved,
    let moved = planted(
        &architecture,
        "`crates/core/tests/immutability.rs`",
        "`crates/core/tests/immutable.rs`",
    );
    assert!(!invariant_problems(&repo, &moved).is_empty());
    // a make target that is gone,
    let gone = planted(
        &architecture,
        "| gate | `make check-local-build`",
        "| gate | `make check-local`",
    );
    assert!(!invariant_problems(&repo, &gone).is_empty());
    // an e2e module that matches nothing,
    let nothing = planted(&architecture, "e2e `hostile::*`", "e2e `hostility::*`");
    assert!(!invariant_problems(&repo, &nothing).is_empty());
    // and a row that claims the gate for what only the deep tier runs.
    let zips = "| Each Lambda zip stays under 8 MB | deep |";
    let wrong = planted(
        &architecture,
        zips,
        "| Each Lambda zip stays under 8 MB | gate |",
    );
    assert!(!invariant_problems(&repo, &wrong).is_empty());
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

#[test]
fn a_stale_count_of_functions_a_setting_or_a_stale_idle_cost_fails() {
    let (template, docs) = (template(), docs());
    assert_none(function_count_problems(&template, &docs));
    let total = Function::ALL.len();
    for (file, from, to) in [
        (
            "SCALING.md",
            format!("There are {total} functions"),
            "There are 8 functions".to_owned(),
        ),
        (
            "docs/aws.md",
            format!("up to {total} functions"),
            "up to 6 functions".to_owned(),
        ),
        (
            "docs/web.md",
            "The browser tests".to_owned(),
            "The browser tests of the eight functions".to_owned(),
        ),
    ] {
        let stale = planted_in(&docs, file, &from, &to);
        assert!(
            !function_count_problems(&template, &stale).is_empty(),
            "{file}: {to}"
        );
    }
    let unnamed = planted_in(
        &docs,
        "docs/configuration.md",
        "TFREG_DEAD_LETTER_QUEUE",
        "TFREG_DLQ",
    );
    assert!(settings_problems(&workspace_root(), &unnamed).len() >= 2);
    let aws = read(&workspace_root().join("docs/aws.md"));
    assert_none(idle_cost_problems(&template, &aws));
    let stale = planted(&aws, "$1.00 a month", "$0.90 a month");
    assert!(!idle_cost_problems(&template, &stale).is_empty());
}

#[test]
fn readme_performance_lines_other_than_benchmarks_fail() {
    let root = workspace_root();
    let (readme, benchmarks) = (
        read(&root.join("README.md")),
        read(&root.join("BENCHMARKS.md")),
    );
    assert_none(performance_problems(&readme, &benchmarks));
    // README retyped by hand,
    let retyped = planted(&readme, "lowest ratio 0.51×", "lowest ratio 0.82×");
    assert!(!performance_problems(&retyped, &benchmarks).is_empty());
    // or BENCHMARKS.md's table edited without the README.
    let edited = planted(&benchmarks, "| met | 269 MiB |", "| **missed** | 269 MiB |");
    assert!(!performance_problems(&readme, &edited).is_empty());
}

#[test]
fn a_dead_citation_in_the_other_docs_fails() {
    let repo = repo();
    let text = "Held by `serve::a_restart_indexes_only_what_changed_while_it_was_down`, \
                `crates/core/tests/immutability.rs` and `make lint`.";
    assert_none(citation_problems(&repo, "x.md", text));
    for dead in [
        "`serve::a_restart_indexes_everything_again`",
        "`crates/core/tests/immutable.rs`",
        "`make lint-everything`",
    ] {
        assert!(!citation_problems(&repo, "x.md", dead).is_empty(), "{dead}");
    }
    // A page that promises the gate runs every test it names, naming a deep tier test.
    let deep = repo
        .tests
        .iter()
        .find(|t| t.tier == Some(Tier::Deep) && t.file.starts_with("tests/e2e/"))
        .expect("a deep tier e2e test");
    let module = deep
        .file
        .trim_start_matches("tests/e2e/")
        .trim_end_matches(".rs");
    let promise = "How each is tested (every test named here runs in `make test`):";
    let page = format!("{promise} e2e `{module}::{}`.", deep.name);
    assert!(
        !citation_problems(&repo, "x.md", &page).is_empty(),
        "{page}"
    );
    let page = format!("{promise} `{module}::{}`.", deep.name);
    assert!(
        !citation_problems(&repo, "x.md", &page).is_empty(),
        "{page}"
    );
}
