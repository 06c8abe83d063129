//! The publishing layout (docs/publishing.md, "Publishing layout"): what an object key in the bucket or data directory
//! means. Both deployment shapes classify keys here and nowhere else.

use std::fmt;

use crate::lifecycle::NoticeKind;
use crate::names::{
    provider_namespace, Hostname, ModuleAddress, NameError, Namespace, Platform, ProviderAddress,
    ProviderType,
};
use crate::version::{Version, VersionError};

/// The key prefix under which module archives are published.
pub const MODULES_PREFIX: &str = "modules/";

/// A module archive's packaging, chosen by its key's suffix. Terraform picks the unpacker from
/// the suffix of the download URL's path, so the suffix is kept all the way to the URL.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum ArchiveFormat {
    // Declaration order is the preference when one version is published in several formats.
    /// A gzip-compressed tarball named `.tar.gz`.
    TarGz,
    /// A gzip-compressed tarball named `.tgz`.
    Tgz,
    /// A zip archive.
    Zip,
}

impl ArchiveFormat {
    /// Every format, in order of preference.
    pub const ALL: [ArchiveFormat; 3] =
        [ArchiveFormat::TarGz, ArchiveFormat::Tgz, ArchiveFormat::Zip];

    /// The key suffix, with its leading dot (`.tar.gz`).
    pub fn suffix(self) -> &'static str {
        match self {
            ArchiveFormat::TarGz => ".tar.gz",
            ArchiveFormat::Tgz => ".tgz",
            ArchiveFormat::Zip => ".zip",
        }
    }

    /// The media type an archive of this format is served with.
    pub fn content_type(self) -> &'static str {
        match self {
            ArchiveFormat::TarGz | ArchiveFormat::Tgz => "application/gzip",
            ArchiveFormat::Zip => "application/zip",
        }
    }

    /// Splits `file` into its stem and format, if it ends in a known archive suffix.
    pub fn split(file: &str) -> Option<(&str, ArchiveFormat)> {
        Self::ALL
            .into_iter()
            .find_map(|f| file.strip_suffix(f.suffix()).map(|stem| (stem, f)))
    }
}

/// The files of one provider release, besides its packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReleaseFile {
    /// `terraform-provider-<type>_<version>_SHA256SUMS`
    Sums,
    /// `terraform-provider-<type>_<version>_SHA256SUMS.sig`: a detached OpenPGP signature
    Signature,
    /// `terraform-provider-<type>_<version>_manifest.json`
    Manifest,
}

impl ReleaseFile {
    /// The file name's ending after `terraform-provider-<type>_<version>`, leading `_` included.
    pub fn suffix(self) -> &'static str {
        match self {
            ReleaseFile::Sums => "_SHA256SUMS",
            ReleaseFile::Signature => "_SHA256SUMS.sig",
            ReleaseFile::Manifest => "_manifest.json",
        }
    }
}

/// What a deprecation or yank record ([`crate::lifecycle`]) is about: a module or a provider.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum NoticeTarget {
    /// A module's version.
    Module {
        /// The module.
        address: ModuleAddress,
    },
    /// A provider's release.
    Provider {
        /// The provider.
        provider: ProviderAddress,
    },
}

impl fmt::Display for NoticeTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoticeTarget::Module { address } => write!(f, "module {address}"),
            NoticeTarget::Provider { provider } => write!(f, "provider {provider}"),
        }
    }
}

