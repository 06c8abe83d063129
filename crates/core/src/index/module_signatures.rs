//! Module signatures (`<archive>.sig`, docs/module-signing.md): each recorded archive is
//! judged under its namespace's keys and policy, with the rules of provider signatures
//! ([`crate::gpg::check_detached`] with each current key of the namespace). The judgement
//! ([`ModuleSignatureRecord`]) lies beside the archive, so the reads of a version's archives
//! read it too: a refused archive takes its whole version out of `/versions` and downloads.
//!
//! A bad signature (another key's, armored, corrupt, by an expired key) refuses the version
//! whatever the policy: a publisher who attached a signature meant it to be checked. No
//! signature refuses it only when the policy requires signed modules. A judgement depends on
//! the signature, the archive, the keys and the policy; it is recorded with what it used and
//! made again when any of them changed while it was made (as for release signatures).

use tokio::io::AsyncReadExt;

use super::policy::policy_state_of;
use super::releases::{keys_fingerprint_of, signer_among};
use super::{Indexer, Small};
use crate::gpg;
use crate::layout::{classify, Artifact, Classified};
use crate::names::ModuleAddress;
use crate::store::{ModuleSignatureRecord, ModuleSignatureVerdict, Record, RecordId, StoreError};
use crate::version::Version;

/// The largest archive whose signature is checked (read whole into memory to verify).
pub const MAX_SIGNED_ARCHIVE_BYTES: u64 = 256 * 1024 * 1024;

/// Words every refusal for a missing signature holds: how the archive's problem record is
/// told apart from the archive's own problems, which a judgement never clears.
const POLICY_REFUSAL: &str = "requires signed modules";

/// What a judgement was made from: the `.sig` and archive revisions, the keys and policy.
#[derive(Debug, PartialEq, Eq)]
struct Inputs {
    signature: Option<String>,
    archive: Option<String>,
    keys: Vec<(String, String)>,
    policy: Vec<(String, String)>,
}

/// The namespace's keys partition as one read saw it: its keys and policy files. A
/// judgement made from it is checked against a read made after it was recorded.
struct Snapshot(Vec<Record>);

/// One judgement: the verdict recorded (if the archive is recorded), and the problems of
/// the `.sig` file and of the archive.
pub(super) struct Judged {
    pub signature_problem: Option<String>,
    pub archive_problem: Option<String>,
    /// Whether there was an archive to judge. When there was none, nothing was judged and
    /// neither file's problem is set: the archive's own event, which may be recording it
    /// meanwhile, sets them.
    pub archive_recorded: bool,
}

impl Inputs {
    /// The namespace's part: keys, then policy files.
    fn namespace(&self) -> Vec<(String, String)> {
        self.keys.iter().chain(&self.policy).cloned().collect()
    }

    /// Whether a judgement recorded with the namespace inputs `known` still stands under
    /// these. Without a signature the keys are no matter (the policy alone decides), so a
    /// key's arrival or removal leaves the namespace's unsigned versions as they are.
    fn namespace_matches(&self, known: &[(String, String)]) -> bool {
        if self.signature.is_some() {
            return known == self.namespace().as_slice();
        }
        let policy_files = known
            .iter()
            .filter(|(key, _)| crate::store::file_name(key) == crate::policy::POLICY_FILE);
        policy_files.eq(self.policy.iter())
    }
}

/// The problems a verdict gives: a refusal is the `.sig` file's when there is one, else
/// the archive's (no signature under a policy that requires one).
fn judged_of(verdict: &ModuleSignatureVerdict, has_signature: bool) -> Judged {
    match verdict {
        ModuleSignatureVerdict::Refused(reason) if !has_signature => Judged {
            signature_problem: None,
            archive_problem: Some(reason.clone()),
            archive_recorded: true,
        },
        ModuleSignatureVerdict::Refused(reason) => Judged {
            signature_problem: Some(reason.clone()),
            archive_problem: None,
            archive_recorded: true,
        },
        _ => Judged {
            signature_problem: None,
            archive_problem: None,
            archive_recorded: true,
        },
    }
}

/// The verdict of an archive being judged.
fn pending(
    address: &ModuleAddress,
    version: &Version,
    sig_key: &str,
    archive_key: &str,
) -> ModuleSignatureRecord {
    ModuleSignatureRecord {
        address: address.clone(),
        version: version.clone(),
        key: sig_key.to_owned(),
        archive_key: archive_key.to_owned(),
        revision: None,
        archive_revision: None,
        inputs: Vec::new(),
        verdict: ModuleSignatureVerdict::Pending,
    }
}

