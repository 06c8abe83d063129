//! S3 event notifications as AWS sends them to the functions: keys URL-encoded, with the
//! object's size, ETag, version id and a sequencer, and who uploaded it
//! (`userIdentity.principalId`); one record per event unless batched.

use serde_json::{json, Value};

use super::Stack;

/// The principal events name for objects not uploaded with [`Stack::upload_as`]: an IAM
/// user's, as S3 reports it.
pub const PUBLISHER: &str = "AWS:AIDASTACKPUBLISHER";

impl Stack {
    /// An S3 event for the object's current state (created, or removed if it is gone).
    pub fn s3_event(&self, key: &str, sequence: usize) -> String {
        let head = self.s3.head_object().bucket(&self.bucket).key(key);
        let record = match self.runtime.block_on(head.send()) {
            Ok(out) => {
                let version = out.version_id().unwrap_or("null");
                let mut record = created_record(
                    key,
                    out.content_length().unwrap_or(0),
                    out.e_tag().unwrap_or(""),
                    version,
                    sequence,
                );
                let uploaders = self.uploaders.lock().unwrap();
                if let Some(principal) = uploaders.get(&(key.to_owned(), version.to_owned())) {
                    record["principalId"] = json!(principal);
                }
                record
            }
            Err(_) => json!({
                "eventName": "ObjectRemoved:DeleteMarkerCreated",
                "object": {
                    "key": s3_event_key(key),
                    "sequencer": format!("{:016X}", 0x0063_0000_0000_0000u64 + sequence as u64),
                },
            }),
        };
        self.s3_event_of(&[record])
    }

    /// An event of several records (from [`created_record`] or [`Stack::s3_event`]'s), as
    /// a batch of notifications reaches one invocation.
    pub(super) fn s3_event_of(&self, records: &[Value]) -> String {
        let records: Vec<Value> = records
            .iter()
            .map(|record| {
                json!({
                    "eventVersion": "2.1",
                    "eventSource": "aws:s3",
                    "awsRegion": "us-east-1",
                    "eventTime": "2026-11-23T00:00:00.000Z",
                    "eventName": record["eventName"],
                    "userIdentity": {
                        "principalId": record.get("principalId").unwrap_or(&json!(PUBLISHER)),
                    },
                    "requestParameters": {"sourceIPAddress": "127.0.0.1"},
                    "responseElements": {"x-amz-request-id": "STACK", "x-amz-id-2": "STACK"},
                    "s3": {
                        "s3SchemaVersion": "1.0",
                        "configurationId": "tfreg",
                        "bucket": {
                            "name": self.bucket,
                            "ownerIdentity": {"principalId": "OWNER"},
                            "arn": format!("arn:aws:s3:::{}", self.bucket),
                        },
                        "object": record["object"],
                    },
                })
            })
            .collect();
        json!({ "Records": records }).to_string()
    }
}

/// What an event says of a created object: its kind and the object's fields.
pub(super) fn created_record(
    key: &str,
    size: i64,
    e_tag: &str,
    version_id: &str,
    sequence: usize,
) -> Value {
    json!({
        "eventName": "ObjectCreated:Put",
        "object": {
            "key": s3_event_key(key),
            "size": size,
            "eTag": e_tag.trim_matches('"'),
            "versionId": version_id,
            "sequencer": format!("{:016X}", 0x0062_0000_0000_0000u64 + sequence as u64),
        },
    })
}

/// A key as S3 event notifications carry it: URL-encoded, spaces as `+`.
pub fn s3_event_key(key: &str) -> String {
    const KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~')
        .remove(b'/')
        .remove(b' ');
    percent_encoding::utf8_percent_encode(key, KEEP)
        .to_string()
        .replace(' ', "+")
}
