//! What an archive's entries add up to, whatever the archive format: the path and link rules,
//! the configuration at the root, the entry count.

use std::collections::{BTreeMap, BTreeSet};

use super::{ArchiveFormat, ModuleArchiveError, ModuleSummary, MAX_NAME_BYTES};

/// One entry, as the format reader saw it.
pub(super) enum Kind {
    File { size: u64 },
    Folder,
    Symlink { target: String },
    HardLink { target: String },
}

/// A link, kept until every entry is known.
struct Link {
    name: String,
    target: String,
    /// Where the target's `..` steps were taken from: if any of these lies at or beneath
    /// another link, where the link ends cannot be told from the archive.
    climbs_from: Vec<String>,
}

/// Everything seen so far.
pub(super) struct Found {
    max_entries: usize,
    entries: usize,
    files: usize,
    file_bytes: u64,
    configuration_files: usize,
    /// Every entry's normalised path, for the checks that need them all.
    paths: Vec<(String, String)>,
    links: BTreeMap<String, Link>,
    /// The first path segment of every entry, but hidden ones.
    top: BTreeSet<String>,
    /// True when some file or link sits at the root (so the root is not one folder).
    root_entries: bool,
    /// Top-level folders that hold configuration themselves.
    configured_folders: BTreeSet<String>,
    /// Secret-shaped files, as shown.
    secret_shaped: Vec<String>,
}

impl Found {
    pub(super) fn new(max_entries: usize) -> Self {
        Self {
            max_entries,
            entries: 0,
            files: 0,
            file_bytes: 0,
            configuration_files: 0,
            paths: Vec::new(),
            links: BTreeMap::new(),
            top: BTreeSet::new(),
            root_entries: false,
            configured_folders: BTreeSet::new(),
            secret_shaped: Vec::new(),
        }
    }

    /// Records one entry named `raw` (as the archive spells it), refusing what is unsafe on
    /// its own. Returns its normalised path (empty for the root itself).
    pub(super) fn add(&mut self, raw: &str, kind: Kind) -> Result<String, ModuleArchiveError> {
        self.entries += 1;
        if self.entries > self.max_entries {
            return Err(ModuleArchiveError::TooManyEntries {
                max: self.max_entries,
            });
        }
        let path = entry_path(raw)?;
        if path.is_empty() {
            return match kind {
                Kind::Folder => Ok(path), // `./`: the root itself
                _ => Err(ModuleArchiveError::BadName {
                    name: shown(raw),
                    why: "names no file",
                }),
            };
        }
        let segments: Vec<&str> = path.split('/').collect();
        match &kind {
            Kind::File { size } => {
                self.files += 1;
                self.file_bytes = self.file_bytes.saturating_add(*size);
                match segments[..] {
                    [name] if is_configuration(name) => self.configuration_files += 1,
                    [folder, name] if is_configuration(name) => {
                        self.configured_folders.insert(folder.to_owned());
                    }
                    _ => {}
                }
                if super::secrets::is_secret_shaped(&path) {
                    self.secret_shaped.push(shown(&path));
                }
            }
            Kind::Folder => {}
            Kind::Symlink { target } => {
                let link = symlink(raw, &segments, target)?;
                self.links.insert(path.clone(), link);
            }
            Kind::HardLink { target } => {
                let link = hard_link(raw, target)?;
                self.links.insert(path.clone(), link);
            }
        }
        // Hidden files and folders (`.DS_Store`, `.git/`) and macOS's `__MACOSX/` do not
        // count when telling whether everything sits under one folder.
        let first = segments[0];
        let ignored = first == "__MACOSX" || is_ignored(first);
        if !ignored {
            self.top.insert(first.to_owned());
            if segments.len() == 1 && !matches!(kind, Kind::Folder) {
                self.root_entries = true;
            }
        }
        self.paths.push((path.clone(), shown(raw)));
        Ok(path)
    }

    /// The files' sizes added up.
    pub(super) fn file_bytes(&self) -> u64 {
        self.file_bytes
    }

