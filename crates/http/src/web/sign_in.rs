//! Signing in with a token and out again (see [`super::session`] for the cookies).

use std::time::SystemTime;

use axum::extract::rejection::FormRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use maud::html;
use serde::Deserialize;
use tfreg_core::tokens::{authenticate_record, AuthError};

use super::session::{self, SessionKey, CSRF_COOKIE, SESSION_COOKIE};
use super::{html, layout, pages, Viewer, WebState};

/// `?next=`: where to go once signed in.
#[derive(Debug, Default, Deserialize)]
pub struct Next {
    next: Option<String>,
}

/// The sign-in form's fields.
#[derive(Debug, Deserialize)]
pub struct SignIn {
    #[serde(default)]
    token: String,
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    next: String,
}

/// The sign-out form's field.
#[derive(Debug, Deserialize)]
pub struct SignOut {
    #[serde(default)]
    csrf: String,
}

/// `next` when it is a path of this site (`/...`, not `//host` or `/\host`), else `/`: a
/// sign-in link can never send anyone elsewhere.
pub(crate) fn local_path(next: Option<&str>) -> String {
    match next {
        Some(next)
            if next.starts_with('/')
                && !next.starts_with("//")
                && !next.starts_with("/\\")
                && next.is_ascii()
                && !next.chars().any(|c| c.is_control())
                && next.len() <= 2048 =>
        {
            next.to_owned()
        }
        _ => "/".to_owned(),
    }
}

/// Percent-encodes a query value (everything but unreserved characters and `/`).
pub fn encode_query_value(value: &str) -> String {
    use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
    const QUERY_VALUE: &percent_encoding::AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~')
        .remove(b'/');
    utf8_percent_encode(value, QUERY_VALUE).to_string()
}

/// True when a form post comes from this site: browsers send `Sec-Fetch-Site` and `Origin`
/// on posts; when they do, they must say so. (The CSRF tokens are checked as well.) The
/// pages' `Referrer-Policy: same-origin` keeps browsers sending the real origin: under
/// `no-referrer` they send `Origin: null`, which is refused.
fn same_site(headers: &HeaderMap) -> bool {
    let value = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = value("sec-fetch-site") {
        if site != "same-origin" && site != "none" {
            return false;
        }
    }
    match (value("origin"), value("host")) {
        (Some(origin), Some(host)) => origin == format!("https://{host}"),
        (Some(_), None) => false,
        (None, _) => true,
    }
}

fn form_page(
    status: StatusCode,
    next: &str,
    error: Option<&str>,
    sessions: bool,
    provider: Option<&str>,
) -> Response {
    let csrf = session::new_csrf_token();
    let body = html! {
        h1 { "Sign in" }
        @if !sessions {
            p.bad role="alert" {
                "Signing in is not available: this server has no secret to sign sessions with. "
                "Pages answer requests that carry an Authorization: Bearer header."
            }
        } @else {
            @if let Some(error) = error {
                p.bad #error role="alert" { (error) }
            }
            @if let Some(provider) = provider {
                p {
                    a.button #sign-in-with href={ "/oauth/sign-in?next=" (encode_query_value(next)) } {
                        "Sign in with " (provider)
                    }
                }
                p { "Or sign in with a registry token:" }
            } @else {
                p { "Sign in with a registry token (" code { "tfreg token create" } "). You see the namespaces it may read." }
            }
            form.stack method="post" action="/sign-in" {
                label for="token" {
                    "Token"
                    input #token name="token" type="password" autocomplete="current-password"
                        required spellcheck="false" aria-describedby=[error.map(|_| "error")];
                }
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="next" value=(next);
                button type="submit" { "Sign in" }
            }
        }
    };
    let mut response = html(status, layout::page("Sign in", None, body));
    session::append_cookie(&mut response, CSRF_COOKIE, &csrf, 3600);
    response
}

/// `GET /sign-in`.
pub async fn form(
    State(state): State<WebState>,
    headers: HeaderMap,
    query: Result<Query<Next>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let next = local_path(query.ok().and_then(|q| q.0.next).as_deref());
    let (Some(tokens), Some(key)) = (&state.tokens, &state.sessions) else {
        if state.tokens.is_none() {
            return Redirect::to(&next).into_response();
        }
        return form_page(StatusCode::OK, &next, None, false, None);
    };
    // Signed in already: on to where they were going.
    if let Some(cookie) = session::request_cookie(&headers, SESSION_COOKIE) {
        if let Ok(Some(_)) = key.verify(tokens.as_ref(), cookie, SystemTime::now()).await {
            return Redirect::to(&next).into_response();
        }
    }
    form_page(
        StatusCode::OK,
        &next,
        None,
        true,
        state.sign_in_with.as_deref(),
    )
}

