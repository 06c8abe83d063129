//! The web pages through the router, without a socket or a browser (the browser tests are
//! in `tests/e2e/web.rs`): what a public registry shows, paging and filters, what a private
//! one shows signed out and with a scoped token, errors as pages, and the assets.

mod common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request};
use axum::Router;
use tfreg_core::memory::MemoryTokenStore;
use tfreg_core::tokens::TokenStore;
use tfreg_http::web::SessionKey;
use tfreg_http::{router, AppState, Family};
use tower::ServiceExt;

const HOST: &str = "registry.example.test";

struct Given {
    app: Router,
    tokens: Arc<MemoryTokenStore>,
}

/// A registry holding `modules` (keys of module archives) and the fixtures' signed
/// acme/widget 1.0.0; public unless `tokens`, with sessions when `sessions`.
async fn given(modules: &[String], private: bool, sessions: bool) -> Given {
    let (registry, downloads, signer) = common::indexed_registry(modules).await;
    let tokens = Arc::new(MemoryTokenStore::default());
    let mut state = AppState::new(
        registry,
        downloads,
        private.then(|| tokens.clone() as Arc<dyn TokenStore>),
    );
    if sessions {
        state = state.with_sessions(SessionKey::from_signer(&signer));
    }
    Given {
        app: router(state),
        tokens,
    }
}

struct Page {
    status: u16,
    location: String,
    content_type: String,
    headers: axum::http::HeaderMap,
    /// The family whose route answered (none: no route matched).
    family: Option<Family>,
    body: String,
}

impl Given {
    async fn get(&self, path: &str, token: Option<&str>) -> Page {
        let mut request = Request::get(path).header(header::HOST, HOST);
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let response = self
            .app
            .clone()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let headers = response.headers().clone();
        let family = response.extensions().get::<Family>().copied();
        let text = |name: header::HeaderName| {
            headers
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default()
        };
        let status = response.status().as_u16();
        let location = text(header::LOCATION);
        let content_type = text(header::CONTENT_TYPE);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        Page {
            status,
            location,
            content_type,
            headers,
            family,
            body: String::from_utf8(body.to_vec()).unwrap(),
        }
    }

    /// A token reading `namespaces` (all when empty).
    async fn token(&self, namespaces: &[&str]) -> String {
        common::token(&self.tokens, namespaces).await
    }
}

fn keys(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[tokio::test]
async fn the_pages_are_a_family_of_their_own() {
    let given = given(&keys(&["modules/acme/vpc/aws/1.0.0.tar.gz"]), false, true).await;
    for path in [
        "/",
        "/sign-in",
        "/sign-out",
        "/modules/acme/vpc/aws",
        "/providers/acme/widget",
        "/namespaces/acme",
        "/assets/tfreg-3.css",
    ] {
        assert_eq!(
            given.get(path, None).await.family,
            Some(Family::Web),
            "{path}"
        );
    }
    let modules = given.get("/v1/modules/acme", None).await;
    assert_eq!(modules.family, Some(Family::Modules));
    let versions = given.get("/v1/providers/acme/widget/versions", None).await;
    assert_eq!(versions.family, Some(Family::Providers));
    assert_eq!(given.get("/nothing/here", None).await.family, None);
}

#[tokio::test]
async fn a_public_registry_shows_its_pages_to_everyone() {
    let given = given(
        &keys(&[
            "modules/acme/network/aws/1.0.0.tar.gz",
            "modules/acme/network/google/1.0.0.tar.gz",
            "modules/other/dns/aws/0.3.1.zip",
        ]),
        false,
        false,
    )
    .await;
    // The catalogue lists every module and the served provider, with the pages' headers,
    let page = given.get("/", None).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.content_type, "text/html; charset=utf-8");
    for shown in [
        "acme/network/aws",
        "acme/network/google",
        "other/dns/aws",
        "acme/widget",
        "Public registry",
    ] {
        assert!(page.body.contains(shown), "{shown}: {}", page.body);
    }
    assert!(page.headers["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("frame-ancestors 'none'"));
    // filters narrow it (a system filter picks the providers of that name too),
    let page = given.get("/?system=google", None).await;
    assert!(page.body.contains("acme/network/google") && !page.body.contains("acme/network/aws"));
    assert!(page.body.contains("No providers match."));
    let page = given.get("/?namespace=other&q=dns", None).await;
    assert!(page.body.contains("other/dns/aws") && !page.body.contains("acme/network"));
    // a bad filter is a page that says what is wrong,
    let page = given.get("/?namespace=not%20a%20namespace", None).await;
    assert_eq!(page.status, 400);
    assert!(page.body.contains("Namespace:"), "{}", page.body);
    // module pages name the registry's hostname, and what is not there is a 404 page,
    let page = given.get("/modules/other/dns/aws", None).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("registry.example.test/other/dns/aws"),
        "{}",
        page.body
    );
    assert!(page.body.contains("~&gt; 0.3.1"), "{}", page.body);
    for missing in [
        "/modules/acme/nothing/aws",
        "/modules/acme/network/aws/9.9.9",
        "/modules/acme/network/aws/not-a-version",
        "/providers/acme/nothing",
        "/namespaces/nobody",
    ] {
        let page = given.get(missing, None).await;
        assert_eq!(page.status, 404, "{missing}");
        assert!(
            page.body.contains("<h1>Not found</h1>"),
            "{missing}: {}",
            page.body
        );
    }
    // the provider page shows its platform and key,
    let page = given.get("/providers/acme/widget/1.0.0", None).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("linux_amd64"));
    assert!(page.body.contains("registry.example.test/acme/widget"));
    // and sign-in has nothing to do.
    let page = given.get("/sign-in?next=/namespaces/acme", None).await;
    assert_eq!(
        (page.status, page.location.as_str()),
        (303, "/namespaces/acme")
    );
}