/// What a recognised key publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Artifact {
    /// `modules/<namespace>/<name>/<system>/<version>.<tar.gz|tgz|zip>`
    ModuleArchive {
        /// The module the archive belongs to.
        address: ModuleAddress,
        /// The version, from the file name.
        version: Version,
        /// The packaging, from the file name's suffix.
        format: ArchiveFormat,
    },
    /// `modules/<namespace>/<name>/<system>/<version>.json`: the publisher's metadata of the
    /// version (`source`, `description`), beside its archive. An addition to the layout: such
    /// keys were refused before, so no published key changes meaning.
    ModuleMetadata {
        /// The module described.
        address: ModuleAddress,
        /// The version described, from the file name.
        version: Version,
    },
    /// `providers/<namespace>/<type>/<version>/terraform-provider-<type>_<version>_<os>_<arch>.zip`
    ProviderPackage {
        /// The provider, from the folder names.
        provider: ProviderAddress,
        /// The release, from the folder name (the file name agrees with it).
        version: Version,
        /// The OS and architecture the package is built for.
        platform: Platform,
    },
    /// `providers/<namespace>/<type>/<version>/terraform-provider-<type>_<version>_<SUFFIX>`
    ProviderReleaseFile {
        /// The provider, from the folder names.
        provider: ProviderAddress,
        /// The release, from the folder name (the file name agrees with it).
        version: Version,
        /// Which of the release's files this is.
        file: ReleaseFile,
    },
    /// `providers/<namespace>/<type>/<version>/docs.zip`: the release's documentation pages
    /// ([`crate::provider_docs`]). Not a version's bytes: it may be replaced, like a module's
    /// metadata sidecar. An addition to the layout: the name was refused before.
    ProviderDocs {
        /// The provider, from the folder names.
        provider: ProviderAddress,
        /// The release documented, from the folder name.
        version: Version,
    },
    /// `modules/<namespace>/<name>/<system>/<version>_deprecation.json` (or `_yank.json`), and
    /// `providers/<namespace>/<type>/<version>/deprecation.json` (or `yank.json`): a
    /// deprecation or yank record of a version ([`crate::lifecycle`]). Not a version's bytes:
    /// it may be replaced or deleted. An addition to the layout: such keys were refused before.
    Notice {
        /// The module or provider the version is of.
        target: NoticeTarget,
        /// The version, from the file name (modules) or the folder name (providers).
        version: Version,
        /// Deprecation or yank record.
        kind: NoticeKind,
    },
    /// `modules/<namespace>/<name>/<system>/<version>.attachments/<file>` and
    /// `providers/<namespace>/<type>/<version>/attachments/<file>`: an SBOM or provenance
    /// statement of a version, or a statement's detached signature ([`crate::attachments`]).
    /// Not a version's bytes: it may be replaced or deleted. An addition to the layout: keys
    /// one folder deeper than a version's files were refused before.
    Attachment {
        /// The module or provider the version is of.
        target: NoticeTarget,
        /// The version, from the folder name.
        version: Version,
        /// What the file name says it is.
        file: crate::attachments::AttachmentFile,
    },
    /// `keys/<namespace>/<any-name>.asc`: a public key trusted to sign the namespace's releases
    SigningKey {
        /// The provider namespace whose releases the key may sign.
        namespace: Namespace,
    },
    /// `modules/<namespace>/<name>/<system>/<version>.<tar.gz|tgz|zip>.sig`: a detached binary
    /// OpenPGP signature of the archive beside it ([`crate::policy`], docs/module-signing.md).
    /// An addition to the layout: such keys were refused before.
    ModuleSignature {
        /// The module signed.
        address: ModuleAddress,
        /// The version signed, from the file name.
        version: Version,
        /// The packaging of the archive signed (the key without `.sig`).
        format: ArchiveFormat,
    },
    /// `keys/<namespace>/policy.json`: what the namespace requires of its publications
    /// ([`crate::policy::NamespacePolicy`]). An addition to the layout: the name was refused
    /// before (only `*.asc` keys were read there, and still are).
    NamespacePolicy {
        /// The namespace the policy governs.
        namespace: Namespace,
    },
    /// `mirror/<hostname>/<namespace>/<type>/terraform-provider-<type>_<version>_<os>_<arch>.zip`
    MirrorPackage {
        /// The origin registry the provider was mirrored from.
        hostname: Hostname,
        /// The provider at its origin registry.
        provider: ProviderAddress,
        /// The version, from the file name.
        version: Version,
        /// The OS and architecture the package is built for.
        platform: Platform,
    },
}

impl Artifact {
    /// The media type a download of this file is served with.
    pub fn content_type(&self) -> &'static str {
        match self {
            Artifact::ModuleArchive { format, .. } => format.content_type(),
            Artifact::ModuleMetadata { .. } | Artifact::Notice { .. } => "application/json",
            Artifact::ProviderPackage { .. }
            | Artifact::MirrorPackage { .. }
            | Artifact::ProviderDocs { .. } => "application/zip",
            Artifact::ProviderReleaseFile {
                file: ReleaseFile::Signature,
                ..
            } => "application/pgp-signature",
            Artifact::ProviderReleaseFile {
                file: ReleaseFile::Manifest,
                ..
            } => "application/json",
            Artifact::ProviderReleaseFile {
                file: ReleaseFile::Sums,
                ..
            } => "text/plain",
            Artifact::SigningKey { .. } => "application/pgp-keys",
            Artifact::ModuleSignature { .. } => "application/pgp-signature",
            Artifact::NamespacePolicy { .. } => "application/json",
            Artifact::Attachment { file, .. } => match file {
                crate::attachments::AttachmentFile::Document(kind) => kind.media_type(),
                crate::attachments::AttachmentFile::Signature => "application/pgp-signature",
            },
        }
    }
}

