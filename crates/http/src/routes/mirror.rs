//! The provider network mirror protocol, at `/v1/mirror/`.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use tfreg_core::tokens::Access;
use tfreg_core::Hostname;

use crate::error::ApiError;
use crate::extract::{JsonPath, RequestOrigin};
use crate::routes::{provider, version};
use crate::ApiState;

/// The network mirror protocol's routes, behind the token check.
pub fn routes(state: ApiState) -> axum::Router {
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
}

/// `GET /v1/mirror/:hostname/:namespace/:type/index.json` and `.../:version.json`
pub async fn mirror(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    RequestOrigin(origin): RequestOrigin,
    JsonPath((hostname, namespace, type_, file)): JsonPath<(String, String, String, String)>,
) -> Result<Response, ApiError> {
    let hostname = Hostname::parse(&hostname).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let provider = provider(&namespace, &type_)?;
    let Some(stem) = file.strip_suffix(".json") else {
        return Err(ApiError::NotFound(
            "the mirror serves index.json and <version>.json only".into(),
        ));
    };
    if stem == "index" {
        let index = state
            .registry
            .mirror_index(&access, &hostname, &provider, &origin)
            .await?;
        return Ok(Json(index).into_response());
    }
    let version = version(stem)?;
    let packages = state
        .registry
        .mirror_version(&access, &hostname, &provider, &version, &origin)
        .await?;
    Ok(Json(packages).into_response())
}