impl Indexer {
    /// Judges the archive `archive_key` of a module version under the namespace's current
    /// keys and policy, records the verdict, pins a signature that verified, and sets the
    /// problem records of both files. Returns both problems (for the event's own key).
    pub(super) async fn judge_module_signature(
        &self,
        address: &ModuleAddress,
        version: &Version,
        archive_key: &str,
    ) -> Result<Judged, StoreError> {
        self.note_module(address).await?;
        let sig_key = format!("{archive_key}{}", crate::layout::MODULE_SIGNATURE_SUFFIX);
        for _ in 0..3 {
            let (before, snapshot) = self.inputs(address, &sig_key, archive_key).await?;
            let known = self
                .module_signature_record(address, version, &sig_key)
                .await?;
            // A new signature or archive is not served while it is judged (fail closed); a
            // change of the namespace's keys or policy leaves the verdict standing until the
            // new one replaces it.
            let mut new_files = true;
            if let Some(known) = &known {
                let same_files =
                    known.revision == before.signature && known.archive_revision == before.archive;
                new_files = !same_files && known.verdict != ModuleSignatureVerdict::Pending;
                // Judged already with these very inputs (a replayed event, or a key's change
                // that an unsigned version does not depend on): nothing more is read.
                let archive_id = RecordId::module_archive(address, version, archive_key);
                if same_files
                    && known.verdict != ModuleSignatureVerdict::Pending
                    && before.namespace_matches(&known.inputs)
                    && self.metadata.get(&archive_id).await?.is_some()
                {
                    return Ok(judged_of(&known.verdict, known.revision.is_some()));
                }
            }
            let (judged, used, signed) = self
                .judge_once(
                    address,
                    version,
                    archive_key,
                    &sig_key,
                    &snapshot,
                    new_files,
                )
                .await?;
            let (after, _) = self.inputs(address, &sig_key, archive_key).await?;
            if before == after && used == (after.signature.clone(), after.archive.clone()) {
                let mut judged = judged;
                if let Some((revision, bytes)) = signed {
                    if let Some(refused) = self
                        .pin_module_signature(address, version, &sig_key, &revision, &bytes)
                        .await?
                    {
                        self.put_module_signature(ModuleSignatureRecord {
                            address: address.clone(),
                            version: version.clone(),
                            key: sig_key.clone(),
                            archive_key: archive_key.to_owned(),
                            revision: Some(revision),
                            archive_revision: used.1.clone(),
                            inputs: after.namespace(),
                            verdict: ModuleSignatureVerdict::Refused(refused.clone()),
                        })
                        .await?;
                        judged.signature_problem = Some(refused);
                    }
                }
                if judged.archive_recorded {
                    self.set_judged_problems(&sig_key, archive_key, &judged)
                        .await?;
                }
                return Ok(judged);
            }
        }
        Err(StoreError::new(format!(
            "{sig_key}, {archive_key} or the namespace's keys or policy kept changing while being judged; the next event or reindex judges it again"
        )))
    }

    async fn inputs(
        &self,
        address: &ModuleAddress,
        sig_key: &str,
        archive_key: &str,
    ) -> Result<(Inputs, Snapshot), StoreError> {
        let records = self
            .metadata
            .query(&crate::store::partition::keys(&address.namespace))
            .await?;
        let inputs = Inputs {
            signature: self.artifacts.head(sig_key).await?.map(|m| m.revision),
            archive: self.artifacts.head(archive_key).await?.map(|m| m.revision),
            keys: keys_fingerprint_of(&records),
            policy: policy_state_of(&records).fingerprint,
        };
        Ok((inputs, Snapshot(records)))
    }

