//! The bucket as an [`ArtifactStore`], and as the [`Presigner`] of download URLs: S3
//! presigned URLs, pinned to the object version that was indexed when the bucket keeps
//! versions.

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::Client;
use tfreg_core::downloads::Presigner;
use tfreg_core::store::{Kept, ObjectBody, ObjectMeta};
use tfreg_core::{ArtifactStore, StoreError};

/// Revisions are `v:<version id>` in versioned buckets, else `e:<etag>`.
const VERSION_PREFIX: &str = "v:";

/// The registry's bucket: the published files, and download URLs presigned for them.
#[derive(Clone, Debug)]
pub struct S3ArtifactStore {
    client: Client,
    bucket: String,
    url_ttl: Duration,
}

impl S3ArtifactStore {
    /// The store on `bucket`, whose presigned download URLs last `url_ttl`.
    pub fn new(client: Client, bucket: impl Into<String>, url_ttl: Duration) -> Self {
        Self {
            client,
            bucket: bucket.into(),
            url_ttl,
        }
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    fn failed(
        &self,
        action: &str,
        key: &str,
        e: impl std::error::Error + Send + Sync + 'static,
    ) -> StoreError {
        s3_failure(&self.bucket, action, key, e)
    }

    fn sdk_failed<E>(&self, action: &str, key: &str, e: SdkError<E, HttpResponse>) -> StoreError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        s3_sdk_failure(&self.bucket, action, key, e)
    }
}

#[async_trait]
impl Presigner for S3ArtifactStore {
    /// Presigned from `start` for `url_ttl`, for the one method asked (a URL presigned for
    /// GET answers HEAD with 403).
    async fn presign(
        &self,
        key: &str,
        revision: Option<&str>,
        head: bool,
        start: std::time::SystemTime,
    ) -> Result<String, StoreError> {
        let config = PresigningConfig::builder()
            .start_time(start)
            .expires_in(self.url_ttl)
            .build()
            .map_err(|e| self.failed("presigning", key, e))?;
        let version = revision
            .and_then(|r| r.strip_prefix(VERSION_PREFIX))
            .map(str::to_owned);
        // The two operations return different error types; both end as a URL or a message.
        let presigned = if head {
            self.client
                .head_object()
                .bucket(&self.bucket)
                .key(key)
                .set_version_id(version)
                .presigned(config)
                .await
                .map_err(|e| self.failed("presigning", key, e))
        } else {
            self.client
                .get_object()
                .bucket(&self.bucket)
                .key(key)
                .set_version_id(version)
                .presigned(config)
                .await
                .map_err(|e| self.failed("presigning", key, e))
        };
        let request = presigned?;
        Ok(request.uri().to_owned())
    }

    fn lifetime(&self) -> Duration {
        self.url_ttl
    }
}

/// An S3 call that failed, naming the action and the object.
pub(crate) fn s3_failure(
    bucket: &str,
    action: &str,
    key: &str,
    e: impl std::error::Error + Send + Sync + 'static,
) -> StoreError {
    StoreError::with_source(format!("S3 {action} of s3://{bucket}/{key} failed"), e)
}

/// An S3 call that failed, transient when S3 was busy or out of reach.
pub(crate) fn s3_sdk_failure<E>(
    bucket: &str,
    action: &str,
    key: &str,
    e: SdkError<E, HttpResponse>,
) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    crate::transient::sdk_failure(format!("S3 {action} of s3://{bucket}/{key} failed"), e)
}

/// What HeadObject and GetObject tell of an object.
fn meta(content_length: Option<i64>, version_id: Option<&str>, e_tag: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        size: content_length.unwrap_or(0).max(0) as u64,
        revision: revision(version_id, e_tag),
    }
}

fn revision(version_id: Option<&str>, e_tag: Option<&str>) -> String {
    match (version_id, e_tag) {
        // "null" is the version id of objects written before versioning was enabled.
        (Some(v), _) if v != "null" => format!("{VERSION_PREFIX}{v}"),
        (_, Some(e)) => format!("e:{e}"),
        _ => String::new(),
    }
}

#[async_trait]
impl ArtifactStore for S3ArtifactStore {
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        match self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => Ok(Some(meta(
                out.content_length,
                out.version_id(),
                out.e_tag(),
            ))),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_not_found()) => Ok(None),
            Err(e) => Err(self.sdk_failed("HeadObject", key, e)),
        }
    }

    async fn list(&self) -> Result<Vec<String>, StoreError> {
        let mut keys = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| self.sdk_failed("ListObjectsV2", "", e))?;
            keys.extend(
                page.contents()
                    .iter()
                    .filter_map(|o| o.key().map(str::to_owned)),
            );
        }
        Ok(keys)
    }

    async fn open(&self, key: &str) -> Result<Option<ObjectBody>, StoreError> {
        self.get(key, None).await
    }

    /// In a versioned bucket, the object version itself, whatever was uploaded since.
    async fn open_revision(
        &self,
        key: &str,
        revision: &str,
    ) -> Result<Option<ObjectBody>, StoreError> {
        match revision.strip_prefix(VERSION_PREFIX) {
            Some(version) => self.get(key, Some(version)).await,
            None => Ok(self
                .get(key, None)
                .await?
                .filter(|b| b.meta.revision == revision)),
        }
    }

    /// A versioned bucket keeps every object version (the template's bucket expires none),
    /// so there is nothing to copy; a bucket without versioning keeps nothing.
    async fn keep(&self, key: &str, revision: &str, _sha256: &str) -> Result<Kept, StoreError> {
        Ok(match revision.starts_with(VERSION_PREFIX) {
            true => Kept::Yes,
            false => Kept::No(format!(
                "s3://{}/{key} has no object version: the bucket does not keep versions, so bytes uploaded over it replace what was published (enable versioning on the bucket)",
                self.bucket
            )),
        })
    }

    /// Nothing in a bucket is ever unreadable.
    async fn refusal(&self, _key: &str) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
}

impl S3ArtifactStore {
    /// GetObject, of one version when given. `None` when there is no such object or version.
    async fn get(
        &self,
        key: &str,
        version: Option<&str>,
    ) -> Result<Option<ObjectBody>, StoreError> {
        match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .set_version_id(version.map(str::to_owned))
            .send()
            .await
        {
            Ok(out) => Ok(Some(ObjectBody::new(
                meta(out.content_length, out.version_id(), out.e_tag()),
                out.body.into_async_read(),
            ))),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_no_such_key()) => Ok(None),
            Err(e) => Err(self.sdk_failed("GetObject", key, e)),
        }
    }
}
