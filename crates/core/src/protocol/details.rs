//! The JSON documents of the read API beyond Terraform's protocols: module and provider
//! details, `latest`, listings and search, in the public registry's shapes (its documented
//! fields; `downloads` is never counted here, so it is always 0).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::lifecycle::Notice;
use crate::module_docs::ModulePart;
use crate::protocol::ProviderPlatform;
use crate::version::Version;

/// One module version, as listings show it (`GET {modules.v1}`, `{modules.v1}NS`,
/// `{modules.v1}NS/NAME`, `{modules.v1}search`), and the first fields of its details.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ModuleEntry {
    /// `namespace/name/system/version`.
    pub id: String,
    /// Always `""`: the registry knows no owners.
    pub owner: String,
    /// The module's namespace.
    pub namespace: String,
    /// The module's name.
    pub name: String,
    /// The version shown.
    pub version: Version,
    /// The module's target system (`aws`), as the public registry calls it.
    pub provider: String,
    /// The publisher's line about the module, or `""`.
    pub description: String,
    /// The module's repository, from the publisher; `null` when unknown.
    pub source: Option<String>,
    /// When the version was first published (RFC 3339, UTC); `null` for versions indexed
    /// before publish times were recorded.
    pub published_at: Option<String>,
    /// Always 0: downloads are not counted.
    pub downloads: u64,
    /// Always false.
    pub verified: bool,
    /// The version's deprecation; absent when it is not deprecated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
}

/// `GET {modules.v1}NS/NAME/SYSTEM/VERSION` and `{modules.v1}NS/NAME/SYSTEM` (latest).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ModuleDetails {
    /// The fields listings show.
    #[serde(flatten)]
    pub entry: ModuleEntry,
    /// The root module's facts; empty lists when the archive's docs are unknown.
    pub root: ModulePart,
    /// `modules/<name>/`, by path.
    pub submodules: Vec<ModulePart>,
    /// `examples/<name>/`, by path.
    pub examples: Vec<ModulePart>,
    /// The systems this `namespace/name` is published for.
    pub providers: Vec<String>,
    /// Every published version of this module, oldest first, prereleases included.
    pub versions: Vec<Version>,
    /// The deprecated ones among `versions`, by version; absent when none is (the shown
    /// version's own is `deprecation`, with the listings' fields).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub deprecated_versions: BTreeMap<Version, Deprecation>,
    /// The versions withdrawn (their files deleted) with a yank record, oldest first;
    /// absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub withdrawn: Vec<Withdrawn>,
    /// The shown version's hashes, as lock files write them: `h1:` of the tree its archive
    /// unpacks to (what `tfreg verify` compares an installed module with), then `zh:`,
    /// the SHA-256 of the archive as served. Empty when the registry recorded none.
    pub hashes: Vec<String>,
    /// The version's SBOMs and provenance statements, by file name (docs/attachments.md).
    pub attachments: Vec<Attachment>,
    /// The namespace key whose detached signature of the archive (`<archive>.sig`)
    /// verified at publish; `null` when the version is not signed (docs/module-signing.md).
    pub signed_by: Option<ModuleSigner>,
}

/// Who signed a module version: a key under `keys/<namespace>/`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ModuleSigner {
    /// The key's ID, uppercase hex.
    pub key_id: String,
    /// When the key expires or expired (Unix seconds); absent when it does not. The version
    /// stays served after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_expires_at: Option<u64>,
}

/// One attachment of a version, in the shape of OpenTofu's `attachments` proposal
/// (`media_type`, `filename`, `download_url`), with what the registry checked.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Attachment {
    /// `application/spdx+json`, `application/vnd.cyclonedx+json` or
    /// `application/vnd.in-toto+json`.
    pub media_type: String,
    /// The file's name.
    pub filename: String,
    /// A URL that authorises itself, pinned to the revision checked.
    pub download_url: String,
    /// `spdx`, `cyclone_dx` or `provenance`.
    pub kind: crate::attachments::AttachmentKind,
    /// Its length in bytes.
    pub size: u64,
    /// SHA-256 of its bytes (lowercase hex).
    pub sha256: String,
    /// True when a detached signature beside it verified with a key of the namespace.
    pub verified: bool,
    /// That key's ID (uppercase hex); `null` when unverified.
    pub key_id: Option<String>,
    /// Why it is unverified; `null` when verified.
    pub unverified_reason: Option<String>,
    /// A statement's predicate types; absent for SBOMs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub predicate_types: Vec<String>,
}

