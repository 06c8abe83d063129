//! The status document: what is served and what is refused, read from an index the way the
//! API reads it. `tfreg status` prints it (as text, or as JSON with `--json`), `tfreg
//! serve` keeps it one module or provider at a time under `DATA/.tfreg/served/` (see
//! [`crate::served`]), and `tfreg publish` judges its checks and its wait on it. The JSON form is a stable interface (schema 1, README "tfreg status"):
//! fields are only ever added.

mod doc;
mod filter;
pub mod keys;
pub mod lifecycle;
pub mod preview;
pub mod uploads;

use std::collections::BTreeSet;
use std::time::SystemTime;

use tfreg_core::layout::{classify, Artifact, Classified, NoticeTarget};
use tfreg_core::module_archive::secrets::SecretShapedFiles;
use tfreg_core::providers::{evaluate, CurrentKeys};
use tfreg_core::registry::modules::{module_archives, served_archives};
use tfreg_core::store::{partition, MetadataStore, ModuleArchive, Record};
use tfreg_core::tokens::Access;
use tfreg_core::{
    Hostname, ModuleAddress, Namespace, Origin, ProviderAddress, Registry, StoreError,
};

pub use doc::{
    FileRef, MirrorStatus, ModuleStatus, ModuleVersionStatus, PlatformStatus, Problem,
    ProviderStatus, ProviderVersionStatus, StatusDoc, SCHEMA,
};
pub use filter::Filter;

/// What a document covers: the modules, providers and mirrored providers it reports on.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub modules: BTreeSet<ModuleAddress>,
    pub providers: BTreeSet<ProviderAddress>,
    pub mirrored: BTreeSet<(Hostname, ProviderAddress)>,
}

impl Scope {
    /// Everything the keys of a store name (so a module whose every version is refused is
    /// listed too).
    pub fn from_keys(keys: &[String]) -> Scope {
        let mut scope = Scope::default();
        for key in keys {
            match classify(key) {
                Classified::Artifact(
                    Artifact::ModuleArchive { address, .. }
                    | Artifact::ModuleSignature { address, .. },
                ) => {
                    scope.modules.insert(address);
                }
                Classified::Artifact(
                    Artifact::ProviderPackage { provider, .. }
                    | Artifact::ProviderReleaseFile { provider, .. },
                ) => {
                    scope.providers.insert(provider);
                }
                Classified::Artifact(Artifact::MirrorPackage {
                    hostname, provider, ..
                }) => {
                    scope.mirrored.insert((hostname, provider));
                }
                Classified::Artifact(Artifact::Notice { target, .. }) => scope.note(&target),
                Classified::Artifact(Artifact::Attachment { target, .. }) => scope.note(&target),
                _ => {}
            }
        }
        scope
    }

    /// The module or provider a deprecation or yank record is about.
    fn note(&mut self, target: &NoticeTarget) {
        match target {
            NoticeTarget::Module { address } => {
                self.modules.insert(address.clone());
            }
            NoticeTarget::Provider { provider } => {
                self.providers.insert(provider.clone());
            }
        }
    }

    /// Everything an index holds records of.
    pub fn from_records(records: &[Record]) -> Scope {
        let mut scope = Scope::default();
        for record in records {
            match record {
                Record::ModuleArchive(a) => {
                    scope.modules.insert(a.address.clone());
                }
                Record::ModuleSignature(s) => {
                    scope.modules.insert(s.address.clone());
                }
                Record::NamespaceModuleSeen(a) => {
                    scope.modules.insert(a.clone());
                }
                Record::Package(p) => match &p.mirror_hostname {
                    Some(host) => {
                        scope.mirrored.insert((host.clone(), p.provider.clone()));
                    }
                    None => {
                        scope.providers.insert(p.provider.clone());
                    }
                },
                Record::Sums(r) => {
                    scope.providers.insert(r.provider.clone());
                }
                Record::Signature(r) => {
                    scope.providers.insert(r.provider.clone());
                }
                Record::Manifest(r) => {
                    scope.providers.insert(r.provider.clone());
                }
                Record::NamespaceProvider(p) | Record::ListedProvider(p) => {
                    scope.providers.insert(p.clone());
                }
                Record::Notice(n) => scope.note(&n.target),
                Record::Attachment(a) => scope.note(&a.target),
                Record::Upload(u) => scope.note(&u.target),
                Record::Key(_)
                | Record::Policy(_)
                | Record::Problem(_)
                | Record::Pin(_)
                | Record::ListedModule(_)
                | Record::NamespaceModule(_)
                | Record::ProviderDocs(_) => {}
            }
        }
        scope
    }
}

