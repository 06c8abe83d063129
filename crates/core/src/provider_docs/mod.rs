//! A provider release's documentation (`docs.zip` beside the release, in the public
//! registry's `docs/` layout): its pages read leniently from a hostile zip, within bounds
//! that keep the whole record one store item. Markdown stays Markdown: it is sanitised when
//! it is rendered, like a module's README.

mod front_matter;
mod read;
#[cfg(test)]
mod tests;

pub use read::{read, ProviderDocsError};

use serde::{Deserialize, Serialize};

/// The largest `docs.zip` read.
pub const MAX_DOCS_ZIP_BYTES: u64 = 20 * 1024 * 1024;
/// The most entries (files and folders) a `docs.zip` may hold.
pub const MAX_DOCS_ENTRIES: usize = 5_000;
/// The most of one page kept, in bytes (cut at a character boundary, and marked as cut).
pub const MAX_PAGE_BYTES: usize = 64 * 1024;
/// The largest record kept, as JSON: well under DynamoDB's 400 KB item limit. Pages past it
/// are left out (and counted).
pub const MAX_PROVIDER_DOCS_BYTES: usize = 300 * 1000;
/// The longest page name kept (a file name without `.md`).
pub const MAX_NAME_BYTES: usize = 128;

/// What a page documents: its folder under `docs/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PageKind {
    /// `docs/index.md`: the provider's overview.
    Index,
    /// `docs/guides/<name>.md`
    Guide,
    /// `docs/resources/<name>.md`
    Resource,
    /// `docs/data-sources/<name>.md`
    DataSource,
}

impl PageKind {
    /// Every kind, in the order pages are shown and kept.
    pub const ALL: [PageKind; 4] = [
        PageKind::Index,
        PageKind::Guide,
        PageKind::Resource,
        PageKind::DataSource,
    ];

    /// The folder of its pages under `docs/` (and in page URLs); `index` for the overview.
    pub fn folder(self) -> &'static str {
        match self {
            PageKind::Index => "index",
            PageKind::Guide => "guides",
            PageKind::Resource => "resources",
            PageKind::DataSource => "data-sources",
        }
    }

    /// The kind whose folder is `folder`.
    pub fn from_folder(folder: &str) -> Option<PageKind> {
        PageKind::ALL.into_iter().find(|k| k.folder() == folder)
    }

    /// The kind's name in headings, plural.
    pub fn heading(self) -> &'static str {
        match self {
            PageKind::Index => "Overview",
            PageKind::Guide => "Guides",
            PageKind::Resource => "Resources",
            PageKind::DataSource => "Data sources",
        }
    }
}

/// One page of a provider's documentation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocPage {
    /// What it documents.
    pub kind: PageKind,
    /// Its file name without the Markdown suffix (`widget_thing`; `index` for the overview).
    pub name: String,
    /// The front matter's `page_title`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The front matter's `subcategory`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subcategory: Option<String>,
    /// The front matter's `description`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The Markdown after the front matter, as published (not sanitised: renderers do that).
    pub markdown: String,
    /// True when the page was longer than [`MAX_PAGE_BYTES`] and was cut.
    #[serde(default)]
    pub truncated: bool,
}

/// A release's documentation, as kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderDocs {
    /// The pages kept, by kind then name.
    pub pages: Vec<DocPage>,
    /// How many pages were left out to keep the record under [`MAX_PROVIDER_DOCS_BYTES`].
    #[serde(default)]
    pub omitted: usize,
}

impl ProviderDocs {
    /// The page of `kind` named `name`.
    pub fn page(&self, kind: PageKind, name: &str) -> Option<&DocPage> {
        self.pages.iter().find(|p| p.kind == kind && p.name == name)
    }

    /// The pages of `kind`, by name.
    pub fn of_kind(&self, kind: PageKind) -> impl Iterator<Item = &DocPage> {
        self.pages.iter().filter(move |p| p.kind == kind)
    }

    /// Keeps pages in order (index, guides, resources, data sources, each by name) while
    /// the record stays within `max` bytes of JSON; counts the rest as omitted.
    fn fit(&mut self, max: usize) {
        self.pages
            .sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
        // The record's own fields and the store's wrapping, generously.
        let mut used: usize = 1024;
        let mut kept = Vec::with_capacity(self.pages.len());
        for page in std::mem::take(&mut self.pages) {
            let size = serde_json::to_vec(&page).map_or(usize::MAX, |v| v.len() + 1);
            if used.saturating_add(size) > max {
                self.omitted += 1;
                continue;
            }
            used += size;
            kept.push(page);
        }
        self.pages = kept;
    }
}
