//! Whether a published version is served as published: one judgement for the checks before
//! upload (on the staged files) and for the wait after it (on the destination's index), so
//! "it would be served" and "it is served" mean the same thing.

use std::collections::{BTreeMap, BTreeSet};

use super::{Plan, Role};
use crate::report::{ModuleStatus, Problem, ProviderStatus};

/// What an index says of the version being published.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// The module's status, when publishing a module.
    pub module: Option<ModuleStatus>,
    /// The provider's status, when publishing a provider.
    pub provider: Option<ProviderStatus>,
    /// Problems (only those of the published keys matter).
    pub problems: Vec<Problem>,
}

/// What is served of a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Served {
    Module,
    Provider {
        platforms: Vec<String>,
        protocols: Vec<String>,
        signed_by: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// Served, from exactly the files published.
    Served(Served),
    /// A published file is refused, with the reasons.
    Refused(Vec<String>),
    /// Not served (yet), and why as far as the index says.
    Pending(Vec<String>),
}

/// Judges `plan`'s version: served only from the published files, each at the revision in
/// `revisions` (by key) and with its SHA-256.
pub fn judge(
    plan: &Plan,
    revisions: &BTreeMap<String, String>,
    observation: &Observation,
) -> Judgement {
    let keys: BTreeSet<&str> = plan.files.iter().map(|f| f.key.as_str()).collect();
    let refusals: Vec<String> = observation
        .problems
        .iter()
        .filter(|p| keys.contains(p.key.as_str()))
        .map(|p| format!("{}: {}", p.key, p.reason))
        .collect();
    let version = plan.subject.version().to_string();
    let is_current =
        |key: &str, revision: &str| revisions.get(key).map(String::as_str) == Some(revision);
    let outcome = |mut reasons: Vec<String>, fallback: String| {
        if !refusals.is_empty() {
            let mut all = refusals.clone();
            all.append(&mut reasons);
            return Judgement::Refused(all);
        }
        if reasons.is_empty() {
            reasons.push(fallback);
        }
        Judgement::Pending(reasons)
    };

    if let Some(module) = &observation.module {
        let Some(archive) = plan.files.iter().find(|f| f.role == Role::ModuleArchive) else {
            return Judgement::Pending(vec!["nothing to publish".into()]);
        };
        let found = module.versions.iter().find(|v| v.version == version);
        return match found {
            Some(v)
                if v.key == archive.key
                    && is_current(&v.key, &v.revision)
                    && v.sha256 == archive.sha256 =>
            {
                Judgement::Served(Served::Module)
            }
            Some(v) if v.key != archive.key => outcome(
                vec![format!(
                    "version {version} is served from {} instead",
                    v.key
                )],
                String::new(),
            ),
            Some(v) => outcome(
                vec![format!(
                    "version {version} is served with sha256 {}, not (yet) the {} published",
                    v.sha256, archive.sha256
                )],
                String::new(),
            ),
            None => outcome(vec![], format!("version {version} is not served yet")),
        };
    }

    let Some(provider) = &observation.provider else {
        return outcome(vec![], format!("version {version} is not served yet"));
    };
    let Some(release) = provider.versions.iter().find(|v| v.version == version) else {
        return outcome(vec![], format!("version {version} is not served yet"));
    };
    let mut reasons: Vec<String> = release.problems.clone();
    let file_of = |role: &Role| plan.files.iter().find(|f| &f.role == role);
    let matches =
        |served: &Option<crate::report::FileRef>, role: Role| match (served, file_of(&role)) {
            (Some(served), Some(ours)) => {
                served.key == ours.key && is_current(&served.key, &served.revision)
            }
            _ => false,
        };
    let mut complete = release.served
        && matches(&release.shasums, Role::Sums)
        && matches(&release.signature, Role::Signature);
    for file in &plan.files {
        let Role::Package(platform) = &file.role else {
            continue;
        };
        let status = release.platforms.iter().find(|p| &p.platform == platform);
        match status {
            Some(p) if p.served => {
                let same = p.package.as_ref().is_some_and(|served| {
                    served.key == file.key && is_current(&served.key, &served.revision)
                }) && p.sha256.as_deref() == Some(file.sha256.as_str());
                if !same {
                    complete = false;
                    reasons.push(format!(
                        "{platform}: the package served is not (yet) the one published"
                    ));
                }
            }
            Some(p) => {
                complete = false;
                let why = p.problem.as_deref().unwrap_or("not offered");
                reasons.push(format!("{platform}: {why}"));
            }
            None => {
                complete = false;
                reasons.push(format!("{platform}: not indexed yet"));
            }
        }
    }
    if complete && refusals.is_empty() {
        return Judgement::Served(Served::Provider {
            platforms: release
                .platforms
                .iter()
                .filter(|p| p.served)
                .map(|p| p.platform.clone())
                .collect(),
            protocols: release.protocols.clone(),
            signed_by: release.signed_by.clone(),
        });
    }
    if release.served && reasons.is_empty() {
        reasons.push(format!(
            "version {version} is served, but not (yet) from the files published"
        ));
    }
    outcome(reasons, format!("version {version} is not served yet"))
}
