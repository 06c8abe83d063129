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

mod exchange;
pub mod oidc;
mod pages;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use serde::{Deserialize, Serialize};
use tfreg_core::identity::audit::{self, Event};
use tfreg_core::identity::grants::{IssuedCode, PendingLogin, Purpose};
use tfreg_core::identity::{pkce, GrantError, Grants, IdentityConfig, StateSealer};
use tfreg_core::names::Namespace;
use tfreg_core::protocol::LoginService;
use tfreg_core::tokens::{self, Access, TokenStore};
use tfreg_core::Origin;

use crate::extract::RequestOrigin;
use crate::web::session::{self, SessionKey, SESSION_COOKIE};

pub use oidc::Oidc;

/// The client id Terraform sends, and the only one accepted.
pub const TERRAFORM_CLIENT: &str = LoginService::CLIENT;
/// The loopback ports `terraform login` may listen on (`login.v1`'s `ports`).
pub const PORTS: (u16, u16) = (LoginService::PORTS[0], LoginService::PORTS[1]);

/// What the login family needs.
#[derive(Clone)]
pub struct LoginState {
    pub identity: Arc<IdentityConfig>,
    pub tokens: Arc<dyn TokenStore>,
    pub grants: Grants,
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
        .route("/oauth/authorization", get(authorize))
        .route("/oauth/callback", get(callback))
        .route("/oauth/token", post(token))
        .route("/oauth/sign-in", get(web_sign_in))
        .with_state(state)
}

/// `GET /oauth/authorization`'s query, as Terraform sends it.
#[derive(Debug, Deserialize)]
pub struct AuthorizationRequest {
    client_id: Option<String>,
    response_type: Option<String>,
    redirect_uri: Option<String>,
    state: Option<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
}

/// True for `http://localhost:PORT/login` or `http://127.0.0.1:PORT/login` with a port of
/// `login.v1`'s range: where `terraform login` listens.
fn terraform_redirect(uri: &str) -> bool {
    let Some(rest) = uri
        .strip_prefix("http://localhost:")
        .or_else(|| uri.strip_prefix("http://127.0.0.1:"))
    else {
        return false;
    };
    let Some((port, path)) = rest.split_once('/') else {
        return false;
    };
    path == "login"
        && port
            .parse::<u16>()
            .is_ok_and(|p| (PORTS.0..=PORTS.1).contains(&p))
}

fn callback_url(origin: &Origin) -> String {
    format!("{}/oauth/callback", origin.as_str())
}

/// Sends the person to the identity provider for `purpose`. Nothing is stored: the
/// sign-in travels sealed in the `state` ([`StateSealer`]), so starts that never come back
/// cost nobody anything.
async fn start(state: &LoginState, origin: &Origin, purpose: Purpose) -> Response {
    let Some(config) = &state.identity.sign_in else {
        return pages::not_configured();
    };
    let Some(sealer) = state.sealer() else {
        return pages::no_secret();
    };
    let metadata = match state.oidc.metadata(&config.issuer).await {
        Ok(metadata) => metadata,
        Err(e) => return pages::provider_failed(&e.to_string()),
    };
    let verifier = pkce::random_value();
    let nonce = pkce::random_value();
    let callback = callback_url(state.public_origin.as_ref().unwrap_or(origin));
    // The web pages' sign-in is bound to the browser that starts it by a cookie.
    let binding = matches!(purpose, Purpose::Web { .. }).then(pkce::random_value);
    let login = PendingLogin {
        purpose,
        verifier: verifier.clone(),
        nonce: nonce.clone(),
        callback: callback.clone(),
    };
    let key = sealer.seal(&login, binding.as_deref(), SystemTime::now());
    let query = [
        ("response_type", "code"),
        ("client_id", config.client_id.as_str()),
        ("redirect_uri", callback.as_str()),
        ("scope", config.scope().as_str()),
        ("state", key.as_str()),
        ("nonce", nonce.as_str()),
        ("code_challenge", pkce::challenge(&verifier).as_str()),
        ("code_challenge_method", "S256"),
    ]
    .iter()
    .map(|(k, v)| format!("{k}={}", crate::web::encode_query_value(v)))
    .collect::<Vec<_>>()
    .join("&");
    let separator = if metadata.authorization_endpoint.contains('?') {
        '&'
    } else {
        '?'
    };
    let mut response = Redirect::to(&format!(
        "{}{separator}{query}",
        metadata.authorization_endpoint
    ))
    .into_response();
    if let Some(binding) = binding {
        // Binds the sign-in to this browser: the callback takes it only with this cookie,
        // so nobody can sign someone else in with a callback link of their own.
        session::append_set_cookie(
            &mut response,
            &session::set_lax_cookie(
                LOGIN_COOKIE,
                &binding,
                tfreg_core::identity::sealed::LOGIN_LIFETIME.as_secs(),
            ),
        );
    }
    response
}

