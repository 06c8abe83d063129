//! tfreg's HTTP API: one axum [`Router`] for discovery, the module and provider registry
//! protocols, the provider network mirror and self-authorising downloads. The local server serves it over TLS; each Lambda function
//! serves it through `lambda_http`. No storage or transport decisions are made here.

pub mod error;
pub mod extract;
pub mod logging;
pub mod middleware;
pub mod routes;

use std::sync::Arc;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use tfreg_core::protocol::Discovery;
use tfreg_core::signing::UrlSigner;
use tfreg_core::tokens::TokenStore;
use tfreg_core::Registry;

pub use error::ApiError;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub registry: Registry,
    /// Set when the artifact store's download URLs point back at this server (the local
    /// shape); `None` when downloads go elsewhere (S3 presigned URLs).
    pub signer: Option<Arc<UrlSigner>>,
    /// Where tokens are checked; `None` for a public registry, which answers everyone.
    pub tokens: Option<Arc<dyn TokenStore>>,
    pub discovery: Discovery,
}

impl AppState {
    /// A registry that requires tokens from `tokens`, or a public one when it is `None`.
    pub fn new(
        registry: Registry,
        signer: Option<Arc<UrlSigner>>,
        tokens: Option<Arc<dyn TokenStore>>,
    ) -> Self {
        Self {
            registry,
            signer,
            tokens,
            discovery: Discovery::default(),
        }
    }
}

/// The whole API.
pub fn router(state: AppState) -> Router {
    // Everything that reads the registry's content goes through `authorize`.
    let protected = Router::new()
        .route(
            "/v1/modules/{namespace}/{name}/{system}/versions",
            get(routes::modules::versions),
        )
        .route(
            "/v1/modules/{namespace}/{name}/{system}/{version}/download",
            get(routes::modules::download),
        )
        .route(
            "/v1/providers/{namespace}/{type}/versions",
            get(routes::providers::versions),
        )
        .route(
            "/v1/providers/{namespace}/{type}/{version}/download/{os}/{arch}",
            get(routes::providers::download),
        )
        .route(
            "/v1/mirror/{hostname}/{namespace}/{type}/{file}",
            get(routes::mirror::mirror),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::authorize,
        ));

    Router::new()
        .route(
            "/.well-known/terraform.json",
            get(routes::discovery::discovery),
        )
        .route("/v1/artifacts/{*key}", get(routes::artifacts::download))
        .merge(protected)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        .layer(axum::middleware::from_fn(middleware::access_log))
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such endpoint".into())
}

async fn method_not_allowed() -> axum::response::Response {
    error::error_response(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
}
