//! The fetcher function: fed by the bucket's events for `upstream/` objects, it fetches the
//! package each fetch request (`upstream/<host>/<ns>/<type>/fetch/<version>_<os>_<arch>.json`,
//! written by the mirror function) names, verifies it against the release's signed
//! SHA256SUMS and stores it under `mirror/`, where the indexer hashes and records it as any
//! mirror upload. Other `upstream/` objects (version lists, release records, refusals) are
//! not its business.

use std::sync::Arc;

use aws_lambda_events::event::s3::S3Event;
use lambda_runtime::{service_fn, Diagnostic, LambdaEvent};
use tfreg_core::upstream::{UpstreamCache, UpstreamError};

use crate::settings::FetcherSettings;
use crate::{configure, error_chain, event_keys, init_tracing, Error};

/// Why a fetch failed and may succeed when tried again (Lambda retries the event, then parks
/// it in the dead-letter queue; the next request for the package asks again anyway).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FetchFailure(String);

impl From<FetchFailure> for Diagnostic {
    fn from(failure: FetchFailure) -> Self {
        Diagnostic {
            error_type: "tfreg.FetchFailure".into(),
            error_message: failure.0,
        }
    }
}

/// The entry point of the fetcher function.
pub async fn run_fetcher() -> Result<(), Error> {
    init_tracing();
    let config = configure::<FetcherSettings>().await?;
    let aws = crate::connect_aws(crate::Function::Fetcher).await?;
    // Reading records and packages back: S3's answers, never a presigned URL.
    let files = Arc::new(aws.artifacts(&config.bucket, std::time::Duration::from_secs(60)));
    let cache = crate::upstream::cache(&config.upstream, &aws, &config.bucket, files)?;
    if cache.is_none() {
        tracing::info!("no upstream provider is allowed (TFREG_UPSTREAM): every event is ignored");
    }
    let bucket = config.bucket.clone();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<S3Event>| {
        let cache = cache.clone();
        let bucket = bucket.clone();
        async move {
            handle_fetch_event(cache.as_deref(), &bucket, event.payload)
                .await
                .map_err(|e| FetchFailure(error_chain(e.as_ref())))
        }
    }))
    .await
}

/// Fetches the package of every fetch request an S3 event names; returns what became of
/// each key. A package the upstream serves wrong (not matching the signed SHA256SUMS, a
/// release Terraform would refuse) is refused for good and recorded as such: the invocation
/// succeeds, as trying again cannot help. An upstream that cannot be reached, or the
/// bucket failing, fails the invocation, so Lambda tries it again.
pub async fn handle_fetch_event(
    cache: Option<&UpstreamCache>,
    bucket: &str,
    event: S3Event,
) -> Result<Vec<String>, Error> {
    let mut outcomes = Vec::new();
    for (key, _) in event_keys(bucket, event)? {
        let Some(cache) = cache else {
            outcomes.push(format!("ignored {key}: no upstream provider is allowed"));
            continue;
        };
        let said = match cache.fetch_requested(&key).await {
            Ok(true) => format!("cached the package {key} asks for"),
            Ok(false) => format!("ignored {key}"),
            Err(UpstreamError::Refused(reason) | UpstreamError::NotFound(reason)) => {
                tracing::warn!(key, reason, "refused a requested upstream package");
                format!("refused {key}: {reason}")
            }
            Err(e) => return Err(format!("cannot fetch what {key} asks for: {e}").into()),
        };
        tracing::info!(key, "{said}");
        outcomes.push(said);
    }
    Ok(outcomes)
}
