//! `POST /oauth/token`: Terraform redeems its code, or CI exchanges an ID token
//! ([`super::exchange`]); either way a registry token is issued, stored and audited here.

use std::time::{Duration, SystemTime};

use axum::extract::rejection::FormRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Form, Json};
use serde::{Deserialize, Serialize};
use tfreg_core::identity::audit::{self, Event};
use tfreg_core::identity::{pkce, GrantError};
use tfreg_core::names::Namespace;
use tfreg_core::tokens;

use super::{exchange, LoginState};

/// Makes, stores and audits a registry token.
pub(super) async fn issue(
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
    pub(super) subject_token: Option<String>,
    pub(super) subject_token_type: Option<String>,
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
    let response = (
        status,
        [(axum::http::header::CACHE_CONTROL, "no-store")],
        Json(serde_json::json!({
            "error": error,
            "error_description": description,
            "errors": [description],
        })),
    )
        .into_response();
    // A store that could not answer now may a moment later: say when to try again.
    match status {
        StatusCode::SERVICE_UNAVAILABLE => crate::error::retry_after(response),
        _ => response,
    }
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
pub(super) async fn token(
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
