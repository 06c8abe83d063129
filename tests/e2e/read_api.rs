//! The read API beyond the protocols against the real `tfreg serve`: module details,
//! `latest` and its download, listings, search and pagination, provider details, with
//! scoped tokens; once over a data directory (the local shape), once over moto's S3 and
//! DynamoDB (`tfreg serve --table --bucket`, after `tfreg reindex`).

use std::time::Duration;

use serde_json::{json, Value};
use tfreg_e2e::{
    module_files, provider_release, publish, tar_gz, tfreg_with_env, wait_until, Gpg, Moto, Server,
    TempDir,
};

use crate::aws::{provision, BUCKET, TABLE};

fn module(version: &str) -> Vec<u8> {
    let files = module_files(version);
    tar_gz(&[(files[0].0, &files[0].1), (files[1].0, &files[1].1)])
}

/// (key, content) of every file: modules of two namespaces, a module with only a
/// prerelease, and a signed provider release.
fn files() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = [
        "acme/network/aws/1.0.0",
        "acme/network/aws/1.1.0",
        "acme/network/aws/2.0.0-beta.1",
        "acme/network/azurerm/0.1.0",
        "acme/dns/aws/0.1.0-rc.1",
        "globex/secret/aws/1.0.0",
    ]
    .iter()
    .map(|m| {
        let version = m.rsplit('/').next().unwrap();
        (format!("modules/{m}.tar.gz"), module(version))
    })
    .collect();
    // Modules found by a word of their README and an input's description (search).
    let dns = module_files("0.1.0-rc.1");
    files[4].1 = tar_gz(&[
        (dns[0].0, &dns[0].1),
        ("README.md", "# DNS\n\nZones for the network.\n"),
    ]);
    files[5].1 = tar_gz(&[
        (
            "main.tf",
            "variable \"region\" {\n  description = \"The Tenancy to use\"\n}\n",
        ),
        ("README.md", "# Secrets\n\nKeeps values in Kubernetes.\n"),
    ]);
    let gpg = Gpg::new();
    gpg.generate("release@example.test", "rsa2048", "never", None);
    let release = provider_release("widget", "1.0.0", &["linux_amd64", "darwin_arm64"]);
    let sums = release.last().unwrap().clone();
    for (name, content) in release {
        files.push((format!("providers/acme/widget/1.0.0/{name}"), content));
    }
    files.push((
        format!("providers/acme/widget/1.0.0/{}.sig", sums.0),
        gpg.sign("release@example.test", &sums.1, None),
    ));
    files.push((
        "keys/acme/release.asc".into(),
        gpg.export("release@example.test"),
    ));
    files
}

struct Client {
    http: reqwest::blocking::Client,
    url: String,
}

impl Client {
    /// A client of `server` that follows no redirects.
    fn of(server: &Server) -> Client {
        let cert = std::fs::read(&server.cert).unwrap();
        let http = reqwest::blocking::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&cert).unwrap())
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Client {
            http,
            url: server.url.clone(),
        }
    }

    fn get(&self, path: &str, token: &str) -> reqwest::blocking::Response {
        self.http
            .get(format!("{}{path}", self.url))
            .bearer_auth(token)
            .send()
            .unwrap()
    }

    fn json(&self, path: &str, token: &str, status: u16) -> Value {
        let response = self.get(path, token);
        let got = response.status().as_u16();
        let body = response.text().unwrap();
        assert_eq!(got, status, "{path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
    }
}

