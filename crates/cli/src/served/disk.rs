//! Writing the files safely: each replaced whole at once (never through a link), and
//! `served/` set aside in one rename when a run stops or starts, what was set aside then
//! deleted in the background by the next start.

use std::io::Write;
use std::path::Path;

/// What `served/` is renamed to when it is set aside, then the run's id: a hidden name, so
/// nothing that copies the state folder's names takes it.
pub(super) const SET_ASIDE: &str = ".served-old-";

/// Renames the folder `dir` (`served/`) out of the way at once, whatever it holds.
pub(super) fn set_aside(dir: &Path, run: &str) -> std::io::Result<()> {
    let aside = dir.with_file_name(format!("{SET_ASIDE}{run}"));
    match std::fs::rename(dir, aside) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Deletes every folder set aside beside `dir`, on a thread of its own: it may take a while,
/// and nothing waits on it (a stop meanwhile leaves the rest for the next start).
pub(super) fn clear_set_aside(dir: &Path) {
    let Some(state) = dir.parent().map(Path::to_path_buf) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("served-clear".into())
        .spawn(move || {
            let Ok(entries) = std::fs::read_dir(&state) else {
                return;
            };
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().starts_with(SET_ASIDE) {
                    // Never follows a link: a link is removed, not what it names.
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        });
}

/// Replaces the file at `path` at once (a new temporary file beside it, then a rename),
/// readable by whoever may read the state folder: publishers read it to wait. The
/// temporary file is created anew (never through a link), and a rename replaces a link
/// rather than following it.
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let temporary = path.with_extension("json.tmp");
    match std::fs::remove_file(&temporary) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = std::fs::File::options()
        .write(true)
        .create_new(true)
        .open(&temporary)?;
    file.write_all(bytes)?;
    drop(file);
    std::fs::rename(&temporary, path)
}
