//! A counting proxy in front of moto: every DynamoDB and S3 call a function makes passes
//! through it, so tests count calls and bytes at the emulator, not inside tfreg, and inject
//! faults into them ([`crate::faults`]).
//!
//! The functions reach it through the SDK's per-service endpoint variables
//! (`AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL_S3`), over TLS on 127.0.0.1 with the
//! stack's certificate (so the presigned download URLs the functions make, which point at
//! it, are ones Terraform accepts); each function process has its own listener, so calls
//! are told apart by function. It forwards each request unchanged to moto over TLS.
//! Presigned requests (`X-Amz-Signature` in the query: downloads by Terraform, not calls of
//! a function) are forwarded and counted but never faulted.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;

use crate::faults::{error_answer, CallId, CrashPoint, FaultKind, FaultPlan, FaultStats, Faults};
use crate::stack::{Stack, StackOptions};
use crate::{tar_gz, Gpg};

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
    /// How many table items a DynamoDB answer holds (`Item`, `Items`).
    pub items: usize,
    /// The function that made it (`modules`, `indexer`), empty if unknown.
    pub function: String,
}

impl Call {
    /// True for a call that changes the table or the bucket.
    pub fn writes(&self) -> bool {
        match self.service {
            "dynamodb" => matches!(
                self.action.as_str(),
                "PutItem" | "UpdateItem" | "DeleteItem" | "BatchWriteItem" | "TransactWriteItems"
            ),
            _ => !(self.action.starts_with("GET ") || self.action.starts_with("HEAD ")),
        }
    }
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} ({} bytes, {} items)",
            self.service, self.action, self.response_bytes, self.items
        )
    }
}

/// What kills a function instance (and starts it again) at a crash point.
pub(crate) type CrashHook = Arc<dyn Fn() + Send + Sync>;

struct Upstream {
    endpoint: String,
    client: reqwest::Client,
    calls: Mutex<Vec<Call>>,
    faults: Faults,
    /// By function and instance.
    crash_hooks: Mutex<HashMap<(String, usize), CrashHook>>,
}

/// One listener: the calls of one function instance.
struct Listener {
    upstream: Arc<Upstream>,
    function: String,
    instance: usize,
}

/// A running proxy; stopped with its runtime when dropped.
pub struct CountingProxy {
    /// `https://127.0.0.1:PORT`: a listener whose calls belong to no function.
    pub url: String,
    upstream: Arc<Upstream>,
    tls: Arc<rustls::ServerConfig>,
    runtime: tokio::runtime::Runtime,
}

impl CountingProxy {
    /// Starts a proxy to `endpoint` (moto's `https://` URL), trusting and serving `cert`
    /// (with its `key`), logging injected faults to `fault_log`.
    pub fn start(endpoint: &str, cert: &Path, key: &Path, fault_log: Option<PathBuf>) -> Self {
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
            faults: Faults::new(fault_log),
            crash_hooks: Mutex::default(),
        });
        let mut proxy = CountingProxy {
            url: String::new(),
            upstream,
            tls: tfreg_local::server::load_tls(cert, key).unwrap(),
            runtime: tokio::runtime::Runtime::new().unwrap(),
        };
        proxy.url = proxy.listen("", 0);
        proxy
    }

    /// A new listener for the calls of `function`'s `instance`: its `https://` URL.
    pub fn listen(&self, function: &str, instance: usize) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let state = Arc::new(Listener {
            upstream: Arc::clone(&self.upstream),
            function: function.to_owned(),
            instance,
        });
        let app = axum::Router::new().fallback(forward).with_state(state);
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::clone(&self.tls));
        self.runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let _ = axum::serve(TlsListener::start(listener, acceptor), app).await;
        });
        url
    }

    /// The calls since the last [`CountingProxy::take`].
    pub fn take(&self) -> Vec<Call> {
        std::mem::take(&mut *self.upstream.calls.lock().unwrap())
    }

    /// Injects the faults of `plan` from now on (none with `None`).
    pub fn set_faults(&self, plan: Option<FaultPlan>) {
        self.upstream.faults.set(plan);
    }

    /// What was seen and injected so far.
    pub fn fault_stats(&self) -> FaultStats {
        self.upstream.faults.stats()
    }

    /// Arms (or with `None`, disarms) the indexer's crash point.
    pub fn crash_at(&self, point: Option<CrashPoint>) {
        self.upstream.faults.set_crash(point);
    }

    /// What kills `function`'s `instance` at a crash point.
    pub(crate) fn on_crash(&self, function: &str, instance: usize, hook: CrashHook) {
        let mut hooks = self.upstream.crash_hooks.lock().unwrap();
        hooks.insert((function.to_owned(), instance), hook);
    }
}

/// TCP connections past their TLS handshake (each handshake on its own task, so a slow
/// one holds up no other connection).
struct TlsListener {
    addr: std::net::SocketAddr,
    ready: tokio::sync::mpsc::Receiver<(TlsStream, std::net::SocketAddr)>,
}

type TlsStream = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;

impl TlsListener {
    fn start(listener: tokio::net::TcpListener, acceptor: tokio_rustls::TlsAcceptor) -> Self {
        let addr = listener.local_addr().unwrap();
        let (tx, ready) = tokio::sync::mpsc::channel(64);
        tokio::spawn(async move {
            while let Ok((tcp, peer)) = listener.accept().await {
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    if let Ok(tls) = acceptor.accept(tcp).await {
                        let _ = tx.send((tls, peer)).await;
                    }
                });
            }
        });
        TlsListener { addr, ready }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

