//! The provider registry protocol (`providers.v1`), and provider details beyond it.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use tfreg_core::tokens::Access;
use tfreg_core::Platform;

use crate::answer::{self, AcceptsGzip};
use crate::error::ApiError;
use crate::extract::{JsonPath, RequestOrigin};
use crate::routes::{provider, version};
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
    JsonPath((namespace, type_)): JsonPath<(String, String)>,
) -> Result<Response, ApiError> {
    let provider = provider(&namespace, &type_)?;
    let details = state
        .registry
        .provider_details(&access, &provider, None)
        .await?;
    Ok(Json(details).into_response())
}

/// `GET /v1/providers/:namespace/:type/:version`: one release's details.
pub async fn details(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    JsonPath((namespace, type_, version_text)): JsonPath<(String, String, String)>,
) -> Result<Response, ApiError> {
    let provider = provider(&namespace, &type_)?;
    let version = version(&version_text)?;
    let details = state
        .registry
        .provider_details(&access, &provider, Some(&version))
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

/// `GET /v1/providers/:namespace/:type/:version/download/:os/:arch`
pub async fn download(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
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
    Ok(answer::send(&download, accepts))
}
