//! The upstream cache on Lambda. The mirror function answers for the upstream providers the
//! allow-list takes from their origin registry's metadata (kept under `upstream/` in the
//! bucket); a package not cached yet is handed out at the upstream's own URL with its `zh:`
//! hash, and a fetch request is written beside the records for the fetcher
//! ([`crate::fetcher`]), which the bucket's events start. No request waits for a download.

use std::sync::Arc;

use tfreg_core::upstream::UpstreamCache;
use tfreg_http::routes::mirror::Upstream;
use tfreg_http::Family;

use crate::settings::{LambdaUpstream, MirrorSettings};
use crate::{api_state, configure, init_tracing, Error, Stores};

/// The cache over `bucket` (records and packages read through `stores`' artifact store,
/// written with S3 uploads); `None` when no upstream provider is allowed.
pub fn cache(
    upstream: &LambdaUpstream,
    aws: &tfreg_aws::Aws,
    bucket: &str,
    files: Arc<dyn tfreg_core::ArtifactStore>,
) -> Result<Option<Arc<UpstreamCache>>, crate::ConfigError> {
    let Some((settings, client)) = upstream.configured()? else {
        return Ok(None);
    };
    let writer = Arc::new(aws.writer(bucket));
    // Packages are spooled in /tmp, the function's ephemeral storage.
    Ok(Some(UpstreamCache::new(
        settings,
        Arc::new(client),
        files,
        writer,
        None,
    )))
}

/// The mirror function: the network mirror over DynamoDB and S3, and the upstream cache
/// when the allow-list takes any provider.
pub async fn run_mirror() -> Result<(), Error> {
    init_tracing();
    let config = configure::<MirrorSettings>().await?;
    let api = &config.api;
    let aws = crate::connect_aws(crate::Function::Mirror).await?;
    let stores = Stores::connect_with(
        &aws,
        &api.table,
        &api.bucket,
        &api.downloads,
        api.cache,
        false,
    );
    let files = Arc::clone(&stores.artifacts);
    let mut state = api_state(api, stores);
    // Checked at the cold start already (configure): it cannot fail here but for a CA file
    // removed since.
    if let Some(cache) = cache(&config.upstream, &aws, &api.bucket, files)? {
        tracing::info!(
            allowed = ?config.upstream.args.patterns,
            "the mirror answers for upstream providers (pass-through; fetches requested through the bucket)"
        );
        state.upstream = Some(Upstream {
            cache,
            // No URL of the registry fetches a package: uncached ones pass through.
            signer: None,
        });
    }
    let routes = tfreg_http::routes::mirror::routes(state);
    let routes = crate::within_deadline(routes, crate::request_deadline(crate::Function::Mirror));
    lambda_http::run(tfreg_http::family(Family::Mirror, routes)).await
}
