//! Listing the data directory: every entry with a key, walked folder by folder through
//! descriptors opened without following links.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use tfreg_core::store::ObjectMeta;
use tfreg_core::StoreError;

use super::{errno, meta_of, FsArtifactStore, Lookup};

impl FsArtifactStore {
    /// What is at `key`, whatever it is (a refused link or FIFO included): what the watcher
    /// compares between scans. Blocking.
    pub fn entry_meta(&self, key: &str) -> io::Result<Option<ObjectMeta>> {
        Ok(match self.lookup(key)? {
            Lookup::Missing => None,
            Lookup::Refused { stat, .. } | Lookup::File { stat, .. } => Some(meta_of(&stat)),
        })
    }

    /// Every entry with a key (regular files, and the links and special files that are
    /// refused), and its metadata. Blocking: call from a blocking context.
    pub fn scan_blocking(&self) -> Result<Vec<(String, ObjectMeta)>, StoreError> {
        self.scan_under_blocking(&self.root)
    }

    /// Every entry with a key below `dir` (a path under the root). The walk goes folder by
    /// folder through open descriptors, each opened without following links, so a folder
    /// swapped for a link while it is walked is never walked into. Blocking.
    pub fn scan_under_blocking(&self, dir: &Path) -> Result<Vec<(String, ObjectMeta)>, StoreError> {
        let failed = |e: io::Error| {
            StoreError::with_source(
                format!("cannot read the data directory {}", dir.display()),
                e,
            )
        };
        let prefix = match dir == self.root {
            true => String::new(),
            false => match self.key_for(dir) {
                Some(key) => key,
                None => return Ok(Vec::new()),
            },
        };
        let Some(start) = self.open_folder(&prefix).map_err(failed)? else {
            return Ok(Vec::new());
        };
        let mut found = Vec::new();
        self.walk(start, &prefix, 0, &mut found);
        found.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(found)
    }

    /// Opens the folder `key` (the root for `""`) without following links; `None` if it is
    /// not a folder.
    pub(super) fn open_folder(&self, key: &str) -> io::Result<Option<OwnedFd>> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut dir = match rustix::fs::open(&self.root, flags, Mode::empty()) {
            Ok(dir) => dir,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(errno(e)),
        };
        if key.is_empty() {
            return Ok(Some(dir));
        }
        let Some(parts) = self.parts(key) else {
            return Ok(None);
        };
        for part in parts {
            match rustix::fs::openat(&dir, part, flags | OFlags::NOFOLLOW, Mode::empty()) {
                Ok(next) => dir = next,
                Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => return Ok(None),
                Err(e) => return Err(errno(e)),
            }
        }
        Ok(Some(dir))
    }

    /// Lists the folder `dir` (whose key is `prefix`) and the folders below it.
    pub(super) fn walk(
        &self,
        dir: OwnedFd,
        prefix: &str,
        depth: usize,
        found: &mut Vec<(String, ObjectMeta)>,
    ) {
        // Deeper than any key of the publishing layout needs, with room to spare.
        const MAX_DEPTH: usize = 16;
        let entries = match rustix::fs::Dir::read_from(&dir) {
            Ok(entries) => entries,
            Err(e) => {
                tracing::warn!(folder = prefix, error = %e, "skipping an unreadable folder in the data directory");
                return;
            }
        };
        for entry in entries {
            let Ok(entry) = entry else { continue };
            let Ok(name) = entry.file_name().to_str() else {
                tracing::warn!(folder = prefix, "skipping a file whose name is not UTF-8");
                continue;
            };
            if name.starts_with('.') {
                continue; // `.`, `..`, hidden files and the state folder
            }
            let key = match prefix.is_empty() {
                true => name.to_owned(),
                false => format!("{prefix}/{name}"),
            };
            let stat = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                Err(Errno::NOENT) => continue, // removed meanwhile
                Err(e) => {
                    tracing::warn!(key, error = %e, "skipping an unreadable entry");
                    continue;
                }
            };
            if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
                found.push((key, meta_of(&stat)));
                continue;
            }
            if depth >= MAX_DEPTH {
                tracing::warn!(key, "not walking folders nested deeper than {MAX_DEPTH}");
                continue;
            }
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match rustix::fs::openat(&dir, name, flags, Mode::empty()) {
                Ok(child) => self.walk(child, &key, depth + 1, found),
                // Swapped for a link (or a file) since it was listed: listed as what it is
                // now on the next scan, never walked into.
                Err(Errno::LOOP | Errno::NOTDIR | Errno::NOENT) => {}
                Err(e) => tracing::warn!(key, error = %e, "skipping an unreadable folder"),
            }
        }
    }
}
