//! tfreg's HTTP API, one route family per module of [`routes`]: discovery, the module and
//! provider registry protocols, the provider network mirror, and self-authorising
//! downloads. Each family owns its routes and needs only its own state, so a Lambda function
//! serves exactly one family ([`family`]), and the local server serves their union
//! ([`router`]). No storage or transport decisions are made here.

#![forbid(unsafe_code)]

pub mod answer;
pub mod error;
pub mod extract;
pub mod logging;
pub mod login;
pub mod middleware;
pub mod routes;
pub mod security;
pub mod web;

use std::sync::Arc;

use axum::http::StatusCode;
use axum::Router;
use tfreg_core::protocol::Discovery;
use tfreg_core::tokens::TokenStore;
use tfreg_core::usage::{DownloadSink, NoCount, UsageReader};
use tfreg_core::{Downloads, Registry};

pub use error::ApiError;

/// The route families, as the Lambda functions of template.yaml serve them (each named as
/// its function in `tfreg_lambda::Function::ALL`; a test holds the two to it). The access
/// log's `route` is the family whose router answered ([`family`], [`router`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// `/.well-known/terraform.json`
    Discovery,
    /// `/v1/modules` and `/v1/modules/...`
    Modules,
    /// `/v1/providers/...`
    Providers,
    /// `/v1/mirror/...`
    Mirror,
    /// `/v1/artifacts/...`: the registry's own signed download URLs
    Downloads,
    /// The web pages: `/`, `/modules/...`, `/providers/...`, `/namespaces/...`,
    /// `/sign-in`, `/sign-out`, `/assets/...`
    Web,
    /// Signing in: `/oauth/...` (`terraform login`, the pages' sign-in with the identity
    /// provider, CI token exchange)
    Login,
}

impl Family {
    /// The family's name: its Lambda function's, and the access log's `route`.
    pub fn name(self) -> &'static str {
        match self {
            Family::Discovery => "discovery",
            Family::Modules => "modules",
            Family::Providers => "providers",
            Family::Mirror => "mirror",
            Family::Downloads => "downloads",
            Family::Web => "web",
            Family::Login => "login",
        }
    }
}

/// What the families that read the registry (modules, providers, mirror) need.
#[derive(Clone)]
pub struct ApiState {
    /// The registry the families answer from.
    pub registry: Registry,
    /// Where tokens are checked; `None` for a public registry, which answers everyone.
    pub tokens: Option<Arc<dyn TokenStore>>,
    /// The pull-through cache of upstream providers, when the mirror has one.
    pub upstream: Option<Upstream>,
    /// Where each module and provider download Terraform asks for is counted (after it
    /// succeeded); [`NoCount`] counts nothing.
    pub downloads: Arc<dyn DownloadSink>,
    /// Where the read API reads the counts and consumers; [`NoCount`]: none.
    pub usage: Arc<dyn UsageReader>,
}

impl ApiState {
    /// The families' state over `registry`, checking `tokens` unless `None` (a public
    /// registry); no upstream cache, no download counts.
    pub fn new(registry: Registry, tokens: Option<Arc<dyn TokenStore>>) -> Self {
        Self {
            registry,
            tokens,
            upstream: None,
            downloads: Arc::new(NoCount),
            usage: Arc::new(NoCount),
        }
    }

    /// Counts downloads into `sink`, and reads the counts from `usage` (usually the same
    /// counters).
    pub fn with_usage(mut self, sink: Arc<dyn DownloadSink>, usage: Arc<dyn UsageReader>) -> Self {
        self.downloads = sink;
        self.usage = usage;
        self
    }
}

/// The upstream cache and the signer of its package URLs (`None`: packages not cached yet
/// are passed through to the upstream's own URLs). Used by the mirror family
/// ([`routes::mirror`]).
#[derive(Clone)]
pub struct Upstream {
    /// The cache.
    pub cache: Arc<tfreg_core::upstream::UpstreamCache>,
    /// Signs the URLs that fetch a package.
    pub signer: Option<Arc<tfreg_core::signing::UrlSigner>>,
}

/// Everything, for a server that answers every family (the local shape).
#[derive(Clone)]
pub struct AppState {
    /// The registry the families answer from.
    pub registry: Registry,
    /// How files reach clients: the same choice the registry was built with, which the
    /// downloads family serves when the URLs point back at this server.
    pub downloads: Downloads,
    /// Where tokens are checked; `None` for a public registry, which answers everyone.
    pub tokens: Option<Arc<dyn TokenStore>>,
    /// The discovery document (with `login.v1` once people can sign in).
    pub discovery: Discovery,
    /// Signs the web pages' sessions; `None`: no signing in (pages need a header).
    pub sessions: Option<web::SessionKey>,
    /// The web pages' settings.
    pub web: web::WebOptions,
    /// Signing in with an identity provider, and CI token exchange; `None`: not configured.
    pub login: Option<login::LoginState>,
    /// The mirror's pull-through cache of upstream providers; `None`: not configured.
    pub upstream: Option<Upstream>,
    /// Where module and provider downloads are counted ([`ApiState::downloads`]).
    pub download_sink: Arc<dyn DownloadSink>,
    /// Where the counts are read ([`ApiState::usage`]).
    pub usage: Arc<dyn UsageReader>,
}

