//! The last guard of every log line: whoever logged what, no control or disguising character
//! (see [`tfreg_core::text::must_escape`]) is written raw. An event is one line: a newline
//! inside it (a file name, a claim, an error that quotes one) would forge a line of its own.
//! JSON lines get `\uXXXX` escapes, which read back to the same strings; text lines get
//! [`for_terminal`]'s escapes, except, when the formatter colours for a terminal, sequences
//! that set foreground colours and weights as its own do (so text from outside may at worst
//! colour itself: it cannot hide, clear, move the cursor or link).

use std::borrow::Cow;

use tfreg_core::text::{for_terminal, json::escape_in_string, must_escape};

/// How the lines to escape are formatted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineFormat {
    /// One JSON object a line (serde_json already escapes C0 controls in its strings).
    Json,
    /// Human-readable, with colours (SGR sequences `ESC [ params m`) when `ansi`.
    Text {
        /// The formatter colours its own output: colour and weight sequences pass.
        ansi: bool,
    },
}

/// One formatted event, made safe; its final newline stays.
pub fn escape_line(line: &str, format: LineFormat) -> Cow<'_, str> {
    let (body, end) = match line.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (line, ""),
    };
    if !body.contains(must_escape) {
        return Cow::Borrowed(line);
    }
    let mut out = match format {
        LineFormat::Json => escape_in_string(body).into_owned(),
        LineFormat::Text { ansi: false } => for_terminal(body).into_owned(),
        LineFormat::Text { ansi: true } => {
            let mut out = String::with_capacity(body.len() + 16);
            let mut rest = body;
            while let Some(at) = rest.find('\x1b') {
                out.push_str(&for_terminal(&rest[..at]));
                let sgr = sgr_len(&rest[at..]);
                match sgr {
                    Some(len) => out.push_str(&rest[at..at + len]),
                    None => out.push_str(&for_terminal("\x1b")),
                }
                rest = &rest[at + sgr.unwrap_or(1)..];
            }
            out.push_str(&for_terminal(rest));
            out
        }
    };
    out.push_str(end);
    Cow::Owned(out)
}

/// The length of the colour sequence `text` starts with, if it starts with one the
/// formatter could have written: reset, bold, dim, italic, underline and foreground colours
/// but black (never black, conceal, blink, reverse or backgrounds, which could hide text).
fn sgr_len(text: &str) -> Option<usize> {
    let params = text.strip_prefix("\x1b[")?;
    let end = params.find('m')?;
    let allowed = |p: &str| {
        matches!(
            p.parse::<u8>(),
            Ok(0..=4 | 22..=24 | 31..=37 | 39 | 91..=97)
        ) && p.len() <= 2
    };
    params[..end].split(';').all(allowed).then_some(2 + end + 1)
}

#[cfg(test)]
mod tests {

    use tfreg_core::identity::audit::{self, Event};

    use super::*;
    use crate::logging::Redacting;

    const HOSTILE: &str = "evil\n\x1b[31mroot\u{9b}2J\u{202e}";

    use crate::logging::tests::Sink;

    /// What `log` writes through the redacting writer, in `format`.
    fn logged(format: LineFormat, log: impl FnOnce()) -> String {
        let sink = Sink::default();
        let writer = sink.clone();
        let make = Redacting::new(move || writer.clone()).escaping(format);
        let builder = tracing_subscriber::fmt()
            .with_writer(make)
            .with_ansi(format == LineFormat::Text { ansi: true });
        match format {
            LineFormat::Json => {
                tracing::subscriber::with_default(builder.json().flatten_event(true).finish(), log)
            }
            LineFormat::Text { .. } => tracing::subscriber::with_default(builder.finish(), log),
        }
        let out = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        out
    }

    fn assert_nothing_raw(out: &str, ansi: bool) {
        let body = out.strip_suffix('\n').unwrap_or(out);
        assert!(!body.contains('\n'), "a forged line:\n{out}");
        let raw: Vec<char> = body
            .chars()
            .filter(|c| must_escape(*c) && !(ansi && *c == '\x1b'))
            .collect();
        assert!(raw.is_empty(), "raw {raw:?} in {out:?}");
    }