/// The versions of a module that are served, with the archive of each.
pub async fn module_status(
    registry: &Registry,
    address: &ModuleAddress,
) -> Result<ModuleStatus, StoreError> {
    let mut status = ModuleStatus {
        address: address.to_string(),
        versions: vec![],
    };
    let Ok(doc) = registry.module_versions(&Access::All, address).await else {
        return Ok(status); // no valid versions
    };
    for listed in &doc.modules[0].versions {
        let archive = registry
            .module_archive(&Access::All, address, &listed.version)
            .await;
        if let Ok(archive) = archive {
            status
                .versions
                .push(version_status(&listed.version, archive));
        }
    }
    Ok(status)
}

/// [`module_status`] from one query of the module's partition rather than one per version:
/// the same archives (each version's records lie under its own prefix, and
/// [`module_archives`] rules each by its own), for a report of every version of a module of
/// thousands.
async fn module_status_whole(
    registry: &Registry,
    metadata: &dyn MetadataStore,
    address: &ModuleAddress,
) -> Result<ModuleStatus, StoreError> {
    let mut status = ModuleStatus {
        address: address.to_string(),
        versions: vec![],
    };
    let Ok(doc) = registry.module_versions(&Access::All, address).await else {
        return Ok(status); // no valid versions
    };
    let records = metadata.query(&partition::module(address)).await?;
    let mut served = served_archives(module_archives(records));
    for listed in &doc.modules[0].versions {
        if let Some(archive) = served.remove(&listed.version) {
            status
                .versions
                .push(version_status(&listed.version, archive));
        }
    }
    Ok(status)
}

/// A served version, from its archive.
fn version_status(version: &tfreg_core::Version, archive: ModuleArchive) -> ModuleVersionStatus {
    let warnings = archive
        .secret_shaped
        .as_ref()
        .filter(|found| !found.is_empty())
        .map(|found| secret_shaped_warning(&archive.key, found))
        .into_iter()
        .collect();
    ModuleVersionStatus {
        version: version.to_string(),
        key: archive.key,
        sha256: archive.sha256,
        revision: archive.revision,
        warnings,
        signed_by: archive.signed_by.map(|by| by.key_id),
    }
}

/// The warning for a served archive holding secret-shaped files.
fn secret_shaped_warning(key: &str, found: &SecretShapedFiles) -> String {
    let more = match found.more {
        0 => String::new(),
        more => format!(" and {more} more"),
    };
    // Names from outside, as they are: every output escapes them (text and JSON alike).
    format!(
        "{key} holds secret-shaped files: {}{more}; every reader of the namespace can download them: publish a new version without them, and rotate those secrets",
        found.names.join(", ")
    )
}

