//! The functions' logs as CloudWatch Logs has them, and their subscription batches: what a
//! function writes on stdout (what Lambda sends to its log group; `tracing` goes to stderr,
//! the function's `.log`), packed as a subscription filter delivers matching lines to a
//! Lambda function (`awslogs.data`: base64 of gzip of the batch's JSON).

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::json;

use super::{sdk_config, Stack};
use crate::lambda::Answer;

impl Stack {
    /// The lines a function wrote on stdout so far.
    pub fn stdout_lines(&self, function: &str) -> Vec<String> {
        let out = self.dir.path().join(format!("{function}.out"));
        std::fs::read_to_string(out)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Invokes a function with `event` as its trigger would (waiting up to two minutes for
    /// its answer); panics with its log if it gives none.
    pub fn invoke(&self, function: &str, event: &str) -> Answer {
        let f = self
            .functions
            .iter()
            .find(|f| f.name == function)
            .unwrap_or_else(|| panic!("the stack has no {function} function"));
        f.api
            .invoke(event.to_owned(), Duration::from_secs(120))
            .unwrap_or_else(|| panic!("{function} did not answer:\n{}", self.log(function)))
    }

    /// The download counts on the stack's table, read as the read API reads them, talking
    /// to the emulator directly (never counted).
    pub fn usage(&self) -> tfreg_aws::DynamoUsage {
        let config = self.runtime.block_on(sdk_config(&self._moto, &self.cert));
        tfreg_aws::DynamoUsage::new(tfreg_aws::dynamodb_client(&config), &self.table)
    }
}

/// The event a CloudWatch Logs subscription filter invokes a Lambda function with for
/// `lines` of `log_group`: one `DATA_MESSAGE` batch, its events numbered from `first_id`
/// (CloudWatch's ids are 56 digits), logged now.
pub fn subscription_event(log_group: &str, first_id: u64, lines: &[String]) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let events: Vec<_> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            json!({
                "id": format!("{:056}", first_id + i as u64),
                "timestamp": now,
                // Lambda's log lines keep their newline.
                "message": format!("{line}\n"),
            })
        })
        .collect();
    let batch = json!({
        "messageType": "DATA_MESSAGE",
        "owner": "123456789012",
        "logGroup": log_group,
        "logStream": "2026/11/28/[$LATEST]0123456789abcdef0123456789abcdef",
        "subscriptionFilters": ["tfreg-downloads"],
        "logEvents": events,
    });
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(batch.to_string().as_bytes()).unwrap();
    let data = base64::engine::general_purpose::STANDARD.encode(gzip.finish().unwrap());
    json!({ "awslogs": { "data": data } }).to_string()
}
