//! Module archives, checked before they are offered: what `terraform init` would unpack, read
//! as a stream with bounded memory and time.
//!
//! A module version is a `.tar.gz`/`.tgz` (a gzip-compressed tar) or a `.zip` of the module's
//! files. [`check`] refuses, each with its own reason (the error's `Display`, shown to the
//! publisher by `tfreg status` and the logs):
//!
//! - an archive that does not open as its name says (random bytes, a text file, a zip named
//!   `.tar.gz`), or is empty;
//! - an archive without Terraform configuration (`*.tf` or `*.tf.json`) at its root, with
//!   "archive the folder's contents, not the folder" when everything sits under one folder;
//! - an entry whose path holds `..`, is absolute, uses backslashes or control characters, or
//!   lies beneath a link; a symbolic or hard link pointing outside the archive;
//! - devices, FIFOs and other special entries: Terraform would unpack them as empty files,
//!   never what the publisher meant;
//! - archive bombs: [`ModuleLimits`] caps the expanded size, the entry count, the compression
//!   ratio and the time one check may take.
//!
//! Secret-shaped files ([`secrets`]: `.env`, `*.pem`, `credentials`, ...) are not refused (an
//! uploaded archive is served as uploaded), but listed in [`ModuleSummary::secret_shaped`], so
//! the indexer and `tfreg status` warn about them.
//!
//! Memory stays bounded: tar entries are read as a stream (no entry is buffered whole, and
//! extension headers are read up to [`MAX_NAME_BYTES`]); a zip's listing is checked by
//! [`crate::hash::h1_of_package`] (its end records, a metered listing, overlapping entries)
//! before the zip library is trusted with it. What is kept is one path per entry, each at most
//! [`MAX_NAME_BYTES`], for the link checks at the end.

mod entries;
mod hashed;
mod reader;
pub mod secrets;
mod targz;
mod zipfile;

use std::fs::File;
use std::path::Path;
use std::time::Duration;

pub use crate::layout::ArchiveFormat;

const MIB: u64 = 1024 * 1024;

/// The longest entry path (and link target) accepted, in bytes: far beyond any real module's,
/// and what bounds the memory kept per entry.
pub const MAX_NAME_BYTES: usize = 1024;

/// Archives (or zip entries) that expand to at most this much are never refused for their
/// compression ratio: small files of repeated text compress far beyond any sane cap.
pub const RATIO_FLOOR_BYTES: u64 = MIB;

/// How much work checking one module archive may cost.
///
/// Real modules are kilobytes of `.tf` files, sometimes with a few megabytes of templates,
/// policies or bundled function code; the defaults leave a wide margin above that and stop
/// bombs long before they cost a publisher's or a user's disk:
///
/// | limit | default | why |
/// |---|---|---|
/// | `max_expanded_bytes` | 512 MiB | every `terraform init` unpacks it; the largest real modules (with bundled Lambda code) stay well under 100 MiB |
/// | `max_entries` | 10,000 | modules hold tens to hundreds of files; thousands when vendoring code |
/// | `max_ratio` | 200 | text compresses 5-20:1, only crafted data reaches hundreds (checked once more than [`RATIO_FLOOR_BYTES`] is expanded) |
/// | `max_duration` | 120 s | reading 512 MiB takes seconds; a busy host gets a wide margin |
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleLimits {
    /// Most bytes the archive may expand to: for a gzip tar, the whole tar stream; for a
    /// zip, its files.
    pub max_expanded_bytes: u64,
    /// Most entries (files, folders and links).
    pub max_entries: usize,
    /// Highest expanded:compressed ratio, of the whole tar stream or of each zip entry,
    /// once more than [`RATIO_FLOOR_BYTES`] is expanded.
    pub max_ratio: u64,
    /// How long checking one archive may take.
    pub max_duration: Duration,
}

impl Default for ModuleLimits {
    fn default() -> Self {
        Self {
            max_expanded_bytes: 512 * MIB,
            max_entries: 10_000,
            max_ratio: 200,
            max_duration: Duration::from_secs(120),
        }
    }
}

/// What a module archive that passed holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleSummary {
    /// The format it was checked as.
    pub format: ArchiveFormat,
    /// Files, folders and links.
    pub entries: usize,
    /// Regular files.
    pub files: usize,
    /// The files' sizes added up.
    pub file_bytes: u64,
    /// Terraform configuration files (`*.tf`, `*.tf.json`) at the root.
    pub configuration_files: usize,
    /// The paths of secret-shaped files ([`secrets::is_secret_shaped`]), in archive order:
    /// served all the same, with a warning.
    pub secret_shaped: Vec<String>,
    /// Terraform's `h1:` of the tree `terraform init` unpacks the archive to (see
    /// [`crate::hash::h1_summary`]): every regular file, a later entry of a path replacing an
    /// earlier one, folders not counted. What `tfreg verify` compares an installed module
    /// with.
    pub h1: String,
}

