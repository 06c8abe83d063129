//! The provider registry protocol (`providers.v1`), and provider details and download counts
//! ([`super::usage`]) beyond it.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use tfreg_core::tokens::Access;
use tfreg_core::usage::{Installed, Subject};
use tfreg_core::{Platform, ProviderAddress, Version};

use crate::answer::{self, AcceptsGzip};
use crate::error::ApiError;
use crate::extract::{JsonPath, RequestOrigin};
use crate::middleware::Caller;
use crate::routes::{provider, usage, version};
use crate::ApiState;

/// The provider registry protocol's routes, behind the token check.
pub fn routes(state: ApiState) -> axum::Router {
    use axum::routing::get;
    axum::Router::new()
        .route("/v1/providers/{namespace}/{type}", get(latest))
        .route("/v1/providers/{namespace}/{type}/versions", get(versions))
        .route("/v1/providers/{namespace}/{type}/{version}", get(details))
        .route(
            "/v1/providers/{namespace}/{type}/{version}/download/{os}/{arch}",
            get(download),
        )
        .merge(crate::routes::usage::provider_routes())
        .merge(crate::routes::uploads::provider_routes())
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::middleware::authorize,
        ))
        .with_state(state)
}

/// `GET /v1/providers/:namespace/:type`: the latest release's details.
pub async fn latest(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    RequestOrigin(origin): RequestOrigin,
    JsonPath((namespace, type_)): JsonPath<(String, String)>,
) -> Result<Response, ApiError> {
    let provider = provider(&namespace, &type_)?;
    details_of(&state, &access, &origin, provider, None).await
}

/// `GET /v1/providers/:namespace/:type/:version`: one release's details.
pub async fn details(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    RequestOrigin(origin): RequestOrigin,
    JsonPath((namespace, type_, version_text)): JsonPath<(String, String, String)>,
) -> Result<Response, ApiError> {
    let provider = provider(&namespace, &type_)?;
    let version = version(&version_text)?;
    details_of(&state, &access, &origin, provider, Some(version)).await
}

/// The details, with `downloads` the provider's count (every version and platform, all
/// time), read beside them.
async fn details_of(
    state: &ApiState,
    access: &Access,
    origin: &tfreg_core::origin::Origin,
    provider: ProviderAddress,
    version: Option<Version>,
) -> Result<Response, ApiError> {
    let subject = Subject::Provider {
        provider: provider.clone(),
    };
    let (details, downloads) = tokio::join!(
        state
            .registry
            .provider_details(access, &provider, version.as_ref()),
        usage::total_of(state, access, &subject)
    );
    let mut details = details?;
    details.downloads = downloads;
    let target = tfreg_core::layout::NoticeTarget::Provider { provider };
    details.attachments = state
        .registry
        .attachments(access, &target, &details.version, origin)
        .await?;
    Ok(Json(details).into_response())
}

/// `GET /v1/providers/:namespace/:type/versions`
pub async fn versions(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    accepts: AcceptsGzip,
    JsonPath((namespace, type_)): JsonPath<(String, String)>,
) -> Result<Response, ApiError> {
    let provider = provider(&namespace, &type_)?;
    let versions = state
        .registry
        .provider_versions_answer(&access, &provider)
        .await?;
    Ok(answer::send(&versions, accepts))
}

/// `GET /v1/providers/:namespace/:type/:version/download/:os/:arch`: counted once answered
/// (the only request of a provider install that is).
pub async fn download(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    Extension(caller): Extension<Caller>,
    method: axum::http::Method,
    RequestOrigin(origin): RequestOrigin,
    accepts: AcceptsGzip,
    JsonPath((namespace, type_, version_text, os, arch)): JsonPath<(
        String,
        String,
        String,
        String,
        String,
    )>,
) -> Result<Response, ApiError> {
    let provider = provider(&namespace, &type_)?;
    let version = version(&version_text)?;
    let platform = Platform::parse(&os, &arch).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let download = state
        .registry
        .provider_download_answer(&access, &provider, &version, &platform, &origin)
        .await?;
    let installed = Installed::Provider {
        provider,
        version,
        platform,
    };
    usage::count(&state, &method, &caller, installed);
    Ok(answer::send(&download, accepts))
}
