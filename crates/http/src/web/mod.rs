//! The web pages: a catalogue of what is published, a page per module version, provider
//! version and namespace, and sign-in. Server-rendered HTML from the same registry the API
//! reads, under the same tokens and scopes; no client-side framework, one small stylesheet,
//! one optional script (the copy buttons). Everything works without JavaScript.
//!
//! Routes: `/`, `/namespaces/{ns}`, `/modules/{ns}/{name}/{system}[/{version}]`,
//! `/providers/{ns}/{type}[/{version}]`, `/sign-in`, `/sign-out`, `/assets/{file}`.
//!
//! Access: a public registry shows everything to everyone. Otherwise a viewer signs in
//! with a token ([`session`]) and sees exactly the namespaces it reads; signed out, every
//! page redirects to the sign-in page. A request with an `Authorization: Bearer` header is
//! let in as the API lets it in.

mod assets;
mod layout;
pub mod markdown;
mod pages;
pub use pages::catalogue::RenderedSections;
pub mod session;
pub(crate) mod sign_in;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use tfreg_core::tokens::{authenticate, Access, TokenStore};
use tfreg_core::Registry;

pub use session::SessionKey;
pub(crate) use sign_in::{encode_query_value, local_path};

/// A page of the site's layout for someone not signed in (the login family's messages).
pub(crate) fn plain_page(title: &str, body: maud::Markup) -> maud::Markup {
    layout::page(title, None, body)
}

/// What the pages need.
#[derive(Clone)]
pub struct WebState {
    /// The registry the pages show.
    pub registry: Registry,
    /// Where tokens are checked; `None` for a public registry.
    pub tokens: Option<Arc<dyn TokenStore>>,
    /// Signs sessions; without it (a private registry configured without a secret) the
    /// pages take only `Authorization` headers, and the sign-in page says why.
    pub sessions: Option<SessionKey>,
    /// How the pages behave.
    pub options: WebOptions,
    /// The identity provider the sign-in page offers (its display name), when one is
    /// configured (the login family then serves `/oauth/sign-in`).
    pub sign_in_with: Option<String>,
    /// The mirror's upstream cache, whose page shows what it holds.
    pub upstream: Option<std::sync::Arc<tfreg_core::upstream::UpstreamCache>>,
    /// The catalogue's module sections as last rendered.
    pub rendered: Arc<RenderedSections>,
    /// Where the pages read download counts and consumers (`NoCount`: none shown).
    pub usage: Arc<dyn tfreg_core::usage::UsageReader>,
}

/// Settings of the pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebOptions {
    /// Show images of READMEs from `https://` URLs (off: their alt text shows instead;
    /// images load from the publisher's servers, which then learn who reads the page).
    pub remote_images: bool,
    /// How long a session lasts at most (never past its token's expiry).
    pub session_lifetime: Duration,
}

impl WebOptions {
    /// The defaults, as a constant (a function's configuration starts from it without
    /// linking any of the pages' code).
    pub const DEFAULT: WebOptions = WebOptions {
        remote_images: false,
        session_lifetime: session::DEFAULT_LIFETIME,
    };
}

impl Default for WebOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Who is looking: what they may read, and their session when they signed in.
#[derive(Debug, Clone)]
pub struct Viewer {
    /// The namespaces the viewer may read.
    pub access: Access,
    /// Their session, when they signed in (rather than sending a header, or nothing).
    pub session: Option<session::Session>,
    /// True for a public registry.
    pub public: bool,
}

/// The pages' routes.
pub fn routes(state: WebState) -> axum::Router {
    use axum::routing::{get, post};
    let pages = axum::Router::new()
        .route("/", get(pages::catalogue::page))
        .route("/namespaces/{namespace}", get(pages::catalogue::namespace))
        .route(
            "/modules/{namespace}/{name}/{system}",
            get(pages::module::latest),
        )
        .route(
            "/modules/{namespace}/{name}/{system}/{version}",
            get(pages::module::version),
        )
        .route(
            "/providers/{namespace}/{type}",
            get(pages::provider::latest),
        )
        .route(
            "/providers/{namespace}/{type}/{version}",
            get(pages::provider::version),
        )
        .route(
            "/providers/{namespace}/{type}/{version}/docs",
            get(pages::provider_docs::overview),
        )
        .route(
            "/providers/{namespace}/{type}/{version}/docs/{kind}/{name}",
            get(pages::provider_docs::page),
        )
        .route("/upstream", get(pages::upstream::page))
        .route("/sign-out", post(sign_in::sign_out))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), viewer));
    axum::Router::new()
        .merge(pages)
        .route("/sign-in", get(sign_in::form).post(sign_in::sign_in))
        .route("/assets/{file}", get(assets::serve))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            remote_images,
        ))
        .with_state(state)
}

/// Decides who is looking, or sends them to sign in.
async fn viewer(State(state): State<WebState>, mut request: Request, next: Next) -> Response {
    let Some(tokens) = &state.tokens else {
        request.extensions_mut().insert(Viewer {
            access: Access::All,
            session: None,
            public: true,
        });
        return next.run(request).await;
    };
    let now = SystemTime::now();
    let headers = request.headers();
    let authorization = headers
        .get(header::AUTHORIZATION)
        .map(|h| h.to_str().unwrap_or(""));
    let viewer = if authorization.is_some() {
        match authenticate(tokens.as_ref(), authorization, now).await {
            Ok(Ok(access)) => Some(Viewer {
                access,
                session: None,
                public: false,
            }),
            Ok(Err(refused)) => return crate::ApiError::Unauthorized(refused).into_response(),
            Err(e) => return pages::store_failure(e),
        }
    } else {
        let cookie = session::request_cookie(headers, session::SESSION_COOKIE);
        match (cookie, &state.sessions) {
            (Some(cookie), Some(key)) => match key.verify(tokens.as_ref(), cookie, now).await {
                Ok(session) => session.map(|session| Viewer {
                    access: session.access.clone(),
                    session: Some(session),
                    public: false,
                }),
                Err(e) => return pages::store_failure(e),
            },
            _ => None,
        }
    };
    match viewer {
        Some(viewer) => {
            request.extensions_mut().insert(viewer);
            next.run(request).await
        }
        None => {
            let wanted = request
                .uri()
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .to_owned();
            let target = match wanted.as_str() {
                "/" => "/sign-in".to_owned(),
                _ => format!("/sign-in?next={}", sign_in::encode_query_value(&wanted)),
            };
            // A page from before the session ended may be posting: send it to sign in too.
            Redirect::to(&target).into_response()
        }
    }
}

/// Lets the pages show README images from `https://` URLs when the operator allows it
/// (the security headers themselves are set for every family in one place,
/// [`crate::security`]).
async fn remote_images(State(state): State<WebState>, request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    if state.options.remote_images {
        response
            .extensions_mut()
            .insert(crate::security::RemoteImages);
    }
    response
}

/// An HTML page answer.
pub(crate) fn html(status: StatusCode, markup: maud::Markup) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        markup.into_string(),
    )
        .into_response()
}
