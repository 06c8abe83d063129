//! The read API beyond the protocols, exercised without a socket: module details, `latest`,
//! the latest download, listings, search and pagination, provider details, with token
//! scopes and prereleases. In-memory stores stand in for the data directory; module docs,
//! sources and descriptions are written into the records directly, as publish would.

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use common::fixture;
use serde_json::{json, Value};
use tfreg_core::memory::{MemoryArtifactStore, MemoryMetadataStore, MemoryTokenStore};
use tfreg_core::module_docs::{
    ModuleDocs, ModuleInput, ModuleOutput, ModulePart, ModuleResource, ProviderDependency,
};
use tfreg_core::signing::UrlSigner;
use tfreg_core::store::{partition, Record};
use tfreg_core::tokens::TokenStore;
use tfreg_core::{Downloads, Indexer, MetadataReader, MetadataStore, ModuleAddress, Registry};
use tfreg_http::{router, AppState};
use tower::ServiceExt;

const HOST: &str = "registry.example.test:8443";

struct Given {
    app: Router,
    metadata: Arc<MemoryMetadataStore>,
    artifacts: Arc<MemoryArtifactStore>,
    indexer: Indexer,
    tokens: Arc<MemoryTokenStore>,
}

/// A module archive that passes the registry's checks, under a module key; any other
/// file's content as is.
fn as_published(key: &str, content: &[u8]) -> Vec<u8> {
    match tfreg_core::layout::ArchiveFormat::split(key) {
        Some((_, format)) if key.starts_with("modules/") => {
            let main = [b"# ", content].concat();
            tfreg_core::module_archive::archive_of(format, &[("main.tf", &main)])
        }
        _ => content.to_vec(),
    }
}

/// The `hashes` a module version published by [`given`] under `key` carries, computed here
/// from its one file: `h1:` of the tree it unpacks to (`main.tf` alone), `zh:` of the archive.
fn hashes_of(key: &str) -> Value {
    use base64::Engine;
    use sha2::{Digest, Sha256};
    let hex = |bytes: &[u8]| {
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let main = [b"# ", key.as_bytes()].concat();
    let line = format!("{}  main.tf\n", hex(&main));
    let h1 = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(line.as_bytes()));
    json!([
        format!("h1:{h1}"),
        format!("zh:{}", hex(&as_published(key, key.as_bytes())))
    ])
}

/// A registry holding the module archives `modules` (keys), and `files`, indexed; it
/// requires tokens.
async fn given(modules: &[&str], files: Vec<(String, Vec<u8>)>) -> Given {
    let signer = Arc::new(UrlSigner::new(vec![42; 32], Duration::from_secs(300)));
    let artifacts = Arc::new(MemoryArtifactStore::new());
    let metadata = Arc::new(MemoryMetadataStore::new());
    for key in modules {
        artifacts.put(key, as_published(key, key.as_bytes()));
    }
    for (key, content) in files {
        artifacts.put(&key, content);
    }
    let indexer = Indexer::new(metadata.clone(), artifacts.clone());
    indexer.reindex_all(|_, _| {}).await.unwrap();
    let downloads = Downloads::served(signer, artifacts.clone());
    let registry = Registry::new(metadata.clone(), downloads.clone());
    let tokens = Arc::new(MemoryTokenStore::default());
    let app = router(AppState::new(
        registry,
        downloads,
        Some(tokens.clone() as Arc<dyn TokenStore>),
    ));
    Given {
        app,
        metadata,
        artifacts,
        indexer,
        tokens,
    }
}

impl Given {
    /// A token reading `namespaces` (all when empty).
    async fn token(&self, namespaces: &[&str]) -> String {
        common::token(&self.tokens, namespaces).await
    }

