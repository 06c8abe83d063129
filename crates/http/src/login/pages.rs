//! The few pages a person sees in the browser during a sign-in, when something is wrong.

use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use tfreg_core::store::ErrorChain;
use tfreg_core::StoreError;

fn page(status: StatusCode, title: &str, message: &str) -> Response {
    let body = html! {
        h1 { (title) }
        p.bad role="alert" { (message) }
        p { a href="/" { "Back to the registry" } }
    };
    crate::web::html(status, crate::web::plain_page(title, body))
}

pub fn bad_request(message: &str) -> Response {
    page(StatusCode::BAD_REQUEST, "Sign-in failed", message)
}

pub fn refused(message: &str) -> Response {
    page(StatusCode::FORBIDDEN, "Not signed in", message)
}

pub fn not_configured() -> Response {
    page(
        StatusCode::NOT_FOUND,
        "Signing in is not configured",
        "This registry has no identity provider configured: use a token from `tfreg token create`.",
    )
}

/// Signing in is configured, but the server has no secret to seal sign-ins with.
pub fn no_secret() -> Response {
    tracing::error!("a sign-in was refused: this server has no session secret to seal sign-ins with (TFREG_SESSION_SECRET)");
    page(
        StatusCode::SERVICE_UNAVAILABLE,
        "Signing in is not available",
        "This registry has no secret to seal sign-ins with: its operators must set a session secret (TFREG_SESSION_SECRET). Meanwhile, use a token from `tfreg token create`.",
    )
}

pub fn provider_failed(message: &str) -> Response {
    tracing::error!(error = message, "the identity provider failed");
    page(
        StatusCode::BAD_GATEWAY,
        "The identity provider failed",
        &format!("Signing in could not be completed: {message}"),
    )
}

pub fn store_failed(error: &StoreError) -> Response {
    tracing::error!(error = %ErrorChain(error), "could not keep a sign-in");
    crate::error::retry_after(page(
        StatusCode::SERVICE_UNAVAILABLE,
        "Try again",
        "The registry could not record this sign-in; try again in a moment. Its logs say why.",
    ))
}

/// The page a web sign-in ends on: it moves on to `next` (a path of this site) at once,
/// with a link for browsers that do not.
pub fn signed_in(next: &str) -> Response {
    let page = html! {
        (maud::DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="refresh" content={ "0; url=" (next) };
                title { "Signed in" }
            }
            body {
                p { "Signed in. " a href=(next) { "Continue" } }
            }
        }
    };
    crate::web::html(StatusCode::OK, page)
}
