//! The lock file `tfreg lock` completes: read as HCL, written back as Terraform writes it,
//! every string quoted as HCL quotes it (never Rust's `{:?}`), and the hashes a mirror may
//! add checked for their form first.

use std::collections::BTreeSet;

use anyhow::{bail, Context};

/// One `provider` block of a lock file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locked {
    /// `registry.example.com/acme/widget`.
    pub address: String,
    /// The locked version.
    pub version: String,
    /// The version constraints, as Terraform recorded them.
    pub constraints: Option<String>,
    /// Every hash recorded.
    pub hashes: BTreeSet<String>,
}

/// The provider blocks of a lock file's text.
pub fn parse(text: &str) -> anyhow::Result<Vec<Locked>> {
    let body: hcl::Body = hcl::from_str(text).context("the lock file is not HCL")?;
    let string = |e: &hcl::Expression| match e {
        hcl::Expression::String(s) => Some(s.clone()),
        _ => None,
    };
    let mut locked = Vec::new();
    for block in body.blocks().filter(|b| b.identifier() == "provider") {
        let Some(address) = block.labels().first().map(|l| l.as_str().to_owned()) else {
            bail!("a provider block of the lock file has no address");
        };
        let mut entry = Locked {
            address,
            version: String::new(),
            constraints: None,
            hashes: BTreeSet::new(),
        };
        for attribute in block.body().attributes() {
            match (attribute.key(), attribute.expr()) {
                ("version", e) => entry.version = string(e).unwrap_or_default(),
                ("constraints", e) => entry.constraints = string(e),
                ("hashes", hcl::Expression::Array(items)) => {
                    entry.hashes.extend(items.iter().filter_map(string));
                }
                _ => {}
            }
        }
        if entry.version.is_empty() {
            bail!("the lock file's block for {} has no version", entry.address);
        }
        locked.push(entry);
    }
    Ok(locked)
}

/// The lock file as Terraform writes it.
pub fn render(locked: &[Locked]) -> String {
    let mut out = String::from(
        "# This file is maintained automatically by \"terraform init\".\n# Manual edits may be lost in future updates.\n",
    );
    for entry in locked {
        out.push_str(&format!("\nprovider {} {{\n", quoted(&entry.address)));
        out.push_str(&format!("  version     = {}\n", quoted(&entry.version)));
        if let Some(constraints) = &entry.constraints {
            out.push_str(&format!("  constraints = {}\n", quoted(constraints)));
        }
        out.push_str("  hashes = [\n");
        for hash in &entry.hashes {
            out.push_str(&format!("    {},\n", quoted(hash)));
        }
        out.push_str("  ]\n}\n");
    }
    out
}

/// `text` as an HCL quoted string: `"` and `\` escaped, control characters as escapes, and
/// `${` and `%{` doubled so that no template sequence is ever written.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '$' | '%' if chars.peek() == Some(&'{') => {
                out.push(c);
                out.push(c);
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Whether `hash` is a hash Terraform writes: `h1:` and the 44 base64 characters of a
/// SHA-256, or `zh:` and its 64 lowercase hex digits.
pub fn well_formed(hash: &str) -> bool {
    if let Some(b64) = hash.strip_prefix("h1:") {
        let (body, pad) = b64.split_at(b64.len().min(43));
        return b64.len() == 44
            && pad == "="
            && body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
    }
    if let Some(hex) = hash.strip_prefix("zh:") {
        return hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_file_reads_back_as_terraform_wrote_it() {
        let text = r#"# This file is maintained automatically by "terraform init".
# Manual edits may be lost in future updates.

provider "registry.upstream.test/acme/widget" {
  version     = "1.0.0"
  constraints = ">= 1.0.0"
  hashes = [
    "h1:abc=",
  ]
}
"#;
        let locked = parse(text).unwrap();
        assert_eq!(locked.len(), 1);
        assert_eq!(locked[0].constraints.as_deref(), Some(">= 1.0.0"));
        assert_eq!(render(&locked), text);
        assert!(parse("provider \"x\" {\n}\n").is_err());
    }

    #[test]
    fn strings_are_written_as_hcl_literals_with_no_template_sequence() {
        let hostile = "a\"b\\c${file(\"/etc/hostname\")}%{ if 1 }\n\u{7}é";
        let locked = vec![Locked {
            address: "registry.example.test/acme/widget".into(),
            version: "1.0.0".into(),
            constraints: Some(hostile.into()),
            hashes: BTreeSet::new(),
        }];
        let text = render(&locked);
        assert!(!text.contains("\\u{"), "{text}");
        assert!(text.contains("$${file"), "{text}");
        // It reads back as the same literal string, not as a template.
        let body: hcl::Body = hcl::from_str(&text).unwrap();
        let block = body.blocks().next().unwrap();
        let constraints = block
            .body()
            .attributes()
            .find(|a| a.key() == "constraints")
            .unwrap();
        let value: hcl::Value =
            hcl::eval::Evaluate::evaluate(constraints.expr(), &hcl::eval::Context::new()).unwrap();
        assert_eq!(value, hcl::Value::from(hostile));
    }

    #[test]
    fn only_hashes_of_terraforms_forms_are_well_formed() {
        let h1 = format!("h1:{}+/=", "A".repeat(41));
        let zh = format!("zh:{}", "0a".repeat(32));
        assert!(well_formed(&h1), "{h1}");
        assert!(well_formed(&zh), "{zh}");
        for bad in [
            "h1:${file(\"/etc/hostname\")}".to_owned(),
            format!("h1:{}", "A".repeat(44)),
            format!("h1:{}==", "A".repeat(42)),
            format!("h1:{}=\n", "A".repeat(43)),
            format!("zh:{}", "0A".repeat(32)),
            format!("zh:{}", "0a".repeat(33)),
            "zh:".to_owned(),
            format!("sha256:{}", "0a".repeat(32)),
            String::new(),
        ] {
            assert!(!well_formed(&bad), "{bad:?}");
        }
    }
}
