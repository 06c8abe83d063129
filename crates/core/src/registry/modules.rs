//! The module read API beyond the protocol: details, `latest`, listings and search. A
//! version's details read the module's versions document and the catalogue at once, then
//! the version's own records; a listing or a search reads the catalogue
//! ([`super::catalogue`], made from [`partition::MODULES`] once per change of the listing),
//! filtered by the token's scope before it is paged.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::catalogue::{Catalogue, PageKey};
use super::page::Page;
use super::{module_not_found, module_version_not_found, Registry, RegistryError};
use crate::documents::ModuleVersionsDoc;
use crate::names::{ModuleAddress, Namespace};
use crate::protocol::details::{
    rfc3339, Deprecation, ModuleDetails, ModuleEntry, ModuleList, Withdrawn,
};
use crate::store::{partition, ModuleArchive, ModuleSummary, Record, RecordId, StoreError};
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

/// The module archives among `records` that may be served (docs/module-signing.md). Each
/// recorded archive is ruled by the signature judgement beside it: one being judged
/// ([`ModuleSignatureVerdict::Pending`]) is left out (fail closed); a refusal (a bad
/// signature, or none under a policy that requires one) leaves its whole version out; a
/// signed one carries the key that signed it. A judgement of an archive that is not recorded
/// (gone, or refused for itself) rules nothing: no event has to delete it in time.
pub fn module_archives(records: Vec<Record>) -> Vec<ModuleArchive> {
    use crate::store::{ModuleSignatureRecord, ModuleSignatureVerdict};
    let mut verdicts = BTreeMap::new();
    let mut archives = Vec::new();
    for record in records {
        match record {
            Record::ModuleArchive(a) => archives.push(a),
            Record::ModuleSignature(ModuleSignatureRecord {
                archive_key,
                verdict,
                ..
            })
                // An unsigned verdict rules like none; it never hides one in the prefix.
                if verdict != ModuleSignatureVerdict::Unsigned =>
            {
                verdicts.insert(archive_key, verdict);
            }
            _ => {}
        }
    }
    let refused: std::collections::BTreeSet<Version> = archives
        .iter()
        .filter(|a| {
            matches!(
                verdicts.get(&a.key),
                Some(ModuleSignatureVerdict::Refused(_))
            )
        })
        .map(|a| a.version.clone())
        .collect();
    archives.retain(|a| {
        !refused.contains(&a.version)
            && !matches!(verdicts.get(&a.key), Some(ModuleSignatureVerdict::Pending))
    });
    for archive in &mut archives {
        if let Some(ModuleSignatureVerdict::Signed(by)) = verdicts.remove(&archive.key) {
            archive.signed_by = Some(by);
        }
    }
    archives
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
        words: archive
            .docs
            .as_ref()
            .map(|docs| docs.search_words())
            .unwrap_or_default(),
        deprecation: None,
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
    /// Whether it is deprecated (the details say how).
    pub deprecated: bool,
}

/// Which modules a listing shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
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
    /// True when the module has the name and system asked for (the query aside).
    pub(crate) fn selects(&self, summary: &ModuleSummary) -> bool {
        let address = &summary.address;
        let same = |wanted: &Option<String>, actual: &str| {
            wanted
                .as_ref()
                .is_none_or(|w| w.eq_ignore_ascii_case(actual))
        };
        same(&self.name, address.name.as_str()) && same(&self.system, address.system.as_str())
    }
}

fn entry(
    address: &ModuleAddress,
    version: &Version,
    published_at: u64,
    source: Option<&String>,
    description: Option<&String>,
    deprecation: Option<Deprecation>,
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
        deprecation,
    }
}

fn summaries(records: Vec<Record>) -> Vec<ModuleSummary> {
    records
        .into_iter()
        .filter_map(|r| match r {
            Record::ListedModule(s) => Some(s),
            _ => None,
        })
        .collect()
}

/// The catalogue as last made, and what it was made from.
#[derive(Default)]
pub(super) struct KeptCatalogue {
    /// The store's generation it was made at, when the store has one.
    generation: Option<u64>,
    /// The revision of the listing's stamp ([`RecordId::module_listing`]) read before.
    stamp: Option<String>,
    catalogue: Arc<Catalogue>,
}

