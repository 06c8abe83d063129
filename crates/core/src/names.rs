//! Validated, case-normalised names: the parts of module (and later provider) addresses.
//!
//! Terraform matches registry names case-insensitively, so every name is folded to ASCII
//! lowercase once, when it is parsed; after that, equality is plain string equality.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} {value:?}: {rule}")]
pub struct NameError {
    /// What was being parsed (`namespace`, `provider type`, `hostname`, ...).
    pub kind: &'static str,
    /// The refused text, as given.
    pub value: String,
    /// The rule the text breaks, phrased as advice.
    pub rule: &'static str,
}

/// The character rules a name kind follows.
#[derive(Clone, Copy)]
enum Rule {
    /// Letters, digits, `-` and `_`; starts and ends with a letter or digit; 1 to 64 characters.
    /// Terraform's rule for module namespaces and names.
    Word,
    /// Letters and digits only, 1 to 64 characters: Terraform's rule for a module's target system.
    Alphanumeric,
    /// Letters, digits and `-`, not starting or ending with `-`, 1 to 64 characters:
    /// Terraform's rule for provider namespaces and types.
    Dashed,
    /// Lowercase letters and digits, 1 to 32 characters: an operating system or architecture.
    PlatformPart,
}

impl Rule {
    fn describe(self) -> &'static str {
        match self {
            Rule::Word => {
                "use 1 to 64 letters, digits, '-' or '_', starting and ending with a letter or digit"
            }
            Rule::Alphanumeric => "use 1 to 64 letters or digits",
            Rule::Dashed => {
                "use 1 to 64 letters, digits or '-', starting and ending with a letter or digit"
            }
            Rule::PlatformPart => "use 1 to 32 lowercase letters or digits",
        }
    }

    fn accepts(self, s: &str) -> bool {
        let bytes = s.as_bytes();
        if bytes.is_empty() || bytes.len() > 64 {
            return false;
        }
        match self {
            Rule::Alphanumeric => bytes.iter().all(u8::is_ascii_alphanumeric),
            Rule::PlatformPart => {
                bytes.len() <= 32
                    && bytes
                        .iter()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            }
            Rule::Dashed => {
                let inner_ok = |b: &u8| b.is_ascii_alphanumeric() || *b == b'-';
                bytes[0].is_ascii_alphanumeric()
                    && bytes[bytes.len() - 1].is_ascii_alphanumeric()
                    && bytes.iter().all(inner_ok)
            }
            Rule::Word => {
                let inner_ok = |b: &u8| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_';
                bytes[0].is_ascii_alphanumeric()
                    && bytes[bytes.len() - 1].is_ascii_alphanumeric()
                    && bytes.iter().all(inner_ok)
            }
        }
    }
}

fn parse_name(kind: &'static str, rule: Rule, value: &str) -> Result<String, NameError> {
    if rule.accepts(value) {
        Ok(value.to_ascii_lowercase())
    } else {
        Err(NameError {
            kind,
            value: value.to_owned(),
            rule: rule.describe(),
        })
    }
}

macro_rules! name_type {
    ($(#[$doc:meta])* $ty:ident, $kind:literal, $rule:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(transparent)]
        pub struct $ty(String);

        impl $ty {
            /// Parses and lowercases `value`, refusing anything Terraform would not accept.
            pub fn parse(value: &str) -> Result<Self, NameError> {
                parse_name($kind, $rule, value).map(Self)
            }

            /// The lowercased name.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::str::FromStr for $ty {
            type Err = NameError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                Self::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

name_type!(
    /// The organisation part of an address: `acme` in `acme/network/aws`.
    Namespace,
    "namespace",
    Rule::Word
);
name_type!(
    /// A module's name: `network` in `acme/network/aws`.
    ModuleName,
    "module name",
    Rule::Word
);
name_type!(
    /// A module's target system: `aws` in `acme/network/aws`.
    ModuleSystem,
    "module system",
    Rule::Alphanumeric
);

name_type!(
    /// A provider's type: `aws` in `hashicorp/aws`.
    ProviderType,
    "provider type",
    Rule::Dashed
);
name_type!(
    /// An operating system (`linux`) or architecture (`amd64`) of a provider package.
    PlatformPart,
    "platform",
    Rule::PlatformPart
);

/// `namespace/type`, the registry-relative address of a provider. Provider namespaces follow
/// the stricter provider rule (no `_`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProviderAddress {
    /// The provider's namespace (no `_`, unlike a module's).
    pub namespace: Namespace,
    /// The provider's type (`aws`).
    pub type_: ProviderType,
}

impl ProviderAddress {
    /// Parses and lowercases both parts, with the provider namespace rule.
    pub fn parse(namespace: &str, type_: &str) -> Result<Self, NameError> {
        Ok(Self {
            namespace: provider_namespace(namespace)?,
            type_: ProviderType::parse(type_)?,
        })
    }
}

/// A namespace as providers and signing keys use it: letters, digits and `-` only.
pub fn provider_namespace(value: &str) -> Result<Namespace, NameError> {
    parse_name("provider namespace", Rule::Dashed, value).map(Namespace)
}

impl fmt::Display for ProviderAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.type_)
    }
}

/// `os_arch`: the platform a provider package runs on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Platform {
    /// The operating system (`linux`).
    pub os: PlatformPart,
    /// The architecture (`amd64`).
    pub arch: PlatformPart,
}

