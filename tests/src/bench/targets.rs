//! The targets of a `make bench` run: the table at the top of `BENCHMARKS.md`, and the README's
//! performance lines, which are written from the same rows (between two marker comments) so
//! the front page can never say other figures than the report. Pure functions: `tfreg-bench`
//! writes with them, and e2e `docs_claims` reads `BENCHMARKS.md` back with them and fails when
//! the README's lines are not what they would write.

use std::fmt::Write as _;

/// One target of a run, as a row of `BENCHMARKS.md`'s targets table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// What is aimed at, e.g. "API p99 < 5 ms".
    pub what: String,
    /// Whether this run met it.
    pub met: bool,
    /// What this run measured, e.g. "highest p99 11.34 ms at 64 connections".
    pub measured: String,
}

impl Target {
    /// A target `what`, met or not, with what was `measured`.
    pub fn new(what: &str, met: bool, measured: &str) -> Target {
        Target {
            what: what.to_owned(),
            met,
            measured: measured.to_owned(),
        }
    }
}

/// The line before the README's performance lines.
pub const README_START: &str = "<!-- make bench (tfreg-bench) writes the lines from here to the end marker from BENCHMARKS.md's targets; e2e docs_claims fails when they differ -->";

/// The line after them.
pub const README_END: &str = "<!-- end of the lines make bench writes -->";

/// The targets section of the report: its heading and table.
pub fn targets_table(targets: &[Target]) -> String {
    let mut out = String::from("## Targets\n\n| target | | measured |\n|---|---|---|\n");
    for target in targets {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            cell(&target.what),
            if target.met { "met" } else { "**missed**" },
            cell(&target.measured)
        );
    }
    out
}

/// A table cell's text: a `|` escaped, even in a code span, as GitHub's tables need.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The rows of the targets table of a report written by [`targets_table`] (or by hand in its
/// shape: an unescaped `|` inside the first cell is read as part of it).
pub fn parse_targets(report: &str) -> Result<Vec<Target>, String> {
    let start = report
        .find("\n## Targets\n")
        .ok_or("no \"## Targets\" section")?;
    let mut rows = report[start + 1..]
        .lines()
        .skip(1)
        .skip_while(|line| line.is_empty())
        .take_while(|line| line.starts_with('|'));
    let header = rows.next().ok_or("the targets section has no table")?;
    if header != "| target | | measured |" {
        return Err(format!("the targets table's header is {header:?}"));
    }
    let mut targets = Vec::new();
    for row in rows.skip(1) {
        let inner = row
            .strip_prefix("| ")
            .and_then(|r| r.strip_suffix(" |"))
            .ok_or_else(|| format!("a targets row is not `| ... |`: {row:?}"))?;
        let mut cells = inner.rsplitn(3, " | ");
        let (Some(measured), Some(status), Some(what)) = (cells.next(), cells.next(), cells.next())
        else {
            return Err(format!("a targets row has not three cells: {row:?}"));
        };
        let met = match status {
            "met" => true,
            "**missed**" => false,
            other => return Err(format!("a target is neither met nor **missed**: {other:?}")),
        };
        let unescape = |text: &str| text.replace("\\|", "|");
        targets.push(Target {
            what: unescape(what),
            met,
            measured: unescape(measured),
        });
    }
    if targets.is_empty() {
        return Err("the targets table has no rows".into());
    }
    Ok(targets)
}

/// The README's performance lines, from the run's targets: how many were met, then each
/// missed one and each met one with what was measured, in the report's order.
pub fn readme_lines(targets: &[Target]) -> String {
    let met = targets.iter().filter(|t| t.met).count();
    let mut out = format!(
        "From its last full run: {met} of its {} targets met, {} missed.\n\n",
        targets.len(),
        targets.len() - met
    );
    for target in targets.iter().filter(|t| !t.met) {
        let _ = writeln!(out, "- **missed**: {}: {}", target.what, target.measured);
    }
    for target in targets.iter().filter(|t| t.met) {
        let _ = writeln!(out, "- met: {}: {}", target.what, target.measured);
    }
    out
}

/// `readme` with the lines between its markers replaced by [`readme_lines`] of `targets`.
pub fn readme_with_targets(readme: &str, targets: &[Target]) -> Result<String, String> {
    let (start, end) = between_markers(readme)?;
    Ok(format!(
        "{}{}{}",
        &readme[..start],
        readme_lines(targets),
        &readme[end..]
    ))
}

/// The lines between the README's markers, as they stand.
pub fn readme_block(readme: &str) -> Result<&str, String> {
    let (start, end) = between_markers(readme)?;
    Ok(&readme[start..end])
}

/// Where the lines between the markers begin (after the start marker's line) and end (at
/// the end marker).
fn between_markers(readme: &str) -> Result<(usize, usize), String> {
    let start = readme
        .find(&format!("{README_START}\n"))
        .map(|at| at + README_START.len() + 1)
        .ok_or("the README has no start marker for the performance lines")?;
    let end = readme[start..]
        .find(README_END)
        .map(|at| start + at)
        .ok_or("the README has no end marker after the start marker")?;
    Ok((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets() -> Vec<Target> {
        vec![
            Target::new("API p99 < 5 ms", false, "highest p99 11.34 ms"),
            Target::new(
                "hashing ≥ 1.0× `unzip -p | sha256sum`",
                true,
                "slowest 2.26×",
            ),
            Target::new("a restart serves within 1 s", true, "0.76 s"),
        ]
    }

    #[test]
    fn the_targets_table_reads_back_as_written() {
        let report = format!(
            "# Benchmarks\n\nWritten by.\n\n{}\n## 1. API\n",
            targets_table(&targets())
        );
        assert!(
            report.contains("| hashing ≥ 1.0× `unzip -p \\| sha256sum` | met | slowest 2.26× |")
        );
        assert_eq!(parse_targets(&report).unwrap(), targets());
        // A pipe left unescaped in the first cell, as a hand edit might leave it.
        let by_hand = report.replace("-p \\| sha", "-p | sha");
        assert_eq!(parse_targets(&by_hand).unwrap(), targets());
        assert!(parse_targets("# Benchmarks\n").is_err());
        let unknown = report.replace("| met | slowest", "| ok | slowest");
        assert!(parse_targets(&unknown).unwrap_err().contains("\"ok\""));
    }

    #[test]
    fn the_readme_lines_are_replaced_between_the_markers_and_nothing_else() {
        let readme = format!("# tfreg\n\n## Performance\n\nBefore.\n{README_START}\nold lines\n{README_END}\n\nAfter.\n");
        let written = readme_with_targets(&readme, &targets()).unwrap();
        let want = "From its last full run: 2 of its 3 targets met, 1 missed.\n\n\
                    - **missed**: API p99 < 5 ms: highest p99 11.34 ms\n\
                    - met: hashing ≥ 1.0× `unzip -p | sha256sum`: slowest 2.26×\n\
                    - met: a restart serves within 1 s: 0.76 s\n";
        assert_eq!(readme_block(&written).unwrap(), want);
        assert_eq!(
            written,
            readme.replace("old lines\n", want),
            "only the lines between the markers change"
        );
        assert_eq!(readme_with_targets(&written, &targets()).unwrap(), written);
        assert!(readme_with_targets("# tfreg\n", &targets()).is_err());
        let no_end = readme.replace(README_END, "");
        assert!(readme_block(&no_end).is_err());
    }
}
