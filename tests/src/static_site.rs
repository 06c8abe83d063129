//! A static HTTPS site: fixed answers at fixed paths, with no checks of its own. Tests use it
//! to hand Terraform exactly the files a registry must refuse (an ASCII-armored signature, a
//! folder archived as itself, random bytes named `.tar.gz`), to prove Terraform fails on them,
//! which is why the registry refuses them at publish.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// One answer: a status, a content type and a body. `{origin}` in a body is replaced by the
/// site's `https://127.0.0.1:PORT`.
#[derive(Clone, Debug)]
pub struct Page {
    /// The status code.
    pub status: u16,
    /// The `Content-Type` header.
    pub content_type: String,
    /// Further headers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Page {
    /// A 200 answer with a JSON body (`{origin}` replaced).
    pub fn json(body: &str) -> Page {
        Page {
            status: 200,
            content_type: "application/json".into(),
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    /// A 200 answer with raw bytes.
    pub fn bytes(body: impl Into<Vec<u8>>) -> Page {
        Page {
            status: 200,
            content_type: "application/octet-stream".into(),
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// A 204 answer with one header, as a module registry's download endpoint gives
    /// (`X-Terraform-Get`, `{origin}` replaced).
    pub fn header(name: &str, value: &str) -> Page {
        Page {
            status: 204,
            content_type: "text/plain".into(),
            headers: vec![(name.to_owned(), value.to_owned())],
            body: Vec::new(),
        }
    }
}

/// The site, serving until dropped.
pub struct StaticSite {
    /// `https://127.0.0.1:PORT`
    pub origin: String,
    /// `127.0.0.1:PORT`
    pub addr: String,
    runtime: Option<tokio::runtime::Runtime>,
    stop: Option<tokio::sync::watch::Sender<bool>>,
    site: Arc<Site>,
}

/// One request the site received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The path and query.
    pub path: String,
    /// Its `Authorization` header, if any.
    pub authorization: Option<String>,
}

struct Site {
    origin: String,
    pages: BTreeMap<String, Page>,
    seen: Mutex<Vec<Seen>>,
}

impl StaticSite {
    /// Serves `pages` (path to answer; every other path is a 404) over TLS with the given
    /// certificate (see [`crate::test_certificate`]).
    pub fn start(cert: &Path, key: &Path, pages: BTreeMap<String, Page>) -> StaticSite {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let origin = format!("https://{addr}");
        let site = Arc::new(Site {
            origin: origin.clone(),
            pages,
            seen: Mutex::new(Vec::new()),
        });
        let router = axum::Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&site));
        let tls = tfreg_local::server::load_tls(cert, key).unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let mut stopped = stopped;
            let shutdown = async move {
                let _ = stopped.wait_for(|s| *s).await;
            };
            let limits = tfreg_local::server::ServerLimits::default();
            let _ = tfreg_local::server::serve(listener, tls, router, limits, shutdown).await;
        });
        StaticSite {
            origin,
            addr,
            runtime: Some(runtime),
            stop: Some(stop),
            site,
        }
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.site.seen.lock().unwrap().clone()
    }

    /// A CLI configuration whose `host` block sends `hostname`'s registry protocols to this
    /// site: `modules.v1` at `/modules/`, `providers.v1` at `/providers/`.
    pub fn host_block(&self, hostname: &str) -> String {
        format!(
            "host \"{hostname}\" {{\n  services = {{\n    \"modules.v1\" = \"{o}/modules/\"\n    \"providers.v1\" = \"{o}/providers/\"\n  }}\n}}\n",
            o = self.origin
        )
    }
}

impl Drop for StaticSite {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(std::time::Duration::from_secs(2));
        }
    }
}

async fn answer(
    State(site): State<Arc<Site>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    site.seen.lock().unwrap().push(Seen {
        path: uri
            .path_and_query()
            .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned()),
        authorization: headers
            .get(header::AUTHORIZATION)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
    });
    let Some(page) = site.pages.get(uri.path()) else {
        return (StatusCode::NOT_FOUND, "no such page").into_response();
    };
    let fill = |s: &str| s.replace("{origin}", &site.origin);
    let mut response = Response::builder()
        .status(page.status)
        .header(header::CONTENT_TYPE, &page.content_type);
    for (name, value) in &page.headers {
        response = response.header(name.as_str(), fill(value));
    }
    let body = match std::str::from_utf8(&page.body) {
        Ok(text) if page.content_type == "application/json" => fill(text).into_bytes(),
        _ => page.body.clone(),
    };
    let response = response.header(header::CONTENT_LENGTH, body.len());
    let body = match method {
        Method::HEAD => Body::empty(),
        _ => Body::from(body),
    };
    response.body(body).unwrap()
}
