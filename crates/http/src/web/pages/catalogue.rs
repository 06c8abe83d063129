//! The catalogue (`/`): modules and providers, searched by words and filtered by namespace
//! and system; and a namespace's page (`/namespaces/{ns}`), the catalogue of one namespace.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;
use maud::{html, Markup, PreEscaped};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tfreg_core::names::ModuleSystem;
use tfreg_core::protocol::details::ModuleList;
use tfreg_core::registry::modules::MAX_QUERY_CHARS;
use tfreg_core::registry::{ModuleFilter, Page, ProviderFilter, ProviderSummary};
use tfreg_core::Namespace;

use super::connect::{panel, Connect};
use super::{date, failure, not_found, registry_host};
use crate::extract::{JsonPath, RequestOrigin};
use crate::web::{html, layout, Viewer, WebState};

/// How many modules a catalogue page shows.
const MODULES_PER_PAGE: &str = "30";

/// At most this many module sections are kept rendered; past it, all are dropped.
const MAX_RENDERED: usize = 64;

/// The module sections as rendered, by the page of the catalogue they show. The registry
/// hands out the same page (one [`Arc`]) while the listing holds, made from everything the
/// section shows (scope, filters, page, links), so a page seen again is not rendered again;
/// each entry holds its page, so its address is never another page's.
#[derive(Default)]
pub struct RenderedSections {
    sections: Mutex<HashMap<usize, Rendered>>,
}

/// A page of the catalogue, and its module section's HTML.
type Rendered = (Arc<ModuleList>, Arc<str>);

impl RenderedSections {
    /// The module section of `modules`, rendered once.
    fn section(&self, modules: &Arc<ModuleList>, path: &str, params: &[(&str, &str)]) -> Markup {
        let at = Arc::as_ptr(modules) as usize;
        let kept = self.sections.lock().ok().and_then(|sections| {
            sections
                .get(&at)
                .filter(|(page, _)| Arc::ptr_eq(page, modules))
                .map(|(_, html)| Arc::clone(html))
        });
        let html = kept.unwrap_or_else(|| {
            let html: Arc<str> = module_section(modules, path, params).into_string().into();
            if let Ok(mut sections) = self.sections.lock() {
                if sections.len() >= MAX_RENDERED {
                    sections.clear();
                }
                sections.insert(at, (Arc::clone(modules), Arc::clone(&html)));
            }
            html
        });
        PreEscaped(html.to_string())
    }
}

/// The catalogue's query.
#[derive(Debug, Default, Deserialize)]
pub struct CatalogueQuery {
    q: Option<String>,
    namespace: Option<String>,
    system: Option<String>,
    offset: Option<String>,
}

/// The filters, checked: empty fields are no filter.
struct Filters {
    query: Option<String>,
    namespace: Option<Namespace>,
    system: Option<String>,
    page: Page,
}

impl CatalogueQuery {
    fn check(self) -> Result<Filters, String> {
        let given = |v: Option<String>| v.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let query = given(self.q);
        if query
            .as_ref()
            .is_some_and(|q| q.chars().count() > MAX_QUERY_CHARS)
        {
            return Err(format!(
                "The search is longer than {MAX_QUERY_CHARS} characters."
            ));
        }
        let namespace = given(self.namespace)
            .map(|n| Namespace::parse(&n).map_err(|e| format!("Namespace: {e}")))
            .transpose()?;
        let system = given(self.system)
            .map(|s| {
                ModuleSystem::parse(&s)
                    .map(|s| s.to_string())
                    .map_err(|e| format!("System: {e}"))
            })
            .transpose()?;
        let page = Page::parse(Some(MODULES_PER_PAGE), given(self.offset).as_deref())?;
        Ok(Filters {
            query,
            namespace,
            system,
            page,
        })
    }
}

/// `GET /`.
pub async fn page(
    State(state): State<WebState>,
    Extension(viewer): Extension<Viewer>,
    origin: RequestOrigin,
    query: Result<Query<CatalogueQuery>, QueryRejection>,
) -> Response {
    let filters = query
        .map_err(|e| e.body_text())
        .and_then(|Query(q)| q.check());
    match filters {
        Ok(filters) => {
            let host = registry_host(&state.registry, &origin);
            let connect = Connect {
                host: &host,
                public: viewer.public,
                login: state.sign_in_with.is_some(),
            };
            listing(&state, &viewer, filters, None, Some(&connect)).await
        }
        Err(problem) => {
            let body = html! {
                h1 { "Catalogue" }
                (search_form(&Filters { query: None, namespace: None, system: None, page: Page::default() }, None))
                p.bad role="alert" { (problem) }
            };
            html(
                StatusCode::BAD_REQUEST,
                layout::page("Catalogue", Some(&viewer), body),
            )
        }
    }
}

