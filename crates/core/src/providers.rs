//! Which provider versions and platforms are served, decided from the indexed records each
//! time they are read. A version is served only when its SHA256SUMS is signed by a currently
//! valid key of its namespace; a platform only when its zip matches its SHA256SUMS line.
//! The same judgement explains to publishers (`tfreg status`) why something is not served.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use crate::gpg::PublicKeyInfo;
use crate::names::Platform;
use crate::release::default_protocols;
use crate::store::{ManifestRecord, PackageRecord, Record, SignatureRecord, SumsRecord};
use crate::version::Version;

/// A provider version as served.
#[derive(Debug, Clone)]
pub struct ServedRelease {
    pub version: Version,
    pub protocols: Vec<String>,
    pub sums: SumsRecord,
    /// The `.sig` object and the revision that verified.
    pub signature_key: String,
    pub signature_revision: String,
    pub signer: PublicKeyInfo,
    /// Platforms whose zip matches SHA256SUMS.
    pub packages: BTreeMap<Platform, PackageRecord>,
}

/// The judgement on one version, for publishers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseReport {
    pub version: Version,
    /// Key ID of the key that signed it, when it verified.
    pub signed_by: Option<String>,
    /// Why the version is not served at all (empty when it is).
    pub problems: Vec<String>,
    /// Each platform's zip: `Ok` when it matches SHA256SUMS, else why not.
    pub platforms: BTreeMap<Platform, Result<(), String>>,
}

impl ReleaseReport {
    pub fn is_served(&self) -> bool {
        self.problems.is_empty() && self.platforms.values().any(Result::is_ok)
    }
}

#[derive(Default)]
struct Files<'a> {
    sums: Vec<&'a SumsRecord>,
    signatures: Vec<&'a SignatureRecord>,
    manifests: Vec<&'a ManifestRecord>,
    packages: Vec<&'a PackageRecord>,
}

/// Judges every version in a provider's partition.
pub fn evaluate(
    provider_records: &[Record],
    now: SystemTime,
) -> Vec<(ReleaseReport, Option<ServedRelease>)> {
    let mut by_version: BTreeMap<&Version, Files<'_>> = BTreeMap::new();
    for record in provider_records {
        match record {
            Record::Sums(r) => by_version.entry(&r.version).or_default().sums.push(r),
            Record::Signature(r) => by_version.entry(&r.version).or_default().signatures.push(r),
            Record::Manifest(r) => by_version.entry(&r.version).or_default().manifests.push(r),
            Record::Package(r) if r.mirror_hostname.is_none() => {
                by_version.entry(&r.version).or_default().packages.push(r)
            }
            _ => {}
        }
    }
    by_version
        .into_iter()
        .map(|(version, files)| judge(version, files, now))
        .collect()
}

fn judge(
    version: &Version,
    mut files: Files<'_>,
    now: SystemTime,
) -> (ReleaseReport, Option<ServedRelease>) {
    // Several spellings of one file (case variants) are possible; the choice is deterministic.
    files.sums.sort_by(|a, b| a.key.cmp(&b.key));
    files.manifests.sort_by(|a, b| a.key.cmp(&b.key));
    files.packages.sort_by(|a, b| a.key.cmp(&b.key));
    let mut problems = Vec::new();
    let sums = files.sums.first().copied();
    let signature = sums.and_then(|s| files.signatures.iter().find(|sig| sig.sums_key == s.key));
    let mut signer = None;
    match (sums, signature) {
        (None, _) => problems.push("its SHA256SUMS has not been published".to_owned()),
        (Some(s), None) => problems.push(format!("{}.sig has not been published", file(&s.key))),
        (Some(s), Some(sig)) if sig.sums_revision.as_deref() != Some(s.revision.as_str()) => {
            problems.push(format!(
                "the signature of {} has not been checked against its current content yet",
                file(&s.key)
            ))
        }
        (Some(_), Some(sig)) => match &sig.verdict {
            Err(reason) => problems.push(format!("signature refused: {reason}")),
            Ok(by) if by.key_info.is_expired(now) => problems.push(format!(
                "the key that signed it ({}, {}) has expired",
                by.key_id, by.key
            )),
            Ok(by) => signer = Some(by.key_info.clone()),
        },
    }
    let protocols = match files.manifests.first().map(|m| &m.protocols) {
        None => default_protocols(),
        Some(Ok(protocols)) => protocols.clone(),
        Some(Err(reason)) => {
            problems.push(format!("its manifest is invalid: {reason}"));
            vec![]
        }
    };
    let mut platforms = BTreeMap::new();
    let mut packages = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for package in files.packages {
        if !seen.insert(&package.platform) {
            continue;
        }
        let verdict = match sums.map(|s| s.entries.get(package.filename())) {
            None => Err("waiting for SHA256SUMS".to_owned()),
            Some(None) => Err(format!(
                "{} is not listed in SHA256SUMS",
                package.filename()
            )),
            Some(Some(expected)) if *expected != package.hashes.sha256 => Err(format!(
                "{} does not match SHA256SUMS (expected {expected}, the file has {})",
                package.filename(),
                package.hashes.sha256
            )),
            Some(Some(_)) => {
                packages.insert(package.platform.clone(), package.clone());
                Ok(())
            }
        };
        platforms.insert(package.platform.clone(), verdict);
    }
    let report = ReleaseReport {
        version: version.clone(),
        signed_by: signer.as_ref().map(|s| s.key_id.clone()),
        problems,
        platforms,
    };
    let served = match (report.is_served(), sums, signature, signer) {
        (true, Some(sums), Some(sig), Some(signer)) => Some(ServedRelease {
            version: version.clone(),
            protocols,
            sums: sums.clone(),
            signature_key: sig.key.clone(),
            signature_revision: sig.revision.clone(),
            signer,
            packages,
        }),
        _ => None,
    };
    (report, served)
}

fn file(key: &str) -> &str {
    crate::store::file_name(key)
}
