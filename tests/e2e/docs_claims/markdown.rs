//! The Markdown the checks read: code spans, sections, table cells, snake_case names and number
//! words.

/// The backticked spans of `text`.
pub(super) fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The backticked spans of `text`, each with the text since the span before it.
pub(super) fn spans_in_context(text: &str) -> Vec<(&str, &str)> {
    let parts: Vec<&str> = text.split('`').collect();
    (1..parts.len())
        .step_by(2)
        .map(|i| (parts[i - 1], parts[i]))
        .collect()
}

/// `text`'s section under the heading line `heading` (up to the next heading of its level or
/// above), or "" when there is none.
pub(super) fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let level = heading.chars().take_while(|&c| c == '#').count();
    let Some(start) = text.find(&format!("\n{heading}\n")) else {
        return "";
    };
    let body = &text[start + heading.len() + 2..];
    let mut at = 0;
    let mut fenced = false;
    for line in body.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !fenced && (1..=level).contains(&hashes) && line[hashes..].starts_with(' ') {
            return &body[..at];
        }
        at += line.len() + 1;
    }
    body
}

/// The cells of a Markdown table row, splitting on `|` outside code spans.
pub(super) fn cells(row: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut code = false;
    for c in row
        .trim()
        .trim_start_matches('|')
        .trim_end_matches('|')
        .chars()
    {
        match c {
            '`' => {
                code = !code;
                cells.last_mut().unwrap().push(c);
            }
            '|' if !code => cells.push(String::new()),
            _ => cells.last_mut().unwrap().push(c),
        }
    }
    cells.iter().map(|c| c.trim().to_owned()).collect()
}

pub(super) fn is_snake_name(token: &str) -> bool {
    token.contains('_')
        && token
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Number words up to twelve, and numerals.
pub(super) fn number(word: &str) -> Option<usize> {
    const WORDS: [&str; 13] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    let word = word.to_lowercase();
    WORDS
        .iter()
        .position(|w| *w == word)
        .or_else(|| word.parse().ok())
}
