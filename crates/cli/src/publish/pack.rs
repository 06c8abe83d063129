//! Packing a module folder as the `.tar.gz` Terraform unpacks: the folder's contents (never
//! the folder itself), without local state and secrets, byte for byte the same each time
//! the same folder is packed (entries in a fixed order, fixed times, owners and modes), so
//! publishing a folder again is recognised as identical.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::{Compression, GzBuilder};

/// Every entry's modification time: 2000-01-01T00:00:00Z.
pub const FIXED_MTIME: u64 = 946_684_800;
/// The most files and folders packed.
pub const MAX_ENTRIES: usize = 10_000;
/// The most bytes packed (before compression).
pub const MAX_BYTES: u64 = 1024 * 1024 * 1024;

/// What is never packed, at any depth: Terraform's and version control's local state,
/// state files and plans (they hold secrets), variable files (the usual home of secrets,
/// and never read when the module is called), the dependency lock file (only a root
/// module's counts, and a called module's is ignored), crash logs, and CLI configurations
/// (they hold credentials).
const EXCLUDED_FOLDERS: &[&str] = &[".terraform", ".git", ".hg", ".svn"];

fn excluded_file(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".tfstate")
        || lower.contains(".tfstate.")
        || lower.ends_with(".tfplan")
        || lower.ends_with(".tfvars")
        || lower.ends_with(".tfvars.json")
        || lower == ".terraform.lock.hcl"
        || lower == "crash.log"
        || (lower.starts_with("crash.") && lower.ends_with(".log"))
        || lower == ".terraformrc"
        || lower == "terraform.rc"
        // `.git` is a file in submodules and worktrees.
        || lower == ".git"
}

/// A packed module.
#[derive(Debug)]
pub struct Packed {
    /// Files packed (folders not counted).
    pub files: usize,
    /// Their bytes, before compression.
    pub bytes: u64,
    /// What was left out, relative to the folder (folders end in `/`).
    pub excluded: Vec<String>,
}

/// Why a folder cannot be packed.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("{0}")]
    Refused(String),
    #[error("cannot pack {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> PackError + '_ {
    move |source| PackError::Io {
        path: path.to_path_buf(),
        source,
    }
}

struct Entry {
    /// Relative, `/`-separated; folders end in `/`.
    name: String,
    /// The file whose content is packed (`None` for folders).
    source: Option<PathBuf>,
    executable: bool,
}

/// Packs the contents of `dir` into `out` as a gzip-compressed tar archive.
pub fn pack_folder(dir: &Path, out: &Path) -> Result<Packed, PackError> {
    let root = dir.canonicalize().map_err(io_at(dir))?;
    let mut excluded = Vec::new();
    let mut entries = Vec::new();
    let mut total = 0u64;
    collect(&root, &root, "", &mut entries, &mut excluded, &mut total)?;
    let files = entries.iter().filter(|e| e.source.is_some()).count();
    if files == 0 {
        return Err(PackError::Refused(format!(
            "{} holds no files to publish{}",
            dir.display(),
            match excluded.is_empty() {
                true => String::new(),
                false => format!(" (left out: {})", excluded.join(" ")),
            }
        )));
    }

    let file = File::create(out).map_err(io_at(out))?;
    let gzip = GzBuilder::new()
        .mtime(0)
        .write(BufWriter::new(file), Compression::default());
    let mut tar = tar::Builder::new(gzip);
    let mut bytes = 0u64;
    for entry in &entries {
        bytes += append(&mut tar, entry)?;
    }
    let gzip: GzEncoder<BufWriter<File>> = tar.into_inner().map_err(io_at(out))?;
    let mut writer = gzip.finish().map_err(io_at(out))?;
    writer.flush().map_err(io_at(out))?;
    writer
        .into_inner()
        .map_err(|e| io_at(out)(e.into_error()))?
        .sync_all()
        .map_err(io_at(out))?;
    Ok(Packed {
        files,
        bytes,
        excluded,
    })
}

