//! The module read API beyond the protocol: details, `latest`, listings and search. A
//! version's details read the module's versions document and its namespace's listing at
//! once, then the version's own records; a
//! listing or a search reads one listing partition ([`partition::MODULES`] or
//! [`partition::namespace_modules`]), filtered by the token's scope before it is paged.

use std::collections::BTreeMap;

use super::page::Page;
use super::{module_not_found, Registry, RegistryError};
use crate::documents::ModuleVersionsDoc;
use crate::names::{ModuleAddress, Namespace};
use crate::protocol::details::{rfc3339, ModuleDetails, ModuleEntry, ModuleList};
use crate::store::{partition, ModuleArchive, ModuleSummary, Record, StoreError};
use crate::tokens::Access;
use crate::version::Version;

/// The longest search text accepted.
pub const MAX_QUERY_CHARS: usize = 200;

/// The version `latest` means, as Terraform picks one: the highest without a prerelease
/// part. `None` when every version is a prerelease.
pub fn latest_release<'a>(versions: impl IntoIterator<Item = &'a Version>) -> Option<&'a Version> {
    versions.into_iter().filter(|v| !v.is_prerelease()).max()
}

/// The archive served for each version: when a version was published in several formats,
/// `.tar.gz`, then `.tgz`, then `.zip` (then the key), deterministically.
pub fn served_archives(archives: Vec<ModuleArchive>) -> BTreeMap<Version, ModuleArchive> {
    let mut served: BTreeMap<Version, ModuleArchive> = BTreeMap::new();
    for archive in archives {
        match served.get(&archive.version) {
            Some(known) if (known.format, &known.key) <= (archive.format, &archive.key) => {}
            _ => {
                served.insert(archive.version.clone(), archive);
            }
        }
    }
    served
}

/// The module archives among `records`.
pub fn module_archives(records: Vec<Record>) -> Vec<ModuleArchive> {
    records
        .into_iter()
        .filter_map(|r| match r {
            Record::ModuleArchive(a) => Some(a),
            _ => None,
        })
        .collect()
}

/// The archives recorded for one version of a module: a key condition on the version.
pub(crate) async fn version_archives(
    metadata: &dyn crate::store::MetadataReader,
    address: &ModuleAddress,
    version: &Version,
) -> Result<Vec<ModuleArchive>, StoreError> {
    let records = metadata
        .query_prefix(&partition::module(address), &format!("{version}/"))
        .await?;
    Ok(module_archives(records))
}

/// What listings show of a module: its latest release, or its highest prerelease when it
/// has only prereleases (listings show every module). `None` when nothing is published.
pub fn summary_of(archives: Vec<ModuleArchive>) -> Option<ModuleSummary> {
    let served = served_archives(archives);
    let version = latest_release(served.keys())
        .or_else(|| served.keys().next_back())?
        .clone();
    let archive = served.get(&version)?;
    Some(ModuleSummary {
        address: archive.address.clone(),
        version,
        published_at: archive.published_at,
        source: archive.source.clone(),
        description: archive.description.clone(),
    })
}

/// A module version's details and its versions' publish times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModulePage {
    /// The version's details, as `GET {modules.v1}NS/NAME/SYSTEM/VERSION` answers them.
    pub details: ModuleDetails,
    /// Every served version, oldest first.
    pub published: Vec<VersionPublished>,
}

/// When a version was published (RFC 3339), if known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionPublished {
    /// A served version.
    pub version: Version,
    /// When, RFC 3339; `None` when the time is not known.
    pub published_at: Option<String>,
}

/// Which modules a listing shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleFilter {
    /// Only this namespace's (read from its own listing partition).
    pub namespace: Option<Namespace>,
    /// Only modules of this name.
    pub name: Option<String>,
    /// Only modules for this system (`?provider=`).
    pub system: Option<String>,
    /// Only modules whose address or description holds every word of this text, in any
    /// case (`?q=` of search).
    pub query: Option<String>,
}

impl ModuleFilter {
    fn matches(&self, summary: &ModuleSummary) -> bool {
        let address = &summary.address;
        let same = |wanted: &Option<String>, actual: &str| {
            wanted
                .as_ref()
                .is_none_or(|w| w.eq_ignore_ascii_case(actual))
        };
        if !same(&self.name, address.name.as_str()) || !same(&self.system, address.system.as_str())
        {
            return false;
        }
        let Some(query) = &self.query else {
            return true;
        };
        let text = format!(
            "{address} {}",
            summary.description.as_deref().unwrap_or_default()
        )
        .to_lowercase();
        query
            .to_lowercase()
            .split_whitespace()
            .all(|word| text.contains(word))
    }
}

fn entry(
    address: &ModuleAddress,
    version: &Version,
    published_at: u64,
    source: Option<&String>,
    description: Option<&String>,
) -> ModuleEntry {
    ModuleEntry {
        id: format!("{address}/{version}"),
        owner: String::new(),
        namespace: address.namespace.to_string(),
        name: address.name.to_string(),
        version: version.clone(),
        provider: address.system.to_string(),
        description: description.cloned().unwrap_or_default(),
        source: source.cloned(),
        published_at: rfc3339(published_at),
        downloads: 0,
        verified: false,
    }
}

fn summaries(records: Vec<Record>) -> Vec<ModuleSummary> {
    records
        .into_iter()
        .filter_map(|r| match r {
            Record::ListedModule(s) | Record::NamespaceModule(s) => Some(s),
            _ => None,
        })
        .collect()
}

