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

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sha2::{Digest, Sha256};

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
    pub fn zh(&self) -> String {
        format!("zh:{}", self.sha256)
    }
}

/// Why a package could not be hashed. Every variant is a verdict on the file, shown to its
/// publisher, except [`HashError::Io`], which may be a passing failure of the store.
#[derive(Debug, thiserror::Error)]
pub enum HashError {
    #[error("cannot read the package: {0}")]
    Io(#[from] io::Error),
    #[error("not a valid zip archive: {0}")]
    Zip(String),
    #[error("the zip holds an unsafe file name {0:?}")]
    UnsafeName(String),
    #[error("the package is {size} bytes, more than the {max} a package may have")]
    TooLarge { size: u64, max: u64 },
    #[error("the zip holds {count} entries, more than the {max} a package may have")]
    TooManyEntries { count: usize, max: usize },
    #[error("the zip inflates to more than {max} bytes, the most a package may hold")]
    InflatesTooMuch { max: u64 },
    #[error("the zip entry {name:?} inflates {ratio} times its compressed size (at most {max} allowed): a compression bomb")]
    Ratio { name: String, ratio: u64, max: u64 },
    #[error("the zip's entries overlap each other (the shape of a compression bomb)")]
    Overlap,
    #[error("the zip entry {name:?} inflates to more than the {declared} bytes it declares")]
    SizeMismatch { name: String, declared: u64 },
    #[error("the zip's listing is larger than a package's may be (crafted end records, or far more entries than allowed)")]
    ListingTooLarge,
    #[error("hashing the package took longer than {0:?}, the most one package may take (if the host was busy, publish the file again or reindex to retry)")]
    TimedOut(Duration),
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

/// When hashing one package must end.
#[derive(Debug, Clone, Copy)]
struct Deadline {
    at: Instant,
    budget: Duration,
}

impl Deadline {
    fn new(budget: Duration) -> Self {
        Self {
            at: Instant::now() + budget,
            budget,
        }
    }

    fn check(&self) -> Result<(), HashError> {
        if Instant::now() > self.at {
            return Err(HashError::TimedOut(self.budget));
        }
        Ok(())
    }
}

/// Reads a file by position, so several readers share one open file without moving each
/// other's cursor (and without reopening a path that may have been replaced meanwhile).
pub(crate) struct PositionalReader<'a> {
    file: &'a File,
    pos: u64,
    len: u64,
}

impl<'a> PositionalReader<'a> {
    /// Reads the first `len` bytes of `file`.
    pub(crate) fn new(file: &'a File, len: u64) -> Self {
        Self { file, pos: 0, len }
    }
}

fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        std::os::windows::fs::FileExt::seek_read(file, buf, offset)
    }
}

impl Read for PositionalReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.len.saturating_sub(self.pos);
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let n = read_at(self.file, &mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for PositionalReader<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = target
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.pos)
    }
}

/// Hashes an open zip file (`zh:` and `h1:`) within `limits`, reading it by position: the
/// caller's handle is what is hashed, whatever happens to the path meanwhile.
pub fn hash_zip(file: &File, limits: &PackageLimits) -> Result<PackageHashes, HashError> {
    let len = check_size(file, limits)?;
    let deadline = Deadline::new(limits.max_duration);
    std::thread::scope(|scope| {
        let raw = scope.spawn(|| sha256_with_deadline(PositionalReader::new(file, len), deadline));
        let h1 = h1_within(PositionalReader::new(file, len), limits, deadline);
        let sha256 = raw
            .join()
            .map_err(|_| HashError::Zip("the hashing thread failed".into()))??;
        Ok(PackageHashes {
            sha256,
            h1: Some(h1?),
        })
    })
}

