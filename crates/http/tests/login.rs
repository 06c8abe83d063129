//! The login family through the router, without a socket or an identity provider (the
//! real `terraform login` against a real provider emulator is in `tests/e2e/login.rs`):
//! `login.v1` in discovery only when people sign in, and the token endpoint's and the
//! authorization endpoint's refusals, each a sentence.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request};
use axum::Router;
use serde_json::Value;
use tfreg_core::identity::{Grants, IdentityConfig};
use tfreg_core::memory::{
    MemoryArtifactStore, MemoryGrantStore, MemoryMetadataStore, MemoryTokenStore,
};
use tfreg_core::signing::UrlSigner;
use tfreg_core::tokens::TokenStore;
use tfreg_core::Registry;
use tfreg_http::login::{LoginState, Oidc};
use tfreg_http::{router, AppState, Family};
use tower::ServiceExt;

const PEOPLE: &str = r#"{"sign_in": {"issuer": "https://login.example.com", "client_id": "tfreg", "namespaces": {"platform": ["*"]}}}"#;
const CI_ONLY: &str = r#"{"ci": [{"name": "r", "issuer": "https://ci.example.com", "audience": "a", "claims": {"repository": "acme/x"}, "namespaces": ["acme"]}]}"#;

fn app(identity: Option<&str>) -> Router {
    let signer = Arc::new(UrlSigner::new(vec![42; 32], Duration::from_secs(300)));
    let artifacts = Arc::new(MemoryArtifactStore::new());
    let downloads = tfreg_core::Downloads::served(signer, artifacts);
    let registry = Registry::new(Arc::new(MemoryMetadataStore::new()), downloads.clone());
    let tokens: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::default());
    let state = AppState::new(registry, downloads, Some(tokens.clone()));
    let state = match identity {
        Some(document) => state.with_login(LoginState {
            identity: Arc::new(IdentityConfig::parse(document).unwrap()),
            tokens,
            grants: Grants::new(Arc::new(MemoryGrantStore::default())),
            oidc: Arc::new(Oidc::new()),
            sessions: Some(tfreg_http::web::SessionKey::new([9; 32])),
            session_lifetime: Duration::from_secs(3600),
            public_origin: None,
        }),
        None => state,
    };
    router(state)
}

async fn send(app: &Router, request: Request<Body>) -> (u16, String) {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

async fn get(app: &Router, path: &str) -> (u16, String) {
    let request = Request::get(path)
        .header(header::HOST, "registry.example.test")
        .body(Body::empty())
        .unwrap();
    send(app, request).await
}

async fn token(app: &Router, form: &str) -> (u16, Value) {
    let request = Request::post("/oauth/token")
        .header(header::HOST, "registry.example.test")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(form.to_owned()))
        .unwrap();
    let (status, body) = send(app, request).await;
    (status, serde_json::from_str(&body).unwrap())
}

#[tokio::test]
async fn discovery_offers_login_only_when_people_sign_in() {
    for (identity, offered) in [(None, false), (Some(CI_ONLY), false), (Some(PEOPLE), true)] {
        let (status, body) = get(&app(identity), "/.well-known/terraform.json").await;
        assert_eq!(status, 200);
        let document: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            document.get("login.v1").is_some(),
            offered,
            "{identity:?}: {body}"
        );
        if offered {
            assert_eq!(
                document["login.v1"],
                serde_json::json!({
                    "client": "terraform-cli",
                    "grant_types": ["authz_code"],
                    "authz": "/oauth/authorization",
                    "token": "/oauth/token",
                    "ports": [10000, 10010]
                })
            );
        }
    }
    // The sign-in routes answer as the login family (the browsers' headers are theirs)...
    let request = Request::post("/oauth/token").body(Body::empty()).unwrap();
    let answer = app(Some(PEOPLE)).oneshot(request).await.unwrap();
    assert_eq!(answer.extensions().get::<Family>(), Some(&Family::Login));
    // ...and without an identity document there is no login family at all.
    assert_eq!(get(&app(None), "/oauth/authorization").await.0, 404);
}

#[tokio::test]
async fn the_token_endpoint_refuses_in_oauths_words_and_the_registrys() {
    let app = app(Some(PEOPLE));
    for (form, error, says) in [
        ("", "invalid_request", "grant_type is missing"),
        ("grant_type=password", "unsupported_grant_type", "\"password\" is not supported"),
        (
            "grant_type=authorization_code&code=nope&client_id=terraform-cli",
            "invalid_grant",
            "unknown or has been used already",
        ),
        (
            "grant_type=urn:ietf:params:oauth:grant-type:token-exchange",
            "invalid_request",
            "subject_token is missing",
        ),
        (
            "grant_type=urn:ietf:params:oauth:grant-type:token-exchange&subject_token=x&subject_token_type=urn:ietf:params:oauth:token-type:access_token",
            "invalid_request",
            "subject_token_type must be",
        ),
        (
            "grant_type=urn:ietf:params:oauth:grant-type:token-exchange&subject_token=eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2V2aWwuZXhhbXBsZSJ9.c2ln&subject_token_type=urn:ietf:params:oauth:token-type:id_token",
            "invalid_grant",
            "no CI rule of this registry trusts ID tokens from issuer \"https://evil.example\"",
        ),
    ] {
        let (status, answer) = token(&app, form).await;
        assert_eq!(status, 400, "{form}: {answer}");
        assert_eq!(answer["error"], error, "{form}: {answer}");
        let message = answer["errors"][0].as_str().unwrap();
        assert!(message.contains(says), "{form}: {message}");
        assert_eq!(answer["error_description"], message);
    }
}

#[tokio::test]
async fn terraforms_authorization_request_is_checked_before_the_provider_is_asked() {
    let app = app(Some(PEOPLE));
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    for (query, says) in [
        (format!("client_id=other&response_type=code&redirect_uri=http://localhost:10000/login&state=s&code_challenge_method=S256&code_challenge={challenge}"), "Unknown client"),
        (format!("client_id=terraform-cli&response_type=code&redirect_uri=http://localhost:9999/login&state=s&code_challenge_method=S256&code_challenge={challenge}"), "not where `terraform login` listens"),
        ("client_id=terraform-cli&response_type=code&redirect_uri=http://localhost:10000/login&state=s&code_challenge_method=plain&code_challenge=abc".to_owned(), "code_challenge_method=S256 is required"),
        (format!("client_id=terraform-cli&response_type=token&redirect_uri=http://localhost:10000/login&state=s&code_challenge_method=S256&code_challenge={challenge}"), "response_type=code"),
        (format!("client_id=terraform-cli&response_type=code&redirect_uri=http://localhost:10000/login&code_challenge_method=S256&code_challenge={challenge}"), "no state"),
    ] {
        let (status, page) = get(&app, &format!("/oauth/authorization?{query}")).await;
        assert_eq!(status, 400, "{query}");
        assert!(page.contains(says), "{query}: {page}");
    }
    // A callback nobody started.
    let (status, page) = get(&app, "/oauth/callback?code=c&state=unknown").await;
    assert_eq!(status, 400);
    assert!(page.contains("the sign-in is unknown"), "{page}");
}
