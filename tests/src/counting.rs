//! A counting proxy in front of moto: every DynamoDB and S3 call a function makes passes
//! through it, so tests count calls and bytes at the emulator, not inside tfreg.
//!
//! The functions reach it through the SDK's per-service endpoint variables
//! (`AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL_S3`), over plain HTTP on 127.0.0.1; it
//! forwards each request unchanged to moto over TLS.

use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;

/// One call that reached the emulator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// `dynamodb` or `s3`.
    pub service: &'static str,
    /// The DynamoDB operation (`Query`, `GetItem`, `UpdateItem`, …) or the S3 method
    /// and path (`GET /bucket/key`).
    pub action: String,
    /// The answer's body size.
    pub response_bytes: usize,
}

impl Call {
    /// True for a call that changes the table or the bucket.
    pub fn writes(&self) -> bool {
        match self.service {
            "dynamodb" => matches!(
                self.action.as_str(),
                "PutItem"
                    | "UpdateItem"
                    | "DeleteItem"
                    | "BatchWriteItem"
                    | "TransactWriteItems"
            ),
            _ => !(self.action.starts_with("GET ") || self.action.starts_with("HEAD ")),
        }
    }
}

struct Upstream {
    endpoint: String,
    client: reqwest::Client,
    calls: Mutex<Vec<Call>>,
}

/// A running proxy; stopped with its runtime when dropped.
pub struct CountingProxy {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    upstream: Arc<Upstream>,
    _runtime: tokio::runtime::Runtime,
}

impl CountingProxy {
    /// Starts a proxy to `endpoint` (moto's `https://` URL), trusting `cert`.
    pub fn start(endpoint: &str, cert: &Path) -> CountingProxy {
        let pem = std::fs::read(cert).unwrap();
        let client = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let upstream = Arc::new(Upstream {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            client,
            calls: Mutex::new(Vec::new()),
        });
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new()
            .fallback(forward)
            .with_state(Arc::clone(&upstream));
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let _ = axum::serve(listener, app).await;
        });
        CountingProxy {
            url,
            upstream,
            _runtime: runtime,
        }
    }

    /// The calls since the last [`CountingProxy::take`].
    pub fn take(&self) -> Vec<Call> {
        std::mem::take(&mut *self.upstream.calls.lock().unwrap())
    }
}

async fn forward(State(upstream): State<Arc<Upstream>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let body: Bytes = axum::body::to_bytes(body, 64 << 20)
        .await
        .unwrap_or_default();
    let target = parts
        .headers
        .get("x-amz-target")
        .and_then(|t| t.to_str().ok())
        .unwrap_or("");
    let (service, action) = match target.split_once('.') {
        Some((api, operation)) if api.starts_with("DynamoDB") => ("dynamodb", operation.to_owned()),
        _ => (
            "s3",
            format!("{} {}", parts.method, path.split('?').next().unwrap_or("")),
        ),
    };
    let mut outgoing = upstream
        .client
        .request(parts.method.clone(), format!("{}{path}", upstream.endpoint))
        .body(body);
    for (name, value) in &parts.headers {
        if name != axum::http::header::HOST && name != axum::http::header::CONTENT_LENGTH {
            outgoing = outgoing.header(name, value);
        }
    }
    let answer = match outgoing.send().await {
        Ok(answer) => answer,
        Err(e) => {
            return Response::builder()
                .status(502)
                .body(Body::from(format!("counting proxy: {e}")))
                .unwrap()
        }
    };
    let status = answer.status();
    let head = parts.method == axum::http::Method::HEAD;
    let headers = answer.headers().clone();
    let bytes = answer.bytes().await.unwrap_or_default();
    upstream.calls.lock().unwrap().push(Call {
        service,
        action,
        response_bytes: bytes.len(),
    });
    let mut response = Response::builder().status(status);
    for (name, value) in &headers {
        if name != axum::http::header::TRANSFER_ENCODING
            && (head || name != axum::http::header::CONTENT_LENGTH)
            && name != axum::http::header::CONNECTION
        {
            response = response.header(name, value);
        }
    }
    response.body(Body::from(bytes)).unwrap()
}
