//! Terraform's `h1:` of a zip's contents: the listing checked whole (entry count, sizes,
//! ratios, overlaps, the provider's executable) before a byte is inflated, then each file
//! hashed within what it declared.

use std::io::{self, Read, Seek};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sha2::{Digest, Sha256};

use super::listing::{check_end_records, TAIL};
use super::reading::{Deadline, Meter, Metered};
use super::{copy_into, is_provider_executable, HashError, PackageLimits, MIB};

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
    match read_failure(e) {
        Ok(e) => HashError::Io(e),
        Err(verdict) => HashError::Zip(verdict.to_string()),
    }
}

/// Splits a zip library error into the store failing to read (`Ok`) and a verdict on the
/// file (`Err`): a file cut short or not what it says is the file's fault, not the store's.
pub(crate) fn read_failure(e: zip::result::ZipError) -> Result<io::Error, zip::result::ZipError> {
    match e {
        zip::result::ZipError::Io(e)
            if !matches!(
                e.kind(),
                io::ErrorKind::UnexpectedEof | io::ErrorKind::InvalidData
            ) =>
        {
            Ok(e)
        }
        other => Err(other),
    }
}

pub(super) fn h1_within<R: Read + Seek>(
    reader: R,
    limits: &PackageLimits,
    deadline: Deadline,
) -> Result<String, HashError> {
    h1_checked(reader, limits, deadline, None)
}

/// The `h1:` within `limits`; with `executable` (`terraform-provider-<type>`), the zip must
/// also hold the provider's executable, checked from the listing before inflating.
pub(super) fn h1_checked<R: Read + Seek>(
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
    let mut digests = std::collections::BTreeMap::new();
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
        digests.insert(name, hex::encode(hasher.finalize()));
    }
    Ok(h1_summary(&digests))
}

/// Terraform's `h1:` (Go's `dirhash.Hash1`) of a tree from its files: each file's name
/// (relative, `/`-separated) with the SHA-256 of its content (lowercase hex), one line
/// `<digest>  <name>\n` per file in name order, hashed again and base64-encoded. Folders
/// do not count, so an empty folder changes nothing.
pub fn h1_summary(digests: &std::collections::BTreeMap<String, String>) -> String {
    let mut summary = Sha256::new();
    for (name, digest) in digests {
        summary.update(format!("{digest}  {name}\n").as_bytes());
    }
    format!("h1:{}", STANDARD.encode(summary.finalize()))
}
