//! Starting a sign-in: `GET /oauth/authorization` (Terraform's, checked as `login.v1`
//! requires) and `GET /oauth/sign-in` (the web pages'), both on to the identity provider.

use std::time::SystemTime;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use tfreg_core::identity::grants::{PendingLogin, Purpose};
use tfreg_core::identity::pkce;
use tfreg_core::Origin;

use super::{pages, LoginState, LOGIN_COOKIE, PORTS, TERRAFORM_CLIENT};
use crate::extract::RequestOrigin;
use crate::web::session;

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
pub(super) fn terraform_redirect(uri: &str) -> bool {
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

/// `GET /oauth/authorization`: checks Terraform's request, then on to the provider.
pub(super) async fn authorize(
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
pub(super) async fn web_sign_in(
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
