//! Version numbers: strict Semantic Versioning 2.0, as the publishing layout requires.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a version string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid version {value:?}: {reason}")]
pub struct VersionError {
    /// The refused text, as given.
    pub value: String,
    /// What is wrong with it, phrased for the publisher.
    pub reason: String,
}

/// A semantic version (`1.2.3`, `2.0.0-beta.1`, `1.0.0+build.5`), ordered by semver precedence
/// (build metadata only breaks ties, so the order is total and deterministic).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Version(semver::Version);

impl Version {
    /// Parses strict SemVer 2.0, refusing a leading `v` with a hint.
    pub fn parse(value: &str) -> Result<Self, VersionError> {
        if value.starts_with(['v', 'V']) {
            return Err(VersionError {
                value: value.to_owned(),
                reason: "write the version without a leading 'v'".into(),
            });
        }
        semver::Version::parse(value)
            .map(Self)
            .map_err(|e| VersionError {
                value: value.to_owned(),
                reason: format!(
                    "not a semantic version (MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]): {e}"
                ),
            })
    }

    /// True for a version with a pre-release part (`2.0.0-beta.1`).
    pub fn is_prerelease(&self) -> bool {
        !self.0.pre.is_empty()
    }

    /// The underlying `semver` value.
    pub fn semver(&self) -> &semver::Version {
        &self.0
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::str::FromStr for Version {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn orders_by_semver_precedence() {
        let mut versions = [
            "1.10.0",
            "1.2.0",
            "2.0.0-beta.1",
            "2.0.0",
            "2.0.0-alpha",
            "2.0.0-beta.11",
            "2.0.0-beta.2",
            "0.9.9",
        ]
        .map(v);
        versions.sort();
        let sorted: Vec<String> = versions.iter().map(ToString::to_string).collect();
        assert_eq!(
            sorted,
            [
                "0.9.9",
                "1.2.0",
                "1.10.0",
                "2.0.0-alpha",
                "2.0.0-beta.1",
                "2.0.0-beta.2",
                "2.0.0-beta.11",
                "2.0.0"
            ]
        );
    }

    #[test]
    fn refuses_what_is_not_strict_semver() {
        for bad in [
            "latest", "v1.0.0", "1.0", "1", "01.0.0", "1.0.0-", "", " 1.0.0", "1.0.0.0",
        ] {
            assert!(Version::parse(bad).is_err(), "{bad:?} should be refused");
        }
        assert!(Version::parse("v1.0.0")
            .unwrap_err()
            .reason
            .contains("leading 'v'"));
        assert!(v("2.0.0-beta.1").is_prerelease());
        assert!(!v("2.0.0+build.1").is_prerelease());
    }

    proptest! {
        #[test]
        fn display_round_trips(major in 0u64..10_000, minor in 0u64..10_000, patch in 0u64..10_000,
                               pre in proptest::option::of("[a-z]{1,5}(\\.[1-9][0-9]{0,3})?")) {
            let text = match &pre {
                Some(p) => format!("{major}.{minor}.{patch}-{p}"),
                None => format!("{major}.{minor}.{patch}"),
            };
            let parsed = v(&text);
            prop_assert_eq!(parsed.to_string(), text);
            prop_assert_eq!(parsed.is_prerelease(), pre.is_some());
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,40}") {
            let _ = Version::parse(&s);
        }

        #[test]
        fn a_release_outranks_its_prereleases(major in 0u64..100, minor in 0u64..100, patch in 0u64..100, pre in "[a-z]{1,8}") {
            let release = v(&format!("{major}.{minor}.{patch}"));
            let prerelease = v(&format!("{major}.{minor}.{patch}-{pre}"));
            prop_assert!(prerelease < release);
        }
    }
}
