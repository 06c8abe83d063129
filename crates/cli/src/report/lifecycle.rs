//! Deprecations and yank records in the status document: each module's and provider's
//! notices read from its records, judged against what is served (a yank record of a served
//! version is a problem), and their text section. Refused notice files are problem records
//! like any refused file.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use tfreg_core::layout::NoticeTarget;
use tfreg_core::lifecycle::NoticeKind;
use tfreg_core::store::{MetadataStore, Record};
use tfreg_core::text::for_terminal as t;
use tfreg_core::StoreError;

use super::doc::{Problem, StatusDoc};

/// What a yank record beside a served version says: it is no longer a withdrawal.
pub const YANK_BESIDE_SERVED: &str =
    "a yank record beside a served version: delete it, or the version's files";

/// A deprecation or yank record, as the status document lists it. Text from the publisher:
/// printed escaped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoticeStatus {
    /// `module` or `provider`.
    pub kind: String,
    pub address: String,
    pub version: String,
    /// The notice file.
    pub key: String,
    pub reason: String,
    pub replacement: Option<String>,
    pub retire_on: Option<String>,
    pub by: Option<String>,
    pub at: Option<String>,
}

/// Adds the notices of one module's or provider's partition to `doc`: deprecations of
/// served versions, yank records of versions not served, and a problem for each yank record
/// of a served version.
pub async fn add_notices(
    doc: &mut StatusDoc,
    metadata: &dyn MetadataStore,
    partition: &str,
    served: &BTreeSet<String>,
) -> Result<(), StoreError> {
    for record in metadata.query(partition).await? {
        let Record::Notice(n) = record else { continue };
        let (kind, address) = match &n.target {
            NoticeTarget::Module { address } => ("module", address.to_string()),
            NoticeTarget::Provider { provider } => ("provider", provider.to_string()),
        };
        let version = n.version.to_string();
        let is_served = served.contains(&version);
        let status = NoticeStatus {
            kind: kind.to_owned(),
            address,
            version,
            key: n.key.clone(),
            reason: n.notice.reason,
            replacement: n.notice.replacement.map(|v| v.to_string()),
            retire_on: n.notice.retire_on,
            by: n.notice.by,
            at: n.notice.at,
        };
        match (n.kind, is_served) {
            (NoticeKind::Deprecation, true) => doc.deprecated.push(status),
            // A deprecation of a version not served has nothing to mark.
            (NoticeKind::Deprecation, false) => {}
            (NoticeKind::Yank, false) => doc.withdrawn.push(status),
            (NoticeKind::Yank, true) => {
                doc.problems
                    .push(Problem::from_record(tfreg_core::store::ProblemRecord {
                        key: n.key,
                        problem: YANK_BESIDE_SERVED.to_owned(),
                    }))
            }
        }
    }
    Ok(())
}

/// The text section: deprecated and withdrawn versions, every value escaped.
pub fn text(out: &mut String, doc: &StatusDoc) -> std::fmt::Result {
    if doc.deprecated.is_empty() && doc.withdrawn.is_empty() {
        return Ok(());
    }
    if !doc.deprecated.is_empty() {
        writeln!(out, "\nDeprecated (still served):")?;
    }
    for d in &doc.deprecated {
        writeln!(
            out,
            "  {} {} {}: {}",
            d.kind,
            t(&d.address),
            t(&d.version),
            t(&d.reason)
        )?;
        let mut more = vec![];
        if let Some(replacement) = &d.replacement {
            more.push(format!("use {} instead", t(replacement)));
        }
        if let Some(day) = &d.retire_on {
            more.push(format!("to be withdrawn on {}", t(day)));
        }
        if let Some(who) = by_at(d) {
            more.push(who);
        }
        if !more.is_empty() {
            writeln!(out, "    {}", more.join("; "))?;
        }
    }
    if !doc.withdrawn.is_empty() {
        writeln!(out, "\nWithdrawn (yanked, with a yank record):")?;
    }
    for w in &doc.withdrawn {
        writeln!(
            out,
            "  {} {} {}: {}",
            w.kind,
            t(&w.address),
            t(&w.version),
            t(&w.reason)
        )?;
        if let Some(who) = by_at(w) {
            writeln!(out, "    {who}")?;
        }
    }
    Ok(())
}

