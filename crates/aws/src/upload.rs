//! Publishing into the bucket: uploads of local files (in parts past a size, so a large
//! provider package neither sits in memory nor restarts from zero on a failure), and the
//! listings a publisher needs under one prefix. `tfreg publish` is the caller.

use std::path::Path;
use std::sync::Arc;

use aws_sdk_s3::primitives::{ByteStream, Length};
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_sdk_s3::Client;
use tfreg_core::StoreError;
use tokio::task::JoinSet;

/// S3's smallest part (all but the last part of an upload must be at least this large).
pub const MIN_PART_SIZE: u64 = crate::settings::PART_SIZE_RANGE.0;
/// S3's largest part.
pub const MAX_PART_SIZE: u64 = crate::settings::PART_SIZE_RANGE.1;
/// S3's most parts in one upload.
pub const MAX_PARTS: u64 = 10_000;
/// Files larger than this are uploaded in parts of this size, unless told otherwise.
pub const DEFAULT_PART_SIZE: u64 = 64 * 1024 * 1024;
/// Parts in flight at once.
const CONCURRENT_PARTS: usize = 4;

/// What S3 said of an uploaded object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uploaded {
    /// The object's version id, when the bucket keeps versions.
    pub version_id: Option<String>,
    /// The object's ETag, as S3 returned it.
    pub e_tag: Option<String>,
    /// Whether it went up in parts.
    pub multipart: bool,
}

/// Uploads files under keys of one bucket.
#[derive(Clone, Debug)]
pub struct Uploader {
    client: Client,
    bucket: String,
    part_size: u64,
}

/// Called with the number of bytes just sent.
pub type Progress = Arc<dyn Fn(u64) + Send + Sync>;

impl Uploader {
    /// Uploads into `bucket`, in parts of [`DEFAULT_PART_SIZE`] past that size.
    pub fn new(client: Client, bucket: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
            part_size: DEFAULT_PART_SIZE,
        }
    }

    /// Files larger than `size` go up in parts of `size` bytes (kept within S3's bounds).
    pub fn with_part_size(mut self, size: u64) -> Self {
        self.part_size = size.clamp(MIN_PART_SIZE, MAX_PART_SIZE);
        self
    }

    /// The size of a part, and the size past which a file goes up in parts.
    pub fn part_size(&self) -> u64 {
        self.part_size
    }

    /// The bucket uploaded into.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    fn failed(
        &self,
        action: &str,
        key: &str,
        e: impl std::error::Error + Send + Sync + 'static,
    ) -> StoreError {
        crate::s3::s3_failure(&self.bucket, action, key, e)
    }

    fn sdk_failed<E>(
        &self,
        action: &str,
        key: &str,
        e: aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
    ) -> StoreError
    where
        E: aws_sdk_s3::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        crate::s3::s3_sdk_failure(&self.bucket, action, key, e)
    }

    /// Every key under `prefix`.
    pub async fn list(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let mut keys = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(prefix)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| self.sdk_failed("ListObjectsV2", prefix, e))?;
            keys.extend(
                page.contents()
                    .iter()
                    .filter_map(|o| o.key().map(str::to_owned)),
            );
        }
        Ok(keys)
    }

    /// Uploads the file at `path` (of `size` bytes) as `key`: one PutObject up to the part
    /// size, a multipart upload past it, aborted if any part fails.
    pub async fn upload(
        &self,
        key: &str,
        path: &Path,
        size: u64,
        content_type: &str,
        progress: Progress,
    ) -> Result<Uploaded, StoreError> {
        if size <= self.part_size {
            let body = file_part(path, 0, size)
                .await
                .map_err(|e| self.failed("PutObject", key, e))?;
            let out = self
                .client
                .put_object()
                .bucket(&self.bucket)
                .key(key)
                .content_type(content_type)
                .content_length(size as i64)
                .body(body)
                .send()
                .await
                .map_err(|e| self.sdk_failed("PutObject", key, e))?;
            progress(size);
            return Ok(Uploaded {
                version_id: out.version_id,
                e_tag: out.e_tag,
                multipart: false,
            });
        }
        if size.div_ceil(self.part_size) > MAX_PARTS {
            return Err(StoreError::new(format!(
                "{} is {size} bytes: more than {MAX_PARTS} parts of {} bytes",
                path.display(),
                self.part_size
            )));
        }
        let created = self
            .client
            .create_multipart_upload()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .send()
            .await
            .map_err(|e| self.sdk_failed("CreateMultipartUpload", key, e))?;
        let Some(upload_id) = created.upload_id else {
            return Err(StoreError::new(format!(
                "S3 CreateMultipartUpload of s3://{}/{key} returned no upload id",
                self.bucket
            )));
        };
        match self
            .upload_parts(key, &upload_id, path, size, progress)
            .await
        {
            Ok(parts) => self.complete(key, &upload_id, parts).await,
            Err(e) => {
                // Parts already sent cost storage until aborted.
                if let Err(abort) = self
                    .client
                    .abort_multipart_upload()
                    .bucket(&self.bucket)
                    .key(key)
                    .upload_id(&upload_id)
                    .send()
                    .await
                {
                    tracing::warn!(key, error = %abort.into_service_error(), "could not abort the multipart upload");
                }
                Err(e)
            }
        }
    }

    async fn upload_parts(
        &self,
        key: &str,
        upload_id: &str,
        path: &Path,
        size: u64,
        progress: Progress,
    ) -> Result<Vec<CompletedPart>, StoreError> {
        let count = size.div_ceil(self.part_size);
        let mut parts = Vec::with_capacity(count as usize);
        let mut running = JoinSet::new();
        let mut next = 0u64;
        while next < count || !running.is_empty() {
            while next < count && running.len() < CONCURRENT_PARTS {
                let offset = next * self.part_size;
                let length = self.part_size.min(size - offset);
                let number = (next + 1) as i32;
                let (this, key, upload_id, path, progress) = (
                    self.clone(),
                    key.to_owned(),
                    upload_id.to_owned(),
                    path.to_owned(),
                    Arc::clone(&progress),
                );
                running.spawn(async move {
                    let body = file_part(&path, offset, length)
                        .await
                        .map_err(|e| this.failed("UploadPart", &key, e))?;
                    let out = this
                        .client
                        .upload_part()
                        .bucket(&this.bucket)
                        .key(&key)
                        .upload_id(upload_id)
                        .part_number(number)
                        .content_length(length as i64)
                        .body(body)
                        .send()
                        .await
                        .map_err(|e| this.sdk_failed("UploadPart", &key, e))?;
                    progress(length);
                    Ok::<_, StoreError>(
                        CompletedPart::builder()
                            .part_number(number)
                            .set_e_tag(out.e_tag)
                            .build(),
                    )
                });
                next += 1;
            }
            match running.join_next().await {
                Some(Ok(part)) => parts.push(part?),
                Some(Err(e)) => return Err(self.failed("UploadPart", key, e)),
                None => {}
            }
        }
        parts.sort_by_key(|p| p.part_number);
        Ok(parts)
    }

    async fn complete(
        &self,
        key: &str,
        upload_id: &str,
        parts: Vec<CompletedPart>,
    ) -> Result<Uploaded, StoreError> {
        let out = self
            .client
            .complete_multipart_upload()
            .bucket(&self.bucket)
            .key(key)
            .upload_id(upload_id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await
            .map_err(|e| self.sdk_failed("CompleteMultipartUpload", key, e))?;
        Ok(Uploaded {
            version_id: out.version_id,
            e_tag: out.e_tag,
            multipart: true,
        })
    }
}