impl Registry {
    /// The catalogue of every listed module: kept while the store's generation, or else
    /// the listing's stamp, is unchanged (one small read), made again from the listing
    /// partition when it changed.
    pub(crate) async fn catalogue(&self) -> Result<Arc<Catalogue>, StoreError> {
        let generation = self.metadata.generation();
        let stamp = match generation {
            Some(_) => None,
            None => self
                .metadata
                .get_document(&RecordId::module_listing())
                .await?
                .map(|d| d.revision),
        };
        {
            let kept = self
                .catalogue
                .lock()
                .map_err(|_| StoreError::new("catalogue poisoned"))?;
            let same_generation = generation.is_some() && kept.generation == generation;
            let same_stamp = stamp.is_some() && kept.stamp == stamp;
            if same_generation || same_stamp {
                return Ok(Arc::clone(&kept.catalogue));
            }
        }
        let listed = summaries(self.metadata.query(partition::MODULES).await?);
        let catalogue = Arc::new(Catalogue::new(listed));
        if let Ok(mut kept) = self.catalogue.lock() {
            *kept = KeptCatalogue {
                generation,
                stamp,
                catalogue: Arc::clone(&catalogue),
            };
        }
        Ok(catalogue)
    }

    /// A page of the modules `filter` selects that `access` may read (all others are
    /// absent, and are left out before paging), in address order. `path` and `params` make
    /// the next page's URL. Kept with the catalogue it was made from: asked again before
    /// the listing changes, it costs a lookup.
    pub async fn list_modules(
        &self,
        access: &Access,
        filter: &ModuleFilter,
        page: Page,
        path: &str,
        params: &[(&str, &str)],
    ) -> Result<Arc<ModuleList>, RegistryError> {
        let catalogue = self.catalogue().await?;
        let key = PageKey::new(access, filter, page, path, params);
        if let Some(kept) = catalogue.kept_page(&key) {
            return Ok(kept);
        }
        let allowed = filter.namespace.as_ref().is_none_or(|n| access.allows(n));
        // One more than the page: whether a next page follows.
        let selected = match allowed {
            true => catalogue.select(access, filter, page.offset, page.limit + 1),
            false => Vec::new(),
        };
        let found: Vec<ModuleEntry> = selected
            .into_iter()
            .map(|s| {
                entry(
                    &s.address,
                    &s.version,
                    s.published_at,
                    s.source.as_ref(),
                    s.description.as_ref(),
                    s.deprecation.as_ref().map(Deprecation::from),
                )
            })
            .collect();
        let (meta, modules) = page.cut_from(found, path, params);
        let list = Arc::new(ModuleList { meta, modules });
        catalogue.keep_page(key, Arc::clone(&list));
        Ok(list)
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
        let (doc, listed) = tokio::join!(self.module_doc(address), self.catalogue());
        let doc = doc?;
        if doc.versions.is_empty() {
            return Err(module_not_found(address));
        }
        let version = match version {
            Some(version) => version.clone(),
            None => latest_of(address, &doc)?,
        };
        if !doc.versions.contains_key(&version) {
            return Err(module_version_not_found(address, &version));
        }
        let archive = self.module_archive(access, address, &version).await?;
        let same_name = ModuleFilter {
            namespace: Some(address.namespace.clone()),
            name: Some(address.name.to_string()),
            ..Default::default()
        };
        let mut providers: Vec<String> = listed?
            .select(&Access::All, &same_name, 0, usize::MAX)
            .into_iter()
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
                deprecated: entry.deprecation.is_some(),
            })
            .collect();
        let deprecated_versions: BTreeMap<Version, Deprecation> = doc
            .versions
            .iter()
            .filter_map(|(v, entry)| Some((v.clone(), entry.deprecation.as_ref()?.into())))
            .collect();
        let details = ModuleDetails {
            entry: entry(
                address,
                &version,
                archive.published_at,
                archive.source.as_ref(),
                archive.description.as_ref(),
                deprecated_versions.get(&version).cloned(),
            ),
            root: docs.root,
            submodules: docs.submodules,
            examples: docs.examples,
            providers,
            versions: doc.versions.keys().cloned().collect(),
            deprecated_versions,
            withdrawn: Withdrawn::all(&doc.withdrawn),
            hashes: archive.hashes(),
            // The route adds them: their URLs name the origin the request reached.
            attachments: Vec::new(),
            signed_by: archive.signed_by.as_ref().map(|by| {
                crate::protocol::details::ModuleSigner {
                    key_id: by.key_id.clone(),
                    key_expires_at: by.key_info.expires_at,
                }
            }),
        };
        Ok(ModulePage { details, published })
    }

    /// The versions of a module withdrawn with a yank record, oldest first (empty outside
    /// `access`): what the module's page shows, even when no version is served.
    pub async fn module_withdrawn(
        &self,
        access: &Access,
        address: &ModuleAddress,
    ) -> Result<Vec<Withdrawn>, StoreError> {
        if !access.allows(&address.namespace) {
            return Ok(vec![]);
        }
        Ok(Withdrawn::all(&self.module_doc(address).await?.withdrawn))
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
}
