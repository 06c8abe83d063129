//! Packing a module folder as the `.tar.gz` Terraform unpacks: the folder's contents (never
//! the folder itself), without local state and secret-shaped files ([`super::leave_out`]),
//! byte for byte the same each time the same folder is packed (entries in a fixed order,
//! fixed times, owners and modes), so publishing a folder again is recognised as identical.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::{Compression, GzBuilder};

use tfreg_core::module_archive::secrets::is_secret_shaped;

use super::leave_out::{Includes, LeftOut};
use super::references;

/// Every entry's modification time: 2000-01-01T00:00:00Z.
pub const FIXED_MTIME: u64 = 946_684_800;
/// The most files and folders packed.
pub const MAX_ENTRIES: usize = 10_000;
/// The most bytes packed (before compression).
pub const MAX_BYTES: u64 = 1024 * 1024 * 1024;

/// A packed module.
#[derive(Debug)]
pub struct Packed {
    /// Files packed (folders not counted).
    pub files: usize,
    /// Their bytes, before compression.
    pub bytes: u64,
    /// What was left out, relative to the folder (folders end in `/`): local state and
    /// secret-shaped files.
    pub excluded: Vec<String>,
    /// Those of `excluded` left out as secret-shaped (`--include` brings them back).
    pub secret_shaped: Vec<String>,
    /// Secret-shaped files packed all the same, as `--include` asked.
    pub included: Vec<String>,
    /// What `--include` did not do, as sentences.
    pub warnings: Vec<String>,
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

/// Packs the contents of `dir` into `out` as a gzip-compressed tar archive, with the
/// secret-shaped files `include` brings back.
pub fn pack_folder(dir: &Path, out: &Path, include: Includes) -> Result<Packed, PackError> {
    let root = dir.canonicalize().map_err(io_at(dir))?;
    let mut walk = Walk {
        root: root.clone(),
        include,
        entries: Vec::new(),
        excluded: Vec::new(),
        secret_shaped: Vec::new(),
        included: Vec::new(),
        total: 0,
    };
    walk.collect(&root, "")?;
    let Walk {
        entries,
        excluded,
        secret_shaped,
        included,
        include,
        ..
    } = walk;
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

    if let Some((config, file)) = reads_a_left_out_file(&entries, &secret_shaped)? {
        return Err(PackError::Refused(reads_a_left_out_file_refusal(
            &config, &file,
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
        secret_shaped,
        included,
        warnings: include.warnings(),
    })
}

/// The first configuration file packed (`.tf`, `.tf.json`, templates) that names a
/// secret-shaped file left out as a path ([`super::references`]), and that file:
/// `file("${path.module}/id_rsa.pub")` would fail for everyone who calls the module.
fn reads_a_left_out_file(
    entries: &[Entry],
    left_out: &[String],
) -> Result<Option<(String, String)>, PackError> {
    if left_out.is_empty() {
        return Ok(None);
    }
    for entry in entries {
        let Some(kind) = references::kind_of(&entry.name) else {
            continue;
        };
        let Some(source) = entry.source.as_ref() else {
            continue;
        };
        let mut text = Vec::new();
        let file = File::open(source).map_err(io_at(source))?;
        io::Read::read_to_end(
            &mut io::Read::take(file, references::MAX_SEARCHED),
            &mut text,
        )
        .map_err(io_at(source))?;
        let words = references::path_words(kind, &String::from_utf8_lossy(&text));
        if let Some(file) = left_out
            .iter()
            .find(|file| references::names_file(&words, file))
        {
            return Ok(Some((entry.name.clone(), file.clone())));
        }
    }
    Ok(None)
}

/// The refusal of a module whose configuration `config` reads `file`, left out as
/// secret-shaped. A published version never changes, so the fix it gives first never
/// publishes a secret: only a public key (`*.pub`) is worth `--include`.
fn reads_a_left_out_file_refusal(config: &str, file: &str) -> String {
    let first = format!(
        "{config} names {file} as a path, which is left out as secret-shaped: the module would fail where it reads it, and a published version can never be fixed."
    );
    let public_key = file.to_ascii_lowercase().ends_with(".pub");
    match public_key {
        true => format!(
            "{first} A public key is no secret: publish it with --include '{file}' (a private key must never be published: keep it out of the module)"
        ),
        false => format!(
            "{first} Never publish a secret: have the module take the value as a variable (or from a secret store) and remove {file} from the configuration; if {file} holds no secret (a CA bundle, a template), rename it to a name that is not secret-shaped and change the configuration to match"
        ),
    }
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

/// A walk of the folder being packed.
struct Walk {
    root: PathBuf,
    include: Includes,
    entries: Vec<Entry>,
    excluded: Vec<String>,
    secret_shaped: Vec<String>,
    included: Vec<String>,
    /// Bytes of the files listed so far.
    total: u64,
}

impl Walk {
    /// Lists `dir` (at `prefix` in the archive) and what lies below it, in name order,
    /// never following a link out of the root.
    fn collect(&mut self, dir: &Path, prefix: &str) -> Result<(), PackError> {
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
            if self.entries.len() >= MAX_ENTRIES {
                return Err(PackError::Refused(format!(
                    "{} holds more than {MAX_ENTRIES} files and folders: is it the module's folder?",
                    self.root.display()
                )));
            }
            let shown = match kind.is_dir() {
                true => format!("{relative}/"),
                false => relative.clone(),
            };
            match self.include.left_out(&shown, &name, kind.is_dir()) {
                Some(LeftOut::Never) => {
                    self.excluded.push(shown);
                    continue;
                }
                Some(LeftOut::SecretShaped) => {
                    self.excluded.push(shown.clone());
                    self.secret_shaped.push(shown);
                    continue;
                }
                None if !kind.is_dir() && is_secret_shaped(&relative) => {
                    self.included.push(relative.clone());
                }
                None => {}
            }
            if kind.is_dir() {
                self.entries.push(Entry {
                    name: shown,
                    source: None,
                    executable: false,
                });
                let prefix = format!("{relative}/");
                self.collect(&path, &prefix)?;
            } else if kind.is_file() {
                self.total += std::fs::metadata(&path).map_err(io_at(&path))?.len();
                self.entries.push(Entry {
                    name: relative,
                    executable: is_executable(&path)?,
                    source: Some(path),
                });
            } else if kind.is_symlink() {
                let target = self.link_inside(&path, &relative)?;
                self.total += std::fs::metadata(&target).map_err(io_at(&target))?.len();
                self.entries.push(Entry {
                    name: relative,
                    executable: is_executable(&target)?,
                    source: Some(target),
                });
            } else {
                return Err(PackError::Refused(format!(
                    "{relative} is not a regular file (a FIFO, socket or device): remove it, or pack the archive yourself"
                )));
            }
            if self.total > MAX_BYTES {
                return Err(PackError::Refused(format!(
                    "{} holds more than {MAX_BYTES} bytes: is it the module's folder?",
                    self.root.display()
                )));
            }
        }
        Ok(())
    }

    /// The file a link inside the module points at, when it is a file inside the module
    /// that is itself packed; links anywhere else are refused (their content would leak in,
    /// or be missing).
    fn link_inside(&self, link: &Path, relative: &str) -> Result<PathBuf, PackError> {
        let refused = |why: &str| {
            PackError::Refused(format!(
                "{relative} is a symbolic link {why}: copy the file in, or remove the link"
            ))
        };
        let Ok(target) = link.canonicalize() else {
            return Err(refused("to nothing"));
        };
        let Ok(inside) = target.strip_prefix(&self.root) else {
            return Err(refused(&format!(
                "to {}, outside the module folder",
                target.display()
            )));
        };
        let inside: Vec<String> = inside
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let inside = inside.join("/");
        match self.include.left_out_target(&inside) {
            Some(LeftOut::Never) => return Err(refused("to a file that is never published")),
            Some(LeftOut::SecretShaped) => {
                return Err(refused(&format!(
                    "to {inside}, a secret-shaped file that is left out (unless --include brings it back)"
                )))
            }
            None => {}
        }
        if !target.is_file() {
            return Err(refused("to a folder (links to folders are not packed)"));
        }
        Ok(target)
    }
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
mod tests;
