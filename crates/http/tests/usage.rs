//! Download counts and consumers through the router, without a socket: what is counted (each
//! successful module or provider download Terraform asks for, once), what is not (failures,
//! refusals, the other requests of an install), and who may see consumers (a token that
//! reads the namespace; never a public registry's requests). In-memory counters stand in for
//! the local shape's.

mod common;

use std::sync::Arc;
use std::time::SystemTime;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use serde_json::{json, Value};
use tfreg_core::memory::MemoryTokenStore;
use tfreg_core::tokens::{self, TokenStore};
use tfreg_core::usage::{date_of, day_of, MemoryUsage};
use tfreg_core::Namespace;
use tfreg_http::{router, AppState};
use tower::ServiceExt;

const HOST: &str = "registry.example.test:8443";

struct Given {
    app: Router,
    tokens: Arc<MemoryTokenStore>,
    usage: Arc<MemoryUsage>,
}

/// A registry holding acme/network/aws 1.0.0 and 1.1.0 (unless `without_network`),
/// globex/secret/aws 1.0.0 and the signed acme/widget 1.0.0 (linux_amd64), counting into
/// memory; it requires tokens when `private`.
async fn given(private: bool, without_network: bool) -> Given {
    let mut modules = vec!["modules/globex/secret/aws/1.0.0.tar.gz".to_owned()];
    if !without_network {
        modules.push("modules/acme/network/aws/1.0.0.tar.gz".to_owned());
        modules.push("modules/acme/network/aws/1.1.0.tar.gz".to_owned());
    }
    let (registry, downloads, _) = common::indexed_registry(&modules).await;
    let tokens = Arc::new(MemoryTokenStore::default());
    let usage = Arc::new(MemoryUsage::default());
    let checked: Option<Arc<dyn TokenStore>> = private.then(|| tokens.clone() as _);
    let state =
        AppState::new(registry, downloads, checked).with_usage(usage.clone(), usage.clone());
    Given {
        app: router(state),
        tokens,
        usage,
    }
}

impl Given {
    /// A token reading `namespaces` (all when empty), made by `tfreg token create` with
    /// `description`, or issued to `subject` when one is given.
    async fn token(&self, namespaces: &[&str], description: &str, subject: Option<&str>) -> String {
        let namespaces = namespaces
            .iter()
            .map(|n| Namespace::parse(n).unwrap())
            .collect();
        let mut new = tokens::generate(namespaces, description.into(), None, SystemTime::now());
        if let Some(subject) = subject {
            new.record.subject = Some(subject.into());
            new.record.issued_via = Some("CI exchange, rule infra".into());
        }
        self.tokens.put(new.record).await.unwrap();
        new.token
    }

    async fn get(&self, uri: &str, token: Option<&str>) -> Reply {
        self.send(Method::GET, uri, token).await
    }

    async fn send(&self, method: Method, uri: &str, token: Option<&str>) -> Reply {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::HOST, HOST);
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let response = self
            .app
            .clone()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec();
        Reply { status, body }
    }

    /// The JSON of a `200` answer.
    async fn ok(&self, uri: &str, token: Option<&str>) -> Value {
        let reply = self.get(uri, token).await;
        assert_eq!(reply.status, StatusCode::OK, "{uri}: {}", reply.text());
        reply.json()
    }
}

struct Reply {
    status: StatusCode,
    body: Vec<u8>,
}

impl Reply {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// Asserts the body is `{"errors": [...]}` and returns the first message.
    fn error(&self) -> String {
        let json = self.json();
        json["errors"][0]
            .as_str()
            .unwrap_or_else(|| panic!("no errors in {json}"))
            .to_owned()
    }
}

const MODULE_DOWNLOAD: &str = "/v1/modules/acme/network/aws/1.1.0/download";
const PROVIDER_DOWNLOAD: &str = "/v1/providers/acme/widget/1.0.0/download/linux/amd64";

fn counts(week: u64, month: u64, total: u64) -> Value {
    json!({"week": week, "month": month, "total": total})
}

