//! The indexer function: S3 event notifications in, records and documents out. An event's
//! records are indexed one by one, then the documents of every module and provider they
//! touched are made once each, so a batch of fifty versions of one module costs one
//! replacement of its versions document, not fifty racing ones.

use std::sync::Arc;

use aws_lambda_events::event::s3::S3Event;
use lambda_runtime::{service_fn, Diagnostic, LambdaEvent};
use tfreg_core::{IndexOutcome, Indexer};

use crate::settings::IndexerSettings;
use crate::{configure, error_chain, event_uploads, init_tracing, Error, Stores};

/// How many times the documents of an event are tried (each subject with its own retries)
/// before the invocation fails.
const FLUSH_ROUNDS: u32 = 3;
/// The pause before the second round (growing after).
const ROUND_PAUSE: std::time::Duration = std::time::Duration::from_millis(500);

/// Why an S3 event could not be indexed, in words (Lambda shows it as the invocation's
/// error, retries the event, and parks it in the dead-letter queue in the end).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct IndexFailure(String);

impl From<IndexFailure> for Diagnostic {
    fn from(failure: IndexFailure) -> Self {
        Diagnostic {
            error_type: "tfreg.IndexFailure".into(),
            error_message: failure.0,
        }
    }
}

/// The entry point of the indexer function.
pub async fn run_indexer() -> Result<(), Error> {
    init_tracing();
    let config = configure::<IndexerSettings>().await?;
    let aws = crate::connect_aws(crate::Function::Indexer).await?;
    let stores = Stores::connect_for_indexing(&aws, &config);
    let (metadata, artifacts) = (stores.metadata, stores.artifacts);
    let bucket = config.bucket.clone();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<S3Event>| {
        // An indexer per invocation: its documents wait for the end of the event, and what
        // making them cost is this event's.
        let indexer = Indexer::new(Arc::clone(&metadata), Arc::clone(&artifacts))
            .with_hostname(config.hostname.clone())
            .with_deferred_documents();
        let bucket = bucket.clone();
        async move {
            handle_s3_event(&indexer, &bucket, event.payload)
                .await
                .map_err(|e| IndexFailure(error_chain(e.as_ref())))
        }
    }))
    .await
}

/// Indexes every object an S3 event names (with who uploaded it: [`Indexer::index_uploaded`]), then (with an indexer that defers them, as the
/// function's does) makes the documents of every subject they touched, once each. The event
/// kind (created or removed) is only a hint: the indexer reads each key's current state, so
/// duplicate, late or reordered events are harmless.
///
/// A key that cannot be indexed does not stop the others; any failure, or documents that
/// other writers kept replacing past the retries, fails the invocation once the rest is
/// done, so Lambda delivers the whole event again (indexing it again is cheap: recorded
/// files are not read again) and, past its retries, parks it in the dead-letter queue.
/// Logs one line per event: `records`, `documents_written`, `conflicts_retried`, `failed`.
pub async fn handle_s3_event(
    indexer: &Indexer,
    bucket: &str,
    event: S3Event,
) -> Result<Vec<String>, Error> {
    let before = indexer.document_stats();
    let keys = event_uploads(bucket, event)?;
    let mut outcomes = Vec::with_capacity(keys.len());
    let mut failures = Vec::new();
    for event_key in &keys {
        let (key, kind) = (&event_key.key, &event_key.kind);
        let principal = event_key.principal.as_deref().unwrap_or("unknown");
        tracing::info!(key, kind, principal, "S3 event");
        match indexer
            .index_uploaded(key, event_key.upload().as_ref())
            .await
        {
            Ok(outcome) => {
                let said = describe(key, outcome);
                tracing::info!(key, "{said}");
                outcomes.push(said);
            }
            Err(e) => {
                let error = error_chain(&e);
                tracing::error!(key, error, "could not index; the event is delivered again");
                failures.push(format!("{key}: {error}"));
            }
        }
    }
    if let Err(error) = flush(indexer).await {
        tracing::error!(
            error,
            "could not make the documents; the event is delivered again"
        );
        failures.push(error);
    }
    let after = indexer.document_stats();
    tracing::info!(
        records = keys.len(),
        documents_written = after.written - before.written,
        conflicts_retried = after.conflicts - before.conflicts,
        failed = failures.len(),
        "indexed an event"
    );
    match failures.is_empty() {
        true => Ok(outcomes),
        false => Err(failures.join("; ").into()),
    }
}

/// Makes the documents the event's records touched. Each subject's document is retried
/// against other instances' writes ([`Indexer::flush_documents`]); what is still pending
/// after that (a crowd of instances on one subject, a store error) is tried again in
/// further rounds, so contention alone never fails an event for Lambda to dead-letter.
async fn flush(indexer: &Indexer) -> Result<(), String> {
    let mut round = 1;
    loop {
        match indexer.flush_documents().await {
            Ok(_) => return Ok(()),
            Err(e) if round == FLUSH_ROUNDS => return Err(error_chain(&e)),
            Err(e) => {
                let error = error_chain(&e);
                tracing::warn!(error, round, "making the documents again");
                tokio::time::sleep(ROUND_PAUSE.mul_f64(round as f64)).await;
                round += 1;
            }
        }
    }
}

/// What indexing a key did, in words (the invocation's answer lists them).
fn describe(key: &str, outcome: IndexOutcome) -> String {
    match outcome {
        IndexOutcome::Published(a) => format!("published {a}"),
        IndexOutcome::Unpublished(a) => format!("unpublished {a}"),
        IndexOutcome::Rejected { key, reason } => format!("rejected {key}: {reason}"),
        IndexOutcome::Ignored => format!("ignored {key}"),
    }
}
