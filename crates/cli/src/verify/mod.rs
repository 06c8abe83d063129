//! `tfreg verify`: checks, in a Terraform working directory, that each module `terraform
//! init` installed from a registry is the one the registry recorded: the `h1:` of its
//! installed folder against the `h1:` the registry computed when the version was published.
//!
//! Exit status: 0 every registry module matches (or there is none); 1 a module does not
//! match (or its folder cannot be what a published module unpacks to); 2 none mismatches
//! but at least one could not be checked (no hash recorded, no version in its `modules.json`
//! record, the registry unreachable, the token refused), or the working directory could not
//! be read. A module whose source is a registry address is checked or unknown, never skipped. Clap's usage errors exit 2
//! as well.

mod installed;
mod registry;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;
use tfreg_core::hash::{h1_of_dir, DirHashError};
use tfreg_core::text::for_terminal;

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The Terraform working directory (where `terraform init` ran).
    #[arg(long, default_value = ".")]
    dir: PathBuf,

    /// Print one JSON document instead of lines.
    #[arg(long)]
    json: bool,
}

/// What was found for one module call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Verdict {
    Ok,
    Mismatch,
    Unknown,
    /// Not from a registry (git, HTTP, local path): nothing recorded to compare with.
    NotFromRegistry,
}

#[derive(Debug, Serialize)]
struct Checked {
    module: String,
    source: String,
    version: Option<String>,
    verdict: Verdict,
    installed: Option<String>,
    recorded: Option<String>,
    reason: Option<String>,
}

#[derive(Debug, Default, Serialize)]
struct Summary {
    ok: usize,
    mismatch: usize,
    unknown: usize,
    not_from_registry: usize,
}

/// Exit statuses of `tfreg verify`.
const MISMATCH: u8 = 1;
const UNKNOWN: u8 = 2;

pub async fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    match check(&args).await {
        Ok(code) => Ok(code),
        Err(e) => {
            let message = format!("{e:#}");
            eprintln!("error: {}", tfreg_core::text::lines_for_terminal(&message));
            Ok(ExitCode::from(UNKNOWN))
        }
    }
}

async fn check(args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    // Terraform's data folder: `.terraform`, or `TF_DATA_DIR` (relative to the directory).
    let data_dir = std::env::var_os("TF_DATA_DIR")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(".terraform"), PathBuf::from);
    let entries = installed::read(&args.dir, &data_dir)?.unwrap_or_default();
    let mut registries = registry::Registries::new()?;
    let mut results = Vec::new();
    for entry in entries {
        results.push(check_one(&args.dir, &data_dir, &entry, &mut registries).await);
    }
    let mut summary = Summary::default();
    for r in &results {
        match r.verdict {
            Verdict::Ok => summary.ok += 1,
            Verdict::Mismatch => summary.mismatch += 1,
            Verdict::Unknown => summary.unknown += 1,
            Verdict::NotFromRegistry => summary.not_from_registry += 1,
        }
    }
    let code = match (summary.mismatch, summary.unknown) {
        (0, 0) => 0,
        (0, _) => UNKNOWN,
        _ => MISMATCH,
    };
    match args.json {
        true => {
            let document =
                serde_json::json!({ "modules": results, "summary": summary, "exit_code": code });
            println!("{}", tfreg_core::text::json::to_string_pretty(&document)?);
        }
        false => print_lines(&results, &summary),
    }
    Ok(ExitCode::from(code))
}

async fn check_one(
    dir: &Path,
    data_dir: &Path,
    entry: &installed::Entry,
    registries: &mut registry::Registries,
) -> Checked {
    let mut checked = Checked {
        module: entry.display(),
        source: entry.source.clone(),
        version: entry.version.clone().filter(|v| !v.is_empty()),
        verdict: Verdict::NotFromRegistry,
        installed: None,
        recorded: None,
        reason: None,
    };
    let Some(source) = installed::registry_source(&entry.source) else {
        checked.reason = Some("not from a registry: nothing recorded to compare with".into());
        return checked;
    };
    // Terraform loads a registry module whose record lost its version all the same: it is
    // checked or unknown, never skipped.
    let Some(version) = checked.version.clone() else {
        checked.verdict = Verdict::Unknown;
        checked.reason = Some(
            "modules.json records no version for this registry module (Terraform writes one): nothing to compare with; run `terraform init` again".into(),
        );
        return checked;
    };
    let root = match installed::package_root(dir, data_dir, &entry.dir) {
        Ok(root) => root,
        Err(reason) => {
            checked.verdict = Verdict::Mismatch;
            checked.reason = Some(reason);
            return checked;
        }
    };
    let hashed = tokio::task::spawn_blocking(move || h1_of_dir(&root)).await;
    match hashed {
        Ok(Ok(h1)) => checked.installed = Some(h1),
        Ok(Err(e @ DirHashError::Io { .. })) => {
            checked.verdict = Verdict::Unknown;
            checked.reason = Some(e.to_string());
            return checked;
        }
        Ok(Err(e)) => {
            checked.verdict = Verdict::Mismatch;
            checked.reason = Some(format!(
                "the installed folder cannot be the published module: {e}"
            ));
            return checked;
        }
        Err(e) => {
            checked.verdict = Verdict::Unknown;
            checked.reason = Some(format!("hashing stopped: {e}"));
            return checked;
        }
    }
    match registries
        .recorded_h1(&source.host, &source.module, &version)
        .await
    {
        Ok(recorded) => {
            let same = checked.installed.as_deref() == Some(recorded.as_str());
            checked.verdict = if same { Verdict::Ok } else { Verdict::Mismatch };
            if !same {
                checked.reason = Some(
                    "the installed files differ from the ones published (changed, added or removed since terraform init, or not what the registry served)".into(),
                );
            }
            checked.recorded = Some(recorded);
        }
        Err(reason) => {
            checked.verdict = Verdict::Unknown;
            checked.reason = Some(reason);
        }
    }
    checked
}

fn print_lines(results: &[Checked], summary: &Summary) {
    for r in results {
        let label = match r.verdict {
            Verdict::Ok => "ok",
            Verdict::Mismatch => "MISMATCH",
            Verdict::Unknown => "unknown",
            Verdict::NotFromRegistry => "skipped",
        };
        let detail = match (r.verdict, &r.installed, &r.recorded) {
            (Verdict::Ok, Some(h1), _) => h1.clone(),
            (Verdict::Mismatch, Some(installed), Some(recorded)) => {
                format!("installed {installed} vs recorded {recorded}")
            }
            _ => r.reason.clone().unwrap_or_default(),
        };
        let line = format!(
            "{label:<9} {}  {}  {}  ({detail})",
            r.module,
            r.source,
            r.version.as_deref().unwrap_or("-")
        );
        println!("{}", for_terminal(&line));
        if let (Verdict::Mismatch, Some(_), Some(reason)) = (r.verdict, &r.recorded, &r.reason) {
            println!("          {}", for_terminal(reason));
        }
    }
    println!(
        "{} ok, {} mismatched, {} unknown, {} not from a registry",
        summary.ok, summary.mismatch, summary.unknown, summary.not_from_registry
    );
}
