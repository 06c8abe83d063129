//! A tampering HTTPS reverse proxy: it forwards every request to a target server (the
//! stand-in upstream registry) and, as the test switches it at runtime, answers what a broken
//! or hostile upstream would: another signing key, a corrupted zip, an endless body, a body
//! that never comes, a redirect to another host, JSON that does not parse.
//!
//! The target's answers name the target itself in absolute URLs (`download_url`,
//! `shasums_url`, ...): the proxy rewrites them to its own origin, so package downloads pass
//! through it too. It can be stopped and started again on the same port, so a registry
//! configured with its URL sees an outage and a recovery.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use crate::wait_until;

/// What the proxy does to the answers it forwards. Every fault but `WrongKeys` and
/// `CorruptZip` applies to the registry protocol's paths (`/v1/...`) only: service discovery
/// keeps working, so the fault reaches the call it is meant for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Fault {
    /// Forward as is.
    #[default]
    None,
    /// Replace the `ascii_armor` of every key in `signing_keys.gpg_public_keys` of
    /// `providers.v1` download answers by this ASCII-armored key.
    WrongKeys(String),
    /// Flip bytes in the middle of every `.zip` download.
    CorruptZip,
    /// Answer a JSON body of hundreds of megabytes, streamed as fast as it is read.
    Huge,
    /// Answer a 200 with headers at once, then trickle a byte of body every half second
    /// for ten minutes.
    Slow,
    /// Accept the request and answer nothing for ten minutes.
    Silent,
    /// Answer `302 Found` to the same path and query on this origin (`https://host:port`).
    Redirect(String),
    /// Answer invalid JSON for `providers.v1` version lists (`.../versions`).
    Malformed,
    /// Answer every `.zip` download with a 200 and its first KiB, then nothing for ten
    /// minutes: a package that stalls.
    StallZip,
    /// Answer every `.zip` download with a 200 and a byte every five seconds: a package
    /// that trickles.
    TrickleZip,
    /// Answer every `.zip` download with a 200 and 16 KiB a second for ten minutes: a slow
    /// host, fast enough never to be abandoned, whose downloads hold their slots.
    SlowZip,
    /// Answer every `.zip` download with `302 Found` to the same path and query on this
    /// origin (`https://host:port`).
    RedirectZip(String),
    /// Answer service discovery with `providers.v1` at this origin (`https://host:port`)
    /// instead of the proxy's own.
    Discovery(String),
    /// Point one field (`download_url`, `shasums_url`, `shasums_signature_url`) of every
    /// `providers.v1` download answer at the same path on this origin (`https://host:port`)
    /// instead of the proxy's own.
    PointAt(String, String),
    /// Make every URL of every `providers.v1` download answer unique (`&answer=N` appended),
    /// as a registry handing out signed URLs does: each platform's answer names the same
    /// SHA256SUMS at a different URL.
    FreshUrls,
}

/// How many bytes [`Fault::Huge`] streams at most.
pub const HUGE_BYTES: usize = 512 * 1024 * 1024;

/// The proxy; serves until dropped.
pub struct TamperingProxy {
    /// `https://127.0.0.1:PORT`
    pub url: String,
    addr: SocketAddr,
    shared: Arc<Shared>,
    tls: Arc<rustls::ServerConfig>,
    runtime: Option<tokio::runtime::Runtime>,
}

struct Shared {
    origin: String,
    target: Mutex<String>,
    target_cert: Mutex<PathBuf>,
    fault: Mutex<Fault>,
    seen: Mutex<Vec<String>>,
    /// Download answers numbered so far (for [`Fault::FreshUrls`]).
    answers: AtomicU64,
}

impl TamperingProxy {
    /// Starts forwarding to `target` (`https://127.0.0.1:PORT`, trusted through
    /// `target_cert`), serving TLS with `cert` and `key` on a free port of 127.0.0.1.
    pub fn start(target: &str, target_cert: &Path, cert: &Path, key: &Path) -> TamperingProxy {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let url = format!("https://{addr}");
        let shared = Arc::new(Shared {
            origin: url.clone(),
            target: Mutex::new(target.trim_end_matches('/').to_owned()),
            target_cert: Mutex::new(target_cert.to_path_buf()),
            fault: Mutex::new(Fault::None),
            seen: Mutex::new(Vec::new()),
            answers: AtomicU64::new(0),
        });
        let tls = tfreg_local::server::load_tls(cert, key).unwrap();
        let mut proxy = TamperingProxy {
            url,
            addr,
            shared,
            tls,
            runtime: None,
        };
        proxy.serve(listener);
        proxy
    }

