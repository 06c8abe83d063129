//! The metadata and token stores on one DynamoDB table (`pk`, `sk` strings; the record as
//! JSON in `doc`). Every record is its own item, so concurrent indexer invocations writing
//! different files of one version never overwrite each other; a partition is read with one
//! `Query`, following `LastEvaluatedKey` past 1 MB. Never a scan.

use std::collections::HashMap;
use std::time::SystemTime;

use async_trait::async_trait;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use tfreg_core::store::{Document, Expected, MetadataReader, MetadataStore, Record, RecordId};
use tfreg_core::tokens::{purge_at, unix, TokenRecord, TokenStore};
use tfreg_core::StoreError;

const PK: &str = "pk";
const SK: &str = "sk";
const DOC: &str = "doc";
/// Kept outside `doc`, so recording a use can never overwrite a revocation.
const LAST_USED: &str = "last_used_at";
const TOKENS_PARTITION: &str = "tokens";
/// The table's time-to-live attribute (template.yaml), set on token items only: when a
/// token that expired or was revoked may be purged (Unix seconds).
const TTL: &str = "ttl";
const LAST_USED_GRANULARITY_SECS: u64 = 60;

pub(crate) type Item = HashMap<String, AttributeValue>;

/// A failed DynamoDB call, transient when the table was busy or out of reach.
pub(crate) fn failed<E>(action: &str, table: &str, e: SdkError<E, HttpResponse>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    crate::transient::sdk_failure(format!("DynamoDB {action} on table {table} failed"), e)
}

/// Whether a conditional write failed its condition: a lost race, or the write landing
/// already on a try whose answer was lost. Never an error in itself.
pub(crate) fn conditional_check_failed<E: ProvideErrorMetadata>(
    e: &SdkError<E, HttpResponse>,
) -> bool {
    e.as_service_error()
        .is_some_and(|e| e.code() == Some("ConditionalCheckFailedException"))
}

pub(crate) fn key(partition: &str, sort: &str) -> Item {
    HashMap::from([
        (PK.to_owned(), AttributeValue::S(partition.to_owned())),
        (SK.to_owned(), AttributeValue::S(sort.to_owned())),
    ])
}

fn doc_of(item: &Item, table: &str) -> Result<String, StoreError> {
    match item.get(DOC) {
        Some(AttributeValue::S(doc)) => Ok(doc.clone()),
        _ => Err(StoreError::new(format!(
            "an item of table {table} has no `doc`"
        ))),
    }
}

/// The pieces both stores share: one table, one partition read at a time.
#[derive(Clone, Debug)]
pub(crate) struct Table {
    pub(crate) client: Client,
    pub(crate) name: String,
    /// Strongly consistent queries: what the indexer needs to see other invocations'
    /// writes (its write-then-look-again checks rely on it); the request path does without.
    pub(crate) consistent: bool,
}

