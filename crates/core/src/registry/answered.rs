//! The hot answers as kept bytes ([`super::answers`]): each protocol answer is made by one
//! function from its document, which both the typed read methods (for `tfreg show`, the
//! reports and the tests) and the byte answers (for the routes) call, so the two never
//! differ.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use serde::de::DeserializeOwned;

use super::answers::{Answer, Basis};
use super::{
    mirror_not_found, mirror_version_not_found, module_not_found, provider_not_found,
    provider_version_not_found, Registry, RegistryError,
};
use crate::documents::{
    self, MirrorVersionsDoc, ModuleVersionsDoc, ProviderVersionsDoc, ReleaseDoc,
};
use crate::downloads::UrlWindow;
use crate::names::{Hostname, ModuleAddress, Platform, ProviderAddress};
use crate::origin::Origin;
use crate::protocol::{
    Empty, GpgPublicKey, MirrorArchive, MirrorIndex, MirrorVersion, ModuleVersion,
    ModuleVersionList, ModuleVersions, ProviderDownload, ProviderPlatform, ProviderVersion,
    ProviderVersions, SigningKeys,
};
use crate::providers::ServedRelease;
use crate::store::{PackageRecord, RecordId, StoreError};
use crate::tokens::{unix, Access};
use crate::version::Version;

/// Which answer a kept one is, beside the document it is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    ModuleVersions,
    ProviderVersions,
    OwnMirrorIndex,
    UploadedMirrorIndex,
    ProviderDownload,
    OwnMirrorVersion,
    ModuleDownload,
}

/// What an answer is kept under: its kind, its document, and the rest of the question
/// (a platform, the origin its URLs name).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AnswerKey {
    kind: Kind,
    id: RecordId,
    rest: String,
}

/// An answer made from a document, and the first second at which time alone changes it.
type Made = Option<(Answer, Option<u64>)>;

/// A module's `/versions` answer; `None` when nothing is published.
pub(super) fn module_versions_of(doc: &ModuleVersionsDoc) -> Option<ModuleVersions> {
    if doc.versions.is_empty() {
        return None;
    }
    Some(ModuleVersions {
        modules: [ModuleVersionList {
            source: doc.source(),
            versions: doc
                .versions
                .iter()
                .map(|(version, entry)| ModuleVersion {
                    version: version.clone(),
                    source: entry.source.clone(),
                    hashes: entry.hashes.clone(),
                })
                .collect(),
        }],
    })
}

/// A provider's `/versions` answer at `now`; `None` when no version is served.
pub(super) fn provider_versions_of(
    doc: &ProviderVersionsDoc,
    now: SystemTime,
) -> Option<ProviderVersions> {
    let versions: Vec<ProviderVersion> = doc
        .served(now)
        .map(|(version, entry)| ProviderVersion {
            version: version.clone(),
            protocols: entry.protocols.clone(),
            platforms: entry
                .platforms
                .iter()
                .map(|p| ProviderPlatform {
                    os: p.os.to_string(),
                    arch: p.arch.to_string(),
                })
                .collect(),
        })
        .collect();
    let warnings = doc
        .served(now)
        .filter_map(|(version, entry)| {
            Some(deprecation_warning(version, entry.deprecation.as_ref()?))
        })
        .collect();
    (!versions.is_empty()).then_some(ProviderVersions { versions, warnings })
}

/// The line Terraform prints for a deprecated provider version. Terraform writes it to the
/// terminal as it is: the publisher's words are escaped for one.
fn deprecation_warning(version: &Version, notice: &crate::lifecycle::Notice) -> String {
    let mut line = format!(
        "{version} is deprecated: {}",
        crate::text::for_terminal(&notice.reason)
    );
    if let Some(replacement) = &notice.replacement {
        line.push_str(&format!("; use {replacement} instead"));
    }
    if let Some(day) = &notice.retire_on {
        line.push_str(&format!(
            "; to be withdrawn on {}",
            crate::text::for_terminal(day)
        ));
    }
    line
}

