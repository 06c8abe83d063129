//! ARCHITECTURE.md's invariants table: every file, test, e2e module and make target a row cites
//! exists, and the row's tier is the tier of what it cites.

use std::collections::BTreeSet;

use super::markdown::{cells, code_spans, is_snake_name, section};
use super::repo::{rust_path_problem, Repo, Tier};
use super::{architecture, assert_none, planted, repo};

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

#[test]
fn every_invariant_cites_tests_that_exist_in_the_tier_it_claims() {
    assert_none(invariant_problems(&repo(), &architecture()));
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