/// `POST /sign-in`.
pub async fn sign_in(
    State(state): State<WebState>,
    headers: HeaderMap,
    form: Result<Form<SignIn>, FormRejection>,
) -> Response {
    let (Some(tokens), Some(key)) = (&state.tokens, &state.sessions) else {
        return Redirect::to("/sign-in").into_response();
    };
    let Ok(Form(form)) = form else {
        return form_page(
            StatusCode::BAD_REQUEST,
            "/",
            Some("The form could not be read: please sign in again."),
            true,
            state.sign_in_with.as_deref(),
        );
    };
    let next = local_path(Some(&form.next));
    let expected = session::request_cookie(&headers, CSRF_COOKIE).unwrap_or("");
    if !same_site(&headers) || !session::same_secret(expected, &form.csrf) {
        tracing::warn!(
            origin = headers.get("origin").and_then(|v| v.to_str().ok()),
            fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()),
            csrf_cookie = !expected.is_empty(),
            "sign-in refused: cross-site or without the form's CSRF token"
        );
        return form_page(
            StatusCode::FORBIDDEN,
            &next,
            Some("This sign-in did not come from this registry's own form: please sign in again."),
            true,
            state.sign_in_with.as_deref(),
        );
    }
    let now = SystemTime::now();
    let bearer = format!("Bearer {}", form.token.trim());
    let record = match authenticate_record(tokens.as_ref(), Some(&bearer), now).await {
        Ok(Ok(record)) => record,
        Ok(Err(error)) => return refused(&next, error, state.sign_in_with.as_deref()),
        Err(e) => return pages::store_failure(e),
    };
    let expires = SessionKey::expiry(&record, now, state.options.session_lifetime);
    let value = key.issue(&record, expires);
    let max_age = expires.saturating_sub(tfreg_core::tokens::unix(now));
    tracing::info!(token_id = record.id, "signed in to the web pages");
    let mut response = Redirect::to(&next).into_response();
    session::append_cookie(&mut response, SESSION_COOKIE, &value, max_age);
    session::append_cookie(&mut response, CSRF_COOKIE, "", 0);
    response
}

fn refused(next: &str, error: AuthError, provider: Option<&str>) -> Response {
    let message = match error {
        AuthError::Revoked => "This token has been revoked.",
        AuthError::Expired => "This token has expired.",
        _ => "This is not a valid token for this registry.",
    };
    form_page(
        StatusCode::UNAUTHORIZED,
        next,
        Some(message),
        true,
        provider,
    )
}

/// `POST /sign-out`: ends the session in this browser. (The token stays valid: revoke it
/// with `tfreg token revoke` to end every session signed in with it.)
pub async fn sign_out(
    Extension(viewer): Extension<Viewer>,
    headers: HeaderMap,
    form: Result<Form<SignOut>, FormRejection>,
) -> Response {
    let Some(session) = &viewer.session else {
        return Redirect::to("/").into_response();
    };
    let csrf = form.map(|Form(f)| f.csrf).unwrap_or_default();
    if !same_site(&headers) || !session::same_secret(&session.csrf, &csrf) {
        let body = html! {
            h1 { "Not signed out" }
            p.bad role="alert" { "This sign-out did not come from this registry's own pages." }
        };
        return html(
            StatusCode::FORBIDDEN,
            layout::page("Not signed out", Some(&viewer), body),
        );
    }
    let mut response = Redirect::to("/sign-in").into_response();
    session::append_cookie(&mut response, SESSION_COOKIE, "", 0);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_stays_on_this_site() {
        assert_eq!(local_path(Some("/modules/a/b/c")), "/modules/a/b/c");
        assert_eq!(
            local_path(Some("/?q=vpc&namespace=acme")),
            "/?q=vpc&namespace=acme"
        );
        for away in [
            "https://evil.example",
            "//evil.example",
            "/\\evil.example",
            "evil",
            "/a\nb",
            "/\u{e9}",
            "",
        ] {
            assert_eq!(local_path(Some(away)), "/", "{away:?}");
        }
        assert_eq!(local_path(None), "/");
        assert_eq!(encode_query_value("/?q=a b&c"), "/%3Fq%3Da%20b%26c");
    }

    #[test]
    fn posts_from_other_sites_are_refused() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut map = HeaderMap::new();
            for (k, v) in pairs {
                map.insert(*k, v.parse().unwrap());
            }
            map
        };
        assert!(same_site(&headers(&[("host", "r.example")])));
        assert!(same_site(&headers(&[
            ("host", "r.example"),
            ("origin", "https://r.example"),
            ("sec-fetch-site", "same-origin")
        ])));
        assert!(!same_site(&headers(&[
            ("host", "r.example"),
            ("origin", "https://evil.example")
        ])));
        assert!(!same_site(&headers(&[
            ("host", "r.example"),
            ("sec-fetch-site", "cross-site")
        ])));
    }
}
