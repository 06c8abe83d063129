//! Reading `docs.zip` files, good and hostile.

use std::io::Write;

use super::*;
use crate::layout::ArchiveFormat;
use crate::module_archive::archive_of;

fn read_bytes(bytes: &[u8]) -> Result<ProviderDocs, ProviderDocsError> {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(bytes).unwrap();
    read(&file)
}

fn zip(files: &[(&str, &[u8])]) -> Vec<u8> {
    archive_of(ArchiveFormat::Zip, files)
}

fn refusal(bytes: &[u8]) -> String {
    match read_bytes(bytes) {
        Ok(docs) => panic!("should be refused, read {docs:?}"),
        Err(e) => e.to_string(),
    }
}

const THING: &str = "---\npage_title: \"widget_thing Resource - acme\"\nsubcategory: Things\ndescription: |-\n  Manages a thing.\n  Two lines.\n---\n\n# widget_thing\n\nBody <script>alert(1)</script>\n";

#[test]
fn a_good_zip_gives_its_pages_by_kind_with_their_front_matter() {
    let docs = read_bytes(&zip(&[
        ("docs/", b""),
        ("docs/index.md", b"# Widget provider\n"),
        ("docs/resources/thing.md", THING.as_bytes()),
        ("docs/data-sources/thing.md", b"# data thing\n"),
        (
            "docs/guides/getting-started.md",
            b"---\npage_title: 'Getting started'\n---\nHi",
        ),
        ("docs/README.txt", b"ignored"),
        ("docs/resources/nested/x.md", b"ignored"),
        ("other.md", b"ignored"),
    ]))
    .unwrap();
    let names: Vec<(PageKind, &str)> = docs
        .pages
        .iter()
        .map(|p| (p.kind, p.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            (PageKind::Index, "index"),
            (PageKind::Guide, "getting-started"),
            (PageKind::Resource, "thing"),
            (PageKind::DataSource, "thing"),
        ]
    );
    let thing = docs.page(PageKind::Resource, "thing").unwrap();
    assert_eq!(thing.title.as_deref(), Some("widget_thing Resource - acme"));
    assert_eq!(thing.subcategory.as_deref(), Some("Things"));
    assert_eq!(
        thing.description.as_deref(),
        Some("Manages a thing.\nTwo lines.")
    );
    assert!(
        thing.markdown.starts_with("\n# widget_thing"),
        "{:?}",
        thing.markdown
    );
    assert!(!thing.truncated);
    let guide = docs.page(PageKind::Guide, "getting-started").unwrap();
    assert_eq!(guide.title.as_deref(), Some("Getting started"));
    assert_eq!(guide.markdown, "Hi");
    assert_eq!(docs.omitted, 0);
}

#[test]
fn pages_without_the_docs_folder_and_older_suffixes_are_read() {
    let docs = read_bytes(&zip(&[
        ("index.md", b"# Widget"),
        ("resources/thing.html.markdown", b"thing"),
        ("data-sources/other.markdown", b"other"),
    ]))
    .unwrap();
    assert!(docs.page(PageKind::Index, "index").is_some());
    assert_eq!(
        docs.page(PageKind::Resource, "thing").unwrap().markdown,
        "thing"
    );
    assert!(docs.page(PageKind::DataSource, "other").is_some());
}

#[test]
fn a_page_without_a_closing_fence_has_no_front_matter() {
    let (front, body) = front_matter::split("---\npage_title: x\n# no end");
    assert_eq!(front, front_matter::FrontMatter::default());
    assert_eq!(body, "---\npage_title: x\n# no end");
    let (front, body) = front_matter::split("\u{feff}---\r\nsubcategory: 'It''s'\r\n---\r\nText");
    assert_eq!(front.subcategory.as_deref(), Some("It's"));
    assert_eq!(body, "Text");
}

#[test]
fn parent_paths_are_refused() {
    let reason = refusal(&zip(&[
        ("docs/../../etc/resources/x.md", b"x"),
        ("docs/index.md", b"x"),
    ]));
    assert!(reason.contains("`..`"), "{reason}");
}

#[test]
fn absolute_paths_are_refused() {
    let reason = refusal(&zip(&[("/docs/index.md", b"x")]));
    assert!(reason.contains("absolute path"), "{reason}");
}

#[test]
fn an_oversized_page_is_cut_and_marked() {
    let big = format!("# big\n{}", "é".repeat(MAX_PAGE_BYTES));
    let docs = read_bytes(&zip(&[("docs/resources/big.md", big.as_bytes())])).unwrap();
    let page = docs.page(PageKind::Resource, "big").unwrap();
    assert!(page.truncated);
    assert!(page.markdown.len() <= MAX_PAGE_BYTES);
    assert!(page.markdown.starts_with("# big\n"));
}

#[test]
fn pages_past_the_record_budget_are_left_out_and_counted() {
    let body = "x".repeat(MAX_PAGE_BYTES - 100);
    let names: Vec<String> = (0..10).map(|i| format!("docs/resources/r{i}.md")).collect();
    let files: Vec<(&str, &[u8])> = names
        .iter()
        .map(|n| (n.as_str(), body.as_bytes()))
        .collect();
    let docs = read_bytes(&zip(&files)).unwrap();
    assert!(docs.omitted > 0);
    assert_eq!(docs.pages.len() + docs.omitted, 10);
    assert!(serde_json::to_vec(&docs).unwrap().len() < MAX_PROVIDER_DOCS_BYTES);
    assert_eq!(docs.pages[0].name, "r0");
}

#[test]
fn a_file_that_is_not_a_zip_is_refused_saying_so() {
    let reason = refusal(b"# just markdown, not a zip\n");
    assert!(reason.contains("not a zip"), "{reason}");
}

#[test]
fn a_zip_without_pages_is_refused_saying_what_pages_are() {
    let reason = refusal(&zip(&[("README.md", b"x"), ("docs/other/x.md", b"x")]));
    assert!(reason.contains("no documentation page"), "{reason}");
    assert!(reason.contains("docs/resources/<name>.md"), "{reason}");
    let reason = refusal(&zip(&[]));
    assert!(reason.contains("no documentation page"), "{reason}");
}

#[test]
fn odd_page_names_are_ignored() {
    let docs = read_bytes(&zip(&[
        ("docs/resources/bad name.md", b"x"),
        ("docs/resources/.hidden.md", b"x"),
        ("docs/resources/ok_name.md", b"x"),
    ]))
    .unwrap();
    let names: Vec<&str> = docs.pages.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["ok_name"]);
}
