//! The browser-facing security headers, set in one place for every answer a browser may
//! render or follow: every HTML answer of any family (the pages, the sign-in form, the
//! `/oauth/*` pages, error pages), every answer of the web pages' routes (their redirects,
//! the sign-in that sets the session), the pages' assets, every answer under `/oauth/` (its
//! redirects carry codes and sign-ins), and any answer that sets a cookie. The router of each function and of the local
//! server applies it ([`crate::family`], [`crate::router`]); a handler never sets these.
//!
//! - `Content-Security-Policy`: nothing but this site's own styles, script and images (and
//!   `https:` images when a page says it shows remote ones, [`RemoteImages`]), forms only to
//!   this site, never framed, no `<base>`;
//! - `X-Frame-Options: DENY` for browsers without `frame-ancestors`;
//! - `X-Content-Type-Options: nosniff`;
//! - `Referrer-Policy: same-origin`: nothing leaks to other sites (not even the origin; the
//!   sign-in form's posts still carry a real `Origin`, which it checks);
//! - `Cross-Origin-Opener-Policy: same-origin`;
//! - `Cache-Control: no-store`, but for assets: pages show what a token may read, and the
//!   sign-in answers carry codes and cookies: never kept by shared caches or the back button.

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;

/// Marks a response whose page may show images from `https://` URLs (README images, when
/// the operator allows them): its policy lets them load.
#[derive(Debug, Clone, Copy)]
pub struct RemoteImages;

/// The headers of every answer a browser renders or follows (see the module's doc).
pub async fn headers(request: Request, next: Next) -> Response {
    let is_asset = request.uri().path().starts_with("/assets/");
    let mut response = next.run(request).await;
    // The family whose route answered (`crate::family`, `crate::router`).
    let for_browsers = matches!(
        response.extensions().get::<crate::Family>(),
        Some(crate::Family::Web | crate::Family::Login)
    );
    let sets_cookie = response.headers().contains_key(header::SET_COOKIE);
    if !(for_browsers || sets_cookie || is_html(response.headers())) {
        return response;
    }
    let images = match response.extensions().get::<RemoteImages>() {
        Some(_) => "img-src 'self' https:",
        None => "img-src 'self'",
    };
    let csp = format!(
        "default-src 'none'; style-src 'self'; script-src 'self'; {images}; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    );
    let headers = response.headers_mut();
    let mut set = |name: &'static str, value: &str| {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
    };
    set("content-security-policy", &csp);
    set("x-content-type-options", "nosniff");
    set("x-frame-options", "DENY");
    set("referrer-policy", "same-origin");
    set("cross-origin-opener-policy", "same-origin");
    if !is_asset {
        set("cache-control", "no-store");
    }
    response
}

fn is_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/html"))
}

/// The names of the headers [`headers`] sets on every HTML answer (for tests).
pub const PAGE_HEADERS: [&str; 6] = [
    "content-security-policy",
    "x-content-type-options",
    "x-frame-options",
    "referrer-policy",
    "cross-origin-opener-policy",
    "cache-control",
];
