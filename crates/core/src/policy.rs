//! A namespace's policy file, `keys/<namespace>/policy.json` (docs/module-signing.md): what
//! the namespace requires of what is published in it. Read from outside, so parsed strictly:
//! bounded in size, unknown fields refused, every publisher pattern checked.

use serde::Deserialize;

/// The largest policy file read (a real one is a few hundred bytes).
pub const MAX_POLICY_BYTES: u64 = 64 * 1024;
/// The policy file's name beside the namespace's keys.
pub const POLICY_FILE: &str = "policy.json";
/// At most this many publisher patterns.
pub const MAX_PUBLISHERS: usize = 256;
/// At most this many bytes in one publisher pattern (IAM principal IDs are far shorter).
pub const MAX_PUBLISHER_LEN: usize = 256;

/// What a namespace requires of its publications. The default (no policy file) requires
/// nothing: unsigned modules are served and anyone who can write may publish.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamespacePolicy {
    /// Module versions without a verified signature (`<archive>.sig`) are refused.
    #[serde(default)]
    pub require_signed_modules: bool,
    /// The uploaders (`AWS:<principal id>`, `*` wildcards) whose files are accepted; `None`:
    /// anyone's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_publishers: Option<Vec<String>>,
}

impl NamespacePolicy {
    /// The reading applied while the namespace's policy file is refused (or two files claim
    /// the namespace), given the last policy the file held that was not (`None`: never one):
    /// a broken file must not silently stop what the namespace required. Unsigned modules
    /// are refused whatever the last policy said (the broken file may have meant to require
    /// signatures); publishers are restricted as the last good policy restricted them (a
    /// typo never unpublishes what its publishers were allowed to publish, nor lets others
    /// in).
    pub fn strict(last_good: Option<&NamespacePolicy>) -> Self {
        Self {
            require_signed_modules: true,
            allowed_publishers: last_good.and_then(|p| p.allowed_publishers.clone()),
        }
    }

    /// Reads a policy file, or says why it is refused.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() as u64 > MAX_POLICY_BYTES {
            return Err(format!(
                "{POLICY_FILE} is {} bytes, more than the {MAX_POLICY_BYTES} a policy file may have",
                bytes.len()
            ));
        }
        let text =
            std::str::from_utf8(bytes).map_err(|_| format!("{POLICY_FILE} is not UTF-8 text"))?;
        let not_a_policy = |e: serde_json::Error| {
            format!(
                "{POLICY_FILE} is not a policy: {e} (a JSON object whose fields are require_signed_modules and allowed_publishers)"
            )
        };
        // An object only: serde would also read a struct from a JSON array.
        let object: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(text).map_err(not_a_policy)?;
        let policy: NamespacePolicy =
            serde_json::from_value(serde_json::Value::Object(object)).map_err(not_a_policy)?;
        if let Some(patterns) = &policy.allowed_publishers {
            if patterns.len() > MAX_PUBLISHERS {
                return Err(format!(
                    "{POLICY_FILE} lists {} allowed_publishers, more than the {MAX_PUBLISHERS} allowed",
                    patterns.len()
                ));
            }
            for (index, pattern) in patterns.iter().enumerate() {
                if let Some(problem) = pattern_problem(pattern) {
                    return Err(format!(
                        "{POLICY_FILE} allowed_publishers[{index}] {problem}"
                    ));
                }
            }
        }
        Ok(policy)
    }

    /// Whether a file uploaded by `principal` (`None`: the uploader is not known, as in the
    /// local shape or for an event without one) may publish in the namespace. With a list
    /// of allowed publishers, an unknown uploader is refused.
    pub fn allows_publisher(&self, principal: Option<&str>) -> bool {
        let Some(patterns) = &self.allowed_publishers else {
            return true;
        };
        let Some(principal) = principal else {
            return false;
        };
        patterns
            .iter()
            .any(|pattern| crate::glob::matches(pattern, principal))
    }
}