/// Why a module archive is refused. `Display` is the reason a publisher reads; every variant
/// is a verdict on the file except [`ModuleArchiveError::Io`], a failure to read it.
#[derive(Debug, thiserror::Error)]
pub enum ModuleArchiveError {
    /// Reading the file failed: not a verdict on it.
    #[error("cannot read the archive: {0}")]
    Io(#[from] std::io::Error),
    /// The file name ends in none of the archive suffixes.
    #[error("{name:?} is not a module archive name: it must end in .tar.gz, .tgz or .zip")]
    UnknownFormat {
        /// The file name given.
        name: String,
    },
    /// The content is not of the format its name says.
    #[error("not a {kind}, as the {suffix} name says: {detail}")]
    NotAsNamed {
        /// The format expected (`zip archive`).
        kind: &'static str,
        /// The suffix that named the format (`.zip`).
        suffix: &'static str,
        /// What the reader found wrong.
        detail: String,
    },
    /// An archive without entries.
    #[error("the archive is empty: a module archive holds the module's files, with its .tf files at the root")]
    Empty,
    /// No `*.tf` or `*.tf.json` at the root (and no single top folder that holds some).
    #[error("the archive holds no Terraform configuration (*.tf or *.tf.json) at its root, where Terraform looks for it")]
    NoConfiguration,
    /// No configuration at the root, but everything sits in one folder that has some: the
    /// folder was archived rather than its contents.
    #[error("everything in the archive sits under one folder, {folder:?}, and Terraform reads the module from the archive's root: archive the folder's contents, not the folder (e.g. `tar -czf module.tar.gz -C {folder} .`)")]
    ArchivedFolder {
        /// The one top-level folder.
        folder: String,
    },
    /// An entry path with a `..` component.
    #[error("the entry {name:?} has `..` in its path (Terraform refuses such archives: \"entry contains '..'\")")]
    ParentPath {
        /// The entry's path, as shown to the publisher.
        name: String,
    },
    /// An entry path starting at the file system's root.
    #[error(
        "the entry {name:?} has an absolute path; entries must be relative to the module's root"
    )]
    AbsolutePath {
        /// The entry's path, as shown to the publisher.
        name: String,
    },
    /// Any other unsafe or unreadable entry path (backslashes, control characters, too long).
    #[error("the entry {name:?} {why}")]
    BadName {
        /// The entry's path, as shown to the publisher.
        name: String,
        /// What is wrong with it, completing "the entry ... ".
        why: &'static str,
    },
    /// A link whose target lies outside the archive.
    #[error("the link {name:?} points outside the archive, to {target:?}; archive the file itself (tar -h follows links)")]
    LinkOutside {
        /// The link's path.
        name: String,
        /// Where it points.
        target: String,
    },
    /// A link inside the archive, which `terraform init` would not unpack as a link.
    #[error("the link {name:?} (to {target:?}) would not survive terraform init, which unpacks a tar link as an empty file and a zip link as a file holding its target's path; archive the file itself (tar -h follows links; zip does unless given --symlinks)")]
    LinkInside {
        /// The link's path.
        name: String,
        /// Where it points.
        target: String,
    },
    /// A link whose target goes through another link.
    #[error("the link {name:?} points to {target:?} through the link {through:?}, so where it ends cannot be told from the archive (it may lie outside)")]
    LinkChain {
        /// The link's path.
        name: String,
        /// Where it points.
        target: String,
        /// The other link its target passes through.
        through: String,
    },
    /// An entry whose path passes through a link.
    #[error("the entry {name:?} lies beneath the link {link:?}: unpacking it would write through the link")]
    BeneathLink {
        /// The entry's path.
        name: String,
        /// The link above it.
        link: String,
    },
    /// A device, FIFO or other entry that is neither file, folder nor link.
    #[error("the entry {name:?} is a {kind}; a module archive holds only files and folders")]
    Unsupported {
        /// The entry's path.
        name: String,
        /// What kind of entry it is, in words (`character device`).
        kind: String,
    },
    /// Expanding past [`ModuleLimits::max_expanded_bytes`].
    #[error("the archive expands to more than {max} bytes, the most a module may hold")]
    TooLarge {
        /// The limit, in bytes.
        max: u64,
    },
    /// More entries than [`ModuleLimits::max_entries`].
    #[error("the archive holds more than {max} entries, the most a module may have")]
    TooManyEntries {
        /// The limit.
        max: usize,
    },
    /// A compression ratio above [`ModuleLimits::max_ratio`].
    #[error("{what} expands {ratio} times its compressed size (at most {max} allowed): a compression bomb")]
    Ratio {
        /// What expanded so far: the archive, or one zip entry, in words.
        what: String,
        /// Its expanded:compressed ratio.
        ratio: u64,
        /// The limit.
        max: u64,
    },
    /// Zip entries whose stored data overlap each other's.
    #[error("the zip's entries overlap each other (the shape of a compression bomb)")]
    Overlap,
    /// A zip's central directory too large to be a module's.
    #[error("the zip's listing is larger than a module's may be (crafted end records, or far more entries than allowed)")]
    ListingTooLarge,
    /// The check ran past [`ModuleLimits::max_duration`] (the limit it held).
    #[error("checking the archive took longer than {0:?}, the most one archive may take (if the host was busy, publish the file again or reindex to retry)")]
    TimedOut(Duration),
}

