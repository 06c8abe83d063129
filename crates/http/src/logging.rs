//! Logging for every tfreg process: `tracing` to stderr, at the verbosity `RUST_LOG` sets,
//! with secrets redacted from every line at every level. tfreg itself never logs a token or
//! a signature, but libraries may: at `trace`, `lambda_runtime` logs each raw event, whose
//! headers hold the caller's bearer token. So the writer, which sees every formatted line
//! whoever logged it, removes bearer tokens, tfreg tokens, and the signatures and session
//! tokens of download URLs before anything is written. It also escapes what no line may
//! carry raw (`escape`): control and disguising characters, from file names or ID-token
//! claims, whatever logged them and in both formats.

mod escape;

use std::borrow::Cow;
use std::io::{self, Write};

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

pub use escape::{escape_line, LineFormat};

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

/// How a process's log lines look.
#[derive(Debug, Clone, Copy)]
pub struct LogStyle {
    /// Colours, for a terminal.
    pub ansi: bool,
    /// Timestamps (CloudWatch adds its own).
    pub time: bool,
    /// One JSON object per line (for CloudWatch), with the current span's fields (the
    /// Lambda request id); else human-readable lines.
    pub json: bool,
}

/// Installs the process's logger: `RUST_LOG`, else `default`, to stderr, redacted.
pub fn init(default: &str, style: LogStyle) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Redacting::new(io::stderr).escaping(match style.json {
            true => LineFormat::Json,
            false => LineFormat::Text { ansi: style.ansi },
        }))
        .with_ansi(style.ansi);
    match (style.json, style.time) {
        (true, _) => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .without_time()
            .init(),
        (false, true) => builder.init(),
        (false, false) => builder.without_time().init(),
    }
}

/// Installs a one-shot command's logger: as [`init`] to stderr, and its audit lines
/// (`tfreg::audit`, at `info` and above) also appended to `audit` as JSON lines with their
/// time, redacted and escaped like every line. So a command's human output carries no audit
/// line, yet none is lost.
pub fn init_with_audit_file(default: &str, style: LogStyle, audit: std::fs::File) {
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;

    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(Redacting::new(io::stderr).escaping(LineFormat::Text { ansi: style.ansi }))
        .with_ansi(style.ansi)
        .with_filter(filter);
    let file = tracing_subscriber::fmt::layer()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_writer(Redacting::new(std::sync::Mutex::new(audit)).escaping(LineFormat::Json))
        .with_filter(Targets::new().with_target(AUDIT_TARGET, tracing::Level::INFO));
    tracing_subscriber::registry()
        .with(stderr)
        .with(file)
        .init();
}

/// The target of audit lines.
pub use tfreg_core::identity::audit::TARGET as AUDIT_TARGET;

/// Makes writers that redact and escape each log line before passing it to the writers of
/// `inner`.
#[derive(Debug, Clone)]
pub struct Redacting<M> {
    inner: M,
    format: LineFormat,
}

impl<M> Redacting<M> {
    /// For uncoloured text lines; see [`Redacting::escaping`].
    pub fn new(inner: M) -> Self {
        Self {
            inner,
            format: LineFormat::Text { ansi: false },
        }
    }

    /// Escapes as lines of `format` need.
    pub fn escaping(self, format: LineFormat) -> Self {
        Self { format, ..self }
    }
}

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for Redacting<M> {
    type Writer = RedactingWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingWriter {
            line: Vec::new(),
            format: self.format,
            inner: self.inner.make_writer(),
        }
    }
}

/// Gathers one event's output, then writes it redacted when dropped (the formatter makes a
/// writer per event, so a secret is never split between two writes).
pub struct RedactingWriter<W: Write> {
    line: Vec<u8>,
    format: LineFormat,
    inner: W,
}

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.line.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<W: Write> Drop for RedactingWriter<W> {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.line);
        let redacted = redact(&text);
        let _ = self
            .inner
            .write_all(escape_line(&redacted, self.format).as_bytes());
        let _ = self.inner.flush();
    }
}

/// True for the characters a secret value may hold; anything else ends it (quotes, the
/// backslash of an escaped quote, spaces, `&`, commas, brackets).
fn secret_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-_.~+/=%:".contains(c)
}

/// Where a secret value starting at `start` ends.
fn secret_end(text: &str, start: usize) -> usize {
    start
        + text[start..]
            .find(|c: char| !secret_char(c))
            .unwrap_or(text.len() - start)
}

