//! The publishing layout (CONTRACT.md §1): what an object key in the bucket or data directory
//! means. Both deployment shapes classify keys here and nowhere else.

use std::fmt;

use crate::names::{ModuleAddress, NameError};
use crate::version::{Version, VersionError};

/// The key prefix under which module archives are published.
pub const MODULES_PREFIX: &str = "modules/";

/// A module archive's packaging, chosen by its key's suffix. Terraform picks the unpacker from
/// the suffix of the download URL's path, so the suffix is kept all the way to the URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArchiveFormat {
    // Declaration order is the preference when one version is published in several formats.
    TarGz,
    Tgz,
    Zip,
}

impl ArchiveFormat {
    pub const ALL: [ArchiveFormat; 3] =
        [ArchiveFormat::TarGz, ArchiveFormat::Tgz, ArchiveFormat::Zip];

    pub fn suffix(self) -> &'static str {
        match self {
            ArchiveFormat::TarGz => ".tar.gz",
            ArchiveFormat::Tgz => ".tgz",
            ArchiveFormat::Zip => ".zip",
        }
    }

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

/// What a recognised key publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Artifact {
    /// `modules/<namespace>/<name>/<system>/<version>.<tar.gz|tgz|zip>`
    ModuleArchive {
        address: ModuleAddress,
        version: Version,
        format: ArchiveFormat,
    },
}

/// Why a key under a publishing prefix cannot be served. Shown to publishers as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("expected {expected}")]
    Shape { expected: &'static str },
    #[error(transparent)]
    Name(#[from] NameError),
    #[error(transparent)]
    Version(#[from] VersionError),
    #[error("unknown archive type {file:?}: module archives end in .tar.gz, .tgz or .zip")]
    ArchiveSuffix { file: String },
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

const MODULE_SHAPE: &str = "modules/<namespace>/<name>/<system>/<version>.tar.gz (or .tgz, .zip)";

/// Classifies an object key. Never fails: every key gets a verdict.
pub fn classify(key: &str) -> Classified {
    let parts: Vec<&str> = key.split('/').collect();
    // Hidden files and folders (editor swap files, `.tfreg/` state, `.DS_Store`) and folder
    // markers are never publications.
    if parts.iter().any(|p| p.is_empty() || p.starts_with('.')) {
        return Classified::Ignored;
    }
    match parts.as_slice() {
        ["modules", rest @ ..] => match parse_module(rest) {
            Ok(artifact) => Classified::Artifact(artifact),
            Err(e) => Classified::Invalid(e),
        },
        _ => Classified::Ignored,
    }
}

fn parse_module(parts: &[&str]) -> Result<Artifact, KeyError> {
    let [namespace, name, system, file] = parts else {
        return Err(KeyError::Shape {
            expected: MODULE_SHAPE,
        });
    };
    let address = ModuleAddress::parse(namespace, name, system)?;
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
        }
    }
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

    proptest! {
        #[test]
        fn classify_never_panics(key in "(modules/)?[\\PC/]{0,60}") {
            let _ = classify(&key);
        }
    }
}