async fn forward(State(listener): State<Arc<Listener>>, request: Request) -> Response {
    let upstream = &listener.upstream;
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
    let head = parts.method == axum::http::Method::HEAD;
    let presigned = path.contains("X-Amz-Signature=");
    let call = CallId {
        function: &listener.function,
        service,
        operation: match service {
            "dynamodb" => action.as_str(),
            _ => parts.method.as_str(),
        },
        action: &action,
        copy: parts.headers.contains_key("x-amz-copy-source"),
        body: &body,
    };
    if !presigned && upstream.faults.crashes_at(&call) {
        let key = (listener.function.clone(), listener.instance);
        let hook = upstream.crash_hooks.lock().unwrap().get(&key).cloned();
        if let Some(hook) = hook {
            let _ = tokio::task::spawn_blocking(move || hook()).await;
        }
        return error_answer(FaultKind::ServerError, service, head, "crashed");
    }
    let decision = match presigned {
        true => None,
        false => upstream.faults.decide(&call),
    };
    if let Some(decision) = &decision {
        match decision.kind {
            FaultKind::LostAnswer => {}
            FaultKind::Delay => {
                tokio::time::sleep(decision.hold).await;
                return error_answer(FaultKind::Unavailable, service, head, &decision.id);
            }
            kind => return error_answer(kind, service, head, &decision.id),
        }
    }
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
    let headers = answer.headers().clone();
    let bytes = answer.bytes().await.unwrap_or_default();
    let items = match service {
        "dynamodb" => items_in(&bytes),
        _ => 0,
    };
    upstream.calls.lock().unwrap().push(Call {
        service,
        action,
        response_bytes: bytes.len(),
        items,
        function: listener.function.clone(),
    });
    if let Some(decision) = decision {
        // Applied, and the answer lost on its way back.
        tokio::time::sleep(decision.hold).await;
        return error_answer(FaultKind::Unavailable, service, head, &decision.id);
    }
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

/// How many items a DynamoDB answer carries.
fn items_in(body: &[u8]) -> usize {
    let Ok(answer) = serde_json::from_slice::<serde_json::Value>(body) else {
        return 0;
    };
    let many = |name: &str| answer.get(name).and_then(|v| v.as_array()).map(Vec::len);
    many("Items")
        .or_else(|| answer.get("Item").map(|_| 1))
        .or_else(|| {
            answer
                .get("Responses")
                .and_then(|r| r.as_object())
                .map(|tables| {
                    tables
                        .values()
                        .filter_map(|v| v.as_array())
                        .map(Vec::len)
                        .sum()
                })
        })
        .unwrap_or(0)
}

/// The host name the counted stack is served under.
pub const HOST: &str = "registry.example.test";

/// The API requests Terraform makes, by name, against [`published`]'s registry.
pub const REQUESTS: [(&str, &str); 7] = [
    ("discovery", "/.well-known/terraform.json"),
    ("module versions", "/v1/modules/acme/network/aws/versions"),
    (
        "module download",
        "/v1/modules/acme/network/aws/1.1.0/download",
    ),
    ("provider versions", "/v1/providers/acme/widget/versions"),
    (
        "provider download",
        "/v1/providers/acme/widget/1.2.0/download/linux/amd64",
    ),
    (
        "mirror index",
        "/v1/mirror/registry.example.test/acme/widget/index.json",
    ),
    (
        "mirror version",
        "/v1/mirror/registry.example.test/acme/widget/1.2.0.json",
    ),
];

/// A stack (with `options`, its calls counted) with two module versions, a signed provider release for two platforms, and a
/// token; the calls made to set it up are forgotten.
pub fn published(options: StackOptions) -> (Stack, String) {
    let stack = Stack::start(&StackOptions {
        domain: Some(HOST.into()),
        count_calls: true,
        ..options
    });
    let mut keys = Vec::new();
    for version in ["1.0.0", "1.1.0"] {
        let key = format!("modules/acme/network/aws/{version}.tar.gz");
        stack.upload(&key, &tar_gz(&[("main.tf", "variable \"x\" {}\n")]));
        keys.push(key);
    }
    let gpg = Gpg::new();
    gpg.generate("release@example.test", "rsa2048", "never", None);
    keys.extend(stack.upload_signed_release(
        &gpg,
        "widget",
        "1.2.0",
        &["linux_amd64", "darwin_arm64"],
    ));
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    stack.deliver(&keys);
    let token = stack.create_token(&[]);
    stack.calls();
    (stack, token)
}

fn client(stack: &Stack) -> reqwest::blocking::Client {
    let pem = std::fs::read(&stack.cert).unwrap();
    reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// What one request cost.
#[derive(Debug)]
pub struct Cost {
    /// The HTTP status of the answer.
    pub status: u16,
    /// The answer's size: its body, and the `X-Terraform-Get` of a module download.
    pub answer_bytes: usize,
    /// The answer's body.
    pub body: Vec<u8>,
    /// The AWS calls the request made, in order.
    pub calls: Vec<Call>,
}

/// Makes one request and returns what it cost.
pub fn measure(stack: &Stack, token: Option<&str>, path: &str) -> Cost {
    let mut request = client(stack).get(format!("{}{path}", stack.url));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let answer = request.send().unwrap();
    let status = answer.status().as_u16();
    let location = answer
        .headers()
        .get("x-terraform-get")
        .map_or(0, |v| v.as_bytes().len());
    let body = answer.bytes().unwrap().to_vec();
    Cost {
        status,
        answer_bytes: body.len() + location,
        body,
        calls: stack.calls(),
    }
}

/// Makes one request and returns its status and the calls it caused.
pub fn cost(stack: &Stack, token: Option<&str>, path: &str) -> (u16, Vec<Call>) {
    let cost = measure(stack, token, path);
    (cost.status, cost.calls)
}