/// "by WHO on WHEN", as far as the notice says.
fn by_at(n: &NoticeStatus) -> Option<String> {
    match (&n.by, &n.at) {
        (Some(by), Some(at)) => Some(format!("by {} on {}", t(by), t(at))),
        (Some(by), None) => Some(format!("by {}", t(by))),
        (None, Some(at)) => Some(format!("on {}", t(at))),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfreg_core::lifecycle::Notice;
    use tfreg_core::store::{partition, NoticeRecord};
    use tfreg_core::{ModuleAddress, Version};

    #[tokio::test]
    async fn a_yank_record_beside_a_served_version_is_a_problem_and_others_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        let store = tfreg_local::metadata::LocalMetadataStore::open(dir.path(), false).unwrap();
        let address = ModuleAddress::parse("acme", "network", "aws").unwrap();
        let notice = |version: &str, kind: NoticeKind| {
            let key = format!("modules/acme/network/aws/{version}{}", kind.module_suffix());
            Record::Notice(NoticeRecord {
                target: NoticeTarget::Module {
                    address: address.clone(),
                },
                version: Version::parse(version).unwrap(),
                kind,
                key,
                revision: "r".into(),
                notice: Notice {
                    reason: format!("reason of {version}"),
                    replacement: None,
                    retire_on: None,
                    by: Some("alice".into()),
                    at: None,
                },
            })
        };
        // Given a deprecation of a served version, a yank record of a version not served,
        // and one of a served version,
        for record in [
            notice("1.1.0", NoticeKind::Deprecation),
            notice("1.0.0", NoticeKind::Yank),
            notice("1.2.0", NoticeKind::Yank),
        ] {
            store.put(record).await.unwrap();
        }
        let served = BTreeSet::from(["1.1.0".to_owned(), "1.2.0".to_owned()]);
        let mut doc = StatusDoc::default();
        add_notices(&mut doc, &store, &partition::module(&address), &served)
            .await
            .unwrap();
        // then each is where it belongs.
        assert_eq!(doc.deprecated.len(), 1);
        assert_eq!(doc.deprecated[0].version, "1.1.0");
        assert_eq!(doc.deprecated[0].reason, "reason of 1.1.0");
        assert_eq!(doc.withdrawn.len(), 1);
        assert_eq!(doc.withdrawn[0].version, "1.0.0");
        assert_eq!(doc.withdrawn[0].by.as_deref(), Some("alice"));
        assert_eq!(doc.problems.len(), 1);
        assert_eq!(
            doc.problems[0].key,
            "modules/acme/network/aws/1.2.0_yank.json"
        );
        assert_eq!(doc.problems[0].reason, YANK_BESIDE_SERVED);
        assert_eq!(doc.problems[0].version.as_deref(), Some("1.2.0"));
    }

    #[test]
    fn notices_print_escaped_with_what_they_say() {
        let doc = StatusDoc {
            deprecated: vec![NoticeStatus {
                kind: "module".into(),
                address: "acme/network/aws".into(),
                version: "1.0.0".into(),
                key: "modules/acme/network/aws/1.0.0_deprecation.json".into(),
                reason: "CVE \u{1b}[31mred".into(),
                replacement: Some("1.1.0".into()),
                retire_on: Some("2027-03-31".into()),
                by: Some("alice".into()),
                at: None,
            }],
            withdrawn: vec![NoticeStatus {
                kind: "provider".into(),
                address: "acme/widget".into(),
                version: "2.0.0".into(),
                key: "providers/acme/widget/2.0.0/yank.json".into(),
                reason: "leaked a key".into(),
                by: Some("bob".into()),
                at: Some("2026-11-28T10:00:00Z".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut out = String::new();
        text(&mut out, &doc).unwrap();
        assert!(!out.contains('\u{1b}'), "{out}");
        assert!(out.contains("module acme/network/aws 1.0.0: CVE "), "{out}");
        assert!(
            out.contains("use 1.1.0 instead; to be withdrawn on 2027-03-31; by alice"),
            "{out}"
        );
        assert!(
            out.contains(
                "provider acme/widget 2.0.0: leaked a key\n    by bob on 2026-11-28T10:00:00Z"
            ),
            "{out}"
        );
    }
}
