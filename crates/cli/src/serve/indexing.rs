//! While the first index of the data directory runs, the server answers from what is
//! indexed so far. A file not yet reached is not yet in the index, so an API answer of
//! "not found" then says only that it is not known *yet*: it becomes a 503 with
//! `Retry-After` and the indexing's progress, which Terraform's HTTP client retries once
//! after the seconds given (`tfreg_http::error::RETRY_AFTER_SECONDS`), instead of a 404 a
//! client would take for the truth. Once the first index is whole, a 404 is a 404.

use std::path::PathBuf;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use tokio::sync::watch;

/// What the layer needs: whether the first index is done, and where its progress is kept.
#[derive(Clone)]
struct Indexing {
    done: watch::Receiver<bool>,
    data: PathBuf,
}

/// `router`, with its API's 404s answered as "not yet" until `done` turns true.
pub fn not_found_means_not_yet(
    router: axum::Router,
    done: watch::Receiver<bool>,
    data: PathBuf,
) -> axum::Router {
    router.layer(axum::middleware::from_fn_with_state(
        Indexing { done, data },
        not_yet,
    ))
}

async fn not_yet(State(indexing): State<Indexing>, request: Request, next: Next) -> Response {
    // The registry's API and downloads; pages keep their own 404 page.
    let api = request.uri().path().starts_with("/v1/");
    let response = next.run(request).await;
    if !api || response.status() != StatusCode::NOT_FOUND || *indexing.done.borrow() {
        return response;
    }
    let progress = tfreg_local::watcher::read_progress(&indexing.data)
        .map(|p| format!(" ({})", p.describe()))
        .unwrap_or_default();
    tfreg_http::error::retry_after(tfreg_http::error::error_response(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "not found yet: the registry is still indexing its data directory{progress}; try again shortly"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::routing::get;
    use tower::ServiceExt as _;

    use super::*;

    async fn status(router: &axum::Router, path: &str) -> (StatusCode, Option<String>) {
        let response = router
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let retry = response
            .headers()
            .get(axum::http::header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_owned());
        (response.status(), retry)
    }

    #[tokio::test]
    async fn an_api_not_found_is_not_yet_until_the_first_index_is_whole() {
        let data = tempfile::tempdir().unwrap();
        let router = axum::Router::new()
            .route("/v1/found", get(|| async { "here" }))
            .fallback(|| async { StatusCode::NOT_FOUND });
        let (done, signal) = watch::channel(false);
        let router = not_found_means_not_yet(router, signal, data.path().to_path_buf());
        // While the first index runs: what is indexed is served, what is not is "not yet"
        assert_eq!(status(&router, "/v1/found").await.0, StatusCode::OK);
        assert_eq!(
            status(&router, "/v1/modules/acme/x/aws/versions").await,
            (StatusCode::SERVICE_UNAVAILABLE, Some("2".to_owned()))
        );
        // pages keep their own 404
        assert_eq!(
            status(&router, "/namespaces/acme").await.0,
            StatusCode::NOT_FOUND
        );
        // Once it is whole, a 404 is a 404
        done.send(true).unwrap();
        assert_eq!(
            status(&router, "/v1/modules/acme/x/aws/versions").await.0,
            StatusCode::NOT_FOUND
        );
    }
}
