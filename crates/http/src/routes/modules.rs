//! The module registry protocol (`modules.v1`), and the read API beyond it: details,
//! `latest`, listings and search, in the public registry's shapes, and download counts
//! ([`super::usage`]).

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use serde::Deserialize;
use tfreg_core::registry::modules::MAX_QUERY_CHARS;
use tfreg_core::registry::{ModuleFilter, Page};
use tfreg_core::tokens::Access;
use tfreg_core::usage::{Installed, Subject};
use tfreg_core::{ModuleAddress, Namespace, Version};

use crate::answer::{self, AcceptsGzip};
use crate::error::ApiError;
use crate::extract::{JsonPath, RequestOrigin};
use crate::middleware::Caller;
use crate::routes::usage;
use crate::ApiState;

/// The module family's routes, behind the token check.
pub fn routes(state: ApiState) -> axum::Router {
    use axum::routing::get;
    axum::Router::new()
        .route("/v1/modules", get(list_all))
        .route("/v1/modules/", get(list_all))
        .route("/v1/modules/search", get(search))
        .route("/v1/modules/{namespace}", get(list_namespace))
        .route("/v1/modules/{namespace}/{name}", get(list_systems))
        .route("/v1/modules/{namespace}/{name}/{system}", get(latest))
        .route(
            "/v1/modules/{namespace}/{name}/{system}/versions",
            get(versions),
        )
        .route(
            "/v1/modules/{namespace}/{name}/{system}/download",
            get(download_latest),
        )
        .route(
            "/v1/modules/{namespace}/{name}/{system}/{version}",
            get(details),
        )
        .route(
            "/v1/modules/{namespace}/{name}/{system}/{version}/download",
            get(download),
        )
        .merge(crate::routes::usage::module_routes())
        .merge(crate::routes::uploads::module_routes())
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

fn namespace(namespace: &str) -> Result<Namespace, ApiError> {
    Namespace::parse(namespace).map_err(|e| ApiError::BadRequest(e.to_string()))
}

fn version(version: &str) -> Result<Version, ApiError> {
    Version::parse(version).map_err(|e| ApiError::BadRequest(e.to_string()))
}

/// The query of listings and search.
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    limit: Option<String>,
    offset: Option<String>,
    q: Option<String>,
    namespace: Option<String>,
    provider: Option<String>,
}

impl ListQuery {
    fn parse(query: Result<Query<ListQuery>, QueryRejection>) -> Result<Self, ApiError> {
        let Query(query) = query
            .map_err(|e| ApiError::BadRequest(format!("malformed query: {}", e.body_text())))?;
        if query
            .q
            .as_ref()
            .is_some_and(|q| q.chars().count() > MAX_QUERY_CHARS)
        {
            return Err(ApiError::BadRequest(format!(
                "q is longer than {MAX_QUERY_CHARS} characters"
            )));
        }
        Ok(query)
    }

    fn page(&self) -> Result<Page, ApiError> {
        Page::parse(self.limit.as_deref(), self.offset.as_deref()).map_err(ApiError::BadRequest)
    }

    /// `?provider=`, checked like a module's system.
    fn system(&self) -> Result<Option<String>, ApiError> {
        self.provider
            .as_deref()
            .map(|p| {
                tfreg_core::names::ModuleSystem::parse(p)
                    .map(|s| s.to_string())
                    .map_err(|e| ApiError::BadRequest(e.to_string()))
            })
            .transpose()
    }
}

async fn list(
    state: &ApiState,
    access: &Access,
    filter: ModuleFilter,
    query: &ListQuery,
    path: &str,
) -> Result<Response, ApiError> {
    let page = query.page()?;
    let mut params: Vec<(&str, &str)> = Vec::new();
    for (name, value) in [
        ("q", &filter.query),
        ("provider", &filter.system),
        ("namespace", &query.namespace),
    ] {
        if let Some(value) = value {
            params.push((name, value));
        }
    }
    let list = state
        .registry
        .list_modules(access, &filter, page, path, &params)
        .await?;
    Ok(Json(&*list).into_response())
}

/// `GET /v1/modules`: every module the token may read, its latest version each.
pub async fn list_all(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let query = ListQuery::parse(query)?;
    let filter = ModuleFilter {
        namespace: query.namespace.as_deref().map(namespace).transpose()?,
        system: query.system()?,
        ..Default::default()
    };
    list(&state, &access, filter, &query, "/v1/modules").await
}

/// `GET /v1/modules/search?q=`: modules whose address or description holds every word.
pub async fn search(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let query = ListQuery::parse(query)?;
    let Some(q) = query.q.clone().filter(|q| !q.trim().is_empty()) else {
        return Err(ApiError::BadRequest(
            "search needs words to look for: ?q=<words>".into(),
        ));
    };
    let filter = ModuleFilter {
        namespace: query.namespace.as_deref().map(namespace).transpose()?,
        system: query.system()?,
        query: Some(q),
        ..Default::default()
    };
    list(&state, &access, filter, &query, "/v1/modules/search").await
}

