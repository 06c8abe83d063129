//! How a package is read: by position from one open file, within a deadline, and (for the
//! zip library's reading of a listing) within a byte budget.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::time::{Duration, Instant};

use super::HashError;

/// When hashing one package must end.
#[derive(Debug, Clone, Copy)]
pub(super) struct Deadline {
    at: Instant,
    pub(super) budget: Duration,
}

impl Deadline {
    pub(super) fn new(budget: Duration) -> Self {
        Self {
            at: Instant::now() + budget,
            budget,
        }
    }

    pub(super) fn check(&self) -> Result<(), HashError> {
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

/// What a [`Metered`] reader has read, may read, and why it stopped.
#[derive(Debug, Default)]
pub(super) struct Meter {
    used: std::sync::atomic::AtomicU64,
    /// Bytes the current phase may read in all; `u64::MAX`: no bound.
    pub(super) budget: std::sync::atomic::AtomicU64,
    pub(super) over_budget: std::sync::atomic::AtomicBool,
    pub(super) timed_out: std::sync::atomic::AtomicBool,
}

/// A reader that stops (with an error the zip library passes up) past the deadline, or
/// past a byte budget: what bounds the zip library's own reading of a hostile listing.
pub(super) struct Metered<R> {
    pub(super) inner: R,
    pub(super) meter: std::sync::Arc<Meter>,
    pub(super) deadline: Deadline,
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
