//! The registry's own download URLs, `/v1/artifacts/<key>`, authorised by the URL's own
//! expiring signature because Terraform sends no credentials here: streamed from the store
//! (the local shape), or redirected to a URL the store presigned (S3 redirect mode), as
//! [`Downloads`] says.

use std::time::SystemTime;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use tfreg_core::downloads::Delivery;
use tfreg_core::layout::{classify, Artifact, Classified};
use tfreg_core::Downloads;
use tokio_util::io::ReaderStream;

use crate::error::ApiError;
use crate::extract::JsonPath;

/// The downloads family's route: `GET`/`HEAD /v1/artifacts/<key>`. When clients are sent
/// to the store itself (S3 presigned downloads), the path exists but serves nothing.
pub fn routes(downloads: Downloads) -> axum::Router {
    axum::Router::new()
        .route("/v1/artifacts/{*key}", axum::routing::get(download))
        .with_state(downloads)
}

/// The signed part of a download URL (shared with the mirror's package URLs, so it lives
/// with the extractors every family may use).
pub use crate::extract::SignedQuery;

const REFUSED: &str = "this download URL is invalid or has expired: ask the registry for a new one";

/// `GET` and `HEAD /v1/artifacts/<key>?expires=<unix seconds>&signature=<mac>`
pub async fn download(
    State(downloads): State<Downloads>,
    method: axum::http::Method,
    JsonPath(key): JsonPath<String>,
    query: Result<Query<SignedQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    // A query that does not even parse is a bad URL like any other: 403, not 400.
    let Ok(Query(query)) = query else {
        return Err(ApiError::Forbidden(REFUSED.into()));
    };
    let Some((signer, delivery)) = downloads.own_urls() else {
        return Err(ApiError::NotFound(
            "this registry does not serve downloads itself".into(),
        ));
    };
    let (Some(expires), Some(signature)) = (query.expires_at(), query.signature()) else {
        return Err(ApiError::Forbidden(REFUSED.into()));
    };
    let revision = query.revision.as_deref();
    if let Err(reason) = signer.verify(&key, revision, expires, signature, SystemTime::now()) {
        tracing::info!(%reason, "refused a download URL");
        return Err(ApiError::Forbidden(REFUSED.into()));
    }
    // A valid signature names a key we handed out; still, only published kinds of files are
    // ever read, whatever the signer was tricked into signing.
    let content_type = match classify(&key) {
        Classified::Artifact(Artifact::SigningKey { .. }) | Classified::Ignored => {
            return Err(ApiError::NotFound("no such file".into()))
        }
        Classified::Artifact(artifact) => artifact.content_type(),
        Classified::Invalid(_) => return Err(ApiError::NotFound("no such file".into())),
    };
    let files = match delivery {
        Delivery::Stream(files) => files,
        // Stores with URLs of their own (S3) get the client redirected to a URL presigned
        // for this very method, so HEAD works as well as GET.
        Delivery::Redirect(presigner) => {
            let head = method == axum::http::Method::HEAD;
            return redirect(
                presigner
                    .presign(&key, revision, head, std::time::SystemTime::now())
                    .await?,
            );
        }
    };
    // The URL names the revision that was checked at publish, and that revision is served:
    // the file itself while it is unchanged, else the bytes the store kept of it (a
    // published version never changes). Without them, the client must ask again.
    let body = match revision {
        Some(revision) => files.open_revision(&key, revision).await?,
        None => files.open(&key).await?,
    };
    let Some(body) = body else {
        return Err(ApiError::NotFound(
            "this file has changed or been unpublished since the URL was issued: ask the registry for a new one".into(),
        ));
    };
    Ok((
        [
            (header::CONTENT_TYPE, content_type.to_owned()),
            (header::CONTENT_LENGTH, body.meta.size.to_string()),
            (header::CACHE_CONTROL, "private, no-store".to_owned()),
        ],
        Body::from_stream(ReaderStream::new(body.reader)),
    )
        .into_response())
}

/// A temporary redirect to `url`.
fn redirect(url: String) -> Result<Response, ApiError> {
    let location =
        axum::http::HeaderValue::try_from(url).map_err(|e| ApiError::Internal(Box::new(e)))?;
    Ok((
        axum::http::StatusCode::TEMPORARY_REDIRECT,
        [(header::LOCATION, location)],
    )
        .into_response())
}
