//! `https://host[:port]`: where the client reached this registry, which absolute URLs it
//! is handed (download URLs, sign-in redirects) are built from.

/// `https://host[:port]`: where the client reached this registry. The registry's own
/// download URLs and sign-in redirects are built from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin(String);

impl Origin {
    /// Builds the HTTPS origin for an authority (`host[:port]`). Refuses anything that is not a
    /// plain authority, so a forged `Host` header cannot inject a path or credentials into URLs.
    pub fn https(authority: &str) -> Option<Self> {
        let ok = !authority.is_empty()
            && authority.len() <= 255
            && authority
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b));
        ok.then(|| Self(format!("https://{}", authority.to_ascii_lowercase())))
    }

    /// The whole origin, `https://host[:port]`, without a trailing slash.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The `host[:port]` part, lowercased.
    pub fn authority(&self) -> &str {
        self.0.trim_start_matches("https://")
    }
}