/// The cookie that binds a web sign-in in progress to the browser that started it.
pub const LOGIN_COOKIE: &str = "__Host-tfreg_login";

/// `GET /oauth/authorization`: checks Terraform's request, then on to the provider.
async fn authorize(
    State(state): State<LoginState>,
    RequestOrigin(origin): RequestOrigin,
    query: Result<Query<AuthorizationRequest>, QueryRejection>,
) -> Response {
    let Ok(Query(request)) = query else {
        return pages::bad_request(
            "The sign-in request could not be read: run `terraform login` again.",
        );
    };
    let client_id = request.client_id.unwrap_or_default();
    if client_id != TERRAFORM_CLIENT {
        return pages::bad_request(&format!("Unknown client {client_id:?}: this registry signs in `terraform login` ({TERRAFORM_CLIENT}) only."));
    }
    let redirect_uri = request.redirect_uri.unwrap_or_default();
    if !terraform_redirect(&redirect_uri) {
        return pages::bad_request(&format!(
            "The redirect URI {redirect_uri:?} is not where `terraform login` listens (http://localhost:{}-{}/login).",
            PORTS.0, PORTS.1
        ));
    }
    if request.response_type.as_deref() != Some("code") {
        return pages::bad_request("Only response_type=code is supported.");
    }
    let challenge = request.code_challenge.unwrap_or_default();
    if request.code_challenge_method.as_deref() != Some("S256") || !pkce::is_challenge(&challenge) {
        return pages::bad_request(
            "A PKCE code_challenge with code_challenge_method=S256 is required.",
        );
    }
    let Some(terraform_state) = request.state.filter(|s| !s.is_empty() && s.len() <= 512) else {
        return pages::bad_request("The request has no state.");
    };
    let purpose = Purpose::Terraform {
        client_id,
        redirect_uri,
        state: terraform_state,
        code_challenge: challenge,
    };
    start(&state, &origin, purpose).await
}

/// `?next=` of the web sign-in.
#[derive(Debug, Default, Deserialize)]
pub struct Next {
    next: Option<String>,
}

/// `GET /oauth/sign-in`: the web pages' sign-in with the provider.
async fn web_sign_in(
    State(state): State<LoginState>,
    RequestOrigin(origin): RequestOrigin,
    query: Result<Query<Next>, QueryRejection>,
) -> Response {
    if state.sessions.is_none() {
        return pages::bad_request("Signing in to the web pages is not available: this server has no secret to sign sessions with.");
    }
    let next = crate::web::local_path(query.ok().and_then(|q| q.0.next).as_deref());
    // Reached by another name than the configured one: start over at the configured name,
    // where the callback will come, so the cookie that binds the sign-in is that host's.
    if let Some(public) = state.public_origin.as_ref().filter(|p| *p != &origin) {
        return Redirect::to(&format!(
            "{}/oauth/sign-in?next={}",
            public.as_str(),
            crate::web::encode_query_value(&next)
        ))
        .into_response();
    }
    start(&state, &origin, Purpose::Web { next }).await
}

