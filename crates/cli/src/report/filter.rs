//! Which part of the registry a status document covers: a namespace, a provider or a
//! module (`tfreg status acme`, `acme/widget`, `acme/network/aws`, `--namespace acme`).

use tfreg_core::{ModuleAddress, ProviderAddress};

use super::Problem;

/// What to report on: `tfreg status NAMESPACE`, `NAMESPACE/TYPE` (a provider) or
/// `NAMESPACE/NAME/SYSTEM` (a module), or `--namespace NS`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    namespace: Option<String>,
    module: Option<ModuleAddress>,
    provider: Option<ProviderAddress>,
}

impl Filter {
    /// Everything.
    pub fn all() -> Filter {
        Filter::default()
    }

    /// From `--namespace` and an address; both must agree when both are given.
    pub fn parse(namespace: Option<&str>, address: Option<&str>) -> Result<Filter, String> {
        let mut filter = Filter::default();
        if let Some(ns) = namespace {
            if ns.is_empty() || ns.contains('/') {
                return Err(format!(
                    "--namespace {ns:?}: expected a namespace, like acme"
                ));
            }
            filter.namespace = Some(ns.to_ascii_lowercase());
        }
        let Some(address) = address else {
            return Ok(filter);
        };
        let parts: Vec<&str> = address.split('/').collect();
        let namespace = match parts.as_slice() {
            [ns] if !ns.is_empty() => ns.to_ascii_lowercase(),
            [ns, type_] => {
                let provider = ProviderAddress::parse(ns, type_)
                    .map_err(|e| format!("{address:?} is not a provider address: {e}"))?;
                let ns = provider.namespace.to_string();
                filter.provider = Some(provider);
                ns
            }
            [ns, name, system] => {
                let module = ModuleAddress::parse(ns, name, system)
                    .map_err(|e| format!("{address:?} is not a module address: {e}"))?;
                let ns = module.namespace.to_string();
                filter.module = Some(module);
                ns
            }
            _ => {
                return Err(format!(
                    "{address:?}: expected NAMESPACE, NAMESPACE/TYPE (a provider) or NAMESPACE/NAME/SYSTEM (a module)"
                ))
            }
        };
        if filter.namespace.as_ref().is_some_and(|ns| *ns != namespace) {
            return Err(format!(
                "{address:?} is not in the namespace given with --namespace"
            ));
        }
        filter.namespace = Some(namespace);
        Ok(filter)
    }

    /// The namespace it is limited to, if any (lowercase).
    pub fn only_namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    fn namespace(&self, namespace: &str) -> bool {
        self.namespace.as_deref().is_none_or(|ns| ns == namespace)
    }

    pub fn module(&self, address: &ModuleAddress) -> bool {
        self.provider.is_none()
            && self.module.as_ref().is_none_or(|m| m == address)
            && self.namespace(address.namespace.as_str())
    }

    pub fn provider(&self, provider: &ProviderAddress) -> bool {
        self.module.is_none()
            && self.provider.as_ref().is_none_or(|p| p == provider)
            && self.namespace(provider.namespace.as_str())
    }

    /// Mirrored providers follow the namespace only (their hostname is another registry's).
    pub(super) fn mirrored(&self, provider: &ProviderAddress) -> bool {
        self.module.is_none()
            && self.provider.is_none()
            && self.namespace(provider.namespace.as_str())
    }

    /// Upstream providers (`host/namespace/type`) follow the namespace only, as mirrored ones.
    pub fn upstream(&self, provider: &str) -> bool {
        let mut parts = provider.split('/').skip(1);
        match (parts.next(), parts.next()) {
            (Some(ns), Some(type_)) => {
                ProviderAddress::parse(ns, type_).is_ok_and(|p| self.mirrored(&p))
            }
            _ => false,
        }
    }

    pub(super) fn problem(&self, problem: &Problem) -> bool {
        if self.namespace.is_none() {
            return true;
        }
        let namespace_ok = problem
            .namespace
            .as_deref()
            .is_some_and(|ns| self.namespace(ns));
        let wanted = match (&self.module, &self.provider) {
            (Some(m), _) => Some(("module", m.to_string())),
            (_, Some(p)) => Some(("provider", p.to_string())),
            _ => None,
        };
        match wanted {
            None => namespace_ok,
            // A key under the namespace (a signing key) concerns its providers too.
            Some((kind, address)) => {
                (problem.kind.as_deref() == Some(kind)
                    && problem.address.as_deref() == Some(address.as_str()))
                    || (kind == "provider"
                        && problem.kind.as_deref() == Some("key")
                        && namespace_ok)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfreg_core::store::ProblemRecord;

    fn problem(key: &str) -> Problem {
        Problem::from_record(ProblemRecord {
            key: key.into(),
            problem: "why".into(),
        })
    }

    #[test]
    fn filters_by_namespace_or_address() {
        let module = ModuleAddress::parse("acme", "network", "aws").unwrap();
        let other = ModuleAddress::parse("globex", "network", "aws").unwrap();
        let provider = ProviderAddress::parse("acme", "widget").unwrap();

        let ns = Filter::parse(Some("ACME"), None).unwrap();
        assert!(ns.module(&module) && !ns.module(&other) && ns.provider(&provider));
        assert!(ns.problem(&problem("keys/acme/ci.asc")));
        assert!(!ns.problem(&problem("keys/globex/ci.asc")));
        assert!(!ns.problem(&problem("README.md")));

        let m = Filter::parse(None, Some("acme/network/aws")).unwrap();
        assert!(m.module(&module) && !m.provider(&provider));
        assert!(m.problem(&problem("modules/acme/network/aws/1.0.0.zip")));
        assert!(!m.problem(&problem("modules/acme/dns/aws/1.0.0.zip")));

        let p = Filter::parse(None, Some("acme/widget")).unwrap();
        assert!(p.provider(&provider) && !p.module(&module));
        // The namespace's signing keys concern its providers.
        assert!(p.problem(&problem("keys/acme/ci.asc")));

        assert!(Filter::parse(None, Some("a/b/c/d")).is_err());
        assert!(Filter::parse(Some("globex"), Some("acme/widget")).is_err());
        assert_eq!(Filter::parse(None, None).unwrap(), Filter::all());
    }
}