    /// One judgement, recorded (after a [`ModuleSignatureVerdict::Pending`] one when
    /// `new_files`). Returns it, the (signature, archive) revisions it used, and the
    /// signature's revision and bytes when it verified (to pin).
    async fn judge_once(
        &self,
        address: &ModuleAddress,
        version: &Version,
        archive_key: &str,
        sig_key: &str,
        snapshot: &Snapshot,
        new_files: bool,
    ) -> Result<
        (
            Judged,
            (Option<String>, Option<String>),
            Option<(String, Vec<u8>)>,
        ),
        StoreError,
    > {
        let recorded = matches!(
            self.metadata
                .get(&RecordId::module_archive(address, version, archive_key))
                .await?,
            Some(Record::ModuleArchive(_))
        );
        let signature = self.read_small(sig_key, gpg::MAX_KEY_BYTES).await?;
        let sig_revision = signature.revision();
        if !recorded {
            // No archive to judge (not yet published, or refused for itself): a signature
            // waits for it, and whatever was judged before stays as it is. Nothing is
            // deleted: the archive's own event may have recorded it and written its verdict
            // since it was looked for, and a verdict of an archive that is not recorded
            // rules nothing ([`crate::registry::module_archives`]).
            let archive = self.artifacts.head(archive_key).await?.map(|m| m.revision);
            let judged = Judged {
                signature_problem: None,
                archive_problem: None,
                archive_recorded: false,
            };
            return Ok((judged, (sig_revision, archive), None));
        }
        if new_files {
            self.put_module_signature(pending(address, version, sig_key, archive_key))
                .await?;
        }
        let policy = policy_state_of(&snapshot.0);
        let mut signed = None;
        let (verdict, archive_revision) = match signature {
            Small::Missing => {
                let archive = self.artifacts.head(archive_key).await?.map(|m| m.revision);
                let verdict = match (&policy.refused, &policy.file) {
                    _ if !policy.policy.require_signed_modules => ModuleSignatureVerdict::Unsigned,
                    (Some(reason), Some(file)) => ModuleSignatureVerdict::Refused(format!(
                        "the policy file {file} is refused ({reason}), so the namespace {POLICY_REFUSAL} until it is fixed: publish {} (a detached binary signature by a key under keys/{}/), or fix the policy file",
                        crate::store::file_name(sig_key),
                        address.namespace
                    )),
                    (_, file) => ModuleSignatureVerdict::Refused(format!(
                        "the namespace's policy {} {POLICY_REFUSAL}: publish {} beside the archive (a detached binary signature by a key under keys/{}/, as `tfreg publish module --sign KEY` makes)",
                        file.as_deref().unwrap_or("file"),
                        crate::store::file_name(sig_key),
                        address.namespace
                    )),
                };
                (verdict, archive)
            }
            Small::Unreadable(reason, _) => (
                ModuleSignatureVerdict::Refused(reason),
                self.artifacts.head(archive_key).await?.map(|m| m.revision),
            ),
            Small::Bytes(sig_bytes, sig_meta) => match self.read_archive(archive_key).await? {
                None => {
                    let judged = Judged {
                        signature_problem: None,
                        archive_problem: None,
                        archive_recorded: false,
                    };
                    return Ok((judged, (sig_revision, None), None));
                }
                Some((Err(reason), revision)) => {
                    (ModuleSignatureVerdict::Refused(reason), Some(revision))
                }
                Some((Ok(archive), revision)) => {
                    let found = signer_among(&snapshot.0, &address.namespace, &sig_bytes, &archive);
                    let verdict = match found {
                        Ok(by) => {
                            signed = Some((sig_meta.revision.clone(), sig_bytes));
                            ModuleSignatureVerdict::Signed(by)
                        }
                        Err(reason) => ModuleSignatureVerdict::Refused(format!(
                            "{}; version {version} of module {address} is not served while its signature does not verify",
                            reason.replace("sign SHA256SUMS with", "sign the archive with")
                        )),
                    };
                    (verdict, Some(revision))
                }
            },
        };
        let judged = judged_of(&verdict, sig_revision.is_some());
        let inputs = Inputs {
            signature: None,
            archive: None,
            keys: keys_fingerprint_of(&snapshot.0),
            policy: policy.fingerprint.clone(),
        }
        .namespace();
        self.put_module_signature(ModuleSignatureRecord {
            address: address.clone(),
            version: version.clone(),
            key: sig_key.to_owned(),
            archive_key: archive_key.to_owned(),
            revision: sig_revision.clone(),
            archive_revision: archive_revision.clone(),
            inputs,
            verdict,
        })
        .await?;
        Ok((judged, (sig_revision, archive_revision), signed))
    }

