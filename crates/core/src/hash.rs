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
            max_entries: 10_000,
            max_inflated_bytes: 4096 * MIB,
            max_ratio: 200,
            max_duration: Duration::from_secs(300),
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
    #[error("hashing the package took longer than {0:?}, the most one package may take")]
    TimedOut(Duration),
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
struct PositionalReader<'a> {
    file: &'a File,
    pos: u64,
    len: u64,
}

impl<'a> PositionalReader<'a> {
    fn new(file: &'a File, len: u64) -> Self {
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
    let mut archive = zip::ZipArchive::new(reader).map_err(zip_error)?;
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
        let file = archive.by_index_raw(index).map_err(zip_error)?;
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
    let mut summary = Sha256::new();
    for (name, (index, declared)) in entries {
        let file = archive.by_index(index).map_err(zip_error)?;
        // Never more than the entry declares (the listing's totals were checked above);
        // reading to the end also checks the entry's CRC-32.
        let mut hasher = Sha256::new();
        let read = copy_into(
            file.take(declared.saturating_add(1)),
            &mut hasher,
            Some(deadline),
        )
        .map_err(|e| match e {
            HashError::Io(e) => HashError::Zip(format!("{name}: {e}")),
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
