//! Deprecations and yank records through the router: the read API's `deprecation`,
//! `deprecated_versions` and `withdrawn`, Terraform's `/versions` unchanged, and the pages'
//! banner, mark and withdrawn lines with the publisher's words escaped.

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request};
use axum::Router;
use serde_json::{json, Value};
use tfreg_core::memory::{MemoryArtifactStore, MemoryMetadataStore};
use tfreg_core::signing::UrlSigner;
use tfreg_core::{Downloads, Indexer, Registry};
use tfreg_http::{router, AppState};
use tower::ServiceExt;

const HOST: &str = "registry.example.test";
const M: &str = "modules/acme/network/aws";
const P: &str = "providers/acme/widget/1.0.0";

const DEPRECATION: &str = r#"{"reason": "<script>alert(1)</script> use the new NAT", "replacement": "1.1.0",
    "retire_on": "2027-03-31", "by": "alice", "at": "2026-11-28T09:00:00Z"}"#;
const YANK: &str = r#"{"reason": "leaked <img src=x onerror=alert(2)>", "by": "bob", "at": "2026-11-28T10:00:00Z"}"#;

/// A public registry: acme/network/aws 1.0.0 (deprecated) and 1.1.0 served, 0.9.0 withdrawn
/// with a yank record; the fixtures' acme/widget 1.0.0, deprecated.
async fn given() -> Router {
    let artifacts = Arc::new(MemoryArtifactStore::new());
    let metadata = Arc::new(MemoryMetadataStore::new());
    for version in ["1.0.0", "1.1.0"] {
        let main = format!("output \"v\" {{\n  value = \"{version}\"\n}}\n");
        let archive = tfreg_core::module_archive::archive_of(
            tfreg_core::layout::ArchiveFormat::TarGz,
            &[("main.tf", main.as_bytes())],
        );
        artifacts.put(&format!("{M}/{version}.tar.gz"), archive);
    }
    artifacts.put(
        &format!("{M}/1.0.0_deprecation.json"),
        DEPRECATION.as_bytes().to_vec(),
    );
    artifacts.put(&format!("{M}/0.9.0_yank.json"), YANK.as_bytes().to_vec());
    for name in [
        "terraform-provider-widget_1.0.0_SHA256SUMS",
        "terraform-provider-widget_1.0.0_SHA256SUMS.sig",
        "terraform-provider-widget_1.0.0_linux_amd64.zip",
    ] {
        artifacts.put(&format!("{P}/{name}"), common::fixture(name));
    }
    artifacts.put("keys/acme/release.asc", common::fixture("release.asc"));
    let provider_deprecation = DEPRECATION.replace("\"1.1.0\"", "\"2.0.0\"");
    artifacts.put(
        &format!("{P}/deprecation.json"),
        provider_deprecation.into_bytes(),
    );
    let indexer = Indexer::new(metadata.clone(), artifacts.clone());
    indexer.reindex_all(|_, _| {}).await.unwrap();
    let signer = Arc::new(UrlSigner::new(vec![42; 32], Duration::from_secs(300)));
    let downloads = Downloads::served(signer, artifacts);
    let registry = Registry::new(metadata, downloads.clone());
    router(AppState::new(registry, downloads, None))
}

