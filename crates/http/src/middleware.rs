//! Cross-cutting request handling: the access log and the access-control slot.

use std::time::{Instant, SystemTime};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tfreg_core::names::Namespace;
use tfreg_core::tokens::{authenticate_record, Access};
use tfreg_core::usage::Consumer;

use crate::error::ApiError;
use crate::ApiState;

/// Logs one line per request: method, path, status, latency. Only the path: query strings
/// carry download signatures, which must never reach a log. Successes are logged at `debug`
/// (`RUST_LOG=info,tfreg::access=debug` shows them; the Lambda functions do by default):
/// a line for every request cost a fifth of the local server's throughput (BENCHMARKS.md).
/// Refusals (4xx) are logged at `info`, failures (5xx) at `error`.
pub async fn access_log(request: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    let status = response.status().as_u16();
    let latency_ms = start.elapsed().as_secs_f64() * 1000.0;
    if status < 400 && !tracing::enabled!(target: "tfreg::access", tracing::Level::DEBUG) {
        return response;
    }
    // The family whose route matched (`crate::family`, `crate::router`), not the path's look.
    let route = response
        .extensions()
        .get::<crate::Family>()
        .map_or("none", |family| family.name());
    if status >= 500 {
        tracing::error!(target: "tfreg::access", %method, path, route, status, latency_ms, "request");
    } else if status >= 400 {
        tracing::info!(target: "tfreg::access", %method, path, route, status, latency_ms, "request");
    } else {
        tracing::debug!(target: "tfreg::access", %method, path, route, status, latency_ms, "request");
    }
    response
}

/// Who made a request, as its token says: set by [`authorize`] beside the [`Access`]. A
/// public registry checks no token, so its requests have no consumer.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// The consumer the request's token names ([`Consumer::of`]); `None` on a public
    /// registry.
    pub consumer: Option<Consumer>,
}

impl Caller {
    /// True when this request may see who installed what in `namespace`: only a request
    /// whose token was checked and reads the namespace. Nothing personal leaves a
    /// namespace's readers: a public registry's requests, which carry no checked token,
    /// never do.
    pub fn sees_consumers(&self, access: &Access, namespace: &Namespace) -> bool {
        self.consumer.is_some() && access.allows(namespace)
    }
}

/// Decides what the request may read, and records it as an [`Access`] extension for the
/// handlers, with the [`Caller`] (who the token was issued to, for download counts).
/// Every protocol route except discovery and the self-authorising downloads passes
/// through here. A public registry lets everyone read everything; otherwise a valid bearer
/// token is required (401 with `WWW-Authenticate` when it is missing or not valid).
pub async fn authorize(
    State(state): State<ApiState>,
    mut request: Request,
    next: Next,
) -> Response {
    let (access, caller) = match &state.tokens {
        None => (Access::All, Caller::default()),
        Some(tokens) => {
            let header = request
                .headers()
                .get(axum::http::header::AUTHORIZATION)
                .map(|h| h.to_str().unwrap_or(""));
            match authenticate_record(tokens.as_ref(), header, SystemTime::now()).await {
                Ok(Ok(record)) => (
                    record.access(),
                    Caller {
                        consumer: Some(Consumer::of(&record)),
                    },
                ),
                Ok(Err(refused)) => return ApiError::Unauthorized(refused).into_response(),
                Err(e) => return ApiError::from(e).into_response(),
            }
        }
    };
    request.extensions_mut().insert(access);
    request.extensions_mut().insert(caller);
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    use crate::Family;

    /// The access log's `route` of each request to the discovery family's router.
    fn routes_logged(requests: &[(&str, &str)]) -> Vec<String> {
        let sink = Arc::new(Mutex::new(Vec::<u8>::new()));
        let writer = Arc::clone(&sink);
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_writer(move || Writer(Arc::clone(&writer)))
            .with_max_level(tracing::Level::DEBUG)
            .finish();
        let app = crate::family(
            Family::Discovery,
            crate::routes::discovery::routes(tfreg_core::protocol::Discovery::default()),
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        tracing::subscriber::with_default(subscriber, || {
            for (method, path) in requests {
                let request = Request::builder().method(*method).uri(*path);
                let request = request.body(Body::empty()).unwrap();
                runtime.block_on(app.clone().oneshot(request)).unwrap();
            }
        });
        let out = String::from_utf8(sink.lock().unwrap().clone()).unwrap();
        out.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .map(|l| l["fields"]["route"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    struct Writer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Writer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn each_line_names_the_family_whose_route_matched() {
        let routes = routes_logged(&[
            ("GET", "/.well-known/terraform.json"),
            ("DELETE", "/.well-known/terraform.json"),
            ("GET", "/v1/modules"),
        ]);
        // Its own route, a method it does not answer there, and a path no route of it has.
        assert_eq!(routes, ["discovery", "discovery", "none"]);
    }
}
