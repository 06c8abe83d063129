//! Which provider versions and platforms are served, decided from the indexed records: by
//! the indexer, whenever they change, into the documents requests read
//! ([`crate::documents`]), and by `tfreg status` when it reports. A version is served only
//! when its SHA256SUMS is signed by a currently valid key of its namespace; a platform only
//! when its zip matches its SHA256SUMS line. The same judgement explains to publishers why
//! something is not served. A verdict also counts only while the key that made it is still
//! published, so a key's removal unpublishes what it signed as soon as its event is indexed,
//! whatever is still to be verified again.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use crate::gpg::PublicKeyInfo;
use crate::names::Platform;
use crate::release::default_protocols;
use crate::store::{ManifestRecord, PackageRecord, Record, SignatureRecord, SumsRecord};
use crate::version::Version;

/// A provider version as served.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServedRelease {
    /// The version served.
    pub version: Version,
    /// The plugin protocol versions it speaks, from its manifest or the default when it has none.
    pub protocols: Vec<String>,
    /// The SHA256SUMS file that lists its packages.
    pub sums: SumsRecord,
    /// The object key of the `.sig` file that verified.
    pub signature_key: String,
    /// The revision of the `.sig` object that verified.
    pub signature_revision: String,
    /// The trusted public key the signature verified with.
    pub signer: PublicKeyInfo,
    /// Platforms whose zip matches SHA256SUMS (stored as a list: each names its platform).
    #[serde(with = "packages_as_list")]
    pub packages: BTreeMap<Platform, PackageRecord>,
}

/// A release's packages by platform, kept as the list of packages (JSON keys are strings).
mod packages_as_list {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serializer};

    use crate::names::Platform;
    use crate::store::PackageRecord;

    pub fn serialize<S: Serializer>(
        packages: &BTreeMap<Platform, PackageRecord>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(packages.values())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<BTreeMap<Platform, PackageRecord>, D::Error> {
        let list = Vec::<PackageRecord>::deserialize(deserializer)?;
        Ok(list.into_iter().map(|p| (p.platform.clone(), p)).collect())
    }
}

/// The judgement on one version, for publishers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseReport {
    /// The version judged.
    pub version: Version,
    /// Key ID of the key that signed it, when it verified.
    pub signed_by: Option<String>,
    /// Why the version is not served at all (empty when it is).
    pub problems: Vec<String>,
    /// Each platform's zip: `Ok` when it matches SHA256SUMS, else why not.
    pub platforms: BTreeMap<Platform, Result<(), String>>,
}

impl ReleaseReport {
    /// True when the version is served: no problem, and at least one platform verified.
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

/// The signing keys a namespace has now (`keys/<namespace>/...` objects and their indexed
/// revisions, valid ones only): a verdict made with any other key no longer counts, even
/// before the release is verified again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CurrentKeys(BTreeSet<(String, String)>);

impl CurrentKeys {
    /// From the records of a namespace's keys partition.
    pub fn from_records(records: &[Record]) -> Self {
        Self(
            records
                .iter()
                .filter_map(|r| match r {
                    Record::Key(k) if k.verdict.is_ok() => {
                        Some((k.key.clone(), k.revision.clone()))
                    }
                    _ => None,
                })
                .collect(),
        )
    }

