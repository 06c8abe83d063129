//! The small files of a provider release: SHA256SUMS, its signature, and the manifest.
//! A signature verdict depends on three things (the signature, the SHA256SUMS it signs, and
//! the namespace's keys); it is recorded with the revisions it holds for.

use std::collections::BTreeMap;
use std::time::SystemTime;

use super::{Indexer, Small};
use crate::gpg;
use crate::names::{Namespace, ProviderAddress};
use crate::release;
use crate::store::{
    partition, KeyRecord, ManifestRecord, Record, RecordId, SignatureRecord, SignedBy, StoreError,
    SumsRecord,
};
use crate::version::Version;

/// The revisions of a release's signature and SHA256SUMS that a verdict was computed from.
#[derive(Debug, PartialEq, Eq)]
struct Revisions {
    signature: Option<String>,
    sums: Option<String>,
}

/// One verification: the signature file's problem (if any), what it was computed from, and
/// whether the release is now signed.
struct Verification {
    problem: Option<String>,
    used: Revisions,
    signed: bool,
}

impl Indexer {
    /// Records a release's SHA256SUMS and verifies its signature again. Returns the
    /// SHA256SUMS's problem; the signature's own problem is recorded under its key.
    pub(super) async fn index_sums(
        &self,
        key: &str,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::sums(provider, version, key);
        let (record, problem) = match self
            .read_small(key, release::MAX_RELEASE_FILE_BYTES)
            .await?
        {
            Small::Missing => (None, None),
            Small::Unreadable(reason, _) => (None, Some(reason)),
            Small::Bytes(bytes, meta) => match release::parse_sums(&bytes).and_then(|entries| {
                // parse_sums read it as text: the same text, as Terraform reads it.
                let text = String::from_utf8_lossy(&bytes);
                match sums_problem(&text, release_stem(key)) {
                    Some(problem) => Err(problem),
                    None => Ok(entries),
                }
            }) {
                Ok(entries) => (
                    Some(Record::Sums(SumsRecord {
                        provider: provider.clone(),
                        version: version.clone(),
                        key: key.to_owned(),
                        revision: meta.revision,
                        entries,
                    })),
                    None,
                ),
                Err(reason) => (None, Some(reason)),
            },
        };
        self.put_or_delete(id, record).await?;
        let sig_key = format!("{key}.sig");
        let sig_problem = self
            .verify_signature(&sig_key, key, provider, version)
            .await?;
        let sig_exists = self.artifacts.head(&sig_key).await?.is_some();
        self.set_problem(&sig_key, sig_problem.filter(|_| sig_exists))
            .await?;
        Ok(problem)
    }

    pub(super) async fn index_manifest(
        &self,
        key: &str,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::manifest(provider, version, key);
        let protocols = match self
            .read_small(key, release::MAX_RELEASE_FILE_BYTES)
            .await?
        {
            Small::Missing => return self.metadata.delete(&id).await.map(|_| None),
            Small::Unreadable(reason, _) => Err(reason),
            Small::Bytes(bytes, _) => release::parse_manifest(&bytes),
        };
        let problem = protocols.as_ref().err().cloned();
        self.metadata
            .put(Record::Manifest(ManifestRecord {
                provider: provider.clone(),
                version: version.clone(),
                key: key.to_owned(),
                protocols,
            }))
            .await?;
        Ok(problem)
    }

