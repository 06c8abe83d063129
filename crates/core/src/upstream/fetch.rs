//! Asking an upstream registry, through its own protocol as Terraform would: discovery, the
//! version list, each platform's download answer, SHA256SUMS and its signature; then
//! verifying, with the rules the registry applies to its own providers, before anything is
//! kept. Packages are fetched into a spool file and compared with the verified SHA256SUMS.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use base64::Engine;

use super::client::{CallError, UpstreamClient};
use super::protocol::{self, Download, MAX_JSON_BYTES, MAX_SIGNATURE_BYTES};
use super::record::{PlatformPackage, ReleaseRecord, UpstreamProvider, VersionList};
use super::UpstreamError;
use crate::gpg::{self, NotVerified};
use crate::names::Platform;
use crate::release::{parse_sums, MAX_RELEASE_FILE_BYTES};
use crate::version::Version;

/// Unix seconds now.
pub(super) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The upstream's `providers.v1` base URL, from its service discovery.
pub(super) async fn providers_base(
    client: &dyn UpstreamClient,
    up: &UpstreamProvider,
) -> Result<String, UpstreamError> {
    let url = client.discovery_url(&up.host);
    let body = client
        .get(&up.host, &url, MAX_JSON_BYTES)
        .await
        .map_err(|e| UpstreamError::unreachable(up, e))?;
    protocol::providers_base(&url, &body).map_err(|e| UpstreamError::unreachable(up, e))
}

/// The upstream's current version list, from its `providers.v1` service at `base`.
pub(super) async fn version_list(
    client: &dyn UpstreamClient,
    up: &UpstreamProvider,
    base: &str,
) -> Result<VersionList, UpstreamError> {
    let url = format!("{base}{}/versions", up.provider);
    let body = client
        .get(&up.host, &url, MAX_JSON_BYTES)
        .await
        .map_err(|e| match e {
            CallError::NotFound(_) => UpstreamError::NotFound(format!(
                "the upstream registry {} has no provider {}",
                up.host, up.provider
            )),
            e => UpstreamError::unreachable(up, e),
        })?;
    let versions = protocol::versions(&body).map_err(|e| UpstreamError::unreachable(up, e))?;
    Ok(VersionList {
        fetched_at: unix_now(),
        source: url,
        versions,
        ..VersionList::default()
    })
}

/// Fetches one release's download answers, SHA256SUMS and signature, and verifies them.
/// `Refused` for what Terraform would refuse; `Unreachable` when the upstream did not answer.
pub(super) async fn release(
    client: &dyn UpstreamClient,
    up: &UpstreamProvider,
    base: &str,
    version: &Version,
    platforms: &[Platform],
) -> Result<ReleaseRecord, UpstreamError> {
    if platforms.is_empty() {
        return Err(UpstreamError::refused(
            up,
            version,
            "the upstream lists no platforms for it",
        ));
    }
    // Each platform's answer is asked at once: a release of many platforms costs the time
    // of one call, not of all of them.
    let asked = platforms.iter().map(|platform| {
        let url = format!(
            "{base}{}/{version}/download/{}/{}",
            up.provider, platform.os, platform.arch
        );
        async move {
            let body = client
                .get(&up.host, &url, MAX_JSON_BYTES)
                .await
                .map_err(|e| UpstreamError::unreachable(up, e))?;
            let answer = protocol::download(&url, &body)
                .map_err(|e| UpstreamError::refused(up, version, &e))?;
            Ok::<_, UpstreamError>((platform.clone(), answer))
        }
    });
    let answers: Vec<(Platform, Download)> = futures_util::future::join_all(asked)
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    // Every platform's answer must name the same SHA256SUMS and signature. Their URLs may
    // differ only in their query (signed or presigned URLs); other paths are fetched too and
    // must hold the same bytes. The signature is then checked once.
    let first = answers[0].1.clone();
    let sums = fetch_same(
        client,
        up,
        version,
        &answers,
        |a| &a.shasums_url,
        MAX_RELEASE_FILE_BYTES,
        "SHA256SUMS",
    )
    .await?;
    let signature = fetch_same(
        client,
        up,
        version,
        &answers,
        |a| &a.shasums_signature_url,
        MAX_SIGNATURE_BYTES,
        "SHA256SUMS signature",
    )
    .await?;
    let signed_by = verify_signature(&first, &sums, &signature, SystemTime::now())
        .map_err(|e| UpstreamError::refused(up, version, &e))?;
    let listed = parse_sums(&sums).map_err(|e| UpstreamError::refused(up, version, &e))?;
    let mut packages = BTreeMap::new();
    for (platform, answer) in &answers {
        let Some(sha256) = listed.get(&answer.filename) else {
            return Err(UpstreamError::refused(
                up,
                version,
                &format!(
                    "SHA256SUMS does not list {}, the {platform} package",
                    answer.filename
                ),
            ));
        };
        if *sha256 != answer.shasum {
            return Err(UpstreamError::refused(
                up,
                version,
                &format!(
                    "the download answer for {platform} gives the checksum {} but the signed SHA256SUMS lists {sha256}",
                    answer.shasum
                ),
            ));
        }
        packages.insert(
            platform.to_string(),
            PlatformPackage {
                filename: answer.filename.clone(),
                sha256: sha256.clone(),
                download_url: answer.download_url.clone(),
            },
        );
    }
    Ok(ReleaseRecord {
        fetched_at: unix_now(),
        source: base.to_owned(),
        protocols: first.protocols.clone(),
        sums: String::from_utf8_lossy(&sums).into_owned(),
        signature: base64::engine::general_purpose::STANDARD.encode(&signature),
        signed_by,
        keys: first.signing_keys.gpg_public_keys.clone(),
        platforms: packages,
    })
}