/// `length` bytes of the file at `path` from `offset`, streamed from disk.
async fn file_part(
    path: &Path,
    offset: u64,
    length: u64,
) -> Result<ByteStream, aws_smithy_types::byte_stream::error::Error> {
    ByteStream::read_from()
        .path(path)
        .offset(offset)
        .length(Length::Exact(length))
        .build()
        .await
}

/// The upstream cache's writes into the bucket: verified packages (in parts past the part
/// size) and small JSON records.
#[async_trait::async_trait]
impl tfreg_core::store::ArtifactWriter for Uploader {
    async fn put_file(&self, key: &str, path: &Path) -> Result<(), StoreError> {
        let size = tokio::fs::metadata(path)
            .await
            .map_err(|e| StoreError::with_source(format!("cannot read {}", path.display()), e))?
            .len();
        let progress: Progress = Arc::new(|_| {});
        self.upload(key, path, size, content_type(key), progress)
            .await
            .map(|_| ())
    }

    async fn put_bytes(&self, key: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type(key))
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map_err(|e| self.sdk_failed("PutObject", key, e))?;
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        // In the versioned bucket this adds a delete marker: the pinned version stays.
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| self.sdk_failed("DeleteObject", key, e))?;
        Ok(())
    }
}

fn content_type(key: &str) -> &'static str {
    if key.ends_with(".json") {
        "application/json"
    } else {
        "application/zip"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_sizes_stay_within_s3s_bounds() {
        let config = aws_sdk_s3::Config::builder()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .build();
        let uploader = Uploader::new(Client::from_conf(config), "b");
        assert_eq!(uploader.part_size(), DEFAULT_PART_SIZE);
        assert_eq!(
            uploader.clone().with_part_size(1).part_size(),
            MIN_PART_SIZE
        );
        assert_eq!(uploader.with_part_size(u64::MAX).part_size(), MAX_PART_SIZE);
    }
}