async fn get(app: &Router, path: &str) -> (u16, String) {
    let request = Request::get(path)
        .header(header::HOST, HOST)
        .body(Body::empty())
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

async fn json(app: &Router, path: &str) -> Value {
    let (status, body) = get(app, path).await;
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

#[tokio::test]
async fn the_read_api_shows_deprecations_and_withdrawn_versions_and_terraforms_answers_do_not() {
    let app = given().await;
    let deprecation = json!({
        "reason": "<script>alert(1)</script> use the new NAT",
        "replacement": "1.1.0",
        "retire_on": "2027-03-31",
        "by": "alice",
        "at": "2026-11-28T09:00:00Z",
    });
    let withdrawn = json!([{
        "version": "0.9.0",
        "reason": "leaked <img src=x onerror=alert(2)>",
        "by": "bob",
        "at": "2026-11-28T10:00:00Z",
    }]);

    let old = json(&app, "/v1/modules/acme/network/aws/1.0.0").await;
    assert_eq!(old["deprecation"], deprecation);
    assert_eq!(old["deprecated_versions"], json!({"1.0.0": deprecation}));
    assert_eq!(old["withdrawn"], withdrawn);
    assert_eq!(old["versions"], json!(["1.0.0", "1.1.0"]));

    let latest = json(&app, "/v1/modules/acme/network/aws").await;
    assert_eq!(latest["version"], "1.1.0");
    assert!(latest.get("deprecation").is_none(), "{latest}");
    assert_eq!(latest["deprecated_versions"], json!({"1.0.0": deprecation}));

    // Terraform's module answers carry none of it (Terraform reads no such field there);
    // each entry holds its version and its hashes, nothing of the deprecation.
    let versions = json(&app, "/v1/modules/acme/network/aws/versions").await;
    let entries = versions["modules"][0]["versions"]
        .as_array()
        .expect("a list");
    let listed: Vec<&str> = entries
        .iter()
        .filter_map(|e| e["version"].as_str())
        .collect();
    assert_eq!(listed, ["1.0.0", "1.1.0"], "{versions}");
    for entry in entries {
        let mut keys: Vec<&str> = entry
            .as_object()
            .expect("an entry")
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(keys, ["hashes", "version"], "{versions}");
    }
    // a provider's versions list carries `warnings`, which Terraform prints on `init`,
    // escaped for a terminal.
    let versions = json(&app, "/v1/providers/acme/widget/versions").await;
    assert_eq!(
        versions["warnings"],
        json!(["1.0.0 is deprecated: <script>alert(1)</script> use the new NAT; use 2.0.0 instead; to be withdrawn on 2027-03-31"])
    );

    let provider = json(&app, "/v1/providers/acme/widget/1.0.0").await;
    assert_eq!(provider["deprecation"]["replacement"], "2.0.0");
    assert_eq!(provider["deprecated_versions"]["1.0.0"]["by"], "alice");
    assert!(provider.get("withdrawn").is_none(), "{provider}");
}

#[tokio::test]
async fn pages_show_the_banner_the_mark_and_the_withdrawn_lines_escaped() {
    let app = given().await;
    let (status, page) = get(&app, "/modules/acme/network/aws/1.0.0").await;
    assert_eq!(status, 200, "{page}");
    assert!(!page.contains("<script>alert(1)"), "{page}");
    assert!(!page.contains("<img src=x"), "{page}");
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;/script&gt; use the new NAT"),
        "{page}"
    );
    assert!(
        page.contains(r#"<a id="replacement" href="/modules/acme/network/aws/1.1.0">1.1.0</a>"#),
        "{page}"
    );
    assert!(page.contains("2027-03-31"), "{page}");
    assert!(page.contains("span class=\"tag deprecated\""), "{page}");
    assert!(
        page.contains("<strong>0.9.0</strong> was withdrawn on 2026-11-28 by bob: "),
        "{page}"
    );
    assert!(
        page.contains("leaked &lt;img src=x onerror=alert(2)&gt;"),
        "{page}"
    );

    // The replacement's own page has no banner, but marks the deprecated version.
    let (_, page) = get(&app, "/modules/acme/network/aws/1.1.0").await;
    assert!(!page.contains("id=\"deprecation\""), "{page}");
    assert!(page.contains("tag deprecated"), "{page}");

    // The page of the withdrawn version itself is a 404 that says why it went.
    let (status, page) = get(&app, "/modules/acme/network/aws/0.9.0").await;
    assert_eq!(status, 404, "{page}");
    assert!(
        page.contains("<strong>0.9.0</strong> was withdrawn on 2026-11-28 by bob: "),
        "{page}"
    );
    assert!(!page.contains("<img src=x"), "{page}");

    let (status, page) = get(&app, "/providers/acme/widget/1.0.0").await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("id=\"deprecation\""), "{page}");
    assert!(!page.contains("<script>alert(1)"), "{page}");
    assert!(
        page.contains(r#"href="/providers/acme/widget/2.0.0""#),
        "{page}"
    );
}
