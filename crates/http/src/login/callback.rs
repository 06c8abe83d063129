//! `GET /oauth/callback`: the identity provider's answer, checked, then a code for
//! Terraform or a session for the web pages.

use std::time::SystemTime;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use tfreg_core::identity::audit::{self, Event};
use tfreg_core::identity::grants::{IssuedCode, Purpose};
use tfreg_core::names::Namespace;
use tfreg_core::tokens::{self, Access};

use super::authorize::terraform_redirect;
use super::token::issue;
use super::{oidc, pages, LoginState, LOGIN_COOKIE};
use crate::web::session::{self, SessionKey, SESSION_COOKIE};

/// `GET /oauth/callback`'s query: a code, or an error.
#[derive(Debug, Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /oauth/callback`: the provider's answer; the code for Terraform, or a session.
pub(super) async fn callback(
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

pub(super) fn namespaces_of(access: &Access) -> Vec<Namespace> {
    match access {
        Access::All => Vec::new(),
        Access::Namespaces(namespaces) => namespaces.iter().cloned().collect(),
    }
}
