//! One-time sign-in records on the table: partition `grants#code` (authorization codes), sort
//! key the record's id. Taking one is a single conditional `UpdateItem` that marks the item
//! with the taker's own random mark unless another mark is there, so of concurrent takes
//! exactly one gets it; the table's time to live removes every item, taken or not.
//!
//! Marked, not deleted: when a take lands but its answer is lost, the SDK sends the same
//! request again, which finds its own mark and gets the record, where a second `DeleteItem`
//! would find nothing and refuse a sign-in that was fine.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use aws_sdk_dynamodb::Client;
use tfreg_core::identity::grants::{GrantKind, GrantStore, Taken};
use tfreg_core::StoreError;

use crate::dynamo::{conditional_check_failed, failed};

/// The attribute holding the mark of whoever took the record.
const TAKEN_BY: &str = "taken_by";

/// The grant store on the registry's table.
#[derive(Clone, Debug)]
pub struct DynamoGrantStore {
    client: Client,
    table: String,
}

impl DynamoGrantStore {
    /// The grant store on `table`.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

/// The item key of a record: its kind's partition, its id.
fn key(kind: GrantKind, id: &str) -> HashMap<String, AttributeValue> {
    crate::dynamo::key(&format!("grants#{}", kind.name()), id)
}

#[async_trait]
impl GrantStore for DynamoGrantStore {
    async fn put(
        &self,
        kind: GrantKind,
        id: &str,
        doc: String,
        expires_at: u64,
    ) -> Result<(), StoreError> {
        let mut item = key(kind, id);
        item.insert("doc".into(), AttributeValue::S(doc));
        item.insert(
            "expires_at".into(),
            AttributeValue::N(expires_at.to_string()),
        );
        // DynamoDB's time to live removes it a while after; expiry itself is checked on take.
        item.insert("ttl".into(), AttributeValue::N(expires_at.to_string()));
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| failed("PutItem", &self.table, e))?;
        Ok(())
    }

    async fn take(&self, kind: GrantKind, id: &str) -> Result<Option<Taken>, StoreError> {
        let mark = tfreg_core::store::Document::new_revision();
        let taken = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(kind, id)))
            .update_expression("SET #taken = :mark")
            .condition_expression(
                "attribute_exists(#pk) AND (attribute_not_exists(#taken) OR #taken = :mark)",
            )
            .expression_attribute_names("#pk", "pk")
            .expression_attribute_names("#taken", TAKEN_BY)
            .expression_attribute_values(":mark", AttributeValue::S(mark))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        let out = match taken {
            Ok(out) => out,
            // Never there, purged, or taken by someone else.
            Err(e) if conditional_check_failed(&e) => return Ok(None),
            Err(e) => return Err(failed("UpdateItem", &self.table, e)),
        };
        let Some(item) = out.attributes else {
            return Ok(None);
        };
        let doc = match item.get("doc") {
            Some(AttributeValue::S(doc)) => doc.clone(),
            _ => return Err(StoreError::new("a grant item has no `doc`")),
        };
        let expires_at = match item.get("expires_at") {
            Some(AttributeValue::N(n)) => n.parse().unwrap_or(0),
            _ => 0,
        };
        Ok(Some(Taken { doc, expires_at }))
    }
}
