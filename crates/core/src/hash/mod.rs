//! Provider package hashes, as Terraform computes them for lock files:
//!
//! - `zh:` the SHA-256 of the zip file itself (hex), what SHA256SUMS lists;
//! - `h1:` Terraform's hash of the package's *contents*: the base64 SHA-256 of the sorted lines
//!   `<sha256 hex of file>  <file name>\n`, one per file in the unpacked package.
//!
//! Both are streamed with fixed-size buffers, so memory stays small whatever the package size.
//! Packages come from publishers and are hostile until checked: every read is bounded by
//! [`PackageLimits`] (file size, entry count, inflated size, compression ratio, time), and a
//! zip whose entries overlap (the trick that makes a small file inflate to terabytes) is
//! refused before anything is inflated.

mod dir;
mod h1;
mod listing;
mod reading;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::{self, Read, Seek};
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

pub use dir::{h1_of_dir, h1_of_dir_within, DirHashError, DirLimits};
pub(crate) use h1::read_failure as zip_read_failure;
use h1::{h1_checked, h1_within};
pub use h1::{h1_summary, overlapping_entries};
use reading::Deadline;
pub(crate) use reading::PositionalReader;

const BUFFER: usize = 256 * 1024;
const MIB: u64 = 1024 * 1024;

/// How much work one package may cost. Real provider packages hold a few files and inflate
/// to well under 1 GiB; the defaults leave a wide margin above that and stop bombs early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageLimits {
    /// Largest zip file read at all.
    pub max_package_bytes: u64,
    /// Most entries (files and folders) in one zip.
    pub max_entries: usize,
    /// Most bytes all entries together may inflate to.
    pub max_inflated_bytes: u64,
    /// Highest inflated:compressed ratio of an entry that inflates to more than 1 MiB
    /// (executables compress 3-5:1; only crafted data reaches hundreds).
    pub max_ratio: u64,
    /// How long hashing one package may take.
    pub max_duration: Duration,
}

impl Default for PackageLimits {
    fn default() -> Self {
        Self {
            max_package_bytes: 2048 * MIB,
            max_entries: 1_000,
            max_inflated_bytes: 4096 * MIB,
            max_ratio: 200,
            max_duration: Duration::from_secs(600),
        }
    }
}

/// A package's `zh:` and `h1:` hashes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PackageHashes {
    /// SHA-256 of the zip file, lowercase hex (no prefix): what SHA256SUMS lists.
    pub sha256: String,
    /// `h1:<base64>`: computed only for packages worth unpacking (a mirror upload, or a
    /// registry package that a signed SHA256SUMS lists), so a hostile zip costs one pass of
    /// SHA-256 until a trusted signature vouches for it.
    #[serde(default)]
    pub h1: Option<String>,
}

impl PackageHashes {
    /// The `zh:` hash as lock files write it: `zh:<sha256 hex>`.
    pub fn zh(&self) -> String {
        format!("zh:{}", self.sha256)
    }
}

