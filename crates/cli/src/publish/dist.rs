//! Finding a provider release in goreleaser's `dist/`, as its usual Terraform provider
//! configuration leaves it: `terraform-provider-<type>_<version>_<os>_<arch>.zip` per
//! platform, `_SHA256SUMS`, `_SHA256SUMS.sig` and `_manifest.json`. Everything else there
//! (`config.yaml`, `metadata.json`, `artifacts.json`, the unpacked build folders) is left
//! alone. The version comes from the file names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use tfreg_core::{Platform, ProviderAddress, Version};

/// The files of one release.
#[derive(Debug, Default)]
pub struct Release {
    pub packages: BTreeMap<Platform, PathBuf>,
    pub sums: Option<PathBuf>,
    pub signature: Option<PathBuf>,
    pub manifest: Option<PathBuf>,
}

/// What was found in `dist/`.
#[derive(Debug)]
pub struct Found {
    pub version: Version,
    pub release: Release,
    /// Names of entries that are not part of a release (folders end in `/`).
    pub ignored: Vec<String>,
}

/// Finds `provider`'s release in `dist`: the one `version` names, or the only one there.
/// `Err` says why there is none to publish.
pub fn find(
    dist: &Path,
    provider: &ProviderAddress,
    version: Option<&Version>,
) -> Result<Found, FindError> {
    let entries = std::fs::read_dir(dist).map_err(|source| FindError::Io {
        path: dist.to_owned(),
        source,
    })?;
    let prefix = format!("terraform-provider-{}_", provider.type_);
    let mut releases: BTreeMap<Version, Release> = BTreeMap::new();
    let mut ignored = Vec::new();
    let mut other_types = BTreeSet::new();
    let mut bad_versions = BTreeSet::new();
    let mut names: Vec<(String, PathBuf, bool)> = vec![];
    for entry in entries {
        let entry = entry.map_err(|source| FindError::Io {
            path: dist.to_owned(),
            source,
        })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // goreleaser writes regular files; a link to one is taken as the file.
        let is_file = entry.path().is_file();
        names.push((name, entry.path(), is_file));
    }
    names.sort();
    for (name, path, is_file) in names {
        let ours = is_file
            .then(|| strip_prefix_ignore_case(&name, &prefix))
            .flatten()
            .and_then(|rest| rest.split_once('_'));
        let parsed = match ours.map(|(version, rest)| (Version::parse(version), rest)) {
            Some((Ok(version), rest)) => Some((version, rest)),
            Some((Err(e), _)) => {
                bad_versions.insert(format!("{name}: {e}"));
                None
            }
            None => None,
        };
        let Some((found_version, rest)) = parsed else {
            if is_file {
                if let Some(other) = name
                    .strip_prefix("terraform-provider-")
                    .and_then(|r| r.split_once('_'))
                    .map(|(t, _)| t.to_owned())
                {
                    other_types.insert(other);
                }
            }
            ignored.push(if is_file { name } else { format!("{name}/") });
            continue;
        };
        let release = releases.entry(found_version).or_default();
        match rest {
            "SHA256SUMS" => release.sums = Some(path),
            "SHA256SUMS.sig" => release.signature = Some(path),
            "manifest.json" => release.manifest = Some(path),
            _ => {
                let platform = rest
                    .strip_suffix(".zip")
                    .and_then(|p| p.split_once('_'))
                    .and_then(|(os, arch)| Platform::parse(os, arch).ok());
                match platform {
                    Some(platform) => {
                        release.packages.insert(platform, path);
                    }
                    None => ignored.push(name),
                }
            }
        }
    }
    let version = match version {
        Some(v) => v.clone(),
        None => match releases.len() {
            0 if !bad_versions.is_empty() => {
                return Err(FindError::Refused(format!(
                    "{} holds no release of {provider} with a version the registry takes ({})",
                    dist.display(),
                    bad_versions.into_iter().collect::<Vec<_>>().join("; ")
                )))
            }
            0 => {
                return Err(FindError::Refused(match other_types.is_empty() {
                    true => format!(
                        "{} holds no release of {provider}: expected files named {prefix}<version>_...",
                        dist.display()
                    ),
                    false => format!(
                        "{} holds no release of {provider} (files named {prefix}<version>_...), only of {}: is the type right?",
                        dist.display(),
                        other_types.into_iter().collect::<Vec<_>>().join(", ")
                    ),
                }))
            }
            1 => releases.keys().next().cloned().expect("one release"),
            _ => {
                let versions: Vec<String> = releases.keys().map(|v| v.to_string()).collect();
                return Err(FindError::Refused(format!(
                    "{} holds several releases of {provider} ({}): choose one with --version",
                    dist.display(),
                    versions.join(", ")
                )));
            }
        },
    };
    let Some(release) = releases.remove(&version) else {
        return Err(FindError::Refused(format!(
            "{} holds no release {version} of {provider}",
            dist.display()
        )));
    };
    ignored.extend(releases.keys().map(|v| format!("{prefix}{v}_*")));
    let missing: Vec<&str> = [
        (release.packages.is_empty(), "a package (_<os>_<arch>.zip)"),
        (release.sums.is_none(), "_SHA256SUMS"),
        (
            release.signature.is_none(),
            "_SHA256SUMS.sig (goreleaser's `signs` section writes it: a binary detached GPG signature)",
        ),
    ]
    .into_iter()
    .filter_map(|(missing, what)| missing.then_some(what))
    .collect();
    if !missing.is_empty() {
        return Err(FindError::Refused(format!(
            "the release {version} of {provider} in {} lacks {}",
            dist.display(),
            missing.join(", ")
        )));
    }
    Ok(Found {
        version,
        release,
        ignored,
    })
}

