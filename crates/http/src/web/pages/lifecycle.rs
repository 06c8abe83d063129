//! What module and provider pages show of deprecations and yank records
//! ([`tfreg_core::lifecycle`]): a banner on a deprecated version's page, a mark in the
//! versions list, and the versions withdrawn with their records. Every word of a notice
//! comes from its publisher: maud escapes it, and nothing here is `PreEscaped`.

use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};
use tfreg_core::protocol::details::{Deprecation, Withdrawn};
use tfreg_core::registry::RegistryError;
use tfreg_core::StoreError;

use super::{date, failure};
use crate::web::{html, layout, Viewer};

/// The page for a module or provider (`what`, its address) or version that is not served:
/// when versions of it were withdrawn with a record, the not-found page lists them, else
/// the usual one.
pub fn not_served(
    viewer: &Viewer,
    error: RegistryError,
    what: &str,
    found: Result<Vec<Withdrawn>, StoreError>,
) -> Response {
    let list = match (&error, found) {
        (RegistryError::NotFound(_), Ok(list)) if !list.is_empty() => list,
        _ => return failure(viewer, error),
    };
    let message = error.to_string();
    let body = html! {
        h1 { (what) }
        p { (message) }
        (withdrawn(&list))
        p { a href="/" { "Back to the catalogue" } }
    };
    html(
        StatusCode::NOT_FOUND,
        layout::page("Not found", Some(viewer), body),
    )
}

/// The banner of a deprecated version: why, what to use instead (a link to that version
/// under `base`, the module's or provider's page), and when it is to be withdrawn.
pub fn banner(base: &str, deprecation: Option<&Deprecation>) -> Markup {
    let Some(deprecation) = deprecation else {
        return html! {};
    };
    html! {
        div.deprecation #deprecation role="note" {
            p {
                strong { "This version is deprecated" }
                ": " span.reason { (shown(&deprecation.reason)) }
            }
            @if deprecation.replacement.is_some() || deprecation.retire_on.is_some() {
                p {
                    @if let Some(replacement) = &deprecation.replacement {
                        "Use "
                        a #replacement href=(format!("{base}/{replacement}")) { (replacement.to_string()) }
                        " instead."
                    }
                    @if let Some(day) = &deprecation.retire_on {
                        @if deprecation.replacement.is_some() { " " }
                        "It is to be withdrawn on " time datetime=(day) { (day) } "."
                    }
                }
            }
            @if let Some(line) = by_at(deprecation.by.as_deref(), deprecation.at.as_deref()) {
                p.muted { "Deprecated " (line) "." }
            }
        }
    }
}

/// The mark of a deprecated version in a versions list.
pub fn badge(deprecated: bool) -> Markup {
    html! {
        @if deprecated {
            " " span.tag.deprecated title="deprecated: still installable" { "deprecated" }
        }
    }
}

/// The versions withdrawn, each with its yank record: "1.2.0 was withdrawn on DATE by
/// WHO: REASON". Nothing when there are none.
pub fn withdrawn(withdrawn: &[Withdrawn]) -> Markup {
    html! {
        @if !withdrawn.is_empty() {
            section aria-labelledby="withdrawn-heading" {
                h2 #withdrawn-heading { "Withdrawn versions" }
                ul.withdrawn #withdrawn {
                    @for w in withdrawn.iter().rev() {
                        li {
                            strong { (w.version.to_string()) }
                            " was withdrawn"
                            @if let Some(line) = by_at(w.by.as_deref(), w.at.as_deref()) { " " (line) }
                            ": " span.reason { (shown(&w.reason)) }
                        }
                    }
                }
            }
        }
    }
}

/// A publisher's words as a page shows them: control and invisible characters as visible
/// escapes (a reason carrying ESC shows `\u{1b}`, not a blank box); maud escapes the HTML.
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    tfreg_core::text::for_terminal(text)
}

/// "on DATE by WHO", as far as the record says.
fn by_at(by: Option<&str>, at: Option<&str>) -> Option<String> {
    let on = at.map(|at| format!("on {}", date(Some(at))));
    let by = by.map(|by| format!("by {}", shown(by)));
    match (on, by) {
        (Some(on), Some(by)) => Some(format!("{on} {by}")),
        (one, other) => one.or(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfreg_core::Version;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn a_banner_says_why_links_the_replacement_and_escapes_the_publishers_words() {
        let deprecation = Deprecation {
            reason: "<script>alert(1)</script> & more".into(),
            replacement: Some(v("1.3.0")),
            retire_on: Some("2027-03-31".into()),
            by: Some("<b>alice</b>".into()),
            at: Some("2026-11-28T09:00:00Z".into()),
        };
        let html = banner("/modules/acme/net/aws", Some(&deprecation)).into_string();
        assert!(
            !html.contains("<script>") && !html.contains("<b>"),
            "{html}"
        );
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; more"),
            "{html}"
        );
        assert!(
            html.contains(r#"<a id="replacement" href="/modules/acme/net/aws/1.3.0">1.3.0</a>"#),
            "{html}"
        );
        assert!(
            html.contains("withdrawn on <time datetime=\"2027-03-31\">"),
            "{html}"
        );
        assert!(
            html.contains("Deprecated on 2026-11-28 by &lt;b&gt;alice&lt;/b&gt;."),
            "{html}"
        );
        assert_eq!(banner("/x", None).into_string(), "");
    }

    #[test]
    fn withdrawn_versions_say_when_by_whom_and_why_newest_first() {
        let list = [
            Withdrawn {
                version: v("1.0.0"),
                reason: "old".into(),
                by: None,
                at: None,
            },
            Withdrawn {
                version: v("1.2.0"),
                reason: "leaked <key>".into(),
                by: Some("bob".into()),
                at: Some("2026-11-28T10:00:00Z".into()),
            },
        ];
        let html = withdrawn(&list).into_string();
        let newest = html.find("1.2.0").unwrap();
        assert!(newest < html.find("1.0.0").unwrap(), "{html}");
        assert!(
            html.contains(
                "<strong>1.2.0</strong> was withdrawn on 2026-11-28 by bob: <span class=\"reason\">leaked &lt;key&gt;</span>"
            ),
            "{html}"
        );
        assert!(
            html.contains("<strong>1.0.0</strong> was withdrawn: "),
            "{html}"
        );
        assert_eq!(withdrawn(&[]).into_string(), "");
        assert!(badge(true).into_string().contains("deprecated"));
        assert_eq!(badge(false).into_string(), "");
    }
}