/// The first moment after `now` at which a version of `doc` stops being served.
pub(super) fn next_expiry(doc: &ProviderVersionsDoc, now: SystemTime) -> Option<u64> {
    let now = unix(now);
    doc.versions
        .values()
        .filter_map(|entry| entry.until)
        .filter(|until| *until > now)
        .min()
}

/// The mirror's `index.json`; `None` when there is no version.
pub(super) fn mirror_index_of(versions: Vec<Version>) -> Option<MirrorIndex> {
    (!versions.is_empty()).then(|| MirrorIndex {
        versions: versions
            .into_iter()
            .map(|v| (v.to_string(), Empty {}))
            .collect(),
    })
}

impl Registry {
    /// The answer kept for `key` if it holds, else made from its document by `make` (and
    /// kept); `None` when there is no document or `make` finds nothing to answer.
    async fn kept_answer<T: DeserializeOwned>(
        &self,
        key: AnswerKey,
        make: impl AsyncFnOnce(T, SystemTime) -> Result<Made, RegistryError>,
    ) -> Result<Option<Arc<Answer>>, RegistryError> {
        let generation = self.metadata.generation();
        let now = SystemTime::now();
        if let Some(kept) = self.answers.unchanged(&key, generation, now) {
            return Ok(Some(kept));
        }
        let Some(stored) = self.metadata.get_document(&key.id).await? else {
            return Ok(None);
        };
        if let Some(kept) = self
            .answers
            .of_revision(&key, &stored.revision, generation, now)
        {
            return Ok(Some(kept));
        }
        let doc: T = documents::decode(&key.id, &stored.body)?;
        let Some((answer, until)) = make(doc, now).await? else {
            return Ok(None);
        };
        let answer = Arc::new(answer);
        let basis = Basis {
            revision: stored.revision,
            generation,
            until,
        };
        self.answers.keep(&key, basis, Arc::clone(&answer));
        Ok(Some(answer))
    }

    /// The URL Terraform downloads a module version from (`X-Terraform-Get`): made once
    /// per archive revision and window of URLs.
    pub async fn module_download_url(
        &self,
        access: &Access,
        address: &ModuleAddress,
        version: &Version,
        origin: &Origin,
    ) -> Result<String, RegistryError> {
        let as_text = |answer: &Answer| String::from_utf8_lossy(answer.json()).into_owned();
        let key = AnswerKey {
            kind: Kind::ModuleDownload,
            id: RecordId::module_versions(address),
            rest: format!("{version} {}", origin.as_str()),
        };
        let generation = self.metadata.generation();
        let now = SystemTime::now();
        if access.allows(&address.namespace) {
            if let Some(kept) = self.answers.unchanged(&key, generation, now) {
                return Ok(as_text(&kept));
            }
        }
        let archive = self.module_archive(access, address, version).await?;
        let basis = format!("{}\n{}", archive.key, archive.revision);
        if let Some(kept) = self.answers.of_revision(&key, &basis, generation, now) {
            return Ok(as_text(&kept));
        }
        let revision = Some(archive.revision.as_str()).filter(|r| !r.is_empty());
        let window = self.downloads.window(now);
        let url = self
            .downloads
            .url(&archive.key, revision, origin, window)
            .await?;
        let answer = Arc::new(Answer::from_json(url.clone().into_bytes()));
        let basis = Basis {
            revision: basis,
            generation,
            until: Some(window.end),
        };
        self.answers.keep(&key, basis, answer);
        Ok(url)
    }

    /// [`Registry::module_versions`], as the bytes sent.
    pub async fn module_versions_answer(
        &self,
        access: &Access,
        address: &ModuleAddress,
    ) -> Result<Arc<Answer>, RegistryError> {
        if !access.allows(&address.namespace) {
            return Err(module_not_found(address));
        }
        let key = AnswerKey {
            kind: Kind::ModuleVersions,
            id: RecordId::module_versions(address),
            rest: String::new(),
        };
        self.kept_answer(key, async |doc: ModuleVersionsDoc, _| {
            module_versions_of(&doc)
                .map(|answer| Ok((Answer::of(&answer)?, None)))
                .transpose()
        })
        .await?
        .ok_or_else(|| module_not_found(address))
    }

