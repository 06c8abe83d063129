//! What the checks read from the repository: its test functions and their tiers, the Makefile's
//! targets and what each reaches, e2e citations, paths, and the Rust paths of the crates.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use tfreg_e2e::workspace_root;

use super::{files_under, read};

/// Which run proves something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Tier {
    /// `make test`, on every change.
    Gate,
    /// `make test-deep`.
    Deep,
}

/// A test function: the file it is in (from the root), its name, its tier (`None`: ignored
/// for another reason, so in no tier).
#[derive(Debug, Clone)]
pub(super) struct TestFn {
    pub(super) file: String,
    pub(super) name: String,
    pub(super) tier: Option<Tier>,
}

/// What the checks read once: the repository's tests and make targets.
pub(super) struct Repo {
    pub(super) root: PathBuf,
    pub(super) tests: Vec<TestFn>,
    /// Each make target and what it reaches (prerequisites and `$(MAKE) target` lines).
    pub(super) make: BTreeMap<String, Vec<String>>,
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
    pub(super) fn load(root: &Path) -> Repo {
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
    pub(super) fn make_tier(&self, target: &str) -> Result<Option<Tier>, String> {
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
    pub(super) fn tests_in(&self, file: &str) -> Vec<&TestFn> {
        let folder = format!("{}/", file.trim_end_matches(".rs"));
        let folder = folder.trim_end_matches("/mod/").to_owned() + "/";
        self.tests
            .iter()
            .filter(|t| t.file == file || t.file.starts_with(&folder))
            .collect()
    }

    /// The file of an e2e module: `module` in `tests/e2e/module.rs` or `tests/e2e/module/mod.rs`,
    /// `module::sub` in `tests/e2e/module/sub.rs` (or `.../sub/mod.rs`).
    pub(super) fn e2e_module(&self, module: &str) -> Option<String> {
        let path = module.replace("::", "/");
        [
            format!("tests/e2e/{path}.rs"),
            format!("tests/e2e/{path}/mod.rs"),
        ]
        .into_iter()
        .find(|file| self.root.join(file).is_file())
    }

    /// The e2e tests a citation names: `module::name`, `module::*` or `module::prefix*`
    /// (`prefix...` too), or a whole `module`; `module` may be a path (`docs_claims::repo`).
    pub(super) fn e2e_tests(&self, citation: &str) -> Result<Vec<&TestFn>, String> {
        let (module, name) = citation.rsplit_once("::").unwrap_or((citation, "*"));
        let Some(file) = self.e2e_module(module) else {
            let path = module.replace("::", "/");
            return Err(format!("`{citation}`: no e2e module tests/e2e/{path}.rs"));
        };
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
    pub(super) fn exists_in_a_crate(&self, path: &str) -> bool {
        self.exists(path)
            || std::fs::read_dir(self.root.join("crates"))
                .is_ok_and(|crates| crates.flatten().any(|c| c.path().join(path).exists()))
    }

    pub(super) fn exists(&self, path: &str) -> bool {
        self.root.join(path.trim_end_matches('/')).exists()
    }
}

/// The repository's top folders, which a cited path starting with one must be under.
pub(super) const REPO_FOLDERS: [&str; 7] = [
    "crates/",
    "tests/",
    "tools/",
    "packaging/",
    "events/",
    "fuzz/",
    ".github/",
];

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
pub(super) fn rust_path_problem(repo: &Repo, path: &str) -> Option<String> {
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
