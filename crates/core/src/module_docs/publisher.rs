//! The publisher's metadata of a module version: a small JSON sidecar beside the archive,
//! `modules/<ns>/<name>/<system>/<version>.json`, holding
//! `{"source": "https://...", "description": "..."}` (both optional).

use serde::{Deserialize, Serialize};

/// The largest sidecar read.
pub const MAX_SIDECAR_BYTES: usize = 16 * 1024;
/// The longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1000;
/// The longest source URL, in bytes.
pub const MAX_SOURCE_BYTES: usize = 2048;

/// What a publisher says of a module version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublisherMetadata {
    /// The module's repository: an `http(s)://` URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// One line about the module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl PublisherMetadata {
    /// Parses and checks a sidecar's bytes; the error is the reason a publisher reads.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() > MAX_SIDECAR_BYTES {
            return Err(format!(
                "the metadata file is larger than {MAX_SIDECAR_BYTES} bytes"
            ));
        }
        let metadata: PublisherMetadata = serde_json::from_slice(bytes).map_err(|e| {
            format!(
                "the metadata file is not {{\"source\": \"https://...\", \"description\": \"...\"}}: {e}"
            )
        })?;
        metadata.check()?;
        Ok(metadata)
    }

    /// Checks both fields: what `parse` and `tfreg publish --source/--description` apply.
    pub fn check(&self) -> Result<(), String> {
        if let Some(source) = &self.source {
            check_source(source)?;
        }
        if let Some(description) = &self.description {
            check_description(description)?;
        }
        Ok(())
    }
}

/// An `http://` or `https://` URL with a host, without spaces or control characters.
pub fn check_source(source: &str) -> Result<(), String> {
    let rest = source
        .strip_prefix("https://")
        .or_else(|| source.strip_prefix("http://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or_default());
    let ok = source.len() <= MAX_SOURCE_BYTES
        && host.is_some_and(|h| !h.is_empty())
        && !source.chars().any(|c| c.is_whitespace() || c.is_control());
    match ok {
        true => Ok(()),
        false => Err(format!(
            "the source {:?} is not an http(s) URL of at most {MAX_SOURCE_BYTES} bytes",
            shown(source)
        )),
    }
}

/// One line of at most [`MAX_DESCRIPTION_CHARS`] characters.
pub fn check_description(description: &str) -> Result<(), String> {
    if description.chars().any(char::is_control) {
        return Err("the description must be one line, without control characters".into());
    }
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "the description is longer than {MAX_DESCRIPTION_CHARS} characters"
        ));
    }
    Ok(())
}

fn shown(text: &str) -> String {
    text.chars().take(100).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sidecars_are_checked() {
        let good = br#"{"source": "https://git.example.com/net/vpc", "description": "A VPC."}"#;
        let parsed = PublisherMetadata::parse(good).unwrap();
        assert_eq!(
            parsed.source.as_deref(),
            Some("https://git.example.com/net/vpc")
        );
        assert_eq!(
            PublisherMetadata::parse(b"{}").unwrap(),
            PublisherMetadata::default()
        );
        for (bad, says) in [
            (&br#"{"source": "ftp://x"}"#[..], "not an http(s) URL"),
            (br#"{"source": "https://"}"#, "not an http(s) URL"),
            (br#"{"source": "https://a b"}"#, "not an http(s) URL"),
            (br#"{"description": "two\nlines"}"#, "one line"),
            (br#"{"sorce": "https://x"}"#, "unknown field"),
            (b"[1]", "is not {"),
        ] {
            let reason = PublisherMetadata::parse(bad).unwrap_err();
            assert!(reason.contains(says), "{reason}");
        }
        let long = format!(r#"{{"description": "{}"}}"#, "x".repeat(1001));
        assert!(PublisherMetadata::parse(long.as_bytes()).is_err());
        let huge = format!(r#"{{"description": "{}"}}"#, " ".repeat(MAX_SIDECAR_BYTES));
        assert!(PublisherMetadata::parse(huge.as_bytes())
            .unwrap_err()
            .contains("larger"));
    }
}
