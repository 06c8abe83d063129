//! Group commits for the files that make versions immutable: kept copies of published bytes
//! and pins. Made durable one at a time, each costs a sync of the file and one of its folder
//! (five `fsync` calls per published file with its pin), which bounded a first index of
//! many small files by the disk's sync latency rather than its speed.
//!
//! With [`Commits`], such a file is written under a temporary name in its folder, unsynced,
//! and *staged*. [`Commits::commit`] then makes the whole batch durable with one sync of the
//! file system, renames every staged file into place, and syncs again so the names last.
//! A name therefore never points at bytes that could be lost: after a crash, a staged file is
//! either whole under its name or absent (a temporary file is left, which nothing reads).
//!
//! **The invariant that keeps this safe:** nothing is served from a staged file's version
//! until the batch is committed. The watcher commits before it makes the documents of what
//! it indexed (documents are what requests read), so a version appears in an answer only
//! once its pin and kept bytes are durable. Until then the stores read staged files from
//! their temporary names ([`Commits::open_staged`]), so the indexer sees its own writes.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use tempfile::TempPath;

/// Files written but not yet durable, by the path each is to have.
pub struct Commits {
    root: PathBuf,
    staged: Mutex<HashMap<PathBuf, TempPath>>,
}

impl std::fmt::Debug for Commits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Commits")
            .field("root", &self.root)
            .field("staged", &self.len())
            .finish()
    }
}

/// What a commit made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Committed {
    /// Files renamed into place.
    pub files: usize,
}

