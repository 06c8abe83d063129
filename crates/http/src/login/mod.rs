//! The login family: `terraform login` (the `login.v1` service: an OAuth 2.0 authorization
//! server for Terraform, authorization code with PKCE), signing in to the web pages, and
//! CI jobs exchanging their OIDC ID tokens for short-lived registry tokens. People prove
//! who they are to the configured OpenID Connect provider; the registry then issues its own
//! tokens, scoped by their claims ([`tfreg_core::identity::config`]).
//!
//! Routes:
//! - `GET /oauth/authorization`: Terraform's browser lands here, and goes on to the
//!   identity provider.
//! - `GET /oauth/callback`: the identity provider sends the person back here; Terraform's
//!   code (or the web session) is made here.
//! - `POST /oauth/token`: Terraform redeems its code (`authorization_code`); CI exchanges
//!   an ID token (`urn:ietf:params:oauth:grant-type:token-exchange`, RFC 8693).
//! - `GET /oauth/sign-in`: the web pages' "Sign in with ..." button.

mod authorize;
mod callback;
mod exchange;
pub mod oidc;
mod pages;
mod token;

use std::sync::Arc;
use std::time::Duration;

use axum::routing::{get, post};
use axum::Router;
use tfreg_core::identity::{Grants, IdentityConfig, StateSealer};
use tfreg_core::protocol::LoginService;
use tfreg_core::tokens::TokenStore;
use tfreg_core::Origin;

use crate::web::session::SessionKey;

pub use authorize::{AuthorizationRequest, Next};
pub use callback::CallbackQuery;
pub use oidc::Oidc;
pub(crate) use token::{oauth_error, token_endpoint_answer, Grant};
pub use token::{TokenAnswer, TokenRequest};

/// The client id Terraform sends, and the only one accepted.
pub const TERRAFORM_CLIENT: &str = LoginService::CLIENT;
/// The loopback ports `terraform login` may listen on (`login.v1`'s `ports`).
pub const PORTS: (u16, u16) = (LoginService::PORTS[0], LoginService::PORTS[1]);
/// The cookie that binds a web sign-in in progress to the browser that started it.
pub const LOGIN_COOKIE: &str = "__Host-tfreg_login";

/// What the login family needs.
#[derive(Clone)]
pub struct LoginState {
    /// The identity document: the sign-in provider, the claims-to-namespaces mapping and the
    /// CI rules.
    pub identity: Arc<IdentityConfig>,
    /// Where the tokens it issues are kept.
    pub tokens: Arc<dyn TokenStore>,
    /// The one-time records: authorization codes until Terraform redeems them.
    pub grants: Grants,
    /// The client of the identity providers (their metadata and keys, cached).
    pub oidc: Arc<Oidc>,
    /// Signs web sessions and seals sign-ins in progress; `None`: nobody can sign in
    /// (Terraform or the web pages), only CI exchanges.
    pub sessions: Option<SessionKey>,
    /// How long a web session (and its token) lasts.
    pub session_lifetime: Duration,
    /// The registry's own origin (`https://` + its configured hostname): every URL
    /// handed to the identity provider is made from it, whatever the request's `Host`.
    /// `None`: from the request's `Host` (then register the exact callback URL at the
    /// provider, so a forged `Host` is refused there).
    pub public_origin: Option<Origin>,
}

impl LoginState {
    /// Seals sign-ins in progress into their `state`, with a key derived from the
    /// sessions' secret.
    fn sealer(&self) -> Option<StateSealer> {
        self.sessions
            .as_ref()
            .map(|key| StateSealer::new(key.derive_key(StateSealer::LABEL)))
    }
}

/// The login family's routes.
pub fn routes(state: LoginState) -> Router {
    Router::new()
        .route("/oauth/authorization", get(authorize::authorize))
        .route("/oauth/callback", get(callback::callback))
        .route("/oauth/token", post(token::token))
        .route("/oauth/sign-in", get(authorize::web_sign_in))
        .with_state(state)
}
