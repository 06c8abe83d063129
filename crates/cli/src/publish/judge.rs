//! Whether a published version is served as published: one judgement for the checks before
//! upload (on the staged files) and for the wait after it (on the destination's index), so
//! "it would be served" and "it is served" mean the same thing.

use std::collections::BTreeSet;

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

/// Judges `plan`'s version: served only from the published files (their keys, and for
/// archives and packages their SHA-256; a release's SHA256SUMS and signature cannot differ
/// from what was published once its packages match, since different bytes under a key are
/// refused before upload). Revisions are not compared: the registry may serve a version from
/// a copy it keeps of the first bytes published.
pub fn judge(plan: &Plan, observation: &Observation) -> Judgement {
    let keys: BTreeSet<&str> = plan.files.iter().map(|f| f.key.as_str()).collect();
    let problems: Vec<&Problem> = observation
        .problems
        .iter()
        .filter(|p| keys.contains(p.key.as_str()))
        .collect();
    let refusals: Vec<String> = problems
        .iter()
        .map(|p| format!("{}: {}", p.key, p.reason))
        .collect();
    let version = plan.subject.version().to_string();
    let outcome = |mut reasons: Vec<String>, fallback: String| {
        if !refusals.is_empty() {
            // The release's own reasons repeat a file's refusal ("signature refused: ..."):
            // each is said once, under the file's key.
            reasons.retain(|r| {
                !problems
                    .iter()
                    .any(|p| !p.reason.is_empty() && r.contains(p.reason.as_str()))
            });
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
            Some(v) if v.key == archive.key && v.sha256 == archive.sha256 => {
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
            (Some(served), Some(ours)) => served.key == ours.key,
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
                let same = p
                    .package
                    .as_ref()
                    .is_some_and(|served| served.key == file.key)
                    && p.sha256.as_deref() == Some(file.sha256.as_str());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish::{Subject, Upload};
    use crate::report::{FileRef, ModuleVersionStatus, PlatformStatus, ProviderVersionStatus};
    use tfreg_core::{ModuleAddress, ProviderAddress, Version};

    fn upload(key: &str, sha256: &str, role: Role) -> Upload {
        Upload {
            key: key.into(),
            path: "/nonexistent".into(),
            size: 1,
            sha256: sha256.into(),
            role,
        }
    }

    fn module_plan() -> Plan {
        Plan {
            subject: Subject::Module {
                address: ModuleAddress::parse("acme", "network", "aws").unwrap(),
                version: Version::parse("1.0.0").unwrap(),
            },
            files: vec![upload(KEY, "aaa", Role::ModuleArchive)],
        }
    }

    const KEY: &str = "modules/acme/network/aws/1.0.0.tar.gz";

    fn served_module(sha256: &str, revision: &str) -> Observation {
        Observation {
            module: Some(ModuleStatus {
                address: "acme/network/aws".into(),
                versions: vec![ModuleVersionStatus {
                    version: "1.0.0".into(),
                    key: KEY.into(),
                    sha256: sha256.into(),
                    revision: revision.into(),
                    warnings: vec![],
                    signed_by: None,
                }],
            }),
            ..Observation::default()
        }
    }

    #[test]
    fn a_module_is_served_only_from_the_bytes_published() {
        let plan = module_plan();
        assert_eq!(
            judge(&plan, &served_module("aaa", "r2")),
            Judgement::Served(Served::Module)
        );
        // An index that does not serve these bytes (yet) is waited on,
        assert!(matches!(
            judge(&plan, &served_module("bbb", "r1")),
            Judgement::Pending(_)
        ));
        assert!(matches!(
            judge(&plan, &Observation::default()),
            Judgement::Pending(_)
        ));
        // and a problem recorded for the published key is a refusal, with its reason.
        let mut refused = Observation {
            module: Some(ModuleStatus::default()),
            ..Observation::default()
        };
        refused.problems.push(Problem {
            key: KEY.into(),
            reason: "not a gzip archive".into(),
            ..Problem::default()
        });
        refused.problems.push(Problem {
            key: "modules/acme/other/aws/1.0.0.tar.gz".into(),
            reason: "not ours".into(),
            ..Problem::default()
        });
        assert_eq!(
            judge(&plan, &refused),
            Judgement::Refused(vec![format!("{KEY}: not a gzip archive")])
        );
    }

    #[test]
    fn a_provider_is_served_when_every_platform_published_is() {
        let dir = "providers/acme/widget/1.0.0/terraform-provider-widget_1.0.0";
        let (zip, sums, sig) = (
            format!("{dir}_linux_amd64.zip"),
            format!("{dir}_SHA256SUMS"),
            format!("{dir}_SHA256SUMS.sig"),
        );
        let plan = Plan {
            subject: Subject::Provider {
                address: ProviderAddress::parse("acme", "widget").unwrap(),
                version: Version::parse("1.0.0").unwrap(),
            },
            files: vec![
                upload(&zip, "zzz", Role::Package("linux_amd64".into())),
                upload(&sums, "sss", Role::Sums),
                upload(&sig, "ggg", Role::Signature),
            ],
        };
        let file = |key: &str| {
            Some(FileRef {
                key: key.into(),
                revision: "1".into(),
            })
        };
        let mut release = ProviderVersionStatus {
            version: "1.0.0".into(),
            served: true,
            signed_by: Some("ABC".into()),
            protocols: vec!["5.0".into()],
            problems: vec![],
            platforms: vec![PlatformStatus {
                platform: "linux_amd64".into(),
                served: true,
                problem: None,
                package: file(&zip),
                sha256: Some("zzz".into()),
            }],
            shasums: file(&sums),
            signature: file(&sig),
            warnings: vec![],
        };
        let observe = |release: &ProviderVersionStatus| Observation {
            provider: Some(ProviderStatus {
                address: "acme/widget".into(),
                versions: vec![release.clone()],
            }),
            ..Observation::default()
        };
        assert!(matches!(
            judge(&plan, &observe(&release)),
            Judgement::Served(Served::Provider { .. })
        ));
        release.platforms[0].served = false;
        release.platforms[0].problem = Some("does not match SHA256SUMS".into());
        assert_eq!(
            judge(&plan, &observe(&release)),
            Judgement::Pending(vec!["linux_amd64: does not match SHA256SUMS".into()])
        );
        // A refused signature file is said once, under its key, not again as the release's
        // reason.
        let armored = "the signature is ASCII-armored; sign without --armor";
        release.platforms[0].problem = None;
        release.platforms[0].served = true;
        release.served = false;
        release.problems = vec![format!("signature refused: {armored}")];
        let mut refused = observe(&release);
        refused.problems.push(Problem {
            key: sig.clone(),
            reason: armored.into(),
            ..Problem::default()
        });
        assert_eq!(
            judge(&plan, &refused),
            Judgement::Refused(vec![format!("{sig}: {armored}")])
        );
    }
}
