//! Documents (precomputed answers, [`tfreg_core::documents`]) on the table: one item each,
//! `pk`/`sk` as the core names them, the JSON gzip-compressed in `body` (binary), and a
//! random revision in `rev` that every write replaces, so a conditional write replaces only
//! the revision its writer read. Compression keeps a 10,000-version module's answer (about
//! 210 KB of JSON) a few kilobytes: a request costs one or two read units.
//!
//! A document whose compressed form is over [`INLINE_LIMIT`] (DynamoDB items stop at
//! 400 KB) is written to the bucket under `.tfreg/documents/`, one object per revision, and
//! the item points to it (`object`, with its SHA-256 in `sha256`, checked when read). The
//! object a replaced item pointed to is deleted after the replacement; a reader that lost
//! that race reads the item again.

use std::io::{Read, Write};

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_s3::primitives::ByteStream;
use sha2::{Digest, Sha256};
use tfreg_core::store::{Document, Expected, RecordId};
use tfreg_core::StoreError;

use crate::dynamo::{conditional_check_failed, failed, key, Item, Table};
use crate::transient::sdk_failure;

/// Compressed documents up to this size are kept in their item.
pub const INLINE_LIMIT: usize = 300 * 1024;
/// A document never decompresses to more than this: anything larger is not one of ours.
const MAX_DOCUMENT: u64 = 256 * 1024 * 1024;
/// Where documents too large for an item are kept in the bucket.
pub const OBJECT_PREFIX: &str = ".tfreg/documents/";

const BODY: &str = "body";
const REVISION: &str = "rev";
const OBJECT: &str = "object";
const SHA256: &str = "sha256";

/// Where documents that outgrow an item go.
#[derive(Clone, Debug)]
pub struct Overflow {
    /// The client that reads and writes the overflow objects.
    pub client: aws_sdk_s3::Client,
    /// The registry's bucket, where they are kept under [`OBJECT_PREFIX`].
    pub bucket: String,
    /// [`INLINE_LIMIT`], lower in tests.
    pub inline_limit: usize,
}

fn gzip(body: &[u8]) -> Result<Vec<u8>, StoreError> {
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 8),
        flate2::Compression::default(),
    );
    encoder
        .write_all(body)
        .and_then(|_| encoder.finish())
        .map_err(|e| StoreError::with_source("cannot compress a document", e))
}

fn gunzip(id: &RecordId, compressed: &[u8]) -> Result<Vec<u8>, StoreError> {
    let mut body = Vec::with_capacity(compressed.len() * 8);
    flate2::read::GzDecoder::new(compressed)
        .take(MAX_DOCUMENT + 1)
        .read_to_end(&mut body)
        .map_err(|e| corrupt(id, e))?;
    if body.len() as u64 > MAX_DOCUMENT {
        return Err(corrupt(id, "it decompresses to more than 256 MiB"));
    }
    Ok(body)
}

fn corrupt(id: &RecordId, e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> StoreError {
    StoreError::with_source(
        format!(
            "the document {} {} is corrupt; `tfreg reindex` makes it again",
            id.partition, id.sort
        ),
        e,
    )
}

/// The object a document's revision is kept in: under a hash of its id, so keys stay short
/// whatever the id.
fn object_key(id: &RecordId, revision: &str) -> String {
    let digest = hex::encode(Sha256::digest(format!("{}\n{}", id.partition, id.sort)));
    format!("{OBJECT_PREFIX}{digest}/{revision}.json.gz")
}

/// A write's condition on the stored document: its expression, names and values.
type Condition = (
    Option<String>,
    Option<std::collections::HashMap<String, String>>,
    Option<Item>,
);

fn condition(expected: Expected<'_>) -> Condition {
    match expected {
        Expected::Anything => (None, None, None),
        Expected::Nothing => (
            Some("attribute_not_exists(#pk)".into()),
            Some([("#pk".into(), "pk".into())].into()),
            None,
        ),
        Expected::Revision(revision) => (
            Some("#rev = :expected".into()),
            Some([("#rev".into(), REVISION.into())].into()),
            Some([(":expected".into(), AttributeValue::S(revision.into()))].into()),
        ),
    }
}

fn id_of(item: &Item) -> Option<RecordId> {
    Some(RecordId {
        partition: string(item, "pk")?.to_owned(),
        sort: string(item, "sk")?.to_owned(),
    })
}

fn string<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(s)) => Some(s),
        _ => None,
    }
}

