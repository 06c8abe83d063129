//! What the upstream cache keeps in the artifact store, beside the packages it stores under
//! `mirror/`: per provider, the last good version list (`upstream/H/N/T/index.json`); per
//! release, the verified release (`upstream/H/N/T/<version>.json`, kept for good) or why it
//! was refused (`<version>.refused.json`). Plain JSON files, so a copy of the bucket or data
//! directory is a copy of the cache, and `tfreg reindex` needs nothing else.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::protocol::{ListedVersion, UpstreamKey};
use crate::names::{Hostname, Platform, ProviderAddress};
use crate::version::Version;

/// The prefix of the cache's records.
pub const UPSTREAM_PREFIX: &str = "upstream/";

/// One upstream provider: where it comes from and its name there.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UpstreamProvider {
    /// The origin registry's hostname.
    pub host: Hostname,
    /// The provider at its origin.
    pub provider: ProviderAddress,
}

impl UpstreamProvider {
    /// The folder of its records.
    fn folder(&self) -> String {
        format!("{UPSTREAM_PREFIX}{}/{}", self.host, self.provider)
    }

    /// The key of its last good version list.
    pub fn list_key(&self) -> String {
        format!("{}/index.json", self.folder())
    }

    /// The key of one verified release.
    pub fn release_key(&self, version: &Version) -> String {
        format!("{}/{version}.json", self.folder())
    }

    /// The key of one release's refusal.
    pub fn refusal_key(&self, version: &Version) -> String {
        format!("{}/{version}.refused.json", self.folder())
    }

    /// Where a verified package is stored: the mirror layout, which the indexer serves.
    pub fn package_key(&self, version: &Version, platform: &Platform) -> String {
        let t = &self.provider.type_;
        format!(
            "mirror/{}/{}/terraform-provider-{t}_{version}_{platform}.zip",
            self.host, self.provider
        )
    }

    /// The key of a request to fetch one package (pass-through mode on AWS): the fetcher
    /// function, fed by the bucket's events, fetches what it names.
    pub fn fetch_request_key(&self, version: &Version, platform: &Platform) -> String {
        format!("{}/fetch/{version}_{platform}.json", self.folder())
    }

    /// Reads a fetch request's key back into what it asks for.
    pub fn from_fetch_request_key(key: &str) -> Option<(UpstreamProvider, Version, Platform)> {
        let rest = key.strip_prefix(UPSTREAM_PREFIX)?;
        let [host, namespace, type_, "fetch", file] = rest.split('/').collect::<Vec<_>>()[..]
        else {
            return None;
        };
        let stem = file.strip_suffix(".json")?;
        let (version, platform) = stem.split_once('_')?;
        Some((
            UpstreamProvider {
                host: Hostname::parse(host).ok()?,
                provider: ProviderAddress::parse(namespace, type_).ok()?,
            },
            Version::parse(version).ok()?,
            Platform::parse_joined(platform).ok()?,
        ))
    }

    /// Reads `upstream/H/N/T/<file>` back into the provider and the file name.
    pub fn from_key(key: &str) -> Option<(UpstreamProvider, &str)> {
        let rest = key.strip_prefix(UPSTREAM_PREFIX)?;
        let [host, namespace, type_, file] = rest.split('/').collect::<Vec<_>>()[..] else {
            return None;
        };
        Some((
            UpstreamProvider {
                host: Hostname::parse(host).ok()?,
                provider: ProviderAddress::parse(namespace, type_).ok()?,
            },
            file,
        ))
    }
}

impl std::fmt::Display for UpstreamProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.host, self.provider)
    }
}

/// The last version list the upstream answered, with the versions cached for good.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct VersionList {
    /// When the upstream answered it (Unix seconds).
    pub fetched_at: u64,
    /// Where it was asked.
    pub source: String,
    /// Every version, with its protocols and platforms.
    pub versions: BTreeMap<Version, ListedVersion>,
    /// The versions cached for good: listed even after the upstream stops listing them.
    #[serde(default)]
    pub cached: std::collections::BTreeSet<Version>,
    /// The last failed refresh, while the list is served stale.
    #[serde(default)]
    pub last_failure: Option<Refusal>,
    /// The releases (or packages of them) refused, each with its last refusal.
    #[serde(default)]
    pub refused: BTreeMap<Version, Refusal>,
}

