//! Remote service discovery: `/.well-known/terraform.json`.

use axum::extract::State;
use axum::Json;
use tfreg_core::protocol::Discovery;

use crate::AppState;

pub async fn discovery(State(state): State<AppState>) -> Json<Discovery> {
    Json(state.discovery.clone())
}