fn ids(list: &Value) -> Vec<String> {
    list["modules"]
        .as_array()
        .unwrap_or_else(|| panic!("no modules in {list}"))
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

/// What both shapes answer, with a token reading everything and one reading only acme.
fn the_read_api_answers(server: &Server, all: &str, acme: &str) {
    let client = Client::of(server);

    // Details, checked field by field (docs are whatever the archive documents: `root`
    // is always there, with lists).
    let details = client.json("/v1/modules/acme/network/aws/1.0.0", all, 200);
    for (field, expected) in [
        ("id", json!("acme/network/aws/1.0.0")),
        ("owner", json!("")),
        ("namespace", json!("acme")),
        ("name", json!("network")),
        ("provider", json!("aws")),
        ("version", json!("1.0.0")),
        ("downloads", json!(0)),
        ("verified", json!(false)),
        ("providers", json!(["aws", "azurerm"])),
        ("versions", json!(["1.0.0", "1.1.0", "2.0.0-beta.1"])),
    ] {
        assert_eq!(details[field], expected, "{field} in {details}");
    }
    let published_at = details["published_at"].as_str().unwrap();
    assert!(
        humantime::parse_rfc3339(published_at).is_ok(),
        "{published_at}"
    );
    assert_eq!(details["root"]["path"], "");
    assert!(details["root"]["inputs"].is_array(), "{details}");
    assert!(details["root"]["outputs"].is_array(), "{details}");
    assert!(details["submodules"].is_array(), "{details}");

    // Latest: the highest version without a prerelease part, and its download.
    let latest = client.json("/v1/modules/acme/network/aws", all, 200);
    assert_eq!(latest["id"], "acme/network/aws/1.1.0");
    let redirect = client.get("/v1/modules/acme/network/aws/download", all);
    assert_eq!(redirect.status().as_u16(), 302);
    let location = redirect.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(location, "/v1/modules/acme/network/aws/1.1.0/download");
    let download = client.get(&location, all);
    assert_eq!(download.status().as_u16(), 204);
    assert!(download.headers().contains_key("x-terraform-get"));
    let only_rc = client.json("/v1/modules/acme/dns/aws", all, 404);
    assert!(
        only_rc["errors"][0]
            .as_str()
            .unwrap()
            .contains("only prereleases"),
        "{only_rc}"
    );

    // Listings: every module, a namespace's, a name's systems; search.
    let listed = client.json("/v1/modules", all, 200);
    assert_eq!(
        ids(&listed),
        [
            "acme/dns/aws/0.1.0-rc.1",
            "acme/network/aws/1.1.0",
            "acme/network/azurerm/0.1.0",
            "globex/secret/aws/1.0.0"
        ]
    );
    assert_eq!(listed["meta"], json!({"limit": 15, "current_offset": 0}));
    let systems = client.json("/v1/modules/acme/network", all, 200);
    assert_eq!(
        ids(&systems),
        ["acme/network/aws/1.1.0", "acme/network/azurerm/0.1.0"]
    );
    let found = client.json("/v1/modules/search?q=secret", all, 200);
    assert_eq!(ids(&found), ["globex/secret/aws/1.0.0"]);
    for words in ["kubernetes", "KUBERN", "tenancy%20secret", "region"] {
        let found = client.json(&format!("/v1/modules/search?q={words}"), all, 200);
        assert_eq!(ids(&found), ["globex/secret/aws/1.0.0"], "{words}");
    }
    // Ranked: a word in the address before one in a README.
    let found = client.json("/v1/modules/search?q=network", all, 200);
    assert_eq!(
        ids(&found),
        [
            "acme/network/aws/1.1.0",
            "acme/network/azurerm/0.1.0",
            "acme/dns/aws/0.1.0-rc.1"
        ]
    );

    // Pages, with the acme-only token: globex is absent, and pages stay full.
    let mut seen = Vec::new();
    let mut next = Some("/v1/modules?limit=2".to_owned());
    while let Some(path) = next {
        let page = client.json(&path, acme, 200);
        seen.extend(ids(&page));
        next = page["meta"]["next_url"].as_str().map(str::to_owned);
    }
    assert_eq!(
        seen,
        [
            "acme/dns/aws/0.1.0-rc.1",
            "acme/network/aws/1.1.0",
            "acme/network/azurerm/0.1.0"
        ]
    );
    assert_eq!(
        client.json("/v1/modules/search?q=secret", acme, 200)["modules"],
        json!([])
    );
    let hidden = client.json("/v1/modules/globex/secret/aws/1.0.0", acme, 404);
    assert_eq!(
        hidden["errors"][0],
        "module globex/secret/aws is not published here"
    );

    // Provider details.
    let provider = client.json("/v1/providers/acme/widget", all, 200);
    assert_eq!(provider["id"], "acme/widget/1.0.0");
    assert_eq!(provider["versions"], json!(["1.0.0"]));
    assert_eq!(provider["protocols"], json!(["5.0"]));
    assert_eq!(
        provider["platforms"],
        json!([{"os": "darwin", "arch": "arm64"}, {"os": "linux", "arch": "amd64"}])
    );
    let published_at = provider["published_at"].as_str().unwrap();
    assert!(
        humantime::parse_rfc3339(published_at).is_ok(),
        "{published_at}"
    );
    assert_eq!(
        client.json("/v1/providers/acme/widget/1.0.0", all, 200),
        provider
    );
    client.json("/v1/providers/acme/widget/1.0.0", "tfreg_bad", 401);
}

#[test]
fn the_read_api_answers_from_a_served_data_directory() {
    let data = TempDir::new().unwrap();
    for (key, content) in files() {
        publish(data.path(), &key, &content);
    }
    let server = Server::start_private(data.path(), &[]);
    let all = server.create_token(&[]);
    let acme = server.create_token(&["--namespace", "acme"]);
    let client = Client::of(&server);
    assert!(
        wait_until(Duration::from_secs(30), || {
            client.get("/v1/providers/acme/widget", &all).status() == 200
        }),
        "{}",
        server.log()
    );
    the_read_api_answers(&server, &all, &acme);

    // A version published while serving is listed and becomes latest within seconds.
    server.publish("modules/acme/network/aws/1.2.0.tar.gz", &module("1.2.0"));
    // (The listing follows the version by a moment: the server lists modules after each
    // batch of files it indexes.)
    assert!(wait_until(Duration::from_secs(15), || {
        let latest = client.json("/v1/modules/acme/network/aws", &all, 200);
        let listed = client.json("/v1/modules/acme?limit=1&offset=1", &all, 200);
        latest["id"] == "acme/network/aws/1.2.0" && ids(&listed) == ["acme/network/aws/1.2.0"]
    }));
}

#[test]
fn the_read_api_answers_from_dynamodb_and_s3() {
    let moto = Moto::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let aws = provision(&moto).await;
        for (key, content) in files() {
            aws.upload(&key, content).await;
        }
    });
    let env = moto.env();
    let out = tfreg_with_env(&["reindex", "--table", TABLE, "--bucket", BUCKET], &env);
    assert!(out.contains("0 rejected"), "{out}");
    let token = |args: &[&str]| {
        let mut all = vec!["token", "create", "--table", TABLE];
        all.extend_from_slice(args);
        let out = tfreg_with_env(&all, &env);
        out.lines().last().unwrap().trim().to_owned()
    };
    let (all, acme) = (token(&[]), token(&["--namespace", "acme"]));
    let state = TempDir::new().unwrap();
    let server =
        Server::start_with_env(state.path(), &["--table", TABLE, "--bucket", BUCKET], &env);
    the_read_api_answers(&server, &all, &acme);
}
