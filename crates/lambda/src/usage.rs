//! The usage function: CloudWatch Logs subscription batches of the modules' and providers'
//! download lines ([`crate::download_log`]) in, download counters in the table out
//! ([`tfreg_aws::usage`]).
//!
//! A batch is untrusted text: it is decoded within bounds (its gzip unpacked to at most
//! [`MAX_BATCH_BYTES`], each line at most [`MAX_LINE_BYTES`]), and a line that is not a
//! download line of this shape, or whose day is not its log event's, is skipped and counted
//! in the invocation's log line, never an error. Only the table's failures fail the
//! invocation, so that Lambda (and CloudWatch Logs) deliver the batch again; the batch's
//! markers make that delivery count each download once.

use std::io::Read;

use base64::Engine;
use lambda_runtime::{service_fn, LambdaEvent};
use serde::Deserialize;
use tfreg_aws::usage::{DynamoUsage, Recorded, Tallies};
use tfreg_core::usage::day_of;

use crate::download_log::{DownloadLine, LINE_VERSION};
use crate::settings::UsageSettings;
use crate::{configure, error_chain, init_tracing, Error};

/// The most a batch unpacks to (CloudWatch Logs sends at most about 1 MB of events a batch).
pub const MAX_BATCH_BYTES: u64 = 8 << 20;
/// The longest download line read (they are a few hundred bytes).
pub const MAX_LINE_BYTES: usize = 4096;

/// The event CloudWatch Logs invokes the function with: `awslogs.data`, the batch as
/// base64 of gzip of JSON.
#[derive(Debug, Deserialize)]
pub struct LogsEvent {
    /// The batch.
    pub awslogs: AwsLogs,
}

/// `awslogs` of a [`LogsEvent`].
#[derive(Debug, Deserialize)]
pub struct AwsLogs {
    /// Base64 of the gzipped batch.
    pub data: String,
}

/// What one batch did, as the invocation answers and logs it.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BatchSummary {
    /// Log events in the batch.
    pub events: usize,
    /// Downloads counted from them.
    pub downloads: usize,
    /// Lines skipped: not a download line, too long, or dated another day than their event.
    pub skipped: usize,
    /// Transactions written.
    pub written: usize,
    /// Transactions found written already (the batch was delivered before).
    pub repeated: usize,
}

/// The entry point of the usage function.
pub async fn run_usage() -> Result<(), Error> {
    init_tracing();
    let config = configure::<UsageSettings>().await?;
    let aws = crate::connect_aws(crate::Function::Usage).await?;
    let usage = aws.usage(&config.table);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<LogsEvent>| {
        let usage = usage.clone();
        async move { handle_logs_event(&usage, event.payload).await }
    }))
    .await
}

/// Counts the downloads of one subscription batch, once however often it is delivered.
pub async fn handle_logs_event(
    usage: &DynamoUsage,
    event: LogsEvent,
) -> Result<BatchSummary, Error> {
    let batch = match decode(&event.awslogs.data) {
        Ok(batch) => batch,
        Err(problem) => {
            // Delivering it again would not help: it is dropped, and said so.
            tracing::error!(
                problem,
                "a subscription batch that cannot be read was dropped"
            );
            return Ok(BatchSummary::default());
        }
    };
    let (batch_id, tallies, mut summary) = fold(&batch);
    if let Some(batch_id) = batch_id.filter(|_| !tallies.is_empty()) {
        let Recorded {
            written, repeated, ..
        } = usage.record(&batch_id, &tallies).await.map_err(|e| {
            let error = error_chain(&e);
            tracing::error!(error, "could not count a batch; it is delivered again");
            Error::from(error)
        })?;
        summary.written = written;
        summary.repeated = repeated;
    }
    tracing::info!(
        log_group = batch.log_group,
        events = summary.events,
        downloads = summary.downloads,
        skipped = summary.skipped,
        written = summary.written,
        repeated = summary.repeated,
        "counted a batch"
    );
    Ok(summary)
}

/// A subscription batch as CloudWatch Logs sends it (`DATA_MESSAGE`; its first
/// `CONTROL_MESSAGE`, sent when the filter is made, has no download).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Batch {
    /// `DATA_MESSAGE` or `CONTROL_MESSAGE`.
    #[serde(default)]
    pub message_type: String,
    /// The log group the events are from.
    #[serde(default)]
    pub log_group: String,
    /// The events.
    #[serde(default)]
    pub log_events: Vec<LogEvent>,
}

/// One log event of a [`Batch`].
#[derive(Debug, Deserialize)]
pub struct LogEvent {
    /// Its id, unique and the same in every delivery.
    #[serde(default)]
    pub id: String,
    /// When it was logged (milliseconds since 1970).
    #[serde(default)]
    pub timestamp: i64,
    /// The line.
    #[serde(default)]
    pub message: String,
}

/// The batch in `data` (base64 of gzip of JSON), unpacked within [`MAX_BATCH_BYTES`].
pub fn decode(data: &str) -> Result<Batch, String> {
    let packed = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("awslogs.data is not base64: {e}"))?;
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(packed.as_slice())
        .take(MAX_BATCH_BYTES + 1)
        .read_to_end(&mut json)
        .map_err(|e| format!("awslogs.data is not gzip: {e}"))?;
    if json.len() as u64 > MAX_BATCH_BYTES {
        return Err(format!(
            "awslogs.data unpacks to more than {MAX_BATCH_BYTES} bytes"
        ));
    }
    serde_json::from_slice(&json).map_err(|e| format!("awslogs.data is not a log batch: {e}"))
}

