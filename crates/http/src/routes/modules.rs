//! The module registry protocol (`modules.v1`).

use axum::extract::State;
use axum::http::{HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use tfreg_core::tokens::Access;
use tfreg_core::{ModuleAddress, Version};

use crate::error::ApiError;
use crate::extract::{JsonPath, RequestOrigin};
use crate::ApiState;

/// The module registry protocol's routes, behind the token check.
pub fn routes(state: ApiState) -> axum::Router {
    use axum::routing::get;
    axum::Router::new()
        .route(
            "/v1/modules/{namespace}/{name}/{system}/versions",
            get(versions),
        )
        .route(
            "/v1/modules/{namespace}/{name}/{system}/{version}/download",
            get(download),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::middleware::authorize,
        ))
        .with_state(state)
}

const X_TERRAFORM_GET: HeaderName = HeaderName::from_static("x-terraform-get");

fn address(namespace: &str, name: &str, system: &str) -> Result<ModuleAddress, ApiError> {
    ModuleAddress::parse(namespace, name, system).map_err(|e| ApiError::BadRequest(e.to_string()))
}

/// `GET /v1/modules/:namespace/:name/:system/versions`
pub async fn versions(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    JsonPath((namespace, name, system)): JsonPath<(String, String, String)>,
) -> Result<Response, ApiError> {
    let address = address(&namespace, &name, &system)?;
    let versions = state.registry.module_versions(&access, &address).await?;
    Ok(Json(versions).into_response())
}

/// `GET /v1/modules/:namespace/:name/:system/:version/download`: 204 with `X-Terraform-Get`.
pub async fn download(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    RequestOrigin(origin): RequestOrigin,
    JsonPath((namespace, name, system, version)): JsonPath<(String, String, String, String)>,
) -> Result<Response, ApiError> {
    let address = address(&namespace, &name, &system)?;
    let version = Version::parse(&version).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let url = state
        .registry
        .module_download_url(&access, &address, &version, &origin)
        .await?;
    let header =
        axum::http::HeaderValue::try_from(url).map_err(|e| ApiError::Internal(Box::new(e)))?;
    Ok((StatusCode::NO_CONTENT, [(X_TERRAFORM_GET, header)]).into_response())
}
