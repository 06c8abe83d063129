//! Every HTML answer of every family carries the browsers' security headers, set in one
//! place (`tfreg_http::security`): the pages, the sign-in form, the `/oauth/*` pages and
//! redirects, error pages. The walk below names every route that answers HTML; the page
//! that sets the session after a real provider's answer is checked end to end
//! (`tests/e2e/sign_in_attacks.rs`).

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Request};
use axum::Router;
use tfreg_core::identity::{Grants, IdentityConfig};
use tfreg_core::memory::MemoryGrantStore;
use tfreg_core::memory::MemoryTokenStore;
use tfreg_core::tokens::TokenStore;
use tfreg_http::login::{LoginState, Oidc};
use tfreg_http::security::PAGE_HEADERS;
use tfreg_http::web::SessionKey;
use tfreg_http::{router, AppState};
use tower::ServiceExt;

const HOST: &str = "registry.example.test";
/// A provider nobody answers for (connections are refused at once): its pages are errors.
const IDENTITY: &str = r#"{"sign_in": {"issuer": "http://127.0.0.1:9", "client_id": "tfreg", "namespaces": {"platform": ["*"]}}}"#;
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

/// A private registry with one module and one provider, sessions, and signing in; without
/// `sessions`, signing in cannot be offered.
async fn app(sessions: bool) -> (Router, Arc<MemoryTokenStore>) {
    let (registry, downloads, signer) =
        common::indexed_registry(&["modules/acme/network/aws/1.0.0.tar.gz".to_owned()]).await;
    let tokens = Arc::new(MemoryTokenStore::default());
    let key = SessionKey::from_signer(&signer);
    let state = AppState::new(
        registry,
        downloads,
        Some(tokens.clone() as Arc<dyn TokenStore>),
    )
    .with_sessions(key.clone())
    .with_login(LoginState {
        identity: Arc::new(IdentityConfig::parse(IDENTITY).unwrap()),
        tokens: tokens.clone(),
        grants: Grants::new(Arc::new(MemoryGrantStore::default())),
        oidc: Arc::new(Oidc::new()),
        sessions: sessions.then_some(key),
        session_lifetime: Duration::from_secs(3600),
        public_origin: None,
    });
    (router(state), tokens)
}

async fn send(app: &Router, method: Method, path: &str, token: Option<&str>) -> (u16, HeaderMap) {
    let mut request = Request::builder()
        .method(method.clone())
        .uri(path)
        .header(header::HOST, HOST);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    if method == Method::POST {
        request = request.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::from("token=x&csrf=y")).unwrap())
        .await
        .unwrap();
    (response.status().as_u16(), response.headers().clone())
}

fn missing(headers: &HeaderMap) -> Vec<&'static str> {
    PAGE_HEADERS
        .into_iter()
        .filter(|name| !headers.contains_key(*name))
        .collect()
}

#[tokio::test]
async fn every_html_answer_of_every_family_carries_the_security_headers() {
    let (pages, tokens) = app(true).await;
    let token = common::token(&tokens, &[]).await;
    let authorize = format!("/oauth/authorization?client_id=terraform-cli&response_type=code&redirect_uri=http://localhost:10000/login&state=s&code_challenge_method=S256&code_challenge={CHALLENGE}");
    let routes: Vec<(Method, String, Option<&str>, u16)> = vec![
        // The pages, signed in by header, and their error pages.
        (Method::GET, "/".into(), Some(&token), 200),
        (Method::GET, "/namespaces/acme".into(), Some(&token), 200),
        (
            Method::GET,
            "/modules/acme/network/aws".into(),
            Some(&token),
            200,
        ),
        (
            Method::GET,
            "/modules/acme/network/aws/1.0.0".into(),
            Some(&token),
            200,
        ),
        (
            Method::GET,
            "/providers/acme/widget".into(),
            Some(&token),
            200,
        ),
        (
            Method::GET,
            "/providers/acme/widget/1.0.0".into(),
            Some(&token),
            200,
        ),
        (
            Method::GET,
            "/modules/acme/nothing/aws".into(),
            Some(&token),
            404,
        ),
        (
            Method::GET,
            "/?namespace=not%20a%20namespace".into(),
            Some(&token),
            400,
        ),
        // Signing in with a token: the form, and a post without its CSRF token.
        (Method::GET, "/sign-in".into(), None, 200),
        (Method::POST, "/sign-in".into(), None, 403),
        // Signing in with the provider: refused requests, an unknown callback, and the
        // provider failing.
        (
            Method::GET,
            "/oauth/authorization?client_id=other".into(),
            None,
            400,
        ),
        (
            Method::GET,
            "/oauth/callback?code=c&state=nobody".into(),
            None,
            400,
        ),
        (Method::GET, authorize, None, 502),
        (Method::GET, "/oauth/sign-in?next=/".into(), None, 502),
    ];
    for (method, path, token, status) in routes {
        let (got, headers) = send(&pages, method.clone(), &path, token).await;
        assert_eq!(got, status, "{method} {path}");
        let content_type = headers[header::CONTENT_TYPE].to_str().unwrap();
        assert!(
            content_type.starts_with("text/html"),
            "{method} {path}: {content_type}"
        );
        assert_eq!(missing(&headers), Vec::<&str>::new(), "{method} {path}");
        assert_eq!(headers["cache-control"], "no-store", "{method} {path}");
        assert!(headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'"));
    }

    // Without a secret to seal sign-ins with, the refusal is a page with the headers too.
    let (app_without, _) = app(false).await;
    let authorize = format!("/oauth/authorization?client_id=terraform-cli&response_type=code&redirect_uri=http://localhost:10000/login&state=s&code_challenge_method=S256&code_challenge={CHALLENGE}");
    let (status, headers) = send(&app_without, Method::GET, &authorize, None).await;
    assert_eq!(status, 503);
    assert_eq!(missing(&headers), Vec::<&str>::new());

    // The token endpoint's JSON is never kept either; the API's JSON is left alone, and
    // assets are cached (but still never framed or sniffed).
    let (status, headers) = send(&pages, Method::POST, "/oauth/token", None).await;
    assert_eq!(status, 400);
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let (_, headers) = send(
        &pages,
        Method::GET,
        "/v1/modules/acme/network/aws/versions",
        Some(&token),
    )
    .await;
    assert!(!headers.contains_key("content-security-policy"));
    let (status, headers) = send(&pages, Method::GET, "/assets/tfreg-3.css", None).await;
    assert_eq!(status, 200);
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_ne!(headers["cache-control"], "no-store");
}
