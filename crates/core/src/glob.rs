//! Wildcard patterns, the one matcher of the registry's settings: `*` matches any run of
//! characters, every other character itself. CI rules match claims with [`matches()`] (a
//! `*` may cross `/`); `tfreg publish` and the archive check match file names and paths with
//! [`matches_path`] (segment by segment, ignoring ASCII case).

/// `*` matches any run of characters (`/` included); everything else matches itself.
pub fn matches(pattern: &str, value: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == value;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !value.starts_with(first) || value.len() < first.len() + last.len() || !value.ends_with(last)
    {
        return false;
    }
    let mut rest = &value[first.len()..value.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// True when the `/`-separated `path` matches `pattern` segment by segment, ignoring ASCII
/// case: a `*` matches any run of characters but `/`.
pub fn matches_path(pattern: &str, path: &str) -> bool {
    let (pattern, path) = (pattern.to_ascii_lowercase(), path.to_ascii_lowercase());
    let (mut patterns, mut segments) = (pattern.split('/'), path.split('/'));
    loop {
        match (patterns.next(), segments.next()) {
            (None, None) => return true,
            (Some(p), Some(s)) if matches(p, s) => {}
            _ => return false,
        }
    }
}