impl ModuleArchiveError {
    /// True when reading failed rather than the file: worth retrying, not a verdict.
    pub fn is_io(&self) -> bool {
        matches!(self, ModuleArchiveError::Io(_))
    }
}

/// Checks an open module archive of `format` within `limits`, reading it by position from
/// its start: the caller's handle is what is checked, whatever happens to its path.
/// Synchronous and CPU-bound: async callers run it on a blocking thread.
pub fn check(
    file: &File,
    format: ArchiveFormat,
    limits: &ModuleLimits,
) -> Result<ModuleSummary, ModuleArchiveError> {
    check_visiting(file, format, limits, &mut |_, _| Ok(()))
}

/// Called with each regular file's normalised path (`modules/vpc/main.tf`) and a reader of
/// its content, as the check meets it. It reads what it wants (bounded by the caller) and
/// fails only when reading fails.
pub type Visitor<'a> = dyn FnMut(&str, &mut dyn std::io::Read) -> std::io::Result<()> + 'a;

/// [`check`], showing `visit` each regular file on the way: the one walk of the archive
/// (with the same limits and deadline) for readers of its content, such as the module docs.
/// A file of an archive that is then refused may have been shown already.
pub fn check_visiting(
    file: &File,
    format: ArchiveFormat,
    limits: &ModuleLimits,
    visit: &mut Visitor<'_>,
) -> Result<ModuleSummary, ModuleArchiveError> {
    let deadline = reader::Deadline::new(limits.max_duration);
    let len = file.metadata()?.len();
    // Every file is hashed as it streams by, the visitor reading its part on the way: the
    // `h1:` costs no second read of the archive.
    let mut digests = std::collections::BTreeMap::new();
    let mut hashing = |path: &str, content: &mut dyn std::io::Read| -> std::io::Result<()> {
        let mut tee = hashed::Tee::new(content);
        visit(path, &mut tee)?;
        // Unpacking writes a later entry of a path over an earlier one.
        digests.insert(path.to_owned(), tee.finish()?);
        Ok(())
    };
    let found = match format {
        ArchiveFormat::TarGz | ArchiveFormat::Tgz => {
            targz::check(file, len, format, limits, deadline, &mut hashing)?
        }
        ArchiveFormat::Zip => zipfile::check(file, len, limits, deadline, &mut hashing)?,
    };
    let mut summary = found.summary(format)?;
    summary.h1 = crate::hash::h1_summary(&digests);
    Ok(summary)
}

/// Checks the module archive at `path`, its format taken from its name (`.tar.gz`, `.tgz`,
/// `.zip`): what `tfreg publish` runs before uploading.
pub fn check_path(path: &Path, limits: &ModuleLimits) -> Result<ModuleSummary, ModuleArchiveError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some((_, format)) = ArchiveFormat::split(&name.to_ascii_lowercase()) else {
        return Err(ModuleArchiveError::UnknownFormat { name });
    };
    let file = File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(ModuleArchiveError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        )));
    }
    check(&file, format, limits)
}

/// A module archive of `files` (path, content; a path ending in `/` is a folder), for tests
/// and fuzzing: what a publisher's `tar -czf` or `zip -r` would make.
#[doc(hidden)]
pub fn archive_of(format: ArchiveFormat, files: &[(&str, &[u8])]) -> Vec<u8> {
    match format {
        ArchiveFormat::TarGz | ArchiveFormat::Tgz => targz::archive_of(files),
        ArchiveFormat::Zip => zipfile::archive_of(files),
    }
}
