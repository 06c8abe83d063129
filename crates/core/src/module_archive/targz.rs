//! `.tar.gz` and `.tgz`: gzip, then tar, read as one stream.
//!
//! The tar library's own handling of GNU long names and PAX headers reads them whole into
//! memory, whatever their size; so entries are read raw and those headers are read here, up
//! to a bound. Entry data is never read into memory: the library skips it through the
//! metered stream.

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::io::{self, Read};

use flate2::read::MultiGzDecoder;
use tar::EntryType;

use super::entries::{Found, Kind};
use super::reader::{Deadline, Positional};
use super::{
    ArchiveFormat, ModuleArchiveError, ModuleLimits, Visitor, MAX_NAME_BYTES, RATIO_FLOOR_BYTES,
};

/// The largest PAX extended header read (real ones hold a few records).
const MAX_PAX_BYTES: u64 = 64 * 1024;

const KIND: &str = "gzip-compressed tar archive";

/// Why the stream stopped, when it was a limit.
#[derive(Debug, Clone, Copy)]
enum Stop {
    TooLarge,
    Ratio(u64),
    TimedOut,
}

/// What the layers of the stream saw, so a failure is told apart: the file could not be
/// read, the gzip data is broken, a limit stopped it, or the tar inside is broken.
#[derive(Default)]
struct Status {
    unreadable: Cell<bool>,
    gzip_error: RefCell<Option<String>>,
    stop: Cell<Option<Stop>>,
    expanded: Cell<u64>,
}

/// The file, noting when reading it fails. It watches the deadline too: the decoder may
/// read a long way without expanding a byte (a run of empty gzip members).
struct Source<'a> {
    inner: Positional<'a>,
    status: &'a Status,
    deadline: Deadline,
}

impl Read for Source<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.deadline.passed() {
            self.status.stop.set(Some(Stop::TimedOut));
            return Err(io::Error::new(io::ErrorKind::InvalidData, "out of time"));
        }
        self.inner
            .read(buf)
            .inspect_err(|_| self.status.unreadable.set(true))
    }
}

/// The expanded stream, stopped at the limits.
struct Meter<'a, R> {
    inner: R,
    status: &'a Status,
    limits: &'a ModuleLimits,
    compressed: u64,
    deadline: Deadline,
}

impl<R: Read> Meter<'_, R> {
    fn stop(&self, why: Stop) -> io::Error {
        self.status.stop.set(Some(why));
        io::Error::new(io::ErrorKind::InvalidData, "stopped at a limit")
    }
}

impl<R: Read> Read for Meter<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.deadline.passed() {
            return Err(self.stop(Stop::TimedOut));
        }
        let n = match self.inner.read(buf) {
            Ok(n) => n,
            Err(e) => {
                if !self.status.unreadable.get() {
                    *self.status.gzip_error.borrow_mut() = Some(e.to_string());
                }
                return Err(e);
            }
        };
        let expanded = self.status.expanded.get().saturating_add(n as u64);
        self.status.expanded.set(expanded);
        if expanded > self.limits.max_expanded_bytes {
            return Err(self.stop(Stop::TooLarge));
        }
        let ratio = expanded / self.compressed.max(1);
        if expanded > RATIO_FLOOR_BYTES && ratio > self.limits.max_ratio {
            return Err(self.stop(Stop::Ratio(ratio)));
        }
        Ok(n)
    }
}

