//! The status document's layout: schema 1 of `tfreg status --json`, and what a problem's
//! key says of what it concerns. Fields are only ever added.

use serde::{Deserialize, Serialize};
use tfreg_core::layout::{classify, Artifact, Classified, NoticeTarget};
use tfreg_core::store::ProblemRecord;

/// The version of the JSON layout below.
pub const SCHEMA: u32 = 1;

/// Everything `tfreg status --json` prints.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusDoc {
    pub schema: u32,
    pub modules: Vec<ModuleStatus>,
    pub providers: Vec<ProviderStatus>,
    pub mirror: Vec<MirrorStatus>,
    /// Files that are never served, and why.
    pub problems: Vec<Problem>,
    /// The mirror's cache of upstream providers: what is cached, from where, when its list
    /// was refreshed, and what was refused.
    #[serde(default)]
    pub upstream: Vec<tfreg_core::upstream::report::UpstreamReport>,
    /// Served versions with a deprecation ([`tfreg_core::lifecycle`]).
    #[serde(default)]
    pub deprecated: Vec<super::lifecycle::NoticeStatus>,
    /// Versions not served whose yank record says why they were withdrawn.
    #[serde(default)]
    pub withdrawn: Vec<super::lifecycle::NoticeStatus>,
    /// Each served file and who uploaded its served revision (the AWS shape records it from
    /// S3 events; see `uploaders_recorded`).
    #[serde(default)]
    pub uploads: Vec<super::uploads::UploadStatus>,
    /// Whether the registry records uploaders at all: false for a data directory.
    #[serde(default)]
    pub uploaders_recorded: bool,
    /// The signing keys of the namespaces reported on, with a warning for each that has
    /// expired or expires within 30 days.
    #[serde(default)]
    pub keys: Vec<super::keys::KeyStatus>,
    /// How many refusals the document lists: problems, provider versions not served, and
    /// platforms of served versions that are not offered. `tfreg status` exits with 3 when
    /// it is not 0.
    pub refused: usize,
}

/// A module and its served versions, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleStatus {
    pub address: String,
    pub versions: Vec<ModuleVersionStatus>,
}

/// A served module version: the archive Terraform downloads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleVersionStatus {
    pub version: String,
    pub key: String,
    pub sha256: String,
    /// Opaque: changes whenever the file does.
    pub revision: String,
    /// What is wrong with the version although it is served, as sentences that say the fix:
    /// secret-shaped files in its archive.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The key ID of the namespace key whose signature of the archive verified; absent when
    /// the version is not signed (docs/module-signing.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<String>,
}

/// A provider and the judgement on each of its versions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderStatus {
    pub address: String,
    pub versions: Vec<ProviderVersionStatus>,
}

/// The judgement on one provider version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderVersionStatus {
    pub version: String,
    pub served: bool,
    /// The key ID of the key whose signature verified.
    pub signed_by: Option<String>,
    /// The plugin protocols it is served with (empty when not served).
    pub protocols: Vec<String>,
    /// Why the version is not served (empty when it is).
    pub problems: Vec<String>,
    pub platforms: Vec<PlatformStatus>,
    /// The SHA256SUMS and signature served (when served).
    pub shasums: Option<FileRef>,
    pub signature: Option<FileRef>,
    /// What a publisher should know about a served version: that the key that signed it
    /// has expired since (it stays served), with the fix.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// One platform's package.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformStatus {
    /// `os_arch`
    pub platform: String,
    pub served: bool,
    /// Why it is not offered.
    pub problem: Option<String>,
    /// The package served (when served).
    pub package: Option<FileRef>,
    pub sha256: Option<String>,
}

/// A file as indexed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRef {
    pub key: String,
    /// Opaque: changes whenever the file does.
    pub revision: String,
}

/// A version the network mirror serves from uploads under `mirror/`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorStatus {
    pub hostname: String,
    pub address: String,
    pub version: String,
    pub platforms: Vec<String>,
}

/// A file that is never served. `kind`, `namespace`, `address`, `version` and `platform`
/// are what its key says, as far as it can be read (a key that breaks the layout may say
/// only its namespace, or nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    pub key: String,
    pub reason: String,
    /// `module`, `provider`, `key` or `mirror`.
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub address: Option<String>,
    pub version: Option<String>,
    pub platform: Option<String>,
}

