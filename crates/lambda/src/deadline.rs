//! Each request function's own deadline: past it, the function answers 503 with
//! `Retry-After` rather than letting its Lambda timeout end the request.

use crate::Function;

/// How long `function` lets a request run before it answers 503 with `Retry-After` itself:
/// a second under its Lambda timeout (template.yaml), so a request whose calls each stayed
/// within their budget but add up past it still gets an answer Terraform retries, never
/// API Gateway's bare 5xx for a function that timed out.
pub fn request_deadline(function: Function) -> std::time::Duration {
    match function {
        // Its upstream metadata calls are bounded at 25 s, within its 29 s.
        Function::Mirror => std::time::Duration::from_secs(28),
        _ => std::time::Duration::from_secs(9),
    }
}

/// `routes`, each request answered 503 (`Retry-After`, the JSON errors body) once it runs
/// past `deadline`.
pub fn within_deadline(routes: axum::Router, deadline: std::time::Duration) -> axum::Router {
    routes.layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| async move {
            match tokio::time::timeout(deadline, next.run(request)).await {
                Ok(response) => response,
                Err(_) => {
                    tracing::warn!(
                        deadline_ms = deadline.as_millis() as u64,
                        "a request ran past its deadline: answering 503"
                    );
                    axum::response::IntoResponse::into_response(tfreg_http::ApiError::busy())
                }
            }
        },
    ))
}