/// `GET /oauth/callback`'s query: a code, or an error.
#[derive(Debug, Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /oauth/callback`: the provider's answer; the code for Terraform, or a session.
async fn callback(
    State(state): State<LoginState>,
    headers: axum::http::HeaderMap,
    query: Result<Query<CallbackQuery>, QueryRejection>,
) -> Response {
    let Some(config) = &state.identity.sign_in else {
        return pages::not_configured();
    };
    let Ok(Query(answer)) = query else {
        return pages::bad_request(
            "The identity provider's answer could not be read: sign in again.",
        );
    };
    let Some(sealer) = state.sealer() else {
        return pages::no_secret();
    };
    let now = SystemTime::now();
    let opened = match sealer.open(answer.state.as_deref().unwrap_or(""), now) {
        Ok(opened) => opened,
        Err(e) => return pages::bad_request(&format!("This sign-in cannot be completed: {e}.")),
    };
    if matches!(opened.login.purpose, Purpose::Web { .. }) {
        let started_here = session::request_cookie(&headers, LOGIN_COOKIE)
            .is_some_and(|cookie| opened.bound_to(cookie));
        if !started_here {
            audit::record(
                Event::Refused,
                None,
                None,
                "web sign-in: the callback came to a browser that did not start the sign-in",
            );
            return pages::bad_request(
                "This sign-in was started in another browser (or its cookie was lost): sign in again from the registry's sign-in page.",
            );
        }
    }
    let login = opened.login;
    // Checked when the sign-in started, and again: nothing but Terraform's own loopback
    // listener ever receives a code, even from a seal made elsewhere.
    if let Purpose::Terraform { redirect_uri, .. } = &login.purpose {
        if !terraform_redirect(redirect_uri) {
            return pages::bad_request("This sign-in cannot be completed: start again.");
        }
    }
    if let Some(error) = answer.error {
        let description = answer.error_description.unwrap_or_default();
        audit::record(
            Event::Refused,
            None,
            None,
            &format!("the identity provider refused the sign-in: {error} {description}"),
        );
        return match login.purpose {
            Purpose::Terraform {
                redirect_uri,
                state: terraform_state,
                ..
            } => Redirect::to(&format!(
                "{redirect_uri}?error={}&error_description={}&state={}",
                crate::web::encode_query_value(&error),
                crate::web::encode_query_value(&description),
                crate::web::encode_query_value(&terraform_state),
            ))
            .into_response(),
            Purpose::Web { .. } => pages::refused(&format!(
                "The identity provider did not sign you in: {error} {description}"
            )),
        };
    }
    let Some(code) = answer.code else {
        return pages::bad_request("The identity provider's answer has no code: sign in again.");
    };
    let id_token = match state
        .oidc
        .redeem(config, &code, &login.verifier, &login.callback)
        .await
    {
        Ok(id_token) => id_token,
        Err(e) => return pages::provider_failed(&e.to_string()),
    };
    let claims = match state
        .oidc
        .verify(
            &config.issuer,
            &id_token,
            &config.client_id,
            Some(&login.nonce),
        )
        .await
    {
        Ok(claims) => claims,
        Err(oidc::VerifyError::Provider(e)) => return pages::provider_failed(&e.to_string()),
        Err(oidc::VerifyError::Refused(e)) => {
            audit::record(Event::Refused, None, None, &format!("sign-in: {e}"));
            return pages::refused(&format!(
                "The identity provider's answer was not accepted: {e}."
            ));
        }
    };
    if let Err(e) = tfreg_core::identity::jwt::check_authorized_party(&claims, &config.client_id) {
        audit::record(Event::Refused, None, None, &format!("sign-in: {e}"));
        return pages::refused(&format!(
            "The identity provider's answer was not accepted: {e}."
        ));
    }
    let subject = config.subject(&claims);
    let Some(access) = config.access_for(&claims) else {
        let groups = config.groups(&claims);
        let reason = format!(
            "none of the groups in the `{}` claim ({}) is mapped to namespaces",
            config.groups_claim,
            if groups.is_empty() {
                "none".to_owned()
            } else {
                groups.join(", ")
            }
        );
        audit::record(
            Event::Refused,
            None,
            Some(&subject),
            &format!("sign-in: {reason}"),
        );
        return pages::refused(&format!(
            "You signed in as {subject}, but {reason}: ask the registry's administrators to map one of your groups."
        ));
    };
    let namespaces = namespaces_of(&access);
    match login.purpose {
        Purpose::Terraform {
            client_id,
            redirect_uri,
            state: terraform_state,
            code_challenge,
        } => {
            let issued = IssuedCode {
                client_id,
                redirect_uri: redirect_uri.clone(),
                code_challenge,
                subject,
                issuer: config.issuer.clone(),
                namespaces,
            };
            let code = match state.grants.issue_code(&issued, now).await {
                Ok(code) => code,
                Err(e) => return pages::store_failed(&e),
            };
            Redirect::to(&format!(
                "{redirect_uri}?code={code}&state={}",
                crate::web::encode_query_value(&terraform_state)
            ))
            .into_response()
        }
        Purpose::Web { next } => {
            let Some(key) = &state.sessions else {
                return pages::bad_request(
                    "Signing in to the web pages is not available on this server.",
                );
            };
            let lifetime = state.session_lifetime.min(config.token_lifetime);
            let how = format!("web sign-in via {}", config.issuer);
            let record =
                match issue(&state, namespaces, &subject, &how, lifetime, Event::Issued).await {
                    Ok(new) => new.record,
                    Err(e) => return pages::store_failed(&e),
                };
            let expires = SessionKey::expiry(&record, now, lifetime);
            let value = key.issue(&record, expires);
            // A page of this site moves on to `next`, not a redirect: browsers send the
            // SameSite=Strict session cookie only on navigations this site starts, and this
            // request came from the identity provider's page.
            let mut response = pages::signed_in(&next);
            session::append_cookie(
                &mut response,
                SESSION_COOKIE,
                &value,
                expires.saturating_sub(tokens::unix(now)),
            );
            session::append_cookie(&mut response, LOGIN_COOKIE, "", 0);
            response
        }
    }
}

