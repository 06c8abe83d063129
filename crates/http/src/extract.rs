//! Request extractors whose rejections are JSON errors, the request's origin, and the
//! signed part of the registry's own URLs.

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use tfreg_core::Origin;

use crate::error::ApiError;

/// `axum::extract::Path` with a JSON 400 instead of a plain-text rejection.
#[derive(FromRequestParts)]
#[from_request(via(Path), rejection(ApiError))]
pub struct JsonPath<T>(pub T);

/// Where the client reached us (`https://` + the `Host` header, or the URI's authority for
/// HTTP/2): the base of the absolute download URLs we hand out.
pub struct RequestOrigin(pub Origin);

impl<S: Send + Sync> FromRequestParts<S> for RequestOrigin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let authority = parts
            .headers
            .get(axum::http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| parts.uri.authority().map(|a| a.as_str()));
        authority
            .and_then(Origin::https)
            .map(RequestOrigin)
            .ok_or_else(|| ApiError::BadRequest("missing or malformed Host header".into()))
    }
}

/// The signed part of a download URL: its expiry, its signature and the revision it names.
#[derive(serde::Deserialize)]
pub struct SignedQuery {
    pub(crate) expires: Option<String>,
    pub(crate) signature: Option<String>,
    pub(crate) revision: Option<String>,
}

impl SignedQuery {
    /// The expiry, if it is a number.
    pub fn expires_at(&self) -> Option<u64> {
        self.expires.as_deref().and_then(|e| e.parse().ok())
    }

    /// The signature, if given.
    pub fn signature(&self) -> Option<&str> {
        self.signature.as_deref()
    }
}