    #[test]
    fn what_the_text_formatter_leaves_raw() {
        // What the guard is for: tracing-subscriber writes a `&str` field with Debug (quoted
        // and escaped); a message with ESC and C1 controls escaped but newlines and
        // bidirectional overrides raw; and a `%` field (Display) entirely raw.
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(subject = HOSTILE, "field");
            tracing::warn!("message {HOSTILE}");
            tracing::warn!(key = %HOSTILE, "display");
        });
        let out = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = out.split_inclusive('\n').collect();
        assert!(lines[0].contains(r#"subject="evil\n\u{1b}[31mroot\u{9b}2J\u{202e}""#));
        assert!(lines[1].ends_with("message evil\n"), "{out}");
        assert_eq!(lines[2], "\\x1b[31mroot\\u{9b}2J\u{202e}\n", "{out}");
        assert!(out.contains(&format!("key={HOSTILE}")), "{out}");
    }

    #[test]
    fn no_line_carries_anything_raw_in_any_format() {
        for format in [
            LineFormat::Json,
            LineFormat::Text { ansi: false },
            LineFormat::Text { ansi: true },
        ] {
            let out = logged(format, || {
                tracing::warn!(key = %HOSTILE, reason = HOSTILE, "refused {HOSTILE}");
            });
            assert_nothing_raw(&out, format == LineFormat::Text { ansi: true });
            assert!(out.contains("refused"), "{out}");
            if format == LineFormat::Json {
                let json: serde_json::Value = serde_json::from_str(&out).unwrap();
                assert_eq!(json["reason"], HOSTILE, "{out}");
                assert_eq!(json["message"], format!("refused {HOSTILE}"), "{out}");
            }
        }
        // The formatter's own colours survive; what could hide or move text does not.
        let out = logged(LineFormat::Text { ansi: true }, || {
            let file = "x\x1b[8mhidden\x1b[2J\x1b[1;41m\x1b]8;;https://x\x07";
            tracing::warn!(file = %file, "refused");
        });
        assert!(out.contains("\x1b[33m"), "{out:?}");
        for injected in [r"\u{1b}[8m", r"\u{1b}[2J", r"\u{1b}[1;41m", r"\u{1b}]8;;"] {
            assert!(out.contains(injected), "{injected} in {out:?}");
        }
    }

    #[test]
    fn audit_lines_carry_claims_escaped() {
        for format in [LineFormat::Json, LineFormat::Text { ansi: false }] {
            let out = logged(format, || {
                audit::record(Event::Refused, Some("0123\u{9b}"), Some(HOSTILE), HOSTILE);
            });
            assert_nothing_raw(&out, false);
            if format == LineFormat::Json {
                let json: serde_json::Value = serde_json::from_str(&out).unwrap();
                // Escaped at the source: the value read back holds no control either.
                let subject = json["subject"].as_str().unwrap();
                assert_eq!(subject, r"evil\n\u{1b}[31mroot\u{9b}2J\u{202e}");
                assert!(!json["reason"].as_str().unwrap().contains(must_escape));
                assert!(!json["token_id"].as_str().unwrap().contains(must_escape));
            }
        }
    }

    #[test]
    fn lines_without_anything_to_escape_are_untouched() {
        let line = "2024 INFO ünïcödé 山 \"q\\n\"\n";
        for format in [LineFormat::Json, LineFormat::Text { ansi: false }] {
            assert!(matches!(escape_line(line, format), Cow::Borrowed(_)));
        }
        let coloured = "\x1b[2m2024\x1b[0m \x1b[32mINFO\x1b[0m ünïcödé 山\n";
        assert_eq!(
            escape_line(coloured, LineFormat::Text { ansi: true }),
            coloured
        );
        assert_eq!(
            escape_line(
                "\x1b[1mok\x1b[0m \x1b]8;;x\x07\x1b[0;31m\n",
                LineFormat::Text { ansi: true }
            ),
            "\x1b[1mok\x1b[0m \\u{1b}]8;;x\\u{7}\x1b[0;31m\n"
        );
    }
}