fn namespaces_of(access: &Access) -> Vec<Namespace> {
    match access {
        Access::All => Vec::new(),
        Access::Namespaces(namespaces) => namespaces.iter().cloned().collect(),
    }
}

/// Makes, stores and audits a registry token.
async fn issue(
    state: &LoginState,
    namespaces: Vec<Namespace>,
    subject: &str,
    how: &str,
    lifetime: Duration,
    event: Event,
) -> Result<tokens::NewToken, tfreg_core::StoreError> {
    let mut new = tokens::generate(namespaces, String::new(), Some(lifetime), SystemTime::now());
    new.record.subject = Some(subject.to_owned());
    new.record.issued_via = Some(how.to_owned());
    state.tokens.put(new.record.clone()).await?;
    audit::record(event, Some(&new.record.id), Some(subject), how);
    Ok(new)
}

/// `POST /oauth/token`'s form: either grant.
#[derive(Debug, Deserialize)]
pub struct TokenRequest {
    grant_type: Option<String>,
    code: Option<String>,
    redirect_uri: Option<String>,
    client_id: Option<String>,
    code_verifier: Option<String>,
    subject_token: Option<String>,
    subject_token_type: Option<String>,
}

/// The token endpoint's answer.
#[derive(Debug, Serialize)]
pub struct TokenAnswer {
    access_token: String,
    token_type: &'static str,
    expires_in: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    issued_token_type: Option<&'static str>,
}

/// An OAuth error (RFC 6749 §5.2), which also carries the registry's `errors` list.
pub(crate) fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (
        status,
        [(axum::http::header::CACHE_CONTROL, "no-store")],
        Json(serde_json::json!({
            "error": error,
            "error_description": description,
            "errors": [description],
        })),
    )
        .into_response()
}

fn token_answer(new: &tokens::NewToken, exchange: bool) -> Response {
    let expires_in = new
        .record
        .expires_at
        .map_or(0, |at| at.saturating_sub(new.record.created_at));
    let answer = TokenAnswer {
        access_token: new.token.clone(),
        token_type: "bearer",
        expires_in,
        issued_token_type: exchange.then_some("urn:ietf:params:oauth:token-type:access_token"),
    };
    (
        [(axum::http::header::CACHE_CONTROL, "no-store")],
        Json(answer),
    )
        .into_response()
}

