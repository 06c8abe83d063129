//! A request that runs past its function's deadline is answered 503 with `Retry-After` and
//! the JSON errors body by the function itself, before its Lambda timeout would end it
//! with API Gateway's bare 5xx.

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::routing::get;
use tfreg_lambda::{request_deadline, within_deadline, Function};
use tower::ServiceExt;

#[tokio::test]
async fn a_request_past_its_deadline_is_answered_503_and_one_within_it_as_usual() {
    let routes = axum::Router::new()
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        )
        .route("/fast", get(|| async { "ok" }));
    let app = within_deadline(routes, Duration::from_millis(100));

    let started = std::time::Instant::now();
    let slow = app
        .clone()
        .oneshot(Request::get("/slow").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(slow.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(slow.headers()[header::RETRY_AFTER], "2");
    let body = axum::body::to_bytes(slow.into_body(), 1 << 16)
        .await
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"errors": ["the registry's storage is busy; try again in 2 s"]})
    );

    let fast = app
        .oneshot(Request::get("/fast").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(fast.status(), StatusCode::OK);
}

#[test]
fn every_deadline_is_under_its_functions_lambda_timeout() {
    // template.yaml: 10 s for every function behind API Gateway, 29 s for the mirror.
    for function in Function::ALL {
        if function.spec().family.is_none() {
            continue;
        }
        let timeout = match function {
            Function::Mirror => Duration::from_secs(29),
            _ => Duration::from_secs(10),
        };
        let deadline = request_deadline(function);
        assert!(deadline < timeout, "{function:?}");
        assert!(deadline >= timeout - Duration::from_secs(2), "{function:?}");
    }
    // Every call the SDK makes for a request function gives up well before.
    assert!(
        tfreg_aws::config::Budget::REQUESTS.operation_timeout()
            < request_deadline(Function::Modules)
    );
}
