//! Precomputed answers: what the hot requests read, one stored document each, kept by the
//! indexer ([`crate::index`]) whenever a file changes, so a request reads one small item
//! instead of a partition of records.
//!
//! - [`ModuleVersionsDoc`]: a module's `/versions` (`RecordId::module_versions`);
//! - [`ProviderVersionsDoc`]: a provider's `/versions`, and the mirror's `index.json` for
//!   the registry's own hostname (`RecordId::provider_versions`);
//! - [`ReleaseDoc`]: one served provider version, what its download answers and the
//!   mirror's `<version>.json` are made of (`RecordId::provider_release`);
//! - [`MirrorVersionsDoc`]: the versions uploaded under `mirror/<hostname>/`
//!   (`RecordId::mirror_versions`).
//!
//! A document is derived data: `tfreg reindex` rebuilds every one from the records.
//! Whether a provider version is served can change with time alone (a key or a signature
//! that expires): each served entry carries the second it stops being served (`until`),
//! and readers check it.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::lifecycle::Notice;
use crate::names::Platform;
use crate::providers::ServedRelease;
use crate::store::{ModuleArchive, RecordId, StoreError};
use crate::tokens::unix;
use crate::version::Version;

/// A module's versions: what `/versions` answers, with each version's publish time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleVersionsDoc {
    /// Every served version, with its entry.
    pub versions: BTreeMap<Version, ModuleVersionEntry>,
    /// The yank records of versions not served ([`crate::lifecycle`]); a yank record of a
    /// served version is not here (`tfreg status` reports it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub withdrawn: BTreeMap<Version, Notice>,
}

/// One module version as its versions document keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleVersionEntry {
    /// The module's repository, from the publisher's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// When the version was first published (Unix seconds; 0 when unknown).
    #[serde(default)]
    pub published_at: u64,
    /// The version's deprecation, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Notice>,
    /// The served archive's `h1:` and `zh:` ([`ModuleArchive::hashes`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hashes: Vec<String>,
}

impl ModuleVersionEntry {
    /// The entry of the archive served for a version, and its deprecation.
    pub fn of(archive: &ModuleArchive, deprecation: Option<Notice>) -> Self {
        Self {
            source: archive.source.clone(),
            published_at: archive.published_at,
            deprecation,
            hashes: archive.hashes(),
        }
    }
}

impl ModuleVersionsDoc {
    /// The module's repository: the latest release's, else the newest version's that has
    /// one.
    pub fn source(&self) -> Option<String> {
        let with_source = || self.versions.iter().filter(|(_, e)| e.source.is_some());
        with_source()
            .rfind(|(v, _)| !v.is_prerelease())
            .or_else(|| with_source().next_back())
            .and_then(|(_, e)| e.source.clone())
    }
}

/// A provider's served versions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderVersionsDoc {
    /// Every version served at some time, with its entry; readers filter by `until`.
    pub versions: BTreeMap<Version, ProviderVersionEntry>,
    /// The yank records of versions not served, as for modules.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub withdrawn: BTreeMap<Version, Notice>,
}

/// One served provider version as the versions document keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderVersionEntry {
    /// The plugin protocol versions it speaks (`5.0`, `6.0`), from its manifest.
    pub protocols: Vec<String>,
    /// The platforms it has a verified package for.
    pub platforms: Vec<Platform>,
    /// The Unix second from which it is no longer served (its key or signature expires).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<u64>,
    /// The release's deprecation, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Notice>,
}

impl ProviderVersionEntry {
    /// The entry of a served release, and its deprecation.
    pub fn of(release: &ReleaseDoc, deprecation: Option<Notice>) -> Self {
        Self {
            protocols: release.release.protocols.clone(),
            platforms: release.release.packages.keys().cloned().collect(),
            until: release.until,
            deprecation,
        }
    }
}

impl ProviderVersionsDoc {
    /// The versions served at `now`, oldest first.
    pub fn served(
        &self,
        now: SystemTime,
    ) -> impl Iterator<Item = (&Version, &ProviderVersionEntry)> {
        self.versions
            .iter()
            .filter(move |(_, entry)| is_current(entry.until, now))
    }
}

/// One served provider version, whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseDoc {
    /// The release as served: its sums, signature, signer and packages.
    pub release: ServedRelease,
    /// The Unix second from which it is no longer served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<u64>,
}

impl ReleaseDoc {
    /// The release, if it is still served at `now`.
    pub fn served(self, now: SystemTime) -> Option<ServedRelease> {
        is_current(self.until, now).then_some(self.release)
    }
}

/// The versions uploaded to the mirror for one `hostname/provider`, with their platforms.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorVersionsDoc {
    /// Every uploaded version, with the platforms it has a package for.
    pub versions: BTreeMap<Version, Vec<Platform>>,
}

fn is_current(until: Option<u64>, now: SystemTime) -> bool {
    until.is_none_or(|until| unix(now) < until)
}

/// A document's bytes.
pub fn encode<T: Serialize>(document: &T) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(document).map_err(|e| StoreError::with_source("cannot encode a document", e))
}

/// A document read back; a document that does not parse is a store failure, named.
pub fn decode<T: DeserializeOwned>(id: &RecordId, body: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(body).map_err(|e| {
        StoreError::with_source(
            format!(
                "the document {} {} is corrupt; `tfreg reindex` rebuilds it",
                id.partition, id.sort
            ),
            e,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn versions_documents_read_back_as_written() {
        let mut doc = ModuleVersionsDoc::default();
        doc.versions.insert(
            v("1.0.0"),
            ModuleVersionEntry {
                source: Some("https://example.com/a".into()),
                published_at: 7,
                deprecation: None,
                hashes: vec!["h1:abc=".into(), format!("zh:{}", "0".repeat(64))],
            },
        );
        doc.versions.insert(
            v("2.0.0-rc.1"),
            ModuleVersionEntry {
                source: Some("https://example.com/b".into()),
                published_at: 8,
                deprecation: None,
                hashes: vec![],
            },
        );
        let id = RecordId::module_versions(
            &crate::names::ModuleAddress::parse("acme", "net", "aws").unwrap(),
        );
        let back: ModuleVersionsDoc = decode(&id, &encode(&doc).unwrap()).unwrap();
        assert_eq!(back, doc);
        // The latest release's repository, not the prerelease's.
        assert_eq!(back.source().as_deref(), Some("https://example.com/a"));
        let error = decode::<ModuleVersionsDoc>(&id, b"{").unwrap_err();
        assert!(error.to_string().contains("tfreg reindex"), "{error}");
    }

    #[test]
    fn an_entry_is_served_until_its_expiry() {
        let at = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
        let entry = |until| ProviderVersionEntry {
            protocols: vec!["5.0".into()],
            platforms: vec![],
            until,
            deprecation: None,
        };
        let mut doc = ProviderVersionsDoc::default();
        doc.versions.insert(v("1.0.0"), entry(None));
        doc.versions.insert(v("2.0.0"), entry(Some(100)));
        assert_eq!(doc.served(at(99)).count(), 2);
        assert_eq!(doc.served(at(100)).count(), 1);
    }
}