impl Platform {
    /// Parses both parts; they must already be lowercase.
    pub fn parse(os: &str, arch: &str) -> Result<Self, NameError> {
        Ok(Self {
            os: PlatformPart::parse(os)?,
            arch: PlatformPart::parse(arch)?,
        })
    }

    /// Parses `os_arch` (`linux_amd64`), as [`Platform`]'s `Display` writes it.
    pub fn parse_joined(text: &str) -> Result<Self, NameError> {
        let (os, arch) = text.split_once('_').ok_or_else(|| NameError {
            kind: "platform",
            value: text.to_owned(),
            rule: "write OS_ARCH, like linux_amd64",
        })?;
        Self::parse(os, arch)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", self.os, self.arch)
    }
}

/// The hostname part of a provider's address (`registry.terraform.io`), as the mirror
/// protocol names it: a DNS name, optionally with a port, lowercased.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Hostname(String);

impl Hostname {
    /// Parses and lowercases a DNS name with an optional port, dropping a `:443`.
    pub fn parse(value: &str) -> Result<Self, NameError> {
        let err = || NameError {
            kind: "hostname",
            value: value.to_owned(),
            rule: "use a DNS name of letters, digits, '-' and '.', optionally with :PORT",
        };
        let (host, port) = match value.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (value, None),
        };
        if let Some(port) = port {
            if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err());
            }
        }
        let label_ok = |l: &str| Rule::Dashed.accepts(l) && l.len() <= 63;
        if host.is_empty() || host.len() > 253 || !host.split('.').all(label_ok) {
            return Err(err());
        }
        // Terraform drops the default HTTPS port from hostnames: `host:443` is `host`.
        let value = value.strip_suffix(":443").unwrap_or(value);
        Ok(Self(value.to_ascii_lowercase()))
    }

    /// The lowercased hostname, with its port unless it was 443.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Hostname {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Hostname {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `namespace/name/system`, the registry-relative address of a module.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ModuleAddress {
    /// The organisation (`acme`).
    pub namespace: Namespace,
    /// The module's name (`network`).
    pub name: ModuleName,
    /// The target system (`aws`).
    pub system: ModuleSystem,
}

impl ModuleAddress {
    /// Parses and lowercases the three parts.
    pub fn parse(namespace: &str, name: &str, system: &str) -> Result<Self, NameError> {
        Ok(Self {
            namespace: Namespace::parse(namespace)?,
            name: ModuleName::parse(name)?,
            system: ModuleSystem::parse(system)?,
        })
    }
}

impl fmt::Display for ModuleAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.namespace, self.name, self.system)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_are_lowercased_once() {
        let addr = ModuleAddress::parse("Acme", "Net_Work-2", "AWS").unwrap();
        assert_eq!(addr.to_string(), "acme/net_work-2/aws");
        assert_eq!(
            addr,
            ModuleAddress::parse("acme", "net_work-2", "aws").unwrap()
        );
    }

    #[test]
    fn bad_names_are_refused_with_the_rule() {
        for bad in [
            "",
            "-acme",
            "acme-",
            "ac.me",
            "ac/me",
            "ac me",
            "ümlaut",
            &"a".repeat(65),
        ] {
            let err = Namespace::parse(bad).unwrap_err();
            assert_eq!(err.kind, "namespace");
            assert!(err.to_string().contains("letters"), "{err}");
        }
        assert!(ModuleSystem::parse("aws_v2").is_err());
        assert!(ModuleSystem::parse("aws-v2").is_err());
        assert!(ModuleSystem::parse("aws2").is_ok());
        assert!(ModuleName::parse(&"a".repeat(64)).is_ok());
    }

    #[test]
    fn provider_names_and_platforms() {
        let p = ProviderAddress::parse("HashiCorp", "Google-Beta").unwrap();
        assert_eq!(p.to_string(), "hashicorp/google-beta");
        assert!(
            ProviderAddress::parse("acme_corp", "x").is_err(),
            "no '_' in provider namespaces"
        );
        assert!(ProviderAddress::parse("acme", "-x").is_err());
        assert_eq!(
            Platform::parse("linux", "amd64").unwrap().to_string(),
            "linux_amd64"
        );
        assert!(Platform::parse("Linux", "amd64").is_err());
        assert!(Platform::parse("linux", "amd_64").is_err());
        assert_eq!(
            Platform::parse_joined("darwin_arm64").unwrap(),
            Platform::parse("darwin", "arm64").unwrap()
        );
        assert!(Platform::parse_joined("linux")
            .unwrap_err()
            .to_string()
            .contains("OS_ARCH"));
        assert!(Platform::parse_joined("linux_amd_64").is_err());
        assert_eq!(
            Hostname::parse("Registry.Terraform.io").unwrap().as_str(),
            "registry.terraform.io"
        );
        assert!(Hostname::parse("registry.example.test:8443").is_ok());
        for bad in ["", "a..b", "-a.b", "a.b:", "a.b:123456", "a_b.c", "a/b"] {
            assert!(Hostname::parse(bad).is_err(), "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn parse_never_panics_and_accepted_names_are_lowercase(s in "\\PC{0,80}") {
            if let Ok(ns) = Namespace::parse(&s) {
                prop_assert_eq!(ns.as_str(), s.to_ascii_lowercase());
                prop_assert!(!ns.as_str().contains('/'));
            }
            let _ = ModuleSystem::parse(&s);
        }

        #[test]
        fn valid_words_are_accepted(s in "[A-Za-z0-9]([A-Za-z0-9_-]{0,62}[A-Za-z0-9])?") {
            prop_assert!(ModuleName::parse(&s).is_ok());
        }
    }
}