/// `POST /oauth/token`.
async fn token(
    State(state): State<LoginState>,
    form: Result<Form<TokenRequest>, FormRejection>,
) -> Response {
    let Ok(Form(request)) = form else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "the request must be a form (application/x-www-form-urlencoded)",
        );
    };
    match request.grant_type.as_deref() {
        Some("authorization_code") => redeem(&state, request).await,
        Some(exchange::GRANT_TYPE) => exchange::exchange(&state, request).await,
        Some(other) => oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            &format!("grant_type {other:?} is not supported: use authorization_code (terraform login) or {} (CI)", exchange::GRANT_TYPE),
        ),
        None => oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "grant_type is missing"),
    }
}

/// Terraform redeems its code: checked against the request it came from, and its PKCE
/// verifier. The code is spent whatever the outcome.
async fn redeem(state: &LoginState, request: TokenRequest) -> Response {
    let Some(config) = &state.identity.sign_in else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "signing in is not configured on this registry",
        );
    };
    let refuse = |reason: &str, subject: Option<&str>| {
        audit::record(
            Event::Refused,
            None,
            subject,
            &format!("terraform login: {reason}"),
        );
        oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", reason)
    };
    let code = match state
        .grants
        .redeem_code(request.code.as_deref().unwrap_or(""), SystemTime::now())
        .await
    {
        Ok(code) => code,
        Err(GrantError::Store(e)) => {
            tracing::error!(error = %tfreg_core::store::ErrorChain(&e), "could not read an authorization code");
            return oauth_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "the registry could not read the authorization code; try again",
            );
        }
        Err(e) => return refuse(&e.to_string(), None),
    };
    if request.client_id.as_deref() != Some(code.client_id.as_str()) {
        return refuse(
            "the client_id differs from the authorization request's",
            Some(&code.subject),
        );
    }
    if request.redirect_uri.as_deref() != Some(code.redirect_uri.as_str()) {
        return refuse(
            "the redirect_uri differs from the authorization request's",
            Some(&code.subject),
        );
    }
    if !pkce::verifies(
        request.code_verifier.as_deref().unwrap_or(""),
        &code.code_challenge,
    ) {
        return refuse(
            "the PKCE code_verifier does not match the code_challenge of the authorization request",
            Some(&code.subject),
        );
    }
    let how = format!("terraform login via {}", config.issuer);
    let grant = Grant {
        namespaces: code.namespaces,
        subject: &code.subject,
        how: &how,
        lifetime: config.token_lifetime,
        event: Event::Issued,
    };
    token_endpoint_answer(state, grant).await
}

/// What a token is issued for, by the token endpoint.
pub(crate) struct Grant<'a> {
    pub namespaces: Vec<Namespace>,
    pub subject: &'a str,
    pub how: &'a str,
    pub lifetime: Duration,
    /// [`Event::Issued`] (`terraform login`) or [`Event::Exchanged`] (CI).
    pub event: Event,
}

/// Issues the token of `grant` and answers with it, as the token endpoint does.
pub(crate) async fn token_endpoint_answer(state: &LoginState, grant: Grant<'_>) -> Response {
    let exchanged = grant.event == Event::Exchanged;
    let issued = issue(
        state,
        grant.namespaces,
        grant.subject,
        grant.how,
        grant.lifetime,
        grant.event,
    )
    .await;
    match issued {
        Ok(new) => token_answer(&new, exchanged),
        Err(e) => {
            tracing::error!(error = %tfreg_core::store::ErrorChain(&e), "could not store a new token");
            oauth_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "the registry could not store the new token; try again",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_terraforms_loopback_redirects_are_accepted() {
        assert!(terraform_redirect("http://localhost:10000/login"));
        assert!(terraform_redirect("http://127.0.0.1:10010/login"));
        for bad in [
            "http://localhost:9999/login",
            "http://localhost:10011/login",
            "http://localhost:10000/other",
            "https://evil.example/login",
            "http://localhost.evil.example:10000/login",
            "http://localhost:10000/login?x=1",
        ] {
            assert!(!terraform_redirect(bad), "{bad}");
        }
    }
}
