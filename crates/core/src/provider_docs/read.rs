//! Reading a `docs.zip`: the zip walked with the module archive check (no `..`, no absolute
//! paths, no links, bounded entries, size, ratio and time), keeping only the Markdown pages
//! of the `docs/` layout, each within its cap.

use std::fs::File;
use std::io::{self, Read};
use std::time::Duration;

use super::{front_matter, DocPage, PageKind, ProviderDocs};
use super::{MAX_DOCS_ENTRIES, MAX_NAME_BYTES, MAX_PAGE_BYTES, MAX_PROVIDER_DOCS_BYTES};
use crate::layout::ArchiveFormat;
use crate::module_archive::{self, ModuleArchiveError, ModuleLimits};

/// The suffixes a page's file may have (the public registry's, and the older website's).
const PAGE_SUFFIXES: [&str; 4] = [".html.markdown", ".html.md", ".markdown", ".md"];

/// Why a `docs.zip` is refused. `Display` is the reason a publisher reads.
#[derive(Debug, thiserror::Error)]
pub enum ProviderDocsError {
    /// Reading the file failed: not a verdict on it.
    #[error("cannot read docs.zip: {0}")]
    Io(io::Error),
    /// The zip itself is refused (not a zip, unsafe paths, links, too large).
    #[error("docs.zip is refused: {0}")]
    Archive(ModuleArchiveError),
    /// A readable zip without any page of the layout.
    #[error("docs.zip holds no documentation page: pages are docs/index.md, docs/resources/<name>.md, docs/data-sources/<name>.md or docs/guides/<name>.md (the docs/ folder may be left out)")]
    NoPages,
}

/// The limits of the zip walk: documentation is text, far smaller than a module.
fn limits() -> ModuleLimits {
    ModuleLimits {
        max_expanded_bytes: 64 * 1024 * 1024,
        max_entries: MAX_DOCS_ENTRIES,
        max_ratio: 200,
        max_duration: Duration::from_secs(60),
    }
}

/// Reads the pages of an open `docs.zip` (its size checked by the caller against
/// [`super::MAX_DOCS_ZIP_BYTES`]). Synchronous and CPU-bound: async callers run it on a
/// blocking thread.
pub fn read(file: &File) -> Result<ProviderDocs, ProviderDocsError> {
    let mut docs = ProviderDocs::default();
    let walked = module_archive::check_visiting(
        file,
        ArchiveFormat::Zip,
        &limits(),
        &mut |path, content| {
            if let Some((kind, name)) = page_of(path) {
                if docs.page(kind, &name).is_none() {
                    docs.pages.push(read_page(kind, name, content)?);
                }
            }
            Ok(())
        },
    );
    match walked {
        // The module check's own rules about Terraform configuration do not apply here.
        Ok(_)
        | Err(
            ModuleArchiveError::NoConfiguration
            | ModuleArchiveError::ArchivedFolder { .. }
            | ModuleArchiveError::Empty,
        ) => {}
        Err(ModuleArchiveError::Io(e)) => return Err(ProviderDocsError::Io(e)),
        Err(refused) => return Err(ProviderDocsError::Archive(refused)),
    }
    if docs.pages.is_empty() {
        return Err(ProviderDocsError::NoPages);
    }
    docs.fit(MAX_PROVIDER_DOCS_BYTES);
    Ok(docs)
}

/// The page a zip path holds, if it is one: its kind and name.
fn page_of(path: &str) -> Option<(PageKind, String)> {
    let path = path.strip_prefix("docs/").unwrap_or(path);
    let (folder, file) = match path.split_once('/') {
        Some((folder, file)) => (Some(folder), file),
        None => (None, path),
    };
    let name = PAGE_SUFFIXES
        .iter()
        .find_map(|suffix| file.strip_suffix(suffix))?;
    let kind = match folder {
        None if name == "index" => PageKind::Index,
        None => return None,
        Some(folder) => PageKind::from_folder(folder).filter(|k| *k != PageKind::Index)?,
    };
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    valid.then(|| (kind, name.to_owned()))
}

fn read_page(kind: PageKind, name: String, content: &mut dyn Read) -> io::Result<DocPage> {
    let mut bytes = Vec::new();
    content
        .take(MAX_PAGE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let (front, body) = front_matter::split(&text);
    let cut = body.len() > MAX_PAGE_BYTES;
    let markdown = crate::text::cap(body.to_owned(), MAX_PAGE_BYTES);
    Ok(DocPage {
        kind,
        name,
        title: front.page_title,
        subcategory: front.subcategory,
        description: front.description,
        markdown,
        truncated: cut || bytes.len() > MAX_PAGE_BYTES,
    })
}