    fn contains(&self, key: &str, revision: &str) -> bool {
        self.0.contains(&(key.to_owned(), revision.to_owned()))
    }
}

/// File name to SHA-256 of every package that a verified signature of `version` vouches
/// for (the union over the release's spellings): what may be unpacked.
pub fn signed_entries(provider_records: &[Record], version: &Version) -> BTreeMap<String, String> {
    let mut entries = BTreeMap::new();
    for record in provider_records {
        let Record::Sums(sums) = record else { continue };
        if &sums.version != version {
            continue;
        }
        let signed = provider_records.iter().any(|r| {
            matches!(r, Record::Signature(sig)
                if sig.sums_key == sums.key
                    && sig.sums_revision.as_deref() == Some(sums.revision.as_str())
                    && sig.verdict.is_ok())
        });
        if signed {
            entries.extend(sums.entries.clone());
        }
    }
    entries
}

/// Judges every version in a provider's partition, against the namespace's current keys.
pub fn evaluate(
    provider_records: &[Record],
    keys: &CurrentKeys,
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
        .map(|(version, files)| judge(version, files, keys, now))
        .collect()
}

/// The verdict on one spelling of a release's SHA256SUMS: who signed it, or why it is not
/// (yet) signed.
fn signature_verdict<'a>(
    sums: &SumsRecord,
    signatures: &[&'a SignatureRecord],
    keys: &CurrentKeys,
    now: SystemTime,
) -> (Option<&'a SignatureRecord>, Result<PublicKeyInfo, String>) {
    let Some(sig) = signatures
        .iter()
        .find(|sig| sig.sums_key == sums.key)
        .copied()
    else {
        return (
            None,
            Err(format!("{}.sig has not been published", file(&sums.key))),
        );
    };
    let verdict = if sig.sums_revision.as_deref() != Some(sums.revision.as_str()) {
        Err(format!(
            "the signature of {} has not been checked against its current content yet",
            file(&sums.key)
        ))
    } else {
        match &sig.verdict {
            Err(reason) => Err(format!("signature refused: {reason}")),
            Ok(by) if by.signature_expires_at.is_some_and(|at| unix(now) > at) => Err(
                crate::gpg::signature_expired(&by.key_id, by.signature_expires_at.unwrap_or(0)),
            ),
            Ok(by) if !keys.contains(&by.key, &by.key_revision) => Err(format!(
                "the key that signed it ({}, {}) has been removed or replaced; the release is verified again against the keys there are now",
                by.key_id, by.key
            )),
            Ok(by) => Ok(by.key_info.clone()),
        }
    };
    (Some(sig), verdict)
}

/// The folder of a key (everything before its last `/`).
fn folder(key: &str) -> &str {
    key.rsplit_once('/').map_or("", |(folder, _)| folder)
}

fn judge(
    version: &Version,
    mut files: Files<'_>,
    keys: &CurrentKeys,
    now: SystemTime,
) -> (ReleaseReport, Option<ServedRelease>) {
    // Several spellings of one file (case variants of a folder) are possible: a spelling
    // that verifies wins over one that does not, so a stray unsigned copy never hides a
    // signed release; otherwise the choice is deterministic, by key.
    files.sums.sort_by(|a, b| a.key.cmp(&b.key));
    files.manifests.sort_by(|a, b| a.key.cmp(&b.key));
    files.packages.sort_by(|a, b| a.key.cmp(&b.key));
    let judged: Vec<_> = files
        .sums
        .iter()
        .map(|s| (*s, signature_verdict(s, &files.signatures, keys, now)))
        .collect();
    let chosen = judged
        .iter()
        .find(|(_, (_, verdict))| verdict.is_ok())
        .or(judged.first());
    let mut problems = Vec::new();
    let (sums, signature, signer) = match chosen {
        None => {
            problems.push(
                "its SHA256SUMS has not been published, or was refused (see Problems)".to_owned(),
            );
            (None, None, None)
        }
        Some((sums, (signature, verdict))) => {
            if let Err(reason) = verdict {
                problems.push(reason.clone());
            }
            (Some(*sums), *signature, verdict.clone().ok())
        }
    };
    // The manifest beside the chosen SHA256SUMS, else the first one.
    let manifest = files
        .manifests
        .iter()
        .find(|m| sums.is_some_and(|s| folder(&m.key) == folder(&s.key)))
        .or(files.manifests.first());
    let protocols = match manifest.map(|m| &m.protocols) {
        None => default_protocols(),
        Some(Ok(protocols)) => protocols.clone(),
        Some(Err(reason)) => {
            problems.push(format!("its manifest is invalid: {reason}"));
            vec![]
        }
    };
    let signed = signer.is_some();
    let mut platforms: BTreeMap<Platform, Result<(), String>> = BTreeMap::new();
    let mut packages = BTreeMap::new();
    for package in files.packages {
        if platforms.get(&package.platform).is_some_and(Result::is_ok) {
            continue; // a matching spelling of this platform was found already
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
            Some(Some(_)) if package.hashes.h1.is_none() && !signed => Err(format!(
                "{} matches SHA256SUMS; it is unpacked and checked once the signature verifies",
                package.filename()
            )),
            Some(Some(_)) if package.hashes.h1.is_none() => Err(format!(
                "{} is being unpacked and checked",
                package.filename()
            )),
            Some(Some(_)) => {
                packages.insert(package.platform.clone(), package.clone());
                Ok(())
            }
        };
        let first_seen = !platforms.contains_key(&package.platform);
        if first_seen || verdict.is_ok() {
            platforms.insert(package.platform.clone(), verdict);
        }
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

/// The first Unix second after `now` at which a judgement of `records` may change by time
/// alone: a signature's expiry.
pub fn next_change(records: &[Record], now: SystemTime) -> Option<u64> {
    let now = unix(now);
    records
        .iter()
        .filter_map(|r| match r {
            Record::Signature(s) => s.verdict.as_ref().ok(),
            _ => None,
        })
        // A signature is expired only after its expiry. A key's expiry changes nothing: a
        // signature made while the key was valid stays valid (crate::gpg).
        .filter_map(|by| by.signature_expires_at.map(|t| t.saturating_add(1)))
        .filter(|&t| t > now)
        .min()
}

fn file(key: &str) -> &str {
    crate::store::file_name(key)
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::ProviderAddress;
    use crate::store::SignedBy;
    use std::time::{Duration, UNIX_EPOCH};

    fn signature(key_expiry: Option<u64>, signature_expiry: Option<u64>) -> Record {
        let provider = ProviderAddress::parse("acme", "widget").unwrap();
        let key_info = PublicKeyInfo {
            key_id: "ABCD".into(),
            ascii_armor: String::new(),
            expires_at: key_expiry,
        };
        Record::Signature(SignatureRecord {
            provider,
            version: Version::parse("1.0.0").unwrap(),
            key: "k.sig".into(),
            revision: "1".into(),
            sums_key: "k".into(),
            sums_revision: Some("1".into()),
            verdict: Ok(SignedBy {
                key_id: "ABCD".into(),
                key: "keys/acme/k.asc".into(),
                key_revision: "1".into(),
                key_info,
                signature_expires_at: signature_expiry,
            }),
        })
    }

    #[test]
    fn the_next_change_is_the_first_signature_expiry_still_ahead() {
        let now = UNIX_EPOCH + Duration::from_secs(1000);
        assert_eq!(next_change(&[signature(None, None)], now), None);
        assert_eq!(next_change(&[signature(Some(500), None)], now), None);
        assert_eq!(
            next_change(&[signature(Some(5000), Some(2000))], now),
            Some(2001)
        );
        // A key's expiry changes no verdict: what it signed while valid stays served.
        assert_eq!(
            next_change(
                &[signature(Some(1500), None), signature(None, Some(3000))],
                now
            ),
            Some(3001)
        );
    }
}