/// Why a package could not be hashed. Every variant is a verdict on the file, shown to its
/// publisher, except [`HashError::Io`], which may be a passing failure of the store.
#[derive(Debug, thiserror::Error)]
pub enum HashError {
    /// The package could not be read (or is not a regular file).
    #[error("cannot read the package: {0}")]
    Io(#[from] io::Error),
    /// The file is not a zip, or an entry cannot be inflated: what went wrong.
    #[error("not a valid zip archive: {0}")]
    Zip(String),
    /// An entry's name (given) is absolute, climbs out with `..`, or holds a backslash,
    /// newline or NUL.
    #[error("the zip holds an unsafe file name {0:?}")]
    UnsafeName(String),
    /// The zip file is larger than [`PackageLimits::max_package_bytes`].
    #[error("the package is {size} bytes, more than the {max} a package may have")]
    TooLarge {
        /// The file's size in bytes.
        size: u64,
        /// The limit, in bytes.
        max: u64,
    },
    /// The zip lists more than [`PackageLimits::max_entries`] entries.
    #[error("the zip holds {count} entries, more than the {max} a package may have")]
    TooManyEntries {
        /// The entries it lists (or declares in its end records).
        count: usize,
        /// The limit.
        max: usize,
    },
    /// The entries' declared sizes add up to more than [`PackageLimits::max_inflated_bytes`].
    #[error("the zip inflates to more than {max} bytes, the most a package may hold")]
    InflatesTooMuch {
        /// The limit, in bytes.
        max: u64,
    },
    /// An entry inflates to over 1 MiB and to more than [`PackageLimits::max_ratio`] times
    /// its compressed size.
    #[error("the zip entry {name:?} inflates {ratio} times its compressed size (at most {max} allowed): a compression bomb")]
    Ratio {
        /// The entry's name in the zip.
        name: String,
        /// Its inflated size over its compressed size, rounded down.
        ratio: u64,
        /// The limit.
        max: u64,
    },
    /// Two entries' data overlap, or an entry's runs into the central directory.
    #[error("the zip's entries overlap each other (the shape of a compression bomb)")]
    Overlap,
    /// An entry inflates to more bytes than its listing declared.
    #[error("the zip entry {name:?} inflates to more than the {declared} bytes it declares")]
    SizeMismatch {
        /// The name it unpacks to.
        name: String,
        /// The size it declared, in bytes.
        declared: u64,
    },
    /// Reading the zip's listing took more than its budget, or the file ends with too many
    /// end records.
    #[error("the zip's listing is larger than a package's may be (crafted end records, or far more entries than allowed)")]
    ListingTooLarge,
    /// Hashing took longer than [`PackageLimits::max_duration`] (given).
    #[error("hashing the package took longer than {0:?}, the most one package may take (if the host was busy, publish the file again or reindex to retry)")]
    TimedOut(Duration),
    /// No file at the zip's top level is the provider executable Terraform looks for.
    #[error("{}", no_executable(.prefix, .in_folder.as_deref()))]
    NoExecutable {
        /// `terraform-provider-<type>`
        prefix: String,
        /// A file with a fitting name found inside a folder instead.
        in_folder: Option<String>,
    },
}

fn no_executable(prefix: &str, in_folder: Option<&str>) -> String {
    let mut text = format!(
        "the zip holds no provider executable at its top level: Terraform looks there for a file named {prefix}, or starting with {prefix}_ or {prefix}. (goreleaser names it {prefix}_v<version>, with .exe for Windows), and fails with \"provider binary not found: could not find executable file starting with {prefix}\""
    );
    if let Some(path) = in_folder {
        text.push_str(&format!(
            "; {path} is inside a folder: zip the executable itself, not the folder holding it"
        ));
    }
    text
}

/// Whether a file unpacked at `name` (relative, `/`-separated) is what Terraform 1.11 takes
/// for a provider's executable: at the package's top level, named `prefix`
/// (`terraform-provider-<type>`) followed by nothing, or by `_` or `.` and anything
/// (`terraform-provider-widget_v1.2.0`, `terraform-provider-widget.exe`). Terraform does not
/// compare the version in the name, nor require `.exe` on Windows.
pub fn is_provider_executable(name: &str, prefix: &str) -> bool {
    !name.contains('/')
        && name
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['_', '.']))
}

impl HashError {
    /// True when the store failed rather than the file: worth retrying, not a verdict.
    pub fn is_io(&self) -> bool {
        matches!(self, HashError::Io(_))
    }
}

/// Hashes an open zip file (`zh:` and `h1:`) within `limits`, reading it by position: the
/// caller's handle is what is hashed, whatever happens to the path meanwhile.
pub fn hash_zip(file: &File, limits: &PackageLimits) -> Result<PackageHashes, HashError> {
    hash_both(file, limits, None)
}

/// Hashes an open provider package of type `provider_type` as [`hash_zip`] does, and refuses
/// it, before anything is inflated, when it does not hold the executable Terraform looks for
/// after unpacking it (see [`is_provider_executable`]).
pub fn hash_package(
    file: &File,
    limits: &PackageLimits,
    provider_type: &str,
) -> Result<PackageHashes, HashError> {
    let prefix = format!("terraform-provider-{provider_type}");
    hash_both(file, limits, Some(&prefix))
}

