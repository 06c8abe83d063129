//! A module version's page: its README, inputs, outputs, required providers, resources,
//! submodules and examples, its versions with their publish times, and a `module` block to
//! copy, with this registry's hostname and a `~>` constraint.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;
use maud::{html, Markup, PreEscaped};
use tfreg_core::module_docs::ModulePart;
use tfreg_core::registry::modules::{ModulePage, VersionPublished};
use tfreg_core::registry::RegistryError;
use tfreg_core::usage::Subject;

use super::usage::Counted;
use tfreg_core::{ModuleAddress, Version};

use super::{date, failure, lifecycle, not_found, pessimistic_constraint, registry_host};
use crate::extract::{JsonPath, RequestOrigin};
use crate::web::{html, layout, markdown, Viewer, WebState};

/// `GET /modules/{ns}/{name}/{system}`: the latest release.
pub async fn latest(
    State(state): State<WebState>,
    Extension(viewer): Extension<Viewer>,
    origin: RequestOrigin,
    JsonPath((namespace, name, system)): JsonPath<(String, String, String)>,
) -> Response {
    show(&state, &viewer, &origin, (&namespace, &name, &system), None).await
}

/// `GET /modules/{ns}/{name}/{system}/{version}`.
pub async fn version(
    State(state): State<WebState>,
    Extension(viewer): Extension<Viewer>,
    origin: RequestOrigin,
    JsonPath((namespace, name, system, version)): JsonPath<(String, String, String, String)>,
) -> Response {
    let Ok(version) = Version::parse(&version) else {
        return not_found(&viewer, &format!("{version:?} is not a version."));
    };
    show(
        &state,
        &viewer,
        &origin,
        (&namespace, &name, &system),
        Some(&version),
    )
    .await
}

async fn show(
    state: &WebState,
    viewer: &Viewer,
    origin: &RequestOrigin,
    (namespace, name, system): (&str, &str, &str),
    version: Option<&Version>,
) -> Response {
    let Ok(address) = ModuleAddress::parse(namespace, name, system) else {
        return not_found(viewer, "There is no such module.");
    };
    let mut page = match state
        .registry
        .module_page(&viewer.access, &address, version)
        .await
    {
        Ok(page) => page,
        Err(e @ RegistryError::NotFound(_)) => {
            let found = state
                .registry
                .module_withdrawn(&viewer.access, &address)
                .await;
            return lifecycle::not_served(viewer, e, &format!("module {address}"), found);
        }
        Err(e) => return failure(viewer, e),
    };
    let target = tfreg_core::layout::NoticeTarget::Module {
        address: address.clone(),
    };
    match super::attachments::of(state, viewer, origin, target, &page.details.entry.version).await {
        Ok(found) => page.details.attachments = found,
        Err(response) => return response,
    }
    let host = registry_host(&state.registry, origin);
    let title = format!("{address} {}", page.details.entry.version);
    let counted = Counted::read(
        state,
        viewer,
        Subject::Module {
            address: address.clone(),
        },
    )
    .await;
    let body = render(
        &address,
        &page,
        &host,
        state.options.remote_images,
        &counted,
    );
    html(StatusCode::OK, layout::page(&title, Some(viewer), body))
}

/// The `module` block to copy.
pub fn usage(address: &ModuleAddress, version: &Version, host: &str, root: &ModulePart) -> String {
    let mut block = format!(
        "module \"{}\" {{\n  source  = \"{host}/{address}\"\n  version = \"{}\"\n",
        address.name.as_str().replace('-', "_"),
        pessimistic_constraint(version)
    );
    let required: Vec<_> = root.inputs.iter().filter(|i| i.required).collect();
    if !required.is_empty() {
        block.push_str("\n  # Required inputs:\n");
        for input in required {
            let type_ = match input.type_.is_empty() {
                true => "any",
                false => input.type_.as_str(),
            };
            // A multi-line type would break the comment: its first line is enough here.
            let type_ = type_.lines().next().unwrap_or("any");
            block.push_str(&format!("  # {} = <{type_}>\n", input.name));
        }
    }
    block.push_str("}\n");
    block
}

