//! Remote service discovery: `/.well-known/terraform.json`. Needs nothing but the document.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use tfreg_core::protocol::Discovery;

/// The discovery family's routes.
pub fn routes(discovery: Discovery) -> Router {
    Router::new()
        .route("/.well-known/terraform.json", get(discovery_document))
        .with_state(discovery)
}

async fn discovery_document(State(discovery): State<Discovery>) -> Json<Discovery> {
    Json(discovery)
}