#[tokio::test]
async fn the_catalogue_pages_through_many_modules_keeping_its_filters() {
    let modules: Vec<String> = (0..35)
        .map(|i| format!("modules/acme/m{i:02}/aws/1.0.0.tar.gz"))
        .collect();
    let given = given(&modules, false, false).await;
    let first = given.get("/?q=acme", None).await;
    assert_eq!(
        first
            .body
            .matches("<li><a class=\"title\" href=\"/modules/")
            .count(),
        30
    );
    assert!(
        first.body.contains("href=\"/?offset=30&amp;q=acme\""),
        "{}",
        first.body
    );
    let last = given.get("/?offset=30&q=acme", None).await;
    assert_eq!(
        last.body
            .matches("<li><a class=\"title\" href=\"/modules/")
            .count(),
        5
    );
    assert!(
        last.body.contains("href=\"/?q=acme\" rel=\"prev\""),
        "{}",
        last.body
    );
    assert!(last
        .body
        .contains("Providers are listed on the first page."));
}

#[tokio::test]
async fn a_private_registry_shows_a_token_only_its_namespaces() {
    let given = given(
        &keys(&[
            "modules/acme/network/aws/1.0.0.tar.gz",
            "modules/other/dns/aws/1.0.0.tar.gz",
        ]),
        true,
        true,
    )
    .await;
    // Signed out: every page leads to the sign-in page, which says where it came from.
    let page = given.get("/", None).await;
    assert_eq!((page.status, page.location.as_str()), (303, "/sign-in"));
    let page = given.get("/modules/acme/network/aws?x=1", None).await;
    assert_eq!(
        page.location,
        "/sign-in?next=/modules/acme/network/aws%3Fx%3D1"
    );
    let page = given.get("/sign-in", None).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("name=\"token\""));
    assert!(page.headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .starts_with("__Host-tfreg_csrf="));
    // With a token for acme: acme's pages, and other's are not found.
    let acme = given.token(&["acme"]).await;
    let page = given.get("/", Some(&acme)).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("acme/network/aws") && !page.body.contains("other/dns"));
    assert_eq!(
        given.get("/namespaces/other", Some(&acme)).await.status,
        404
    );
    assert_eq!(
        given
            .get("/modules/other/dns/aws", Some(&acme))
            .await
            .status,
        404
    );
    // A token that is not valid is refused as the API refuses it.
    let page = given.get("/", Some("tfreg_nope")).await;
    assert_eq!(page.status, 401);
    assert!(page.body.contains("\"errors\""));
}

#[tokio::test]
async fn without_a_session_secret_signing_in_says_why_it_cannot() {
    let given = given(&[], true, false).await;
    let page = given.get("/sign-in", None).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("Signing in is not available"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("name=\"token\""));
}

#[tokio::test]
async fn the_assets_are_cached_for_good_and_unknown_ones_are_not_found() {
    let given = given(&[], false, false).await;
    let css = given.get("/assets/tfreg-3.css", None).await;
    assert_eq!(css.status, 200);
    assert_eq!(css.content_type, "text/css; charset=utf-8");
    assert!(css.headers[header::CACHE_CONTROL]
        .to_str()
        .unwrap()
        .contains("immutable"));
    assert_eq!(css.headers["x-content-type-options"], "nosniff");
    assert!(css.body.len() < 8 * 1024, "the stylesheet stays small");
    let js = given.get("/assets/tfreg-1.js", None).await;
    assert_eq!(js.content_type, "text/javascript; charset=utf-8");
    assert_eq!(given.get("/assets/other.js", None).await.status, 404);
}