impl Table {
    pub(crate) async fn get_document(
        &self,
        id: &RecordId,
        overflow: Option<&Overflow>,
    ) -> Result<Option<Document>, StoreError> {
        // A reader that finds the object it was pointed to gone lost a race with a writer
        // that replaced it: the item, read again after a pause (consistently the last
        // time, past a replica that still has the old item), points to the new one.
        for attempt in 0..3 {
            if attempt > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(50 * attempt)).await;
            }
            let out = self
                .client
                .get_item()
                .table_name(&self.name)
                .set_key(Some(key(&id.partition, &id.sort)))
                .consistent_read(self.consistent || attempt == 2)
                .send()
                .await
                .map_err(|e| failed("GetItem", &self.name, e))?;
            let Some(item) = out.item else {
                return Ok(None);
            };
            let revision = string(&item, REVISION)
                .ok_or_else(|| corrupt(id, "its item has no revision"))?
                .to_owned();
            let compressed = match (item.get(BODY), string(&item, OBJECT)) {
                (Some(AttributeValue::B(body)), _) => body.as_ref().to_vec(),
                (_, Some(object)) => {
                    let Some(overflow) = overflow else {
                        return Err(StoreError::new(format!(
                            "the document {} {} is kept in the bucket, which this store was not given",
                            id.partition, id.sort
                        )));
                    };
                    match self.read_object(overflow, object).await? {
                        Some(bytes) => {
                            let expected = string(&item, SHA256).unwrap_or_default();
                            if hex::encode(Sha256::digest(&bytes)) != expected {
                                return Err(corrupt(
                                    id,
                                    format!("{object} is not what was written"),
                                ));
                            }
                            bytes
                        }
                        None => continue,
                    }
                }
                _ => return Err(corrupt(id, "its item has neither a body nor an object")),
            };
            return Ok(Some(Document {
                body: gunzip(id, &compressed)?,
                revision,
            }));
        }
        Err(StoreError::new(format!(
            "the document {} {} kept being replaced while it was read",
            id.partition, id.sort
        )))
    }

    async fn read_object(
        &self,
        overflow: &Overflow,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let out = match overflow
            .client
            .get_object()
            .bucket(&overflow.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) => {
                // Without s3:ListBucket (the API functions have none), S3 answers 403, not
                // 404, for an object that is gone: both mean "read the item again"; a
                // lasting refusal ends as an error after the retries.
                let denied = e.raw_response().is_some_and(|r| r.status().as_u16() == 403);
                if denied || e.as_service_error().is_some_and(|e| e.is_no_such_key()) {
                    return Ok(None);
                }
                return Err(sdk_failure(
                    format!("cannot read s3://{}/{key}", overflow.bucket),
                    e,
                ));
            }
        };
        // The body arrives after the call returned: a connection lost while reading it is
        // as transient as one lost before.
        let bytes = out.body.collect().await.map_err(|e| {
            StoreError::transient(format!("cannot read s3://{}/{key}", overflow.bucket), e)
        })?;
        Ok(Some(bytes.to_vec()))
    }

    async fn delete_object(&self, overflow: &Overflow, key: &str) {
        let deleted = overflow
            .client
            .delete_object()
            .bucket(&overflow.bucket)
            .key(key)
            .send()
            .await;
        if let Err(e) = deleted {
            // Left behind, it costs storage only: nothing points to it.
            tracing::warn!(bucket = overflow.bucket, key, error = %tfreg_core::store::ErrorChain(&e), "could not delete a replaced document");
        }
    }

    pub(crate) async fn put_document(
        &self,
        id: &RecordId,
        body: Option<Vec<u8>>,
        expected: Expected<'_>,
        overflow: Option<&Overflow>,
    ) -> Result<bool, StoreError> {
        let mut written_object = None;
        let old = match body {
            Some(body) => {
                let revision = Document::new_revision();
                let compressed = gzip(&body)?;
                let mut item = key(&id.partition, &id.sort);
                item.insert(REVISION.into(), AttributeValue::S(revision.clone()));
                let limit = overflow.map_or(INLINE_LIMIT, |o| o.inline_limit);
                if compressed.len() <= limit {
                    item.insert(BODY.into(), AttributeValue::B(compressed.into()));
                } else {
                    let Some(overflow) = overflow else {
                        return Err(StoreError::new(format!(
                            "the document {} {} is {} bytes compressed, too large for an item, and this store was given no bucket",
                            id.partition,
                            id.sort,
                            compressed.len()
                        )));
                    };
                    let object = object_key(id, &revision);
                    item.insert(
                        SHA256.into(),
                        AttributeValue::S(hex::encode(Sha256::digest(&compressed))),
                    );
                    overflow
                        .client
                        .put_object()
                        .bucket(&overflow.bucket)
                        .key(&object)
                        .content_type("application/json")
                        .content_encoding("gzip")
                        .body(ByteStream::from(compressed))
                        .send()
                        .await
                        .map_err(|e| {
                            sdk_failure(
                                format!("cannot write s3://{}/{object}", overflow.bucket),
                                e,
                            )
                        })?;
                    item.insert(OBJECT.into(), AttributeValue::S(object.clone()));
                    written_object = Some(object);
                }
                let put = self
                    .client
                    .put_item()
                    .table_name(&self.name)
                    .set_item(Some(item))
                    .return_values(ReturnValue::AllOld);
                let (condition, names, values) = condition(expected);
                let put = put
                    .set_condition_expression(condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    );
                match put.send().await {
                    Ok(out) => out.attributes,
                    Err(e) => {
                        // The SDK retries a write whose answer was lost: if the first try
                        // landed, the item holds this very revision and the write is done.
                        if let Some(aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(failed)) = e.as_service_error() {
                            let current = failed.item.as_ref().and_then(|i| string(i, REVISION));
                            if current == Some(revision.as_str()) {
                                return Ok(true);
                            }
                        }
                        if let (Some(overflow), Some(object)) = (overflow, &written_object) {
                            self.delete_object(overflow, object).await;
                        }
                        if conditional_check_failed(&e) {
                            return Ok(false);
                        }
                        return Err(failed("PutItem", &self.name, e));
                    }
                }
            }
            None => {
                let delete = self
                    .client
                    .delete_item()
                    .table_name(&self.name)
                    .set_key(Some(key(&id.partition, &id.sort)))
                    .return_values(ReturnValue::AllOld);
                let (condition, names, values) = condition(expected);
                let delete = delete
                    .set_condition_expression(condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values);
                match delete.send().await {
                    Ok(out) => out.attributes,
                    Err(e) => {
                        if conditional_check_failed(&e) {
                            return Ok(false);
                        }
                        return Err(failed("DeleteItem", &self.name, e));
                    }
                }
            }
        };
        // The object the replaced revision pointed to is no longer read.
        if let (Some(overflow), Some(old)) = (overflow, old) {
            if let Some(object) = string(&old, OBJECT) {
                if written_object.as_deref() != Some(object) {
                    self.delete_object(overflow, object).await;
                }
            }
        }
        Ok(true)
    }

    /// The id of every document item of one partition (a Query of keys only).
    pub(crate) async fn document_ids_in(
        &self,
        partition: &str,
    ) -> Result<Vec<RecordId>, StoreError> {
        let mut ids = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.name)
                .key_condition_expression("#pk = :pk")
                .projection_expression("#pk, #sk")
                .expression_attribute_names("#pk", "pk")
                .expression_attribute_names("#sk", "sk")
                .expression_attribute_values(":pk", AttributeValue::S(partition.to_owned()))
                .consistent_read(self.consistent)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| failed("Query", &self.name, e))?;
            ids.extend(out.items.unwrap_or_default().iter().filter_map(id_of));
            match out.last_evaluated_key {
                Some(next) if !next.is_empty() => start = Some(next),
                _ => return Ok(ids),
            }
        }
    }

    /// A document's revision, read alone.
    pub(crate) async fn document_revision(
        &self,
        id: &RecordId,
    ) -> Result<Option<String>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.name)
            .set_key(Some(key(&id.partition, &id.sort)))
            .projection_expression("#rev")
            .expression_attribute_names("#rev", REVISION)
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| failed("GetItem", &self.name, e))?;
        Ok(out
            .item
            .as_ref()
            .and_then(|item| string(item, REVISION))
            .map(str::to_owned))
    }

    /// The id of every document item (a Scan of keys only, for a full reindex).
    pub(crate) async fn document_ids(&self) -> Result<Vec<RecordId>, StoreError> {
        let items = self
            .scan_items(|scan| {
                scan.filter_expression("begins_with(#pk, :doc)")
                    .projection_expression("#pk, #sk")
                    .expression_attribute_names("#pk", "pk")
                    .expression_attribute_names("#sk", "sk")
                    .expression_attribute_values(
                        ":doc",
                        AttributeValue::S(tfreg_core::store::partition::DOCUMENTS.into()),
                    )
            })
            .await?;
        Ok(items.iter().filter_map(id_of).collect())
    }
}
