//! Citations outside the invariants table: README's performance lines are BENCHMARKS.md's
//! targets, and every test, repository path and make target the other docs cite exists.

use std::collections::HashSet;

use tfreg_e2e::bench::targets::{parse_targets, readme_block, readme_lines};
use tfreg_e2e::workspace_root;

use super::markdown::{is_snake_name, spans_in_context};
use super::repo::{Repo, Tier, REPO_FOLDERS};
use super::{assert_none, docs, planted, read, repo};

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
        } else if let Some((module, name)) = span.rsplit_once("::") {
            // `module::test_name` of an e2e module: the test exists (there, or in a crate's
            // tests of that name).
            let e2e = repo.e2e_module(module).is_some();
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