impl Registry {
    /// The listed modules of a namespace, or of every namespace: one query.
    async fn listed(
        &self,
        namespace: Option<&Namespace>,
    ) -> Result<Vec<ModuleSummary>, StoreError> {
        let partition = match namespace {
            Some(namespace) => partition::namespace_modules(namespace),
            None => partition::MODULES.to_owned(),
        };
        Ok(summaries(self.metadata.query(&partition).await?))
    }

    /// A page of the modules `filter` selects that `access` may read (all others are
    /// absent, and are left out before paging), in address order. `path` and `params` make
    /// the next page's URL.
    pub async fn list_modules(
        &self,
        access: &Access,
        filter: &ModuleFilter,
        page: Page,
        path: &str,
        params: &[(&str, &str)],
    ) -> Result<ModuleList, RegistryError> {
        if filter.namespace.as_ref().is_some_and(|n| !access.allows(n)) {
            let (meta, modules) = page.cut(Vec::<ModuleEntry>::new(), path, params);
            return Ok(ModuleList { meta, modules });
        }
        let found: Vec<ModuleEntry> = self
            .listed(filter.namespace.as_ref())
            .await?
            .into_iter()
            .filter(|s| access.allows(&s.address.namespace) && filter.matches(s))
            .map(|s| {
                entry(
                    &s.address,
                    &s.version,
                    s.published_at,
                    s.source.as_ref(),
                    s.description.as_ref(),
                )
            })
            .collect();
        let (meta, modules) = page.cut(found, path, params);
        Ok(ModuleList { meta, modules })
    }

    /// A module version's details; the latest release's when `version` is `None` (a 404
    /// that says so when every version is a prerelease).
    pub async fn module_details(
        &self,
        access: &Access,
        address: &ModuleAddress,
        version: Option<&Version>,
    ) -> Result<ModuleDetails, RegistryError> {
        Ok(self.module_page(access, address, version).await?.details)
    }

    /// A module version's details (as [`Registry::module_details`]), and when each served
    /// version was published: what a module's web page shows, from the same reads.
    pub async fn module_page(
        &self,
        access: &Access,
        address: &ModuleAddress,
        version: Option<&Version>,
    ) -> Result<ModulePage, RegistryError> {
        if !access.allows(&address.namespace) {
            return Err(module_not_found(address));
        }
        let (doc, listed) = tokio::join!(
            self.module_doc(address),
            self.listed(Some(&address.namespace))
        );
        let doc = doc?;
        if doc.versions.is_empty() {
            return Err(module_not_found(address));
        }
        let version = match version {
            Some(version) => version.clone(),
            None => latest_of(address, &doc)?,
        };
        if !doc.versions.contains_key(&version) {
            return Err(RegistryError::NotFound(format!(
                "module {address} has no version {version}"
            )));
        }
        let archive = self.module_archive(access, address, &version).await?;
        let mut providers: Vec<String> = listed?
            .into_iter()
            .filter(|s| s.address.name == address.name)
            .map(|s| s.address.system.to_string())
            .collect();
        providers.push(address.system.to_string());
        providers.sort();
        providers.dedup();
        let docs = archive.docs.as_deref().cloned().unwrap_or_default();
        let published = doc
            .versions
            .iter()
            .map(|(version, entry)| VersionPublished {
                version: version.clone(),
                published_at: rfc3339(entry.published_at),
            })
            .collect();
        let details = ModuleDetails {
            entry: entry(
                address,
                &version,
                archive.published_at,
                archive.source.as_ref(),
                archive.description.as_ref(),
            ),
            root: docs.root,
            submodules: docs.submodules,
            examples: docs.examples,
            providers,
            versions: doc.versions.keys().cloned().collect(),
        };
        Ok(ModulePage { details, published })
    }

    /// The version `latest` means for a module (see [`latest_release`]).
    pub async fn module_latest(
        &self,
        access: &Access,
        address: &ModuleAddress,
    ) -> Result<Version, RegistryError> {
        if !access.allows(&address.namespace) {
            return Err(module_not_found(address));
        }
        let doc = self.module_doc(address).await?;
        if doc.versions.is_empty() {
            return Err(module_not_found(address));
        }
        latest_of(address, &doc)
    }
}

fn latest_of(address: &ModuleAddress, doc: &ModuleVersionsDoc) -> Result<Version, RegistryError> {
    let versions = doc.versions.keys();
    latest_release(versions.clone()).cloned().ok_or_else(|| {
        RegistryError::NotFound(format!(
            "module {address} has only prereleases ({}), so no latest version: ask for one by its version",
            versions.map(ToString::to_string).collect::<Vec<_>>().join(", ")
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn latest_is_the_highest_release_without_a_prerelease_part() {
        let versions = [v("1.0.0"), v("2.0.0-rc.1"), v("1.5.0+build.2"), v("0.9.0")];
        assert_eq!(latest_release(&versions), Some(&v("1.5.0+build.2")));
        assert_eq!(latest_release(&[v("1.0.0-beta")]), None);
    }

    #[test]
    fn search_needs_every_word_in_the_address_or_description() {
        let summary = ModuleSummary {
            address: ModuleAddress::parse("acme", "network", "aws").unwrap(),
            version: v("1.0.0"),
            published_at: 0,
            source: None,
            description: Some("VPC with Subnets".into()),
        };
        let query = |q: &str| ModuleFilter {
            query: Some(q.into()),
            ..Default::default()
        };
        assert!(query("subnets ACME").matches(&summary));
        assert!(query("acme/network").matches(&summary));
        assert!(!query("subnets gcp").matches(&summary));
        let system = ModuleFilter {
            system: Some("AWS".into()),
            ..Default::default()
        };
        assert!(system.matches(&summary));
    }
}
