//! Reading an archive by position, and the deadline of one check.

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
pub(super) use crate::hash::PositionalReader as Positional;