fn strip_prefix_ignore_case<'a>(name: &'a str, prefix: &str) -> Option<&'a str> {
    let head = name.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &name[prefix.len()..])
}

#[derive(Debug, thiserror::Error)]
pub enum FindError {
    #[error("{0}")]
    Refused(String),
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            if let Some(folder) = f.strip_suffix('/') {
                std::fs::create_dir_all(dir.path().join(folder)).unwrap();
            } else {
                std::fs::write(dir.path().join(f), b"x").unwrap();
            }
        }
        dir
    }

    fn widget() -> ProviderAddress {
        ProviderAddress::parse("acme", "widget").unwrap()
    }

    #[test]
    fn finds_goreleasers_release_files_and_leaves_the_rest() {
        let d = dist(&[
            "terraform-provider-widget_1.2.0_linux_amd64.zip",
            "terraform-provider-widget_1.2.0_darwin_arm64.zip",
            "terraform-provider-widget_1.2.0_SHA256SUMS",
            "terraform-provider-widget_1.2.0_SHA256SUMS.sig",
            "terraform-provider-widget_1.2.0_manifest.json",
            "config.yaml",
            "metadata.json",
            "artifacts.json",
            "terraform-provider-widget_linux_amd64_v1/",
        ]);
        let found = find(d.path(), &widget(), None).unwrap();
        assert_eq!(found.version.to_string(), "1.2.0");
        let platforms: Vec<String> = found
            .release
            .packages
            .keys()
            .map(|p| p.to_string())
            .collect();
        assert_eq!(platforms, ["darwin_arm64", "linux_amd64"]);
        assert!(found.release.manifest.is_some());
        assert_eq!(
            found.ignored,
            [
                "artifacts.json",
                "config.yaml",
                "metadata.json",
                "terraform-provider-widget_linux_amd64_v1/"
            ]
        );
    }

    #[test]
    fn says_what_is_missing_or_ambiguous() {
        let d = dist(&[
            "terraform-provider-widget_1.0.0_linux_amd64.zip",
            "terraform-provider-widget_1.0.0_SHA256SUMS",
        ]);
        let err = find(d.path(), &widget(), None).unwrap_err().to_string();
        assert!(err.contains("lacks _SHA256SUMS.sig"), "{err}");

        let d = dist(&[
            "terraform-provider-widget_1.0.0_SHA256SUMS",
            "terraform-provider-widget_1.1.0_SHA256SUMS",
        ]);
        let err = find(d.path(), &widget(), None).unwrap_err().to_string();
        assert!(
            err.contains("several releases") && err.contains("1.0.0, 1.1.0"),
            "{err}"
        );

        let d = dist(&["terraform-provider-widget_v1.0.0_SHA256SUMS"]);
        let err = find(d.path(), &widget(), None).unwrap_err().to_string();
        assert!(err.contains("leading 'v'"), "{err}");

        let d = dist(&["terraform-provider-gadget_1.0.0_SHA256SUMS"]);
        let err = find(d.path(), &widget(), None).unwrap_err().to_string();
        assert!(err.contains("only of gadget"), "{err}");
    }
}