    /// The verdict once every entry is known.
    pub(super) fn summary(
        self,
        format: ArchiveFormat,
    ) -> Result<ModuleSummary, ModuleArchiveError> {
        if self.files == 0 && self.links.is_empty() {
            return Err(ModuleArchiveError::Empty);
        }
        for (path, name) in &self.paths {
            if let Some(link) = self.link_at_or_above(parent(path)) {
                return Err(ModuleArchiveError::BeneathLink {
                    name: name.clone(),
                    link: link.name.clone(),
                });
            }
        }
        for link in self.links.values() {
            for from in &link.climbs_from {
                if let Some(through) = self.link_at_or_above(Some(from)) {
                    return Err(ModuleArchiveError::LinkChain {
                        name: link.name.clone(),
                        target: link.target.clone(),
                        through: through.name.clone(),
                    });
                }
            }
        }
        // Even a link within the archive is refused: Terraform 1.11 unpacks a tar link as an
        // empty file and a zip link as a file holding its target's path, so the module
        // installed would not be the one archived.
        if let Some(link) = self.links.values().next() {
            return Err(ModuleArchiveError::LinkInside {
                name: link.name.clone(),
                target: link.target.clone(),
            });
        }
        if self.configuration_files == 0 {
            let mut top = self.top.iter();
            return Err(match (top.next(), top.next(), self.root_entries) {
                (Some(folder), None, false) if self.configured_folders.contains(folder) => {
                    ModuleArchiveError::ArchivedFolder {
                        folder: folder.clone(),
                    }
                }
                _ => ModuleArchiveError::NoConfiguration,
            });
        }
        Ok(ModuleSummary {
            format,
            entries: self.entries,
            files: self.files,
            file_bytes: self.file_bytes,
            configuration_files: self.configuration_files,
            secret_shaped: self.secret_shaped,
            // Set by the caller, which hashed the files as they streamed by.
            h1: String::new(),
        })
    }

    /// The link at `path` or at one of its parent folders, if any.
    fn link_at_or_above(&self, path: Option<&str>) -> Option<&Link> {
        let mut path = path?;
        loop {
            if let Some(link) = self.links.get(path) {
                return Some(link);
            }
            path = parent(path)?;
        }
    }
}

fn parent(path: &str) -> Option<&str> {
    path.rsplit_once('/').map(|(parent, _)| parent)
}

/// An entry's path, normalised (`/`-separated, without empty and `.` segments), or why it is
/// unsafe. Empty for the root itself.
fn entry_path(raw: &str) -> Result<String, ModuleArchiveError> {
    let bad = |why| {
        Err(ModuleArchiveError::BadName {
            name: shown(raw),
            why,
        })
    };
    if raw.len() > MAX_NAME_BYTES {
        return bad("has a path longer than 1024 bytes");
    }
    if raw.chars().any(char::is_control) {
        return bad("has a control character in its path");
    }
    if raw.contains('\\') {
        return bad("has a backslash in its path, which Windows reads as a folder separator");
    }
    if is_absolute(raw) {
        return Err(ModuleArchiveError::AbsolutePath { name: shown(raw) });
    }
    let mut segments = Vec::new();
    for segment in raw.split('/') {
        match segment {
            "" | "." => {}
            ".." => return Err(ModuleArchiveError::ParentPath { name: shown(raw) }),
            s => segments.push(s),
        }
    }
    Ok(segments.join("/"))
}

/// Why `raw` is not a safe entry path, if it is not.
pub(super) fn name_refusal(raw: &str) -> Option<ModuleArchiveError> {
    entry_path(raw).err()
}

/// `/x`, or a Windows drive (`C:...`).
fn is_absolute(path: &str) -> bool {
    let bytes = path.as_bytes();
    path.starts_with('/')
        || (bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':')
}

/// A symbolic link at `segments`, whose target is relative to its folder.
fn symlink(raw: &str, segments: &[&str], target: &str) -> Result<Link, ModuleArchiveError> {
    let outside = || ModuleArchiveError::LinkOutside {
        name: shown(raw),
        target: shown(target),
    };
    if target.is_empty() || is_absolute(target) || target.contains('\\') {
        return Err(outside());
    }
    let mut at: Vec<&str> = segments[..segments.len() - 1].to_vec();
    let mut climbs_from = Vec::new();
    for segment in target.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if at.is_empty() {
                    return Err(outside());
                }
                climbs_from.push(at.join("/"));
                at.pop();
            }
            s => at.push(s),
        }
    }
    Ok(Link {
        name: shown(raw),
        target: shown(target),
        climbs_from,
    })
}

/// A hard link: its target is another entry's path, from the archive's root.
fn hard_link(raw: &str, target: &str) -> Result<Link, ModuleArchiveError> {
    let inside = !target.is_empty()
        && !is_absolute(target)
        && !target.contains('\\')
        && !target.split('/').any(|s| s == "..");
    if !inside {
        return Err(ModuleArchiveError::LinkOutside {
            name: shown(raw),
            target: shown(target),
        });
    }
    // Its target must not lie beneath a symbolic link either: checked like a climb from it.
    Ok(Link {
        name: shown(raw),
        target: shown(target),
        climbs_from: vec![entry_path(target)?],
    })
}

/// Files Terraform skips when it reads a module's folder.
fn is_ignored(name: &str) -> bool {
    name.starts_with('.') || name.ends_with('~') || (name.starts_with('#') && name.ends_with('#'))
}

