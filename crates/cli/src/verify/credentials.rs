//! The token Terraform would send to a registry host, found where Terraform finds it:
//!
//! 1. the environment variable `TF_TOKEN_<host>` (dots as `_`, hyphens as `__`; the host as
//!    written, in any case);
//! 2. a `credentials "<host>" { token = "..." }` block of the CLI configuration: the file
//!    `TF_CLI_CONFIG_FILE` names, else `~/.terraformrc`; and, only when
//!    `TF_CLI_CONFIG_FILE` is not set, the `*.tfrc` and `*.tfrc.json` files of
//!    `~/.terraform.d/`, among them `credentials.tfrc.json`, where `terraform login` writes
//!    (a later file's block wins).
//!
//! Credentials helpers are not run. Every file is read bounded; one that does not parse is
//! skipped with a warning, as it gives no token.

use std::path::{Path, PathBuf};

/// The largest CLI configuration file read.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// A token and where it was found, to say which one a registry refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The bearer token.
    pub token: String,
    /// `TF_TOKEN_...` or the file's path.
    pub from: String,
}

/// The token for `host` (lowercase, with its port if any), if any.
pub fn token_for(host: &str) -> Option<Token> {
    let env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let config_file = std::env::var_os("TF_CLI_CONFIG_FILE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    from_env(&env, host).or_else(|| from_files(&files(config_file, home.as_deref()), host))
}

/// `TF_TOKEN_<host>` among `env`, read as Terraform reads the names.
fn from_env(env: &[(String, String)], host: &str) -> Option<Token> {
    env.iter().find_map(|(name, value)| {
        let raw = name.strip_prefix("TF_TOKEN_")?;
        let named = raw.replace("__", "-").replace('_', ".");
        (named.eq_ignore_ascii_case(host) && !value.is_empty()).then(|| Token {
            token: value.clone(),
            from: name.clone(),
        })
    })
}

/// The CLI configuration files Terraform reads, in the order they apply (later wins).
fn files(config_file: Option<PathBuf>, home: Option<&Path>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let explicit = config_file.is_some();
    match config_file {
        Some(file) => files.push(file),
        None => files.extend(home.map(|h| h.join(".terraformrc"))),
    }
    if !explicit {
        if let Some(dir) = home.map(|h| h.join(".terraform.d")) {
            let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                    name.ends_with(".tfrc") || name.ends_with(".tfrc.json")
                })
                .collect();
            found.sort();
            files.extend(found);
        }
    }
    files
}

/// The token of `host` in the last of `files` that has one.
fn from_files(files: &[PathBuf], host: &str) -> Option<Token> {
    files.iter().rev().find_map(|path| {
        let text = read_bounded(path)?;
        let token = match text.trim_start().starts_with('{') {
            true => json_token(&text, host),
            false => hcl_token(&text, host),
        };
        if token.is_none() && text.contains("credentials") {
            tracing::debug!(path = %path.display(), host, "no token for the host in this file");
        }
        token.map(|token| Token {
            token,
            from: path.display().to_string(),
        })
    })
}

fn read_bounded(path: &Path) -> Option<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        tracing::warn!(path = %path.display(), "the CLI configuration file is too large to read; skipped");
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// `{"credentials": {"<host>": {"token": "..."}}}`.
fn json_token(text: &str, host: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let credentials = value.get("credentials")?.as_object()?;
    credentials
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case(host))
        .find_map(|(_, c)| Some(c.get("token")?.as_str()?.to_owned()))
}

/// `credentials "<host>" { token = "..." }`.
fn hcl_token(text: &str, host: &str) -> Option<String> {
    let body: hcl::Body = match hcl::from_str(text) {
        Ok(body) => body,
        Err(e) => {
            tracing::warn!(error = %e, "a CLI configuration file does not parse; skipped");
            return None;
        }
    };
    body.blocks()
        .filter(|b| b.identifier() == "credentials")
        .filter(|b| {
            b.labels()
                .first()
                .is_some_and(|l| l.as_str().eq_ignore_ascii_case(host))
        })
        .find_map(|b| {
            b.body()
                .attributes()
                .find_map(|a| match (a.key(), a.expr()) {
                    ("token", hcl::Expression::String(token)) => Some(token.clone()),
                    _ => None,
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_names_hosts_as_terraform_reads_them() {
        let env = vec![
            ("TF_TOKEN_other_example".to_owned(), "no".to_owned()),
            (
                "TF_TOKEN_tf__registry_Example_com".to_owned(),
                "yes".to_owned(),
            ),
            ("TF_TOKEN_127_0_0_1:8443".to_owned(), "port".to_owned()),
        ];
        let found = from_env(&env, "tf-registry.example.com").unwrap();
        assert_eq!(
            (found.token.as_str(), found.from.as_str()),
            ("yes", "TF_TOKEN_tf__registry_Example_com")
        );
        assert_eq!(from_env(&env, "127.0.0.1:8443").unwrap().token, "port");
        assert_eq!(from_env(&env, "missing.example"), None);
    }

    #[test]
    fn credentials_blocks_and_the_credentials_file_are_read() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join(".terraformrc"),
            "credentials \"registry.example.com\" {\n  token = \"from-rc\"\n}\nplugin_cache_dir = \"/tmp\"\n",
        )
        .unwrap();
        std::fs::create_dir_all(home.path().join(".terraform.d")).unwrap();
        std::fs::write(
            home.path().join(".terraform.d/credentials.tfrc.json"),
            r#"{"credentials": {"Login.Example.com": {"token": "from-login"}}}"#,
        )
        .unwrap();
        let files = files(None, Some(home.path()));
        assert_eq!(
            from_files(&files, "registry.example.com").unwrap().token,
            "from-rc"
        );
        let login = from_files(&files, "login.example.com").unwrap();
        assert_eq!(login.token, "from-login");
        assert!(
            login.from.ends_with("credentials.tfrc.json"),
            "{}",
            login.from
        );
        // With TF_CLI_CONFIG_FILE set, Terraform reads that file and not ~/.terraform.d.
        let config = home.path().join("custom.rc");
        std::fs::write(&config, "this is { not HCL").unwrap();
        let files = super::files(Some(config), Some(home.path()));
        assert_eq!(from_files(&files, "login.example.com"), None);
    }
}