    /// Marks a module archive as being judged, before its record is written: a read never
    /// serves an archive whose signature nobody has judged yet.
    pub(super) async fn mark_module_pending(
        &self,
        address: &ModuleAddress,
        version: &Version,
        archive_key: &str,
    ) -> Result<(), StoreError> {
        let sig_key = format!("{archive_key}{}", crate::layout::MODULE_SIGNATURE_SUFFIX);
        self.put_module_signature(pending(address, version, &sig_key, archive_key))
            .await
    }

    /// The judgement recorded for `sig_key`, wherever its verdict keeps it.
    async fn module_signature_record(
        &self,
        address: &ModuleAddress,
        version: &Version,
        sig_key: &str,
    ) -> Result<Option<ModuleSignatureRecord>, StoreError> {
        for id in [
            RecordId::module_signature(address, version, sig_key),
            RecordId::module_signature_unsigned(address, version, sig_key),
        ] {
            if let Some(Record::ModuleSignature(known)) = self.metadata.get(&id).await? {
                return Ok(Some(known));
            }
        }
        Ok(None)
    }

    /// Records a judgement where its verdict belongs, and removes the one it replaces from
    /// the other place.
    async fn put_module_signature(&self, record: ModuleSignatureRecord) -> Result<(), StoreError> {
        let (address, version, key) = (&record.address, &record.version, &record.key);
        let other = match record.verdict {
            ModuleSignatureVerdict::Unsigned => RecordId::module_signature(address, version, key),
            _ => RecordId::module_signature_unsigned(address, version, key),
        };
        self.metadata.delete(&other).await?;
        self.metadata.put(Record::ModuleSignature(record)).await
    }

    /// The archive's bytes (bounded) and revision; `None` when it is gone.
    async fn read_archive(
        &self,
        key: &str,
    ) -> Result<Option<(Result<Vec<u8>, String>, String)>, StoreError> {
        let Some(body) = self.artifacts.open(key).await? else {
            return Ok(None);
        };
        let revision = body.meta.revision.clone();
        if body.meta.size > MAX_SIGNED_ARCHIVE_BYTES {
            return Ok(Some((
                Err(format!(
                    "the archive is {} bytes, more than the {MAX_SIGNED_ARCHIVE_BYTES} whose signature is checked",
                    body.meta.size
                )),
                revision,
            )));
        }
        let mut bytes = Vec::with_capacity(body.meta.size as usize);
        body.reader
            .take(MAX_SIGNED_ARCHIVE_BYTES + 1)
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| StoreError::with_source(format!("cannot read {key}"), e))?;
        Ok(Some((Ok(bytes), revision)))
    }

    /// Pins a signature that verified, as a release's signature is pinned once served.
    /// Returns the refusal when another signature of the version was pinned first.
    async fn pin_module_signature(
        &self,
        address: &ModuleAddress,
        version: &Version,
        sig_key: &str,
        revision: &str,
        bytes: &[u8],
    ) -> Result<Option<String>, StoreError> {
        use sha2::Digest;
        let Classified::Artifact(artifact @ Artifact::ModuleSignature { .. }) = classify(sig_key)
        else {
            return Ok(None);
        };
        let sha256 = hex::encode(sha2::Sha256::digest(bytes));
        // Never deleted by a lost race: the refusal is recorded as the verdict instead.
        let placeholder = RecordId::module_signature(address, version, &format!("{sig_key}#pin"));
        self.pin(
            &artifact,
            sig_key,
            revision,
            &sha256,
            bytes.len() as u64,
            &placeholder,
        )
        .await
    }

    /// Sets the `.sig` file's problem (when it exists) and the archive's policy refusal
    /// (never clearing a problem of the archive's own).
    async fn set_judged_problems(
        &self,
        sig_key: &str,
        archive_key: &str,
        judged: &Judged,
    ) -> Result<(), StoreError> {
        let sig_exists = self.artifacts.head(sig_key).await?.is_some();
        self.set_problem(
            sig_key,
            judged.signature_problem.clone().filter(|_| sig_exists),
        )
        .await?;
        let own = match self.metadata.get(&RecordId::problem(archive_key)).await? {
            Some(Record::Problem(p)) => !p.problem.contains(POLICY_REFUSAL),
            _ => false,
        };
        if !own {
            self.set_problem(archive_key, judged.archive_problem.clone())
                .await?;
        }
        Ok(())
    }
}