#[tokio::test]
async fn each_successful_download_is_counted_once_and_nothing_else_is() {
    // Given a registry that requires tokens, and a token,
    let g = given(true, false).await;
    let token = g.token(&[], "laptop", None).await;
    let token = Some(token.as_str());

    // when Terraform installs the module three times and the provider twice,
    for _ in 0..3 {
        let reply = g.get(MODULE_DOWNLOAD, token).await;
        assert_eq!(reply.status, StatusCode::NO_CONTENT);
    }
    for _ in 0..2 {
        let reply = g.get(PROVIDER_DOWNLOAD, token).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    }
    // and makes the other requests of an install, failed downloads, and refused ones,
    for (uri, token, status) in [
        (
            "/v1/modules/acme/network/aws/versions",
            token,
            StatusCode::OK,
        ),
        (
            "/v1/modules/acme/network/aws/download",
            token,
            StatusCode::FOUND,
        ),
        (
            "/v1/modules/acme/network/aws/9.9.9/download",
            token,
            StatusCode::NOT_FOUND,
        ),
        ("/v1/providers/acme/widget/versions", token, StatusCode::OK),
        (
            "/v1/providers/acme/widget/1.0.0/download/darwin/arm64",
            token,
            StatusCode::NOT_FOUND,
        ),
        (
            "/v1/providers/acme/widget/9.0.0/download/linux/amd64",
            token,
            StatusCode::NOT_FOUND,
        ),
        (MODULE_DOWNLOAD, None, StatusCode::UNAUTHORIZED),
        (PROVIDER_DOWNLOAD, None, StatusCode::UNAUTHORIZED),
    ] {
        assert_eq!(g.get(uri, token).await.status, status, "{uri}");
    }
    // (a HEAD of the download is answered, and is no install),
    let reply = g.send(Method::HEAD, MODULE_DOWNLOAD, token).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);

    // then exactly the successful downloads are counted, per version and per platform,
    assert_eq!(g.usage.changes(), 5);
    let module = g.ok("/v1/modules/acme/network/aws/downloads", token).await;
    assert_eq!(
        module,
        json!({
            "data": {"type": "module-downloads-summary", "id": "acme/network/aws",
                     "attributes": counts(3, 3, 3)},
            "versions": [
                {"version": "1.1.0", "week": 3, "month": 3, "total": 3},
                {"version": "1.0.0", "week": 0, "month": 0, "total": 0},
            ]
        })
    );
    let summary = g
        .ok("/v1/modules/acme/network/aws/downloads/summary", token)
        .await;
    assert_eq!(summary, json!({"data": module["data"]}));
    let provider = g.ok("/v1/providers/acme/widget/downloads", token).await;
    assert_eq!(
        provider,
        json!({
            "data": {"type": "provider-downloads-summary", "id": "acme/widget",
                     "attributes": counts(2, 2, 2)},
            "versions": [{
                "version": "1.0.0", "week": 2, "month": 2, "total": 2,
                "platforms": [{"os": "linux", "arch": "amd64", "week": 2, "month": 2, "total": 2}]
            }]
        })
    );
    let summary = g
        .ok("/v1/providers/acme/widget/downloads/summary", token)
        .await;
    assert_eq!(summary["data"]["attributes"], counts(2, 2, 2));

    // and the details' `downloads` is the module's (or provider's) total, as the public
    // registry has it.
    for uri in [
        "/v1/modules/acme/network/aws/1.0.0",
        "/v1/modules/acme/network/aws",
    ] {
        assert_eq!(g.ok(uri, token).await["downloads"], 3, "{uri}");
    }
    assert_eq!(
        g.ok("/v1/providers/acme/widget/1.0.0", token).await["downloads"],
        2
    );
    assert_eq!(
        g.ok("/v1/modules/globex/secret/aws", token).await["downloads"],
        0
    );
}