/// The judgement on every version of a provider, as the API makes it when it answers.
pub async fn provider_status(
    metadata: &dyn MetadataStore,
    provider: &ProviderAddress,
) -> Result<ProviderStatus, StoreError> {
    let (releases, keys) = (
        partition::provider(provider),
        partition::keys(&provider.namespace),
    );
    let (records, keys) = tokio::join!(metadata.query(&releases), metadata.query(&keys));
    let keys = CurrentKeys::from_records(&keys?);
    let mut status = ProviderStatus {
        address: provider.to_string(),
        versions: vec![],
    };
    for (report, served) in evaluate(&records?, &keys, SystemTime::now()) {
        let is_served = report.is_served();
        let platforms = report
            .platforms
            .iter()
            .map(|(platform, verdict)| {
                let package = served.as_ref().and_then(|s| s.packages.get(platform));
                PlatformStatus {
                    platform: platform.to_string(),
                    served: verdict.is_ok() && package.is_some(),
                    problem: verdict.clone().err(),
                    package: package.map(|p| FileRef {
                        key: p.key.clone(),
                        revision: p.revision.clone(),
                    }),
                    sha256: package.map(|p| p.hashes.sha256.clone()),
                }
            })
            .collect();
        status.versions.push(ProviderVersionStatus {
            version: report.version.to_string(),
            served: is_served && served.is_some(),
            signed_by: report.signed_by.clone(),
            protocols: served
                .as_ref()
                .map(|s| s.protocols.clone())
                .unwrap_or_default(),
            problems: report.problems.clone(),
            platforms,
            shasums: served.as_ref().map(|s| FileRef {
                key: s.sums.key.clone(),
                revision: s.sums.revision.clone(),
            }),
            signature: served.as_ref().map(|s| FileRef {
                key: s.signature_key.clone(),
                revision: s.signature_revision.clone(),
            }),
            warnings: Vec::new(),
        });
    }
    Ok(status)
}

/// What the mirror serves of one uploaded provider, by version.
async fn mirror_status(
    registry: &Registry,
    hostname: &Hostname,
    provider: &ProviderAddress,
) -> Result<Vec<MirrorStatus>, StoreError> {
    // No URL is printed; any origin will do for listing.
    let origin = Origin::https("localhost").expect("a valid origin");
    let Ok(index) = registry
        .mirror_index(&Access::All, hostname, provider, &origin)
        .await
    else {
        return Ok(vec![]);
    };
    let mut found = vec![];
    for version in index.versions.keys() {
        let Ok(parsed) = tfreg_core::Version::parse(version) else {
            continue;
        };
        let Ok(doc) = registry
            .mirror_version(&Access::All, hostname, provider, &parsed, &origin)
            .await
        else {
            continue;
        };
        found.push(MirrorStatus {
            hostname: hostname.to_string(),
            address: provider.to_string(),
            version: version.clone(),
            platforms: doc.archives.keys().cloned().collect(),
        });
    }
    Ok(found)
}

/// The document for everything in `scope` that `filter` lets through.
pub async fn build(
    registry: &Registry,
    metadata: &dyn MetadataStore,
    scope: &Scope,
    filter: &Filter,
) -> Result<StatusDoc, StoreError> {
    let mut doc = build_scope(registry, metadata, scope, filter).await?;
    let beside_served = std::mem::take(&mut doc.problems);
    doc.problems = registry
        .problems()
        .await?
        .into_iter()
        .map(Problem::from_record)
        .chain(beside_served)
        .filter(|p| filter.problem(p))
        .collect();
    doc.refused = refused(&doc);
    Ok(doc)
}

