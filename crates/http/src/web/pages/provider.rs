//! A provider version's page: its versions, platforms, protocols, the ID of the key that
//! signed it, a `required_providers` block to copy, and its documentation pages, listed.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;
use maud::{html, Markup};
use tfreg_core::protocol::details::ProviderDetails;
use tfreg_core::provider_docs::ProviderDocs;
use tfreg_core::registry::RegistryError;
use tfreg_core::usage::Subject;

use super::usage::Counted;
use tfreg_core::{ProviderAddress, Version};

use super::{date, failure, lifecycle, not_found, pessimistic_constraint, registry_host};
use crate::extract::{JsonPath, RequestOrigin};
use crate::web::{html, layout, Viewer, WebState};

/// `GET /providers/{ns}/{type}`: the latest release.
pub async fn latest(
    State(state): State<WebState>,
    Extension(viewer): Extension<Viewer>,
    origin: RequestOrigin,
    JsonPath((namespace, type_)): JsonPath<(String, String)>,
) -> Response {
    show(&state, &viewer, &origin, (&namespace, &type_), None).await
}

/// `GET /providers/{ns}/{type}/{version}`.
pub async fn version(
    State(state): State<WebState>,
    Extension(viewer): Extension<Viewer>,
    origin: RequestOrigin,
    JsonPath((namespace, type_, version)): JsonPath<(String, String, String)>,
) -> Response {
    let Ok(version) = Version::parse(&version) else {
        return not_found(&viewer, &format!("{version:?} is not a version."));
    };
    show(
        &state,
        &viewer,
        &origin,
        (&namespace, &type_),
        Some(&version),
    )
    .await
}

async fn show(
    state: &WebState,
    viewer: &Viewer,
    origin: &RequestOrigin,
    (namespace, type_): (&str, &str),
    version: Option<&Version>,
) -> Response {
    let Ok(provider) = ProviderAddress::parse(namespace, type_) else {
        return not_found(viewer, "There is no such provider.");
    };
    let (mut details, docs) = match state
        .registry
        .provider_details_and_docs(&viewer.access, &provider, version)
        .await
    {
        Ok(found) => found,
        Err(e @ RegistryError::NotFound(_)) => {
            let found = state
                .registry
                .provider_withdrawn(&viewer.access, &provider)
                .await;
            return lifecycle::not_served(viewer, e, &format!("provider {provider}"), found);
        }
        Err(e) => return failure(viewer, e),
    };
    let target = tfreg_core::layout::NoticeTarget::Provider {
        provider: provider.clone(),
    };
    match super::attachments::of(state, viewer, origin, target, &details.version).await {
        Ok(found) => details.attachments = found,
        Err(response) => return response,
    }
    let host = registry_host(&state.registry, origin);
    let title = format!("{provider} {}", details.version);
    let counted = Counted::read(
        state,
        viewer,
        Subject::Provider {
            provider: provider.clone(),
        },
    )
    .await;
    let body = render(&provider, &details, docs.as_ref(), &host, &counted);
    html(StatusCode::OK, layout::page(&title, Some(viewer), body))
}

/// The `required_providers` block to copy.
pub fn usage(provider: &ProviderAddress, version: &Version, host: &str) -> String {
    format!(
        "terraform {{\n  required_providers {{\n    {} = {{\n      source  = \"{host}/{provider}\"\n      version = \"{}\"\n    }}\n  }}\n}}\n",
        provider.type_,
        pessimistic_constraint(version)
    )
}

fn render(
    provider: &ProviderAddress,
    details: &ProviderDetails,
    docs: Option<&ProviderDocs>,
    host: &str,
    counted: &Counted,
) -> Markup {
    html! {
        p.muted {
            a href=(format!("/namespaces/{}", provider.namespace)) { (provider.namespace) }
            " / provider"
        }
        h1 { (provider) }
        p.muted {
            "Version " strong #version { (details.version.to_string()) }
            " · published " (date(details.published_at.as_deref()))
        }
        (lifecycle::banner(&format!("/providers/{provider}"), details.deprecation.as_ref()))
        section.wide aria-labelledby="usage-heading" {
            h2 #usage-heading { "Usage" }
            (layout::copyable("provider-block", "required_providers block", &usage(provider, &details.version, host)))
        }
        div.layout {
            div {
                @if let Some(note) = tfreg_core::gpg::signer_expiry_note(&details.key_id, details.key_expires_at, std::time::SystemTime::now()) {
                    // The deprecation banner's style: a note, not an error.
                    div.deprecation #key-expiry role="note" { p { (note) } }
                }
                dl {
                    dt { "Signing key ID" }
                    dd { code #key-id { (details.key_id) } }
                    dt { "Plugin protocols" }
                    dd #protocols { (details.protocols.join(", ")) }
                }
                section aria-labelledby="platforms-heading" {
                    h2 #platforms-heading { "Platforms (" (details.platforms.len()) ")" }
                    ul #platforms {
                        @for platform in &details.platforms {
                            li { code { (platform.os) "_" (platform.arch) } }
                        }
                    }
                }
                @if let Some(docs) = docs {
                    (super::provider_docs::list(provider, &details.version, docs))
                }
                (counted.sections(&details.version, true))
            }
            aside {
                section aria-labelledby="versions-heading" {
                    h2 #versions-heading { "Versions" }
                    ul.versions #versions {
                        @for version in details.versions.iter().rev() {
                            li {
                                @if *version == details.version {
                                    strong aria-current="page" { (version.to_string()) }
                                } @else {
                                    a href=(format!("/providers/{provider}/{version}")) { (version.to_string()) }
                                }
                                (lifecycle::badge(details.deprecated_versions.contains_key(version)))
                            }
                        }
                    }
                }
                (super::attachments::section(&details.attachments))
                (lifecycle::withdrawn(&details.withdrawn))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_required_providers_block_names_the_registry() {
        let provider = ProviderAddress::parse("acme", "widget").unwrap();
        let block = usage(
            &provider,
            &Version::parse("0.3.1").unwrap(),
            "r.example.test",
        );
        assert!(block.contains("widget = {"), "{block}");
        assert!(
            block.contains("source  = \"r.example.test/acme/widget\""),
            "{block}"
        );
        assert!(block.contains("version = \"~> 0.3.1\""), "{block}");
    }
}
