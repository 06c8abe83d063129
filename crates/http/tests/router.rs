//! The API router, exercised without a socket: requests in, responses out, as Terraform sees
//! them. In-memory stores stand in for the data directory.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use tfreg_core::memory::{MemoryArtifactStore, MemoryMetadataStore, MemoryTokenStore};
use tfreg_core::signing::UrlSigner;
use tfreg_core::tokens::{self, TokenStore};
use tfreg_core::Namespace;
use tfreg_core::{Indexer, Origin, Registry};
use tfreg_http::{router, AppState};
use tower::ServiceExt;

const HOST: &str = "registry.example.test:8443";

struct Given {
    app: Router,
    artifacts: Arc<MemoryArtifactStore>,
    signer: Arc<UrlSigner>,
    tokens: Arc<MemoryTokenStore>,
}

/// A public registry holding `files` (key, content), indexed.
async fn given(files: &[(&str, &[u8])]) -> Given {
    given_with(files, false).await
}

/// A registry holding `files`, indexed, that requires tokens when `private`.
async fn given_with(files: &[(&str, &[u8])], private: bool) -> Given {
    let signer = Arc::new(UrlSigner::new(vec![42; 32], Duration::from_secs(300)));
    let artifacts = Arc::new(MemoryArtifactStore::new());
    let metadata = Arc::new(MemoryMetadataStore::new());
    for (key, content) in files {
        artifacts.put(key, as_published(key, content));
    }
    Indexer::new(metadata.clone(), artifacts.clone())
        .reindex_all(|_, _| {})
        .await
        .unwrap();
    let downloads = tfreg_core::Downloads::served(signer.clone(), artifacts.clone());
    let registry = Registry::new(metadata, downloads.clone())
        .with_hostname(tfreg_core::Hostname::parse(HOST).unwrap());
    let tokens = Arc::new(MemoryTokenStore::default());
    let token_store: Option<Arc<dyn TokenStore>> = private.then(|| tokens.clone() as _);
    Given {
        app: router(AppState::new(registry, downloads, token_store)),
        artifacts,
        signer,
        tokens,
    }
}

/// A module archive that passes the registry's checks, told apart by `content` (its
/// `main.tf`'s comment), under a module key; any other file's content as is.
fn as_published(key: &str, content: &[u8]) -> Vec<u8> {
    match tfreg_core::layout::ArchiveFormat::split(key) {
        Some((_, format)) if key.starts_with("modules/") => {
            let main = [b"# ", content].concat();
            tfreg_core::module_archive::archive_of(format, &[("main.tf", &main)])
        }
        _ => content.to_vec(),
    }
}

impl Given {
    /// A new token reading `namespaces` (all when empty), valid for `lifetime`.
    async fn token(&self, namespaces: &[&str], lifetime: Option<Duration>) -> (String, String) {
        let namespaces = namespaces
            .iter()
            .map(|n| Namespace::parse(n).unwrap())
            .collect();
        let new = tokens::generate(namespaces, String::new(), lifetime, SystemTime::now());
        self.tokens.put(new.record.clone()).await.unwrap();
        (new.token, new.record.id)
    }
}

struct Reply {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    /// Asserts the body is `{"errors": [<one or more strings>]}` and returns the first.
    fn error(&self) -> String {
        let json = self.json();
        let errors = json["errors"]
            .as_array()
            .unwrap_or_else(|| panic!("no errors in {json}"));
        assert!(
            !errors.is_empty() && errors.iter().all(|e| e.is_string()),
            "{json}"
        );
        errors[0].as_str().unwrap().to_owned()
    }
}

async fn send(app: &Router, method: Method, uri: &str) -> Reply {
    send_with(app, method, uri, None).await
}

async fn send_with(app: &Router, method: Method, uri: &str, authorization: Option<&str>) -> Reply {
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::HOST, HOST);
    if let Some(value) = authorization {
        request = request.header(header::AUTHORIZATION, value);
    }
    send_request(app, request.body(Body::empty()).unwrap()).await
}