    /// Sets what publish records of a version (docs, source, description, publish time),
    /// then reindexes, as a publish would leave the listings.
    async fn describe(
        &self,
        address: &str,
        version: &str,
        edit: impl Fn(&mut tfreg_core::store::ModuleArchive),
    ) {
        let parts: Vec<&str> = address.split('/').collect();
        let address = ModuleAddress::parse(parts[0], parts[1], parts[2]).unwrap();
        for record in self
            .metadata
            .query(&partition::module(&address))
            .await
            .unwrap()
        {
            if let Record::ModuleArchive(mut archive) = record {
                if archive.version.to_string() == version {
                    edit(&mut archive);
                    self.metadata
                        .put(Record::ModuleArchive(archive))
                        .await
                        .unwrap();
                }
            }
        }
        self.indexer.reindex_all(|_, _| {}).await.unwrap();
    }
}

struct Reply {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    fn error(&self) -> String {
        self.json()["errors"][0]
            .as_str()
            .unwrap_or_else(|| panic!("no error in {}", self.json()))
            .to_owned()
    }
}

async fn get(app: &Router, uri: &str, token: &str) -> Reply {
    let request = Request::builder()
        .uri(uri)
        .header(header::HOST, HOST)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap()
        .to_vec();
    Reply {
        status,
        headers,
        body,
    }
}

async fn ok(app: &Router, uri: &str, token: &str) -> Value {
    let reply = get(app, uri, token).await;
    assert_eq!(reply.status, StatusCode::OK, "{uri}: {:?}", reply.json());
    reply.json()
}

const NETWORK: &[&str] = &[
    "modules/acme/network/aws/1.0.0.tar.gz",
    "modules/acme/network/aws/1.2.0.tar.gz",
    "modules/acme/network/aws/2.0.0-rc.1.tar.gz",
    "modules/acme/network/azurerm/0.3.0.zip",
    "modules/acme/dns/aws/0.1.0-beta.tar.gz",
    "modules/globex/secret/aws/1.0.0.tar.gz",
];

/// 2024-05-01T12:00:00Z
const MAY_FIRST: u64 = 1_714_564_800;

fn docs() -> ModuleDocs {
    let part = |path: &str| ModulePart {
        path: path.into(),
        readme: format!("# {path}"),
        inputs: vec![ModuleInput {
            name: "cidr".into(),
            type_: "string".into(),
            description: "The VPC's range".into(),
            default: Some("\"10.0.0.0/16\"".into()),
            required: false,
            sensitive: false,
            nullable: true,
        }],
        outputs: vec![ModuleOutput {
            name: "vpc_id".into(),
            description: "The VPC".into(),
            sensitive: false,
        }],
        provider_dependencies: vec![ProviderDependency {
            name: "aws".into(),
            namespace: "hashicorp".into(),
            source: "hashicorp/aws".into(),
            version: ">= 5.0".into(),
        }],
        resources: vec![ModuleResource {
            name: "this".into(),
            type_: "aws_vpc".into(),
        }],
        required_version: Some(">= 1.5".into()),
        ..Default::default()
    };
    ModuleDocs {
        root: part(""),
        submodules: vec![part("modules/subnets")],
        examples: vec![part("examples/simple")],
        ..Default::default()
    }
}

async fn described_network() -> Given {
    let g = given(NETWORK, vec![]).await;
    g.describe("acme/network/aws", "1.2.0", |a| {
        a.published_at = MAY_FIRST;
        a.source = Some("https://git.example.com/acme/network".into());
        a.description = Some("A VPC with subnets".into());
        a.docs = Some(std::sync::Arc::new(docs()));
    })
    .await;
    g
}

