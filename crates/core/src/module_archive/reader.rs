//! Reading an archive by position, and the deadline of one check.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::time::{Duration, Instant};

use super::ModuleArchiveError;

/// When checking one archive must end.
#[derive(Debug, Clone, Copy)]
pub(super) struct Deadline {
    at: Instant,
    budget: Duration,
}

impl Deadline {
    pub(super) fn new(budget: Duration) -> Self {
        Self {
            at: Instant::now() + budget,
            budget,
        }
    }

    pub(super) fn passed(&self) -> bool {
        Instant::now() > self.at
    }

    pub(super) fn check(&self) -> Result<(), ModuleArchiveError> {
        match self.passed() {
            true => Err(ModuleArchiveError::TimedOut(self.budget)),
            false => Ok(()),
        }
    }

    /// What is left of the budget.
    pub(super) fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    pub(super) fn budget(&self) -> Duration {
        self.budget
    }
}

/// Reads the first `len` bytes of a file by position, so the caller's cursor (and anyone
/// else reading the same handle) is left alone.
pub(super) struct Positional<'a> {
    file: &'a File,
    pos: u64,
    len: u64,
}

impl<'a> Positional<'a> {
    pub(super) fn new(file: &'a File, len: u64) -> Self {
        Self { file, pos: 0, len }
    }
}

impl Read for Positional<'_> {
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

impl Seek for Positional<'_> {
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

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}