impl Problem {
    /// A problem record, with what its key says.
    pub fn from_record(record: ProblemRecord) -> Problem {
        let mut problem = Problem {
            key: record.key,
            reason: record.problem,
            ..Problem::default()
        };
        let (kind, namespace, address, version, platform) = match classify(&problem.key) {
            Classified::Artifact(artifact) => match artifact {
                Artifact::ModuleArchive {
                    address, version, ..
                }
                | Artifact::ModuleSignature {
                    address, version, ..
                }
                | Artifact::ModuleMetadata { address, version } => (
                    "module",
                    address.namespace.to_string(),
                    Some(address.to_string()),
                    Some(version.to_string()),
                    None,
                ),
                Artifact::ProviderPackage {
                    provider,
                    version,
                    platform,
                } => (
                    "provider",
                    provider.namespace.to_string(),
                    Some(provider.to_string()),
                    Some(version.to_string()),
                    Some(platform.to_string()),
                ),
                Artifact::ProviderReleaseFile {
                    provider, version, ..
                }
                | Artifact::ProviderDocs { provider, version } => (
                    "provider",
                    provider.namespace.to_string(),
                    Some(provider.to_string()),
                    Some(version.to_string()),
                    None,
                ),
                Artifact::Notice {
                    target: NoticeTarget::Module { address },
                    version,
                    ..
                }
                | Artifact::Attachment {
                    target: NoticeTarget::Module { address },
                    version,
                    ..
                } => (
                    "module",
                    address.namespace.to_string(),
                    Some(address.to_string()),
                    Some(version.to_string()),
                    None,
                ),
                Artifact::Notice {
                    target: NoticeTarget::Provider { provider },
                    version,
                    ..
                }
                | Artifact::Attachment {
                    target: NoticeTarget::Provider { provider },
                    version,
                    ..
                } => (
                    "provider",
                    provider.namespace.to_string(),
                    Some(provider.to_string()),
                    Some(version.to_string()),
                    None,
                ),
                Artifact::SigningKey { namespace } | Artifact::NamespacePolicy { namespace } => {
                    ("key", namespace.to_string(), None, None, None)
                }
                Artifact::MirrorPackage {
                    hostname,
                    provider,
                    version,
                    platform,
                } => (
                    "mirror",
                    provider.namespace.to_string(),
                    Some(format!("{hostname}/{provider}")),
                    Some(version.to_string()),
                    Some(platform.to_string()),
                ),
            },
            // A key that breaks the layout: read what its folders say.
            _ => {
                let (kind, namespace, address) = scope_of_raw_key(&problem.key);
                problem.kind = kind.map(str::to_owned);
                problem.namespace = namespace;
                problem.address = address;
                return problem;
            }
        };
        problem.kind = Some(kind.to_owned());
        problem.namespace = Some(namespace);
        problem.address = address;
        problem.version = version;
        problem.platform = platform;
        problem
    }
}

/// The kind, namespace and address a key's folders name, lowercased, when it has them.
fn scope_of_raw_key(key: &str) -> (Option<&'static str>, Option<String>, Option<String>) {
    let parts: Vec<String> = key.split('/').map(str::to_ascii_lowercase).collect();
    let at = |i: usize| parts.get(i).filter(|p| !p.is_empty()).cloned();
    // Only folders: the last part is the file.
    let folder = |i: usize| (i + 1 < parts.len()).then(|| at(i)).flatten();
    match parts.first().map(String::as_str) {
        Some("modules") => {
            let address = match (folder(1), folder(2), folder(3)) {
                (Some(ns), Some(name), Some(system)) => Some(format!("{ns}/{name}/{system}")),
                _ => None,
            };
            (Some("module"), folder(1), address)
        }
        Some("providers") => {
            let address = folder(1).zip(folder(2)).map(|(ns, t)| format!("{ns}/{t}"));
            (Some("provider"), folder(1), address)
        }
        Some("keys") => (Some("key"), folder(1), None),
        Some("mirror") => {
            let address = match (folder(1), folder(2), folder(3)) {
                (Some(host), Some(ns), Some(t)) => Some(format!("{host}/{ns}/{t}")),
                _ => None,
            };
            (Some("mirror"), folder(2), address)
        }
        _ => (None, None, None),
    }
}