#[tokio::test]
async fn a_versions_details_answer_every_field() {
    let g = described_network().await;
    let token = g.token(&[]).await;
    let details = ok(&g.app, "/v1/modules/acme/network/aws/1.2.0", &token).await;
    let part = |path: &str| {
        json!({
            "path": path, "readme": format!("# {path}"), "empty": false,
            "inputs": [{"name": "cidr", "type": "string", "description": "The VPC's range",
                        "default": "\"10.0.0.0/16\"", "required": false, "sensitive": false,
                        "nullable": true}],
            "outputs": [{"name": "vpc_id", "description": "The VPC", "sensitive": false}],
            "provider_dependencies": [{"name": "aws", "namespace": "hashicorp",
                                       "source": "hashicorp/aws", "version": ">= 5.0"}],
            "dependencies": [],
            "resources": [{"name": "this", "type": "aws_vpc"}],
            "required_version": ">= 1.5",
        })
    };
    assert_eq!(
        details,
        json!({
            "id": "acme/network/aws/1.2.0",
            "owner": "",
            "namespace": "acme",
            "name": "network",
            "version": "1.2.0",
            "provider": "aws",
            "description": "A VPC with subnets",
            "source": "https://git.example.com/acme/network",
            "published_at": "2024-05-01T12:00:00Z",
            "downloads": 0,
            "verified": false,
            "root": part(""),
            "submodules": [part("modules/subnets")],
            "examples": [part("examples/simple")],
            "providers": ["aws", "azurerm"],
            "versions": ["1.0.0", "1.2.0", "2.0.0-rc.1"],
            "hashes": hashes_of(NETWORK[1]),
            "signed_by": null,
            "attachments": [],
        })
    );
}

