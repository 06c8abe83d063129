//! The bytes of published versions, kept in the state folder so that different bytes
//! copied over a published file never change what is served.

use std::io;
use std::path::PathBuf;

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;
use tfreg_core::store::{Kept, ObjectMeta};

use super::{errno, meta_of, FsArtifactStore, KEPT_DIR_NAME, STATE_DIR_NAME};

impl FsArtifactStore {
    /// Where the bytes of `key` at `revision` are kept once published.
    pub(super) fn kept_path(&self, key: &str, revision: &str) -> PathBuf {
        use sha2::Digest;
        let mut hasher = sha2::Sha256::new();
        hasher.update(key.as_bytes());
        hasher.update([0]);
        hasher.update(revision.as_bytes());
        self.root
            .join(STATE_DIR_NAME)
            .join(KEPT_DIR_NAME)
            .join(hex::encode(hasher.finalize()))
    }

    /// Copies the file at `key`, if it is still at `revision` and its bytes are those of
    /// `sha256`, into the state folder: written under a temporary name, synced, then renamed,
    /// so a kept copy is always whole. With group commits, the copy is staged instead and
    /// the batch's commit syncs and renames it. Blocking.
    pub(super) fn keep_blocking(
        &self,
        key: &str,
        revision: &str,
        sha256: &str,
    ) -> io::Result<Kept> {
        use sha2::Digest;
        use std::io::{Read, Write};
        let target = self.kept_path(key, revision);
        let staged = self.commits.as_ref().is_some_and(|c| c.is_staged(&target));
        if staged || target.is_file() {
            return Ok(Kept::Yes);
        }
        let Some((mut file, meta)) = self.open_blocking(key)? else {
            return Ok(Kept::Changed);
        };
        if meta.revision != revision {
            return Ok(Kept::Changed);
        }
        let folder = target.parent().expect("a kept path has a folder");
        std::fs::create_dir_all(folder)?;
        let mut copy = tempfile::NamedTempFile::new_in(folder)?;
        let mut hasher = sha2::Sha256::new();
        let mut buffer = vec![0u8; 64 * 1024];
        let mut left = meta.size;
        while left > 0 {
            let n = file.read(&mut buffer[..(left.min(64 * 1024) as usize)])?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
            copy.write_all(&buffer[..n])?;
            left -= n as u64;
        }
        if left > 0 || hex::encode(hasher.finalize()) != sha256 {
            return Ok(Kept::Changed);
        }
        if let Some(commits) = &self.commits {
            // Made durable with its batch, before anything serves it.
            commits.stage(copy.into_temp_path(), target);
            return Ok(Kept::Yes);
        }
        copy.as_file().sync_all()?;
        copy.persist(&target).map_err(|e| e.error)?;
        if let Ok(dir) = std::fs::File::open(folder) {
            let _ = dir.sync_all();
        }
        Ok(Kept::Yes)
    }

    /// Opens `key` at `revision`: the file itself while it is at that revision, else its
    /// kept copy. Blocking.
    pub(super) fn open_revision_blocking(
        &self,
        key: &str,
        revision: &str,
    ) -> io::Result<Option<(std::fs::File, ObjectMeta)>> {
        if let Some((file, meta)) = self.open_blocking(key)? {
            if meta.revision == revision {
                return Ok(Some((file, meta)));
            }
        }
        if self.parts(key).is_none() {
            return Ok(None);
        }
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let target = self.kept_path(key, revision);
        let fd = match rustix::fs::open(&target, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => {
                // Kept in this batch: read from where it waits for its commit (or, when
                // the commit renamed it meanwhile, from its place).
                let staged = match &self.commits {
                    Some(commits) => commits.open_staged(&target)?,
                    None => None,
                };
                match staged {
                    Some(file) => std::os::fd::OwnedFd::from(file),
                    None => match rustix::fs::open(&target, flags, Mode::empty()) {
                        Ok(fd) => fd,
                        Err(Errno::NOENT | Errno::LOOP) => return Ok(None),
                        Err(e) => return Err(errno(e)),
                    },
                }
            }
            Err(Errno::LOOP) => return Ok(None),
            Err(e) => return Err(errno(e)),
        };
        let stat = rustix::fs::fstat(&fd).map_err(errno)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Ok(None);
        }
        let meta = ObjectMeta {
            size: meta_of(&stat).size,
            revision: revision.to_owned(),
        };
        Ok(Some((std::fs::File::from(fd), meta)))
    }
}