/// Hashes an open provider package of type `provider_type` as [`hash_zip`] does, and refuses
/// it, before anything is inflated, when it does not hold the executable Terraform looks for
/// after unpacking it (see [`is_provider_executable`]).
pub fn hash_package(
    file: &File,
    limits: &PackageLimits,
    provider_type: &str,
) -> Result<PackageHashes, HashError> {
    let len = check_size(file, limits)?;
    let deadline = Deadline::new(limits.max_duration);
    let prefix = format!("terraform-provider-{provider_type}");
    std::thread::scope(|scope| {
        let raw = scope.spawn(|| sha256_with_deadline(PositionalReader::new(file, len), deadline));
        let h1 = h1_checked(
            PositionalReader::new(file, len),
            limits,
            deadline,
            Some(&prefix),
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

/// The name a zip entry unpacks to, relative and with `/` separators; `None` for folders.
fn unpacked_name(raw: &str) -> Result<Option<String>, HashError> {
    if raw.ends_with('/') {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(HashError::UnsafeName(raw.to_owned())),
            p => parts.push(p),
        }
    }
    if parts.is_empty() || raw.starts_with('/') || raw.contains(['\n', '\\', '\0']) {
        return Err(HashError::UnsafeName(raw.to_owned()));
    }
    Ok(Some(parts.join("/")))
}

/// Most end-of-central-directory records tolerated at the end of a zip (real ones have one).
const MAX_END_RECORDS: usize = 4;

/// How far before its end a zip's last end record may start: the record (22 bytes) and
/// its comment (at most 65,535 bytes).
const TAIL: u64 = 22 + 65_535;

/// What a [`Metered`] reader has read, may read, and why it stopped.
#[derive(Debug, Default)]
struct Meter {
    used: std::sync::atomic::AtomicU64,
    /// Bytes the current phase may read in all; `u64::MAX`: no bound.
    budget: std::sync::atomic::AtomicU64,
    over_budget: std::sync::atomic::AtomicBool,
    timed_out: std::sync::atomic::AtomicBool,
}

/// A reader that stops (with an error the zip library passes up) past the deadline, or
/// past a byte budget: what bounds the zip library's own reading of a hostile listing.
struct Metered<R> {
    inner: R,
    meter: std::sync::Arc<Meter>,
    deadline: Deadline,
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use std::sync::atomic::Ordering::Relaxed;
        if self.deadline.check().is_err() {
            self.meter.timed_out.store(true, Relaxed);
            return Err(io::Error::new(io::ErrorKind::InvalidData, "out of time"));
        }
        let used = self.meter.used.load(Relaxed);
        if used >= self.meter.budget.load(Relaxed) {
            self.meter.over_budget.store(true, Relaxed);
            return Err(io::Error::new(io::ErrorKind::InvalidData, "out of budget"));
        }
        let n = self.inner.read(buf)?;
        self.meter.used.store(used + n as u64, Relaxed);
        Ok(n)
    }
}

impl<R: Seek> Seek for Metered<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.inner.seek(to)
    }
}

fn le_u16(bytes: &[u8], at: usize) -> u64 {
    u64::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
}

fn le_u32(bytes: &[u8], at: usize) -> u64 {
    u64::from(u32::from_le_bytes([
        bytes[at],
        bytes[at + 1],
        bytes[at + 2],
        bytes[at + 3],
    ]))
}

fn le_u64(bytes: &[u8], at: usize) -> u64 {
    let mut eight = [0u8; 8];
    eight.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(eight)
}

/// The entry count of the zip64 end record that the locator before `record_at` points at.
fn zip64_count<R: Read + Seek>(reader: &mut R, record_at: u64) -> io::Result<Option<u64>> {
    if record_at < 20 {
        return Ok(None);
    }
    let mut locator = [0u8; 20];
    reader.seek(SeekFrom::Start(record_at - 20))?;
    if reader.read_exact(&mut locator).is_err() || !locator.starts_with(b"PK\x06\x07") {
        return Ok(None);
    }
    let mut end64 = [0u8; 56];
    reader.seek(SeekFrom::Start(le_u64(&locator, 8)))?;
    if reader.read_exact(&mut end64).is_err() || !end64.starts_with(b"PK\x06\x06") {
        return Ok(None);
    }
    Ok(Some(le_u64(&end64, 24).max(le_u64(&end64, 32))))
}