/// A failure while reading entries: a verdict of ours, or the stream's error (told apart by
/// [`Status`]).
enum Failure {
    Verdict(ModuleArchiveError),
    /// The tar inside is malformed, as this says.
    Malformed(&'static str),
    Stream(io::Error),
}

impl From<ModuleArchiveError> for Failure {
    fn from(e: ModuleArchiveError) -> Self {
        Failure::Verdict(e)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Stream(e)
    }
}

pub(super) fn check(
    file: &File,
    len: u64,
    format: ArchiveFormat,
    limits: &ModuleLimits,
    deadline: Deadline,
    visit: &mut Visitor<'_>,
) -> Result<Found, ModuleArchiveError> {
    let not_as_named = |detail: String| ModuleArchiveError::NotAsNamed {
        kind: KIND,
        suffix: format.suffix(),
        detail,
    };
    let mut head = Vec::with_capacity(512);
    Positional::new(file, len)
        .take(512)
        .read_to_end(&mut head)?;
    if !head.starts_with(&[0x1f, 0x8b]) {
        return Err(not_as_named(what_it_is(&head)));
    }
    let status = Status::default();
    let source = Source {
        inner: Positional::new(file, len),
        status: &status,
        deadline,
    };
    let meter = Meter {
        inner: MultiGzDecoder::new(source),
        status: &status,
        limits,
        compressed: len,
        deadline,
    };
    let mut archive = tar::Archive::new(meter);
    let failure = match read_entries(&mut archive, limits, visit) {
        Ok(found) => return Ok(found),
        Err(failure) => failure,
    };
    let error = match failure {
        Failure::Verdict(verdict) => return Err(verdict),
        Failure::Malformed(detail) => {
            return Err(not_as_named(format!(
                "the tar archive inside is malformed: {detail}"
            )))
        }
        Failure::Stream(e) => e,
    };
    if status.unreadable.get() {
        return Err(ModuleArchiveError::Io(error));
    }
    Err(match status.stop.get() {
        Some(Stop::TooLarge) => ModuleArchiveError::TooLarge {
            max: limits.max_expanded_bytes,
        },
        Some(Stop::Ratio(ratio)) => ModuleArchiveError::Ratio {
            what: "the archive".into(),
            ratio,
            max: limits.max_ratio,
        },
        Some(Stop::TimedOut) => ModuleArchiveError::TimedOut(deadline.budget()),
        None => match status.gzip_error.take() {
            Some(gzip) => not_as_named(format!("the gzip data is broken: {gzip}")),
            None => not_as_named(format!(
                "the gzip data does not hold a whole tar archive: {error}"
            )),
        },
    })
}

/// Metadata headers waiting for the entry they describe.
#[derive(Default)]
struct Pending {
    long_name: Option<Vec<u8>>,
    long_link: Option<Vec<u8>>,
    pax: Option<Vec<u8>>,
}

fn read_entries<R: Read>(
    archive: &mut tar::Archive<R>,
    limits: &ModuleLimits,
    visit: &mut Visitor<'_>,
) -> Result<Found, Failure> {
    let mut found = Found::new(limits.max_entries);
    let mut pending = Pending::default();
    for entry in archive.entries()?.raw(true) {
        let mut entry = entry?;
        let kind = entry.header().entry_type();
        match kind {
            EntryType::GNULongName => {
                pending.long_name = Some(read_name(&mut entry)?);
                continue;
            }
            EntryType::GNULongLink => {
                pending.long_link = Some(read_name(&mut entry)?);
                continue;
            }
            EntryType::XHeader => {
                pending.pax = Some(read_pax(&mut entry)?);
                continue;
            }
            // Defaults for the whole archive: nothing a module needs, and unpackers ignore it.
            EntryType::XGlobalHeader => continue,
            _ => {}
        }
        let described = describe(&entry, std::mem::take(&mut pending))?;
        let header = entry.header();
        let kind = match kind {
            // An old-style (`\0`) regular entry named with a trailing `/` is a folder.
            EntryType::Regular if header.as_bytes()[156] == 0 && described.name.ends_with('/') => {
                Kind::Folder
            }
            EntryType::Regular | EntryType::Continuous => Kind::File {
                size: described.size,
            },
            EntryType::Directory => Kind::Folder,
            EntryType::Symlink => Kind::Symlink {
                target: described.target,
            },
            EntryType::Link => Kind::HardLink {
                target: described.target,
            },
            other => {
                return Err(ModuleArchiveError::Unsupported {
                    name: described.name,
                    kind: kind_name(other),
                }
                .into())
            }
        };
        let is_file = matches!(kind, Kind::File { .. });
        let path = found.add(&described.name, kind)?;
        if is_file {
            visit(&path, &mut entry)?;
        }
    }
    if pending.long_name.is_some() || pending.long_link.is_some() || pending.pax.is_some() {
        return Err(Failure::Malformed(
            "it ends with a header describing an entry that is not there",
        ));
    }
    Ok(found)
}

/// An entry's name, link target and size, from its header and the headers before it.
struct Described {
    name: String,
    target: String,
    size: u64,
}

fn describe<R: Read>(entry: &tar::Entry<R>, pending: Pending) -> Result<Described, Failure> {
    let header = entry.header();
    let mut pax_path = None;
    let mut pax_link = None;
    let mut pax_size = None;
    if let Some(pax) = &pending.pax {
        for record in tar::PaxExtensions::new(pax) {
            let record = record.map_err(|_| Failure::Malformed("a PAX header is malformed"))?;
            match record.key_bytes() {
                b"path" => pax_path = Some(record.value_bytes().to_vec()),
                b"linkpath" => pax_link = Some(record.value_bytes().to_vec()),
                b"size" => pax_size = Some(record.value_bytes().to_vec()),
                _ => {}
            }
        }
    }
    let long_name = pending.long_name;
    if let (Some(pax), Some(gnu)) = (&pax_path, &long_name) {
        if pax != gnu {
            return Err(Failure::Malformed(
                "an entry has two different names (a GNU long name and a PAX path)",
            ));
        }
    }
    let name = pax_path
        .or(long_name)
        .unwrap_or_else(|| header.path_bytes().into_owned());
    let target = pax_link
        .or(pending.long_link)
        .or_else(|| header.link_name_bytes().map(|t| t.into_owned()))
        .unwrap_or_default();
    let size = header.entry_size()?;
    if let Some(pax_size) = pax_size {
        // Unpackers differ on which size wins; an archive where they disagree means two
        // different things to two readers.
        if std::str::from_utf8(&pax_size)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            != Some(size)
        {
            return Err(Failure::Malformed(
                "an entry's PAX size disagrees with its header",
            ));
        }
    }
    let text = |bytes: Vec<u8>, what: &'static str| {
        String::from_utf8(bytes).map_err(|e| ModuleArchiveError::BadName {
            name: String::from_utf8_lossy(e.as_bytes())
                .chars()
                .take(200)
                .collect(),
            why: what,
        })
    };
    Ok(Described {
        name: text(name, "has a path that is not UTF-8")?,
        target: text(target, "is a link whose target is not UTF-8")?,
        size,
    })
}