    fn serve(&mut self, listener: std::net::TcpListener) {
        listener.set_nonblocking(true).unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let client = client(&self.shared.target_cert.lock().unwrap());
        let router = axum::Router::new()
            .fallback(forward)
            .with_state((Arc::clone(&self.shared), client));
        let tls = Arc::clone(&self.tls);
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let limits = tfreg_local::server::ServerLimits::default();
            let never = std::future::pending::<()>();
            let _ = tfreg_local::server::serve(listener, tls, router, limits, never).await;
        });
        self.runtime = Some(runtime);
    }

    /// Switches what the proxy does from the next request on.
    pub fn set(&self, fault: Fault) {
        *self.shared.fault.lock().unwrap() = fault;
    }

    /// Sends further requests to another target (the stand-in started again on a new port).
    pub fn retarget(&self, target: &str, target_cert: &Path) {
        *self.shared.target.lock().unwrap() = target.trim_end_matches('/').to_owned();
        *self.shared.target_cert.lock().unwrap() = target_cert.to_path_buf();
    }

    /// The path and query of every request received so far, in order (`GET /v1/...`).
    pub fn seen(&self) -> Vec<String> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// The requests received so far whose path or query contains `part` (`.zip`).
    pub fn seen_containing(&self, part: &str) -> Vec<String> {
        let seen = self.shared.seen.lock().unwrap();
        seen.iter().filter(|r| r.contains(part)).cloned().collect()
    }

    /// Forgets the requests received so far.
    pub fn clear_seen(&self) {
        self.shared.seen.lock().unwrap().clear();
    }

    /// Stops listening and drops every open connection: the port refuses connections.
    pub fn stop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
        let closed = wait_until(Duration::from_secs(10), || {
            std::net::TcpStream::connect(self.addr).is_err()
        });
        assert!(
            closed,
            "the proxy on {} still accepts connections",
            self.addr
        );
    }

    /// Listens again on the same port (after [`TamperingProxy::stop`]).
    pub fn resume(&mut self) {
        assert!(self.runtime.is_none(), "the proxy is running");
        let mut listener = None;
        let bound = wait_until(Duration::from_secs(10), || {
            listener = std::net::TcpListener::bind(self.addr).ok();
            listener.is_some()
        });
        assert!(bound, "cannot listen on {} again", self.addr);
        self.serve(listener.unwrap());
    }

    /// True while the proxy listens.
    pub fn is_running(&self) -> bool {
        self.runtime.is_some()
    }
}

impl Drop for TamperingProxy {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// An HTTP client for the target: trusts its certificate, follows no redirect (the proxy
/// passes them on, rewritten), and gives up long after any registry would.
fn client(target_cert: &Path) -> reqwest::Client {
    let pem = std::fs::read(target_cert).unwrap();
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

type ProxyState = (Arc<Shared>, reqwest::Client);

async fn forward(State((shared, client)): State<ProxyState>, method: Method, uri: Uri) -> Response {
    let path_and_query = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned());
    shared
        .seen
        .lock()
        .unwrap()
        .push(format!("{method} {path_and_query}"));
    let fault = shared.fault.lock().unwrap().clone();
    let path = uri.path();
    if path.ends_with(".zip") {
        match &fault {
            Fault::StallZip => return drip(1024, Duration::from_secs(600), 2),
            Fault::TrickleZip => return drip(1, Duration::from_secs(5), 120),
            Fault::SlowZip => return drip(16 * 1024, Duration::from_secs(1), 600),
            Fault::RedirectZip(origin) => {
                let location = format!("{}{path_and_query}", origin.trim_end_matches('/'));
                return (StatusCode::FOUND, [(header::LOCATION, location)]).into_response();
            }
            _ => {}
        }
    }
    if let Fault::Discovery(origin) = &fault {
        if path == "/.well-known/terraform.json" {
            let body = serde_json::json!({
                "providers.v1": format!("{}/v1/providers/", origin.trim_end_matches('/'))
            });
            return (
                [(header::CONTENT_TYPE, "application/json")],
                body.to_string(),
            )
                .into_response();
        }
    }
    if path.starts_with("/v1/") {
        match &fault {
            Fault::Huge => return huge(),
            Fault::Slow => return slow(),
            Fault::Silent => {
                tokio::time::sleep(Duration::from_secs(600)).await;
                return StatusCode::GATEWAY_TIMEOUT.into_response();
            }
            Fault::Redirect(origin) => {
                let location = format!("{}{path_and_query}", origin.trim_end_matches('/'));
                return (StatusCode::FOUND, [(header::LOCATION, location)]).into_response();
            }
            Fault::Malformed if path.ends_with("/versions") => {
                let body = r#"{"versions": [{"version": "1.0.0", "platforms": [}"#;
                return ([(header::CONTENT_TYPE, "application/json")], body).into_response();
            }
            _ => {}
        }
    }
    let target = shared.target.lock().unwrap().clone();
    let answer = match client
        .request(method.clone(), format!("{target}{path_and_query}"))
        .send()
        .await
    {
        Ok(answer) => answer,
        Err(e) => {
            let message = format!("the proxy could not reach {target}: {e}");
            return (StatusCode::BAD_GATEWAY, message).into_response();
        }
    };
    let status = answer.status().as_u16();
    let headers = answer.headers().clone();
    let body = match answer.bytes().await {
        Ok(body) => body.to_vec(),
        Err(e) => {
            let message = format!("the proxy could not read {target}'s answer: {e}");
            return (StatusCode::BAD_GATEWAY, message).into_response();
        }
    };
    let body = tamper(&fault, path, status, &headers, body, &target, &shared);
    respond(status, &headers, body, &target, &shared.origin, &method)
}

/// The target's answer with the fault applied and the target's origin replaced by the
/// proxy's in JSON bodies.
fn tamper(
    fault: &Fault,
    path: &str,
    status: u16,
    headers: &HeaderMap,
    mut body: Vec<u8>,
    target: &str,
    shared: &Shared,
) -> Vec<u8> {
    let origin = &shared.origin;
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("json"));
    if json {
        if let Ok(text) = String::from_utf8(body.clone()) {
            body = text.replace(target, origin).into_bytes();
        }
    }
    match fault {
        Fault::WrongKeys(armor) if json && path.contains("/download/") => {
            let Ok(mut answer) = serde_json::from_slice::<serde_json::Value>(&body) else {
                return body;
            };
            if let Some(keys) = answer["signing_keys"]["gpg_public_keys"].as_array_mut() {
                for key in keys {
                    key["ascii_armor"] = serde_json::Value::String(armor.clone());
                }
            }
            serde_json::to_vec(&answer).unwrap()
        }
        Fault::FreshUrls if json && path.contains("/download/") => {
            let Ok(mut answer) = serde_json::from_slice::<serde_json::Value>(&body) else {
                return body;
            };
            let n = shared.answers.fetch_add(1, Ordering::Relaxed);
            for field in ["download_url", "shasums_url", "shasums_signature_url"] {
                if let Some(url) = answer[field].as_str() {
                    let joint = if url.contains('?') { '&' } else { '?' };
                    answer[field] = format!("{url}{joint}answer={n}").into();
                }
            }
            serde_json::to_vec(&answer).unwrap()
        }
        Fault::PointAt(field, elsewhere) if json && path.contains("/download/") => {
            let Ok(mut answer) = serde_json::from_slice::<serde_json::Value>(&body) else {
                return body;
            };
            if let Some(url) = answer[field.as_str()].as_str() {
                answer[field.as_str()] =
                    url.replace(origin, elsewhere.trim_end_matches('/')).into();
            }
            serde_json::to_vec(&answer).unwrap()
        }
        Fault::CorruptZip if status == 200 && path.ends_with(".zip") && !body.is_empty() => {
            let middle = body.len() / 2;
            for byte in body.iter_mut().skip(middle).take(8) {
                *byte ^= 0xff;
            }
            body
        }
        _ => body,
    }
}

