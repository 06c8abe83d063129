//! The small text files of a provider release: SHA256SUMS and `_manifest.json`.

use std::collections::BTreeMap;

use serde::Deserialize;

/// Largest SHA256SUMS or manifest read (real ones are well under a KiB; a SHA256SUMS is
/// stored whole in one DynamoDB item, which holds 400 KB at most).
pub const MAX_RELEASE_FILE_BYTES: u64 = 256 * 1024;

/// Parses SHA256SUMS as `shasum -a 256` and goreleaser write it: `<64 hex>  <file name>` per
/// line (a `*` before the name marks binary mode and is dropped).
pub fn parse_sums(bytes: &[u8]) -> Result<BTreeMap<String, String>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "SHA256SUMS is not text".to_owned())?;
    let mut entries = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let bad = || {
            format!(
                "SHA256SUMS line {} is not `<sha256>  <file name>`: {line:?}",
                number + 1
            )
        };
        let (hash, name) = line.split_once(char::is_whitespace).ok_or_else(bad)?;
        let name = name.trim_start().trim_start_matches('*');
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) || name.is_empty() {
            return Err(bad());
        }
        entries.insert(name.to_owned(), hash.to_ascii_lowercase());
    }
    if entries.is_empty() {
        return Err("SHA256SUMS lists no files".into());
    }
    Ok(entries)
}

#[derive(Deserialize)]
struct Manifest {
    version: u32,
    metadata: ManifestMetadata,
}

#[derive(Deserialize)]
struct ManifestMetadata {
    protocol_versions: Vec<String>,
}

/// The protocols a release speaks when it has no manifest.
pub fn default_protocols() -> Vec<String> {
    vec!["5.0".to_owned()]
}

/// Parses `_manifest.json` (`{"version":1,"metadata":{"protocol_versions":["6.0"]}}`) into its
/// protocol versions. Refused: other manifest versions, and protocols older than 5.0, which
/// Terraform 0.12 and later cannot use.
pub fn parse_manifest(bytes: &[u8]) -> Result<Vec<String>, String> {
    let manifest: Manifest = serde_json::from_slice(bytes)
        .map_err(|e| format!("the manifest is not {{\"version\":1,\"metadata\":{{\"protocol_versions\":[...]}}}}: {e}"))?;
    if manifest.version != 1 {
        return Err(format!(
            "manifest version {} is not supported (expected 1)",
            manifest.version
        ));
    }
    let protocols = manifest.metadata.protocol_versions;
    if protocols.is_empty() {
        return Err("the manifest lists no protocol_versions".into());
    }
    for protocol in &protocols {
        let (major, minor) = protocol
            .split_once('.')
            .ok_or_else(|| format!("protocol version {protocol:?} is not MAJOR.MINOR"))?;
        // Digits only: `u32::from_str` also takes a sign (`6.+0`), which Terraform does not
        // read as a protocol version.
        let number = |part: &str| {
            part.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| part.parse::<u32>().ok())
                .flatten()
                .ok_or_else(|| format!("protocol version {protocol:?} is not MAJOR.MINOR"))
        };
        let major = number(major)?;
        number(minor)?;
        if major < 5 {
            return Err(format!(
                "protocol version {protocol} is older than 5.0: Terraform 0.12 and later cannot install it"
            ));
        }
    }
    Ok(protocols)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_as_goreleaser_writes_them() {
        let text = format!(
            "{a}  terraform-provider-x_1.0.0_linux_amd64.zip\n{b} *terraform-provider-x_1.0.0_darwin_arm64.zip\r\n\n",
            a = "a".repeat(64),
            b = "B".repeat(64)
        );
        let sums = parse_sums(text.as_bytes()).unwrap();
        assert_eq!(
            sums["terraform-provider-x_1.0.0_linux_amd64.zip"],
            "a".repeat(64)
        );
        assert_eq!(
            sums["terraform-provider-x_1.0.0_darwin_arm64.zip"],
            "b".repeat(64)
        );
        assert!(parse_sums(b"").unwrap_err().contains("no files"));
        assert!(parse_sums(b"abc  file\n").unwrap_err().contains("line 1"));
        assert!(parse_sums(&[0xff]).is_err());
    }

    #[test]
    fn manifests() {
        assert_eq!(
            parse_manifest(br#"{"version":1,"metadata":{"protocol_versions":["6.0"]}}"#).unwrap(),
            ["6.0"]
        );
        assert_eq!(
            parse_manifest(br#"{"version":1,"metadata":{"protocol_versions":["5.0","6.0"]}}"#)
                .unwrap(),
            ["5.0", "6.0"]
        );
        assert!(
            parse_manifest(br#"{"version":1,"metadata":{"protocol_versions":["4.0"]}}"#)
                .unwrap_err()
                .contains("older than 5.0")
        );
        assert!(
            parse_manifest(br#"{"version":2,"metadata":{"protocol_versions":["6.0"]}}"#).is_err()
        );
        assert!(
            parse_manifest(br#"{"version":1,"metadata":{"protocol_versions":["six"]}}"#).is_err()
        );
        assert!(parse_manifest(b"{}").is_err());
    }
}
