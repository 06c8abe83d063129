//! A file's content hashed as it streams by: what the visitor reads, then the rest.

use std::io::{self, Read};

use sha2::{Digest, Sha256};

/// Reads through to the inner reader, hashing every byte read.
pub(super) struct Tee<'a> {
    inner: &'a mut dyn Read,
    hasher: Sha256,
}

impl<'a> Tee<'a> {
    pub(super) fn new(inner: &'a mut dyn Read) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
        }
    }

    /// Reads what the visitor left, and returns the SHA-256 (hex) of the whole content.
    /// The archive's own bounds (entry size, expanded bytes, deadline) bound the reading.
    pub(super) fn finish(mut self) -> io::Result<String> {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            match self.read(&mut buffer) {
                Ok(0) => return Ok(hex::encode(self.hasher.finalize())),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Read for Tee<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

#[cfg(test)]
#[path = "hashed_tests.rs"]
mod tests;
