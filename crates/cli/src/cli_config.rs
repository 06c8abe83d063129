//! What Terraform's CLI configuration says about a registry host, read where Terraform reads
//! it, for the commands that talk to registries as Terraform would (`tfreg verify`, `tfreg
//! lock`): one code path for both.
//!
//! The token Terraform would send to a host:
//!
//! 1. the environment variable `TF_TOKEN_<host>` (dots as `_`, hyphens as `__`; the host as
//!    written, in any case);
//! 2. a `credentials "<host>" { token = "..." }` block of the CLI configuration files.
//!
//! The services a `host "<host>" { services = { "modules.v1" = "..." } }` block gives a host,
//! which Terraform uses instead of asking the host's service discovery.
//!
//! The files, in the order they apply (a later file's block for the same host wins): the file
//! `TF_CLI_CONFIG_FILE` names, else `~/.terraformrc`; and, only when `TF_CLI_CONFIG_FILE` is
//! not set, the `*.tfrc` and `*.tfrc.json` files of `~/.terraform.d/`, among them
//! `credentials.tfrc.json`, where `terraform login` writes.
//!
//! Credentials helpers are not run. Every file is read once, bounded and only when it is a
//! regular file (a link to one is followed, as dotfile managers make them); one that cannot
//! be read or does not parse is skipped with a warning, as it gives nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::regular_file::{self, Links};

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

/// The CLI configuration as Terraform would read it in this environment.
#[derive(Debug, Default)]
pub struct CliConfig {
    /// The `TF_TOKEN_*` variables.
    env: Vec<(String, String)>,
    /// Each file read, in the order they apply.
    files: Vec<FileConfig>,
}

/// What one file says.
#[derive(Debug, Default)]
struct FileConfig {
    path: String,
    /// `credentials` blocks: host and token.
    credentials: Vec<(String, String)>,
    /// `host` blocks: host and its services (service id to URL).
    hosts: Vec<(String, BTreeMap<String, String>)>,
}

impl CliConfig {
    /// Reads this process's environment and the files Terraform would read.
    pub fn load() -> Self {
        let env = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(k, _)| k.starts_with("TF_TOKEN_"))
            .collect();
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let config_file = std::env::var_os("TF_CLI_CONFIG_FILE")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        Self::from_parts(env, &files(config_file, home.as_deref()))
    }

    fn from_parts(env: Vec<(String, String)>, files: &[PathBuf]) -> Self {
        let files = files.iter().filter_map(|path| parse_file(path)).collect();
        Self { env, files }
    }

    /// The token for `host` (with its port if any), if any.
    pub fn token_for(&self, host: &str) -> Option<Token> {
        from_env(&self.env, host).or_else(|| {
            self.files.iter().rev().find_map(|file| {
                let (_, token) = file
                    .credentials
                    .iter()
                    .rev()
                    .find(|(h, _)| h.eq_ignore_ascii_case(host))?;
                Some(Token {
                    token: token.clone(),
                    from: file.path.clone(),
                })
            })
        })
    }

    /// The URL a `host` block gives `host` for `service` (`modules.v1`), if one does.
    pub fn service_of(&self, host: &str, service: &str) -> Option<String> {
        let (_, services) = self.files.iter().rev().find_map(|file| {
            file.hosts
                .iter()
                .rev()
                .find(|(h, _)| h.eq_ignore_ascii_case(host))
        })?;
        services.get(service).cloned()
    }
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

/// The `credentials` and `host` blocks of one file; `None` when it cannot be read or parsed.
fn parse_file(path: &Path) -> Option<FileConfig> {
    let bytes = match regular_file::read(path, MAX_CONFIG_BYTES, Links::Follow) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(error = %e, "a CLI configuration file cannot be read; skipped");
            return None;
        }
    };
    let text = String::from_utf8(bytes).ok()?;
    let mut file = match text.trim_start().starts_with('{') {
        true => parse_json(&text)?,
        false => parse_hcl(&text)?,
    };
    file.path = path.display().to_string();
    Some(file)
}

/// `{"credentials": {"<host>": {"token": "..."}}, "host": {"<host>": {"services": {...}}}}`.
fn parse_json(text: &str) -> Option<FileConfig> {
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => {
            tracing::warn!(error = %e, "a CLI configuration file does not parse; skipped");
            return None;
        }
    };
    let object = |key: &str| {
        value
            .get(key)
            .and_then(|v| v.as_object())
            .into_iter()
            .flatten()
    };
    let credentials = object("credentials")
        .filter_map(|(host, c)| Some((host.clone(), c.get("token")?.as_str()?.to_owned())))
        .collect();
    let hosts = object("host")
        .filter_map(|(host, h)| {
            let services = h.get("services")?.as_object()?;
            let services = services
                .iter()
                .filter_map(|(id, url)| Some((id.clone(), url.as_str()?.to_owned())))
                .collect();
            Some((host.clone(), services))
        })
        .collect();
    Some(FileConfig {
        credentials,
        hosts,
        ..FileConfig::default()
    })
}