/// Why a key under a publishing prefix cannot be served. Shown to publishers as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The key does not have the shape of its prefix.
    #[error("expected {expected}")]
    Shape {
        /// The shape keys under this prefix must have.
        expected: &'static str,
    },
    /// A namespace, name, type, hostname or platform is invalid.
    #[error(transparent)]
    Name(#[from] NameError),
    /// The version in the key is not a semantic version.
    #[error(transparent)]
    Version(#[from] VersionError),
    /// A module archive with a suffix other than `.tar.gz`, `.tgz` or `.zip`.
    #[error("unknown archive type {file:?}: module archives end in .tar.gz, .tgz or .zip")]
    ArchiveSuffix {
        /// The file name as published.
        file: String,
    },
    /// An attachment's file name that says no known kind ([`crate::attachments`]).
    #[error("{0}")]
    Attachment(String),
    /// A provider file name whose type or version differs from its folder's.
    #[error("file name {file:?} does not match its folder: expected {expected}")]
    Mismatch {
        /// The file name as published.
        file: String,
        /// The start the file name should have, given its folder.
        expected: String,
    },
}

/// The verdict on one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Classified {
    /// The key publishes something.
    Artifact(Artifact),
    /// The key is under a publishing prefix but breaks the layout; it is never served.
    Invalid(KeyError),
    /// Not part of the publishing layout (another prefix, a hidden or temporary file, a folder
    /// marker): nothing to do and nothing to report.
    Ignored,
}

const MODULE_SHAPE: &str =
    "modules/<namespace>/<name>/<system>/<version>.tar.gz (or .tgz, .zip, .tar.gz.sig for its signature, or .json for its metadata, _deprecation.json or _yank.json for its notices)";

/// The suffix of a module archive's detached signature, after the archive's own.
pub const MODULE_SIGNATURE_SUFFIX: &str = ".sig";

/// The suffix of a module version's metadata sidecar.
pub const MODULE_METADATA_SUFFIX: &str = ".json";
const PROVIDER_SHAPE: &str = "providers/<namespace>/<type>/<version>/terraform-provider-<type>_<version>_<os>_<arch>.zip, _SHA256SUMS, _SHA256SUMS.sig or _manifest.json (or docs.zip for its documentation, deprecation.json or yank.json for its notices)";

/// The file name of a provider release's documentation, beside its packages.
pub const PROVIDER_DOCS_FILE: &str = "docs.zip";
const KEY_SHAPE: &str = "keys/<namespace>/<name>.asc (or policy.json for the namespace's policy)";
const MIRROR_SHAPE: &str =
    "mirror/<hostname>/<namespace>/<type>/terraform-provider-<type>_<version>_<os>_<arch>.zip";

/// Classifies an object key. Never fails: every key gets a verdict.
pub fn classify(key: &str) -> Classified {
    let parts: Vec<&str> = key.split('/').collect();
    // Hidden files and folders (editor swap files, `.tfreg/` state, `.DS_Store`) and folder
    // markers are never publications.
    if parts.iter().any(|p| p.is_empty() || p.starts_with('.')) {
        return Classified::Ignored;
    }
    let parsed = match parts.as_slice() {
        ["modules", rest @ ..] => parse_module(rest),
        ["providers", rest @ ..] => parse_provider(rest),
        ["keys", rest @ ..] => parse_key_file(rest),
        // `terraform providers mirror` also writes JSON indexes; the registry computes its own.
        ["mirror", .., last] if last.ends_with(".json") => return Classified::Ignored,
        ["mirror", rest @ ..] => parse_mirror(rest),
        _ => return Classified::Ignored,
    };
    match parsed {
        Ok(artifact) => Classified::Artifact(artifact),
        Err(e) => Classified::Invalid(e),
    }
}