/// A publisher's repository as a link only when it is a web address.
fn source_link(source: &str) -> Markup {
    let web = source.starts_with("https://") || source.starts_with("http://");
    html! {
        @if web {
            a href=(source) rel="noopener noreferrer nofollow" { (source) }
        } @else {
            code { (source) }
        }
    }
}

fn render(
    address: &ModuleAddress,
    page: &ModulePage,
    host: &str,
    remote_images: bool,
    counted: &Counted,
) -> Markup {
    let details = &page.details;
    let entry = &details.entry;
    let root = &details.root;
    let base = format!("/modules/{address}");
    html! {
        p.muted {
            a href=(format!("/namespaces/{}", address.namespace)) { (address.namespace) }
            " / module"
        }
        h1 { (address.name) " " span.tag { (address.system) } }
        p #description { (if entry.description.is_empty() { "No description." } else { entry.description.as_str() }) }
        p.muted {
            "Version " strong #version { (entry.version.to_string()) }
            " · published " (date(entry.published_at.as_deref()))
            @if let Some(source) = &entry.source { " · source " (source_link(source)) }
        }
        (signature(details.signed_by.as_ref(), &address.namespace))
        (lifecycle::banner(&base, entry.deprecation.as_ref()))
        section.wide aria-labelledby="usage-heading" {
            h2 #usage-heading { "Usage" }
            (layout::copyable("module-block", "module block", &usage(address, &entry.version, host, root)))
            @if let Some(required) = &root.required_version {
                p.muted { "Terraform " code { (required) } }
            }
            @if details.providers.len() > 1 {
                p { "Also for: "
                    @for system in details.providers.iter().filter(|s| s.as_str() != address.system.as_str()) {
                        a.tag href=(format!("/modules/{}/{}/{system}", address.namespace, address.name)) { (system) } " "
                    }
                }
            }
        }
        div.layout {
            div {
                section aria-labelledby="readme-heading" {
                    h2 #readme-heading { "README" }
                    (readme(root, remote_images))
                }
                (inputs(root))
                (outputs(root))
                (providers(root))
                (resources(root))
                (module_calls(root))
                (parts("Submodules", "submodules", &details.submodules, remote_images))
                (parts("Examples", "examples", &details.examples, remote_images))
                (counted.sections(&entry.version, false))
            }
            aside {
                section aria-labelledby="versions-heading" {
                    h2 #versions-heading { "Versions" }
                    (versions(&base, &entry.version, &page.published))
                }
                (hashes(&details.hashes))
                (super::attachments::section(&details.attachments))
                (lifecycle::withdrawn(&details.withdrawn))
            }
        }
    }
}

/// Who signed the shown version (docs/module-signing.md): a key of the namespace, checked
/// at publish; or that it is not signed.
fn signature(
    signed_by: Option<&tfreg_core::protocol::details::ModuleSigner>,
    namespace: &tfreg_core::Namespace,
) -> Markup {
    let note = signed_by.and_then(|by| {
        tfreg_core::gpg::signer_expiry_note(
            &by.key_id,
            by.key_expires_at,
            std::time::SystemTime::now(),
        )
    });
    html! {
        @if let Some(note) = note {
            // The deprecation banner's style: a note, not an error.
            div.deprecation #key-expiry role="note" { p { (note) } }
        }
        p.muted #signature {
            @match signed_by {
                Some(by) => {
                    "Signed by " code #signed-by { (by.key_id) }
                    ", a key of namespace " (namespace.as_str()) ", verified at publish."
                }
                None => { "Not signed." }
            }
        }
    }
}

/// The shown version's `h1:` and `zh:`, and how to check an installed copy against them.
fn hashes(hashes: &[String]) -> Markup {
    html! {
        section aria-labelledby="hashes-heading" {
            h2 #hashes-heading { "Hashes" }
            @if hashes.is_empty() {
                p.muted { "Not recorded yet." }
            } @else {
                ul #hashes { @for hash in hashes { li { code { (hash) } } } }
                p.muted {
                    "After " code { "terraform init" } ", run " code { "tfreg verify" }
                    " in the working directory: it compares each installed module's " code { "h1:" }
                    " with this one."
                }
            }
        }
    }
}