/// Appends one entry with fixed metadata; returns the bytes of content added.
fn append<W: Write>(tar: &mut tar::Builder<W>, entry: &Entry) -> Result<u64, PackError> {
    let mut header = tar::Header::new_gnu();
    header.set_mtime(FIXED_MTIME);
    header.set_uid(0);
    header.set_gid(0);
    let Some(source) = &entry.source else {
        header.set_entry_type(tar::EntryType::Directory);
        header.set_mode(0o755);
        header.set_size(0);
        tar.append_data(&mut header, &entry.name, io::empty())
            .map_err(io_at(Path::new(&entry.name)))?;
        return Ok(0);
    };
    let file = File::open(source).map_err(io_at(source))?;
    let size = file.metadata().map_err(io_at(source))?.len();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_mode(if entry.executable { 0o755 } else { 0o644 });
    header.set_size(size);
    // Exactly `size` bytes, even if the file grows meanwhile.
    let mut content = io::Read::take(file, size);
    tar.append_data(&mut header, &entry.name, &mut content)
        .map_err(io_at(source))?;
    Ok(size)
}

/// Lists `dir` (at `prefix` in the archive) and what lies below it, in name order, never
/// following a link out of `root`.
fn collect(
    root: &Path,
    dir: &Path,
    prefix: &str,
    entries: &mut Vec<Entry>,
    excluded: &mut Vec<String>,
    total: &mut u64,
) -> Result<(), PackError> {
    let mut children: Vec<_> = std::fs::read_dir(dir)
        .map_err(io_at(dir))?
        .collect::<Result<_, _>>()
        .map_err(io_at(dir))?;
    children.sort_by_key(|c| c.file_name());
    for child in children {
        let path = child.path();
        let Some(name) = child.file_name().to_str().map(str::to_owned) else {
            return Err(PackError::Refused(format!(
                "{}: the name is not UTF-8, which archives cannot carry faithfully",
                path.display()
            )));
        };
        let relative = format!("{prefix}{name}");
        let kind = child.file_type().map_err(io_at(&path))?;
        if entries.len() >= MAX_ENTRIES {
            return Err(PackError::Refused(format!(
                "{} holds more than {MAX_ENTRIES} files and folders: is it the module's folder?",
                root.display()
            )));
        }
        if kind.is_dir() {
            if EXCLUDED_FOLDERS.contains(&name.as_str()) {
                excluded.push(format!("{relative}/"));
                continue;
            }
            entries.push(Entry {
                name: format!("{relative}/"),
                source: None,
                executable: false,
            });
            let prefix = format!("{relative}/");
            collect(root, &path, &prefix, entries, excluded, total)?;
        } else if excluded_file(&name) {
            excluded.push(relative);
        } else if kind.is_file() {
            *total += std::fs::metadata(&path).map_err(io_at(&path))?.len();
            entries.push(Entry {
                name: relative,
                executable: is_executable(&path)?,
                source: Some(path),
            });
        } else if kind.is_symlink() {
            let target = link_inside(root, &path, &relative)?;
            *total += std::fs::metadata(&target).map_err(io_at(&target))?.len();
            entries.push(Entry {
                name: relative,
                executable: is_executable(&target)?,
                source: Some(target),
            });
        } else {
            return Err(PackError::Refused(format!(
                "{relative} is not a regular file (a FIFO, socket or device): remove it, or pack the archive yourself"
            )));
        }
        if *total > MAX_BYTES {
            return Err(PackError::Refused(format!(
                "{} holds more than {MAX_BYTES} bytes: is it the module's folder?",
                root.display()
            )));
        }
    }
    Ok(())
}

