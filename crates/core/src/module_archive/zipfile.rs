//! `.zip`: checked by the provider-package hasher first (end records, a metered listing,
//! overlapping entries, sizes and ratios, every entry inflated and its CRC-32 checked), and
//! only then listed here for the module rules.

use std::fs::File;
use std::io::{self, Read};

use super::entries::{name_refusal, Found, Kind};
use super::reader::{Deadline, Positional};
use super::{ModuleArchiveError, ModuleLimits, Visitor, MAX_NAME_BYTES, RATIO_FLOOR_BYTES};
use crate::hash::{self, HashError, PackageLimits};

const KIND: &str = "zip archive";

/// The file type bits of a unix mode.
const TYPE_MASK: u32 = 0o170_000;
const REGULAR: u32 = 0o100_000;
const FOLDER: u32 = 0o040_000;
const SYMLINK: u32 = 0o120_000;

pub(super) fn check(
    file: &File,
    len: u64,
    limits: &ModuleLimits,
    deadline: Deadline,
    visit: &mut Visitor<'_>,
) -> Result<Found, ModuleArchiveError> {
    let package = PackageLimits {
        // The caller bounds the file; what counts here is what it expands to.
        max_package_bytes: u64::MAX,
        max_entries: limits.max_entries,
        max_inflated_bytes: limits.max_expanded_bytes,
        max_ratio: limits.max_ratio,
        max_duration: deadline.remaining(),
    };
    if let Err(e) = hash::h1_of_package(file, &package) {
        return Err(verdict(e, file, len, limits, deadline));
    }
    // The listing passed those checks, so the zip library may read it again.
    let mut archive = zip::ZipArchive::new(Positional::new(file, len)).map_err(zip_error)?;
    let mut found = Found::new(limits.max_entries);
    for index in 0..archive.len() {
        deadline.check()?;
        let (name, mode, is_dir, size) = {
            let entry = archive.by_index_raw(index).map_err(zip_error)?;
            let mode = entry.unix_mode().map(|m| m & TYPE_MASK);
            (entry.name().to_owned(), mode, entry.is_dir(), entry.size())
        };
        let kind = match mode {
            _ if is_dir => Kind::Folder,
            Some(FOLDER) => Kind::Folder,
            None | Some(0 | REGULAR) => Kind::File { size },
            Some(SYMLINK) => {
                // A zip stores a link's target as its content.
                let mut target = Vec::new();
                archive
                    .by_index(index)
                    .map_err(zip_error)?
                    .take(MAX_NAME_BYTES as u64 + 1)
                    .read_to_end(&mut target)?;
                if target.len() > MAX_NAME_BYTES {
                    return Err(ModuleArchiveError::BadName {
                        name,
                        why: "is a link whose target is longer than 1024 bytes",
                    });
                }
                Kind::Symlink {
                    target: String::from_utf8_lossy(&target).into_owned(),
                }
            }
            Some(other) => {
                return Err(ModuleArchiveError::Unsupported {
                    name,
                    kind: kind_name(other),
                })
            }
        };
        let is_file = matches!(kind, Kind::File { .. });
        let path = found.add(&name, kind)?;
        if is_file {
            let mut entry = archive.by_index(index).map_err(zip_error)?;
            visit(&path, &mut entry)?;
        }
    }
    // Each entry's ratio was checked; many small ones can add up, too.
    let expanded = found.file_bytes();
    let ratio = expanded / len.max(1);
    if expanded > RATIO_FLOOR_BYTES && ratio > limits.max_ratio {
        return Err(ModuleArchiveError::Ratio {
            what: "the zip's content".into(),
            ratio,
            max: limits.max_ratio,
        });
    }
    Ok(found)
}

/// The hasher's verdict, in a module's words.
fn verdict(
    e: HashError,
    file: &File,
    len: u64,
    limits: &ModuleLimits,
    deadline: Deadline,
) -> ModuleArchiveError {
    let not_as_named = |detail: String| ModuleArchiveError::NotAsNamed {
        kind: KIND,
        suffix: ".zip",
        detail,
    };
    match e {
        HashError::Io(e) => ModuleArchiveError::Io(e),
        HashError::Zip(detail) => {
            // Said once is enough: "not a zip archive, as the .zip name says: ...".
            let detail = detail.trim_end_matches(": not a zip archive").to_owned();
            let mut head = Vec::with_capacity(512);
            let hint = match Positional::new(file, len).take(512).read_to_end(&mut head) {
                Ok(_) => what_it_is(&head),
                Err(e) => return ModuleArchiveError::Io(e),
            };
            not_as_named(match hint {
                Some(hint) => format!("{hint} ({detail})"),
                None => detail,
            })
        }
        HashError::UnsafeName(raw) => name_refusal(&raw).unwrap_or(ModuleArchiveError::BadName {
            name: raw,
            why: "has a path that is not safe to unpack",
        }),
        HashError::TooManyEntries { .. } => ModuleArchiveError::TooManyEntries {
            max: limits.max_entries,
        },
        HashError::InflatesTooMuch { .. } => ModuleArchiveError::TooLarge {
            max: limits.max_expanded_bytes,
        },
        HashError::Ratio { name, ratio, max } => ModuleArchiveError::Ratio {
            what: format!("the zip entry {name:?}"),
            ratio,
            max,
        },
        HashError::Overlap => ModuleArchiveError::Overlap,
        HashError::ListingTooLarge => ModuleArchiveError::ListingTooLarge,
        HashError::TimedOut(_) => ModuleArchiveError::TimedOut(deadline.budget()),
        // Entries inflating beyond what they declare, and whatever else the hasher refuses.
        other => not_as_named(other.to_string()),
    }
}

/// A zip library error: a verdict on the file, unless reading it failed.
fn zip_error(e: zip::result::ZipError) -> ModuleArchiveError {
    match hash::zip_read_failure(e) {
        Ok(e) => ModuleArchiveError::Io(e),
        Err(other) => ModuleArchiveError::NotAsNamed {
            kind: KIND,
            suffix: ".zip",
            detail: other.to_string(),
        },
    }
}

/// What a file that is not a zip looks like, when that says what to do.
fn what_it_is(head: &[u8]) -> Option<&'static str> {
    if head.is_empty() {
        return Some("the file is empty");
    }
    if head.starts_with(&[0x1f, 0x8b]) {
        return Some("it is gzip data: publish a .tar.gz under a .tar.gz name");
    }
    let text = head
        .iter()
        .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace() || b >= 0x80);
    text.then_some("it is text, not a zip archive")
}

fn kind_name(file_type: u32) -> String {
    match file_type {
        0o010_000 => "FIFO (named pipe)".into(),
        0o020_000 => "character device".into(),
        0o060_000 => "block device".into(),
        0o140_000 => "socket".into(),
        other => format!("zip entry of unix file type {other:o}"),
    }
}

/// A `.zip` of `files`, for tests: see [`super::archive_of`].
pub(super) fn archive_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    use std::io::Write;
    let mut writer = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o644);
    for (path, content) in files {
        match path.ends_with('/') {
            true => writer.add_directory(*path, options),
            false => writer
                .start_file(*path, options)
                .and_then(|()| Ok(writer.write_all(content)?)),
        }
        .expect("writing to memory");
    }
    writer.finish().expect("writing to memory").into_inner()
}