impl Table {
    async fn put(
        &self,
        partition: &str,
        sort: &str,
        doc: String,
        extra: Vec<(&str, AttributeValue)>,
    ) -> Result<(), StoreError> {
        let mut item = key(partition, sort);
        item.insert(DOC.to_owned(), AttributeValue::S(doc));
        for (name, value) in extra {
            item.insert(name.to_owned(), value);
        }
        self.client
            .put_item()
            .table_name(&self.name)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| failed("PutItem", &self.name, e))?;
        Ok(())
    }

    /// PutItem on condition that no item has the key; `false` when one had.
    async fn put_new(&self, partition: &str, sort: &str, doc: String) -> Result<bool, StoreError> {
        let mut item = key(partition, sort);
        item.insert(DOC.to_owned(), AttributeValue::S(doc));
        let put = self
            .client
            .put_item()
            .table_name(&self.name)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .send()
            .await;
        match put {
            Ok(_) => Ok(true),
            Err(e) if conditional_check_failed(&e) => Ok(false),
            Err(e) => Err(failed("PutItem", &self.name, e)),
        }
    }

    pub(crate) async fn get(
        &self,
        partition: &str,
        sort: &str,
    ) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.name)
            .set_key(Some(key(partition, sort)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| failed("GetItem", &self.name, e))?;
        Ok(out.item)
    }

    async fn delete(&self, partition: &str, sort: &str) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.name)
            .set_key(Some(key(partition, sort)))
            .send()
            .await
            .map_err(|e| failed("DeleteItem", &self.name, e))?;
        Ok(())
    }

    /// Every item of a partition, in sort-key order; with a `prefix`, only those whose sort
    /// key starts with it (a key condition: nothing else is read).
    pub(crate) async fn query(
        &self,
        partition: &str,
        prefix: Option<&str>,
    ) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let query = self
                .client
                .query()
                .table_name(&self.name)
                .expression_attribute_names("#pk", PK)
                .expression_attribute_values(":pk", AttributeValue::S(partition.to_owned()));
            let query = match prefix {
                None => query.key_condition_expression("#pk = :pk"),
                Some(prefix) => query
                    .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                    .expression_attribute_names("#sk", SK)
                    .expression_attribute_values(":prefix", AttributeValue::S(prefix.to_owned())),
            };
            let out = query
                .consistent_read(self.consistent)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| failed("Query", &self.name, e))?;
            items.extend(out.items.unwrap_or_default());
            match out.last_evaluated_key {
                Some(next) if !next.is_empty() => start = Some(next),
                _ => return Ok(items),
            }
        }
    }

    /// Every record's item: outside the tokens', the sign-in grants', the download counts'
    /// ([`crate::usage`]) and the documents' partitions. For a full reindex only, never on
    /// the request path (a Scan reads the whole table).
    async fn scan_records(&self) -> Result<Vec<Item>, StoreError> {
        self.scan_items(|scan| {
            scan.filter_expression(
                "#pk <> :tokens AND NOT begins_with(#pk, :grants) AND NOT begins_with(#pk, :doc) \
                 AND NOT begins_with(#pk, :usage)",
            )
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":tokens", AttributeValue::S(TOKENS_PARTITION.into()))
            .expression_attribute_values(":grants", AttributeValue::S("grants#".into()))
            .expression_attribute_values(":usage", AttributeValue::S(crate::usage::PREFIX.into()))
            .expression_attribute_values(
                ":doc",
                AttributeValue::S(tfreg_core::store::partition::DOCUMENTS.into()),
            )
        })
        .await
    }

    /// Every item a Scan that `filter` shapes returns, page after page (consistent reads).
    pub(crate) async fn scan_items(
        &self,
        filter: impl Fn(
            aws_sdk_dynamodb::operation::scan::builders::ScanFluentBuilder,
        ) -> aws_sdk_dynamodb::operation::scan::builders::ScanFluentBuilder,
    ) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let scan = self.client.scan().table_name(&self.name);
            let out = filter(scan)
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| failed("Scan", &self.name, e))?;
            items.extend(out.items.unwrap_or_default());
            match out.last_evaluated_key {
                Some(next) if !next.is_empty() => start = Some(next),
                _ => return Ok(items),
            }
        }
    }
}

/// Creates the table as `template.yaml` defines it (for emulators and tests; in AWS the
/// template creates it), and waits until it is active.
pub async fn create_table(client: &Client, table: &str) -> Result<(), StoreError> {
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    };
    let attribute = |name: &str| {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .expect("complete attribute definition")
    };
    let key = |name: &str, kind| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(kind)
            .build()
            .expect("complete key schema")
    };
    client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute(PK))
        .attribute_definitions(attribute(SK))
        .key_schema(key(PK, KeyType::Hash))
        .key_schema(key(SK, KeyType::Range))
        .send()
        .await
        .map_err(|e| failed("CreateTable", table, e))?;
    Ok(())
}

/// The metadata store on the table (documents too large for an item in the bucket).
#[derive(Clone, Debug)]
pub struct DynamoMetadataStore {
    table: Table,
    overflow: Option<crate::documents::Overflow>,
}