/// Every served version, newest first, each with the date it was published.
fn versions(base: &str, shown: &Version, published: &[VersionPublished]) -> Markup {
    html! {
        ul.versions #versions {
            @for published in published.iter().rev() {
                li {
                    @if published.version == *shown {
                        strong aria-current="page" { (published.version.to_string()) }
                    } @else {
                        a href=(format!("{base}/{}", published.version)) { (published.version.to_string()) }
                    }
                    (lifecycle::badge(published.deprecated))
                    " "
                    @match published.published_at.as_deref() {
                        Some(at) => time.muted datetime=(at) { (date(Some(at))) },
                        None => span.muted { "date unknown" },
                    }
                }
            }
        }
    }
}

fn readme(part: &ModulePart, remote_images: bool) -> Markup {
    html! {
        @if part.readme.trim().is_empty() {
            p.muted { "No README." }
        } @else {
            div.readme { (PreEscaped(&*markdown::render_cached(&part.readme, remote_images))) }
            @if part.readme_truncated {
                p.muted { "The README was cut: it is longer than the registry keeps." }
            }
        }
    }
}

fn inputs(part: &ModulePart) -> Markup {
    html! {
        section aria-labelledby="inputs-heading" {
            h2 #inputs-heading { "Inputs (" (part.inputs.len()) ")" }
            @if part.inputs.is_empty() {
                p.muted { "No inputs." }
            } @else {
                div.table { table #inputs {
                    thead { tr { th scope="col" { "Name" } th scope="col" { "Type" } th scope="col" { "Description" } th scope="col" { "Default" } } }
                    tbody {
                        @for input in &part.inputs {
                            tr {
                                td { code { (input.name) } @if input.required { " " span.tag { "required" } } @if input.sensitive { " " span.tag { "sensitive" } } }
                                td { code { (input.type_) } }
                                td { (input.description) }
                                td { @if let Some(default) = &input.default { code { (default) } } @else { span.muted { "none" } } }
                            }
                        }
                    }
                } }
            }
        }
    }
}

fn outputs(part: &ModulePart) -> Markup {
    html! {
        section aria-labelledby="outputs-heading" {
            h2 #outputs-heading { "Outputs (" (part.outputs.len()) ")" }
            @if part.outputs.is_empty() {
                p.muted { "No outputs." }
            } @else {
                div.table { table #outputs {
                    thead { tr { th scope="col" { "Name" } th scope="col" { "Description" } } }
                    tbody {
                        @for output in &part.outputs {
                            tr {
                                td { code { (output.name) } @if output.sensitive { " " span.tag { "sensitive" } } }
                                td { (output.description) }
                            }
                        }
                    }
                } }
            }
        }
    }
}

fn providers(part: &ModulePart) -> Markup {
    html! {
        section aria-labelledby="providers-heading" {
            h2 #providers-heading { "Required providers" }
            @if part.provider_dependencies.is_empty() {
                p.muted { "None declared." }
            } @else {
                div.table { table #required-providers {
                    thead { tr { th scope="col" { "Name" } th scope="col" { "Source" } th scope="col" { "Version" } } }
                    tbody {
                        @for provider in &part.provider_dependencies {
                            tr { td { code { (provider.name) } } td { code { (provider.source) } } td { code { (provider.version) } } }
                        }
                    }
                } }
            }
        }
    }
}

/// The `resource` blocks (data sources are not listed), counted as listed.
fn resources(part: &ModulePart) -> Markup {
    html! {
        section aria-labelledby="resources-heading" {
            h2 #resources-heading { "Resources (" (part.resources.len()) ")" }
            @if part.resources.is_empty() {
                p.muted { "None." }
            } @else {
                ul #resources {
                    @for resource in &part.resources {
                        li { code { (resource.type_) "." (resource.name) } }
                    }
                }
            }
        }
    }
}

/// The `module` blocks: a list of their own, so neither heading counts the other's.
fn module_calls(part: &ModulePart) -> Markup {
    html! {
        section aria-labelledby="module-calls-heading" {
            h2 #module-calls-heading { "Module calls (" (part.dependencies.len()) ")" }
            @if part.dependencies.is_empty() {
                p.muted { "None." }
            } @else {
                ul #module-calls {
                    @for call in &part.dependencies {
                        li {
                            "module " code { (call.name) } " from " code { (call.source) }
                            @if !call.version.is_empty() { " " code { (call.version) } }
                        }
                    }
                }
            }
        }
    }
}