    /// [`Registry::provider_versions`], as the bytes sent.
    pub async fn provider_versions_answer(
        &self,
        access: &Access,
        provider: &ProviderAddress,
    ) -> Result<Arc<Answer>, RegistryError> {
        if !access.allows(&provider.namespace) {
            return Err(provider_not_found(provider));
        }
        let key = AnswerKey {
            kind: Kind::ProviderVersions,
            id: RecordId::provider_versions(provider),
            rest: String::new(),
        };
        self.kept_answer(key, async |doc: ProviderVersionsDoc, now| {
            provider_versions_of(&doc, now)
                .map(|answer| Ok((Answer::of(&answer)?, next_expiry(&doc, now))))
                .transpose()
        })
        .await?
        .ok_or_else(|| provider_not_found(provider))
    }

    /// [`Registry::provider_download`], as the bytes sent: made once per window of URLs.
    pub async fn provider_download_answer(
        &self,
        access: &Access,
        provider: &ProviderAddress,
        version: &Version,
        platform: &Platform,
        origin: &Origin,
    ) -> Result<Arc<Answer>, RegistryError> {
        let absent = || provider_version_not_found(provider, version);
        if !access.allows(&provider.namespace) {
            return Err(absent());
        }
        let key = AnswerKey {
            kind: Kind::ProviderDownload,
            id: RecordId::provider_release(provider, version),
            rest: format!("{platform} {}", origin.as_str()),
        };
        let mut missing_platform = false;
        let answer = self
            .kept_answer(key, async |doc: ReleaseDoc, now| {
                let until = doc.until;
                let Some(release) = doc.served(now) else {
                    return Ok(None);
                };
                if !release.packages.contains_key(platform) {
                    missing_platform = true;
                    return Ok(None);
                }
                let window = self.downloads.window(now);
                let answer = self
                    .download_of(&release, provider, version, platform, origin, window)
                    .await?;
                let until = until.map_or(window.end, |t| t.min(window.end));
                Ok(Some((Answer::of(&answer)?, Some(until))))
            })
            .await?;
        match answer {
            Some(answer) => Ok(answer),
            None if missing_platform => Err(RegistryError::NotFound(format!(
                "provider {provider} {version} has no package for {platform}"
            ))),
            None => Err(absent()),
        }
    }

    /// [`Registry::mirror_index`], as the bytes sent.
    pub async fn mirror_index_answer(
        &self,
        access: &Access,
        hostname: &Hostname,
        provider: &ProviderAddress,
        origin: &Origin,
    ) -> Result<Arc<Answer>, RegistryError> {
        if !access.allows(&provider.namespace) {
            return Err(mirror_not_found(hostname, provider));
        }
        let answer = if self.is_own(hostname, origin) {
            let key = AnswerKey {
                kind: Kind::OwnMirrorIndex,
                id: RecordId::provider_versions(provider),
                rest: String::new(),
            };
            self.kept_answer(key, async |doc: ProviderVersionsDoc, now| {
                let versions = doc.served(now).map(|(v, _)| v.clone()).collect();
                mirror_index_of(versions)
                    .map(|answer| Ok((Answer::of(&answer)?, next_expiry(&doc, now))))
                    .transpose()
            })
            .await?
        } else {
            let key = AnswerKey {
                kind: Kind::UploadedMirrorIndex,
                id: RecordId::mirror_versions(hostname, provider),
                rest: String::new(),
            };
            self.kept_answer(key, async |doc: MirrorVersionsDoc, _| {
                mirror_index_of(doc.versions.into_keys().collect())
                    .map(|answer| Ok((Answer::of(&answer)?, None)))
                    .transpose()
            })
            .await?
        };
        answer.ok_or_else(|| mirror_not_found(hostname, provider))
    }