/// Reads a GNU long name or long link, refusing one longer than [`MAX_NAME_BYTES`].
fn read_name<R: Read>(entry: &mut tar::Entry<R>) -> Result<Vec<u8>, Failure> {
    let mut bytes = Vec::new();
    entry
        .take(MAX_NAME_BYTES as u64 + 2)
        .read_to_end(&mut bytes)?;
    let bytes = trim_nul(bytes);
    if bytes.len() > MAX_NAME_BYTES {
        let shown = String::from_utf8_lossy(&bytes[..200]).into_owned();
        return Err(ModuleArchiveError::BadName {
            name: format!("{shown}..."),
            why: "has a path longer than 1024 bytes",
        }
        .into());
    }
    Ok(bytes)
}

/// Reads a PAX header, refusing one larger than [`MAX_PAX_BYTES`].
fn read_pax<R: Read>(entry: &mut tar::Entry<R>) -> Result<Vec<u8>, Failure> {
    let mut bytes = Vec::new();
    entry.take(MAX_PAX_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_PAX_BYTES {
        return Err(Failure::Malformed("a PAX header is larger than 64 KiB"));
    }
    Ok(bytes)
}

fn trim_nul(mut bytes: Vec<u8>) -> Vec<u8> {
    while bytes.last() == Some(&0) {
        bytes.pop();
    }
    bytes
}

fn kind_name(kind: EntryType) -> String {
    match kind {
        EntryType::Char => "character device".into(),
        EntryType::Block => "block device".into(),
        EntryType::Fifo => "FIFO (named pipe)".into(),
        EntryType::GNUSparse => "sparse file (it may expand far beyond its stored size)".into(),
        other => format!("tar entry of type {:?}", other.as_byte() as char),
    }
}

/// What a file that is not gzip data looks like, to say what to do.
pub(super) fn what_it_is(head: &[u8]) -> String {
    let terraform = "Terraform fails on it with \"gzip: invalid header\"";
    if head.is_empty() {
        return format!("the file is empty ({terraform})");
    }
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        return "it is a zip archive: publish it under a .zip name".into();
    }
    if head.len() >= 262 && &head[257..262] == b"ustar" {
        return "it is a tar archive without gzip compression: compress it (tar -czf)".into();
    }
    let text = head
        .iter()
        .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace() || b >= 0x80);
    match text {
        true => format!("it is text, not gzip data ({terraform})"),
        false => format!("it does not start as gzip data does ({terraform})"),
    }
}

/// A `.tar.gz` of `files`, for tests: see [`super::archive_of`].
pub(super) fn archive_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(encoder);
    for (path, content) in files {
        let mut header = tar::Header::new_gnu();
        header.set_mtime(1_700_000_000);
        match path.ends_with('/') {
            true => {
                header.set_entry_type(EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
            }
            false => {
                header.set_mode(0o644);
                header.set_size(content.len() as u64);
            }
        }
        builder
            .append_data(&mut header, path, *content)
            .expect("writing to memory");
    }
    builder
        .into_inner()
        .and_then(|gz| gz.finish())
        .expect("writing to memory")
}