/// The batch's id (its log group and first event's id), its downloads' tallies, and how
/// many lines were counted and skipped.
pub fn fold(batch: &Batch) -> (Option<String>, Tallies, BatchSummary) {
    let mut tallies = Tallies::default();
    let mut summary = BatchSummary {
        events: batch.log_events.len(),
        ..BatchSummary::default()
    };
    if batch.message_type != "DATA_MESSAGE" {
        return (None, tallies, summary);
    }
    for event in &batch.log_events {
        match download_of(event) {
            Some(download) => {
                tallies.add(&download);
                summary.downloads += 1;
            }
            None => summary.skipped += 1,
        }
    }
    if summary.skipped > 0 {
        tracing::warn!(
            skipped = summary.skipped,
            log_group = batch.log_group,
            "lines of the batch are not download lines"
        );
    }
    // The same in every delivery of the batch; the log group keeps two groups' ids apart.
    let id = (batch.log_events.first()).map(|e| format!("{}:{}", batch.log_group, e.id));
    (id, tallies, summary)
}

/// The download an event's line records, if it is a download line of this shape logged on
/// the day it names (a day away at most: a line written at midnight).
fn download_of(event: &LogEvent) -> Option<tfreg_core::usage::Download> {
    let text = event.message.trim();
    if text.len() > MAX_LINE_BYTES {
        return None;
    }
    let line: DownloadLine = serde_json::from_str(text).ok()?;
    if line.tfreg_download != LINE_VERSION {
        return None;
    }
    let millis = u64::try_from(event.timestamp).ok()?;
    let logged = day_of(std::time::UNIX_EPOCH + std::time::Duration::from_millis(millis));
    (line.download.day.abs_diff(logged) <= 1).then_some(line.download)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn pack(json: &str) -> String {
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gzip.write_all(json.as_bytes()).unwrap();
        base64::engine::general_purpose::STANDARD.encode(gzip.finish().unwrap())
    }

    /// A provider download's line, as the providers function writes it.
    fn line() -> String {
        use tfreg_core::names::{Platform, ProviderAddress};
        use tfreg_core::usage::{Download, Installed};
        DownloadLine::text(Download {
            installed: Installed::Provider {
                provider: ProviderAddress::parse("acme", "widget").unwrap(),
                version: tfreg_core::version::Version::parse("1.2.0").unwrap(),
                platform: Platform::parse("linux", "amd64").unwrap(),
            },
            consumer: None,
            day: 20_420,
        })
        .unwrap()
    }

    fn batch(messages: &[String]) -> String {
        let events: Vec<_> = messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                serde_json::json!({"id": format!("3700{i}"), "timestamp": 20_420u64 * 86_400_000 + 5, "message": m})
            })
            .collect();
        serde_json::json!({
            "owner": "123456789012", "logGroup": "/aws/lambda/providers", "logStream": "s",
            "subscriptionFilters": ["downloads"], "messageType": "DATA_MESSAGE", "logEvents": events,
        })
        .to_string()
    }

    #[test]
    fn download_lines_are_counted_and_anything_else_is_skipped() {
        let line = line();
        let messages = [
            format!("{line}\n"),
            line.clone(),
            // Another shape, another day, not JSON, too long, a log line of the function.
            line.replace(r#""tfreg_download":1"#, r#""tfreg_download":2"#),
            line.replace("20420", "20400"),
            "START RequestId: 1".to_owned(),
            line.replacen(',', &format!(",{}", " ".repeat(MAX_LINE_BYTES)), 1),
            r#"{"level":"INFO","tfreg_download":1,"message":"x"}"#.to_owned(),
            line.replace(r#""widget""#, r#""../widget""#),
        ];
        let batch = decode(&pack(&batch(&messages))).unwrap();
        let (id, tallies, summary) = fold(&batch);
        assert_eq!(id.as_deref(), Some("/aws/lambda/providers:37000"));
        assert_eq!((summary.downloads, summary.skipped), (2, 6), "{summary:?}");
        // The provider's total; the version's total and day, its platform's total and day.
        assert_eq!(tallies.counters(), 5);
    }

    #[test]
    fn a_batch_that_unpacks_too_far_or_is_not_a_batch_is_refused() {
        let bomb = format!(
            "{{\"logEvents\":[],\"x\":\"{}\"}}",
            "a".repeat(MAX_BATCH_BYTES as usize)
        );
        assert!(decode(&pack(&bomb)).unwrap_err().contains("more than"));
        assert!(decode("not base64!").is_err());
        assert!(decode(&pack("[1,2]")).is_err());
        let control = decode(&pack(r#"{"messageType":"CONTROL_MESSAGE","logEvents":[{"id":"1","timestamp":0,"message":"CWL CONTROL MESSAGE: Checking health of destination Lambda function."}]}"#)).unwrap();
        let (id, tallies, _) = fold(&control);
        assert!(id.is_none() && tallies.is_empty());
    }
}