/// Splits `terraform-provider-<type>_<version>_<rest>` into (type, version, rest), checking
/// type and version against the folder they are in.
fn split_provider_file<'a>(
    file: &'a str,
    provider: &ProviderAddress,
    version: Option<&Version>,
    expected: &'static str,
) -> Result<(Version, &'a str), KeyError> {
    let shape = || KeyError::Shape { expected };
    let rest = file.strip_prefix("terraform-provider-").ok_or_else(shape)?;
    let (type_, rest) = rest.split_once('_').ok_or_else(shape)?;
    let (version_text, rest) = rest.split_once('_').ok_or_else(shape)?;
    let file_version = Version::parse(version_text)?;
    let type_ok = ProviderType::parse(type_).is_ok_and(|t| t == provider.type_);
    let version_ok = version.is_none_or(|v| *v == file_version);
    if !type_ok || !version_ok {
        let version = version.unwrap_or(&file_version);
        return Err(KeyError::Mismatch {
            file: file.to_owned(),
            expected: format!("terraform-provider-{}_{version}_...", provider.type_),
        });
    }
    Ok((file_version, rest))
}

/// `<os>_<arch>.zip`
fn parse_platform(rest: &str, expected: &'static str) -> Result<Platform, KeyError> {
    let shape = || KeyError::Shape { expected };
    let platform = rest.strip_suffix(".zip").ok_or_else(shape)?;
    let (os, arch) = platform.split_once('_').ok_or_else(shape)?;
    Ok(Platform::parse(os, arch)?)
}

fn parse_provider(parts: &[&str]) -> Result<Artifact, KeyError> {
    if let [namespace, type_, version, crate::attachments::PROVIDER_FOLDER, file] = parts {
        let provider = ProviderAddress::parse(namespace, type_)?;
        return Ok(Artifact::Attachment {
            target: NoticeTarget::Provider { provider },
            version: Version::parse(version)?,
            file: crate::attachments::parse_name(file).map_err(KeyError::Attachment)?,
        });
    }
    let [namespace, type_, version, file] = parts else {
        return Err(KeyError::Shape {
            expected: PROVIDER_SHAPE,
        });
    };
    let provider = ProviderAddress::parse(namespace, type_)?;
    let version = Version::parse(version)?;
    if *file == PROVIDER_DOCS_FILE {
        return Ok(Artifact::ProviderDocs { provider, version });
    }
    if let Some(kind) = NoticeKind::ALL
        .into_iter()
        .find(|k| *file == k.provider_file())
    {
        return Ok(Artifact::Notice {
            target: NoticeTarget::Provider { provider },
            version,
            kind,
        });
    }
    let (_, rest) = split_provider_file(file, &provider, Some(&version), PROVIDER_SHAPE)?;
    let release_file = [
        ReleaseFile::Sums,
        ReleaseFile::Signature,
        ReleaseFile::Manifest,
    ]
    .into_iter()
    .find(|f| rest == &f.suffix()[1..]);
    if let Some(file) = release_file {
        return Ok(Artifact::ProviderReleaseFile {
            provider,
            version,
            file,
        });
    }
    let platform = parse_platform(rest, PROVIDER_SHAPE)?;
    Ok(Artifact::ProviderPackage {
        provider,
        version,
        platform,
    })
}

fn parse_key_file(parts: &[&str]) -> Result<Artifact, KeyError> {
    let [namespace, file] = parts else {
        return Err(KeyError::Shape {
            expected: KEY_SHAPE,
        });
    };
    if *file == crate::policy::POLICY_FILE {
        return Ok(Artifact::NamespacePolicy {
            namespace: provider_namespace(namespace)?,
        });
    }
    if !file.ends_with(".asc") {
        return Err(KeyError::Shape {
            expected: KEY_SHAPE,
        });
    }
    Ok(Artifact::SigningKey {
        namespace: provider_namespace(namespace)?,
    })
}

fn parse_mirror(parts: &[&str]) -> Result<Artifact, KeyError> {
    let [hostname, namespace, type_, file] = parts else {
        return Err(KeyError::Shape {
            expected: MIRROR_SHAPE,
        });
    };
    let hostname = Hostname::parse(hostname)?;
    let provider = ProviderAddress::parse(namespace, type_)?;
    let (version, rest) = split_provider_file(file, &provider, None, MIRROR_SHAPE)?;
    let platform = parse_platform(rest, MIRROR_SHAPE)?;
    Ok(Artifact::MirrorPackage {
        hostname,
        provider,
        version,
        platform,
    })
}

