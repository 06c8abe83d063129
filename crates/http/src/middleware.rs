//! Cross-cutting request handling: the access log and the access-control slot.

use std::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::AppState;

/// Logs one line per request: method, path, status, latency. Only the path: query strings
/// carry download signatures, which must never reach a log.
pub async fn access_log(request: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    let status = response.status().as_u16();
    let latency_ms = start.elapsed().as_secs_f64() * 1000.0;
    if status >= 500 {
        tracing::error!(target: "tfreg::access", %method, path, status, latency_ms, "request");
    } else {
        tracing::info!(target: "tfreg::access", %method, path, status, latency_ms, "request");
    }
    response
}

/// Decides whether the request may read the registry. Every protocol route except discovery
/// and the self-authorising downloads passes through here. Until tokens exist (see the access
/// control issue), the registry answers everyone.
pub async fn authorize(State(_state): State<AppState>, request: Request, next: Next) -> Response {
    next.run(request).await
}