impl DynamoMetadataStore {
    /// The store on `table`: eventually consistent queries, and no bucket for documents too
    /// large for an item ([`Self::with_bucket`] gives one).
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            table: Table {
                client,
                name: table.into(),
                consistent: false,
            },
            overflow: None,
        }
    }

    /// Keeps documents whose compressed form is over `inline_limit` bytes
    /// ([`crate::documents::INLINE_LIMIT`] but in tests) in `bucket`.
    pub fn with_bucket(
        mut self,
        client: aws_sdk_s3::Client,
        bucket: impl Into<String>,
        inline_limit: usize,
    ) -> Self {
        self.overflow = Some(crate::documents::Overflow {
            client,
            bucket: bucket.into(),
            inline_limit,
        });
        self
    }

    /// Queries read every write acknowledged before them (twice the read cost): for the
    /// indexer, whose concurrent invocations must see each other's records.
    pub fn with_consistent_reads(mut self) -> Self {
        self.table.consistent = true;
        self
    }

    /// Stores many records, 25 to a `BatchWriteItem` (what it takes), retrying what DynamoDB
    /// leaves unprocessed: for loading a table in bulk (seeding, restoring), not indexing.
    pub async fn put_batch(&self, records: Vec<Record>) -> Result<(), StoreError> {
        use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
        let table = &self.table.name;
        let mut requests = Vec::with_capacity(records.len());
        for record in records {
            let RecordId { partition, sort } = record.id();
            let doc = serde_json::to_string(&record)
                .map_err(|e| StoreError::with_source("cannot encode a record", e))?;
            let mut item = key(&partition, &sort);
            item.insert(DOC.to_owned(), AttributeValue::S(doc));
            let put = PutRequest::builder()
                .set_item(Some(item))
                .build()
                .map_err(|e| StoreError::with_source("cannot build a put request", e))?;
            requests.push(WriteRequest::builder().put_request(put).build());
        }
        for chunk in requests.chunks(25) {
            let mut pending = chunk.to_vec();
            for attempt in 0.. {
                if pending.is_empty() {
                    break;
                }
                if attempt == 10 {
                    return Err(StoreError::new(format!(
                        "DynamoDB left {} writes to table {table} unprocessed ten times in a row",
                        pending.len()
                    )));
                }
                let out = self
                    .table
                    .client
                    .batch_write_item()
                    .request_items(table, pending)
                    .send()
                    .await
                    .map_err(|e| failed("BatchWriteItem", table, e))?;
                pending = out
                    .unprocessed_items
                    .and_then(|mut left| left.remove(table))
                    .unwrap_or_default();
                if !pending.is_empty() {
                    tokio::time::sleep(std::time::Duration::from_millis(50 << attempt.min(5)))
                        .await;
                }
            }
        }
        Ok(())
    }

    fn decode(&self, item: &Item) -> Result<Record, StoreError> {
        let doc = doc_of(item, &self.table.name)?;
        serde_json::from_str(&doc).map_err(|e| {
            StoreError::with_source(
                format!("an item of table {} is not a tfreg record", self.table.name),
                e,
            )
        })
    }
}

#[async_trait]
impl MetadataReader for DynamoMetadataStore {
    async fn get(&self, id: &RecordId) -> Result<Option<Record>, StoreError> {
        self.table
            .get(&id.partition, &id.sort)
            .await?
            .map(|item| self.decode(&item))
            .transpose()
    }

    async fn query(&self, partition: &str) -> Result<Vec<Record>, StoreError> {
        self.table
            .query(partition, None)
            .await?
            .iter()
            .map(|item| self.decode(item))
            .collect()
    }

    async fn query_prefix(&self, partition: &str, prefix: &str) -> Result<Vec<Record>, StoreError> {
        self.table
            .query(partition, Some(prefix))
            .await?
            .iter()
            .map(|item| self.decode(item))
            .collect()
    }

    async fn get_document(&self, id: &RecordId) -> Result<Option<Document>, StoreError> {
        self.table.get_document(id, self.overflow.as_ref()).await
    }

    /// A shared table cannot tell cheaply whether anything changed.
    fn generation(&self) -> Option<u64> {
        None
    }
}

#[async_trait]
impl MetadataStore for DynamoMetadataStore {
    async fn put(&self, record: Record) -> Result<(), StoreError> {
        let RecordId { partition, sort } = record.id();
        let doc = serde_json::to_string(&record)
            .map_err(|e| StoreError::with_source("cannot encode a record", e))?;
        self.table.put(&partition, &sort, doc, vec![]).await
    }

    async fn put_new(&self, record: Record) -> Result<bool, StoreError> {
        let RecordId { partition, sort } = record.id();
        let doc = serde_json::to_string(&record)
            .map_err(|e| StoreError::with_source("cannot encode a record", e))?;
        self.table.put_new(&partition, &sort, doc).await
    }

