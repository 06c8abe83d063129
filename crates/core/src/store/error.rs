//! Storage failures: one error for every adapter, and its display with its sources.

use std::error::Error as StdError;
use std::fmt;

/// A storage failure: the backend could not answer. Never a "not found", which is `Ok(None)`.
#[derive(Debug, thiserror::Error)]
#[error("{context}")]
pub struct StoreError {
    context: String,
    #[source]
    source: Option<Box<dyn StdError + Send + Sync>>,
}

impl StoreError {
    /// A failure described by `context` alone.
    pub fn new(context: impl Into<String>) -> Self {
        Self {
            context: context.into(),
            source: None,
        }
    }

    /// A failure described by `context`, caused by `source` (shown after it by
    /// [`ErrorChain`]).
    pub fn with_source(
        context: impl Into<String>,
        source: impl Into<Box<dyn StdError + Send + Sync>>,
    ) -> Self {
        Self {
            context: context.into(),
            source: Some(source.into()),
        }
    }
}

/// Displays an error with its chain of sources: `outer: inner: root`.
pub struct ErrorChain<'a>(pub &'a (dyn StdError + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(s) = source {
            write!(f, ": {s}")?;
            source = s.source();
        }
        Ok(())
    }
}
