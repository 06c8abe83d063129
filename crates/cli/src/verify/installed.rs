//! What `terraform init` installed: `.terraform/modules/modules.json`, read bounded and
//! judged as hostile (a `Dir` outside the modules folder is refused, never followed).

use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context};
use serde::Deserialize;

use crate::regular_file::{self, Links};

/// The largest `modules.json` read (a real one is a few hundred bytes per module call).
const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;
/// Most module calls read from it.
const MAX_MODULES: usize = 10_000;

#[derive(Deserialize)]
struct Manifest {
    #[serde(rename = "Modules", default)]
    modules: Vec<Entry>,
}

/// One module call as `modules.json` records it.
#[derive(Debug, Clone, Deserialize)]
pub struct Entry {
    /// `vpc`, or `parent.child` for a call inside a module.
    #[serde(rename = "Key")]
    pub key: String,
    /// The source address, normalised by Terraform.
    #[serde(rename = "Source", default)]
    pub source: String,
    /// The version installed; only registry modules have one.
    #[serde(rename = "Version", default)]
    pub version: Option<String>,
    /// Where Terraform loads the module from, relative to the working directory.
    #[serde(rename = "Dir", default)]
    pub dir: String,
}

impl Entry {
    /// `module.vpc`, `module.parent.module.child`: how Terraform names the call.
    pub fn display(&self) -> String {
        format!("module.{}", self.key.replace('.', ".module."))
    }
}

/// A registry module's address: `host/namespace/name/system`, and the subdirectory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrySource {
    /// Lowercase, with its port if any.
    pub host: String,
    /// `namespace/name/system`.
    pub module: String,
}

/// The module calls of the working directory `dir` (the root module left out), or `None`
/// when Terraform installed no modules. `data_dir` is Terraform's data folder (`.terraform`,
/// or `TF_DATA_DIR`), relative to `dir`.
pub fn read(dir: &Path, data_dir: &Path) -> anyhow::Result<Option<Vec<Entry>>> {
    let data = dir.join(data_dir);
    if !data.is_dir() {
        bail!(
            "{} does not exist: run `terraform init` in {} first",
            data.display(),
            dir.display()
        );
    }
    let path = data.join("modules").join("modules.json");
    // Only a regular file, not through a link, bounded: a FIFO in its place must not hang.
    let bytes = match regular_file::read(&path, MAX_MANIFEST_BYTES, Links::Refuse) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(e).with_context(|| {
                format!("cannot read {}: not one Terraform wrote", path.display())
            })
        }
    };
    let manifest: Manifest = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not Terraform's module manifest", path.display()))?;
    if manifest.modules.len() > MAX_MODULES {
        bail!("{} lists more than {MAX_MODULES} modules", path.display());
    }
    Ok(Some(
        manifest
            .modules
            .into_iter()
            .filter(|m| !m.key.is_empty())
            .collect(),
    ))
}

/// The registry address of a source, when it is one (`host/ns/name/system[//subdir]`;
/// three parts mean the public registry); `None` for git, HTTP, S3, local and other sources.
pub fn registry_source(source: &str) -> Option<RegistrySource> {
    let package = match source.split_once("//") {
        Some((package, _subdir)) => package,
        None => source,
    };
    if package.contains("::") || package.starts_with('.') || package.starts_with('/') {
        return None;
    }
    let parts: Vec<&str> = package.split('/').collect();
    let (host, rest) = match parts.as_slice() {
        [ns, name, system] => ("registry.terraform.io", [*ns, *name, *system]),
        [host, ns, name, system] => (*host, [*ns, *name, *system]),
        _ => return None,
    };
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'))
        && (host.contains('.') || host.contains(':'));
    let [ns, name, system] = rest;
    if !host_ok || tfreg_core::names::ModuleAddress::parse(ns, name, system).is_err() {
        return None;
    }
    Some(RegistrySource {
        host: host.to_ascii_lowercase(),
        module: format!("{ns}/{name}/{system}"),
    })
}