    /// [`Registry::mirror_version`], as the bytes sent: for the registry's own providers,
    /// made once per release and window of URLs; uploads are read per request (a key
    /// condition on the version).
    pub async fn mirror_version_answer(
        &self,
        access: &Access,
        hostname: &Hostname,
        provider: &ProviderAddress,
        version: &Version,
        origin: &Origin,
    ) -> Result<Arc<Answer>, RegistryError> {
        if !access.allows(&provider.namespace) || !self.is_own(hostname, origin) {
            let answer = self
                .mirror_version(access, hostname, provider, version, origin)
                .await?;
            return Ok(Arc::new(Answer::of(&answer)?));
        }
        let key = AnswerKey {
            kind: Kind::OwnMirrorVersion,
            id: RecordId::provider_release(provider, version),
            rest: origin.as_str().to_owned(),
        };
        self.kept_answer(key, async |doc: ReleaseDoc, now| {
            let until = doc.until;
            let Some(release) = doc.served(now) else {
                return Ok(None);
            };
            let window = self.downloads.window(now);
            let answer = self
                .mirror_version_of(release.packages, origin, window)
                .await?;
            let until = until.map_or(window.end, |t| t.min(window.end));
            Ok(Some((Answer::of(&answer)?, Some(until))))
        })
        .await?
        .ok_or_else(|| mirror_version_not_found(hostname, provider, version))
    }

    /// The download answer of one platform of a served release, its URLs made for `window`.
    pub(super) async fn download_of(
        &self,
        release: &ServedRelease,
        provider: &ProviderAddress,
        version: &Version,
        platform: &Platform,
        origin: &Origin,
        window: UrlWindow,
    ) -> Result<ProviderDownload, RegistryError> {
        let package = release.packages.get(platform).ok_or_else(|| {
            RegistryError::NotFound(format!(
                "provider {provider} {version} has no package for {platform}"
            ))
        })?;
        let downloads = &self.downloads;
        let url = async |key: &str, revision: &str| {
            downloads.url(key, Some(revision), origin, window).await
        };
        Ok(ProviderDownload {
            protocols: release.protocols.clone(),
            os: platform.os.to_string(),
            arch: platform.arch.to_string(),
            filename: package.filename().to_owned(),
            download_url: url(&package.key, &package.revision).await?,
            shasums_url: url(&release.sums.key, &release.sums.revision).await?,
            shasums_signature_url: url(&release.signature_key, &release.signature_revision).await?,
            shasum: package.hashes.sha256.clone(),
            signing_keys: SigningKeys {
                gpg_public_keys: vec![GpgPublicKey {
                    key_id: release.signer.key_id.clone(),
                    ascii_armor: release.signer.ascii_armor.clone(),
                    trust_signature: String::new(),
                    source: String::new(),
                    source_url: None,
                }],
            },
        })
    }

    /// The mirror's answer for one version's packages, their URLs made for `window`.
    pub(super) async fn mirror_version_of(
        &self,
        platforms: BTreeMap<Platform, PackageRecord>,
        origin: &Origin,
        window: UrlWindow,
    ) -> Result<MirrorVersion, StoreError> {
        let mut archives = BTreeMap::new();
        for (platform, package) in platforms {
            let url = self
                .downloads
                .url(&package.key, Some(&package.revision), origin, window)
                .await?;
            // Every package offered here was unpacked when it was indexed (a served
            // release's packages, or an upload), so its `h1:` is known.
            let hashes = package
                .hashes
                .h1
                .iter()
                .cloned()
                .chain([package.hashes.zh()])
                .collect();
            archives.insert(platform.to_string(), MirrorArchive { url, hashes });
        }
        Ok(MirrorVersion { archives })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deprecation_warning_is_one_line_escaped_for_the_terminal_terraform_prints_it_to() {
        let notice = crate::lifecycle::Notice::parse(
            crate::lifecycle::NoticeKind::Deprecation,
            br#"{"reason": "end of life\n\u001b[31mred", "replacement": "2.0.0"}"#,
        )
        .unwrap();
        let line = deprecation_warning(&Version::parse("1.0.0").unwrap(), &notice);
        assert!(!line.contains('\u{1b}') && !line.contains('\n'), "{line:?}");
        assert!(
            line.starts_with("1.0.0 is deprecated: end of life"),
            "{line}"
        );
        assert!(line.ends_with("; use 2.0.0 instead"), "{line}");
    }
}
