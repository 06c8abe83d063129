//! Downloads counted on AWS without a write on the request path: the modules and providers
//! functions hand each download to [`LogSink`], which writes it as one JSON line on stdout
//! (which Lambda sends to the function's CloudWatch Logs group). A subscription filter on
//! those groups ([`FILTER_PATTERN`]) passes the lines to the usage function, which folds them
//! into the table (`tfreg_lambda::usage`).
//!
//! The line is the download ([`tfreg_core::usage::Download`], as serde writes it) with the
//! marker field [`MARKER`] set to [`LINE_VERSION`]:
//!
//! ```text
//! {"tfreg_download":1,"installed":{"kind":"module","address":{"namespace":"acme","name":"network","system":"aws"},"version":"1.1.0"},"consumer":{"token":"0123456789abcdef","who":"repo:acme/infra (ci)"},"day":20420}
//! ```

use std::io::Write;

use serde::{Deserialize, Serialize};
use tfreg_core::usage::{Download, DownloadSink};

/// The field that marks a download line, and that the subscription filter matches.
pub const MARKER: &str = "tfreg_download";
/// The marker's value: the line's shape (a reader skips lines of another).
pub const LINE_VERSION: u32 = 1;
/// The subscription filter's pattern (template.yaml's `FilterPattern`): JSON lines whose
/// marker is [`LINE_VERSION`], so no access or error line ever reaches the usage function.
pub const FILTER_PATTERN: &str = "{ $.tfreg_download = 1 }";

/// One download line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DownloadLine {
    /// [`LINE_VERSION`].
    pub tfreg_download: u32,
    /// The download.
    #[serde(flatten)]
    pub download: Download,
}

impl DownloadLine {
    /// The line of `download`, without its newline. What came from outside (a consumer's
    /// name) is escaped as every log line's is: JSON escapes, which read back the same.
    pub fn text(download: Download) -> Option<String> {
        let line = DownloadLine {
            tfreg_download: LINE_VERSION,
            download,
        };
        let json = serde_json::to_string(&line).ok()?;
        Some(
            tfreg_http::logging::escape_line(&json, tfreg_http::logging::LineFormat::Json)
                .into_owned(),
        )
    }
}

/// Writes each download as one line on stdout: a single write of a short line, which
/// neither waits on any store nor fails the download (a line that cannot be written is
/// lost, never an error).
#[derive(Debug, Default, Clone, Copy)]
pub struct LogSink;

impl DownloadSink for LogSink {
    fn record(&self, download: Download) {
        let Some(mut line) = DownloadLine::text(download) else {
            return;
        };
        line.push('\n');
        // One write of the whole line under the lock: lines of concurrent requests never
        // interleave, and stdout's line buffer passes it on at once.
        let _ = std::io::stdout().lock().write_all(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfreg_core::names::ModuleAddress;
    use tfreg_core::usage::{Consumer, Installed};
    use tfreg_core::version::Version;

    #[test]
    fn a_line_carries_the_marker_and_reads_back_as_the_download() {
        let download = Download {
            installed: Installed::Module {
                address: ModuleAddress::parse("acme", "network", "aws").unwrap(),
                version: Version::parse("1.1.0").unwrap(),
            },
            consumer: Some(Consumer {
                token: "0123456789abcdef".into(),
                who: "mallory\u{202e}\n{\"tfreg_download\":1}".into(),
            }),
            day: 20_420,
        };
        let line = DownloadLine::text(download.clone()).unwrap();
        assert!(
            line.starts_with(r#"{"tfreg_download":1,"installed":{"kind":"module""#),
            "{line}"
        );
        assert!(!line.contains('\n') && !line.contains('\u{202e}'), "{line}");
        let read: DownloadLine = serde_json::from_str(&line).unwrap();
        assert_eq!(read.download, download);
    }
}
