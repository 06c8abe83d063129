//! The router's state beyond the registry: the web pages' sessions, and signing in (when an
//! identity document is given). The same for both shapes; only the stores differ.

use std::sync::Arc;

use tfreg_aws::settings::{IdentitySettings, WebSettings};
use tfreg_core::identity::GrantStore;
use tfreg_core::signing::UrlSigner;
use tfreg_core::tokens::TokenStore;
use tfreg_core::Origin;
use tfreg_http::web::{SessionKey, WebOptions};
use tfreg_http::AppState;

/// What signing in needs of the backend and the settings.
pub struct SignIn {
    /// The identity provider's client secret, for signing people in.
    pub client_secret: Option<String>,
    /// Where tokens are issued.
    pub tokens: Arc<dyn TokenStore>,
    /// Where one-time records (codes, replay guards) are kept.
    pub grants: Arc<dyn GrantStore>,
    /// The registry's own origin when `--hostname` names it: what the identity provider
    /// is told to send people back to, whatever a request's `Host` says.
    pub public_origin: Option<Origin>,
}

/// Signing in and CI exchange, when an identity document is given: tokens issued into
/// `tokens`, one-time records in `grants`, web sessions signed as the pages' are, and
/// sign-ins sealed with a key derived from the same secret.
pub fn login(state: AppState, settings: &IdentitySettings, sign_in: SignIn) -> AppState {
    let SignIn {
        client_secret,
        tokens,
        grants,
        public_origin,
    } = sign_in;
    let Some(identity) = settings.config() else {
        return state;
    };
    let mut identity = identity.as_ref().clone();
    if let Some(sign_in) = identity.sign_in.as_mut() {
        sign_in.client_secret = client_secret;
        tracing::info!(
            issuer = sign_in.issuer,
            "people sign in with their identity provider (terraform login)"
        );
    }
    if !identity.ci.is_empty() {
        tracing::info!(
            rules = identity.ci.len(),
            "CI jobs may exchange their ID tokens"
        );
    }
    for warning in identity.warnings() {
        tracing::warn!("a CI rule may trust other owners' jobs: {warning}");
    }
    let login = tfreg_http::login::LoginState {
        identity: Arc::new(identity),
        tokens,
        grants: tfreg_core::identity::Grants::new(grants),
        oidc: Arc::new(tfreg_http::login::Oidc::new()),
        sessions: state.sessions.clone(),
        session_lifetime: state.web.session_lifetime,
        public_origin,
    };
    state.with_login(login)
}

/// The web pages' settings: sessions signed with a key derived from `--session-secret`,
/// or else from the URL secret kept in the data directory.
pub fn web(state: AppState, settings: &WebSettings, signer: &UrlSigner) -> AppState {
    let key = match &settings.session_secret {
        Some(secret) => SessionKey::from_secret(&secret.0),
        None => SessionKey::from_signer(signer),
    };
    state.with_sessions(key).with_web_options(WebOptions {
        remote_images: settings.remote_images,
        session_lifetime: settings.session_lifetime,
    })
}