    /// Verifies a release's SHA256SUMS signature against the namespace's current keys and
    /// records the verdict for the current revisions of both files. Returns the signature
    /// file's problem. A release that verifies gets its packages unpacked.
    pub(super) async fn verify_signature(
        &self,
        sig_key: &str,
        sums_key: &str,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Option<String>, StoreError> {
        // Concurrent invocations (one per file event) may each verify and write; the last
        // write may come from the one that read older files or keys. So after writing, the
        // verdict's inputs are compared with the current ones (the two files' revisions and
        // the namespace's key records), and a stale verdict is computed again: whoever
        // writes last leaves a verdict for the current files and keys.
        for _ in 0..3 {
            let keys_before = self.keys_fingerprint(&provider.namespace).await?;
            let verification = self
                .verify_signature_once(sig_key, sums_key, provider, version)
                .await?;
            let current = Revisions {
                signature: self.artifacts.head(sig_key).await?.map(|m| m.revision),
                sums: self.artifacts.head(sums_key).await?.map(|m| m.revision),
            };
            let keys_after = self.keys_fingerprint(&provider.namespace).await?;
            if verification.used == current && keys_before == keys_after {
                if verification.signed {
                    self.signature_verified(provider, version).await?;
                }
                return Ok(verification.problem);
            }
        }
        Err(StoreError::new(format!(
            "{sig_key} or {sums_key} kept changing while being verified; the next event or reindex verifies it again"
        )))
    }

    /// A release's SHA256SUMS and its signature were verified, as they are now, with the
    /// namespace's keys as they are now: its files are served from here on (each package
    /// once it is unpacked, see `record_unpacked`). The one place where that happens.
    async fn signature_verified(
        &self,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<(), StoreError> {
        self.unpack_signed_packages(provider, version).await
    }

    /// One verification, recorded.
    async fn verify_signature_once(
        &self,
        sig_key: &str,
        sums_key: &str,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Verification, StoreError> {
        let id = RecordId::signature(provider, version, sig_key);
        let signature = self.read_small(sig_key, gpg::MAX_KEY_BYTES).await?;
        let (signature_bytes, sig_meta) = match signature {
            Small::Bytes(bytes, meta) => (bytes, meta),
            other => {
                // No signature to record a verdict for: forget the old one.
                self.metadata.delete(&id).await?;
                let problem = match &other {
                    Small::Unreadable(reason, _) => Some(reason.clone()),
                    _ => None,
                };
                let sums = self.artifacts.head(sums_key).await?.map(|m| m.revision);
                return Ok(Verification {
                    problem,
                    used: Revisions {
                        signature: other.revision(),
                        sums,
                    },
                    signed: false,
                });
            }
        };
        let sums = self
            .read_small(sums_key, release::MAX_RELEASE_FILE_BYTES)
            .await?;
        let sums_revision = sums.revision();
        let verdict = match &sums {
            Small::Missing => Err(format!("{sums_key} has not been published")),
            // A SHA256SUMS that cannot be read is a verdict on this release, never an error
            // that stops the re-verification of others.
            Small::Unreadable(reason, _) => Err(format!("cannot check the signature: {reason}")),
            Small::Bytes(bytes, _) => {
                self.find_signer(&provider.namespace, &signature_bytes, bytes)
                    .await?
            }
        };
        // A missing SHA256SUMS is only waited for, not a problem of the signature file.
        let problem = match (&sums, &verdict) {
            (Small::Missing, _) | (_, Ok(_)) => None,
            (_, Err(reason)) => Some(reason.clone()),
        };
        let signed = verdict.is_ok();
        let used = Revisions {
            signature: Some(sig_meta.revision.clone()),
            sums: sums_revision.clone(),
        };
        self.metadata
            .put(Record::Signature(SignatureRecord {
                provider: provider.clone(),
                version: version.clone(),
                key: sig_key.to_owned(),
                revision: sig_meta.revision,
                sums_key: sums_key.to_owned(),
                sums_revision,
                verdict,
            }))
            .await?;
        Ok(Verification {
            problem,
            used,
            signed,
        })
    }

    /// The namespace's key records, by object and revision: what a verdict depended on.
    pub(super) async fn keys_fingerprint(
        &self,
        namespace: &Namespace,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let records = self.metadata.query(&partition::keys(namespace)).await?;
        Ok(keys_fingerprint_of(&records))
    }

    /// The key of the namespace that signed a release, checked as Terraform checks it with
    /// that key (see [`gpg::check_detached`]); or why none did.
    pub(super) async fn find_signer(
        &self,
        namespace: &Namespace,
        signature: &[u8],
        sums: &[u8],
    ) -> Result<Result<SignedBy, String>, StoreError> {
        let records = self.metadata.query(&partition::keys(namespace)).await?;
        Ok(signer_among(&records, namespace, signature, sums))
    }
}

/// The key records of a namespace's keys partition (`records`), by object and revision.
pub(super) fn keys_fingerprint_of(records: &[Record]) -> Vec<(String, String)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Key(k) => Some((k.key.clone(), k.revision.clone())),
            _ => None,
        })
        .collect()
}