/// `GET /v1/modules/:namespace`: the namespace's modules.
pub async fn list_namespace(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    JsonPath(ns): JsonPath<String>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let query = ListQuery::parse(query)?;
    let ns = namespace(&ns)?;
    let path = format!("/v1/modules/{ns}");
    let filter = ModuleFilter {
        namespace: Some(ns),
        system: query.system()?,
        ..Default::default()
    };
    list(&state, &access, filter, &query, &path).await
}

/// `GET /v1/modules/:namespace/:name`: the latest version for each system; 404 when there
/// is none.
pub async fn list_systems(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    JsonPath((ns, name)): JsonPath<(String, String)>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let query = ListQuery::parse(query)?;
    let ns = namespace(&ns)?;
    let name = tfreg_core::names::ModuleName::parse(&name)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let path = format!("/v1/modules/{ns}/{name}");
    let filter = ModuleFilter {
        namespace: Some(ns.clone()),
        name: Some(name.to_string()),
        ..Default::default()
    };
    let list = state
        .registry
        .list_modules(&access, &filter, query.page()?, &path, &[])
        .await?;
    if list.modules.is_empty() && list.meta.current_offset == 0 {
        return Err(ApiError::NotFound(format!(
            "module {ns}/{name} is not published here"
        )));
    }
    Ok(Json(&*list).into_response())
}

/// `GET /v1/modules/:namespace/:name/:system`: the latest version's details.
pub async fn latest(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    RequestOrigin(origin): RequestOrigin,
    JsonPath((namespace, name, system)): JsonPath<(String, String, String)>,
) -> Result<Response, ApiError> {
    let address = address(&namespace, &name, &system)?;
    details_of(&state, &access, &origin, address, None).await
}

/// `GET /v1/modules/:namespace/:name/:system/:version`: one version's details.
pub async fn details(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    RequestOrigin(origin): RequestOrigin,
    JsonPath((namespace, name, system, version_text)): JsonPath<(String, String, String, String)>,
) -> Result<Response, ApiError> {
    let address = address(&namespace, &name, &system)?;
    let version = version(&version_text)?;
    details_of(&state, &access, &origin, address, Some(version)).await
}

/// The details, with `downloads` the module's count (every version, all time), read beside
/// them.
async fn details_of(
    state: &ApiState,
    access: &Access,
    origin: &tfreg_core::origin::Origin,
    address: ModuleAddress,
    version: Option<Version>,
) -> Result<Response, ApiError> {
    let subject = Subject::Module {
        address: address.clone(),
    };
    let (details, downloads) = tokio::join!(
        state
            .registry
            .module_details(access, &address, version.as_ref()),
        usage::total_of(state, access, &subject)
    );
    let mut details = details?;
    details.entry.downloads = downloads;
    let target = tfreg_core::layout::NoticeTarget::Module { address };
    details.attachments = state
        .registry
        .attachments(access, &target, &details.entry.version, origin)
        .await?;
    Ok(Json(details).into_response())
}

/// `GET /v1/modules/:namespace/:name/:system/versions`
pub async fn versions(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    accepts: AcceptsGzip,
    JsonPath((namespace, name, system)): JsonPath<(String, String, String)>,
) -> Result<Response, ApiError> {
    let address = address(&namespace, &name, &system)?;
    let versions = state
        .registry
        .module_versions_answer(&access, &address)
        .await?;
    Ok(answer::send(&versions, accepts))
}

/// `GET /v1/modules/:namespace/:name/:system/download`: 302 to the latest version's
/// download.
pub async fn download_latest(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    JsonPath((namespace, name, system)): JsonPath<(String, String, String)>,
) -> Result<Response, ApiError> {
    let address = address(&namespace, &name, &system)?;
    let version = state.registry.module_latest(&access, &address).await?;
    let location = format!("/v1/modules/{address}/{version}/download");
    let location =
        axum::http::HeaderValue::try_from(location).map_err(|e| ApiError::Internal(Box::new(e)))?;
    Ok((StatusCode::FOUND, [(header::LOCATION, location)]).into_response())
}

/// `GET /v1/modules/:namespace/:name/:system/:version/download`: 204 with `X-Terraform-Get`.
/// Counted once answered (the only request of a module install that is).
pub async fn download(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    Extension(caller): Extension<Caller>,
    method: axum::http::Method,
    RequestOrigin(origin): RequestOrigin,
    JsonPath((namespace, name, system, version_text)): JsonPath<(String, String, String, String)>,
) -> Result<Response, ApiError> {
    let address = address(&namespace, &name, &system)?;
    let version = version(&version_text)?;
    let url = state
        .registry
        .module_download_url(&access, &address, &version, &origin)
        .await?;
    let header =
        axum::http::HeaderValue::try_from(url).map_err(|e| ApiError::Internal(Box::new(e)))?;
    usage::count(
        &state,
        &method,
        &caller,
        Installed::Module { address, version },
    );
    Ok((StatusCode::NO_CONTENT, [(X_TERRAFORM_GET, header)]).into_response())
}
