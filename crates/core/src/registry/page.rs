//! Pagination of listings: `?limit=` (default 15, at most 100) and `?offset=`, applied after
//! token scopes filter, so every page but the last is full.

use crate::protocol::details::ListMeta;

/// How many entries a page holds when the client does not say.
pub const DEFAULT_LIMIT: usize = 15;
/// The most entries one page holds, whatever the client asks.
pub const MAX_LIMIT: usize = 100;

/// Which page of a listing was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Page {
    /// The most entries on the page: 1 to [`MAX_LIMIT`].
    pub limit: usize,
    /// How many filtered entries come before the page.
    pub offset: usize,
}

impl Default for Page {
    fn default() -> Self {
        Self {
            limit: DEFAULT_LIMIT,
            offset: 0,
        }
    }
}

impl Page {
    /// From the query's `limit` and `offset`: a limit above [`MAX_LIMIT`] is lowered to it;
    /// anything but a number (or a limit of 0) is refused with the reason.
    pub fn parse(limit: Option<&str>, offset: Option<&str>) -> Result<Self, String> {
        let number = |name: &str, text: &str| {
            text.parse::<usize>().map_err(|_| {
                format!("{name} must be a whole number, not {text:?}")
                    .chars()
                    .take(200)
                    .collect::<String>()
            })
        };
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(text) => match number("limit", text)? {
                0 => return Err("limit must be at least 1".into()),
                n => n.min(MAX_LIMIT),
            },
        };
        let offset = match offset {
            None => 0,
            Some(text) => number("offset", text)?,
        };
        Ok(Self { limit, offset })
    }

    /// This page of `all`, and where it sits. `next_url` is `path` with this page's
    /// `params` and the next offset, when there is a next page.
    pub fn cut<T>(&self, all: Vec<T>, path: &str, params: &[(&str, &str)]) -> (ListMeta, Vec<T>) {
        let from = all
            .into_iter()
            .skip(self.offset)
            .take(self.limit.saturating_add(1))
            .collect();
        self.cut_from(from, path, params)
    }

    /// As [`Page::cut`], from the entries that start at the page's offset (at least one
    /// more than the page holds when another page follows).
    pub fn cut_from<T>(
        &self,
        mut from: Vec<T>,
        path: &str,
        params: &[(&str, &str)],
    ) -> (ListMeta, Vec<T>) {
        let more = from.len() > self.limit;
        from.truncate(self.limit);
        let entries = from;
        let next = self.offset.saturating_add(self.limit);
        let next_offset = more.then_some(next);
        let prev_offset = (self.offset > 0).then(|| self.offset.saturating_sub(self.limit));
        let next_url = next_offset.map(|next| {
            let mut query = format!("limit={}&offset={next}", self.limit);
            for (name, value) in params {
                query.push('&');
                query.push_str(name);
                query.push('=');
                query.extend(percent_encoding::utf8_percent_encode(
                    value,
                    percent_encoding::NON_ALPHANUMERIC,
                ));
            }
            format!("{path}?{query}")
        });
        let meta = ListMeta {
            limit: self.limit,
            current_offset: self.offset,
            next_offset,
            prev_offset,
            next_url,
        };
        (meta, entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_bounded_and_bad_numbers_refused() {
        assert_eq!(Page::parse(None, None).unwrap(), Page::default());
        assert_eq!(
            Page::parse(Some("500"), Some("3")).unwrap().limit,
            MAX_LIMIT
        );
        assert!(Page::parse(Some("0"), None)
            .unwrap_err()
            .contains("at least 1"));
        assert!(Page::parse(Some("-1"), None).unwrap_err().contains("limit"));
        assert!(Page::parse(None, Some("x")).unwrap_err().contains("offset"));
    }

    #[test]
    fn pages_say_where_the_next_and_previous_are() {
        let page = Page {
            limit: 2,
            offset: 2,
        };
        let (meta, entries) = page.cut(vec![1, 2, 3, 4, 5], "/v1/modules/search", &[("q", "a b")]);
        assert_eq!(entries, [3, 4]);
        assert_eq!(meta.next_offset, Some(4));
        assert_eq!(meta.prev_offset, Some(0));
        assert_eq!(
            meta.next_url.as_deref(),
            Some("/v1/modules/search?limit=2&offset=4&q=a%20b")
        );
        let (last, entries) = Page {
            limit: 2,
            offset: 4,
        }
        .cut(vec![1, 2, 3, 4, 5], "/x", &[]);
        assert_eq!(entries, [5]);
        assert_eq!((last.next_offset, last.next_url), (None, None));
    }
}
