//! A version's attachments on its module or provider page: kind, file name (linked to its
//! signed download URL), size, and whether a key of the namespace signed it.

use axum::response::Response;
use maud::{html, Markup};
use tfreg_core::layout::NoticeTarget;
use tfreg_core::protocol::details::Attachment;
use tfreg_core::Version;

use super::store_failure;
use crate::extract::RequestOrigin;
use crate::web::{Viewer, WebState};

/// The attachments of `target`'s `version` the viewer may see, or the page that says the
/// store failed.
pub async fn of(
    state: &WebState,
    viewer: &Viewer,
    origin: &RequestOrigin,
    target: NoticeTarget,
    version: &Version,
) -> Result<Vec<Attachment>, Response> {
    state
        .registry
        .attachments(&viewer.access, &target, version, &origin.0)
        .await
        .map_err(store_failure)
}

/// The "Attachments" section; nothing when the version has none.
pub fn section(attachments: &[Attachment]) -> Markup {
    html! {
        @if !attachments.is_empty() {
            section aria-labelledby="attachments-heading" {
                h2 #attachments-heading { "Attachments (" (attachments.len()) ")" }
                ul #attachments {
                    @for a in attachments {
                        li {
                            span.tag { (a.kind.label()) } " "
                            a href=(a.download_url) rel="nofollow" download=(a.filename) { (a.filename) }
                            " " span.muted { (size(a.size)) }
                            " "
                            @if let Some(key_id) = &a.key_id {
                                span.tag.verified title="signed by a key of this namespace" { "verified · key " code { (key_id) } }
                            } @else {
                                span.tag.unverified title=(a.unverified_reason.as_deref().unwrap_or("")) { "unverified" }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn size(bytes: u64) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MiB", bytes as f64 / 1_048_576.0),
    }
}