/// Reads the end of a zip before the zip library does: its end records must be where they
/// belong and few, and none may claim more entries than allowed (the library sizes its
/// tables from those claims before it reads a byte of the listing).
fn check_end_records<R: Read + Seek>(reader: &mut R, max_entries: usize) -> Result<(), HashError> {
    let len = reader.seek(SeekFrom::End(0))?;
    let start = len.saturating_sub(TAIL);
    reader.seek(SeekFrom::Start(start))?;
    let mut tail = Vec::with_capacity((len - start) as usize);
    reader.by_ref().take(TAIL).read_to_end(&mut tail)?;
    let records: Vec<usize> = (0..tail.len().saturating_sub(21))
        .filter(|&at| tail[at..].starts_with(b"PK\x05\x06"))
        .collect();
    if records.is_empty() {
        return Err(HashError::Zip(
            "no end of central directory record at the end: not a zip archive".into(),
        ));
    }
    if records.len() > MAX_END_RECORDS {
        return Err(HashError::ListingTooLarge);
    }
    for at in records {
        let count = le_u16(&tail, at + 10).max(le_u16(&tail, at + 8));
        let zip64 = count == 0xFFFF
            || le_u32(&tail, at + 12) == 0xFFFF_FFFF
            || le_u32(&tail, at + 16) == 0xFFFF_FFFF;
        // The zip64 locator sits right before the end record and points at the zip64 end
        // record, whose counts are the ones the library believes.
        let count = match zip64 {
            true => zip64_count(reader, start + at as u64)?.unwrap_or(count),
            false => count,
        };
        if count > max_entries as u64 {
            return Err(HashError::TooManyEntries {
                count: usize::try_from(count).unwrap_or(usize::MAX),
                max: max_entries,
            });
        }
    }
    reader.seek(SeekFrom::Start(0))?;
    Ok(())
}

/// Terraform's `h1:` hash of a zip's contents (its files, as unpacked; folders don't count),
/// within `limits`.
pub fn h1_of_zip<R: Read + Seek>(reader: R, limits: &PackageLimits) -> Result<String, HashError> {
    h1_within(reader, limits, Deadline::new(limits.max_duration))
}

/// Where one entry lies in the file, for the overlap check.
struct Span {
    header_start: u64,
    data_end: u64,
}

/// A zip whose central directory lists `copies` entries that all point at the one local file
/// of the one-entry, comment-less zip `zip`: the overlapping-entries compression bomb, in
/// miniature (real ones chain thousands to inflate to terabytes). For tests and fuzzing:
/// [`h1_of_zip`] must refuse it with [`HashError::Overlap`] whenever `copies` > 1.
#[doc(hidden)]
pub fn overlapping_entries(zip: &[u8], copies: u16) -> Vec<u8> {
    let eocd = zip.len() - 22;
    assert_eq!(
        &zip[eocd..eocd + 4],
        b"PK\x05\x06",
        "a one-entry zip without comment"
    );
    let u32_at = |at: usize| u32::from_le_bytes([zip[at], zip[at + 1], zip[at + 2], zip[at + 3]]);
    let (cd_size, cd_start) = (u32_at(eocd + 12) as usize, u32_at(eocd + 16) as usize);
    let record = &zip[cd_start..cd_start + cd_size];
    let name_len = u16::from_le_bytes([record[28], record[29]]) as usize;
    let mut out = zip[..cd_start].to_vec();
    for copy in 0..copies {
        let mut r = record.to_vec();
        // A different last letter per copy, so each unpacks to its own file.
        r[46 + name_len - 1] = b'a' + (copy % 26) as u8;
        out.extend_from_slice(&r);
    }
    let mut end = zip[eocd..].to_vec();
    end[8..10].copy_from_slice(&copies.to_le_bytes());
    end[10..12].copy_from_slice(&copies.to_le_bytes());
    end[12..16].copy_from_slice(&((cd_size * copies as usize) as u32).to_le_bytes());
    out.extend_from_slice(&end);
    out
}

/// A zip library error as a verdict on the file, unless the store itself failed to read.
fn zip_error(e: zip::result::ZipError) -> HashError {
    match e {
        zip::result::ZipError::Io(e)
            if !matches!(
                e.kind(),
                io::ErrorKind::UnexpectedEof | io::ErrorKind::InvalidData
            ) =>
        {
            HashError::Io(e)
        }
        other => HashError::Zip(other.to_string()),
    }
}