async fn get_as(app: &Router, uri: &str, token: &str) -> Reply {
    send_with(app, Method::GET, uri, Some(&format!("Bearer {token}"))).await
}

async fn send_request(app: &Router, request: Request<Body>) -> Reply {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap()
        .to_vec();
    Reply {
        status,
        headers,
        body,
    }
}

async fn get(app: &Router, uri: &str) -> Reply {
    send(app, Method::GET, uri).await
}

const NETWORK: &[(&str, &[u8])] = &[
    ("modules/acme/network/aws/1.0.0.tar.gz", b"one"),
    ("modules/acme/network/aws/1.10.0.tar.gz", b"one-ten"),
    ("modules/acme/network/aws/1.2.0.tar.gz", b"one-two"),
    ("modules/acme/network/aws/2.0.0-rc.1.tar.gz", b"two-rc"),
    ("modules/acme/network/aws/latest.tar.gz", b"never"),
    ("modules/acme/dns/azure/0.1.0.zip", b"zip"),
];

#[tokio::test]
async fn discovery_advertises_the_services() {
    let g = given(&[]).await;
    let reply = get(&g.app, "/.well-known/terraform.json").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers[header::CONTENT_TYPE], "application/json");
    assert_eq!(
        reply.json(),
        serde_json::json!({"modules.v1": "/v1/modules/", "providers.v1": "/v1/providers/"})
    );
}

#[tokio::test]
async fn versions_lists_every_published_version_in_order_whatever_the_case() {
    let g = given(NETWORK).await;
    for uri in [
        "/v1/modules/acme/network/aws/versions",
        "/v1/modules/ACME/Network/aws/versions",
    ] {
        let reply = get(&g.app, uri).await;
        assert_eq!(reply.status, StatusCode::OK, "{uri}");
        let listing = reply.json();
        let entries = listing["modules"][0]["versions"]
            .as_array()
            .expect("a list");
        let versions: Vec<&str> = entries
            .iter()
            .filter_map(|e| e["version"].as_str())
            .collect();
        assert_eq!(
            versions,
            ["1.0.0", "1.2.0", "1.10.0", "2.0.0-rc.1"],
            "{listing}"
        );
        // each with the h1: and zh: its archive was recorded with
        for entry in entries {
            let hashes = entry["hashes"].as_array().expect("hashes");
            assert!(
                hashes[0].as_str().is_some_and(|h| h.starts_with("h1:")),
                "{entry}"
            );
            assert!(
                hashes[1].as_str().is_some_and(|h| h.starts_with("zh:")),
                "{entry}"
            );
        }
    }
}

#[tokio::test]
async fn long_answers_are_sent_gzipped_to_clients_that_take_gzip() {
    let keys: Vec<String> = (0..80)
        .map(|minor| format!("modules/acme/network/aws/1.{minor}.0.tar.gz"))
        .collect();
    let files: Vec<(&str, &[u8])> = keys.iter().map(|k| (k.as_str(), &b"x"[..])).collect();
    let g = given(&files).await;
    let uri = "/v1/modules/acme/network/aws/versions";
    let plain = get(&g.app, uri).await;
    assert_eq!(plain.status, StatusCode::OK);
    assert!(plain.headers.get(header::CONTENT_ENCODING).is_none());
    assert_eq!(plain.headers[header::VARY], "accept-encoding");
    for accept in ["gzip", "br, gzip;q=0.8"] {
        let request = Request::builder()
            .uri(uri)
            .header(header::HOST, HOST)
            .header(header::ACCEPT_ENCODING, accept)
            .body(Body::empty())
            .unwrap();
        let zipped = send_request(&g.app, request).await;
        assert_eq!(zipped.status, StatusCode::OK);
        assert_eq!(zipped.headers[header::CONTENT_ENCODING], "gzip", "{accept}");
        assert_eq!(zipped.headers[header::CONTENT_TYPE], "application/json");
        assert!(zipped.body.len() * 4 < plain.body.len());
        let mut unzipped = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::GzDecoder::new(&zipped.body[..]),
            &mut unzipped,
        )
        .unwrap();
        assert_eq!(unzipped, plain.body, "the same answer, compressed");
    }
    // A short answer, or a client that refuses gzip, gets the JSON as it is.
    let request = Request::builder()
        .uri(uri)
        .header(header::HOST, HOST)
        .header(header::ACCEPT_ENCODING, "gzip;q=0")
        .body(Body::empty())
        .unwrap();
    let refused = send_request(&g.app, request).await;
    assert_eq!(refused.body, plain.body);
}

