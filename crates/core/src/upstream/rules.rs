//! Which upstream providers the mirror may fetch: patterns `HOST/NAMESPACE/TYPE`, where a
//! `*` matches any run of characters within one segment. Nothing is allowed by default.

use std::fmt;

use crate::glob;
use crate::names::{Hostname, ProviderAddress};

/// One allowed pattern, checked when it is configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    host: String,
    namespace: String,
    type_: String,
}

impl Rule {
    /// Parses `HOST/NAMESPACE/TYPE` (`registry.terraform.io/hashicorp/*`).
    pub fn parse(pattern: &str) -> Result<Rule, String> {
        let bad = |why: &str| {
            format!(
                "upstream pattern {pattern:?} {why}: use HOST/NAMESPACE/TYPE, with * inside a part \
                 (registry.terraform.io/hashicorp/*)"
            )
        };
        let parts: Vec<&str> = pattern.trim().split('/').collect();
        let [host, namespace, type_] = parts.as_slice() else {
            return Err(bad("does not have three parts"));
        };
        if [host, namespace, type_].iter().any(|p| p.is_empty()) {
            return Err(bad("has an empty part"));
        }
        if host.contains('*') {
            // A wildcard host would let a request name any server on the network.
            return Err(bad("has a * in its host: name each upstream registry"));
        }
        let host = Hostname::parse(host).map_err(|e| bad(&format!("has a bad host ({e})")))?;
        Ok(Rule {
            host: host.as_str().to_owned(),
            namespace: namespace.to_ascii_lowercase(),
            type_: type_.to_ascii_lowercase(),
        })
    }

    /// True when the rule allows `host/provider`.
    pub fn allows(&self, host: &Hostname, provider: &ProviderAddress) -> bool {
        self.host == host.as_str()
            && glob::matches(&self.namespace, provider.namespace.as_str())
            && glob::matches(&self.type_, provider.type_.as_str())
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.host, self.namespace, self.type_)
    }
}

/// The allow-list: a provider is fetched from upstream when any rule allows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules(Vec<Rule>);

impl Rules {
    /// Parses each pattern; the first bad one is the error.
    pub fn parse<S: AsRef<str>>(patterns: &[S]) -> Result<Rules, String> {
        patterns
            .iter()
            .filter(|p| !p.as_ref().trim().is_empty())
            .map(|p| Rule::parse(p.as_ref()))
            .collect::<Result<Vec<_>, _>>()
            .map(Rules)
    }

    /// True when some rule allows `host/provider`.
    pub fn allows(&self, host: &Hostname, provider: &ProviderAddress) -> bool {
        self.0.iter().any(|r| r.allows(host, provider))
    }

    /// The providers rules name without a wildcard.
    pub fn exact(&self) -> impl Iterator<Item = super::UpstreamProvider> + '_ {
        self.0.iter().filter_map(|r| {
            if r.namespace.contains('*') || r.type_.contains('*') {
                return None;
            }
            Some(super::UpstreamProvider {
                host: Hostname::parse(&r.host).ok()?,
                provider: ProviderAddress::parse(&r.namespace, &r.type_).ok()?,
            })
        })
    }

    /// True when nothing is allowed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The rules, as configured.
    pub fn iter(&self) -> impl Iterator<Item = &Rule> {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(rules: &Rules, address: &str) -> bool {
        let parts: Vec<&str> = address.split('/').collect();
        let host = Hostname::parse(parts[0]).unwrap();
        let provider = ProviderAddress::parse(parts[1], parts[2]).unwrap();
        rules.allows(&host, &provider)
    }

    #[test]
    fn patterns_allow_what_they_name_and_nothing_else() {
        let rules = Rules::parse(&[
            "registry.terraform.io/hashicorp/*",
            "Registry.Terraform.io/integrations/github",
        ])
        .unwrap();
        assert!(allows(&rules, "registry.terraform.io/hashicorp/aws"));
        assert!(allows(&rules, "registry.terraform.io/integrations/github"));
        assert!(!allows(&rules, "registry.terraform.io/integrations/gitlab"));
        assert!(!allows(&rules, "registry.terraform.io/hashicorpx/aws"));
        assert!(!allows(&rules, "example.com/hashicorp/aws"));
        assert!(Rules::default().is_empty());
        assert!(!allows(
            &Rules::default(),
            "registry.terraform.io/hashicorp/aws"
        ));
    }

    #[test]
    fn bad_patterns_are_refused_with_the_shape() {
        for bad in [
            "registry.terraform.io/hashicorp",
            "*/hashicorp/aws",
            "a/b/c/d",
            "x//y",
        ] {
            let e = Rules::parse(&[bad]).unwrap_err();
            assert!(e.contains("HOST/NAMESPACE/TYPE"), "{e}");
        }
    }
}
