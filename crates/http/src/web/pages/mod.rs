//! The pages, by what they show; helpers they share.

pub mod attachments;
pub mod catalogue;
pub mod connect;
pub mod lifecycle;
pub mod module;
pub mod provider;
pub mod provider_docs;
pub mod upstream;
pub mod usage;

use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use tfreg_core::registry::RegistryError;
use tfreg_core::{Registry, StoreError};

use super::{html, layout, Viewer};
use crate::extract::RequestOrigin;

/// The page for a store that failed, the details logged, not shown: 503 with `Retry-After`
/// when the store was busy or out of reach (as the API answers), else 500.
pub fn store_failure(error: StoreError) -> Response {
    let chain = tfreg_core::store::ErrorChain(&error);
    if error.is_transient() {
        tracing::warn!(error = %chain, "the storage is busy: a page answered 503");
        let seconds = crate::error::RETRY_AFTER_SECONDS;
        let body = html! {
            h1 { "The registry is busy" }
            p { "The registry could not be read just now. Try again in " (seconds) " seconds." }
        };
        return crate::error::retry_after(html(
            StatusCode::SERVICE_UNAVAILABLE,
            layout::page("Busy", None, body),
        ));
    }
    tracing::error!(error = %chain, "a page could not read the registry");
    let body = html! {
        h1 { "Something went wrong" }
        p { "The registry could not be read. Try again in a moment; if it persists, the server's log says why." }
    };
    html(
        StatusCode::INTERNAL_SERVER_ERROR,
        layout::page("Error", None, body),
    )
}

/// The page for what is not there (or not readable with this token: the same page, so a
/// token learns nothing about namespaces it does not read).
pub fn not_found(viewer: &Viewer, message: &str) -> Response {
    let body = html! {
        h1 { "Not found" }
        p { (message) }
        p { a href="/" { "Back to the catalogue" } }
    };
    html(
        StatusCode::NOT_FOUND,
        layout::page("Not found", Some(viewer), body),
    )
}

/// The page for a registry error.
pub fn failure(viewer: &Viewer, error: RegistryError) -> Response {
    match error {
        RegistryError::NotFound(message) => not_found(viewer, &message),
        RegistryError::Store(e) => store_failure(e),
    }
}

/// The hostname Terraform configurations name this registry by: the configured one, else
/// the one the browser reached.
pub fn registry_host(registry: &Registry, origin: &RequestOrigin) -> String {
    registry
        .hostname()
        .map(ToString::to_string)
        .unwrap_or_else(|| origin.0.authority().to_owned())
}

/// A publish time (RFC 3339) as a date, or "unknown".
pub fn date(rfc3339: Option<&str>) -> String {
    rfc3339
        .and_then(|t| t.get(..10))
        .unwrap_or("unknown")
        .to_owned()
}

/// A version constraint that admits later compatible releases: `~> 1.4` for 1.4.2, `~>
/// 0.3.1` below 1.0 (where minor versions may break), and the exact version of a prerelease
/// (constraints match prereleases only exactly).
pub fn pessimistic_constraint(version: &tfreg_core::Version) -> String {
    let text = version.to_string();
    if version.is_prerelease() {
        return format!("= {text}");
    }
    let parts: Vec<&str> = text.split('+').next().unwrap_or("").split('.').collect();
    match parts.as_slice() {
        ["0", minor, patch] => format!("~> 0.{minor}.{patch}"),
        [major, minor, _] => format!("~> {major}.{minor}"),
        _ => format!("= {text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraints_admit_compatible_releases() {
        let v = |s: &str| tfreg_core::Version::parse(s).unwrap();
        assert_eq!(pessimistic_constraint(&v("1.4.2")), "~> 1.4");
        assert_eq!(pessimistic_constraint(&v("12.0.0")), "~> 12.0");
        assert_eq!(pessimistic_constraint(&v("0.3.1")), "~> 0.3.1");
        assert_eq!(pessimistic_constraint(&v("2.0.0-rc.1")), "= 2.0.0-rc.1");
        assert_eq!(date(Some("2026-11-23T10:00:00Z")), "2026-11-23");
        assert_eq!(date(None), "unknown");
    }
}