#[tokio::test]
async fn unknown_modules_and_versions_are_404_json() {
    let g = given(NETWORK).await;
    let reply = get(&g.app, "/v1/modules/acme/nothing/aws/versions").await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(
        reply.error(),
        "module acme/nothing/aws is not published here"
    );

    let reply = get(&g.app, "/v1/modules/acme/network/aws/9.0.0/download").await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(
        reply.error(),
        "module acme/network/aws has no version 9.0.0"
    );
}

/// Splits an absolute download URL into the path-and-query the router sees.
fn path_and_query(url: &str) -> &str {
    let rest = url
        .strip_prefix(&format!("https://{HOST}"))
        .unwrap_or_else(|| panic!("{url}"));
    assert!(rest.starts_with('/'), "{url}");
    rest
}

#[tokio::test]
async fn download_answers_204_with_an_absolute_self_authorising_url() {
    let g = given(NETWORK).await;
    let reply = get(&g.app, "/v1/modules/acme/network/aws/1.2.0/download").await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    assert!(reply.body.is_empty());
    let url = reply.headers["x-terraform-get"]
        .to_str()
        .unwrap()
        .to_owned();
    let path = url.split('?').next().unwrap();
    assert_eq!(
        path,
        format!("https://{HOST}/v1/artifacts/modules/acme/network/aws/1.2.0.tar.gz"),
        "the path ends with the archive's suffix, for Terraform's unpacker"
    );

    // GET and HEAD both work on it, without credentials.
    let fetched = get(&g.app, path_and_query(&url)).await;
    assert_eq!(fetched.status, StatusCode::OK);
    let published = as_published("modules/acme/network/aws/1.2.0.tar.gz", b"one-two");
    assert_eq!(fetched.body, published);
    assert_eq!(fetched.headers[header::CONTENT_TYPE], "application/gzip");
    let head = send(&g.app, Method::HEAD, path_and_query(&url)).await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(
        head.headers[header::CONTENT_LENGTH],
        published.len().to_string().as_str()
    );
    assert!(head.body.is_empty());

    let zip = get(&g.app, "/v1/modules/acme/dns/azure/0.1.0/download").await;
    let url = zip.headers["x-terraform-get"].to_str().unwrap();
    assert!(
        url.split('?').next().unwrap().ends_with("/0.1.0.zip"),
        "{url}"
    );
    assert_eq!(
        get(&g.app, path_and_query(url)).await.body,
        as_published("modules/acme/dns/azure/0.1.0.zip", b"zip")
    );
}