/// The part of the document that is about what `scope` names: its modules, providers and
/// mirrored providers, their notices, their namespaces' keys, and the problems their notices
/// make; not the problems of the registry's files (the `problems` partition), which
/// [`build`] adds. For one module or provider it reads that subject's records and its
/// namespace's keys alone, whatever else the registry holds: `tfreg serve` keeps its status
/// so, one subject at a time ([`crate::served`]).
pub async fn build_scope(
    registry: &Registry,
    metadata: &dyn MetadataStore,
    scope: &Scope,
    filter: &Filter,
) -> Result<StatusDoc, StoreError> {
    let mut doc = StatusDoc {
        schema: SCHEMA,
        ..StatusDoc::default()
    };
    for address in scope.modules.iter().filter(|a| filter.module(a)) {
        let status = module_status_whole(registry, metadata, address).await?;
        let served = status.versions.iter().map(|v| v.version.clone()).collect();
        lifecycle::add_notices(&mut doc, metadata, &partition::module(address), &served).await?;
        doc.modules.push(status);
    }
    for provider in scope.providers.iter().filter(|p| filter.provider(p)) {
        let status = provider_status(metadata, provider).await?;
        let served = status
            .versions
            .iter()
            .filter(|v| v.served)
            .map(|v| v.version.clone())
            .collect();
        lifecycle::add_notices(&mut doc, metadata, &partition::provider(provider), &served).await?;
        doc.providers.push(status);
    }
    for (hostname, provider) in scope.mirrored.iter().filter(|(_, p)| filter.mirrored(p)) {
        doc.mirror
            .extend(mirror_status(registry, hostname, provider).await?);
    }
    let namespaces: BTreeSet<Namespace> = scope
        .modules
        .iter()
        .filter(|a| filter.module(a))
        .map(|a| a.namespace.clone())
        .chain(
            scope
                .providers
                .iter()
                .filter(|p| filter.provider(p))
                .map(|p| p.namespace.clone()),
        )
        .collect();
    keys::add_keys(&mut doc, metadata, &namespaces, SystemTime::now()).await?;
    doc.problems.retain(|p| filter.problem(p));
    doc.refused = refused(&doc);
    Ok(doc)
}

/// How many refusals `doc` lists: problems, provider versions not served, and platforms of
/// served versions that are not offered.
fn refused(doc: &StatusDoc) -> usize {
    doc.problems.len()
        + doc
            .providers
            .iter()
            .flat_map(|p| &p.versions)
            .map(|v| match v.served {
                false => 1,
                true => v.platforms.iter().filter(|p| !p.served).count(),
            })
            .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfreg_core::store::ProblemRecord;

    fn problem(key: &str) -> Problem {
        Problem::from_record(ProblemRecord {
            key: key.into(),
            problem: "why".into(),
        })
    }

    #[test]
    fn a_secret_shaped_warning_names_the_files_and_the_fix() {
        let warning = secret_shaped_warning(
            "modules/acme/vpc/aws/1.0.0.tar.gz",
            &SecretShapedFiles {
                names: vec![".env".into(), "keys/a.pem".into()],
                more: 3,
            },
        );
        assert_eq!(warning, "modules/acme/vpc/aws/1.0.0.tar.gz holds secret-shaped files: .env, keys/a.pem and 3 more; every reader of the namespace can download them: publish a new version without them, and rotate those secrets");
    }

    #[test]
    fn problems_say_what_their_keys_name() {
        let p = problem("modules/Acme/Network/AWS/1.2.0.tar.gz");
        assert_eq!(p.kind.as_deref(), Some("module"));
        assert_eq!(p.namespace.as_deref(), Some("acme"));
        assert_eq!(p.address.as_deref(), Some("acme/network/aws"));
        assert_eq!(p.version.as_deref(), Some("1.2.0"));

        let p =
            problem("providers/acme/widget/1.0.0/terraform-provider-widget_1.0.0_linux_amd64.zip");
        assert_eq!(p.address.as_deref(), Some("acme/widget"));
        assert_eq!(p.platform.as_deref(), Some("linux_amd64"));

        // A key that breaks the layout still says its namespace and address.
        let p = problem("modules/Acme/network/aws/latest.tar.gz");
        assert_eq!(p.kind.as_deref(), Some("module"));
        assert_eq!(p.namespace.as_deref(), Some("acme"));
        assert_eq!(p.address.as_deref(), Some("acme/network/aws"));
        assert_eq!(p.version, None);

        let p = problem("keys/acme/ci.asc");
        assert_eq!(
            (p.kind.as_deref(), p.namespace.as_deref()),
            (Some("key"), Some("acme"))
        );
        let p = problem("modules/acme.tar.gz");
        assert_eq!((p.kind.as_deref(), p.namespace), (Some("module"), None));
    }
}
