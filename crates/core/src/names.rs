//! Validated, case-normalised names: the parts of module (and later provider) addresses.
//!
//! Terraform matches registry names case-insensitively, so every name is folded to ASCII
//! lowercase once, when it is parsed; after that, equality is plain string equality.

use std::fmt;

use serde::Serialize;

/// Why a name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} {value:?}: {rule}")]
pub struct NameError {
    pub kind: &'static str,
    pub value: String,
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
}

impl Rule {
    fn describe(self) -> &'static str {
        match self {
            Rule::Word => {
                "use 1 to 64 letters, digits, '-' or '_', starting and ending with a letter or digit"
            }
            Rule::Alphanumeric => "use 1 to 64 letters or digits",
        }
    }

    fn accepts(self, s: &str) -> bool {
        let bytes = s.as_bytes();
        if bytes.is_empty() || bytes.len() > 64 {
            return false;
        }
        match self {
            Rule::Alphanumeric => bytes.iter().all(u8::is_ascii_alphanumeric),
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

/// `namespace/name/system`, the registry-relative address of a module.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModuleAddress {
    pub namespace: Namespace,
    pub name: ModuleName,
    pub system: ModuleSystem,
}

impl ModuleAddress {
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
