//! The upstream cache's page (`/upstream`): for each upstream provider the registry knows
//! (those the allow-list names exactly, and those asked for since it started), where it
//! comes from, when its version list was refreshed and whether it is stale, each cached
//! release with its signing key and stored platforms, and what was refused and why.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;
use maud::html;
use tfreg_core::upstream::report::UpstreamReport;

use super::not_found;
use crate::web::{html, layout, Viewer, WebState};

fn when(at: u64) -> String {
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(at))
        .to_string()
}

/// `GET /upstream`.
pub async fn page(State(state): State<WebState>, Extension(viewer): Extension<Viewer>) -> Response {
    let Some(cache) = &state.upstream else {
        return not_found(&viewer, "This registry caches no upstream providers.");
    };
    let mut reports: Vec<UpstreamReport> = Vec::new();
    for up in cache.known() {
        if viewer.access.allows(&up.provider.namespace) {
            reports.push(cache.report(&up).await);
        }
    }
    let rules: Vec<String> = cache
        .settings()
        .rules
        .iter()
        .map(|r| r.to_string())
        .collect();
    let body = html! {
        h1 { "Upstream cache" }
        p { "The network mirror fetches these upstream providers from their origin registries, verifies them and keeps each version for good: "
            @for (i, rule) in rules.iter().enumerate() { @if i > 0 { ", " } code { (rule) } } "." }
        @if reports.is_empty() {
            p { "Nothing has been asked for yet." }
        }
        @for report in &reports {
            section {
                h2 { code { (report.provider) } }
                p {
                    @match report.refreshed_at {
                        Some(at) => { (report.listed) " versions listed, refreshed " (when(at)) "." }
                        None => { "Its version list has not been fetched yet." }
                    }
                }
                @if let (Some(reason), Some(since)) = (&report.stale, report.stale_since) {
                    p.bad role="alert" { "Stale since " (when(since)) ": " (reason) }
                }
                @if !report.cached.is_empty() {
                    table {
                        thead { tr { th { "Version" } th { "Fetched" } th { "Signed by" } th { "Stored" } } }
                        tbody {
                            @for release in &report.cached {
                                tr {
                                    td { (release.version) }
                                    td { (when(release.fetched_at)) }
                                    td { code { (release.signed_by) } }
                                    td { (release.stored.len()) " of " (release.platforms.len()) " platforms"
                                        @if !release.stored.is_empty() { " (" (release.stored.join(", ")) ")" } }
                                }
                            }
                        }
                    }
                }
                @for refused in &report.refused {
                    p.bad { "Refused " (refused.version) " on " (when(refused.at)) ": " (refused.reason) }
                }
            }
        }
    };
    html(
        StatusCode::OK,
        layout::page("Upstream cache", Some(&viewer), body),
    )
}