fn h1_within<R: Read + Seek>(
    reader: R,
    limits: &PackageLimits,
    deadline: Deadline,
) -> Result<String, HashError> {
    h1_checked(reader, limits, deadline, None)
}

/// The `h1:` within `limits`; with `executable` (`terraform-provider-<type>`), the zip must
/// also hold the provider's executable, checked from the listing before inflating.
fn h1_checked<R: Read + Seek>(
    mut reader: R,
    limits: &PackageLimits,
    deadline: Deadline,
    executable: Option<&str>,
) -> Result<String, HashError> {
    use std::sync::atomic::Ordering::Relaxed;
    check_end_records(&mut reader, limits.max_entries)?;
    // The listing (end records, central directory, local headers) may take this much
    // reading: plenty for `max_entries` real entries, nothing like a crafted archive's.
    let meter = std::sync::Arc::new(Meter::default());
    let listing_budget = 2 * TAIL + (limits.max_entries as u64 + 1) * 2048;
    meter.budget.store(listing_budget, Relaxed);
    let metered = Metered {
        inner: reader,
        meter: std::sync::Arc::clone(&meter),
        deadline,
    };
    let stopped = |e: HashError| {
        if meter.timed_out.load(Relaxed) {
            HashError::TimedOut(deadline.budget)
        } else if meter.over_budget.load(Relaxed) {
            HashError::ListingTooLarge
        } else {
            e
        }
    };
    let mut archive = zip::ZipArchive::new(metered).map_err(|e| stopped(zip_error(e)))?;
    if archive.len() > limits.max_entries {
        return Err(HashError::TooManyEntries {
            count: archive.len(),
            max: limits.max_entries,
        });
    }
    // Everything is checked from the listing before a byte is inflated.
    let mut entries = std::collections::BTreeMap::new();
    let mut spans = Vec::with_capacity(archive.len());
    let mut central_start = u64::MAX;
    let mut declared_total = 0u64;
    for index in 0..archive.len() {
        deadline.check()?;
        let file = archive
            .by_index_raw(index)
            .map_err(|e| stopped(zip_error(e)))?;
        let compressed = file.compressed_size();
        let size = file.size();
        declared_total = declared_total.saturating_add(size);
        if declared_total > limits.max_inflated_bytes {
            return Err(HashError::InflatesTooMuch {
                max: limits.max_inflated_bytes,
            });
        }
        let ratio = size / compressed.max(1);
        if size > MIB && ratio > limits.max_ratio {
            return Err(HashError::Ratio {
                name: file.name().to_owned(),
                ratio,
                max: limits.max_ratio,
            });
        }
        spans.push(Span {
            header_start: file.header_start(),
            data_end: file.data_start().saturating_add(compressed),
        });
        central_start = central_start.min(file.central_header_start());
        // Unpacking writes later entries over earlier ones of the same name.
        if let Some(name) = unpacked_name(file.name())? {
            entries.insert(name, (index, size));
        }
    }
    spans.sort_by_key(|s| s.header_start);
    for pair in spans.windows(2) {
        if pair[0].data_end > pair[1].header_start {
            return Err(HashError::Overlap);
        }
    }
    if spans.last().is_some_and(|s| s.data_end > central_start) {
        return Err(HashError::Overlap);
    }
    if let Some(prefix) = executable {
        if !entries
            .keys()
            .any(|name| is_provider_executable(name, prefix))
        {
            let in_folder = entries.keys().find(|name| {
                name.rsplit('/')
                    .next()
                    .is_some_and(|base| is_provider_executable(base, prefix))
            });
            return Err(HashError::NoExecutable {
                prefix: prefix.to_owned(),
                in_folder: in_folder.cloned(),
            });
        }
    }
    // Inflating is bounded by the sizes checked above, not by the listing's budget.
    meter.budget.store(u64::MAX, Relaxed);
    let mut summary = Sha256::new();
    for (name, (index, declared)) in entries {
        let file = archive.by_index(index).map_err(|e| stopped(zip_error(e)))?;
        // Never more than the entry declares (the listing's totals were checked above);
        // reading to the end also checks the entry's CRC-32.
        let mut hasher = Sha256::new();
        let read = copy_into(
            file.take(declared.saturating_add(1)),
            &mut hasher,
            Some(deadline),
        )
        .map_err(|e| match e {
            HashError::Io(e) => stopped(HashError::Zip(format!("{name}: {e}"))),
            other => other,
        })?;
        if read > declared {
            return Err(HashError::SizeMismatch { name, declared });
        }
        let digest = hex::encode(hasher.finalize());
        summary.update(format!("{digest}  {name}\n").as_bytes());
    }
    Ok(format!("h1:{}", STANDARD.encode(summary.finalize())))
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Write};

    use super::*;

    fn limits() -> PackageLimits {
        PackageLimits::default()
    }

    fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, content) in files {
            if name.ends_with('/') {
                writer
                    .add_directory(*name, zip::write::SimpleFileOptions::default())
                    .unwrap();
                continue;
            }
            writer
                .start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            writer.write_all(content).unwrap();
        }
        writer.finish().unwrap().into_inner()
    }

    /// The h1 computed by hand, as Terraform's dirhash does it.
    fn expected_h1(files: &[(&str, &[u8])]) -> String {
        let mut lines: Vec<String> = files
            .iter()
            .map(|(n, c)| format!("{}  {n}\n", hex::encode(Sha256::digest(c))))
            .collect();
        lines.sort_by(|a, b| a.split("  ").nth(1).cmp(&b.split("  ").nth(1)));
        format!(
            "h1:{}",
            STANDARD.encode(Sha256::digest(lines.concat().as_bytes()))
        )
    }

    #[test]
    fn h1_hashes_the_files_sorted_by_name_and_ignores_folders() {
        let zip = zip_of(&[
            ("z.txt", b"last"),
            ("docs/", b""),
            ("docs/a.md", b"doc"),
            ("b", b""),
        ]);
        let h1 = h1_of_zip(Cursor::new(zip), &limits()).unwrap();
        assert_eq!(
            h1,
            expected_h1(&[("b", b""), ("docs/a.md", b"doc"), ("z.txt", b"last")])
        );
    }

    #[test]
    fn a_known_package_hashes_as_terraform_says() {
        // One file `terraform-provider-x_v1.0.0` holding "#!/bin/sh\n": h1 is fixed by the
        // algorithm, whatever zip writer made the archive.
        let content = b"#!/bin/sh\n";
        let zip = zip_of(&[("terraform-provider-x_v1.0.0", content)]);
        let line = format!(
            "{}  terraform-provider-x_v1.0.0\n",
            hex::encode(Sha256::digest(content))
        );
        let want = format!("h1:{}", STANDARD.encode(Sha256::digest(line.as_bytes())));
        assert_eq!(
            h1_of_zip(Cursor::new(zip.clone()), &limits()).unwrap(),
            want
        );

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.zip");
        std::fs::write(&path, &zip).unwrap();
        let hashes = hash_zip_file(&path, &limits()).unwrap();
        assert_eq!(hashes.h1.as_deref(), Some(want.as_str()));
        assert_eq!(hashes.sha256, hex::encode(Sha256::digest(&zip)));
        assert_eq!(hashes.zh(), format!("zh:{}", hashes.sha256));
    }

    #[test]
    fn the_executable_is_named_as_terraform_looks_for_it() {
        let prefix = "terraform-provider-widget";
        for name in [
            "terraform-provider-widget",
            "terraform-provider-widget_v1.2.0",
            "terraform-provider-widget_v9.9.9",
            "terraform-provider-widget.exe",
            "terraform-provider-widget_",
        ] {
            assert!(is_provider_executable(name, prefix), "{name}");
        }
        for name in [
            "terraform-provider-widgets",
            "terraform-provider-widget-v1",
            "terraform-provider-Widget_v1.2.0",
            "terraform-provider-gadget_v1.2.0",
            "bin/terraform-provider-widget_v1.2.0",
            "README.md",
        ] {
            assert!(!is_provider_executable(name, prefix), "{name}");
        }
    }

    #[test]
    fn a_package_without_its_executable_is_refused_before_inflating() {
        let dir = tempfile::tempdir().unwrap();
        let package = |files: &[(&str, &[u8])]| {
            let path = dir.path().join("p.zip");
            std::fs::write(&path, zip_of(files)).unwrap();
            let file = File::open(&path).unwrap();
            hash_package(&file, &limits(), "widget")
        };
        let good = package(&[
            ("README.md", b"r"),
            ("terraform-provider-widget_v1.0.0", b"x"),
        ]);
        assert!(good.unwrap().h1.is_some());
        // Found in a folder: the reason says so.
        match package(&[
            ("bin/", b""),
            ("bin/terraform-provider-widget_v1.0.0", b"x"),
        ]) {
            Err(HashError::NoExecutable { in_folder, .. }) => assert_eq!(
                in_folder.as_deref(),
                Some("bin/terraform-provider-widget_v1.0.0")
            ),
            other => panic!("{other:?}"),
        }
        let other = package(&[("terraform-provider-gadget_v1.0.0", b"x")]).unwrap_err();
        assert!(
            other
                .to_string()
                .contains("could not find executable file starting with terraform-provider-widget"),
            "{other}"
        );
        // Limits come first: a bomb is a bomb, whatever it holds.
        let zeros = vec![0u8; 3 * 1024 * 1024];
        assert!(matches!(
            package(&[("terraform-provider-widget", &zeros)]),
            Err(HashError::Ratio { .. })
        ));
    }

    #[test]
    fn broken_and_unsafe_zips_are_refused() {
        assert!(matches!(
            h1_of_zip(Cursor::new(b"not a zip".to_vec()), &limits()),
            Err(HashError::Zip(_))
        ));
        let mut truncated = zip_of(&[("a", &[7u8; 1000])]);
        truncated.truncate(truncated.len() / 2);
        assert!(h1_of_zip(Cursor::new(truncated), &limits()).is_err());
        let evil = zip_of(&[("../../etc/passwd", b"x")]);
        assert!(matches!(
            h1_of_zip(Cursor::new(evil), &limits()),
            Err(HashError::UnsafeName(_))
        ));
    }

    #[test]
    fn overlapping_entries_are_refused_before_inflating() {
        let zip = zip_of(&[("bomb_0", &[0u8; 4096])]);
        // One copy is an ordinary zip; two copies of one local file overlap.
        assert!(h1_of_zip(Cursor::new(overlapping_entries(&zip, 1)), &limits()).is_ok());
        let bomb = overlapping_entries(&zip, 2);
        assert!(
            matches!(
                h1_of_zip(Cursor::new(bomb), &limits()),
                Err(HashError::Overlap)
            ),
            "overlapping entries must be refused"
        );
    }

    #[test]
    fn crafted_end_records_are_refused_before_the_zip_library_reads_the_listing() {
        let zip = zip_of(&[("a", b"1"), ("b", b"2")]);
        let eocd = zip[zip.len() - 22..].to_vec();
        // Many end records, each claiming one entry more than there is: the library would
        // re-read the whole listing for each.
        let mut stacked = zip.clone();
        for _ in 0..10 {
            let mut record = eocd.clone();
            record[8..10].copy_from_slice(&3u16.to_le_bytes());
            record[10..12].copy_from_slice(&3u16.to_le_bytes());
            stacked.extend_from_slice(&record);
        }
        assert!(matches!(
            h1_of_zip(Cursor::new(stacked), &limits()),
            Err(HashError::ListingTooLarge)
        ));
        // An end record claiming more entries than allowed: refused before anything is sized
        // from it.
        let mut claims = zip.clone();
        let at = claims.len() - 22;
        claims[at + 8..at + 10].copy_from_slice(&0xFFFEu16.to_le_bytes());
        claims[at + 10..at + 12].copy_from_slice(&0xFFFEu16.to_le_bytes());
        assert!(matches!(
            h1_of_zip(Cursor::new(claims), &limits()),
            Err(HashError::TooManyEntries { count: 0xFFFE, .. })
        ));
        // A zip64 end record claiming two million entries.
        let mut zip64 = zip[..zip.len() - 22].to_vec();
        let end64_at = zip64.len() as u64;
        let mut end64 = b"PK\x06\x06".to_vec();
        end64.extend_from_slice(&44u64.to_le_bytes());
        end64.extend_from_slice(&[45, 0, 45, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        end64.extend_from_slice(&2_000_000u64.to_le_bytes());
        end64.extend_from_slice(&2_000_000u64.to_le_bytes());
        end64.extend_from_slice(&[0u8; 16]);
        zip64.extend_from_slice(&end64);
        zip64.extend_from_slice(b"PK\x06\x07");
        zip64.extend_from_slice(&0u32.to_le_bytes());
        zip64.extend_from_slice(&end64_at.to_le_bytes());
        zip64.extend_from_slice(&1u32.to_le_bytes());
        let mut record = eocd.clone();
        record[8..10].copy_from_slice(&0xFFFFu16.to_le_bytes());
        record[10..12].copy_from_slice(&0xFFFFu16.to_le_bytes());
        zip64.extend_from_slice(&record);
        assert!(matches!(
            h1_of_zip(Cursor::new(zip64), &limits()),
            Err(HashError::TooManyEntries {
                count: 2_000_000,
                ..
            })
        ));
        // Something without an end record is not a zip.
        assert!(matches!(
            h1_of_zip(Cursor::new(vec![0u8; 100_000]), &limits()),
            Err(HashError::Zip(_))
        ));
    }

    #[test]
    fn a_listing_the_library_would_search_backwards_through_is_cut_off() {
        // The last end record is broken (it claims an entry more than there is), and the
        // data before it is full of end-record lookalikes: the library would try each.
        let mut lookalikes = Vec::new();
        for _ in 0..20_000 {
            lookalikes.extend_from_slice(b"PK\x05\x06");
            lookalikes.extend_from_slice(&[0u8; 18]);
        }
        let zip = zip_of(&[("filler", &lookalikes), ("b", b"2")]);
        let mut broken = zip.clone();
        let at = broken.len() - 22;
        broken[at + 8..at + 10].copy_from_slice(&3u16.to_le_bytes());
        broken[at + 10..at + 12].copy_from_slice(&3u16.to_le_bytes());
        let verdict = h1_of_zip(Cursor::new(broken), &limits());
        assert!(
            matches!(
                verdict,
                Err(HashError::ListingTooLarge) | Err(HashError::Zip(_))
            ),
            "{verdict:?}"
        );
    }

    #[test]
    fn limits_give_a_verdict_not_a_hang() {
        // Bytes that barely compress, like an executable's.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let noise: Vec<u8> = (0..3 * 1024 * 1024)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let zip = zip_of(&[("noise", &noise), ("b", b"x"), ("c", b"y")]);
        let tight = |change: fn(&mut PackageLimits)| {
            let mut limits = limits();
            change(&mut limits);
            h1_of_zip(Cursor::new(zip.clone()), &limits)
        };
        assert!(matches!(
            tight(|l| l.max_entries = 2),
            Err(HashError::TooManyEntries { count: 3, max: 2 })
        ));
        assert!(matches!(
            tight(|l| l.max_inflated_bytes = 1024 * 1024),
            Err(HashError::InflatesTooMuch { .. })
        ));
        // 3 MiB of zeros deflate about 1000:1.
        let zeros = zip_of(&[("zeros", &vec![0u8; 3 * 1024 * 1024])]);
        assert!(matches!(
            h1_of_zip(Cursor::new(zeros), &limits()),
            Err(HashError::Ratio { .. })
        ));
        assert!(matches!(
            tight(|l| l.max_duration = Duration::ZERO),
            Err(HashError::TimedOut(_))
        ));
        assert!(tight(|_| {}).is_ok());

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.zip");
        std::fs::write(&path, &zip).unwrap();
        let small = PackageLimits {
            max_package_bytes: 100,
            ..limits()
        };
        let file = File::open(&path).unwrap();
        assert!(matches!(
            sha256_of_package(&file, &small),
            Err(HashError::TooLarge { max: 100, .. })
        ));
        assert_eq!(
            sha256_of_package(&file, &limits()).unwrap(),
            hex::encode(Sha256::digest(&zip))
        );
        assert_eq!(
            h1_of_package(&file, &limits()).unwrap(),
            hash_zip(&file, &limits()).unwrap().h1.unwrap()
        );
    }
}
