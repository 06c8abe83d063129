//! S3 event notifications as the indexer receives them: the object keys they name, decoded
//! once here for the indexer function and for `tfreg redrive` (which reads the same events
//! back from the indexer's dead-letter queue), with who uploaded each object: the record's
//! `userIdentity.principalId` (`AWS:AIDA...` for an IAM user, `AWS:AROA...:session` for an
//! assumed role) and the object revision it is about.

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

/// The longest principal ID kept (IAM's are far shorter; a role session name is at most
/// 64 characters): a longer or unprintable one is treated as unknown.
pub const MAX_PRINCIPAL_LEN: usize = 256;

/// One object an event names: its key, decoded, and the event's kind (a hint only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventKey {
    /// The object's key, decoded.
    pub key: String,
    /// `ObjectCreated:Put`, `ObjectRemoved:Delete`...; `unknown` when absent.
    pub kind: String,
    /// Who made the request, as S3 reports it (`userIdentity.principalId`); `None` when the
    /// record has none, or one that is not a printable principal ID.
    pub principal: Option<String>,
    /// The object revision the record is about, as the artifact store names revisions
    /// ([`object_revision`]); `None` for a removal or a record without version or ETag.
    pub revision: Option<String>,
    /// When S3 took the request (`eventTime`, RFC 3339), if given and well formed.
    pub time: Option<String>,
}

impl EventKey {
    /// A key with nothing known of who uploaded it (a key listed, not an event's).
    pub fn bare(key: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            kind: kind.into(),
            principal: None,
            revision: None,
            time: None,
        }
    }

    /// Who uploaded the object, for the indexer, when the record says it of a created
    /// object's revision.
    pub fn upload(&self) -> Option<crate::index::Upload> {
        if !self.kind.starts_with("ObjectCreated") {
            return None;
        }
        Some(crate::index::Upload {
            principal: self.principal.clone()?,
            revision: self.revision.clone()?,
            time: self.time.clone(),
        })
    }
}

/// An S3 object's revision as the S3 artifact store names it: `v:<version id>` in a
/// versioned bucket, else `e:"<ETag>"` (quoted, as HeadObject gives it; events give it
/// bare).
pub fn object_revision(version_id: Option<&str>, e_tag: Option<&str>) -> Option<String> {
    match (version_id, e_tag) {
        // "null" is the version id of objects written before versioning was enabled.
        (Some(v), _) if !v.is_empty() && v != "null" => Some(format!("v:{v}")),
        (_, Some(e)) if !e.trim_matches('"').is_empty() => {
            Some(format!("e:\"{}\"", e.trim_matches('"')))
        }
        _ => None,
    }
}

/// A principal ID as kept: printable ASCII without spaces, at most [`MAX_PRINCIPAL_LEN`]
/// bytes; anything else is not a principal S3 reports, and is treated as unknown.
pub fn principal_id(raw: &str) -> Option<String> {
    let ok = !raw.is_empty()
        && raw.len() <= MAX_PRINCIPAL_LEN
        && raw.chars().all(|c| c.is_ascii_graphic());
    ok.then(|| raw.to_owned())
}

/// An event time as kept: RFC 3339 characters only, at most 40 bytes.
fn event_time(raw: &str) -> Option<String> {
    let ok = !raw.is_empty()
        && raw.len() <= 40
        && raw
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '-' | ':' | '.' | 'T' | 'Z' | '+'));
    ok.then(|| raw.to_owned())
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
    #[serde(rename = "eventTime", default)]
    event_time: Option<String>,
    #[serde(rename = "userIdentity", default)]
    user_identity: Option<UserIdentity>,
    s3: S3Entity,
}