/// One release file that every download answer names (`which`): fetched once per distinct
/// URL path, and refused unless every copy holds the same bytes.
async fn fetch_same(
    client: &dyn UpstreamClient,
    up: &UpstreamProvider,
    version: &Version,
    answers: &[(Platform, Download)],
    which: impl Fn(&Download) -> &String,
    limit: u64,
    what: &str,
) -> Result<Vec<u8>, UpstreamError> {
    let path = |url: &str| url.split(['?', '#']).next().unwrap_or(url).to_owned();
    let mut distinct: Vec<(String, &str)> = Vec::new();
    for (_, answer) in answers {
        let url = which(answer);
        if !distinct.iter().any(|(p, _)| *p == path(url)) {
            distinct.push((path(url), url));
        }
    }
    let mut bytes: Option<Vec<u8>> = None;
    for (_, url) in distinct {
        let got = client
            .get_file(&up.host, url, limit)
            .await
            .map_err(|e| UpstreamError::unreachable(up, e))?;
        match &bytes {
            Some(seen) if *seen != got => {
                return Err(UpstreamError::refused(
                    up,
                    version,
                    &format!("the platforms' download answers name different {what} files"),
                ))
            }
            Some(_) => {}
            None => bytes = Some(got),
        }
    }
    Ok(bytes.unwrap_or_default())
}

/// Checks SHA256SUMS's signature against the release's keys as Terraform does: the first key
/// that made it must verify it; a signature by none of them is refused. Returns the
/// fingerprint of the key that verified it (not the key ID the upstream claims for it).
pub fn verify_signature(
    answer: &Download,
    sums: &[u8],
    signature: &[u8],
    now: SystemTime,
) -> Result<String, String> {
    for key in &answer.signing_keys.gpg_public_keys {
        match gpg::check_detached(&key.ascii_armor, signature, sums, now) {
            Ok(_) => return gpg::fingerprint(&key.ascii_armor),
            Err(NotVerified::NotByThisKey) => continue,
            Err(NotVerified::Refused(reason)) => return Err(reason),
        }
    }
    let ids: Vec<&str> = answer
        .signing_keys
        .gpg_public_keys
        .iter()
        .map(|k| k.key_id.as_str())
        .collect();
    Err(format!(
        "SHA256SUMS is not signed by any of the upstream's signing keys for this release ({}): \
         Terraform would refuse it",
        ids.join(", ")
    ))
}

/// Downloads one package into `spool` and checks it against the verified SHA256SUMS.
pub(super) async fn package(
    client: &dyn UpstreamClient,
    up: &UpstreamProvider,
    version: &Version,
    package: &PlatformPackage,
    max_bytes: u64,
    spool: &Path,
) -> Result<(), UpstreamError> {
    client
        .download(&up.host, &package.download_url, max_bytes, spool)
        .await
        .map_err(|e| UpstreamError::unreachable(up, e))?;
    let path = spool.to_owned();
    let sha256 = tokio::task::spawn_blocking(move || {
        std::fs::File::open(&path).and_then(crate::hash::sha256_hex)
    })
    .await
    .map_err(|e| UpstreamError::Internal(e.to_string()))?
    .map_err(|e| UpstreamError::Internal(format!("cannot read the spooled package: {e}")))?;
    if sha256 != package.sha256 {
        return Err(UpstreamError::refused(
            up,
            version,
            &format!(
                "{} from the upstream does not match its signed SHA256SUMS (sha256 {sha256}, expected {})",
                package.filename, package.sha256
            ),
        ));
    }
    Ok(())
}
