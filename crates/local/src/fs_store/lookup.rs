//! Looking a key up in the data directory one folder at a time, never following a link,
//! and opening only the regular file found.

use std::collections::HashSet;
use std::io;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use tfreg_core::store::ObjectMeta;

use super::{
    errno, identity, meta_of, FsArtifactStore, Lookup, LINK, SPECIAL, STATE_DIR_NAME, STATE_LINK,
};

/// How a folder is opened to look a key up in it: only as a place (`O_PATH` on Linux), so
/// the lookup raises no file-system notification for the watcher to wade through (opening
/// a folder for reading does, on every folder of the path).
fn walk_flags() -> OFlags {
    #[cfg(target_os = "linux")]
    let how = OFlags::PATH;
    #[cfg(not(target_os = "linux"))]
    let how = OFlags::RDONLY;
    how | OFlags::DIRECTORY | OFlags::CLOEXEC
}

impl FsArtifactStore {
    /// Looks a key up one folder at a time from the root, never following a link. Blocking.
    pub(super) fn lookup(&self, key: &str) -> io::Result<Lookup> {
        let Some(parts) = self.parts(key) else {
            return Ok(Lookup::Missing);
        };
        let Some((last, folders)) = parts.split_last() else {
            return Ok(Lookup::Missing);
        };
        let folder_flags = walk_flags() | OFlags::NOFOLLOW;
        let mut dir = match rustix::fs::open(&self.root, walk_flags(), Mode::empty()) {
            Ok(dir) => dir,
            Err(Errno::NOENT) => return Ok(Lookup::Missing),
            Err(e) => return Err(errno(e)),
        };
        // One call where the kernel can resolve the folders without following a link (and
        // never leaving the root); the walk below, one folder at a time, where it cannot or
        // to tell a link from a missing folder.
        #[cfg(target_os = "linux")]
        if !folders.is_empty() {
            use rustix::fs::ResolveFlags;
            let path = folders.join("/");
            let resolve =
                ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
            match rustix::fs::openat2(&dir, &path, folder_flags, Mode::empty(), resolve) {
                Ok(parent) => return self.lookup_in(parent, last),
                Err(Errno::NOENT) => return Ok(Lookup::Missing),
                Err(_) => {} // a link, a file for a folder, no openat2: walk
            }
        }
        for folder in folders {
            match rustix::fs::openat(&dir, *folder, folder_flags, Mode::empty()) {
                Ok(next) => dir = next,
                Err(Errno::NOENT) => return Ok(Lookup::Missing),
                // A link, or a file where a folder should be: which one decides the answer.
                Err(Errno::LOOP | Errno::NOTDIR) => {
                    return match rustix::fs::statat(&dir, *folder, AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                            Ok(Lookup::Refused { reason: LINK, stat })
                        }
                        Ok(_) | Err(Errno::NOENT) => Ok(Lookup::Missing),
                        Err(e) => Err(errno(e)),
                    };
                }
                Err(e) => return Err(errno(e)),
            }
        }
        self.lookup_in(dir, last)
    }

    /// Looks up the last part of a key in its folder `dir`. Blocking.
    fn lookup_in(&self, dir: std::os::fd::OwnedFd, last: &str) -> io::Result<Lookup> {
        let stat = match rustix::fs::statat(&dir, last, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::NOENT | Errno::NOTDIR) => return Ok(Lookup::Missing),
            Err(e) => return Err(errno(e)),
        };
        Ok(match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile if identity(&stat).2 > 1 && self.is_state_file(&stat) => {
                Lookup::Refused {
                    reason: STATE_LINK,
                    stat,
                }
            }
            FileType::RegularFile => Lookup::File {
                parent: dir,
                name: last.to_owned(),
                stat,
            },
            FileType::Directory => Lookup::Missing,
            FileType::Symlink => Lookup::Refused { reason: LINK, stat },
            _ => Lookup::Refused {
                reason: SPECIAL,
                stat,
            },
        })
    }

    /// True when a file with several links is one of the state folder's files.
    pub(super) fn is_state_file(&self, stat: &Stat) -> bool {
        let (dev, ino, _) = identity(stat);
        let mut state = HashSet::new();
        let walker = walkdir::WalkDir::new(self.root.join(STATE_DIR_NAME))
            .follow_links(false)
            .max_depth(4);
        for entry in walker.into_iter().flatten() {
            if let Ok(m) = entry.metadata() {
                use std::os::unix::fs::MetadataExt;
                state.insert((m.dev(), m.ino()));
            }
        }
        state.contains(&(dev, ino))
    }

    /// Opens the regular file behind `key` for reading. Blocking.
    pub(super) fn open_blocking(
        &self,
        key: &str,
    ) -> io::Result<Option<(std::fs::File, ObjectMeta)>> {
        let Lookup::File { parent, name, stat } = self.lookup(key)? else {
            return Ok(None);
        };
        // Non-blocking, so a FIFO swapped in since the lookup cannot hang the open.
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&parent, name.as_str(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::LOOP) => return Ok(None),
            Err(e) => return Err(errno(e)),
        };
        let opened = rustix::fs::fstat(&fd).map_err(errno)?;
        let same =
            identity(&opened).0 == identity(&stat).0 && identity(&opened).1 == identity(&stat).1;
        if !same || FileType::from_raw_mode(opened.st_mode) != FileType::RegularFile {
            return Ok(None); // replaced since the lookup: the next event settles it
        }
        Ok(Some((std::fs::File::from(fd), meta_of(&opened))))
    }
}
