//! Secret-shaped files: the one list of file names that usually hold secrets (`.env`, private
//! keys, `.netrc`, cloud credentials), shared by `tfreg publish`, which leaves them out of
//! the archives it packs, and the archive check, which serves an uploaded archive holding
//! them with a warning. A published version never changes and every reader of its namespace
//! can download it, so such a file is a leaked secret for good.

use serde::{Deserialize, Serialize};

/// File name patterns (`*` is any run of characters) of secret-shaped files, matched on the
/// file's name at any depth, ignoring ASCII case: dotenv files, PEM, key and PKCS #12 files,
/// SSH private (and public) keys, `.netrc`/`_netrc`, `.npmrc`, and credentials files (the AWS
/// CLI's, Google's `credentials.json`, ...).
pub const SECRET_SHAPED: &[&str] = &[
    ".env*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    "_netrc",
    ".npmrc",
    "credentials*",
];

/// The most secret-shaped names a record keeps (the rest are counted).
pub const MAX_NAMES_KEPT: usize = 20;

/// True when the file at `path` (`/`-separated; its last segment is its name) is
/// secret-shaped: its name matches one of [`SECRET_SHAPED`]. Terraform configuration
/// (`*.tf`, `*.tf.json`, as in `credentials.tf`) never is: the module needs it.
pub fn is_secret_shaped(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".tf") || lower.ends_with(".tf.json") {
        return false;
    }
    SECRET_SHAPED
        .iter()
        .any(|pattern| glob_matches(pattern, name))
}

/// Secret-shaped names and `--include` patterns: `*` matches any run of characters but `/`,
/// ignoring ASCII case.
pub use crate::glob::matches_path as glob_matches;

/// What a record keeps of an archive's secret-shaped files: the first names (in archive
/// order, at most [`MAX_NAMES_KEPT`]) and how many more there are. Empty when there are
/// none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretShapedFiles {
    /// The first secret-shaped paths, in archive order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Secret-shaped files beyond those named.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl SecretShapedFiles {
    /// What a record keeps of `names`.
    pub fn from_names(names: &[String]) -> Self {
        let kept = names.len().min(MAX_NAMES_KEPT);
        Self {
            names: names[..kept].to_vec(),
            more: names.len() - kept,
        }
    }

    /// True when the archive has no secret-shaped file.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.more == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_shaped_names_at_any_depth_and_in_any_case() {
        for path in [
            ".env",
            ".env.production",
            "keys/server.pem",
            "TLS.KEY",
            "cert.p12",
            "a/b/cert.pfx",
            "id_rsa",
            ".ssh/id_ed25519.pub",
            "id_ecdsa",
            "id_dsa",
            ".netrc",
            "_netrc",
            ".npmrc",
            "credentials",
            ".aws/credentials",
            "Credentials.json",
        ] {
            assert!(is_secret_shaped(path), "{path}");
        }
        for path in [
            "main.tf",
            "credentials.tf",
            "modules/x/credentials.tf.json",
            "README.md",
            "environment.md",
            "keys/README.md",
            "x.pem/README.md",
            "monkey.txt",
            "my.env",
        ] {
            assert!(!is_secret_shaped(path), "{path}");
        }
    }

    #[test]
    fn globs_match_any_run_but_slashes() {
        assert!(glob_matches("*.pub", "id_ed25519.pub"));
        assert!(glob_matches("*", ""));
        assert!(glob_matches("a*b*c", "aXXbYYc"));
        assert!(glob_matches("certs/*.PEM", "certs/ca.pem"));
        assert!(!glob_matches("*.pem", "certs/ca.pem"));
        assert!(!glob_matches("certs/*", "certs/sub/ca.pem"));
        assert!(!glob_matches("a*b", "a/b"));
        assert!(!glob_matches(".env", ".env.local"));
        assert!(glob_matches("é*", "éx"));
    }

    #[test]
    fn records_keep_the_first_names_and_count_the_rest() {
        let names: Vec<String> = (0..25).map(|i| format!("{i}.pem")).collect();
        let kept = SecretShapedFiles::from_names(&names);
        assert_eq!(kept.names.len(), MAX_NAMES_KEPT);
        assert_eq!(kept.more, 5);
        assert!(SecretShapedFiles::from_names(&[]).is_empty());
        assert_eq!(
            serde_json::to_string(&SecretShapedFiles::default()).unwrap(),
            "{}"
        );
    }
}
