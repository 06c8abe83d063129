//! The pull-through cache of upstream providers: the registry under test installs providers
//! of a stand-in upstream registry (a second `tfreg serve` with its own certificate and key,
//! reached as `registry.upstream.test`) through its network mirror, verifies and keeps them,
//! survives the upstream's outages and hostile answers, and `tfreg sync` / `tfreg lock` work
//! from it. The first test checks the stand-in and its tampering proxy themselves.

use std::time::{Duration, Instant};

use tfreg_e2e::{client_trusting, sha256_hex, Fault, Upstream};

/// JSON of a GET through `client`, asserting a 200.
fn get_json(client: &reqwest::blocking::Client, url: &str) -> serde_json::Value {
    let response = client
        .get(url)
        .send()
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = response.status();
    let body = response.text().unwrap();
    assert_eq!(status, 200, "GET {url}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {url}: {e}: {body}"))
}

#[test]
fn the_stand_in_upstream_serves_signed_releases_and_its_proxy_tampers_on_demand() {
    let mut upstream = Upstream::start();
    let client = client_trusting(&upstream.cert());
    let url = upstream.url().to_owned();

    // Service discovery and the version lists answer through the proxy.
    let discovery = get_json(&client, &format!("{url}/.well-known/terraform.json"));
    assert_eq!(discovery["providers.v1"], "/v1/providers/", "{discovery}");
    let versions = get_json(&client, &format!("{url}/v1/providers/acme/widget/versions"));
    let listed: Vec<&str> = versions["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert!(
        listed.contains(&"1.0.0") && listed.contains(&"1.1.0"),
        "{versions}"
    );
    let gadget = get_json(&client, &format!("{url}/v1/providers/acme/gadget/versions"));
    assert_eq!(gadget["versions"][0]["version"], "2.0.0", "{gadget}");

    // Each platform's download answer carries the signing key and URLs of the proxy, and
    // the package fetched through them matches SHA256SUMS.
    for platform in Upstream::platforms() {
        let (os, arch) = platform.split_once('_').unwrap();
        let answer = get_json(
            &client,
            &format!("{url}/v1/providers/acme/widget/1.1.0/download/{os}/{arch}"),
        );
        let armor = answer["signing_keys"]["gpg_public_keys"][0]["ascii_armor"]
            .as_str()
            .unwrap_or_else(|| panic!("no signing key: {answer}"));
        assert!(armor.contains("BEGIN PGP PUBLIC KEY BLOCK"), "{answer}");
        let download = answer["download_url"].as_str().unwrap();
        assert!(
            download.starts_with(&url),
            "not rewritten to the proxy: {answer}"
        );
        let zip = client.get(download).send().unwrap().bytes().unwrap();
        let sums = client
            .get(answer["shasums_url"].as_str().unwrap())
            .send()
            .unwrap()
            .text()
            .unwrap();
        let line = format!(
            "{}  {}",
            sha256_hex(&zip),
            answer["filename"].as_str().unwrap()
        );
        assert!(sums.contains(&line), "{line} not in SHA256SUMS:\n{sums}");

        // Tampered: another key, a corrupted zip.
        upstream.set(Fault::WrongKeys("OTHER KEY".into()));
        let tampered = get_json(
            &client,
            &format!("{url}/v1/providers/acme/widget/1.1.0/download/{os}/{arch}"),
        );
        assert_eq!(
            tampered["signing_keys"]["gpg_public_keys"][0]["ascii_armor"], "OTHER KEY",
            "{tampered}"
        );
        upstream.set(Fault::CorruptZip);
        let corrupt = client.get(download).send().unwrap().bytes().unwrap();
        assert_eq!(corrupt.len(), zip.len());
        assert_ne!(
            sha256_hex(&corrupt),
            sha256_hex(&zip),
            "the zip was not corrupted"
        );
        upstream.set(Fault::None);
    }

    // Malformed JSON, a redirect to another host, an endless body and a trickle.
    let versions_url = format!("{url}/v1/providers/acme/widget/versions");
    upstream.set(Fault::Malformed);
    let body = client.get(&versions_url).send().unwrap().text().unwrap();
    assert!(
        serde_json::from_str::<serde_json::Value>(&body).is_err(),
        "{body}"
    );
    upstream.set(Fault::Redirect("https://localhost:1".into()));
    let redirect = client.get(&versions_url).send().unwrap();
    assert_eq!(redirect.status(), 302);
    assert_eq!(
        redirect.headers()["location"],
        "https://localhost:1/v1/providers/acme/widget/versions"
    );
    upstream.set(Fault::Huge);
    let mut huge = client.get(&versions_url).send().unwrap();
    let mut buffer = vec![0; 1024 * 1024];
    let mut read = 0;
    while read < 8 * 1024 * 1024 {
        let n = std::io::Read::read(&mut huge, &mut buffer).unwrap();
        assert!(n > 0, "the huge body ended after {read} bytes");
        read += n;
    }
    drop(huge);
    upstream.set(Fault::Slow);
    let impatient = reqwest::blocking::Client::builder()
        .add_root_certificate(
            reqwest::Certificate::from_pem(&std::fs::read(upstream.cert()).unwrap()).unwrap(),
        )
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let started = Instant::now();
    let slow = impatient.get(&versions_url).send().and_then(|r| r.text());
    assert!(slow.is_err(), "the slow body arrived: {slow:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    upstream.set(Fault::None);
    assert!(upstream
        .proxy()
        .seen()
        .iter()
        .any(|r| r == "GET /v1/providers/acme/widget/versions"));

    // A release published while it runs is served at once.
    let platforms = Upstream::platforms();
    upstream.publish_release("acme", "widget", "1.2.0", &[&platforms[0]]);
    let versions = get_json(&client, &versions_url);
    assert!(versions.to_string().contains("\"1.2.0\""), "{versions}");

    // Stopped, its URL refuses connections; started again, it answers at the same URL.
    upstream.stop();
    assert!(client.get(&versions_url).send().is_err());
    upstream.resume();
    let versions = get_json(&client, &versions_url);
    assert!(versions.to_string().contains("\"1.2.0\""), "{versions}");
}