/// `credentials "<host>" { token = "..." }` and `host "<host>" { services = {...} }`.
fn parse_hcl(text: &str) -> Option<FileConfig> {
    let body: hcl::Body = match hcl::from_str(text) {
        Ok(body) => body,
        Err(e) => {
            tracing::warn!(error = %e, "a CLI configuration file does not parse; skipped");
            return None;
        }
    };
    let labelled = |name: &'static str| {
        body.blocks()
            .filter(move |b| b.identifier() == name)
            .filter_map(|b| Some((b.labels().first()?.as_str().to_owned(), b.body())))
    };
    let credentials = labelled("credentials")
        .filter_map(|(host, block)| {
            block.attributes().find_map(|a| match (a.key(), a.expr()) {
                ("token", hcl::Expression::String(token)) => Some((host.clone(), token.clone())),
                _ => None,
            })
        })
        .collect();
    let hosts = labelled("host")
        .filter_map(|(host, block)| {
            let services = block.attributes().find_map(|a| match (a.key(), a.expr()) {
                ("services", hcl::Expression::Object(services)) => Some(services),
                _ => None,
            })?;
            let services = services
                .iter()
                .filter_map(|(id, url)| {
                    let id = match id {
                        hcl::ObjectKey::Identifier(id) => id.to_string(),
                        hcl::ObjectKey::Expression(hcl::Expression::String(id)) => id.clone(),
                        // An unquoted `modules.v1` (HCL 1 allows it) parses as a traversal.
                        hcl::ObjectKey::Expression(other) => other.to_string(),
                        _ => return None,
                    };
                    match url {
                        hcl::Expression::String(url) => Some((id, url.clone())),
                        _ => None,
                    }
                })
                .collect();
            Some((host, services))
        })
        .collect();
    Some(FileConfig {
        credentials,
        hosts,
        ..FileConfig::default()
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
        let config = CliConfig::from_parts(Vec::new(), &files(None, Some(home.path())));
        assert_eq!(
            config.token_for("registry.example.com").unwrap().token,
            "from-rc"
        );
        let login = config.token_for("login.example.com").unwrap();
        assert_eq!(login.token, "from-login");
        assert!(
            login.from.ends_with("credentials.tfrc.json"),
            "{}",
            login.from
        );
        // With TF_CLI_CONFIG_FILE set, Terraform reads that file and not ~/.terraform.d.
        let custom = home.path().join("custom.rc");
        std::fs::write(&custom, "this is { not HCL").unwrap();
        let config = CliConfig::from_parts(Vec::new(), &files(Some(custom), Some(home.path())));
        assert_eq!(config.token_for("login.example.com"), None);
    }

    #[test]
    fn host_blocks_give_services_in_hcl_and_json_the_later_file_winning() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("a.tfrc");
        std::fs::write(
            &first,
            "host \"Registry.Example.test\" {\n  services = {\n    \"modules.v1\"   = \"https://127.0.0.1:8443/v1/modules/\"\n    providers.v1 = \"https://127.0.0.1:8443/v1/providers/\"\n  }\n}\n",
        )
        .unwrap();
        let second = dir.path().join("b.tfrc.json");
        std::fs::write(
            &second,
            r#"{"host": {"other.example.test": {"services": {"modules.v1": "/m/"}}}}"#,
        )
        .unwrap();
        let config = CliConfig::from_parts(Vec::new(), &[first.clone(), second.clone()]);
        assert_eq!(
            config
                .service_of("registry.example.test", "modules.v1")
                .as_deref(),
            Some("https://127.0.0.1:8443/v1/modules/")
        );
        assert_eq!(
            config
                .service_of("registry.example.test", "providers.v1")
                .as_deref(),
            Some("https://127.0.0.1:8443/v1/providers/")
        );
        assert_eq!(
            config
                .service_of("other.example.test", "modules.v1")
                .as_deref(),
            Some("/m/")
        );
        assert_eq!(
            config.service_of("missing.example.test", "modules.v1"),
            None
        );
        std::fs::write(
            &second,
            r#"{"host": {"registry.example.test": {"services": {"modules.v1": "https://later.example.test/"}}}}"#,
        )
        .unwrap();
        let config = CliConfig::from_parts(Vec::new(), &[first, second]);
        assert_eq!(
            config
                .service_of("registry.example.test", "modules.v1")
                .as_deref(),
            Some("https://later.example.test/")
        );
    }
}