impl Commits {
    /// Group commits for files under `root` (one file system).
    pub fn new(root: PathBuf) -> Self {
        Self {
            root,
            staged: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<PathBuf, TempPath>> {
        // A panic while holding the lock leaves the map whole: every change is one call.
        self.staged.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stages `temp`, written and closed, to become `target` at the next commit. A file
    /// staged for the same target before is dropped (its temporary file removed).
    pub fn stage(&self, temp: TempPath, target: PathBuf) {
        self.lock().insert(target, temp);
    }

    /// Whether a file is staged for `target`.
    pub fn is_staged(&self, target: &Path) -> bool {
        self.lock().contains_key(target)
    }

    /// Drops the file staged for `target`, if any; true when there was one.
    pub fn unstage(&self, target: &Path) -> bool {
        self.lock().remove(target).is_some()
    }

    /// Opens the file staged for `target`, if any. Opened under the lock, so a commit
    /// cannot rename it away in between: once it returns `None`, the file is at `target`
    /// (or was never staged).
    pub fn open_staged(&self, target: &Path) -> io::Result<Option<std::fs::File>> {
        let staged = self.lock();
        match staged.get(target) {
            Some(temp) => std::fs::File::open(temp).map(Some),
            None => Ok(None),
        }
    }

    /// How many files wait for a commit.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing waits for a commit.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Makes every staged file durable under its name: one sync of what was written, the
    /// renames, one sync of the names. Blocking. A file that cannot be renamed stays staged
    /// (the error is returned, and the next commit tries again).
    pub fn commit(&self) -> io::Result<Committed> {
        let batch: Vec<(PathBuf, PathBuf)> = self
            .lock()
            .iter()
            .map(|(target, temp)| (target.clone(), temp.to_path_buf()))
            .collect();
        if batch.is_empty() {
            return Ok(Committed::default());
        }
        sync_contents(&self.root, batch.iter().map(|(_, temp)| temp.as_path()))?;
        let mut folders = BTreeSet::new();
        let mut files = 0;
        for (target, synced) in &batch {
            let mut staged = self.lock();
            let Some(temp) = staged.remove(target) else {
                continue; // unstaged meanwhile (a pin deleted)
            };
            if AsRef::<Path>::as_ref(&temp) != synced.as_path() {
                // Staged again after the sync: the next commit takes it.
                staged.insert(target.clone(), temp);
                continue;
            }
            if let Err(e) = temp.persist(target) {
                staged.insert(target.clone(), e.path);
                return Err(e.error);
            }
            files += 1;
            if let Some(folder) = target.parent() {
                folders.insert(folder.to_path_buf());
            }
        }
        sync_names(&self.root, &folders)?;
        Ok(Committed { files })
    }
}

/// Makes the staged files' bytes durable: one `syncfs` where there is one.
#[cfg(target_os = "linux")]
fn sync_contents<'a>(root: &Path, _files: impl Iterator<Item = &'a Path>) -> io::Result<()> {
    let fd = std::fs::File::open(root)?;
    rustix::fs::syncfs(&fd).map_err(io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn sync_contents<'a>(_root: &Path, files: impl Iterator<Item = &'a Path>) -> io::Result<()> {
    for file in files {
        std::fs::File::open(file)?.sync_all()?;
    }
    Ok(())
}

/// Makes the renames durable.
#[cfg(target_os = "linux")]
fn sync_names(root: &Path, _folders: &BTreeSet<PathBuf>) -> io::Result<()> {
    sync_contents(root, std::iter::empty())
}

#[cfg(not(target_os = "linux"))]
fn sync_names(_root: &Path, folders: &BTreeSet<PathBuf>) -> io::Result<()> {
    for folder in folders {
        std::fs::File::open(folder)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn staged_file(commits: &Commits, folder: &Path, name: &str, body: &[u8]) -> PathBuf {
        let mut temp = tempfile::NamedTempFile::new_in(folder).unwrap();
        temp.write_all(body).unwrap();
        let target = folder.join(name);
        commits.stage(temp.into_temp_path(), target.clone());
        target
    }

    #[test]
    fn a_staged_file_is_readable_before_and_in_place_after_a_commit() {
        let dir = tempfile::tempdir().unwrap();
        let commits = Commits::new(dir.path().to_path_buf());
        let target = staged_file(&commits, dir.path(), "a.json", b"first");
        assert!(!target.exists(), "nothing is at its name before the commit");
        assert!(commits.is_staged(&target));
        let mut read = String::new();
        io::Read::read_to_string(
            &mut commits.open_staged(&target).unwrap().unwrap(),
            &mut read,
        )
        .unwrap();
        assert_eq!(read, "first");

        assert_eq!(commits.commit().unwrap(), Committed { files: 1 });
        assert_eq!(std::fs::read(&target).unwrap(), b"first");
        assert!(commits.is_empty());
        assert!(commits.open_staged(&target).unwrap().is_none());
        assert_eq!(commits.commit().unwrap(), Committed { files: 0 });
        // Only the file itself is left: no temporary file.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn staging_again_replaces_and_unstaging_forgets() {
        let dir = tempfile::tempdir().unwrap();
        let commits = Commits::new(dir.path().to_path_buf());
        let a = staged_file(&commits, dir.path(), "a.json", b"old");
        staged_file(&commits, dir.path(), "a.json", b"new");
        let b = staged_file(&commits, dir.path(), "b.json", b"gone");
        assert_eq!(commits.len(), 2);
        assert!(commits.unstage(&b));
        assert!(!commits.unstage(&b));
        assert_eq!(commits.commit().unwrap(), Committed { files: 1 });
        assert_eq!(std::fs::read(&a).unwrap(), b"new");
        assert!(!b.exists());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "the replaced and the unstaged temporary files are removed"
        );
    }

    #[test]
    fn a_failed_rename_keeps_the_file_staged_for_the_next_commit() {
        let dir = tempfile::tempdir().unwrap();
        let commits = Commits::new(dir.path().to_path_buf());
        let folder = dir.path().join("sub");
        std::fs::create_dir(&folder).unwrap();
        let mut temp = tempfile::NamedTempFile::new_in(&folder).unwrap();
        temp.write_all(b"kept").unwrap();
        // The target's folder does not exist yet: the rename fails.
        let target = dir.path().join("missing").join("k");
        commits.stage(temp.into_temp_path(), target.clone());
        assert!(commits.commit().is_err());
        assert!(commits.is_staged(&target));
        std::fs::create_dir(dir.path().join("missing")).unwrap();
        assert_eq!(commits.commit().unwrap(), Committed { files: 1 });
        assert_eq!(std::fs::read(&target).unwrap(), b"kept");
    }
}
