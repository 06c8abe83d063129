//! JSON with nothing from outside raw in it. serde_json escapes C0 controls, `"` and `\`, but
//! writes DEL, C1 controls (CSI U+009B), bidirectional overrides and invisible format
//! characters as they are, so a JSON output could still carry them to a terminal or a log
//! scraper. These serializers also write every character that [`super::must_escape`] as a
//! `\uXXXX` escape: the JSON reads back to exactly the same strings.

use std::fmt::Write as _;
use std::io;

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter, Serializer};

/// As `serde_json::to_string_pretty`, with nothing to escape raw.
pub fn to_string_pretty<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<String> {
    let bytes = write(value, PrettyFormatter::new())?;
    Ok(String::from_utf8(bytes).expect("serde_json writes UTF-8"))
}

/// As `serde_json::to_vec`, with nothing to escape raw.
pub fn to_vec<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    write(value, CompactFormatter)
}

fn write<T: ?Sized + Serialize, F: Formatter>(value: &T, inner: F) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    value.serialize(&mut Serializer::with_formatter(&mut out, Escaping(inner)))?;
    Ok(out)
}

/// `text` with every character that [`super::must_escape`] written as `\uXXXX` (two
/// escapes, a surrogate pair, beyond the Basic Multilingual Plane): for the inside of a
/// JSON string.
pub fn escape_in_string(text: &str) -> std::borrow::Cow<'_, str> {
    super::escape(text, super::must_escape, |out, c| {
        let mut units = [0u16; 2];
        for unit in c.encode_utf16(&mut units) {
            let _ = write!(out, "\\u{unit:04x}");
        }
    })
}

/// A formatter that lays out as `F` does and escapes what serde_json leaves raw. serde_json
/// hands string contents over in fragments between the characters it escapes itself.
struct Escaping<F>(F);

impl<F: Formatter> Formatter for Escaping<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        writer.write_all(escape_in_string(fragment).as_bytes())
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_array(writer)
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array(writer)
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(writer, first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array_value(writer)
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object(writer)
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object(writer)
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(writer, first)
    }

    fn end_object_key<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_key(writer)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object_value(writer)
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_value(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HOSTILE: &str =
        "evil\n\x1b[31mroot\u{9b}2J\u{7f}\u{202e}txt.exe\u{2066}\u{200b}\u{feff}\u{e0041}é山\"\\";

    fn raw_hostile(bytes: &[u8]) -> Vec<char> {
        std::str::from_utf8(bytes)
            .unwrap()
            .chars()
            .filter(|c| super::super::must_escape(*c) && *c != '\n')
            .collect()
    }

    #[test]
    fn json_reads_back_the_same_and_carries_nothing_raw() {
        let value = json!({ HOSTILE: [HOSTILE, { "subject": HOSTILE, "n": 1, "ok": true }] });
        // serde_json alone leaves C1, DEL and bidirectional overrides raw.
        assert!(!raw_hostile(serde_json::to_string(&value).unwrap().as_bytes()).is_empty());

        let pretty = to_string_pretty(&value).unwrap();
        let compact = to_vec(&value).unwrap();
        for bytes in [pretty.as_bytes(), &compact] {
            assert_eq!(raw_hostile(bytes), Vec::<char>::new());
            assert!(!bytes.contains(&0x1b) && !bytes.contains(&0x7f));
            let back: serde_json::Value = serde_json::from_slice(bytes).unwrap();
            assert_eq!(back, value);
        }
        assert!(
            pretty.contains(r"\u009b") && pretty.contains(r"\u202e"),
            "{pretty}"
        );
        assert!(pretty.contains(r"\udb40\udc41"), "{pretty}");
        assert!(pretty.contains("é山"), "{pretty}");
        // Laid out as serde_json lays it out.
        let plain = json!({ "a": [1, { "b": "c" }], "d": "e" });
        assert_eq!(
            to_string_pretty(&plain).unwrap(),
            serde_json::to_string_pretty(&plain).unwrap()
        );
        assert_eq!(to_vec(&plain).unwrap(), serde_json::to_vec(&plain).unwrap());
    }
}