#[tokio::test]
async fn tampered_and_expired_download_urls_are_403_json() {
    let g = given(NETWORK).await;
    let reply = get(&g.app, "/v1/modules/acme/network/aws/1.0.0/download").await;
    let url = reply.headers["x-terraform-get"]
        .to_str()
        .unwrap()
        .to_owned();
    let good = path_and_query(&url).to_owned();
    assert_eq!(get(&g.app, &good).await.status, StatusCode::OK);

    let (path, query) = good.split_once('?').unwrap();
    let expires: u64 = query
        .split('&')
        .find_map(|p| p.strip_prefix("expires="))
        .unwrap()
        .parse()
        .unwrap();
    let signature = query
        .split('&')
        .find_map(|p| p.strip_prefix("signature="))
        .unwrap();
    let mut flipped = signature.to_owned().into_bytes();
    flipped[3] = if flipped[3] == b'a' { b'b' } else { b'a' };
    let flipped = String::from_utf8(flipped).unwrap();
    let tampered = [
        good.replace("1.0.0.tar.gz", "1.2.0.tar.gz"),
        format!("{path}?expires={}&signature={signature}", expires + 60),
        format!("{path}?expires={expires}&signature={flipped}"),
        format!("{path}?expires={expires}"),
        format!("{path}?signature={signature}"),
        format!("{path}?expires=soon&signature={signature}"),
        path.to_owned(),
    ];
    for uri in tampered {
        let reply = get(&g.app, &uri).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{uri}");
        assert!(reply.error().contains("invalid or has expired"), "{uri}");
    }

    // Signed by the same server, but an hour ago with a five-minute lifetime.
    let origin = Origin::https(HOST).unwrap();
    let old = g.signer.url(
        &origin,
        "modules/acme/network/aws/1.0.0.tar.gz",
        SystemTime::now() - Duration::from_secs(3600),
    );
    let reply = get(&g.app, path_and_query(&old)).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    let reply = send(&g.app, Method::HEAD, path_and_query(&old)).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_download_url_serves_only_the_revision_it_was_issued_for() {
    let g = given(NETWORK).await;
    let reply = get(&g.app, "/v1/modules/acme/network/aws/1.0.0/download").await;
    let url = reply.headers["x-terraform-get"]
        .to_str()
        .unwrap()
        .to_owned();
    let original = get(&g.app, path_and_query(&url)).await;
    assert_eq!(original.status, StatusCode::OK);
    // Given the file replaced after the URL was issued (a new revision, not checked),
    g.artifacts.put(
        "modules/acme/network/aws/1.0.0.tar.gz",
        b"replaced".to_vec(),
    );
    // then the URL still serves the revision it names, never the new bytes.
    let reply = get(&g.app, path_and_query(&url)).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body, original.body);
    assert_ne!(reply.body, b"replaced");
    // A URL naming a revision the store does not have is refused: ask the registry again.
    let forged = g.signer.url_for_revision(
        &Origin::https(HOST).unwrap(),
        "modules/acme/network/aws/1.0.0.tar.gz",
        Some("999"),
        SystemTime::now(),
    );
    let reply = get(&g.app, path_and_query(&forged)).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert!(reply.error().contains("changed"), "{}", reply.error());
}