/// The folder a module's package was unpacked into: `<data_dir>/modules/<first segment>`
/// of its `Dir` (a `//subdir` source's `Dir` points inside it). Refuses a `Dir` that is
/// absolute, climbs with `..`, or lies outside the modules folder, and a path through a
/// link: Terraform would load the module from somewhere this command does not hash.
pub fn package_root(dir: &Path, data_dir: &Path, module_dir: &str) -> Result<PathBuf, String> {
    let modules = data_dir.join("modules");
    let given = Path::new(module_dir);
    let mut parts = Vec::new();
    for component in given.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            _ => {
                return Err(format!(
                    "modules.json points it at {module_dir:?}, outside {}: refused, not followed",
                    modules.display()
                ))
            }
        }
    }
    let prefix: Vec<_> = modules
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part),
            _ => None,
        })
        .collect();
    if parts.len() <= prefix.len() || parts[..prefix.len()] != prefix[..] {
        return Err(format!(
            "modules.json points it at {module_dir:?}, outside {}: refused, not followed",
            modules.display()
        ));
    }
    let root = modules.join(parts[prefix.len()]);
    // No folder on the way may be a link (the package folder itself is checked by the hash).
    let mut at = dir.to_path_buf();
    for component in root.components() {
        at.push(component);
        if at == dir.join(&root) {
            break;
        }
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(format!(
                "{} is a symbolic link: refused, not followed",
                at.display()
            ));
        }
    }
    Ok(dir.join(root))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_sources_are_told_from_other_sources() {
        let local = registry_source("127.0.0.1:8443/acme/network/aws").unwrap();
        assert_eq!(local.host, "127.0.0.1:8443");
        assert_eq!(local.module, "acme/network/aws");
        let sub = registry_source("Registry.Example.com/acme/network/aws//modules/vpc").unwrap();
        assert_eq!(sub.host, "registry.example.com");
        assert_eq!(
            registry_source("acme/network/aws").unwrap().host,
            "registry.terraform.io"
        );
        for other in [
            "./modules/vpc",
            "../shared",
            "git::https://example.com/vpc.git?ref=v1.0.0",
            "https://example.com/vpc.zip",
            "s3::https://s3.amazonaws.com/bucket/vpc.zip",
            "github.com/acme/vpc",
            "example.com/acme/vpc/aws/extra",
            "host/acme/network/aws",
        ] {
            assert_eq!(registry_source(other), None, "{other}");
        }
    }

    #[test]
    fn a_dir_outside_the_modules_folder_is_refused() {
        let work = tempfile::tempdir().unwrap();
        let data = Path::new(".terraform");
        std::fs::create_dir_all(work.path().join(".terraform/modules/vpc/sub")).unwrap();
        assert_eq!(
            package_root(work.path(), data, ".terraform/modules/vpc/sub").unwrap(),
            work.path().join(".terraform/modules/vpc")
        );
        for hostile in [
            "/etc",
            "../elsewhere",
            ".terraform/modules/../../x",
            ".terraform/modules",
            ".terraform/providers/x",
            "modules/vpc",
        ] {
            let refused = package_root(work.path(), data, hostile).unwrap_err();
            assert!(refused.contains("refused"), "{hostile}: {refused}");
        }
        // A modules folder that is a link is not followed.
        let other = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(other.path().join("modules/vpc")).unwrap();
        std::fs::create_dir_all(work.path().join("linked")).unwrap();
        std::os::unix::fs::symlink(
            other.path().join("modules"),
            work.path().join("linked/modules"),
        )
        .unwrap();
        let refused =
            package_root(work.path(), Path::new("linked"), "linked/modules/vpc").unwrap_err();
        assert!(refused.contains("symbolic link"), "{refused}");
    }

    #[test]
    fn a_hostile_manifest_is_refused_with_a_reason() {
        let work = tempfile::tempdir().unwrap();
        let data = Path::new(".terraform");
        assert!(read(work.path(), data)
            .unwrap_err()
            .to_string()
            .contains("terraform init"));
        std::fs::create_dir_all(work.path().join(".terraform")).unwrap();
        assert!(read(work.path(), data).unwrap().is_none());
        std::fs::create_dir_all(work.path().join(".terraform/modules")).unwrap();
        let path = work.path().join(".terraform/modules/modules.json");
        std::fs::write(&path, b"{\"Modules\": 7}").unwrap();
        assert!(read(work.path(), data).is_err());
        std::fs::write(&path, vec![b' '; 5 * 1024 * 1024]).unwrap();
        let refused = format!("{:#}", read(work.path(), data).unwrap_err());
        assert!(refused.contains("larger than"), "{refused}");
        std::fs::write(
            &path,
            br#"{"Modules":[{"Key":"","Source":"","Dir":"."},{"Key":"a.b","Source":"x/y/z","Version":"1.0.0","Dir":".terraform/modules/a.b"}]}"#,
        )
        .unwrap();
        let entries = read(work.path(), data).unwrap().unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].display(), "module.a.module.b");
    }

    #[test]
    fn a_fifo_or_a_link_named_modules_json_is_refused_at_once() {
        let work = tempfile::tempdir().unwrap();
        let modules = work.path().join(".terraform/modules");
        std::fs::create_dir_all(&modules).unwrap();
        let path = modules.join("modules.json");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let refused = |work: std::path::PathBuf| {
            let (done, result) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = done.send(read(&work, Path::new(".terraform")).map(|_| ()));
            });
            let error = result
                .recv_timeout(std::time::Duration::from_secs(10))
                .expect("reading modules.json did not return within 10 s")
                .unwrap_err();
            format!("{error:#}")
        };
        let fifo = refused(work.path().to_path_buf());
        assert!(fifo.contains("not a regular file"), "{fifo}");
        // A link is not followed, even to a well-formed manifest.
        std::fs::remove_file(&path).unwrap();
        let elsewhere = work.path().join("elsewhere.json");
        std::fs::write(&elsewhere, br#"{"Modules":[]}"#).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        let link = refused(work.path().to_path_buf());
        assert!(link.contains("symbolic link"), "{link}");
    }
}
