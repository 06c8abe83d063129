//! The API's one error type: every failure becomes `{"errors": [...]}` with the right status.
//! Server-side failures are logged here, once, and their details never reach the client.
//! A store that was busy or out of reach ([`StoreError::is_transient`]) is answered 503 with
//! `Retry-After`, which Terraform's HTTP client honours before it tries once more.

use axum::extract::rejection::PathRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use tfreg_core::protocol::Errors;
use tfreg_core::store::ErrorChain;
use tfreg_core::{RegistryError, StoreError};

/// The seconds a client is asked to wait when the registry's storage was busy: short, as
/// the SDK has retried already and a throttle passes in moments; Terraform waits this long
/// before its one retry of a registry request.
pub const RETRY_AFTER_SECONDS: u64 = 2;

/// A failed request, as the client is told: each variant is one status code.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the request itself is wrong; the message says how.
    #[error("{0}")]
    BadRequest(String),
    /// 404: no such endpoint, file or publication; the message says which.
    #[error("{0}")]
    NotFound(String),
    /// 403: refused outright (a download URL that is invalid or has expired).
    #[error("{0}")]
    Forbidden(String),
    /// 401: no valid token.
    #[error(transparent)]
    Unauthorized(#[from] tfreg_core::tokens::AuthError),
    /// 405: the path exists, not for this method.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// 502: an upstream registry failed or answered what is refused; the message names it.
    #[error("{0}")]
    BadGateway(String),
    /// 503: too busy now; the client should come back after the seconds given.
    #[error("{0}")]
    Unavailable(String, u64),
    /// 500: a server-side failure, logged with its cause; the client sees only that it
    /// happened.
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ApiError {
    fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::BadGateway(_) => StatusCode::BAD_GATEWAY,
            ApiError::Unavailable(..) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// The JSON error response for `status` with one message.
pub fn error_response(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        Json(Errors {
            errors: vec![message.into()],
        }),
    )
        .into_response()
}

/// `response` with `Retry-After: RETRY_AFTER_SECONDS`: for the 503 answers (pages, OAuth
/// errors) made without an [`ApiError`].
pub fn retry_after(mut response: Response) -> Response {
    response.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from(RETRY_AFTER_SECONDS),
    );
    response
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let message = match &self {
            ApiError::Internal(source) => {
                tracing::error!(error = %ErrorChain(source.as_ref()), "request failed");
                "internal error: the registry could not complete this request; its logs say why"
                    .to_owned()
            }
            other => other.to_string(),
        };
        let mut response = error_response(status, message);
        if let ApiError::Unavailable(_, seconds) = &self {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(*seconds),
            );
        }
        if let ApiError::Unauthorized(e) = &self {
            let challenge = match e {
                tfreg_core::tokens::AuthError::Missing => r#"Bearer realm="tfreg""#,
                _ => r#"Bearer realm="tfreg", error="invalid_token""#,
            };
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static(challenge),
            );
        }
        response
    }
}

impl From<RegistryError> for ApiError {
    fn from(e: RegistryError) -> Self {
        match e {
            RegistryError::NotFound(message) => ApiError::NotFound(message),
            RegistryError::Store(e) => e.into(),
        }
    }
}

impl From<tfreg_core::upstream::UpstreamError> for ApiError {
    fn from(e: tfreg_core::upstream::UpstreamError) -> Self {
        use tfreg_core::upstream::UpstreamError as U;
        match e {
            U::NotFound(m) => ApiError::NotFound(m),
            U::Unreachable(m) | U::Refused(m) => ApiError::BadGateway(m),
            U::Busy(m) => ApiError::Unavailable(m, 5),
            U::Internal(m) => ApiError::Internal(m.into()),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e.is_transient() {
            true => {
                tracing::warn!(error = %ErrorChain(&e), "the storage is busy: answering 503");
                ApiError::busy()
            }
            false => ApiError::Internal(Box::new(e)),
        }
    }
}

impl ApiError {
    /// 403: `what` (who installed or who uploaded a version) is shown only to a request
    /// whose token reads `namespace`, though the request may read the module or provider.
    pub fn namespace_readers_only(
        what: &str,
        namespace: &tfreg_core::names::Namespace,
    ) -> ApiError {
        ApiError::Forbidden(format!(
            "{what} are shown only to requests with a token that reads the namespace {namespace}"
        ))
    }

    /// 503: the registry's storage is busy (throttled, failing or out of reach, past the
    /// retries); try again in [`RETRY_AFTER_SECONDS`].
    pub fn busy() -> ApiError {
        ApiError::Unavailable(
            format!("the registry's storage is busy; try again in {RETRY_AFTER_SECONDS} s"),
            RETRY_AFTER_SECONDS,
        )
    }
}

impl From<PathRejection> for ApiError {
    fn from(e: PathRejection) -> Self {
        ApiError::BadRequest(format!("malformed path: {}", e.body_text()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn answer(error: ApiError) -> (StatusCode, Option<String>, serde_json::Value) {
        let response = error.into_response();
        let status = response.status();
        let retry_after = response
            .headers()
            .get(axum::http::header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_owned());
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, retry_after, serde_json::from_slice(&body).unwrap())
    }

    #[tokio::test]
    async fn a_transient_store_failure_is_503_with_retry_after() {
        let busy = StoreError::transient("DynamoDB GetItem on table t failed", "throttled");
        let (status, retry_after, body) = answer(busy.into()).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(retry_after.as_deref(), Some("2"));
        assert_eq!(
            body,
            serde_json::json!({"errors": ["the registry's storage is busy; try again in 2 s"]})
        );
        // Wrapped by the read side, still transient.
        let wrapped = RegistryError::Store(StoreError::with_source(
            "cannot read the versions",
            StoreError::transient("S3 GetObject failed", "timeout"),
        ));
        let (status, _, _) = answer(wrapped.into()).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    }

    #[tokio::test]
    async fn a_lasting_store_failure_is_still_500_without_its_details() {
        let broken = StoreError::with_source("DynamoDB GetItem failed", "AccessDenied: secret");
        let (status, retry_after, body) = answer(broken.into()).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(retry_after, None);
        assert!(!body.to_string().contains("secret"), "{body}");
    }
}