fn parts(title: &str, id: &str, parts: &[ModulePart], remote_images: bool) -> Markup {
    html! {
        section aria-labelledby=(format!("{id}-heading")) {
            h2 id=(format!("{id}-heading")) { (title) " (" (parts.len()) ")" }
            @if parts.is_empty() {
                p.muted { "None." }
            }
            @for part in parts {
                details {
                    summary { code { (part.path) } " · " (part.inputs.len()) " inputs, " (part.outputs.len()) " outputs" }
                    (readme(part, remote_images))
                    (inputs_compact(part))
                }
            }
        }
    }
}

fn inputs_compact(part: &ModulePart) -> Markup {
    html! {
        @if !part.inputs.is_empty() {
            p { "Inputs: "
                @for (i, input) in part.inputs.iter().enumerate() {
                    @if i > 0 { ", " }
                    code { (input.name) }
                }
            }
        }
        @if !part.outputs.is_empty() {
            p { "Outputs: "
                @for (i, output) in part.outputs.iter().enumerate() {
                    @if i > 0 { ", " }
                    code { (output.name) }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfreg_core::module_docs::{ModuleCall, ModuleInput, ModuleResource};

    #[test]
    fn versions_are_listed_newest_first_with_their_dates() {
        let v = |s: &str| Version::parse(s).unwrap();
        let published = [
            ("1.0.0", Some("2026-01-05T10:00:00Z")),
            ("1.1.0", Some("2026-03-07T10:00:00Z")),
            ("2.0.0", None),
        ]
        .map(|(version, at)| VersionPublished {
            version: v(version),
            published_at: at.map(String::from),
            deprecated: false,
        });
        let html = versions("/modules/a/b/c", &v("1.1.0"), &published).into_string();
        assert!(
            html.starts_with("<ul class=\"versions\" id=\"versions\">"),
            "{html}"
        );
        let at = |text: &str| html.find(text).unwrap_or_else(|| panic!("{text}: {html}"));
        assert!(
            at("2.0.0") < at("1.1.0") && at("1.1.0") < at("1.0.0"),
            "{html}"
        );
        assert!(
            html.contains(
                "<time class=\"muted\" datetime=\"2026-03-07T10:00:00Z\">2026-03-07</time>"
            ),
            "{html}"
        );
        assert!(
            html.contains("<strong aria-current=\"page\">1.1.0</strong>"),
            "{html}"
        );
        assert!(html.contains("date unknown"), "{html}");
    }

    #[test]
    fn each_heading_counts_what_its_list_shows() {
        let root = ModulePart {
            resources: vec![ModuleResource {
                name: "this".into(),
                type_: "aws_vpc".into(),
            }],
            dependencies: vec![ModuleCall {
                name: "subnets".into(),
                source: "./modules/subnets".into(),
                version: String::new(),
            }],
            ..Default::default()
        };
        let html = html! { (resources(&root)) (module_calls(&root)) }.into_string();
        let list = |id: &str| {
            let start = html.find(&format!("id=\"{id}\"")).unwrap();
            html[start..]
                .split("</ul>")
                .next()
                .unwrap()
                .matches("<li>")
                .count()
        };
        assert!(html.contains("Resources (1)"), "{html}");
        assert_eq!(list("resources"), 1, "{html}");
        assert!(html.contains("Module calls (1)"), "{html}");
        assert_eq!(list("module-calls"), 1, "{html}");
    }

    #[test]
    fn the_module_block_names_the_registry_and_the_required_inputs() {
        let address = ModuleAddress::parse("acme", "vpc-network", "aws").unwrap();
        let root = ModulePart {
            inputs: vec![
                ModuleInput {
                    name: "cidr".into(),
                    type_: "string".into(),
                    required: true,
                    ..Default::default()
                },
                ModuleInput {
                    name: "tags".into(),
                    default: Some("{}".into()),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let block = usage(
            &address,
            &Version::parse("1.4.2").unwrap(),
            "registry.example.test",
            &root,
        );
        assert_eq!(
            block,
            "module \"vpc_network\" {\n  source  = \"registry.example.test/acme/vpc-network/aws\"\n  version = \"~> 1.4\"\n\n  # Required inputs:\n  # cidr = <string>\n}\n"
        );
    }
}