fn parse_module(parts: &[&str]) -> Result<Artifact, KeyError> {
    if let [namespace, name, system, folder, file] = parts {
        if let Some(version) = folder.strip_suffix(crate::attachments::MODULE_FOLDER_SUFFIX) {
            let address = ModuleAddress::parse(namespace, name, system)?;
            return Ok(Artifact::Attachment {
                target: NoticeTarget::Module { address },
                version: Version::parse(version)?,
                file: crate::attachments::parse_name(file).map_err(KeyError::Attachment)?,
            });
        }
    }
    let [namespace, name, system, file] = parts else {
        return Err(KeyError::Shape {
            expected: MODULE_SHAPE,
        });
    };
    let address = ModuleAddress::parse(namespace, name, system)?;
    // Before the sidecar: `1.0.0_yank.json` also ends in `.json`.
    for kind in NoticeKind::ALL {
        if let Some(stem) = file.strip_suffix(kind.module_suffix()) {
            let version = Version::parse(stem)?;
            return Ok(Artifact::Notice {
                target: NoticeTarget::Module { address },
                version,
                kind,
            });
        }
    }
    if let Some(archive) = file.strip_suffix(MODULE_SIGNATURE_SUFFIX) {
        if let Some((stem, format)) = ArchiveFormat::split(archive) {
            let version = Version::parse(stem)?;
            return Ok(Artifact::ModuleSignature {
                address,
                version,
                format,
            });
        }
    }
    if let Some(stem) = file.strip_suffix(MODULE_METADATA_SUFFIX) {
        let version = Version::parse(stem)?;
        return Ok(Artifact::ModuleMetadata { address, version });
    }
    let (stem, format) = ArchiveFormat::split(file).ok_or_else(|| KeyError::ArchiveSuffix {
        file: (*file).to_owned(),
    })?;
    let version = Version::parse(stem)?;
    Ok(Artifact::ModuleArchive {
        address,
        version,
        format,
    })
}

impl fmt::Display for Artifact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Artifact::ModuleArchive {
                address, version, ..
            } => write!(f, "module {address} {version}"),
            Artifact::ModuleMetadata { address, version } => {
                write!(f, "module {address} {version} metadata")
            }
            Artifact::ProviderPackage {
                provider,
                version,
                platform,
            } => write!(f, "provider {provider} {version} package for {platform}"),
            Artifact::ProviderReleaseFile {
                provider,
                version,
                file,
            } => {
                let what = match file {
                    ReleaseFile::Sums => "SHA256SUMS",
                    ReleaseFile::Signature => "SHA256SUMS signature",
                    ReleaseFile::Manifest => "manifest",
                };
                write!(f, "provider {provider} {version} {what}")
            }
            Artifact::ProviderDocs { provider, version } => {
                write!(f, "provider {provider} {version} documentation")
            }
            Artifact::Notice {
                target,
                version,
                kind,
            } => write!(f, "{target} {version} {}", kind.noun()),
            Artifact::SigningKey { namespace } => write!(f, "signing key of namespace {namespace}"),
            Artifact::ModuleSignature {
                address, version, ..
            } => write!(f, "module {address} {version} signature"),
            Artifact::NamespacePolicy { namespace } => {
                write!(f, "policy of namespace {namespace}")
            }
            Artifact::Attachment {
                target,
                version,
                file,
            } => match file {
                crate::attachments::AttachmentFile::Document(kind) => {
                    write!(f, "{target} {version} attachment, {}", kind.label())
                }
                crate::attachments::AttachmentFile::Signature => {
                    write!(f, "{target} {version} attachment signature")
                }
            },
            Artifact::MirrorPackage {
                hostname,
                provider,
                version,
                platform,
            } => write!(
                f,
                "mirrored provider {hostname}/{provider} {version} package for {platform}"
            ),
        }
    }
}

