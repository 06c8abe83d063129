//! The YAML front matter of a documentation page (`page_title`, `subcategory`,
//! `description` between `---` lines), read leniently: a handful of `key: value` lines,
//! quoted or not, or a `|`/`>` block of indented lines. Anything else is ignored; a page
//! without a closing `---` has no front matter.

/// The most of one front matter value kept, in bytes.
const MAX_VALUE_BYTES: usize = 1024;

/// What the front matter says.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FrontMatter {
    pub page_title: Option<String>,
    pub subcategory: Option<String>,
    pub description: Option<String>,
}

/// Splits a page into its front matter and the Markdown after it.
pub fn split(text: &str) -> (FrontMatter, &str) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = strip_fence(text) else {
        return (FrontMatter::default(), text);
    };
    let mut offset = 0;
    let mut lines = Vec::new();
    for line in rest.split_inclusive('\n') {
        offset += line.len();
        if line.trim_end() == "---" {
            return (parse(&lines), &rest[offset..]);
        }
        lines.push(line.trim_end_matches(['\n', '\r']));
    }
    (FrontMatter::default(), text)
}

/// The text after an opening `---` line, if it starts with one.
fn strip_fence(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---")?;
    let rest = rest.trim_start_matches([' ', '\t']);
    rest.strip_prefix("\r\n")
        .or_else(|| rest.strip_prefix('\n'))
}

fn parse(lines: &[&str]) -> FrontMatter {
    let mut found = FrontMatter::default();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.starts_with([' ', '\t', '#']) {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let value = if value.starts_with(['|', '>']) {
            // A block scalar: the indented lines that follow.
            let mut block = Vec::new();
            while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].is_empty()) {
                block.push(lines[i].trim());
                i += 1;
            }
            let separator = if value.starts_with('|') { "\n" } else { " " };
            block.join(separator).trim().to_owned()
        } else {
            unquote(value)
        };
        let value = (!value.is_empty()).then(|| crate::text::cap(value, MAX_VALUE_BYTES));
        match key.trim() {
            "page_title" => found.page_title = value,
            "subcategory" => found.subcategory = value,
            "description" => found.description = value,
            _ => {}
        }
    }
    found
}

fn unquote(value: &str) -> String {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return match quote {
                '"' => inner.replace("\\\"", "\""),
                _ => inner.replace("''", "'"),
            };
        }
    }
    value.to_owned()
}