    async fn delete(&self, id: &RecordId) -> Result<(), StoreError> {
        self.table.delete(&id.partition, &id.sort).await
    }

    async fn put_document(
        &self,
        id: &RecordId,
        body: Option<Vec<u8>>,
        expected: Expected<'_>,
    ) -> Result<bool, StoreError> {
        self.table
            .put_document(id, body, expected, self.overflow.as_ref())
            .await
    }

    async fn document_ids(&self) -> Result<Vec<RecordId>, StoreError> {
        self.table.document_ids().await
    }

    async fn document_ids_in(&self, partition: &str) -> Result<Vec<RecordId>, StoreError> {
        self.table.document_ids_in(partition).await
    }

    async fn document_revision(&self, id: &RecordId) -> Result<Option<String>, StoreError> {
        self.table.document_revision(id).await
    }

    async fn scan(&self) -> Result<Vec<Record>, StoreError> {
        self.table
            .scan_records()
            .await?
            .iter()
            .map(|item| self.decode(item))
            .collect()
    }
}

/// The token store on the same table, partition `tokens`.
#[derive(Clone, Debug)]
pub struct DynamoTokenStore {
    table: Table,
}

impl DynamoTokenStore {
    /// The token store on `table`, the registry's one table.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            table: Table {
                client,
                name: table.into(),
                // A token is read by GetItem, which is consistent already.
                consistent: false,
            },
        }
    }

    fn decode(&self, item: &Item) -> Result<TokenRecord, StoreError> {
        let doc = doc_of(item, &self.table.name)?;
        let mut record: TokenRecord = serde_json::from_str(&doc)
            .map_err(|e| StoreError::with_source("a token item is corrupt", e))?;
        if let Some(AttributeValue::N(n)) = item.get(LAST_USED) {
            record.last_used_at = n.parse().ok().max(record.last_used_at);
        }
        Ok(record)
    }
}

#[async_trait]
impl TokenStore for DynamoTokenStore {
    async fn get(&self, id: &str) -> Result<Option<TokenRecord>, StoreError> {
        self.table
            .get(TOKENS_PARTITION, id)
            .await?
            .map(|item| self.decode(&item))
            .transpose()
    }

    async fn put(&self, record: TokenRecord) -> Result<(), StoreError> {
        let doc = serde_json::to_string(&record)
            .map_err(|e| StoreError::with_source("cannot encode a token", e))?;
        let last_used = record
            .last_used_at
            .map(|t| (LAST_USED, AttributeValue::N(t.to_string())));
        // DynamoDB's time to live deletes the item a while after the token ended.
        let expiry = purge_at(&record).map(|t| (TTL, AttributeValue::N(t.to_string())));
        let extra = last_used.into_iter().chain(expiry).collect();
        self.table
            .put(TOKENS_PARTITION, &record.id, doc, extra)
            .await
    }

    async fn list(&self) -> Result<Vec<TokenRecord>, StoreError> {
        self.table
            .query(TOKENS_PARTITION, None)
            .await?
            .iter()
            .map(|item| self.decode(item))
            .collect()
    }

    async fn record_use(&self, id: &str, at: SystemTime) -> Result<(), StoreError> {
        let now = unix(at);
        // One conditional update: only when the stored time is older than the granularity,
        // so busy tokens cost no writes, and only the `last_used_at` attribute is touched.
        let result = self
            .table
            .client
            .update_item()
            .table_name(&self.table.name)
            .set_key(Some(key(TOKENS_PARTITION, id)))
            .update_expression("SET #lu = :now")
            .condition_expression(
                "attribute_exists(#pk) AND (attribute_not_exists(#lu) OR #lu < :stale)",
            )
            .expression_attribute_names("#lu", LAST_USED)
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":now", AttributeValue::N(now.to_string()))
            .expression_attribute_values(
                ":stale",
                AttributeValue::N(now.saturating_sub(LAST_USED_GRANULARITY_SECS).to_string()),
            )
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if conditional_check_failed(&e) => Ok(()),
            Err(e) => Err(failed("UpdateItem", &self.table.name, e)),
        }
    }
}