#[tokio::test]
async fn a_version_without_docs_answers_an_empty_root() {
    let g = described_network().await;
    let token = g.token(&[]).await;
    let details = ok(&g.app, "/v1/modules/ACME/network/aws/1.0.0", &token).await;
    assert_eq!(details["id"], "acme/network/aws/1.0.0");
    assert_eq!(details["source"], Value::Null);
    assert_eq!(details["description"], "");
    assert!(details["published_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(details["root"]["path"], "");
    for list in [
        "inputs",
        "outputs",
        "provider_dependencies",
        "dependencies",
        "resources",
    ] {
        assert_eq!(details["root"][list], json!([]), "{list}");
    }
    assert_eq!(details["submodules"], json!([]));
    assert_eq!(details["examples"], json!([]));

    let reply = get(&g.app, "/v1/modules/acme/network/aws/9.9.9", &token).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(
        reply.error(),
        "module acme/network/aws has no version 9.9.9"
    );
    let reply = get(&g.app, "/v1/modules/acme/network/aws/v1", &token).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn latest_is_the_highest_version_without_a_prerelease_part() {
    let g = described_network().await;
    let token = g.token(&[]).await;
    let latest = ok(&g.app, "/v1/modules/acme/network/aws", &token).await;
    assert_eq!(latest["id"], "acme/network/aws/1.2.0");
    assert_eq!(latest["source"], "https://git.example.com/acme/network");
    assert_eq!(latest["versions"], json!(["1.0.0", "1.2.0", "2.0.0-rc.1"]));

    let reply = get(&g.app, "/v1/modules/acme/network/aws/download", &token).await;
    assert_eq!(reply.status, StatusCode::FOUND);
    assert_eq!(
        reply.headers[header::LOCATION],
        "/v1/modules/acme/network/aws/1.2.0/download"
    );

    // A module with only prereleases has no latest: a 404 that says why; its versions
    // are still listed and answered.
    for uri in [
        "/v1/modules/acme/dns/aws",
        "/v1/modules/acme/dns/aws/download",
    ] {
        let reply = get(&g.app, uri, &token).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(
            reply.error(),
            "module acme/dns/aws has only prereleases (0.1.0-beta), so no latest version: ask for one by its version"
        );
    }
    let beta = ok(&g.app, "/v1/modules/acme/dns/aws/0.1.0-beta", &token).await;
    assert_eq!(beta["version"], "0.1.0-beta");
    let listed = ok(&g.app, "/v1/modules/acme", &token).await;
    assert_eq!(listed["modules"][0]["id"], "acme/dns/aws/0.1.0-beta");
}

#[tokio::test]
async fn versions_carry_the_source_where_the_publisher_gave_it() {
    let g = described_network().await;
    let token = g.token(&[]).await;
    let versions = ok(&g.app, "/v1/modules/acme/network/aws/versions", &token).await;
    assert_eq!(
        versions,
        json!({"modules": [{
            // Module-wide, as Renovate reads it: the newest release's.
            "source": "https://git.example.com/acme/network",
            "versions": [
                {"version": "1.0.0", "hashes": hashes_of(NETWORK[0])},
                {"version": "1.2.0", "source": "https://git.example.com/acme/network",
                 "hashes": hashes_of(NETWORK[1])},
                {"version": "2.0.0-rc.1", "hashes": hashes_of(NETWORK[2])},
            ]
        }]})
    );
}

#[tokio::test]
async fn listings_show_each_modules_latest_version_in_address_order() {
    let g = described_network().await;
    let token = g.token(&[]).await;
    let all = ok(&g.app, "/v1/modules", &token).await;
    assert_eq!(all, ok(&g.app, "/v1/modules/", &token).await);
    assert_eq!(all["meta"], json!({"limit": 15, "current_offset": 0}));
    let ids: Vec<&str> = all["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "acme/dns/aws/0.1.0-beta",
            "acme/network/aws/1.2.0",
            "acme/network/azurerm/0.3.0",
            "globex/secret/aws/1.0.0"
        ]
    );
    // Entries are the short form, every field checked.
    assert_eq!(
        all["modules"][1],
        json!({
            "id": "acme/network/aws/1.2.0", "owner": "", "namespace": "acme",
            "name": "network", "version": "1.2.0", "provider": "aws",
            "description": "A VPC with subnets",
            "source": "https://git.example.com/acme/network",
            "published_at": "2024-05-01T12:00:00Z", "downloads": 0, "verified": false,
        })
    );

    let acme = ok(&g.app, "/v1/modules/acme", &token).await;
    assert_eq!(acme["modules"].as_array().unwrap().len(), 3);
    let systems = ok(&g.app, "/v1/modules/acme/network", &token).await;
    let ids: Vec<&str> = systems["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["acme/network/aws/1.2.0", "acme/network/azurerm/0.3.0"]
    );
    let aws = ok(&g.app, "/v1/modules?provider=aws", &token).await;
    assert_eq!(aws["modules"].as_array().unwrap().len(), 3);

    let reply = get(&g.app, "/v1/modules/acme/nothing", &token).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.error(), "module acme/nothing is not published here");
    let empty = ok(&g.app, "/v1/modules/initech", &token).await;
    assert_eq!(empty["modules"], json!([]));
}

#[tokio::test]
async fn search_finds_every_word_in_addresses_and_descriptions() {
    let g = described_network().await;
    let token = g.token(&[]).await;
    let ids = |v: &Value| -> Vec<String> {
        v["modules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let found = ok(&g.app, "/v1/modules/search?q=SUBNETS%20vpc", &token).await;
    assert_eq!(ids(&found), ["acme/network/aws/1.2.0"]);
    let found = ok(&g.app, "/v1/modules/search?q=aws", &token).await;
    assert_eq!(found["modules"].as_array().unwrap().len(), 3);
    let found = ok(&g.app, "/v1/modules/search?q=aws&namespace=globex", &token).await;
    assert_eq!(ids(&found), ["globex/secret/aws/1.0.0"]);
    let found = ok(&g.app, "/v1/modules/search?q=nowhere", &token).await;
    assert_eq!(found["modules"], json!([]));

    for (uri, message) in [
        ("/v1/modules/search", "search needs words"),
        ("/v1/modules/search?q=%20", "search needs words"),
        (
            "/v1/modules/search?q=a&limit=ten",
            "limit must be a whole number",
        ),
        ("/v1/modules?offset=-3", "offset must be a whole number"),
        ("/v1/modules?limit=0", "limit must be at least 1"),
    ] {
        let reply = get(&g.app, uri, &token).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{uri}");
        assert!(reply.error().contains(message), "{uri}: {}", reply.error());
    }
    let long = format!("/v1/modules/search?q={}", "a".repeat(201));
    assert_eq!(
        get(&g.app, &long, &token).await.status,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn pages_follow_one_another_to_the_end() {
    let keys: Vec<String> = (0..7)
        .map(|i| format!("modules/acme/m{i}/aws/1.0.0.tar.gz"))
        .collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let g = given(&keys, vec![]).await;
    let token = g.token(&[]).await;
    let mut uri = "/v1/modules/search?q=acme&limit=3".to_owned();
    let mut seen = Vec::new();
    let mut metas = Vec::new();
    loop {
        let page = ok(&g.app, &uri, &token).await;
        for module in page["modules"].as_array().unwrap() {
            seen.push(module["name"].as_str().unwrap().to_owned());
        }
        metas.push(page["meta"].clone());
        match page["meta"]["next_url"].as_str() {
            Some(next) => uri = next.to_owned(),
            None => break,
        }
    }
    assert_eq!(seen, ["m0", "m1", "m2", "m3", "m4", "m5", "m6"]);
    assert_eq!(
        metas,
        [
            json!({"limit": 3, "current_offset": 0, "next_offset": 3,
                   "next_url": "/v1/modules/search?limit=3&offset=3&q=acme"}),
            json!({"limit": 3, "current_offset": 3, "next_offset": 6, "prev_offset": 0,
                   "next_url": "/v1/modules/search?limit=3&offset=6&q=acme"}),
            json!({"limit": 3, "current_offset": 6, "prev_offset": 3}),
        ]
    );
    let capped = ok(&g.app, "/v1/modules?limit=1000", &token).await;
    assert_eq!(capped["meta"]["limit"], 100);
    let past = ok(&g.app, "/v1/modules?offset=50", &token).await;
    assert_eq!(past["modules"], json!([]));
}

#[tokio::test]
async fn out_of_scope_modules_are_absent_from_details_and_lists_and_pages_stay_full() {
    let g = described_network().await;
    let acme = g.token(&["acme"]).await;
    let globex = g.token(&["globex"]).await;

    // Absent: what an unpublished module answers, byte for byte.
    for (uri, absent) in [
        (
            "/v1/modules/globex/secret/aws/1.0.0",
            "/v1/modules/acme/secret/aws/1.0.0",
        ),
        (
            "/v1/modules/globex/secret/aws",
            "/v1/modules/acme/secret/aws",
        ),
        (
            "/v1/modules/globex/secret/aws/download",
            "/v1/modules/acme/secret/aws/download",
        ),
    ] {
        let scoped = get(&g.app, uri, &acme).await;
        let missing = get(&g.app, absent, &acme).await;
        assert_eq!(scoped.status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(
            scoped.error().replace("globex", "acme"),
            missing.error(),
            "{uri}"
        );
    }
    let reply = get(&g.app, "/v1/modules/globex/secret", &acme).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(
        ok(&g.app, "/v1/modules/globex", &acme).await["modules"],
        json!([])
    );
    let found = ok(&g.app, "/v1/modules/search?q=secret", &acme).await;
    assert_eq!(found["modules"], json!([]));

    // Lists are filtered before paging: globex's module is not a hole in a page.
    let page = ok(&g.app, "/v1/modules?limit=3", &acme).await;
    let ids: Vec<&str> = page["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "acme/dns/aws/0.1.0-beta",
            "acme/network/aws/1.2.0",
            "acme/network/azurerm/0.3.0"
        ]
    );
    assert_eq!(page["meta"], json!({"limit": 3, "current_offset": 0}));
    let page = ok(&g.app, "/v1/modules?limit=1", &globex).await;
    assert_eq!(page["modules"][0]["id"], "globex/secret/aws/1.0.0");
    assert_eq!(page["meta"], json!({"limit": 1, "current_offset": 0}));
    // The details' providers list only what the namespace holds, which the token reads.
    let details = ok(&g.app, "/v1/modules/acme/network/aws/1.2.0", &acme).await;
    assert_eq!(details["providers"], json!(["aws", "azurerm"]));
}

#[tokio::test]
async fn a_module_whose_files_are_all_gone_leaves_the_listings() {
    let key = "modules/acme/gone/aws/1.0.0.tar.gz";
    let g = given(&[key], vec![]).await;
    let token = g.token(&[]).await;
    assert_eq!(
        ok(&g.app, "/v1/modules", &token).await["modules"][0]["id"],
        "acme/gone/aws/1.0.0"
    );
    // Deleting the file unpublishes it; the indexer forgets its listing with it.
    g.artifacts.delete(key);
    g.indexer.index_key(key).await.unwrap();
    assert_eq!(
        ok(&g.app, "/v1/modules", &token).await["modules"],
        json!([])
    );
}

fn widget_release() -> Vec<(String, Vec<u8>)> {
    let mut files = vec![
        ("keys/acme/release.asc".to_owned(), fixture("release.asc")),
        (
            "keys/acme/shapes.asc".to_owned(),
            fixture("shapes/shapes.asc"),
        ),
    ];
    for version in ["1.0.0", "2.0.0"] {
        let dir = if version == "2.0.0" { "shapes/" } else { "" };
        let mut names = vec![
            format!("terraform-provider-widget_{version}_SHA256SUMS"),
            format!("terraform-provider-widget_{version}_SHA256SUMS.sig"),
            format!("terraform-provider-widget_{version}_linux_amd64.zip"),
        ];
        if version == "1.0.0" {
            names.push(format!(
                "terraform-provider-widget_{version}_darwin_arm64.zip"
            ));
        }
        for name in names {
            let content = fixture(&format!("{dir}{name}"));
            files.push((format!("providers/acme/widget/{version}/{name}"), content));
        }
    }
    files
}

#[tokio::test]
async fn provider_details_answer_platforms_protocols_versions_and_publish_time() {
    let g = given(&[], widget_release()).await;
    let token = g.token(&[]).await;
    let details = ok(&g.app, "/v1/providers/acme/widget/1.0.0", &token).await;
    let published_at = details["published_at"].as_str().unwrap().to_owned();
    let published = humantime::parse_rfc3339(&published_at).unwrap();
    let age = SystemTime::now().duration_since(published).unwrap();
    assert!(age < Duration::from_secs(600), "{published_at}");
    assert_eq!(
        details,
        json!({
            "id": "acme/widget/1.0.0", "owner": "", "namespace": "acme", "name": "widget",
            "version": "1.0.0", "description": "", "source": null,
            "published_at": published_at, "downloads": 0,
            "protocols": ["5.0"],
            "platforms": [{"os": "darwin", "arch": "arm64"}, {"os": "linux", "arch": "amd64"}],
            "versions": ["1.0.0", "2.0.0"],
            "key_id": "6ED38C978424D2D4",
            "attachments": [],
        })
    );
    let latest = ok(&g.app, "/v1/providers/acme/widget", &token).await;
    assert_eq!(latest["id"], "acme/widget/2.0.0");
    assert_eq!(
        latest["platforms"],
        json!([{"os": "linux", "arch": "amd64"}])
    );

    let reply = get(&g.app, "/v1/providers/acme/widget/3.0.0", &token).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.error(), "provider acme/widget has no version 3.0.0");

    // Out of scope looks like absent.
    let globex = g.token(&["globex"]).await;
    for uri in [
        "/v1/providers/acme/widget",
        "/v1/providers/acme/widget/1.0.0",
    ] {
        let scoped = get(&g.app, uri, &globex).await;
        let absent = get(&g.app, "/v1/providers/acme/nothing", &token).await;
        assert_eq!(scoped.status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(
            scoped.error(),
            absent.error().replace("nothing", "widget"),
            "{uri}"
        );
    }
}