/// The version's file a key publishes, whatever its spelling or format: what a pin
/// ([`crate::store::PinRecord`]) is for.
/// `None` for files that are not versioned (signing keys) or not pinned (manifests, whose
/// records keep no revision).
pub fn pin_slot(artifact: &Artifact) -> Option<String> {
    Some(match artifact {
        Artifact::ModuleArchive {
            address, version, ..
        } => format!("module/{address}/{version}"),
        Artifact::ProviderPackage {
            provider,
            version,
            platform,
        } => format!("provider/{provider}/{version}/{platform}"),
        Artifact::ProviderReleaseFile {
            provider,
            version,
            file: file @ (ReleaseFile::Sums | ReleaseFile::Signature),
        } => format!("provider/{provider}/{version}/{}", file.suffix()),
        Artifact::MirrorPackage {
            hostname,
            provider,
            version,
            platform,
        } => format!("mirror/{hostname}/{provider}/{version}/{platform}"),
        // Pinned once the version is served with it, as a release's SHA256SUMS.sig.
        Artifact::ModuleSignature {
            address, version, ..
        } => format!("module-signature/{address}/{version}"),
        Artifact::ProviderReleaseFile { .. }
        | Artifact::NamespacePolicy { .. }
        | Artifact::SigningKey { .. }
        | Artifact::ModuleMetadata { .. }
        | Artifact::ProviderDocs { .. }
        | Artifact::Notice { .. }
        | Artifact::Attachment { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn module(key: &str) -> (String, String, ArchiveFormat) {
        match classify(key) {
            Classified::Artifact(Artifact::ModuleArchive {
                address,
                version,
                format,
            }) => (address.to_string(), version.to_string(), format),
            other => panic!("{key}: {other:?}"),
        }
    }

    fn invalid(key: &str) -> String {
        match classify(key) {
            Classified::Invalid(e) => e.to_string(),
            other => panic!("{key} should be invalid, got {other:?}"),
        }
    }

    #[test]
    fn module_keys_in_every_format() {
        assert_eq!(
            module("modules/acme/network/aws/1.2.3.tar.gz"),
            (
                "acme/network/aws".into(),
                "1.2.3".into(),
                ArchiveFormat::TarGz
            )
        );
        assert_eq!(
            module("modules/Acme/Network/AWS/2.0.0-beta.1.tgz"),
            (
                "acme/network/aws".into(),
                "2.0.0-beta.1".into(),
                ArchiveFormat::Tgz
            )
        );
        assert_eq!(
            module("modules/acme/dns/azure/0.1.0+build.7.zip"),
            (
                "acme/dns/azure".into(),
                "0.1.0+build.7".into(),
                ArchiveFormat::Zip
            )
        );
    }

    #[test]
    fn bad_module_keys_say_why() {
        assert!(
            invalid("modules/acme/network/aws/latest.tar.gz").contains("not a semantic version")
        );
        assert!(invalid("modules/acme/network/aws/v1.0.0.tar.gz").contains("leading 'v'"));
        assert!(invalid("modules/acme/network/aws/1.0.0.tar.bz2").contains("unknown archive type"));
        assert!(invalid("modules/acme/network/aws/1.0.0.TAR.GZ").contains("unknown archive type"));
        assert!(invalid("modules/acme/network/1.0.0.tar.gz").contains("expected modules/"));
        assert!(invalid("modules/acme/network/aws/x/1.0.0.tar.gz").contains("expected modules/"));
        assert!(invalid("modules/ac~me/network/aws/1.0.0.tar.gz").contains("invalid namespace"));
        assert!(invalid("modules/acme/network/aws-x/1.0.0.zip").contains("invalid module system"));
    }

    #[test]
    fn provider_keys() {
        let dir = "providers/Acme/Widget/1.2.3";
        match classify(&format!(
            "{dir}/terraform-provider-widget_1.2.3_linux_amd64.zip"
        )) {
            Classified::Artifact(Artifact::ProviderPackage {
                provider,
                version,
                platform,
            }) => {
                assert_eq!(provider.to_string(), "acme/widget");
                assert_eq!(version.to_string(), "1.2.3");
                assert_eq!(platform.to_string(), "linux_amd64");
            }
            other => panic!("{other:?}"),
        }
        for (suffix, file) in [
            ("SHA256SUMS", ReleaseFile::Sums),
            ("SHA256SUMS.sig", ReleaseFile::Signature),
            ("manifest.json", ReleaseFile::Manifest),
        ] {
            let key = format!("{dir}/terraform-provider-widget_1.2.3_{suffix}");
            assert!(
                matches!(classify(&key), Classified::Artifact(Artifact::ProviderReleaseFile { file: f, .. }) if f == file),
                "{key}"
            );
        }
        assert!(invalid(&format!(
            "{dir}/terraform-provider-gadget_1.2.3_linux_amd64.zip"
        ))
        .contains("does not match its folder"));
        assert!(invalid(&format!(
            "{dir}/terraform-provider-widget_1.2.4_linux_amd64.zip"
        ))
        .contains("does not match its folder"));
        assert!(
            invalid(&format!("{dir}/terraform-provider-widget_1.2.3_linux.zip"))
                .contains("expected providers/")
        );
        assert!(invalid(&format!(
            "{dir}/terraform-provider-widget_1.2.3_linux_amd64.tar.gz"
        ))
        .contains("expected providers/"));
        assert!(invalid(&format!("{dir}/widget.zip")).contains("expected providers/"));
        let docs = classify(&format!("{dir}/docs.zip"));
        assert!(
            matches!(&docs, Classified::Artifact(Artifact::ProviderDocs { provider, version })
                if provider.to_string() == "acme/widget" && version.to_string() == "1.2.3"),
            "{docs:?}"
        );
        assert_eq!(
            pin_slot(&Artifact::ProviderDocs {
                provider: ProviderAddress::parse("acme", "widget").unwrap(),
                version: Version::parse("1.2.3").unwrap()
            }),
            None
        );
        for refused in ["docs.tar.gz", "Docs.zip", "docs", "docs.zip.txt"] {
            assert!(
                invalid(&format!("{dir}/{refused}")).contains("expected providers/"),
                "{refused}"
            );
        }
        assert!(invalid("providers/acme/widget/docs.zip").contains("expected providers/"));
        assert!(invalid(
            "providers/acme/widget/v1.2.3/terraform-provider-widget_v1.2.3_linux_amd64.zip"
        )
        .contains("leading 'v'"));
        assert!(invalid(
            "providers/acme_co/widget/1.0.0/terraform-provider-widget_1.0.0_SHA256SUMS"
        )
        .contains("provider namespace"));
    }

    #[test]
    fn key_and_mirror_keys() {
        assert_eq!(
            classify("keys/Acme/release-2024.asc"),
            Classified::Artifact(Artifact::SigningKey {
                namespace: provider_namespace("acme").unwrap()
            })
        );
        assert!(invalid("keys/acme/key.gpg").contains("expected keys/"));
        assert!(invalid("keys/acme.asc").contains("expected keys/"));
        match classify("mirror/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip") {
            Classified::Artifact(Artifact::MirrorPackage { hostname, provider, version, platform }) => {
                assert_eq!(hostname.as_str(), "registry.terraform.io");
                assert_eq!(provider.to_string(), "hashicorp/null");
                assert_eq!(version.to_string(), "3.2.1");
                assert_eq!(platform.to_string(), "linux_amd64");
            }
            other => panic!("{other:?}"),
        }
        for ignored in [
            "mirror/registry.terraform.io/hashicorp/null/index.json",
            "mirror/registry.terraform.io/hashicorp/null/3.2.1.json",
        ] {
            assert_eq!(classify(ignored), Classified::Ignored, "{ignored}");
        }
        assert!(invalid(
            "mirror/registry.terraform.io/hashicorp/terraform-provider-null_3.2.1_linux_amd64.zip"
        )
        .contains("expected mirror/"));
    }

    #[test]
    fn keys_outside_the_layout_are_ignored() {
        for key in [
            "README.md",
            "modules/",
            "modules/acme/",
            "modules/acme/network/aws/.1.0.0.tar.gz.swp",
            ".tfreg/tls/cert.pem",
            "modules//network/aws/1.0.0.tar.gz",
            "Modules/acme/network/aws/1.0.0.tar.gz",
        ] {
            assert_eq!(classify(key), Classified::Ignored, "{key}");
        }
    }

    #[test]
    fn notice_keys_classify_and_older_keys_keep_their_meaning() {
        let notice = |key: &str| match classify(key) {
            Classified::Artifact(artifact) => {
                assert_eq!(pin_slot(&artifact), None, "{key}");
                assert_eq!(artifact.content_type(), "application/json");
                let Artifact::Notice {
                    target,
                    version,
                    kind,
                } = artifact
                else {
                    panic!("{key}: {artifact:?}")
                };
                (target.to_string(), version.to_string(), kind)
            }
            other => panic!("{key}: {other:?}"),
        };
        assert_eq!(
            notice("modules/acme/network/aws/1.2.0_deprecation.json"),
            (
                "module acme/network/aws".into(),
                "1.2.0".into(),
                NoticeKind::Deprecation
            )
        );
        assert_eq!(
            notice("modules/Acme/network/aws/1.0.0-rc.1_yank.json"),
            (
                "module acme/network/aws".into(),
                "1.0.0-rc.1".into(),
                NoticeKind::Yank
            )
        );
        assert_eq!(
            notice("providers/acme/widget/2.0.0/deprecation.json"),
            (
                "provider acme/widget".into(),
                "2.0.0".into(),
                NoticeKind::Deprecation
            )
        );
        assert_eq!(
            notice("providers/acme/widget/2.0.0/yank.json"),
            (
                "provider acme/widget".into(),
                "2.0.0".into(),
                NoticeKind::Yank
            )
        );
        // Previously valid keys mean what they meant.
        assert!(matches!(
            classify("modules/acme/network/aws/1.0.0.json"),
            Classified::Artifact(Artifact::ModuleMetadata { .. })
        ));
        assert_eq!(
            module("modules/acme/network/aws/1.0.0-rc.1.tar.gz"),
            (
                "acme/network/aws".into(),
                "1.0.0-rc.1".into(),
                ArchiveFormat::TarGz
            )
        );
        // Near misses stay refused.
        assert!(invalid("modules/acme/network/aws/v1.0.0_yank.json").contains("leading 'v'"));
        assert!(invalid("modules/acme/network/aws/1.0.0_Yank.json").contains("not a semantic"));
        assert!(invalid("modules/acme/network/aws/1.0.0_yank.txt").contains("unknown archive"));
        assert!(invalid("providers/acme/widget/1.0.0/Yank.json").contains("expected providers/"));
        assert!(invalid("providers/acme/widget/deprecation.json").contains("expected providers/"));
    }

    #[test]
    fn module_signatures_and_policies_classify_and_keys_keep_their_meaning() {
        match classify("modules/Acme/network/aws/1.2.0.tar.gz.sig") {
            Classified::Artifact(
                artifact @ Artifact::ModuleSignature {
                    format: ArchiveFormat::TarGz,
                    ..
                },
            ) => {
                assert_eq!(
                    artifact.to_string(),
                    "module acme/network/aws 1.2.0 signature"
                );
                assert_eq!(
                    pin_slot(&artifact).as_deref(),
                    Some("module-signature/acme/network/aws/1.2.0")
                );
            }
            other => panic!("{other:?}"),
        }
        for (key, format) in [
            ("modules/acme/network/aws/1.2.0.tgz.sig", ArchiveFormat::Tgz),
            ("modules/acme/network/aws/1.2.0.zip.sig", ArchiveFormat::Zip),
        ] {
            assert!(
                matches!(classify(key), Classified::Artifact(Artifact::ModuleSignature { format: f, .. }) if f == format),
                "{key}"
            );
        }
        assert!(invalid("modules/acme/network/aws/1.2.0.sig").contains("unknown archive type"));
        assert!(invalid("modules/acme/network/aws/v1.2.0.zip.sig").contains("leading 'v'"));
        assert!(invalid("modules/acme/network/aws/1.2.0.tar.gz.asc").contains("unknown archive"));
        assert_eq!(
            classify("keys/Acme/policy.json"),
            Classified::Artifact(Artifact::NamespacePolicy {
                namespace: provider_namespace("acme").unwrap()
            })
        );
        // Keys keep their meaning; other JSON there stays refused.
        assert!(matches!(
            classify("keys/acme/policy.json.asc"),
            Classified::Artifact(Artifact::SigningKey { .. })
        ));
        assert!(invalid("keys/acme/Policy.json").contains("expected keys/"));
        assert!(invalid("keys/acme/other.json").contains("expected keys/"));
        assert!(invalid("keys/policy.json").contains("expected keys/"));
    }

    proptest! {
        #[test]
        fn classify_never_panics(key in "(modules/)?[\\PC/]{0,60}") {
            let _ = classify(&key);
        }
    }
}
