//! The figures the docs give of the code: the number of functions and the quota figures made from
//! it (`Function::ALL` and template.yaml), the idle cost's alarms (the template's metrics), the
//! `TFREG_` settings (the crates' sources), and the web assets' sizes (the files).

use std::collections::BTreeSet;
use std::path::Path;

use tfreg_e2e::workspace_root;
use tfreg_lambda::Function;

use super::markdown::{number, section};
use super::{assert_none, docs, files_under, planted, read};

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

fn template() -> Template {
    Template::parse(&read(&workspace_root().join("template.yaml")))
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
fn the_docs_count_the_functions_the_template_and_function_all_have() {
    assert_none(function_count_problems(&template(), &docs()));
}

#[test]
fn the_idle_cost_is_what_the_templates_alarms_read() {
    let aws = read(&workspace_root().join("docs/aws.md"));
    assert_none(idle_cost_problems(&template(), &aws));
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