/// A version's deprecation, as the read API shows it: every field present, `null` when the
/// publisher left it out. Text from the publisher, to be escaped where shown.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Deprecation {
    /// Why.
    pub reason: String,
    /// The version to use instead.
    pub replacement: Option<Version>,
    /// The day (`YYYY-MM-DD`) the version is planned to be withdrawn.
    pub retire_on: Option<String>,
    /// Who deprecated it.
    pub by: Option<String>,
    /// When (RFC 3339).
    pub at: Option<String>,
}

impl From<&Notice> for Deprecation {
    fn from(notice: &Notice) -> Self {
        Self {
            reason: notice.reason.clone(),
            replacement: notice.replacement.clone(),
            retire_on: notice.retire_on.clone(),
            by: notice.by.clone(),
            at: notice.at.clone(),
        }
    }
}

/// A version withdrawn, with its yank record.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Withdrawn {
    /// The version no longer served.
    pub version: Version,
    /// Why it was withdrawn.
    pub reason: String,
    /// Who withdrew it.
    pub by: Option<String>,
    /// When (RFC 3339).
    pub at: Option<String>,
}

impl Withdrawn {
    /// The withdrawn versions of a versions document's yank records, oldest first.
    pub fn all<'a>(withdrawn: impl IntoIterator<Item = (&'a Version, &'a Notice)>) -> Vec<Self> {
        withdrawn
            .into_iter()
            .map(|(version, notice)| Self {
                version: version.clone(),
                reason: notice.reason.clone(),
                by: notice.by.clone(),
                at: notice.at.clone(),
            })
            .collect()
    }
}

/// Where a page of a listing sits: `next_offset` and `next_url` only when a next page
/// exists, `prev_offset` only when a previous one does.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ListMeta {
    /// The most entries a page holds.
    pub limit: usize,
    /// How many entries precede this page.
    pub current_offset: usize,
    /// The next page's offset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
    /// The previous page's offset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prev_offset: Option<usize>,
    /// The next page's path and query, relative to the registry's origin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_url: Option<String>,
}

/// A page of modules.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ModuleList {
    /// Where the page sits.
    pub meta: ListMeta,
    /// The page's modules.
    pub modules: Vec<ModuleEntry>,
}

/// `GET {providers.v1}NS/TYPE` (latest) and `{providers.v1}NS/TYPE/VERSION`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ProviderDetails {
    /// `namespace/type/version`.
    pub id: String,
    /// Always `""`.
    pub owner: String,
    /// The provider's namespace.
    pub namespace: String,
    /// The provider's type.
    pub name: String,
    /// The version shown.
    pub version: Version,
    /// Always `""`: releases carry no description.
    pub description: String,
    /// Always `null`: releases carry no repository.
    pub source: Option<String>,
    /// When the release was first served: its SHA256SUMS's pin (RFC 3339); `null` when the
    /// registry keeps no pin of it.
    pub published_at: Option<String>,
    /// Always 0.
    pub downloads: u64,
    /// The plugin protocol versions the release speaks.
    pub protocols: Vec<String>,
    /// The platforms served for this version.
    pub platforms: Vec<ProviderPlatform>,
    /// Every served version of the provider, oldest first, prereleases included.
    pub versions: Vec<Version>,
    /// The ID of the key whose signature of SHA256SUMS verified (uppercase hex, as
    /// Terraform shows it). Beyond the public registry's fields.
    pub key_id: String,
    /// When that key expires or expired (Unix seconds); absent when it does not. A version
    /// signed while its key was valid stays served after the key expires.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_expires_at: Option<u64>,
    /// The shown version's deprecation; absent when it is not deprecated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
    /// The deprecated ones among `versions`, by version; absent when none is.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub deprecated_versions: BTreeMap<Version, Deprecation>,
    /// The versions withdrawn with a yank record, oldest first; absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub withdrawn: Vec<Withdrawn>,
    /// The release's SBOMs and provenance statements (see [`ModuleDetails::attachments`]).
    pub attachments: Vec<Attachment>,
}

/// Unix seconds as RFC 3339 (`2024-05-01T12:00:00Z`); `None` for 0, "unknown".
pub fn rfc3339(unix_seconds: u64) -> Option<String> {
    (unix_seconds > 0).then(|| {
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix_seconds);
        humantime::format_rfc3339_seconds(time).to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_times_are_rfc3339_and_zero_is_unknown() {
        assert_eq!(
            rfc3339(1_700_000_000).as_deref(),
            Some("2023-11-14T22:13:20Z")
        );
        assert_eq!(rfc3339(0), None);
    }
}