/// [`Indexer::find_signer`] over the namespace's keys partition as read (`records`).
pub(super) fn signer_among(
    records: &[Record],
    namespace: &Namespace,
    signature: &[u8],
    sums: &[u8],
) -> Result<SignedBy, String> {
    // A file Terraform cannot read is refused as such, whatever the keys.
    if let Some(problem) = gpg::signature_file_problem(signature) {
        return Err(problem);
    }
    let now = SystemTime::now();
    let mut usable = 0;
    let mut refused = None;
    for record in records {
        let Record::Key(KeyRecord {
            key,
            revision,
            verdict: Ok(info),
            ..
        }) = record
        else {
            continue;
        };
        usable += 1;
        // The registry hands Terraform only the key that verified, so a signature the
        // file holds by another key (which Terraform would then never read) is no matter.
        match gpg::check_detached(&info.ascii_armor, signature, sums, now) {
            Ok(verified) => {
                return Ok(SignedBy {
                    key_id: info.key_id.clone(),
                    key: key.clone(),
                    key_revision: revision.clone(),
                    key_info: info.clone(),
                    signature_expires_at: verified.expires_at,
                })
            }
            Err(gpg::NotVerified::NotByThisKey) => {}
            Err(gpg::NotVerified::Refused(reason)) => {
                refused.get_or_insert(format!("{reason} ({key})"));
            }
        }
    }
    Err(match refused {
        Some(reason) => reason,
        None if usable == 0 => {
            format!("no usable signing key is published under keys/{namespace}/")
        }
        None => format!(
            "the signature does not verify with any of the {usable} usable key(s) under keys/{namespace}/"
        ),
    })
}

/// `terraform-provider-<type>_<version>`: the name every file of a release starts with, as
/// the key of its SHA256SUMS spells it.
fn release_stem(sums_key: &str) -> &str {
    let name = crate::store::file_name(sums_key);
    name.get(..name.len().saturating_sub("_SHA256SUMS".len()))
        .unwrap_or(name)
}

/// Whether `name` is a package of the release `stem`: `<stem>_<os>_<arch>.zip`.
fn is_package_of(name: &str, stem: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let Some(rest) = lower
        .strip_prefix(&format!("{}_", stem.to_ascii_lowercase()))
        .and_then(|rest| rest.strip_suffix(".zip"))
    else {
        return false;
    };
    matches!(rest.split_once('_'), Some((os, arch)) if !os.is_empty() && !arch.is_empty() && !arch.contains('_'))
}