#[tokio::test]
async fn a_file_unpublished_after_signing_is_404_not_500() {
    let g = given(NETWORK).await;
    let origin = Origin::https(HOST).unwrap();
    let url = g.signer.url(
        &origin,
        "modules/acme/network/aws/3.0.0.tar.gz",
        SystemTime::now(),
    );
    let reply = get(&g.app, path_and_query(&url)).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    reply.error();
    // A signature over something that is not a published kind of file is refused too.
    let url = g
        .signer
        .url(&origin, "keys/acme/../../etc/passwd", SystemTime::now());
    assert_eq!(
        get(&g.app, path_and_query(&url)).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn malformed_requests_get_4xx_json() {
    let g = given(NETWORK).await;
    let cases: &[(Method, &str, StatusCode)] = &[
        (Method::GET, "/nothing-here", StatusCode::NOT_FOUND),
        (
            Method::GET,
            "/v1/modules/acme/network/versions",
            StatusCode::NOT_FOUND,
        ),
        (
            Method::GET,
            "/v1/modules/ac.me/network/aws/versions",
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::GET,
            "/v1/modules/acme/net%2Fwork/aws/versions",
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::GET,
            "/v1/modules/acme/network/aws-x/versions",
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::GET,
            "/v1/modules/%FF%FE/network/aws/versions",
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::GET,
            "/v1/modules/acme/network/aws/latest/download",
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::GET,
            "/v1/modules/acme/network/aws/v1.0.0/download",
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::POST,
            "/v1/modules/acme/network/aws/versions",
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            Method::DELETE,
            "/.well-known/terraform.json",
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (Method::GET, "/v1/artifacts/", StatusCode::NOT_FOUND),
        (
            Method::GET,
            "/v1/artifacts/%00?expires=1&signature=x",
            StatusCode::FORBIDDEN,
        ),
        (
            Method::GET,
            "/v1/artifacts/modules/a/b/c/1.0.0.zip?expires=1&expires=2&signature=x",
            StatusCode::FORBIDDEN,
        ),
    ];
    for (method, uri, status) in cases {
        let reply = send(&g.app, method.clone(), uri).await;
        assert_eq!(reply.status, *status, "{method} {uri}");
        reply.error();
    }

    // Download URLs are built from the Host header, so a forged one is refused.
    for host in ["evil.example/path", "user@evil.example", ""] {
        let request = Request::builder()
            .uri("/v1/modules/acme/network/aws/1.0.0/download")
            .header(header::HOST, host)
            .body(Body::empty())
            .unwrap();
        let reply = send_request(&g.app, request).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{host:?}");
        assert_eq!(reply.error(), "missing or malformed Host header");
    }
}

fn core_fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../core/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const PROTECTED: &[&str] = &[
    "/v1/modules",
    "/v1/modules/",
    "/v1/modules/search?q=network",
    "/v1/modules/acme",
    "/v1/modules/acme/network",
    "/v1/modules/acme/network/aws",
    "/v1/modules/acme/network/aws/download",
    "/v1/modules/acme/network/aws/1.0.0",
    "/v1/providers/acme/widget",
    "/v1/providers/acme/widget/1.0.0",
    "/v1/modules/acme/network/aws/versions",
    "/v1/modules/acme/network/aws/1.0.0/download",
    "/v1/providers/acme/widget/versions",
    "/v1/providers/acme/widget/1.0.0/download/linux/amd64",
    "/v1/mirror/registry.terraform.io/acme/thing/index.json",
    "/v1/mirror/registry.terraform.io/acme/thing/1.0.0.json",
];

#[tokio::test]
async fn every_protocol_endpoint_but_discovery_refuses_requests_without_a_valid_token() {
    let g = given_with(NETWORK, true).await;
    let (good, _) = g.token(&[], None).await;
    let (expiring, _) = g.token(&[], Some(Duration::from_secs(1))).await;
    let (revoked, revoked_id) = g.token(&[], None).await;
    let mut record = g.tokens.get(&revoked_id).await.unwrap().unwrap();
    record.revoked_at = Some(tokens::unix(SystemTime::now()));
    g.tokens.put(record).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2100)).await;

    let unknown = "tfreg_0123456789abcdef_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".to_owned();
    let id = good.split('_').nth(1).unwrap();
    let wrong_secret = format!("tfreg_{id}_{}", "A".repeat(43));
    let refusals: Vec<(Option<String>, &str)> = vec![
        (None, "requires a token"),
        (
            Some("Basic YWxhZGRpbjpvcGVu".into()),
            "must be `Bearer <token>`",
        ),
        (Some("Bearer".into()), "must be `Bearer <token>`"),
        (Some("Bearer not-a-token".into()), "not valid"),
        (Some(format!("Bearer {unknown}")), "not valid"),
        (Some(format!("Bearer {wrong_secret}")), "not valid"),
        (Some(format!("Bearer {revoked}")), "revoked"),
        (Some(format!("Bearer {expiring}")), "expired"),
    ];
    for uri in PROTECTED {
        for (authorization, message) in &refusals {
            let reply = send_with(&g.app, Method::GET, uri, authorization.as_deref()).await;
            assert_eq!(
                reply.status,
                StatusCode::UNAUTHORIZED,
                "{uri} {authorization:?}"
            );
            let challenge = reply.headers[header::WWW_AUTHENTICATE].to_str().unwrap();
            assert!(
                challenge.starts_with("Bearer realm=\"tfreg\""),
                "{challenge}"
            );
            assert!(
                reply.error().contains(message),
                "{uri} {authorization:?}: {}",
                reply.error()
            );
        }
        let reply = get_as(&g.app, uri, &good).await;
        assert_ne!(reply.status, StatusCode::UNAUTHORIZED, "{uri}");
    }
    // Discovery needs no token; downloads carry their own authorisation.
    assert_eq!(
        get(&g.app, "/.well-known/terraform.json").await.status,
        StatusCode::OK
    );
    let reply = get_as(&g.app, "/v1/modules/acme/network/aws/1.0.0/download", &good).await;
    let url = reply.headers["x-terraform-get"].to_str().unwrap();
    assert_eq!(
        get(&g.app, path_and_query(url)).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn out_of_scope_looks_exactly_like_absent() {
    let zip = core_fixture("terraform-provider-widget_1.0.0_linux_amd64.zip");
    let secret_files: Vec<(&str, &[u8])> = vec![
        ("modules/acme/network/aws/1.0.0.tar.gz", b"acme"),
        ("modules/globex/secret/aws/1.0.0.tar.gz", b"globex"),
        ("mirror/registry.terraform.io/globex/widget/terraform-provider-widget_1.0.0_linux_amd64.zip", &zip),
    ];
    // Given one registry with globex's files and one without,
    let with = given_with(&secret_files, true).await;
    let without = given_with(&secret_files[..1], true).await;
    let (acme_only, _) = with.token(&["acme"], None).await;
    let (everything, _) = without.token(&[], None).await;

    // an acme-scoped token reads acme,
    let reply = get_as(
        &with.app,
        "/v1/modules/acme/network/aws/versions",
        &acme_only,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    // and gets for globex exactly what an all-reading token gets where globex has nothing.
    for uri in [
        "/v1/modules/globex/secret/aws/versions",
        "/v1/modules/globex/secret/aws/1.0.0/download",
        "/v1/providers/globex/secret/versions",
        "/v1/mirror/registry.terraform.io/globex/widget/index.json",
        "/v1/mirror/registry.terraform.io/globex/widget/1.0.0.json",
    ] {
        let scoped = get_as(&with.app, uri, &acme_only).await;
        let absent = get_as(&without.app, uri, &everything).await;
        assert_eq!(scoped.status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(
            (scoped.status, &scoped.body),
            (absent.status, &absent.body),
            "{uri}"
        );
    }
    // The same token can read them once it is scoped to globex.
    let (globex, _) = with.token(&["globex", "acme"], None).await;
    let reply = get_as(
        &with.app,
        "/v1/mirror/registry.terraform.io/globex/widget/index.json",
        &globex,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
    #[test]
    fn no_path_gets_a_5xx(tail in "[a-zA-Z0-9%./_~+-]{0,40}(/[a-zA-Z0-9%._-]{0,12}){0,5}",
                          prefix in proptest::sample::select(vec![
                              "/v1/modules/", "/v1/modules/acme/network/aws/", "/v1/artifacts/modules/",
                              "/.well-known/", "/v1/providers/", "/"])) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let g = given(NETWORK).await;
            let uri = format!("{prefix}{tail}");
            let Ok(request) = Request::builder().uri(&uri).header(header::HOST, HOST).body(Body::empty()) else {
                return; // not a URI a client could send
            };
            let reply = send_request(&g.app, request).await;
            assert!(reply.status.as_u16() < 500, "{uri}: {}", reply.status);
            if !reply.status.is_success() {
                reply.error();
            }
        });
    }
}