/// Both hashes at once, on two threads reading the one file by position; with
/// `executable`, as [`hash_package`] checks it.
fn hash_both(
    file: &File,
    limits: &PackageLimits,
    executable: Option<&str>,
) -> Result<PackageHashes, HashError> {
    let len = check_size(file, limits)?;
    let deadline = Deadline::new(limits.max_duration);
    std::thread::scope(|scope| {
        let raw = scope.spawn(|| sha256_with_deadline(PositionalReader::new(file, len), deadline));
        let h1 = h1_checked(
            PositionalReader::new(file, len),
            limits,
            deadline,
            executable,
        );
        let sha256 = raw
            .join()
            .map_err(|_| HashError::Zip("the hashing thread failed".into()))??;
        Ok(PackageHashes {
            sha256,
            h1: Some(h1?),
        })
    })
}

/// The SHA-256 (`zh:`) of an open zip file only, within `limits`: the cheap check that comes
/// before any unpacking.
pub fn sha256_of_package(file: &File, limits: &PackageLimits) -> Result<String, HashError> {
    let len = check_size(file, limits)?;
    sha256_with_deadline(
        PositionalReader::new(file, len),
        Deadline::new(limits.max_duration),
    )
}

/// SHA-256 (lowercase hex) and length of everything `reader` yields, read in fixed-size
/// chunks; with `copy`, each chunk is also written there (a spool checked as it is written).
pub async fn sha256_of_reader(
    mut reader: impl tokio::io::AsyncRead + Unpin,
    mut copy: Option<&mut (dyn io::Write + Send)>,
) -> io::Result<(String, u64)> {
    use tokio::io::AsyncReadExt;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = reader.read(&mut buffer).await?;
        if n == 0 {
            return Ok((hex::encode(hasher.finalize()), total));
        }
        total += n as u64;
        hasher.update(&buffer[..n]);
        if let Some(copy) = copy.as_mut() {
            copy.write_all(&buffer[..n])?;
        }
    }
}

/// The `h1:` of an open zip file only, within `limits`.
pub fn h1_of_package(file: &File, limits: &PackageLimits) -> Result<String, HashError> {
    let len = check_size(file, limits)?;
    h1_within(
        PositionalReader::new(file, len),
        limits,
        Deadline::new(limits.max_duration),
    )
}

/// Hashes the zip file at `path` (for the command line), within `limits`.
pub fn hash_zip_file(path: &Path, limits: &PackageLimits) -> Result<PackageHashes, HashError> {
    let file = File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(HashError::Io(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        )));
    }
    hash_zip(&file, limits)
}

fn check_size(file: &File, limits: &PackageLimits) -> Result<u64, HashError> {
    let size = file.metadata()?.len();
    if size > limits.max_package_bytes {
        return Err(HashError::TooLarge {
            size,
            max: limits.max_package_bytes,
        });
    }
    Ok(size)
}

/// SHA-256 of everything `reader` yields, lowercase hex.
pub fn sha256_hex(reader: impl Read) -> Result<String, io::Error> {
    let mut hasher = Sha256::new();
    copy_into(reader, &mut hasher, None).map_err(|e| match e {
        HashError::Io(e) => e,
        other => io::Error::other(other.to_string()),
    })?;
    Ok(hex::encode(hasher.finalize()))
}

fn sha256_with_deadline(reader: impl Read, deadline: Deadline) -> Result<String, HashError> {
    let mut hasher = Sha256::new();
    copy_into(reader, &mut hasher, Some(deadline))?;
    Ok(hex::encode(hasher.finalize()))
}

/// Feeds `reader` into `hasher`; returns the number of bytes.
fn copy_into(
    mut reader: impl Read,
    hasher: &mut Sha256,
    deadline: Option<Deadline>,
) -> Result<u64, HashError> {
    let mut buffer = vec![0u8; BUFFER];
    let mut total = 0u64;
    loop {
        if let Some(deadline) = deadline {
            deadline.check()?;
        }
        match reader.read(&mut buffer) {
            Ok(0) => return Ok(total),
            Ok(n) => {
                hasher.update(&buffer[..n]);
                total += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Terraform's `h1:` hash of a zip's contents (its files, as unpacked; folders don't count),
/// within `limits`.
pub fn h1_of_zip<R: Read + Seek>(reader: R, limits: &PackageLimits) -> Result<String, HashError> {
    h1_within(reader, limits, Deadline::new(limits.max_duration))
}
