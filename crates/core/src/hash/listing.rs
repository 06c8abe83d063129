//! A zip's end records, read before the zip library reads them: where they are, how many,
//! and how many entries they claim.

use std::io::{self, Read, Seek, SeekFrom};

use super::HashError;

/// Most end-of-central-directory records tolerated at the end of a zip (real ones have one).
const MAX_END_RECORDS: usize = 4;

/// How far before its end a zip's last end record may start: the record (22 bytes) and
/// its comment (at most 65,535 bytes).
pub(super) const TAIL: u64 = 22 + 65_535;

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
pub(super) fn check_end_records<R: Read + Seek>(
    reader: &mut R,
    max_entries: usize,
) -> Result<(), HashError> {
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