#[tokio::test]
async fn consumers_are_shown_only_to_tokens_that_read_the_namespace() {
    // Given two consumers who installed acme/network/aws 1.1.0 and acme/widget 1.0.0,
    let g = given(true, false).await;
    let laptop = g.token(&[], "alice's laptop", None).await;
    let ci = g.token(&["acme"], "", Some("repo:acme/infra")).await;
    for token in [&laptop, &ci, &ci] {
        assert_eq!(
            g.get(MODULE_DOWNLOAD, Some(token)).await.status,
            StatusCode::NO_CONTENT
        );
        assert_eq!(
            g.get(PROVIDER_DOWNLOAD, Some(token)).await.status,
            StatusCode::OK
        );
    }

    // a token that reads acme sees both, most recent first (then by name),
    let today = date_of(day_of(SystemTime::now()));
    let expected = json!({
        "id": "acme/network/aws/1.1.0",
        "consumers": [
            {"who": "alice's laptop", "last_seen": today},
            {"who": "repo:acme/infra (CI exchange, rule infra)", "last_seen": today},
        ]
    });
    let uri = "/v1/modules/acme/network/aws/1.1.0/consumers";
    assert_eq!(g.ok(uri, Some(&ci)).await, expected);
    assert_eq!(g.ok(uri, Some(&laptop)).await, expected);
    let provider = g
        .ok("/v1/providers/acme/widget/1.0.0/consumers", Some(&ci))
        .await;
    assert_eq!(provider["id"], "acme/widget/1.0.0");
    assert_eq!(provider["consumers"], expected["consumers"]);
    // a served version nobody installed has none,
    let none = g
        .ok("/v1/modules/acme/network/aws/1.0.0/consumers", Some(&ci))
        .await;
    assert_eq!(none["consumers"], json!([]));

    // and a token outside acme gets exactly what it gets where acme has nothing.
    let globex = g.token(&["globex"], "", None).await;
    let without = given(true, true).await;
    let everything = without.token(&[], "", None).await;
    for uri in [
        "/v1/modules/acme/network/aws/1.1.0/consumers",
        "/v1/modules/acme/network/aws/downloads",
        "/v1/modules/acme/network/aws/downloads/summary",
        "/v1/modules/acme/network/aws/1.1.0",
    ] {
        let scoped = g.get(uri, Some(&globex)).await;
        let absent = without.get(uri, Some(&everything)).await;
        assert_eq!(scoped.status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(
            (scoped.status, scoped.text()),
            (absent.status, absent.text()),
            "{uri}"
        );
    }
    for uri in [
        "/v1/providers/acme/widget/1.0.0/consumers",
        "/v1/providers/acme/widget/downloads",
    ] {
        let reply = g.get(uri, Some(&globex)).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(reply.error(), "provider acme/widget is not published here");
    }
}

#[tokio::test]
async fn a_public_registry_counts_downloads_but_shows_nobody_consumers() {
    // Given a public registry (it checks no token),
    let g = given(false, false).await;
    let token = g.token(&[], "alice's laptop", None).await;
    // downloads are counted, with or without a token,
    assert_eq!(
        g.get(MODULE_DOWNLOAD, None).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        g.get(MODULE_DOWNLOAD, Some(&token)).await.status,
        StatusCode::NO_CONTENT
    );
    let module = g.ok("/v1/modules/acme/network/aws/downloads", None).await;
    assert_eq!(module["data"]["attributes"], counts(2, 2, 2));

    // but nobody is named, and nobody may ask who.
    for token in [None, Some(token.as_str())] {
        let reply = g
            .get("/v1/modules/acme/network/aws/1.1.0/consumers", token)
            .await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN);
        assert!(
            reply
                .error()
                .contains("token that reads the namespace acme"),
            "{}",
            reply.text()
        );
        let reply = g
            .get("/v1/providers/acme/widget/1.0.0/consumers", token)
            .await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN);
    }
    let subject = tfreg_core::usage::Subject::Module {
        address: tfreg_core::ModuleAddress::parse("acme", "network", "aws").unwrap(),
    };
    let usage = g.usage.usage_on(&subject, day_of(SystemTime::now()));
    assert!(usage.versions.values().all(|v| v.consumers.is_empty()));
}

#[tokio::test]
async fn bad_requests_are_json_errors() {
    let g = given(true, false).await;
    let token = g.token(&[], "", None).await;
    let token = Some(token.as_str());
    for (uri, status, message) in [
        (
            "/v1/modules/acme/network/aws/9.9.9/consumers",
            StatusCode::NOT_FOUND,
            "module acme/network/aws has no version 9.9.9",
        ),
        (
            "/v1/providers/acme/widget/9.9.9/consumers",
            StatusCode::NOT_FOUND,
            "provider acme/widget has no version 9.9.9",
        ),
        (
            "/v1/modules/acme/nothing/aws/downloads",
            StatusCode::NOT_FOUND,
            "module acme/nothing/aws is not published here",
        ),
        (
            "/v1/providers/acme/nothing/downloads/summary",
            StatusCode::NOT_FOUND,
            "provider acme/nothing is not published here",
        ),
        (
            "/v1/modules/acme/network/aws/v1/consumers",
            StatusCode::BAD_REQUEST,
            "",
        ),
        (
            "/v1/modules/acme/net%20work/aws/downloads",
            StatusCode::BAD_REQUEST,
            "",
        ),
        (
            "/v1/providers/acme/widget/downloads/everything",
            StatusCode::NOT_FOUND,
            "no such endpoint",
        ),
    ] {
        let reply = g.get(uri, token).await;
        assert_eq!(reply.status, status, "{uri}: {}", reply.text());
        assert!(reply.error().contains(message), "{uri}: {}", reply.text());
    }
    let reply = g
        .send(
            Method::POST,
            "/v1/modules/acme/network/aws/downloads",
            token,
        )
        .await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
    reply.error();
    let reply = g.get("/v1/modules/acme/network/aws/downloads", None).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    reply.error();
}