/// A file Terraform reads as configuration.
fn is_configuration(name: &str) -> bool {
    (name.ends_with(".tf") || name.ends_with(".tf.json")) && !is_ignored(name)
}

/// A name as shown in a reason: at most 200 characters.
fn shown(raw: &str) -> String {
    match raw.char_indices().nth(200) {
        Some((cut, _)) => format!("{}...", &raw[..cut]),
        None => raw.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(entries: &[(&str, Kind)]) -> Result<ModuleSummary, ModuleArchiveError> {
        let mut found = Found::new(100);
        for (name, kind) in entries {
            let kind = match kind {
                Kind::File { size } => Kind::File { size: *size },
                Kind::Folder => Kind::Folder,
                Kind::Symlink { target } => Kind::Symlink {
                    target: target.clone(),
                },
                Kind::HardLink { target } => Kind::HardLink {
                    target: target.clone(),
                },
            };
            found.add(name, kind)?;
        }
        found.summary(ArchiveFormat::TarGz)
    }

    fn file() -> Kind {
        Kind::File { size: 1 }
    }

    fn sym(target: &str) -> Kind {
        Kind::Symlink {
            target: target.into(),
        }
    }

    #[test]
    fn paths_are_normalised_and_unsafe_ones_refused() {
        assert_eq!(entry_path("./a//b/./c.tf").unwrap(), "a/b/c.tf");
        assert_eq!(entry_path("./").unwrap(), "");
        for (raw, expected) in [
            ("a/../b", "ParentPath"),
            ("/etc/passwd", "AbsolutePath"),
            ("C:/x", "AbsolutePath"),
            ("a\\b", "BadName"),
            ("a\nb", "BadName"),
        ] {
            let error = entry_path(raw).unwrap_err();
            assert!(
                format!("{error:?}").starts_with(expected),
                "{raw:?}: {error:?}"
            );
        }
        assert!(entry_path(&"a".repeat(MAX_NAME_BYTES + 1)).is_err());
    }

    #[test]
    fn links_out_of_the_archive_are_refused_as_such_and_links_within_it_too() {
        let base = [("main.tf", file()), ("sub/x.tf", file())];
        let with = |name: &'static str, kind: Kind| {
            let mut all: Vec<(&str, Kind)> = base
                .iter()
                .map(|(n, _)| (*n, Kind::File { size: 1 }))
                .collect();
            all.push((name, kind));
            verdict(&all)
        };
        let inside = |r: Result<ModuleSummary, ModuleArchiveError>| {
            matches!(r, Err(ModuleArchiveError::LinkInside { .. }))
        };
        assert!(inside(with("sub/l", sym("../main.tf"))));
        assert!(inside(with("l", sym("sub/x.tf"))));
        for target in ["../x", "sub/../../x", "/etc/passwd", ""] {
            assert!(
                matches!(
                    with("l", sym(target)),
                    Err(ModuleArchiveError::LinkOutside { .. })
                ),
                "{target}"
            );
        }
        let hard = |target: &str| Kind::HardLink {
            target: target.into(),
        };
        assert!(inside(with("h", hard("main.tf"))));
        assert!(matches!(
            with("h", hard("../x")),
            Err(ModuleArchiveError::LinkOutside { .. })
        ));
    }

    #[test]
    fn links_that_chain_or_are_written_through_are_refused() {
        // `sub/up` is the root; `up/..` from the root would leave it.
        let chain = verdict(&[
            ("main.tf", file()),
            ("sub/up", sym("..")),
            ("escape", sym("sub/up/..")),
        ]);
        assert!(
            matches!(chain, Err(ModuleArchiveError::LinkChain { .. })),
            "{chain:?}"
        );
        let through = verdict(&[("main.tf", file()), ("l", sym("sub")), ("l/x.tf", file())]);
        assert!(
            matches!(through, Err(ModuleArchiveError::BeneathLink { .. })),
            "{through:?}"
        );
    }

    #[test]
    fn the_root_must_hold_configuration() {
        assert!(verdict(&[("main.tf.json", file())]).is_ok());
        assert!(matches!(
            verdict(&[(".hidden.tf", file()), ("README.md", file())]),
            Err(ModuleArchiveError::NoConfiguration)
        ));
        let folder = verdict(&[
            ("net/", Kind::Folder),
            ("net/main.tf", file()),
            (".DS_Store", file()),
            (".git/config", file()),
            ("__MACOSX/net/._main.tf", file()),
        ]);
        assert!(
            matches!(&folder, Err(ModuleArchiveError::ArchivedFolder { folder }) if folder == "net"),
            "{folder:?}"
        );
        assert!(matches!(
            verdict(&[("./", Kind::Folder)]),
            Err(ModuleArchiveError::Empty)
        ));
    }
}