/// Why a publisher pattern is refused: empty, too long, or holding characters other than
/// printable ASCII (`*` is the only wildcard; everything else matches itself).
fn pattern_problem(pattern: &str) -> Option<String> {
    if pattern.is_empty() {
        return Some("is empty".into());
    }
    if pattern.len() > MAX_PUBLISHER_LEN {
        return Some(format!(
            "is {} bytes long, more than {MAX_PUBLISHER_LEN}",
            pattern.len()
        ));
    }
    if pattern.chars().all(|c| c == '*') {
        return Some("matches every uploader: leave allowed_publishers out to allow anyone".into());
    }
    if let Some(c) = pattern
        .chars()
        .find(|c| !c.is_ascii_graphic() || matches!(c, '?' | '[' | ']'))
    {
        return Some(format!(
            "holds {c:?}: patterns are printable ASCII without spaces, and `*` is the only wildcard"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_policy_reads_and_an_empty_one_requires_nothing() {
        let policy = NamespacePolicy::parse(
            br#"{"require_signed_modules": true, "allowed_publishers": ["AWS:AROAEXAMPLE:ci-*", "AWS:AIDAEXAMPLE"]}"#,
        )
        .unwrap();
        assert!(policy.require_signed_modules);
        assert_eq!(policy.allowed_publishers.as_ref().unwrap().len(), 2);
        assert_eq!(
            NamespacePolicy::parse(b"{}").unwrap(),
            NamespacePolicy::default()
        );
        assert!(!NamespacePolicy::default().require_signed_modules);
    }

    #[test]
    fn bad_files_are_refused_with_reasons() {
        let cases: [(&[u8], &str); 9] = [
            (br#"{"require_signed_module": true}"#, "unknown field"),
            (br#"{"require_signed_modules": "yes"}"#, "invalid type"),
            (b"[]", "not a policy"),
            (b"not json", "not a policy"),
            (b"\xff\xfe", "not UTF-8"),
            (br#"{"allowed_publishers": [""]}"#, "[0] is empty"),
            (
                br#"{"allowed_publishers": ["a", "*"]}"#,
                "[1] matches every",
            ),
            (br#"{"allowed_publishers": ["AWS:A B"]}"#, "holds ' '"),
            (br#"{"allowed_publishers": ["AWS:A?"]}"#, "`*` is the only"),
        ];
        for (bytes, expected) in cases {
            let reason = NamespacePolicy::parse(bytes).unwrap_err();
            assert!(reason.contains(expected), "{bytes:?}: {reason}");
        }
        let big = format!(r#"{{"allowed_publishers": ["{}"]}}"#, "a".repeat(70_000));
        assert!(NamespacePolicy::parse(big.as_bytes())
            .unwrap_err()
            .contains("more than the 65536"));
        let long = format!(r#"{{"allowed_publishers": ["{}"]}}"#, "a".repeat(300));
        assert!(NamespacePolicy::parse(long.as_bytes())
            .unwrap_err()
            .contains("more than 256"));
        let many: Vec<String> = (0..300).map(|i| format!("\"AWS:{i}\"")).collect();
        let many = format!(r#"{{"allowed_publishers": [{}]}}"#, many.join(","));
        assert!(NamespacePolicy::parse(many.as_bytes())
            .unwrap_err()
            .contains("300 allowed_publishers"));
    }

    #[test]
    fn publishers_match_with_star_wildcards_only() {
        let policy = NamespacePolicy::parse(
            br#"{"allowed_publishers": ["AWS:AROAEXAMPLE:ci-*", "AWS:AIDAEXAMPLE"]}"#,
        )
        .unwrap();
        assert!(policy.allows_publisher(Some("AWS:AROAEXAMPLE:ci-1234")));
        assert!(policy.allows_publisher(Some("AWS:AROAEXAMPLE:ci-")));
        assert!(policy.allows_publisher(Some("AWS:AIDAEXAMPLE")));
        assert!(!policy.allows_publisher(Some("AWS:AIDAEXAMPLE2")));
        assert!(!policy.allows_publisher(Some("AWS:AROAEXAMPLE:dev-1")));
        assert!(!policy.allows_publisher(Some("aws:aidaexample")));
        assert!(!policy.allows_publisher(None), "an unknown uploader");
        // Without a list, anyone, known or not.
        assert!(NamespacePolicy::default().allows_publisher(None));
        assert!(NamespacePolicy::default().allows_publisher(Some("AWS:X")));
        // An empty list allows no one.
        let none = NamespacePolicy::parse(br#"{"allowed_publishers": []}"#).unwrap();
        assert!(!none.allows_publisher(Some("AWS:AIDAEXAMPLE")));
    }

    #[test]
    fn the_strict_reading_requires_signatures_and_keeps_the_last_publishers() {
        let strict = NamespacePolicy::strict(None);
        assert!(strict.require_signed_modules);
        assert!(strict.allows_publisher(Some("AWS:AIDAEXAMPLE")));
        let last =
            NamespacePolicy::parse(br#"{"allowed_publishers": ["AWS:AIDAEXAMPLE"]}"#).unwrap();
        let strict = NamespacePolicy::strict(Some(&last));
        assert!(strict.require_signed_modules);
        assert!(strict.allows_publisher(Some("AWS:AIDAEXAMPLE")));
        assert!(!strict.allows_publisher(Some("AWS:AIDAOTHER")));
    }
}
