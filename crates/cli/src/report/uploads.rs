//! Who uploaded each served version's files, in the status document: the upload records
//! the AWS indexer keeps ([`tfreg_core::store::UploadRecord`]) of the revisions served, one
//! query per module or provider, added by `tfreg status` on AWS only (the documents `tfreg
//! serve` and `tfreg publish` keep do without). A data directory records none: the text
//! says so.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use tfreg_core::layout::NoticeTarget;
use tfreg_core::store::{partition, MetadataStore, Record};
use tfreg_core::text::for_terminal as t;
use tfreg_core::{ModuleAddress, ProviderAddress, StoreError};

use super::doc::StatusDoc;

/// One served file and who uploaded its served revision (`None`: not recorded).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadStatus {
    /// `module` or `provider`.
    pub kind: String,
    pub address: String,
    pub version: String,
    pub key: String,
    /// The revision served.
    pub revision: String,
    /// The principal S3 reported for its upload.
    pub principal: Option<String>,
    /// When S3 took the upload (RFC 3339).
    pub uploaded_at: Option<String>,
}

/// Adds who uploaded each served file of the document's modules and providers.
pub async fn add_uploads(
    doc: &mut StatusDoc,
    metadata: &dyn MetadataStore,
) -> Result<(), StoreError> {
    let mut found = Vec::new();
    for module in &doc.modules {
        let Some(address) = parse_module(&module.address) else {
            continue;
        };
        let files = module
            .versions
            .iter()
            .map(|v| (v.version.clone(), v.key.clone(), v.revision.clone()))
            .collect();
        found.extend(uploads_of(metadata, NoticeTarget::Module { address }, files).await?);
    }
    for provider in &doc.providers {
        let Some(address) = parse_provider(&provider.address) else {
            continue;
        };
        let mut files = Vec::new();
        for v in provider.versions.iter().filter(|v| v.served) {
            let served = v
                .platforms
                .iter()
                .filter_map(|p| p.package.as_ref())
                .chain(v.shasums.as_ref())
                .chain(v.signature.as_ref());
            for file in served {
                files.push((v.version.clone(), file.key.clone(), file.revision.clone()));
            }
        }
        let target = NoticeTarget::Provider { provider: address };
        found.extend(uploads_of(metadata, target, files).await?);
    }
    doc.uploads = found;
    Ok(())
}

fn parse_module(address: &str) -> Option<ModuleAddress> {
    let parts: Vec<&str> = address.split('/').collect();
    let [namespace, name, system] = parts.as_slice() else {
        return None;
    };
    ModuleAddress::parse(namespace, name, system).ok()
}

fn parse_provider(address: &str) -> Option<ProviderAddress> {
    let (namespace, type_) = address.split_once('/')?;
    ProviderAddress::parse(namespace, type_).ok()
}

/// The uploader of each `(version, key, revision)` of `target`.
async fn uploads_of(
    metadata: &dyn MetadataStore,
    target: NoticeTarget,
    files: Vec<(String, String, String)>,
) -> Result<Vec<UploadStatus>, StoreError> {
    if files.is_empty() {
        return Ok(vec![]);
    }
    let mut recorded = BTreeMap::new();
    for record in metadata.query(&partition::uploads(&target)).await? {
        if let Record::Upload(u) = record {
            recorded.insert((u.key.clone(), u.revision.clone()), u);
        }
    }
    let (kind, address) = match &target {
        NoticeTarget::Module { address } => ("module", address.to_string()),
        NoticeTarget::Provider { provider } => ("provider", provider.to_string()),
    };
    Ok(files
        .into_iter()
        .map(|(version, key, revision)| {
            let upload = recorded.get(&(key.clone(), revision.clone()));
            UploadStatus {
                kind: kind.to_owned(),
                address: address.clone(),
                version,
                principal: upload.map(|u| u.principal.clone()),
                uploaded_at: upload.and_then(|u| u.uploaded_at.clone()),
                key,
                revision,
            }
        })
        .collect())
}

/// The text section: each served version's uploaders, or why none are known. Every value
/// is escaped.
pub fn text(out: &mut String, doc: &StatusDoc) -> std::fmt::Result {
    if doc.modules.is_empty() && doc.providers.is_empty() {
        return Ok(());
    }
    if !doc.uploaders_recorded {
        return writeln!(
            out,
            "\nUploaders: not recorded (local data directory: only the AWS shape records who uploaded each file, from its S3 event)"
        );
    }
    if doc.uploads.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\nUploaded by (the principal S3 reported for each served file):"
    )?;
    let mut by_version: BTreeMap<(&str, &str, &str), Vec<&UploadStatus>> = BTreeMap::new();
    for u in &doc.uploads {
        by_version
            .entry((&u.kind, &u.address, &u.version))
            .or_default()
            .push(u);
    }
    for ((kind, address, version), files) in by_version {
        let mut who: BTreeMap<String, usize> = BTreeMap::new();
        for file in &files {
            let principal = match (&file.principal, &file.uploaded_at) {
                (Some(p), Some(at)) if files.len() == 1 => format!("{} at {}", t(p), t(at)),
                (Some(p), _) => t(p).into_owned(),
                (None, _) => "not recorded".to_owned(),
            };
            *who.entry(principal).or_default() += 1;
        }
        let who: Vec<String> = who
            .into_iter()
            .map(|(principal, n)| match (files.len(), n) {
                (1, _) => principal,
                (_, n) => format!("{principal} ({n} files)"),
            })
            .collect();
        writeln!(
            out,
            "  {kind} {} {}: {}",
            t(address),
            t(version),
            who.join(", ")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ModuleStatus;

    fn upload(key: &str, principal: Option<&str>) -> UploadStatus {
        UploadStatus {
            kind: "provider".into(),
            address: "acme/widget".into(),
            version: "1.0.0".into(),
            key: key.into(),
            revision: "v:1".into(),
            principal: principal.map(str::to_owned),
            uploaded_at: Some("2026-11-28T12:00:00.000Z".into()),
        }
    }

    #[test]
    fn uploaders_are_grouped_per_version_and_escaped() {
        let mut doc = StatusDoc {
            modules: vec![ModuleStatus::default()],
            uploaders_recorded: true,
            ..StatusDoc::default()
        };
        doc.uploads = vec![
            upload("a", Some("AWS:AROAEXAMPLE:ci-1")),
            upload("b", Some("AWS:AROAEXAMPLE:ci-1")),
            upload("c", None),
            UploadStatus {
                kind: "module".into(),
                address: "acme/net/aws".into(),
                principal: Some("AWS:A\u{1b}[2J".into()),
                ..upload("m", None)
            },
        ];
        let mut out = String::new();
        text(&mut out, &doc).unwrap();
        assert!(out.contains(
            "provider acme/widget 1.0.0: AWS:AROAEXAMPLE:ci-1 (2 files), not recorded (1 files)"
        ), "{out}");
        assert!(
            out.contains("module acme/net/aws 1.0.0: AWS:A\\u{1b}[2J at 2026-11-28T12:00:00.000Z"),
            "{out}"
        );
        // A data directory records none, and says so.
        doc.uploaders_recorded = false;
        let mut out = String::new();
        text(&mut out, &doc).unwrap();
        assert!(
            out.contains("Uploaders: not recorded (local data directory"),
            "{out}"
        );
    }
}