fn respond(
    status: u16,
    headers: &HeaderMap,
    body: Vec<u8>,
    target: &str,
    origin: &str,
    method: &Method,
) -> Response {
    let mut response = Response::builder().status(status);
    for name in [
        header::CONTENT_TYPE,
        header::LOCATION,
        header::CACHE_CONTROL,
    ] {
        if let Some(value) = headers.get(&name).and_then(|v| v.to_str().ok()) {
            response = response.header(name, value.replace(target, origin));
        }
    }
    let length = match (method, headers.get(header::CONTENT_LENGTH)) {
        (&Method::HEAD, Some(length)) => length.to_str().unwrap_or("0").to_owned(),
        _ => body.len().to_string(),
    };
    response = response.header(header::CONTENT_LENGTH, length);
    let body = match *method {
        Method::HEAD => Body::empty(),
        _ => Body::from(body),
    };
    response.body(body).unwrap()
}

/// A version list that never ends: `{"versions":[` then entries, up to [`HUGE_BYTES`].
fn huge() -> Response {
    let entry =
        r#"{"version":"0.0.1","protocols":["5.0"],"platforms":[{"os":"linux","arch":"amd64"}]},"#;
    let chunk = Bytes::from(entry.repeat(64 * 1024 / entry.len()));
    let chunks = HUGE_BYTES / chunk.len();
    let head = futures_util::stream::once(async { Bytes::from_static(b"{\"versions\":[") });
    let rest = futures_util::stream::iter((0..chunks).map(move |_| chunk.clone()));
    let stream = futures_util::StreamExt::map(futures_util::StreamExt::chain(head, rest), |b| {
        Ok::<_, std::io::Error>(b)
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// A 200 whose body is `times` chunks of `size` zero bytes, `every` apart.
fn drip(size: usize, every: Duration, times: u32) -> Response {
    let chunk = Bytes::from(vec![0u8; size]);
    let stream = futures_util::stream::unfold(0u32, move |sent| {
        let chunk = chunk.clone();
        async move {
            if sent >= times {
                return None;
            }
            if sent > 0 {
                tokio::time::sleep(every).await;
            }
            Some((Ok::<_, std::io::Error>(chunk), sent + 1))
        }
    });
    (
        [(header::CONTENT_TYPE, "application/zip")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// A version list whose body comes a byte every half second, for ten minutes.
fn slow() -> Response {
    let stream = futures_util::stream::unfold(0u32, |sent| async move {
        if sent >= 1200 {
            return None;
        }
        if sent > 0 {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let byte = match sent {
            0 => Bytes::from_static(b"{"),
            _ => Bytes::from_static(b" "),
        };
        Some((Ok::<_, std::io::Error>(byte), sent + 1))
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(stream),
    )
        .into_response()
}
