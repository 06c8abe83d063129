//! The provider network mirror protocol, at `/v1/mirror/`: the registry's own providers,
//! uploads under `mirror/`, and (with an [`Upstream`] cache) the upstream providers the
//! operator allows, with the URLs that fetch their packages.

use std::time::SystemTime;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use tfreg_core::tokens::Access;
use tfreg_core::upstream::clients::for_client;
use tfreg_core::upstream::{mirror as upstream_mirror, UpstreamProvider};
use tfreg_core::{Hostname, Platform, ProviderAddress};
use tokio_util::io::ReaderStream;

use crate::answer::{self, AcceptsGzip};
use crate::error::ApiError;
use crate::extract::{ClientIp, JsonPath, RequestOrigin, SignedQuery};
use crate::routes::{provider, version};
use crate::ApiState;

/// The upstream cache and the signer of its package URLs, held in the state every
/// registry-reading family shares (so it is defined beside it: their binaries hold no code of
/// this family).
pub use crate::Upstream;

/// The network mirror protocol's routes, behind the token check, and the upstream cache's
/// package URLs, authorised by their own signature.
pub fn routes(state: ApiState) -> axum::Router {
    let packages = axum::Router::new()
        .route(
            "/v1/mirror/{hostname}/{namespace}/{type}/{version}/{file}",
            axum::routing::get(package),
        )
        .with_state(state.clone());
    axum::Router::new()
        .route(
            "/v1/mirror/{hostname}/{namespace}/{type}/{file}",
            axum::routing::get(mirror),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::middleware::authorize,
        ))
        .with_state(state)
        .merge(packages)
}

/// The upstream provider `hostname/provider`, when the cache takes it and it is not the
/// registry's own.
fn upstream_of(
    state: &ApiState,
    hostname: &Hostname,
    provider: &ProviderAddress,
    origin: &tfreg_core::Origin,
) -> Option<(Upstream, UpstreamProvider)> {
    let upstream = state.upstream.as_ref()?;
    if state.registry.is_own(hostname, origin) {
        return None;
    }
    let up = upstream.cache.allowed(hostname, provider)?;
    Some((upstream.clone(), up))
}

/// `GET /v1/mirror/:hostname/:namespace/:type/index.json` and `.../:version.json`
pub async fn mirror(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    RequestOrigin(origin): RequestOrigin,
    ClientIp(client): ClientIp,
    accepts: AcceptsGzip,
    JsonPath((hostname, namespace, type_, file)): JsonPath<(String, String, String, String)>,
) -> Result<Response, ApiError> {
    let hostname = Hostname::parse(&hostname).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let provider = provider(&namespace, &type_)?;
    let Some(stem) = file.strip_suffix(".json") else {
        return Err(ApiError::NotFound(
            "the mirror serves index.json and <version>.json only".into(),
        ));
    };
    let upstream = upstream_of(&state, &hostname, &provider, &origin);
    if stem == "index" {
        let index = match &upstream {
            Some((u, up)) => {
                let index = upstream_mirror::index(&u.cache, &state.registry, &access, up);
                Json(for_client(client, index).await?).into_response()
            }
            None => {
                let index = state
                    .registry
                    .mirror_index_answer(&access, &hostname, &provider, &origin)
                    .await?;
                answer::send(&index, accepts)
            }
        };
        return Ok(index);
    }
    let version = version(stem)?;
    let packages = match &upstream {
        Some((u, up)) => {
            let signer = u.signer.as_deref();
            let answer = upstream_mirror::version(
                &u.cache,
                &state.registry,
                &access,
                up,
                &version,
                &origin,
                signer,
            );
            Json(for_client(client, answer).await?).into_response()
        }
        None => {
            let packages = state
                .registry
                .mirror_version_answer(&access, &hostname, &provider, &version, &origin)
                .await?;
            answer::send(&packages, accepts)
        }
    };
    Ok(packages)
}

const REFUSED: &str = "this package URL is invalid or has expired: ask the mirror again";

/// `GET /v1/mirror/:hostname/:namespace/:type/:version/:os_:arch.zip?expires=..&signature=..`:
/// an upstream package, fetched and verified first if it is not cached yet.
pub async fn package(
    State(state): State<ApiState>,
    RequestOrigin(origin): RequestOrigin,
    ClientIp(client): ClientIp,
    JsonPath((hostname, namespace, type_, version_text, file)): JsonPath<(
        String,
        String,
        String,
        String,
        String,
    )>,
    query: Result<Query<SignedQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Ok(Query(query)) = query else {
        return Err(ApiError::Forbidden(REFUSED.into()));
    };
    let hostname = Hostname::parse(&hostname).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let provider = provider(&namespace, &type_)?;
    let version = version(&version_text)?;
    let platform = file
        .strip_suffix(".zip")
        .and_then(|p| Platform::parse_joined(p).ok())
        .ok_or_else(|| ApiError::NotFound("no such package".into()))?;
    let Some((upstream, up)) = upstream_of(&state, &hostname, &provider, &origin) else {
        return Err(ApiError::NotFound("no such package".into()));
    };
    let Some(signer) = &upstream.signer else {
        return Err(ApiError::NotFound("no such package".into()));
    };
    let (Some(expires), Some(signature)) = (query.expires_at(), query.signature()) else {
        return Err(ApiError::Forbidden(REFUSED.into()));
    };
    let key = up.package_key(&version, &platform);
    if let Err(reason) = signer.verify(&key, None, expires, signature, SystemTime::now()) {
        tracing::info!(%reason, "refused an upstream package URL");
        return Err(ApiError::Forbidden(REFUSED.into()));
    }
    let package = for_client(client, upstream.cache.package(&up, &version, &platform)).await?;
    let file = tokio::fs::File::from_std(package.file);
    // The spool file (if any) lives as long as the answer's body.
    let keep = package.spool;
    let stream = ReaderStream::new(file);
    let body = Body::from_stream(futures_util::StreamExt::map(stream, move |chunk| {
        let _ = &keep;
        chunk
    }));
    Ok((
        [
            (header::CONTENT_TYPE, "application/zip".to_owned()),
            (header::CONTENT_LENGTH, package.size.to_string()),
            (header::CACHE_CONTROL, "private, no-store".to_owned()),
        ],
        body,
    )
        .into_response())
}
