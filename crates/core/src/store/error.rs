//! Storage failures: one error for every adapter, whether trying again may help, and its
//! display with its sources.

use std::error::Error as StdError;
use std::fmt;

/// A storage failure: the backend could not answer. Never a "not found", which is `Ok(None)`.
///
/// A failure is *transient* when the backend was busy or out of reach (throttled, a 5xx, a
/// timeout, a lost connection) after the adapter's own retries: the same call may succeed
/// a moment later, so the request path answers 503 with `Retry-After` rather than 500, and
/// the indexer's invocation fails to be delivered again.
#[derive(Debug, thiserror::Error)]
#[error("{context}")]
pub struct StoreError {
    context: String,
    #[source]
    source: Option<Box<dyn StdError + Send + Sync>>,
    transient: bool,
}

impl StoreError {
    /// A failure described by `context` alone.
    pub fn new(context: impl Into<String>) -> Self {
        Self {
            context: context.into(),
            source: None,
            transient: false,
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
            transient: false,
        }
    }

    /// A failure that may not happen again: the backend was busy or out of reach.
    pub fn transient(
        context: impl Into<String>,
        source: impl Into<Box<dyn StdError + Send + Sync>>,
    ) -> Self {
        Self::with_source(context, source).transient_if(true)
    }

    /// This failure, transient when `transient` (for adapters that classify as they wrap).
    #[must_use]
    pub fn transient_if(mut self, transient: bool) -> Self {
        self.transient |= transient;
        self
    }

    /// Whether trying the same call again later may succeed: this failure, or a store
    /// failure it wraps, was transient.
    pub fn is_transient(&self) -> bool {
        if self.transient {
            return true;
        }
        let mut source = StdError::source(self);
        while let Some(s) = source {
            if s.downcast_ref::<StoreError>().is_some_and(|e| e.transient) {
                return true;
            }
            source = s.source();
        }
        false
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_failures_marked_transient_are_transient_even_when_wrapped() {
        let busy = StoreError::transient("DynamoDB GetItem failed", "throttled");
        assert!(busy.is_transient());
        assert!(!StoreError::new("a record is corrupt").is_transient());
        assert!(!StoreError::with_source("cannot decode", "bad JSON").is_transient());
        let wrapped = StoreError::with_source("cannot read the versions", busy);
        assert!(wrapped.is_transient());
        assert_eq!(
            ErrorChain(&wrapped).to_string(),
            "cannot read the versions: DynamoDB GetItem failed: throttled"
        );
        assert!(!StoreError::new("x").transient_if(false).is_transient());
    }
}
