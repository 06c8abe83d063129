//! A version's life after it is published: a *deprecation* (still served, with a warning) and
//! a *yank record* (why a withdrawn version was withdrawn, by whom, when). Each is a small JSON
//! file beside the version, put there by `tfreg deprecate` / `tfreg yank` or by hand:
//!
//! ```text
//! modules/<ns>/<name>/<system>/<version>_deprecation.json
//! modules/<ns>/<name>/<system>/<version>_yank.json
//! providers/<ns>/<type>/<version>/deprecation.json
//! providers/<ns>/<type>/<version>/yank.json
//! ```
//!
//! Both names were refused before (`_` is in no version; the provider folder held only the
//! release's files and `docs.zip`), so no published key changes meaning. The file is
//!
//! ```json
//! {"reason": "...", "replacement": "1.3.0", "retire_on": "2027-03-31",
//!  "by": "alice", "at": "2026-11-28T09:00:00Z"}
//! ```
//!
//! with only `reason` required. A notice is what its publisher says: it is checked (size,
//! fields, lengths) but its text is shown escaped wherever it appears, never trusted.

use serde::{Deserialize, Serialize};

use crate::version::Version;

/// The largest notice file read.
pub const MAX_NOTICE_BYTES: usize = 4 * 1024;
/// The longest reason, in characters.
pub const MAX_REASON_CHARS: usize = 1000;
/// The longest `by`, in characters.
pub const MAX_BY_CHARS: usize = 200;

/// Which notice a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeKind {
    /// Still served; users are told to move on.
    Deprecation,
    /// The version's files were deleted (yanked); this records why.
    Yank,
}

impl NoticeKind {
    /// Both kinds.
    pub const ALL: [NoticeKind; 2] = [NoticeKind::Deprecation, NoticeKind::Yank];

    /// The suffix after a module version (`1.2.0_deprecation.json`).
    pub fn module_suffix(self) -> &'static str {
        match self {
            NoticeKind::Deprecation => "_deprecation.json",
            NoticeKind::Yank => "_yank.json",
        }
    }

    /// The file name inside a provider version's folder.
    pub fn provider_file(self) -> &'static str {
        match self {
            NoticeKind::Deprecation => "deprecation.json",
            NoticeKind::Yank => "yank.json",
        }
    }

    /// "deprecation" or "yank record", for messages.
    pub fn noun(self) -> &'static str {
        match self {
            NoticeKind::Deprecation => "deprecation",
            NoticeKind::Yank => "yank record",
        }
    }
}

/// What a deprecation or yank file says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Notice {
    /// Why; shown to users, escaped.
    pub reason: String,
    /// The version to use instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<Version>,
    /// The day (`YYYY-MM-DD`) a deprecated version is planned to be withdrawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retire_on: Option<String>,
    /// Who wrote it (what `tfreg deprecate`/`yank` was told, or the local user name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// When it was written, RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

impl Notice {
    /// Parses and checks a notice file's bytes; the error is the reason a publisher reads.
    pub fn parse(kind: NoticeKind, bytes: &[u8]) -> Result<Self, String> {
        let noun = kind.noun();
        if bytes.len() > MAX_NOTICE_BYTES {
            return Err(format!(
                "the {noun} file is larger than {MAX_NOTICE_BYTES} bytes"
            ));
        }
        let notice: Notice = serde_json::from_slice(bytes).map_err(|e| {
            format!(
                "the {noun} file is not {{\"reason\": \"...\", \"replacement\": \"VERSION\", \
                 \"retire_on\": \"YYYY-MM-DD\", \"by\": \"...\", \"at\": \"RFC 3339 time\"}} \
                 (only reason required): {e}"
            )
        })?;
        notice.check(kind)?;
        Ok(notice)
    }

