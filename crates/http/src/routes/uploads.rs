//! Who uploaded a version's files (the AWS shape), beside the module and provider routes
//! (registered by [`super::modules::routes`] and [`super::providers::routes`], behind the
//! same token check):
//!
//! - `GET /v1/modules/NS/NAME/SYSTEM/VERSION/uploads`
//! - `GET /v1/providers/NS/TYPE/VERSION/uploads`
//!
//! Each recorded upload of the version's files: key, revision, the IAM principal S3 reported
//! and when. Like consumers ([`super::usage`]), they are answered only to a request whose
//! checked token reads the namespace ([`Caller::sees_consumers`]): anyone else gets a `403`
//! that says so, which on a public registry is every request. Outside the token's
//! namespaces it is the same `404` as everywhere; a version with no recorded upload is a
//! `404` too (the local shape records none).

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json, Router};
use serde::Serialize;
use tfreg_core::layout::NoticeTarget;
use tfreg_core::store::UploadRecord;
use tfreg_core::tokens::Access;
use tfreg_core::{ModuleAddress, Namespace, Version};

use crate::error::ApiError;
use crate::extract::JsonPath;
use crate::middleware::Caller;
use crate::routes::{provider, version};
use crate::ApiState;

/// The module family's upload route (merged before its token check).
pub fn module_routes() -> Router<ApiState> {
    Router::new().route(
        "/v1/modules/{namespace}/{name}/{system}/{version}/uploads",
        axum::routing::get(module_uploads),
    )
}

/// The provider family's upload route (merged before its token check).
pub fn provider_routes() -> Router<ApiState> {
    Router::new().route(
        "/v1/providers/{namespace}/{type}/{version}/uploads",
        axum::routing::get(provider_uploads),
    )
}

/// `{"id": "acme/network/aws/1.1.0", "uploads": [...]}`
#[derive(Debug, Serialize)]
pub struct UploadsDoc {
    /// The version's address.
    pub id: String,
    /// Its files' recorded uploads, by key.
    pub uploads: Vec<Uploaded>,
}

/// One recorded upload.
#[derive(Debug, Serialize)]
pub struct Uploaded {
    /// The object key.
    pub key: String,
    /// The object revision uploaded (opaque).
    pub revision: String,
    /// The principal S3 reported for the request (`AWS:AIDA...`, `AWS:AROA...:session`).
    pub principal: String,
    /// When S3 took the request (RFC 3339), or `null`.
    pub uploaded_at: Option<String>,
}

fn refused(namespace: &Namespace) -> ApiError {
    ApiError::namespace_readers_only("uploaders", namespace)
}

async fn answer(
    state: &ApiState,
    access: &Access,
    caller: &Caller,
    target: NoticeTarget,
    version: Version,
) -> Result<Response, ApiError> {
    let (namespace, id) = match &target {
        NoticeTarget::Module { address } => (&address.namespace, format!("{address}/{version}")),
        NoticeTarget::Provider { provider } => {
            (&provider.namespace, format!("{provider}/{version}"))
        }
    };
    let absent = || {
        ApiError::NotFound(format!(
            "{target} has no recorded upload of version {version}"
        ))
    };
    if !access.allows(namespace) {
        return Err(absent());
    }
    if !caller.sees_consumers(access, namespace) {
        return Err(refused(namespace));
    }
    let records = state.registry.uploads(access, &target, &version).await?;
    if records.is_empty() {
        return Err(absent());
    }
    let uploads = records.into_iter().map(uploaded).collect();
    Ok(Json(UploadsDoc { id, uploads }).into_response())
}

fn uploaded(record: UploadRecord) -> Uploaded {
    Uploaded {
        key: record.key,
        revision: record.revision,
        principal: record.principal,
        uploaded_at: record.uploaded_at,
    }
}

/// `GET /v1/modules/:namespace/:name/:system/:version/uploads`
pub async fn module_uploads(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    Extension(caller): Extension<Caller>,
    JsonPath((namespace, name, system, version_text)): JsonPath<(String, String, String, String)>,
) -> Result<Response, ApiError> {
    let address = ModuleAddress::parse(&namespace, &name, &system)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let version = version(&version_text)?;
    let target = NoticeTarget::Module { address };
    answer(&state, &access, &caller, target, version).await
}

/// `GET /v1/providers/:namespace/:type/:version/uploads`
pub async fn provider_uploads(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    Extension(caller): Extension<Caller>,
    JsonPath((namespace, type_, version_text)): JsonPath<(String, String, String)>,
) -> Result<Response, ApiError> {
    let provider = provider(&namespace, &type_)?;
    let version = version(&version_text)?;
    let target = NoticeTarget::Provider { provider };
    answer(&state, &access, &caller, target, version).await
}
