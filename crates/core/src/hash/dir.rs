//! Terraform's `h1:` of a folder on disk, such as a module `terraform init` installed under
//! `.terraform/modules/<key>`: the same summary ([`super::h1_summary`]) as of an archive's
//! files, so the hash recorded when a module was published can be compared with what is
//! installed.
//!
//! The folder is someone else's and may be hostile: links are never followed (a link
//! anywhere in it is refused: no archive the registry accepts unpacks to one), nor are
//! devices or pipes read, and the walk is bounded in entries, bytes, depth and time
//! ([`DirLimits`]).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::{h1_summary, BUFFER, MIB};

/// How much work hashing one folder may cost: the bounds of a module archive
/// ([`crate::module_archive::ModuleLimits`]), so any folder a published module unpacks to
/// fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirLimits {
    /// Most entries (files and folders).
    pub max_entries: usize,
    /// Most bytes all files together may hold.
    pub max_bytes: u64,
    /// Deepest nesting of folders.
    pub max_depth: usize,
    /// How long hashing may take.
    pub max_duration: Duration,
}

impl Default for DirLimits {
    fn default() -> Self {
        Self {
            max_entries: 10_000,
            max_bytes: 512 * MIB,
            max_depth: 128,
            max_duration: Duration::from_secs(120),
        }
    }
}

/// Why a folder could not be hashed. Every variant but [`DirHashError::Io`] says the folder
/// cannot be what a published module unpacks to.
#[derive(Debug, thiserror::Error)]
pub enum DirHashError {
    /// Reading failed (permissions, a file removed meanwhile): not a verdict on the folder.
    #[error("cannot read {path}: {source}")]
    Io {
        /// What could not be read.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// The path given is not a folder.
    #[error("{0} is not a folder")]
    NotAFolder(String),
    /// A symbolic link, which is never followed.
    #[error("{0} is a symbolic link, which no module archive the registry accepts unpacks to (links are not followed)")]
    Link(String),
    /// A device, pipe or socket.
    #[error("{0} is neither a file nor a folder")]
    Special(String),
    /// A name that is not UTF-8 or holds a newline (Terraform's hash refuses those too).
    #[error("{0} has a name that is not UTF-8 or holds a newline")]
    BadName(String),
    /// More entries than [`DirLimits::max_entries`].
    #[error("the folder holds more than {0} entries, more than a module may")]
    TooManyEntries(usize),
    /// More bytes than [`DirLimits::max_bytes`].
    #[error("the folder's files hold more than {0} bytes, more than a module may")]
    TooLarge(u64),
    /// Folders nested deeper than [`DirLimits::max_depth`].
    #[error("the folder nests more than {0} folders deep")]
    TooDeep(usize),
    /// Hashing took longer than [`DirLimits::max_duration`].
    #[error("hashing the folder took longer than {0:?}")]
    TimedOut(Duration),
}

impl DirHashError {
    /// True when reading failed rather than the folder being unlike any published module.
    pub fn is_io(&self) -> bool {
        matches!(self, DirHashError::Io { .. })
    }
}

/// The `h1:` of the folder at `path` within [`DirLimits::default`].
pub fn h1_of_dir(path: &Path) -> Result<String, DirHashError> {
    h1_of_dir_within(path, &DirLimits::default())
}

/// The `h1:` of the folder at `path` (every regular file beneath it, named relative to it
/// with `/`; folders do not count) within `limits`.
pub fn h1_of_dir_within(path: &Path, limits: &DirLimits) -> Result<String, DirHashError> {
    let shown = |p: &Path| p.display().to_string();
    let io = |p: &Path| {
        let path = shown(p);
        move |source| DirHashError::Io { path, source }
    };
    let root = std::fs::symlink_metadata(path).map_err(io(path))?;
    if root.file_type().is_symlink() {
        return Err(DirHashError::Link(shown(path)));
    }
    if !root.is_dir() {
        return Err(DirHashError::NotAFolder(shown(path)));
    }
    let started = Instant::now();
    let mut walk = Walk {
        limits,
        started,
        entries: 0,
        bytes: 0,
        digests: BTreeMap::new(),
    };
    let mut folders: Vec<(PathBuf, String, usize)> = vec![(path.to_path_buf(), String::new(), 0)];
    while let Some((folder, prefix, depth)) = folders.pop() {
        if depth > limits.max_depth {
            return Err(DirHashError::TooDeep(limits.max_depth));
        }
        for entry in std::fs::read_dir(&folder).map_err(io(&folder))? {
            walk.tick()?;
            let entry = entry.map_err(io(&folder))?;
            let at = entry.path();
            let name = entry
                .file_name()
                .into_string()
                .ok()
                .filter(|n| !n.contains('\n'))
                .ok_or_else(|| DirHashError::BadName(shown(&at)))?;
            let relative = match prefix.is_empty() {
                true => name,
                false => format!("{prefix}/{name}"),
            };
            // The entry's own type: a link is seen as a link, never as what it points to.
            let meta = entry.metadata().map_err(io(&at))?;
            let kind = meta.file_type();
            if kind.is_symlink() {
                return Err(DirHashError::Link(shown(&at)));
            } else if kind.is_dir() {
                folders.push((at, relative, depth + 1));
            } else if kind.is_file() {
                let digest = walk.hash_file(&at, &meta)?;
                walk.digests.insert(relative, digest);
            } else {
                return Err(DirHashError::Special(shown(&at)));
            }
        }
    }
    Ok(h1_summary(&walk.digests))
}

/// What the walk has counted so far.
struct Walk<'a> {
    limits: &'a DirLimits,
    started: Instant,
    entries: usize,
    bytes: u64,
    digests: BTreeMap<String, String>,
}

impl Walk<'_> {
    /// Counts one entry, within the limits of entries and time.
    fn tick(&mut self) -> Result<(), DirHashError> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(DirHashError::TooManyEntries(self.limits.max_entries));
        }
        if self.started.elapsed() > self.limits.max_duration {
            return Err(DirHashError::TimedOut(self.limits.max_duration));
        }
        Ok(())
    }

    /// The SHA-256 (hex) of the regular file at `path`, which `seen` describes: the file
    /// opened must be that one (not a link swapped in meanwhile).
    fn hash_file(&mut self, path: &Path, seen: &std::fs::Metadata) -> Result<String, DirHashError> {
        let failed = |source| DirHashError::Io {
            path: path.display().to_string(),
            source,
        };
        let file = File::open(path).map_err(failed)?;
        let opened = file.metadata().map_err(failed)?;
        if !opened.is_file() || !same_file(seen, &opened) {
            return Err(DirHashError::Link(path.display().to_string()));
        }
        let mut hasher = Sha256::new();
        let mut buffer = vec![0u8; BUFFER];
        let left = self.limits.max_bytes - self.bytes;
        let mut reader = file.take(left.saturating_add(1));
        loop {
            let n = match reader.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(failed(e)),
            };
            self.bytes += n as u64;
            if self.bytes > self.limits.max_bytes {
                return Err(DirHashError::TooLarge(self.limits.max_bytes));
            }
            if self.started.elapsed() > self.limits.max_duration {
                return Err(DirHashError::TimedOut(self.limits.max_duration));
            }
            hasher.update(&buffer[..n]);
        }
        Ok(hex::encode(hasher.finalize()))
    }
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    a.len() == b.len()
}
