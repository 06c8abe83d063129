//! What upstream registries answer, as read here: service discovery, the `providers.v1`
//! version list and download metadata. Every answer is parsed with a size bound already
//! applied, and URLs in it are resolved against the answer's own URL.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::names::Platform;
use crate::version::Version;

/// Largest discovery, versions or download answer read (`hashicorp/aws`'s version list is
/// about 0.5 MB).
pub const MAX_JSON_BYTES: u64 = 8 * 1024 * 1024;
/// Largest detached signature read.
pub const MAX_SIGNATURE_BYTES: u64 = 64 * 1024;

/// One version of the upstream's list: its protocols and platforms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ListedVersion {
    /// Plugin protocols, as the upstream lists them.
    #[serde(default)]
    pub protocols: Vec<String>,
    /// The platforms it has packages for (`linux_amd64`).
    pub platforms: Vec<Platform>,
}

#[derive(Deserialize)]
struct Versions {
    versions: Vec<VersionEntry>,
}

#[derive(Deserialize)]
struct VersionEntry {
    version: String,
    #[serde(default)]
    protocols: Vec<String>,
    #[serde(default)]
    platforms: Vec<PlatformEntry>,
}

#[derive(Deserialize)]
struct PlatformEntry {
    os: String,
    arch: String,
}

/// Reads the `providers.v1` service's base URL from a discovery document fetched from `url`.
/// It must be at the discovery document's own origin (scheme, host and port): the
/// registry's API calls go only where the operator configured the upstream, never where an
/// answer points.
pub fn providers_base(url: &str, body: &[u8]) -> Result<String, String> {
    let doc: BTreeMap<String, serde_json::Value> = serde_json::from_slice(body)
        .map_err(|e| format!("its service discovery document is not JSON ({e})"))?;
    let Some(serde_json::Value::String(base)) = doc.get("providers.v1") else {
        return Err("its service discovery document offers no providers.v1 service".into());
    };
    let mut resolved = resolve(url, base)?;
    if !same_origin(url, &resolved) {
        return Err(
            "its service discovery document points providers.v1 away from the upstream's own \
             origin: refused (the registry calls only the configured upstream)"
                .into(),
        );
    }
    if !resolved.ends_with('/') {
        resolved.push('/');
    }
    Ok(resolved)
}

/// Parses a `versions` answer. Versions and platforms Terraform could not use either are
/// left out; an answer with none left is still an answer (an empty list).
pub fn versions(body: &[u8]) -> Result<BTreeMap<Version, ListedVersion>, String> {
    let answer: Versions = serde_json::from_slice(body)
        .map_err(|e| format!("its version list is not the providers.v1 shape ({e})"))?;
    let mut versions = BTreeMap::new();
    for entry in answer.versions {
        let Ok(version) = Version::parse(&entry.version) else {
            continue;
        };
        let platforms = entry
            .platforms
            .iter()
            .filter_map(|p| Platform::parse(&p.os, &p.arch).ok())
            .collect();
        versions.insert(
            version,
            ListedVersion {
                protocols: entry.protocols,
                platforms,
            },
        );
    }
    Ok(versions)
}

/// A `download` answer: one platform's package and the release's signed checksums (the
/// protocol's own shape, read).
pub type Download = crate::protocol::ProviderDownload;

/// One signing key of an upstream release.
pub type UpstreamKey = crate::protocol::GpgPublicKey;

/// Parses a `download` answer fetched from `url`, resolving its URLs against it.
pub fn download(url: &str, body: &[u8]) -> Result<Download, String> {
    let mut answer: Download = serde_json::from_slice(body)
        .map_err(|e| format!("its download answer is not the providers.v1 shape ({e})"))?;
    answer.download_url = resolve(url, &answer.download_url)?;
    answer.shasums_url = resolve(url, &answer.shasums_url)?;
    answer.shasums_signature_url = resolve(url, &answer.shasums_signature_url)?;
    answer.shasum = answer.shasum.to_ascii_lowercase();
    if answer.signing_keys.gpg_public_keys.is_empty() {
        return Err("its download answer lists no signing keys".into());
    }
    Ok(answer)
}

/// True when both URLs have the same origin: scheme, host and port.
pub fn same_origin(a: &str, b: &str) -> bool {
    match (url::Url::parse(a), url::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

/// `reference` resolved against `base`; only `https:` results are accepted.
pub fn resolve(base: &str, reference: &str) -> Result<String, String> {
    let base = url::Url::parse(base).map_err(|e| format!("bad URL {base:?}: {e}"))?;
    let url = base
        .join(reference)
        .map_err(|e| format!("bad URL {reference:?} in its answer: {e}"))?;
    if url.scheme() != "https" {
        return Err(format!(
            "its answer points at {url}, which is not https: refused"
        ));
    }
    Ok(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_and_urls_resolve_against_the_answer() {
        let base = providers_base(
            "https://up.example/.well-known/terraform.json",
            br#"{"providers.v1":"/v1/providers"}"#,
        )
        .unwrap();
        assert_eq!(base, "https://up.example/v1/providers/");
        // providers.v1 at another port, host or scheme is refused.
        for elsewhere in [
            "https://up.example:8443/v1/providers/",
            "https://127.0.0.1/v1/providers/",
            "https://other.example/v1/providers/",
            "//up.example:444/v1/",
        ] {
            let doc = format!(r#"{{"providers.v1":"{elsewhere}"}}"#);
            let e = providers_base(
                "https://up.example/.well-known/terraform.json",
                doc.as_bytes(),
            )
            .unwrap_err();
            assert!(e.contains("own origin"), "{elsewhere}: {e}");
        }
        let configured = providers_base(
            "https://127.0.0.1:9443/.well-known/terraform.json",
            br#"{"providers.v1":"https://127.0.0.1:9443/v1/providers/"}"#,
        )
        .unwrap();
        assert_eq!(configured, "https://127.0.0.1:9443/v1/providers/");
        assert!(providers_base("https://up.example/x", b"{}").is_err());
        assert!(providers_base("https://up.example/x", b"nope").is_err());
        let e = resolve("https://up.example/a", "http://elsewhere/x").unwrap_err();
        assert!(e.contains("not https"), "{e}");
    }

    #[test]
    fn versions_keep_what_terraform_could_use() {
        let list = versions(
            br#"{"versions":[{"version":"1.0.0","protocols":["5.0"],"platforms":[{"os":"linux","arch":"amd64"},{"os":"Bad OS","arch":"x"}]},{"version":"not-a-version","platforms":[]}]}"#,
        )
        .unwrap();
        assert_eq!(list.len(), 1);
        let (version, entry) = list.iter().next().unwrap();
        assert_eq!(version.to_string(), "1.0.0");
        assert_eq!(entry.platforms.len(), 1);
        assert!(versions(b"[]").is_err());
    }
}
