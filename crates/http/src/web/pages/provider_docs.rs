//! A provider version's documentation pages (its `docs.zip`): the overview at
//! `/providers/NS/TYPE/VERSION/docs`, a page at `.../docs/{resources|data-sources|guides}/NAME`,
//! its Markdown rendered and sanitised like a module's README; and the list of pages the
//! provider page shows.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;
use maud::{html, Markup, PreEscaped};
use tfreg_core::provider_docs::{DocPage, PageKind, ProviderDocs};
use tfreg_core::{ProviderAddress, Version};

use super::{failure, not_found};
use crate::extract::JsonPath;
use crate::web::{html, layout, markdown, Viewer, WebState};

/// `GET /providers/{ns}/{type}/{version}/docs`: the overview (`docs/index.md`).
pub async fn overview(
    State(state): State<WebState>,
    Extension(viewer): Extension<Viewer>,
    JsonPath((namespace, type_, version)): JsonPath<(String, String, String)>,
) -> Response {
    show(
        &state,
        &viewer,
        (&namespace, &type_, &version),
        PageKind::Index,
        "index",
    )
    .await
}

/// `GET /providers/{ns}/{type}/{version}/docs/{kind}/{name}`.
pub async fn page(
    State(state): State<WebState>,
    Extension(viewer): Extension<Viewer>,
    JsonPath((namespace, type_, version, kind, name)): JsonPath<(
        String,
        String,
        String,
        String,
        String,
    )>,
) -> Response {
    match PageKind::from_folder(&kind).filter(|k| *k != PageKind::Index) {
        Some(kind) => show(&state, &viewer, (&namespace, &type_, &version), kind, &name).await,
        None => not_found(&viewer, "There is no such documentation page."),
    }
}

async fn show(
    state: &WebState,
    viewer: &Viewer,
    (namespace, type_, version): (&str, &str, &str),
    kind: PageKind,
    name: &str,
) -> Response {
    let Ok(provider) = ProviderAddress::parse(namespace, type_) else {
        return not_found(viewer, "There is no such provider.");
    };
    let Ok(version) = Version::parse(version) else {
        return not_found(viewer, &format!("{version:?} is not a version."));
    };
    let docs = match state
        .registry
        .provider_docs(&viewer.access, &provider, &version)
        .await
    {
        Ok(docs) => docs,
        Err(e) => return failure(viewer, e),
    };
    let Some(page) = docs.as_ref().and_then(|d| d.page(kind, name)) else {
        return not_found(viewer, "There is no such documentation page.");
    };
    let title = format!("{} · {provider} {version}", shown_name(&provider, page));
    let body = render(&provider, &version, page, state.options.remote_images);
    html(StatusCode::OK, layout::page(&title, Some(viewer), body))
}

/// The name a page is listed by: a resource or data source by the type Terraform
/// configurations write (`widget_thing` for `resources/thing.md` of `acme/widget`).
pub fn shown_name(provider: &ProviderAddress, page: &DocPage) -> String {
    let prefix = format!("{}_", provider.type_);
    match page.kind {
        PageKind::Resource | PageKind::DataSource if !page.name.starts_with(&prefix) => {
            format!("{prefix}{}", page.name)
        }
        PageKind::Index => "Overview".to_owned(),
        _ => page.title.clone().unwrap_or_else(|| page.name.clone()),
    }
}

fn render(provider: &ProviderAddress, version: &Version, page: &DocPage, remote: bool) -> Markup {
    let base = format!("/providers/{provider}/{version}");
    html! {
        p.muted {
            a href=(base) { (provider) " " (version.to_string()) }
            " / " (page.kind.heading())
            @if let Some(subcategory) = &page.subcategory { " / " (subcategory) }
        }
        h1 #doc-title { (shown_name(provider, page)) }
        @if let Some(description) = &page.description {
            p.muted #doc-description { (description) }
        }
        div.readme #doc-body { (PreEscaped(&*markdown::render_cached(&page.markdown, remote))) }
        @if page.truncated {
            p.muted { "The page was cut: it is longer than the registry keeps." }
        }
    }
}

/// The provider page's list of a version's pages, linked, by kind.
pub fn list(provider: &ProviderAddress, version: &Version, docs: &ProviderDocs) -> Markup {
    let base = format!("/providers/{provider}/{version}/docs");
    html! {
        section #docs aria-labelledby="docs-heading" {
            h2 #docs-heading { "Documentation" }
            @if docs.page(PageKind::Index, "index").is_some() {
                p { a #docs-overview href=(base) { "Overview" } }
            }
            @for kind in [PageKind::Guide, PageKind::Resource, PageKind::DataSource] {
                @let pages: Vec<&DocPage> = docs.of_kind(kind).collect();
                @if !pages.is_empty() {
                    h3 { (kind.heading()) " (" (pages.len()) ")" }
                    ul id=(format!("docs-{}", kind.folder())) {
                        @for page in pages {
                            li {
                                a href=(format!("{base}/{}/{}", kind.folder(), page.name)) {
                                    (shown_name(provider, page))
                                }
                            }
                        }
                    }
                }
            }
            @if docs.omitted > 0 {
                p.muted { (docs.omitted) " more pages were left out: the documentation is larger than the registry keeps." }
            }
        }
    }
}
