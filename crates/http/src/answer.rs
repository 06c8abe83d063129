//! Answers the registry keeps as bytes ([`tfreg_core::registry::answers::Answer`]) sent as
//! they are: JSON, or its gzip form when the client accepts gzip (Terraform's HTTP client
//! does, and decompresses it itself).

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use tfreg_core::registry::answers::Answer;

/// Whether the request's `Accept-Encoding` takes gzip (a `q` of zero refuses it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AcceptsGzip(pub bool);

impl AcceptsGzip {
    /// From the value of an `Accept-Encoding` header.
    pub fn of(value: &str) -> Self {
        let takes = value.split(',').any(|item| {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or_default().trim();
            let refused = parts.any(|param| {
                param
                    .trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            coding.eq_ignore_ascii_case("gzip") && !refused
        });
        Self(takes)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for AcceptsGzip {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(parts
            .headers
            .get_all(header::ACCEPT_ENCODING)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(AcceptsGzip::of)
            .find(|a| a.0)
            .unwrap_or_default())
    }
}

/// The response carrying `answer`: its gzip form when the client takes it and it has one.
pub fn send(answer: &Answer, accepts: AcceptsGzip) -> Response {
    let json = HeaderValue::from_static("application/json");
    let vary = HeaderValue::from_static("accept-encoding");
    match answer.gzip().filter(|_| accepts.0) {
        Some(gzip) => (
            [
                (header::CONTENT_TYPE, json),
                (header::CONTENT_ENCODING, HeaderValue::from_static("gzip")),
                (header::VARY, vary),
            ],
            gzip.clone(),
        )
            .into_response(),
        None => (
            [(header::CONTENT_TYPE, json), (header::VARY, vary)],
            answer.json().clone(),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_taken_unless_refused() {
        assert!(AcceptsGzip::of("gzip").0);
        assert!(AcceptsGzip::of("deflate, GZIP;q=0.5, br").0);
        assert!(!AcceptsGzip::of("gzip;q=0").0);
        assert!(!AcceptsGzip::of("gzip; q=0.0, identity").0);
        assert!(!AcceptsGzip::of("identity").0);
        assert!(!AcceptsGzip::of("x-gzipped").0);
        assert!(!AcceptsGzip::of("").0);
    }
}