/// The file a link inside the module points at, when it is a file inside the module that
/// is itself packed; links anywhere else are refused (their content would leak in, or be
/// missing).
fn link_inside(root: &Path, link: &Path, relative: &str) -> Result<PathBuf, PackError> {
    let refused = |why: &str| {
        PackError::Refused(format!(
            "{relative} is a symbolic link {why}: copy the file in, or remove the link"
        ))
    };
    let target = match link.canonicalize() {
        Ok(target) => target,
        Err(_) => return Err(refused("to nothing")),
    };
    let Ok(inside) = target.strip_prefix(root) else {
        return Err(refused(&format!(
            "to {}, outside the module folder",
            target.display()
        )));
    };
    let hidden = inside.components().any(|c| {
        let name = c.as_os_str().to_string_lossy();
        EXCLUDED_FOLDERS.contains(&name.as_ref()) || excluded_file(&name)
    });
    if hidden {
        return Err(refused("to a file that is never published"));
    }
    if !target.is_file() {
        return Err(refused("to a folder (links to folders are not packed)"));
    }
    Ok(target)
}

fn is_executable(path: &Path) -> Result<bool, PackError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(io_at(path))?
            .permissions()
            .mode();
        Ok(mode & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, content: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn names(archive: &Path) -> Vec<String> {
        let gz = flate2::read::GzDecoder::new(File::open(archive).unwrap());
        let mut tar = tar::Archive::new(gz);
        tar.entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn packs_the_contents_without_local_state_and_the_same_bytes_each_time() {
        let dir = tempfile::tempdir().unwrap();
        let module = dir.path().join("network");
        write(&module, "main.tf", "variable \"x\" {}\n");
        write(
            &module,
            "modules/sub/main.tf",
            "output \"y\" { value = 1 }\n",
        );
        write(&module, ".terraform/modules/modules.json", "{}");
        write(&module, ".git/HEAD", "ref: refs/heads/main\n");
        write(&module, "terraform.tfstate", "{}");
        write(&module, "terraform.tfstate.backup", "{}");
        write(&module, "prod.tfvars", "password = \"hunter2\"\n");
        write(&module, ".terraform.lock.hcl", "# lock\n");
        write(&module, "crash.log", "panic\n");

        let first = dir.path().join("a.tar.gz");
        let packed = pack_folder(&module, &first).unwrap();
        assert_eq!(
            names(&first),
            ["main.tf", "modules/", "modules/sub/", "modules/sub/main.tf"]
        );
        assert_eq!(packed.files, 2);
        assert_eq!(
            packed.excluded,
            [
                ".git/",
                ".terraform/",
                ".terraform.lock.hcl",
                "crash.log",
                "prod.tfvars",
                "terraform.tfstate",
                "terraform.tfstate.backup"
            ]
        );

        // Touched files and a new folder of local state change nothing.
        std::thread::sleep(std::time::Duration::from_millis(20));
        write(&module, "main.tf", "variable \"x\" {}\n");
        write(&module, ".terraform/providers/x", "binary");
        let second = dir.path().join("b.tar.gz");
        pack_folder(&module, &second).unwrap();
        assert_eq!(
            std::fs::read(&first).unwrap(),
            std::fs::read(&second).unwrap()
        );
    }

    #[cfg(unix)]
    #[test]
    fn links_out_of_the_folder_are_refused_and_links_inside_are_packed_as_files() {
        let dir = tempfile::tempdir().unwrap();
        let module = dir.path().join("m");
        write(&module, "main.tf", "# main\n");
        write(dir.path(), "secret.txt", "secret\n");
        std::os::unix::fs::symlink("main.tf", module.join("copy.tf")).unwrap();
        let out = dir.path().join("m.tar.gz");
        pack_folder(&module, &out).unwrap();
        assert_eq!(names(&out), ["copy.tf", "main.tf"]);

        std::os::unix::fs::symlink("../secret.txt", module.join("leak.txt")).unwrap();
        let err = pack_folder(&module, &out).unwrap_err().to_string();
        assert!(
            err.contains("leak.txt is a symbolic link") && err.contains("outside"),
            "{err}"
        );
    }

    #[test]
    fn a_folder_with_nothing_to_publish_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "m/terraform.tfstate", "{}");
        let err = pack_folder(&dir.path().join("m"), &dir.path().join("x.tar.gz"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no files to publish") && err.contains("terraform.tfstate"),
            "{err}"
        );
    }
}
