//! What a namespace policy file would withdraw (`tfreg status NAMESPACE --policy FILE`),
//! before it is published: the served versions of the status document that the policy would
//! refuse, by the rules the indexer applies (docs/module-signing.md): a module version
//! without a verified signature under `require_signed_modules`, and, under
//! `allowed_publishers`, a version with a served file whose uploader is not allowed (or not
//! recorded: a data directory records none). A policy file the registry would refuse is
//! read as the registry reads it while it is refused: strictly.

use serde::Serialize;
use tfreg_core::policy::{NamespacePolicy, POLICY_FILE};

use super::doc::StatusDoc;

/// A served version the policy would withdraw, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Withdrawal {
    /// `module` or `provider`.
    pub kind: String,
    pub address: String,
    pub version: String,
    pub why: String,
}

/// The preview: the policy as the registry would read it, and what it would withdraw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Preview {
    pub namespace: String,
    /// Why the registry would refuse the file (it is then read strictly).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    pub withdrawn: Vec<Withdrawal>,
}

/// What the policy file `bytes` would withdraw of the served versions of `namespace` in
/// `doc` (which reports on that namespace, with its uploaders when they are recorded).
pub fn preview(doc: &StatusDoc, namespace: &str, bytes: &[u8]) -> Preview {
    let (policy, refused) = match NamespacePolicy::parse(bytes) {
        Ok(policy) => (policy, None),
        Err(why) => (NamespacePolicy::strict(None), Some(why)),
    };
    let in_namespace = |address: &str| {
        address
            .split('/')
            .next()
            .is_some_and(|ns| ns.eq_ignore_ascii_case(namespace))
    };
    let uploaders = |kind: &str, address: &str, version: &str| {
        doc.uploads
            .iter()
            .filter(|u| u.kind == kind && u.address == address && u.version == version)
            .map(|u| (u.key.clone(), u.principal.clone()))
            .collect::<Vec<_>>()
    };
    // Why the files' uploaders are not allowed, if one is not.
    let publisher = |kind: &str, address: &str, version: &str| -> Option<String> {
        policy.allowed_publishers.as_ref()?;
        if !doc.uploaders_recorded {
            return Some(
                "its uploader is not recorded (a data directory records none), and allowed_publishers accepts only the uploaders it lists"
                    .into(),
            );
        }
        uploaders(kind, address, version)
            .into_iter()
            .find(|(_, principal)| !policy.allows_publisher(principal.as_deref()))
            .map(|(key, principal)| match principal {
                Some(p) => format!("{key} was uploaded by {p}, which is not among allowed_publishers"),
                None => format!("the uploader of {key} is not recorded, and allowed_publishers accepts only the uploaders it lists"),
            })
    };
    let mut withdrawn = Vec::new();
    let mut withdraw = |kind: &str, address: &str, version: &str, why: String| {
        withdrawn.push(Withdrawal {
            kind: kind.into(),
            address: address.into(),
            version: version.into(),
            why,
        })
    };
    for module in doc.modules.iter().filter(|m| in_namespace(&m.address)) {
        for v in &module.versions {
            let why = match v.signed_by {
                None if policy.require_signed_modules => Some(format!(
                    "not signed: publish {}.sig beside it first (a detached signature by a key under keys/{namespace}/)",
                    v.key
                )),
                _ => publisher("module", &module.address, &v.version),
            };
            if let Some(why) = why {
                withdraw("module", &module.address, &v.version, why);
            }
        }
    }
    for provider in doc.providers.iter().filter(|p| in_namespace(&p.address)) {
        for v in provider.versions.iter().filter(|v| v.served) {
            if let Some(why) = publisher("provider", &provider.address, &v.version) {
                withdraw("provider", &provider.address, &v.version, why);
            }
        }
    }
    Preview {
        namespace: namespace.to_owned(),
        refused,
        withdrawn,
    }
}

impl Preview {
    /// The preview as text, for people; `file` is the policy file as named.
    pub fn text(&self, file: &str) -> String {
        let t = |s: &str| tfreg_core::text::for_terminal(s).into_owned();
        let target = format!("keys/{}/{POLICY_FILE}", self.namespace);
        let mut out = String::new();
        if let Some(why) = &self.refused {
            out.push_str(&format!(
                "The registry would refuse {} as {target}: {}. While it is refused, the namespace is read strictly: every unsigned module version is withdrawn.\n",
                t(file),
                t(why)
            ));
        }
        match self.withdrawn.len() {
            0 => out.push_str(&format!(
                "{} as {target} would withdraw nothing: every served version of {} meets it.\n",
                t(file),
                self.namespace
            )),
            n => {
                out.push_str(&format!(
                    "{} as {target} would withdraw {n} served version{} of {} within seconds of its upload:\n",
                    t(file),
                    if n == 1 { "" } else { "s" },
                    self.namespace
                ));
                for w in &self.withdrawn {
                    out.push_str(&format!(
                        "  {} {} {}: {}\n",
                        w.kind,
                        t(&w.address),
                        t(&w.version),
                        t(&w.why)
                    ));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{ModuleStatus, ModuleVersionStatus};

    fn doc() -> StatusDoc {
        let version = |v: &str, signed: bool| ModuleVersionStatus {
            version: v.into(),
            key: format!("modules/acme/net/aws/{v}.tar.gz"),
            signed_by: signed.then(|| "0105339A1F276BD7".into()),
            ..ModuleVersionStatus::default()
        };
        StatusDoc {
            modules: vec![
                ModuleStatus {
                    address: "acme/net/aws".into(),
                    versions: vec![version("1.0.0", false), version("1.1.0", true)],
                },
                ModuleStatus {
                    address: "other/net/aws".into(),
                    versions: vec![version("1.0.0", false)],
                },
            ],
            ..StatusDoc::default()
        }
    }

    #[test]
    fn a_policy_requiring_signatures_withdraws_the_unsigned_versions_of_its_namespace() {
        let p = preview(&doc(), "acme", br#"{"require_signed_modules": true}"#);
        assert_eq!(p.refused, None);
        let listed: Vec<_> = p
            .withdrawn
            .iter()
            .map(|w| format!("{} {} {}", w.kind, w.address, w.version))
            .collect();
        assert_eq!(listed, ["module acme/net/aws 1.0.0"]);
        assert!(p.text("policy.json").contains(
            "policy.json as keys/acme/policy.json would withdraw 1 served version of acme"
        ));
        // Without the requirement, nothing; a refused file is read strictly.
        let none = preview(&doc(), "acme", br#"{"require_signed_modules": false}"#);
        assert!(none.withdrawn.is_empty());
        assert!(none.text("p.json").contains("would withdraw nothing"));
        let typo = preview(&doc(), "acme", br#"{"require_signed_module": false}"#);
        assert!(typo.refused.is_some());
        assert_eq!(typo.withdrawn.len(), 1);
        assert!(typo
            .text("p.json")
            .contains("The registry would refuse p.json"));
    }

    #[test]
    fn allowed_publishers_withdraw_everything_where_uploaders_are_not_recorded() {
        let p = preview(
            &doc(),
            "acme",
            br#"{"allowed_publishers": ["AWS:AROAEXAMPLE:ci-*"]}"#,
        );
        assert_eq!(p.withdrawn.len(), 2, "{p:?}");
        assert!(p.withdrawn[0].why.contains("not recorded"), "{p:?}");
    }
}