    /// Checks every field: what `parse` and the CLI's flags apply.
    pub fn check(&self, kind: NoticeKind) -> Result<(), String> {
        if self.reason.trim().is_empty() {
            return Err(format!("the {} has an empty reason", kind.noun()));
        }
        if self.reason.chars().count() > MAX_REASON_CHARS {
            return Err(format!(
                "the reason is longer than {MAX_REASON_CHARS} characters"
            ));
        }
        if let Some(by) = &self.by {
            if by.chars().count() > MAX_BY_CHARS || by.chars().any(char::is_control) {
                return Err(format!(
                    "\"by\" must be one line of at most {MAX_BY_CHARS} characters"
                ));
            }
        }
        if let Some(day) = &self.retire_on {
            if kind == NoticeKind::Yank {
                return Err(
                    "a yank record has no retire_on: the version is already withdrawn".into(),
                );
            }
            check_day(day)?;
        }
        if let Some(at) = &self.at {
            humantime::parse_rfc3339(at).map_err(|_| {
                format!(
                    "\"at\" {:?} is not an RFC 3339 UTC time like 2026-11-28T09:00:00Z",
                    crate::text::cap(at.clone(), 40)
                )
            })?;
        }
        Ok(())
    }

    /// The file's bytes (pretty JSON with a final newline), as the CLI writes it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("a notice serialises");
        bytes.push(b'\n');
        bytes
    }
}

/// `YYYY-MM-DD`, a real day.
pub fn check_day(day: &str) -> Result<(), String> {
    let shaped = day.len() == 10
        && day.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    if shaped && humantime::parse_rfc3339(&format!("{day}T00:00:00Z")).is_ok() {
        return Ok(());
    }
    Err(format!(
        "{:?} is not a day like 2027-03-31",
        crate::text::cap(day.to_owned(), 40)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_notice_parses_and_round_trips() {
        let bytes = br#"{"reason": "CVE-2026-1 in the NAT rules", "replacement": "1.3.0",
            "retire_on": "2027-03-31", "by": "alice", "at": "2026-11-28T09:00:00Z"}"#;
        let notice = Notice::parse(NoticeKind::Deprecation, bytes).unwrap();
        assert_eq!(notice.replacement.as_ref().unwrap().to_string(), "1.3.0");
        let again = Notice::parse(NoticeKind::Deprecation, &notice.to_bytes()).unwrap();
        assert_eq!(again, notice);
    }

    #[test]
    fn bad_notices_are_refused_with_a_reason() {
        let cases: [(&[u8], &str); 8] = [
            (b"{}", "missing field `reason`"),
            (br#"{"reason": "  "}"#, "empty reason"),
            (br#"{"reason": "x", "extra": 1}"#, "unknown field"),
            (br#"{"reason": "x", "replacement": "v1"}"#, "is not"),
            (
                br#"{"reason": "x", "retire_on": "2027-02-30"}"#,
                "not a day",
            ),
            (br#"{"reason": "x", "at": "yesterday"}"#, "RFC 3339"),
            (br#"{"reason": "x", "by": "a\nb"}"#, "one line"),
            (b"not json", "is not {"),
        ];
        for (bytes, expected) in cases {
            let err = Notice::parse(NoticeKind::Deprecation, bytes).unwrap_err();
            assert!(err.contains(expected), "{err:?} lacks {expected:?}");
        }
        let long = format!(r#"{{"reason": "{}"}}"#, "x".repeat(MAX_NOTICE_BYTES));
        let err = Notice::parse(NoticeKind::Yank, long.as_bytes()).unwrap_err();
        assert!(err.contains("larger than 4096 bytes"), "{err}");
        let err = Notice::parse(
            NoticeKind::Yank,
            br#"{"reason": "x", "retire_on": "2027-01-01"}"#,
        )
        .unwrap_err();
        assert!(err.contains("no retire_on"), "{err}");
    }

    #[test]
    fn html_and_control_characters_in_a_reason_are_kept_to_be_escaped_where_shown() {
        let notice = Notice::parse(
            NoticeKind::Yank,
            br#"{"reason": "<script>x</script>\u001b[31m"}"#,
        )
        .unwrap();
        assert_eq!(notice.reason, "<script>x</script>\u{1b}[31m");
    }
}