/// Case-insensitive search for `needle` (ASCII) in `haystack` from `from`.
fn find_ascii(haystack: &str, needle: &str, from: usize) -> Option<usize> {
    let h = haystack.as_bytes();
    let n = needle.as_bytes();
    if h.len() < n.len() {
        return None;
    }
    (from..=h.len() - n.len()).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// The names of secret values a line may carry: as a query parameter (`signature=...`), a
/// JSON field (`"signature":"..."`, escaped or not) or a header (`Authorization: Bearer ...`).
/// The value runs to the first character that cannot be part of it.
const NAMES: [&str; 5] = [
    "bearer",
    "signature",
    "x-amz-security-token",
    "x-amz-credential",
    "secret",
];

/// Where the value after a secret's name starts, if the name is followed by a separator:
/// spaces after `bearer`; for the others `=` or `:`, with any quotes, backslashes and spaces
/// around it.
fn value_start(text: &str, name: &str, after: usize) -> Option<usize> {
    let rest = &text[after..];
    let separator: usize = rest
        .find(|c: char| !matches!(c, ' ' | '"' | '\\' | '\'' | '=' | ':'))
        .unwrap_or(rest.len());
    let between = &rest[..separator];
    let ok = if name == "bearer" {
        !between.is_empty() && between.chars().all(|c| c == ' ')
    } else {
        between.contains(['=', ':'])
    };
    ok.then_some(after + separator)
}

/// `text` with every secret replaced by [`REDACTED`]: bearer tokens (whatever their form),
/// tfreg tokens anywhere, and the signatures and credentials of download URLs.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for name in NAMES {
        let mut from = 0;
        while let Some(at) = find_ascii(text, name, from) {
            from = at + 1;
            let Some(start) = value_start(text, name, at + name.len()) else {
                continue;
            };
            let end = secret_end(text, start);
            if end > start {
                spans.push((start, end));
                from = end;
            }
        }
    }
    // `tfreg_<16 hex id>_<secret>`: the id stays (it names the token in `tfreg token list`).
    let mut from = 0;
    while let Some(at) = find_ascii(text, "tfreg_", from) {
        let id_start = at + "tfreg_".len();
        let id = text.get(id_start..id_start + 17);
        let is_token = id.is_some_and(|id| {
            id.ends_with('_') && id.as_bytes()[..16].iter().all(u8::is_ascii_hexdigit)
        });
        from = at + 1;
        if is_token {
            let start = id_start + 17;
            let end = secret_end(text, start);
            if end > start {
                spans.push((start, end));
            }
        }
    }
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    spans.sort();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in spans {
        if start < at {
            at = at.max(end);
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str(REDACTED);
        at = end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "tfreg_0123456789abcdef_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCd";

    #[test]
    fn secrets_are_redacted_wherever_they_appear() {
        for (line, secret) in [
            (format!("authorization: Bearer {TOKEN}"), TOKEN),
            (
                format!(r#"body="{{\"authorization\":\"Bearer {TOKEN}\"}}""#),
                TOKEN,
            ),
            (
                "header=\"BEARER   some.jwt.value\"".to_owned(),
                "some.jwt.value",
            ),
            (format!("token {TOKEN} seen"), TOKEN),
            (
                "GET /v1/artifacts/x.zip?expires=1&signature=c2lnbmF0dXJl&revision=r".to_owned(),
                "c2lnbmF0dXJl",
            ),
            (
                "https://b.s3.amazonaws.com/k?X-Amz-Security-Token=FQoG%2Bsecret&X-Amz-Signature=abc123".to_owned(),
                "FQoG%2Bsecret",
            ),
        ] {
            let redacted = redact(&line);
            assert!(!redacted.contains(secret), "{redacted}");
            assert!(redacted.contains(REDACTED), "{redacted}");
        }
        // JSON fields, as the raw API Gateway event has them at trace.
        for line in [
            r#"{"queryStringParameters":{"expires":"1","signature":"c2lnbmF0dXJl"}}"#,
            r#"body="{\"signature\":\"c2lnbmF0dXJl\"}""#,
        ] {
            assert!(!redact(line).contains("c2lnbmF0dXJl"), "{}", redact(line));
        }
        let url = "?X-Amz-Security-Token=tok&X-Amz-Signature=abc123";
        assert!(!redact(url).contains("abc123"));
        // The token's public id stays, for `tfreg token list`.
        assert!(redact(TOKEN).contains("tfreg_0123456789abcdef_"));
    }

    #[test]
    fn lines_without_secrets_are_untouched() {
        for line in [
            "GET /v1/modules/acme/network/aws/versions 200",
            "tfreg_ is a prefix",
            "signature=",
            "",
            "ünïcödé bearer",
        ] {
            assert!(matches!(redact(line), Cow::Borrowed(_)), "{line}");
        }
    }

    /// What a writer was given, for tests of what reaches the log.
    #[derive(Clone, Default)]
    pub(super) struct Sink(pub(super) std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_writer_redacts_what_any_library_logs() {
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(Redacting::new(move || writer.clone()))
            .with_max_level(tracing::Level::TRACE)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::trace!(
                target: "lambda_runtime",
                body = format!(r#"{{"headers":{{"authorization":"Bearer {TOKEN}"}}}}"#),
                "raw JSON event received from Lambda"
            );
        });
        let out = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(out.contains("raw JSON event"), "{out}");
        assert!(!out.contains(&TOKEN[23..]), "{out}");
    }
}