/// `GET /namespaces/{namespace}`.
pub async fn namespace(
    State(state): State<WebState>,
    Extension(viewer): Extension<Viewer>,
    JsonPath(namespace): JsonPath<String>,
    query: Result<Query<CatalogueQuery>, QueryRejection>,
) -> Response {
    let Ok(namespace) = Namespace::parse(&namespace) else {
        return not_found(&viewer, "There is no such namespace.");
    };
    if !viewer.access.allows(&namespace) {
        return not_found(&viewer, &format!("Nothing is published under {namespace}."));
    }
    let filters = query
        .map_err(|e| e.body_text())
        .and_then(|Query(q)| q.check());
    let Ok(mut filters) = filters else {
        return not_found(&viewer, "The filters of this page are not valid.");
    };
    filters.namespace = Some(namespace.clone());
    listing(&state, &viewer, filters, Some(&namespace), None).await
}

async fn listing(
    state: &WebState,
    viewer: &Viewer,
    filters: Filters,
    fixed: Option<&Namespace>,
    connect: Option<&Connect<'_>>,
) -> Response {
    let module_filter = ModuleFilter {
        namespace: filters.namespace.clone(),
        name: None,
        system: filters.system.clone(),
        query: filters.query.clone(),
    };
    let provider_filter = ProviderFilter {
        namespace: filters.namespace.clone(),
        type_: filters.system.clone(),
        query: filters.query.clone(),
    };
    let path = match fixed {
        Some(namespace) => format!("/namespaces/{namespace}"),
        None => "/".to_owned(),
    };
    let mut params: Vec<(&str, &str)> = Vec::new();
    if let Some(q) = &filters.query {
        params.push(("q", q));
    }
    let namespace_param = filters.namespace.as_ref().map(|n| n.to_string());
    if let (Some(namespace), None) = (&namespace_param, fixed) {
        params.push(("namespace", namespace));
    }
    if let Some(system) = &filters.system {
        params.push(("system", system));
    }
    let registry = &state.registry;
    let (modules, providers) = futures_util::future::join(
        registry.list_modules(&viewer.access, &module_filter, filters.page, &path, &params),
        registry.list_providers(&viewer.access, &provider_filter),
    )
    .await;
    let modules = match modules {
        Ok(modules) => modules,
        Err(e) => return failure(viewer, e),
    };
    let providers = match providers {
        Ok(providers) => providers,
        Err(e) => return failure(viewer, e),
    };
    if let (Some(namespace), true) = (
        fixed,
        modules.modules.is_empty() && providers.is_empty() && filters.page.offset == 0,
    ) {
        let filtered = filters.query.is_some() || filters.system.is_some();
        if !filtered {
            return not_found(viewer, &format!("Nothing is published under {namespace}."));
        }
    }
    let title = match fixed {
        Some(namespace) => format!("Namespace {namespace}"),
        None => "Catalogue".to_owned(),
    };
    let body = html! {
        h1 { (title) }
        (search_form(&filters, fixed))
        (state.rendered.section(&modules, &path, &params))
        (provider_section(&providers, filters.page.offset))
        @if let Some(connect) = connect { (panel(connect)) }
    };
    html(StatusCode::OK, layout::page(&title, Some(viewer), body))
}

fn search_form(filters: &Filters, fixed: Option<&Namespace>) -> Markup {
    let action = match fixed {
        Some(namespace) => format!("/namespaces/{namespace}"),
        None => "/".to_owned(),
    };
    html! {
        form.search method="get" action=(action) role="search" {
            label for="q" {
                "Search"
                input #q type="search" name="q" value=[filters.query.as_deref()]
                    placeholder="vpc network" maxlength=(MAX_QUERY_CHARS);
            }
            @if fixed.is_none() {
                label for="namespace" {
                    "Namespace"
                    input #namespace type="text" name="namespace"
                        value=[filters.namespace.as_ref().map(|n| n.to_string())]
                        placeholder="any" autocapitalize="none" spellcheck="false";
                }
            }
            label for="system" {
                "System"
                input #system type="text" name="system" value=[filters.system.as_deref()]
                    placeholder="any (aws, azurerm…)" autocapitalize="none" spellcheck="false";
            }
            button type="submit" { "Search" }
            @if filters.query.is_some() || filters.system.is_some() || (fixed.is_none() && filters.namespace.is_some()) {
                a href=(action) { "Clear filters" }
            }
        }
    }
}