/// A release fetched and verified: everything needed to serve it again without the upstream,
/// and to show why it was trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseRecord {
    /// When it was fetched (Unix seconds).
    pub fetched_at: u64,
    /// The upstream's `providers.v1` URL it came from.
    pub source: String,
    /// Plugin protocols.
    pub protocols: Vec<String>,
    /// SHA256SUMS, as the upstream served it.
    pub sums: String,
    /// Its detached signature, base64.
    pub signature: String,
    /// The fingerprint of the key that verified the signature (uppercase hex; records made
    /// before issue 45 hold the key ID the upstream claimed).
    pub signed_by: String,
    /// The signing keys the upstream gave for this release.
    pub keys: Vec<UpstreamKey>,
    /// Each platform's package, by `os_arch`.
    pub platforms: BTreeMap<String, PlatformPackage>,
}

impl ReleaseRecord {
    /// Each platform's package (records name platforms `os_arch`).
    pub fn packages(&self) -> impl Iterator<Item = (Platform, &PlatformPackage)> {
        self.platforms.iter().filter_map(|(platform, package)| {
            Some((Platform::parse_joined(platform).ok()?, package))
        })
    }
}

/// One platform's package of a verified release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformPackage {
    /// Its file name in SHA256SUMS.
    pub filename: String,
    /// Its SHA-256 from the verified SHA256SUMS, lowercase hex.
    pub sha256: String,
    /// Where the upstream offers it.
    pub download_url: String,
}

impl PlatformPackage {
    /// Its `zh:` hash.
    pub fn zh(&self) -> String {
        format!("zh:{}", self.sha256)
    }
}

/// Why a release (or one of its packages) was refused, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// When (Unix seconds).
    pub at: u64,
    /// Why, as shown to users.
    pub reason: String,
}

/// Largest record read back.
const MAX_RECORD_BYTES: u64 = 16 * 1024 * 1024;

/// Reads the record at `key`: `None` when there is none, or when it does not parse (a
/// damaged record is fetched again, never trusted; the log says so).
pub async fn read<T: serde::de::DeserializeOwned>(
    files: &dyn crate::store::ArtifactStore,
    key: &str,
) -> Result<Option<T>, crate::StoreError> {
    use tokio::io::AsyncReadExt;
    let Some(body) = files.open(key).await? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    body.reader
        .take(MAX_RECORD_BYTES)
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| crate::StoreError::with_source(format!("cannot read {key}"), e))?;
    match serde_json::from_slice(&bytes) {
        Ok(record) => Ok(Some(record)),
        Err(e) => {
            tracing::warn!(key, error = %e, "an upstream cache record does not parse; it is fetched again");
            Ok(None)
        }
    }
}

/// Encodes a record as pretty JSON (people read these files).
pub fn encode<T: Serialize>(record: &T) -> Vec<u8> {
    serde_json::to_vec_pretty(record).expect("records serialise")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip() {
        let p = UpstreamProvider {
            host: Hostname::parse("registry.terraform.io").unwrap(),
            provider: ProviderAddress::parse("hashicorp", "aws").unwrap(),
        };
        let v = Version::parse("5.1.0").unwrap();
        assert_eq!(
            p.release_key(&v),
            "upstream/registry.terraform.io/hashicorp/aws/5.1.0.json"
        );
        let refusal = p.refusal_key(&v);
        let (back, file) = UpstreamProvider::from_key(&refusal).unwrap();
        assert_eq!((back, file), (p.clone(), "5.1.0.refused.json"));
        let platform = Platform::parse("linux", "amd64").unwrap();
        assert_eq!(
            p.package_key(&v, &platform),
            "mirror/registry.terraform.io/hashicorp/aws/terraform-provider-aws_5.1.0_linux_amd64.zip"
        );
        let request = p.fetch_request_key(&v, &platform);
        assert_eq!(
            UpstreamProvider::from_fetch_request_key(&request),
            Some((p.clone(), v.clone(), platform.clone()))
        );
        assert_eq!(
            UpstreamProvider::from_fetch_request_key(&p.release_key(&v)),
            None
        );
        assert!(matches!(
            crate::layout::classify(&p.package_key(&v, &platform)),
            crate::layout::Classified::Artifact(_)
        ));
    }
}