/// What makes a SHA256SUMS that [`release::parse_sums`] reads unfit for the release `stem`,
/// judged as Terraform 1.11 reads the file: line by line, each split into fields, the first
/// line whose second field is the package's file name giving its hash (every line's hash
/// also goes into lock files as a `zh:` of this release). Refused:
///
/// - an empty line (only the newline ending the last line may end the file): Terraform
///   crashes on it ("index out of range");
/// - a package of this release marked binary (`<sha256> *<file>`): Terraform looks the name
///   up as written, without the `*`, and finds no line for it;
/// - a package of another release (`terraform-provider-*.zip` of another type or version):
///   the wrong SHA256SUMS was published, and lock files would trust that package's hash
///   for this release;
/// - one file listed twice with different hashes: Terraform takes the first, lock files
///   trust both;
/// - no package of this release at all: nothing could be installed.
///
/// Other lines (goreleaser lists `_manifest.json`; any other file) are no matter, as for
/// Terraform.
fn sums_problem(text: &str, stem: &str) -> Option<String> {
    let mut first_line: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    let mut packages = 0;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (hash, name) = match fields[..] {
            [] => {
                return Some(format!(
                    "SHA256SUMS line {number} is empty, and Terraform 1.11 crashes reading a SHA256SUMS with an empty line (\"index out of range\"): remove it (only the newline that ends the last line may end the file)"
                ))
            }
            [hash, name, ..] => (hash, name),
            [_] => continue, // refused by parse_sums already
        };
        let unmarked = name.strip_prefix('*').unwrap_or(name);
        if is_package_of(unmarked, stem) {
            if unmarked != name {
                return Some(format!(
                    "SHA256SUMS line {number} marks {unmarked} as binary (\"*{unmarked}\"): Terraform looks the name up as written and fails with \"checksum list has no SHA-256 hash for {unmarked}\"; write the line as `<sha256>  {unmarked}` (two spaces, as goreleaser, `sha256sum` and `shasum -a 256` write it)"
                ));
            }
            packages += 1;
        } else if unmarked
            .to_ascii_lowercase()
            .starts_with("terraform-provider-")
            && unmarked.to_ascii_lowercase().ends_with(".zip")
        {
            return Some(format!(
                "SHA256SUMS line {number} lists {unmarked}, which is not a package of {stem} (its packages are {stem}_<os>_<arch>.zip): this is another release's SHA256SUMS, or it lists another release's files, whose hashes lock files would then trust for {stem}; publish the SHA256SUMS made for this release"
            ));
        }
        match first_line.get(name) {
            Some((first, first_hash)) if !first_hash.eq_ignore_ascii_case(hash) => {
                return Some(format!(
                    "SHA256SUMS lines {first} and {number} give {name} different hashes: Terraform takes the first and lock files trust both; list each file once"
                ));
            }
            Some(_) => {}
            None => {
                first_line.insert(name, (number, hash));
            }
        }
    }
    (packages == 0).then(|| {
        format!(
            "SHA256SUMS lists no package of {stem} ({stem}_<os>_<arch>.zip), so nothing of this release can be installed: is it another release's SHA256SUMS?"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEM: &str = "terraform-provider-widget_1.0.0";

    fn line(name: &str) -> String {
        format!("{}  {name}\n", "a".repeat(64))
    }

    #[test]
    fn the_stem_comes_from_the_sums_key() {
        assert_eq!(
            release_stem("providers/acme/widget/1.0.0/terraform-provider-widget_1.0.0_SHA256SUMS"),
            STEM
        );
    }

    #[test]
    fn sums_as_goreleaser_writes_them_pass() {
        let text = [
            line("terraform-provider-widget_1.0.0_darwin_arm64.zip"),
            line("terraform-provider-widget_1.0.0_linux_amd64.zip"),
            line("terraform-provider-widget_1.0.0_manifest.json"),
            line("README.md"),
        ]
        .concat();
        assert_eq!(sums_problem(&text, STEM), None);
        assert_eq!(sums_problem(&text.replace('\n', "\r\n"), STEM), None);
        // A name spelled with other cases is still this release's.
        let upper = line("terraform-provider-Widget_1.0.0_linux_amd64.zip");
        assert_eq!(sums_problem(&upper, STEM), None);
    }

    #[test]
    fn what_terraform_reads_otherwise_is_refused_naming_the_line() {
        let own = line("terraform-provider-widget_1.0.0_linux_amd64.zip");
        let cases = [
            (format!("{own}\n"), "line 2 is empty"),
            (format!("{own}   \n"), "line 2 is empty"),
            (own.replace("  t", " *t"), "line 1 marks"),
            (
                format!(
                    "{own}{}",
                    line("terraform-provider-gadget_1.0.0_linux_amd64.zip")
                ),
                "line 2 lists terraform-provider-gadget_1.0.0_linux_amd64.zip",
            ),
            (
                format!(
                    "{}{own}",
                    line("terraform-provider-widget_0.9.0_linux_amd64.zip")
                ),
                "line 1 lists terraform-provider-widget_0.9.0_linux_amd64.zip",
            ),
            (
                format!(
                    "{own}{}  terraform-provider-widget_1.0.0_linux_amd64.zip\n",
                    "b".repeat(64)
                ),
                "lines 1 and 2 give",
            ),
            (line("README.md"), "lists no package"),
        ];
        for (text, expected) in cases {
            let problem = sums_problem(&text, STEM).unwrap_or_default();
            assert!(problem.contains(expected), "{text:?}: {problem}");
        }
        // The same line twice is harmless.
        assert_eq!(sums_problem(&format!("{own}{own}"), STEM), None);
    }
}