fn module_section(modules: &ModuleList, path: &str, params: &[(&str, &str)]) -> Markup {
    let meta = &modules.meta;
    html! {
        section aria-labelledby="modules-heading" {
            h2 #modules-heading { "Modules" }
            @if modules.modules.is_empty() {
                p.muted { "No modules match." }
            } @else {
                ul.cards #modules {
                    @for module in &modules.modules {
                        li {
                            a.title href=(format!("/modules/{}/{}/{}", module.namespace, module.name, module.provider)) {
                                (module.namespace) "/" (module.name) "/" (module.provider)
                            }
                            p { (if module.description.is_empty() { "No description." } else { module.description.as_str() }) }
                            p.muted {
                                a.tag href=(format!("/namespaces/{}", module.namespace)) { (module.namespace) }
                                " "
                                a.tag href=(format!("/?system={}", module.provider)) { (module.provider) }
                                " v" (module.version.to_string())
                                " · " (date(module.published_at.as_deref()))
                            }
                        }
                    }
                }
                @if meta.prev_offset.is_some() || meta.next_url.is_some() {
                    nav.pages aria-label="Module pages" {
                        @if let Some(prev) = meta.prev_offset {
                            a href=(page_link(path, params, prev)) rel="prev" { "← Previous" }
                        }
                        @if let Some(next) = meta.next_offset {
                            a href=(page_link(path, params, next)) rel="next" { "Next →" }
                        }
                    }
                }
            }
        }
    }
}

/// The link to the page at `offset`, with this page's filters.
fn page_link(path: &str, params: &[(&str, &str)], offset: usize) -> String {
    let mut query: Vec<String> = Vec::new();
    if offset > 0 {
        query.push(format!("offset={offset}"));
    }
    for (name, value) in params {
        query.push(format!(
            "{name}={}",
            crate::web::sign_in::encode_query_value(value)
        ));
    }
    match query.is_empty() {
        true => path.to_owned(),
        false => format!("{path}?{}", query.join("&")),
    }
}

fn provider_section(providers: &[ProviderSummary], offset: usize) -> Markup {
    html! {
        section aria-labelledby="providers-heading" {
            h2 #providers-heading { "Providers" }
            @if offset > 0 {
                p.muted { "Providers are listed on the first page." }
            } @else if providers.is_empty() {
                p.muted { "No providers match." }
            } @else {
                ul.cards #providers {
                    @for provider in providers {
                        li {
                            a.title href=(format!("/providers/{}", provider.address)) { (provider.address) }
                            p.muted {
                                a.tag href=(format!("/namespaces/{}", provider.address.namespace)) { (provider.address.namespace) }
                                " v" (provider.latest.to_string())
                                " · " (provider.versions) (if provider.versions == 1 { " version" } else { " versions" })
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfreg_core::protocol::details::{ListMeta, ModuleEntry};

    fn page(names: &[&str]) -> Arc<ModuleList> {
        let modules = names
            .iter()
            .map(|name| ModuleEntry {
                id: format!("acme/{name}/aws/1.0.0"),
                owner: String::new(),
                namespace: "acme".into(),
                name: (*name).into(),
                version: tfreg_core::Version::parse("1.0.0").unwrap(),
                provider: "aws".into(),
                description: String::new(),
                source: None,
                published_at: None,
                downloads: 0,
                verified: false,
                deprecation: None,
            })
            .collect();
        let meta = ListMeta {
            limit: 30,
            current_offset: 0,
            next_offset: None,
            prev_offset: None,
            next_url: None,
        };
        Arc::new(ModuleList { meta, modules })
    }

    #[test]
    fn a_section_is_rendered_once_per_page_and_never_shown_for_another() {
        let rendered = RenderedSections::default();
        let network = page(&["network"]);
        let first = rendered.section(&network, "/", &[]).into_string();
        assert!(first.contains("acme/network/aws"));
        assert_eq!(rendered.section(&network, "/", &[]).into_string(), first);
        assert_eq!(rendered.sections.lock().unwrap().len(), 1, "kept once");
        // Another page (another listing, filter or scope) is rendered for itself.
        let dns = page(&["dns"]);
        let second = rendered.section(&dns, "/", &[]).into_string();
        assert!(second.contains("acme/dns/aws") && !second.contains("network"));
        // The bound holds.
        for _ in 0..MAX_RENDERED * 2 {
            rendered.section(&page(&["x"]), "/", &[]);
        }
        assert!(rendered.sections.lock().unwrap().len() <= MAX_RENDERED);
    }
}
