//! Text from outside (ID-token claims, file names, archive contents) made safe to print:
//! control characters and the invisible characters that can disguise text are written as
//! visible escapes, so nothing from outside moves a terminal's cursor, starts an escape
//! sequence, reorders a line or fakes a line of its own. [`json`] does the same for JSON.

pub mod json;

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` cut to at most `max` bytes, at a character boundary (READMEs, descriptions and
/// documentation pages kept within their bounds).
pub(crate) fn cap(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut cut = max;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}

/// True for the characters that never reach a terminal or a log as they are: every control
/// character (C0 with `\n`, `\r`, `\t` and ESC; DEL; C1 with CSI U+009B), the
/// bidirectional embeddings, overrides, isolates and marks, line and paragraph separators,
/// and the invisible format characters (zero-width spaces and joiners, word joiners, the
/// byte order mark, soft hyphens, interlinear annotations, tags).
pub fn must_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{ad}'
                | '\u{61c}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{e0000}'..='\u{e007f}'
        )
}

/// `text` for a terminal or a log line: unchanged unless it holds a character that
/// [`must_escape`], each of which is written as `\n`, `\r`, `\t` or `\u{hex}` (`\u{1b}`,
/// `\u{9b}`, `\u{202e}`). Letters of every script stay as they are. Backslashes stay too,
/// so text that spells an escape reads like one; what matters is that nothing arrives raw.
pub fn for_terminal(text: &str) -> Cow<'_, str> {
    escape(text, must_escape, write_visible)
}

/// As [`for_terminal`], but newlines stay: for messages of several lines made by tfreg
/// itself, which may quote text from outside (that text should have been escaped with
/// [`for_terminal`] already; this is the last guard).
pub fn lines_for_terminal(text: &str) -> Cow<'_, str> {
    escape(text, |c| c != '\n' && must_escape(c), write_visible)
}

/// `text` with each character that `escaped` picks written by `write` instead; borrowed
/// when there is none.
fn escape(
    text: &str,
    escaped: impl Fn(char) -> bool,
    write: impl Fn(&mut String, char),
) -> Cow<'_, str> {
    let Some(first) = text.find(&escaped) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        match escaped(c) {
            true => write(&mut out, c),
            false => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A terminal's escape of `c`: `\n`, `\r`, `\t` or `\u{hex}`.
fn write_visible(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        _ => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_text_is_left_alone() {
        for text in [
            "",
            "repo:acme/infra:ref:refs/heads/main",
            "alice@example.com",
            "Zoë Müller-Łukasiewicz",
            "山田太郎",
            "مرحبا",
            r"DOMAIN\user",
            "tabs\\tand spaces  ",
        ] {
            assert!(matches!(for_terminal(text), Cow::Borrowed(_)), "{text}");
            assert!(
                matches!(lines_for_terminal(text), Cow::Borrowed(_)),
                "{text}"
            );
        }
    }

    #[test]
    fn controls_and_disguises_are_written_as_escapes() {
        assert_eq!(
            for_terminal("evil\n\x1b[31mroot\u{9b}2J"),
            r"evil\n\u{1b}[31mroot\u{9b}2J"
        );
        assert_eq!(for_terminal("a\rb\tc\0d\u{7f}"), r"a\rb\tc\u{0}d\u{7f}");
        assert_eq!(
            for_terminal("admin\u{202e}fdp.exe"),
            r"admin\u{202e}fdp.exe"
        );
        assert_eq!(
            for_terminal("é\u{2066}x\u{2069}\u{200b}\u{feff}\u{2028}\u{2029}"),
            r"é\u{2066}x\u{2069}\u{200b}\u{feff}\u{2028}\u{2029}"
        );
        assert_eq!(for_terminal("\u{e0041}"), r"\u{e0041}");
        assert_eq!(lines_for_terminal("a\nb\x1b"), "a\nb\\u{1b}");
    }

    #[test]
    fn nothing_to_escape_survives_escaping() {
        let every: String = (0..=0x10ffff_u32)
            .filter_map(char::from_u32)
            .filter(|c| must_escape(*c))
            .collect();
        assert!(every.contains('\u{9b}') && every.contains('\u{202e}'));
        let escaped = for_terminal(&every);
        assert!(!escaped.chars().any(must_escape), "{escaped}");
        assert!(escaped.is_ascii());
        // Every C1 control and every bidirectional override or isolate is among them.
        for c in (0x80..=0x9f).chain(0x202a..=0x202e).chain(0x2066..=0x2069) {
            assert!(must_escape(char::from_u32(c).unwrap()), "{c:x}");
        }
    }
}