impl AppState {
    /// A registry that requires tokens from `tokens`, or a public one when it is `None`;
    /// `downloads` is what the registry was built with.
    pub fn new(
        registry: Registry,
        downloads: Downloads,
        tokens: Option<Arc<dyn TokenStore>>,
    ) -> Self {
        Self {
            registry,
            downloads,
            tokens,
            discovery: Discovery::default(),
            sessions: None,
            web: web::WebOptions::default(),
            login: None,
            upstream: None,
            download_sink: Arc::new(NoCount),
            usage: Arc::new(NoCount),
        }
    }

    /// Counts downloads into `sink`, and reads the counts from `usage`.
    pub fn with_usage(mut self, sink: Arc<dyn DownloadSink>, usage: Arc<dyn UsageReader>) -> Self {
        self.download_sink = sink;
        self.usage = usage;
        self
    }

    /// The mirror answers for the upstream providers `upstream` allows.
    pub fn with_upstream(mut self, upstream: Upstream) -> Self {
        self.upstream = Some(upstream);
        self
    }

    /// Signs people in with an identity provider and exchanges CI tokens: the login
    /// family's routes, `login.v1` in discovery when people sign in, and the pages'
    /// sign-in button.
    pub fn with_login(mut self, login: login::LoginState) -> Self {
        if login.identity.sign_in.is_some() {
            self.discovery = self.discovery.with_login();
        }
        self.login = Some(login);
        self
    }

    /// Lets people sign in to the web pages, with sessions signed by `key`.
    pub fn with_sessions(mut self, key: web::SessionKey) -> Self {
        self.sessions = Some(key);
        self
    }

    /// The web pages' settings.
    pub fn with_web_options(mut self, options: web::WebOptions) -> Self {
        self.web = options;
        self
    }

    fn web(&self) -> web::WebState {
        web::WebState {
            registry: self.registry.clone(),
            tokens: self.tokens.clone(),
            sessions: self.sessions.clone(),
            options: self.web.clone(),
            sign_in_with: self
                .login
                .as_ref()
                .filter(|l| l.sessions.is_some())
                .and_then(|l| l.identity.sign_in.as_ref())
                .map(|s| s.display_name().to_owned()),
            upstream: self.upstream.as_ref().map(|u| u.cache.clone()),
            rendered: Default::default(),
            usage: self.usage.clone(),
        }
    }

    fn api(&self) -> ApiState {
        ApiState {
            registry: self.registry.clone(),
            tokens: self.tokens.clone(),
            upstream: self.upstream.clone(),
            downloads: Arc::clone(&self.download_sink),
            usage: Arc::clone(&self.usage),
        }
    }
}

/// The whole API: every family's routes.
pub fn router(state: AppState) -> Router {
    let api = state.api();
    let routes = labelled(
        Family::Discovery,
        routes::discovery::routes(state.discovery.clone()),
    )
    .merge(labelled(Family::Web, web::routes(state.web())))
    .merge(labelled(
        Family::Modules,
        routes::modules::routes(api.clone()),
    ))
    .merge(labelled(
        Family::Providers,
        routes::providers::routes(api.clone()),
    ))
    .merge(labelled(Family::Mirror, routes::mirror::routes(api)))
    .merge(labelled(
        Family::Downloads,
        routes::artifacts::routes(state.downloads.clone()),
    ));
    let routes = match state.login {
        Some(login) => routes.merge(labelled(Family::Login, login::routes(login))),
        None => routes,
    };
    finish(routes)
}

/// One family's routes, as its Lambda function serves them: any other path gets the same
/// JSON 404 the whole API gives.
pub fn family(family: Family, routes: Router) -> Router {
    finish(labelled(family, routes))
}

/// A family's routes, each answer marked with the family (as a response extension): the
/// access log names the family of the route that matched, and a path no route matches is
/// named by none.
fn labelled(family: Family, routes: Router) -> Router {
    // A method a route does not answer is still that route's: its 405 is labelled too.
    let routes = routes.method_not_allowed_fallback(method_not_allowed);
    routes.layer(axum::middleware::map_response(
        move |mut response: axum::response::Response| async move {
            response.extensions_mut().insert(family);
            response
        },
    ))
}

/// What every answer shares: JSON 404 and 405, the browsers' security headers, and the
/// access log.
fn finish(routes: Router) -> Router {
    routes
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn(security::headers))
        .layer(axum::middleware::from_fn(middleware::access_log))
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such endpoint".into())
}

async fn method_not_allowed() -> axum::response::Response {
    error::error_response(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
}
