//! S3 event notifications as the indexer receives them: the object keys they name, decoded
//! once here for the indexer function and for `tfreg redrive` (which reads the same events
//! back from the indexer's dead-letter queue).

use serde::Deserialize;

/// The largest event this reads: an SQS message's own limit (256 KiB), which any S3 event
/// parked in a dead-letter queue fits in.
pub const MAX_EVENT_BYTES: usize = 256 * 1024;

/// Why a text is not an S3 event notification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EventError(String);

impl EventError {
    fn new(message: impl Into<String>) -> EventError {
        EventError(message.into())
    }
}

/// One object an event names: its key, decoded, and the event's kind (a hint only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventKey {
    /// The object's key, decoded.
    pub key: String,
    /// `ObjectCreated:Put`, `ObjectRemoved:Delete`...; `unknown` when absent.
    pub kind: String,
}

/// An S3 object key as event notifications give it: URL-encoded, spaces as `+`.
pub fn decode_key(raw: &str) -> Result<String, EventError> {
    let spaced = raw.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8()
        .map(|k| k.into_owned())
        .map_err(|e| EventError::new(format!("the event's object key {raw:?} is not UTF-8: {e}")))
}

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "Records")]
    records: Vec<Record>,
}

#[derive(Deserialize)]
struct Record {
    #[serde(rename = "eventName")]
    event_name: Option<String>,
    s3: S3Entity,
}

#[derive(Deserialize)]
struct S3Entity {
    bucket: Named,
    object: Object,
}

#[derive(Deserialize)]
struct Named {
    name: Option<String>,
}

#[derive(Deserialize)]
struct Object {
    key: Option<String>,
}

/// The keys of an S3 event notification's JSON `text` about `bucket`. An event about another
/// bucket is an error (it was not meant for this registry), and so is a text that is not an
/// S3 event: anything larger than [`MAX_EVENT_BYTES`], not JSON, without `Records`, or with
/// a record lacking its bucket or key. S3's test event (`"Event": "s3:TestEvent"`) names no
/// key: it has none.
pub fn parse(text: &str, bucket: &str) -> Result<Vec<EventKey>, EventError> {
    if text.len() > MAX_EVENT_BYTES {
        return Err(EventError::new(format!(
            "{} bytes, more than an S3 event may have ({MAX_EVENT_BYTES})",
            text.len()
        )));
    }
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| EventError::new(format!("not JSON: {e}")))?;
    if value.get("Event").and_then(|e| e.as_str()) == Some("s3:TestEvent") {
        return Ok(Vec::new());
    }
    let event: Event = serde_json::from_value(value)
        .map_err(|e| EventError::new(format!("not an S3 event notification: {e}")))?;
    let mut keys = Vec::with_capacity(event.records.len());
    for (i, record) in event.records.into_iter().enumerate() {
        let event_bucket = record.s3.bucket.name.unwrap_or_default();
        if event_bucket != bucket {
            return Err(EventError::new(format!(
                "record {i} is about the bucket {event_bucket:?}, not {bucket:?}"
            )));
        }
        let raw = record
            .s3
            .object
            .key
            .ok_or_else(|| EventError::new(format!("record {i} names no object key")))?;
        keys.push(EventKey {
            key: decode_key(&raw)?,
            kind: record.event_name.unwrap_or_else(|| "unknown".into()),
        });
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(bucket: &str, key: &str) -> String {
        serde_json::json!({"Records": [{
            "eventName": "ObjectCreated:Put",
            "s3": {"bucket": {"name": bucket}, "object": {"key": key, "size": 1}},
        }]})
        .to_string()
    }

    #[test]
    fn keys_are_decoded_as_s3_encodes_them() {
        let keys = parse(&event("b", "modules/a/b/c/1.0.0%2Bbuild.1+x.tar.gz"), "b").unwrap();
        assert_eq!(
            keys,
            vec![EventKey {
                key: "modules/a/b/c/1.0.0+build.1 x.tar.gz".into(),
                kind: "ObjectCreated:Put".into(),
            }]
        );
        assert_eq!(decode_key("a%20b+c").unwrap(), "a b c");
        assert!(decode_key("%FF").unwrap_err().to_string().contains("UTF-8"));
    }

    #[test]
    fn what_is_not_an_s3_event_is_refused_with_its_reason() {
        let refused = |text: &str| parse(text, "b").unwrap_err().to_string();
        assert!(refused("hello").contains("not JSON"));
        assert!(refused("{}").contains("not an S3 event"));
        assert!(refused(r#"{"Records": [{"s3": {}}]}"#).contains("not an S3 event"));
        assert!(refused(&event("other", "modules/x")).contains("\"other\""));
        let no_key = r#"{"Records": [{"s3": {"bucket": {"name": "b"}, "object": {}}}]}"#;
        assert!(refused(no_key).contains("no object key"));
        let huge = format!("{{\"pad\": \"{}\"}}", "x".repeat(MAX_EVENT_BYTES));
        assert!(refused(&huge).contains("more than"));
        assert_eq!(parse(r#"{"Event": "s3:TestEvent"}"#, "b").unwrap(), vec![]);
    }
}