#[derive(Deserialize)]
struct UserIdentity {
    #[serde(rename = "principalId", default)]
    principal_id: Option<String>,
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
    #[serde(rename = "versionId", default)]
    version_id: Option<String>,
    #[serde(rename = "eTag", default)]
    e_tag: Option<String>,
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
        let principal = record
            .user_identity
            .and_then(|u| u.principal_id)
            .and_then(|p| principal_id(&p));
        keys.push(EventKey {
            key: decode_key(&raw)?,
            kind: record.event_name.unwrap_or_else(|| "unknown".into()),
            principal,
            revision: object_revision(
                record.s3.object.version_id.as_deref(),
                record.s3.object.e_tag.as_deref(),
            ),
            time: record.event_time.as_deref().and_then(event_time),
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
            vec![EventKey::bare(
                "modules/a/b/c/1.0.0+build.1 x.tar.gz",
                "ObjectCreated:Put"
            )]
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

    fn repo_event(name: &str) -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../events/");
        std::fs::read_to_string(format!("{path}{name}")).unwrap()
    }

    #[test]
    fn the_uploader_and_revision_come_from_a_real_event() {
        let keys = parse(&repo_event("s3-put-module.json"), "tfreg-artifacts").unwrap();
        let upload = keys[0].upload().unwrap();
        assert_eq!(upload.principal, "AWS:AIDAEXAMPLE");
        assert_eq!(upload.revision, "v:3HL4kqtJlcpXroDTDmJ-rmSpXd3dIbrHY");
        assert_eq!(upload.time.as_deref(), Some("2026-11-22T03:00:00.000Z"));
        // A removal names who removed it, but uploads nothing.
        let removed = parse(&repo_event("s3-delete-module.json"), "tfreg-artifacts").unwrap();
        assert_eq!(removed[0].principal.as_deref(), Some("AWS:AIDAEXAMPLE"));
        assert_eq!(removed[0].upload(), None);
    }

    #[test]
    fn an_event_without_a_usable_identity_has_an_unknown_uploader() {
        let with = |identity: serde_json::Value, object: serde_json::Value| {
            let mut record = serde_json::json!({
                "eventName": "ObjectCreated:Put",
                "eventTime": "not a time \u{1b}[31m",
                "s3": {"bucket": {"name": "b"}, "object": object},
            });
            if !identity.is_null() {
                record["userIdentity"] = identity;
            }
            let text = serde_json::json!({ "Records": [record] }).to_string();
            parse(&text, "b").unwrap().remove(0)
        };
        let object = serde_json::json!({"key": "modules/a/b/c/1.0.0.zip", "eTag": "abc"});
        let none = with(serde_json::Value::Null, object.clone());
        assert_eq!((none.principal.clone(), none.time.clone()), (None, None));
        assert_eq!(none.revision.as_deref(), Some("e:\"abc\""));
        assert_eq!(none.upload(), None);
        assert_eq!(with(serde_json::json!({}), object.clone()).principal, None);
        let hostile = [
            "x".repeat(MAX_PRINCIPAL_LEN + 1),
            "AWS:A B".into(),
            "AWS:\u{1b}[2J".into(),
            String::new(),
        ];
        for principal in hostile {
            let key = with(
                serde_json::json!({"principalId": principal}),
                object.clone(),
            );
            assert_eq!(key.principal, None, "{principal:?}");
        }
        let role = with(
            serde_json::json!({"principalId": "AWS:AROAEXAMPLE:ci-42"}),
            serde_json::json!({"key": "k", "versionId": "null", "eTag": "\"q\""}),
        );
        let upload = role.upload().unwrap();
        assert_eq!(upload.principal, "AWS:AROAEXAMPLE:ci-42");
        assert_eq!(upload.revision, "e:\"q\"");
        // Neither version nor ETag: the revision is unknown, so nothing is recorded.
        let bare = with(
            serde_json::json!({"principalId": "AWS:AIDAEXAMPLE"}),
            serde_json::json!({"key": "k"}),
        );
        assert_eq!(bare.upload(), None);
        // A principal of the wrong type is not an event S3 sends.
        let typed = r#"{"Records": [{"userIdentity": {"principalId": 7}, "s3": {"bucket": {"name": "b"}, "object": {"key": "k"}}}]}"#;
        assert!(parse(typed, "b")
            .unwrap_err()
            .to_string()
            .contains("not an S3 event"));
    }
}
