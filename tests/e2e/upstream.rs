//! The pull-through cache of upstream providers: the registry under test installs providers
//! of a stand-in upstream registry (a second `tfreg serve` with its own certificate and key,
//! reached as `registry.upstream.test`) through its network mirror, verifies and keeps them,
//! survives the upstream's outages and hostile answers, and `tfreg sync` / `tfreg lock` work
//! from it. The first test checks the stand-in and its tampering proxy themselves.

use std::path::Path;
use std::time::{Duration, Instant};

use tfreg_e2e::{
    client_trusting, mirror_config, requires_provider, sha256_hex, tfreg_run, tfreg_status, Fault,
    Gpg, Server, TamperingProxy, TempDir, Terraform, Upstream, UPSTREAM_HOST,
};

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
        // Unique URLs in each answer, still good for the same files.
        upstream.set(Fault::FreshUrls);
        let fresh = get_json(
            &client,
            &format!("{url}/v1/providers/acme/widget/1.1.0/download/{os}/{arch}"),
        );
        let sums_url = fresh["shasums_url"].as_str().unwrap();
        assert_ne!(sums_url, answer["shasums_url"].as_str().unwrap());
        let fresh_zip = client
            .get(fresh["download_url"].as_str().unwrap())
            .send()
            .unwrap();
        assert_eq!(fresh_zip.status(), 200, "{fresh}");
        assert_eq!(fresh_zip.bytes().unwrap(), zip);
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

/// The provider every feature test installs, as configurations name it.
const WIDGET: &str = "registry.upstream.test/acme/widget";

/// The allow-list pattern of every provider of the stand-in's namespace.
const ACME: &str = "registry.upstream.test/acme/*";

/// Where the cache keeps `acme/<type>`'s packages and release records.
fn package_key(type_: &str, version: &str, platform: &str) -> String {
    format!(
        "mirror/{UPSTREAM_HOST}/acme/{type_}/terraform-provider-{type_}_{version}_{platform}.zip"
    )
}

fn release_key(type_: &str, version: &str) -> String {
    format!("upstream/{UPSTREAM_HOST}/acme/{type_}/{version}.json")
}

/// The registry under test: a `tfreg serve` caching the stand-in's providers that match
/// `patterns`, over a fresh data directory.
struct Cache {
    // Dropped first: the server, then its data.
    server: Server,
    data: TempDir,
}

impl Cache {
    fn start(upstream: &Upstream, patterns: &[&str], extra: &[&str]) -> Cache {
        let data = TempDir::new().unwrap();
        let mut args: Vec<String> = Vec::new();
        for pattern in patterns {
            args.extend(["--upstream".to_owned(), (*pattern).to_owned()]);
        }
        args.extend(upstream.registry_args());
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let server = Server::start(data.path(), &args);
        Cache { server, data }
    }

    /// The mirror's URL, as a CLI configuration's `network_mirror` names it.
    fn mirror_url(&self) -> String {
        format!("{}/v1/mirror/", self.server.url)
    }

    /// A fresh Terraform directory installing through the mirror, requiring
    /// `registry.upstream.test/acme/<type_>` at `constraint`.
    fn terraform(&self, type_: &str, constraint: &str) -> Terraform {
        let tf = Terraform::new(&mirror_config(&self.server.url), &self.server.cert);
        let source = format!("{UPSTREAM_HOST}/acme/{type_}");
        tf.write("main.tf", &requires_provider(type_, &source, constraint));
        tf
    }

    /// True when `key` exists in the data directory.
    fn has(&self, key: &str) -> bool {
        self.data.path().join(key).is_file()
    }

    /// Every file under `prefix` in the data directory.
    fn files_under(&self, prefix: &str) -> Vec<String> {
        files_under(self.data.path(), prefix)
    }

    /// `tfreg status --data DIR`.
    fn status(&self) -> String {
        tfreg_status(&["--data", self.data.path().to_str().unwrap()], &[])
    }

    /// GETs a path of the registry; returns the status, the body and how long it took.
    fn timed_get(&self, path: &str) -> (u16, String, Duration) {
        self.get_within(path, Duration::from_secs(30))
    }

    /// [`Cache::timed_get`], waiting up to `patience` for the answer.
    fn get_within(&self, path: &str, patience: Duration) -> (u16, String, Duration) {
        let started = Instant::now();
        let pem = std::fs::read(&self.server.cert).unwrap();
        let client = reqwest::blocking::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
            .redirect(reqwest::redirect::Policy::none())
            .timeout(patience)
            .build()
            .unwrap();
        match client.get(format!("{}{path}", self.server.url)).send() {
            Ok(response) => {
                let status = response.status().as_u16();
                let body = response
                    .text()
                    .unwrap_or_else(|e| format!("(no body: {e})"));
                (status, body, started.elapsed())
            }
            Err(e) => panic!(
                "GET {path} got no answer after {:?}: {e}",
                started.elapsed()
            ),
        }
    }

    /// The path on this registry of the `platform` package its `<version>.json` (`body`)
    /// offers (fetch mode wait).
    fn package_path(&self, body: &str, platform: &str) -> String {
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        let url = json["archives"][platform]["url"]
            .as_str()
            .unwrap_or_else(|| panic!("no archive for {platform}: {body}"))
            .to_owned();
        // Absolute, or relative to the version's JSON as Terraform resolves it.
        let url = if url.starts_with("https://") {
            url
        } else if url.starts_with('/') {
            format!("{}{url}", self.server.url)
        } else {
            format!(
                "{}/v1/mirror/{UPSTREAM_HOST}/acme/widget/{url}",
                self.server.url
            )
        };
        url.strip_prefix(&self.server.url)
            .unwrap_or_else(|| {
                panic!("the package is not offered at the registry (fetch mode wait): {url}")
            })
            .to_owned()
    }

    /// GETs a mirror path expecting a JSON error with `status`; returns the error text.
    fn mirror_error(&self, path: &str, status: u16) -> String {
        let (got, body, took) = self.timed_get(path);
        assert_eq!(got, status, "GET {path} (after {took:?}): {body}");
        let json: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("GET {path}: the {got} error is not JSON ({e}): {body}"));
        let errors = json["errors"]
            .as_array()
            .unwrap_or_else(|| panic!("GET {path}: no \"errors\" list: {body}"));
        assert!(
            !errors.is_empty(),
            "GET {path}: an empty error list: {body}"
        );
        body
    }
}

fn files_under(root: &Path, prefix: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![root.join(prefix)];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

fn lock_file(tf: &Terraform) -> String {
    std::fs::read_to_string(tf.dir.path().join(".terraform.lock.hcl"))
        .expect("terraform wrote no .terraform.lock.hcl")
}

/// Every `h1:` hash of a lock file, in order.
fn h1_hashes(lock: &str) -> Vec<String> {
    lock.split('"')
        .filter(|s| s.starts_with("h1:"))
        .map(str::to_owned)
        .collect()
}

/// The stand-in's zip of `acme/<type_>` `version` for `platform`.
fn upstream_zip(upstream: &Upstream, type_: &str, version: &str, platform: &str) -> Vec<u8> {
    let path = upstream.data().join(format!(
        "providers/acme/{type_}/{version}/terraform-provider-{type_}_{version}_{platform}.zip"
    ));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `terraform init` in `tf`, asserting it succeeds, with `what` it was for in the failure
/// message; returns its output.
fn init(tf: &Terraform, what: &str) -> String {
    tf.run_ok(&["init", "-no-color", "-input=false"], what)
}

#[test]
fn terraform_installs_an_upstream_provider_through_the_mirror_on_a_cold_and_a_warm_cache() {
    // Given a registry caching the stand-in's acme/* providers, with nothing cached yet,
    let upstream = Upstream::start();
    let cache = Cache::start(&upstream, &[ACME], &[]);
    let [own, _] = Upstream::platforms();

    // when Terraform installs acme/widget through its mirror,
    let tf = cache.terraform("widget", "~> 1.0");
    let output = init(&tf, "cold cache");

    // then it gets the upstream's newest release,
    assert!(
        output.contains(&format!("Installed {WIDGET} v1.1.0")),
        "cold cache: not the upstream's 1.1.0:\n{output}"
    );
    // and the registry kept the package, byte for byte, and the verified release record.
    let package = package_key("widget", "1.1.0", &own);
    assert!(
        cache.has(&package),
        "{package} is not in the cache; the data dir holds {:?}",
        cache.files_under("")
    );
    let kept = std::fs::read(cache.data.path().join(&package)).unwrap();
    assert_eq!(
        sha256_hex(&kept),
        sha256_hex(&upstream_zip(&upstream, "widget", "1.1.0", &own)),
        "the cached {package} differs from the upstream's"
    );
    let record = release_key("widget", "1.1.0");
    assert!(
        cache.has(&record),
        "{record} is missing; under upstream/: {:?}",
        cache.files_under("upstream")
    );
    let record_text = std::fs::read_to_string(cache.data.path().join(&record)).unwrap();
    serde_json::from_str::<serde_json::Value>(&record_text)
        .unwrap_or_else(|e| panic!("{record} is not JSON ({e}): {record_text}"));

    // Given a warm cache, a second install in a fresh directory downloads no package from
    // the upstream.
    upstream.proxy().clear_seen();
    let warm = cache.terraform("widget", "~> 1.0");
    let output = init(&warm, "warm cache");
    assert!(
        output.contains(&format!("Installed {WIDGET} v1.1.0")),
        "warm cache:\n{output}"
    );
    let fetched = upstream.proxy().seen_containing(".zip");
    assert!(
        fetched.is_empty(),
        "the warm cache downloaded packages from the upstream again: {fetched:?}"
    );
}

#[test]
fn lock_files_made_through_the_mirror_hold_every_platform_and_install_with_the_upstream_stopped() {
    let mut upstream = Upstream::start();
    let cache = Cache::start(&upstream, &[ACME], &[]);
    let [own, other] = Upstream::platforms();

    // Given a lock file made with `terraform providers lock` against the mirror for two
    // platforms,
    let locked = cache.terraform("widget", "~> 1.0");
    let mirror = format!("-net-mirror={}", cache.mirror_url());
    let (own_flag, other_flag) = (format!("-platform={own}"), format!("-platform={other}"));
    locked.run_ok(
        &["providers", "lock", &mirror, &own_flag, &other_flag],
        "terraform providers lock against the mirror",
    );
    let lock = lock_file(&locked);
    let terraform_h1 = h1_hashes(&lock);
    assert!(
        terraform_h1.len() >= 2,
        "providers lock for two platforms recorded fewer than two h1: hashes:\n{lock}"
    );

    // and another directory installed plainly, then completed with `tfreg lock` once the
    // mirror holds both packages (it lists their h1: then; before, only zh:, and `tfreg
    // lock` says there is nothing to check yet),
    let plain = cache.terraform("widget", "~> 1.0");
    init(&plain, "plain init");
    let all_h1 = || {
        let (_, body, _) = cache.timed_get(&format!(
            "/v1/mirror/{UPSTREAM_HOST}/acme/widget/1.1.0.json"
        ));
        let doc: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let archives = doc["archives"].as_object().cloned().unwrap_or_default();
        let h1 = |a: &serde_json::Value| {
            let hashes = a["hashes"].as_array().cloned().unwrap_or_default();
            hashes
                .iter()
                .any(|h| h.as_str().is_some_and(|h| h.starts_with("h1:")))
        };
        archives.len() >= 2 && archives.values().all(h1)
    };
    assert!(
        tfreg_e2e::wait_until(Duration::from_secs(30), all_h1),
        "{}",
        cache.server.log()
    );
    let dir = plain.dir.path().to_str().unwrap().to_owned();
    let env = [
        ("SSL_CERT_FILE", cache.server.cert.display().to_string()),
        ("TFREG_UPSTREAM_CA", cache.server.cert.display().to_string()),
    ];
    let mirror_url = cache.mirror_url();
    let args = [
        "lock",
        "--mirror",
        mirror_url.as_str(),
        "--dir",
        dir.as_str(),
    ];
    let (code, stdout, stderr) = tfreg_run(&args, &env);
    assert_eq!(code, 0, "tfreg {args:?} failed:\n{stdout}{stderr}");
    let completed = lock_file(&plain);
    // its lock file holds each platform's zh: (the SHA-256 of the upstream's zip) and the
    // same h1: hashes Terraform computed from the packages.
    for platform in [&own, &other] {
        let zh = format!(
            "zh:{}",
            sha256_hex(&upstream_zip(&upstream, "widget", "1.1.0", platform))
        );
        assert!(
            completed.contains(&zh),
            "tfreg lock wrote no {zh} for {platform}:\n{completed}"
        );
    }
    for h1 in &terraform_h1 {
        assert!(
            completed.contains(h1.as_str()),
            "tfreg lock misses {h1}, which terraform providers lock recorded:\n{completed}\n\
             terraform's lock file:\n{lock}"
        );
    }

    // When the upstream stops,
    upstream.stop();

    // then both lock files still install from the cache.
    init(
        &locked,
        "init with the providers-lock lock file, upstream stopped",
    );
    let again = cache.terraform("widget", "~> 1.0");
    again.write(".terraform.lock.hcl", &completed);
    init(
        &again,
        "init with the tfreg-lock lock file, upstream stopped",
    );
}

#[test]
fn an_upstream_whose_download_answers_carry_per_answer_signed_urls_is_cached() {
    // Given an upstream that signs its URLs per answer, as tfreg itself or a registry
    // handing out presigned bucket URLs does, so each platform's answer names the same
    // SHA256SUMS at another URL,
    let upstream = Upstream::start();
    upstream.set(Fault::FreshUrls);
    let cache = Cache::start(&upstream, &[ACME], &[]);

    // when the mirror is asked for a release, then it answers every platform,
    let (status, body, _) =
        cache.timed_get("/v1/mirror/registry.upstream.test/acme/widget/1.1.0.json");
    assert_eq!(
        status, 200,
        "the release was refused for its per-answer URLs: {body}"
    );
    for platform in Upstream::platforms() {
        assert!(
            body.contains(&format!("\"{platform}\"")),
            "{platform}: {body}"
        );
    }
    // and Terraform installs it.
    let tf = cache.terraform("widget", "= 1.1.0");
    init(&tf, "an upstream with per-answer URLs");
}

#[test]
fn a_provider_outside_the_allow_list_is_refused_without_asking_the_upstream() {
    // Given a registry allowing only acme/widget of the upstream,
    let upstream = Upstream::start();
    let cache = Cache::start(&upstream, &["registry.upstream.test/acme/widget"], &[]);

    // when Terraform asks for acme/gadget (which the upstream has),
    let tf = cache.terraform("gadget", ">= 1.0");
    let output = tf.init_fails();

    // then it is refused: the mirror answers 404 with a JSON error, for it and for a
    // namespace no pattern names,
    for path in [
        "/v1/mirror/registry.upstream.test/acme/gadget/index.json",
        "/v1/mirror/registry.upstream.test/other/thing/index.json",
    ] {
        cache.mirror_error(path, 404);
    }
    assert!(!output.contains("Installed"), "{output}");
    // and the upstream was never asked about it,
    let mut asked = upstream.proxy().seen_containing("gadget");
    asked.extend(upstream.proxy().seen_containing("other/thing"));
    assert!(asked.is_empty(), "the upstream was asked: {asked:?}");
    // while the allowed provider is listed.
    let (status, body, _) =
        cache.timed_get("/v1/mirror/registry.upstream.test/acme/widget/index.json");
    assert_eq!(status, 200, "the allowed acme/widget: {body}");
    assert!(
        body.contains("\"1.1.0\"") && body.contains("\"1.0.0\""),
        "{body}"
    );
}

#[test]
fn a_new_upstream_release_installs_at_once_whatever_the_refresh_interval() {
    // Given a registry refreshing version lists hourly, which has listed acme/widget,
    let upstream = Upstream::start();
    let cache = Cache::start(&upstream, &[ACME], &["--upstream-refresh", "1h"]);
    let first = cache.terraform("widget", "~> 1.0");
    init(&first, "first install");

    // when the upstream publishes 1.2.0,
    let platforms = Upstream::platforms();
    upstream.publish_release("acme", "widget", "1.2.0", &[&platforms[0], &platforms[1]]);

    // then a configuration requiring exactly 1.2.0 installs it at once.
    let tf = cache.terraform("widget", "= 1.2.0");
    let output = init(
        &tf,
        "1.2.0, published upstream after the list was cached (Terraform reads index.json first, \
         so the cached list must not hide it for an hour)",
    );
    assert!(
        output.contains(&format!("Installed {WIDGET} v1.2.0")),
        "{output}"
    );
}

#[test]
fn with_the_upstream_stopped_cached_providers_install_and_uncached_ones_fail_fast_until_it_returns()
{
    // Given a registry that installed acme/widget, whose lists go stale after a second,
    let mut upstream = Upstream::start();
    let cache = Cache::start(&upstream, &[ACME], &["--upstream-refresh", "1s"]);
    let first = cache.terraform("widget", "~> 1.0");
    init(&first, "install before the outage");

    // when the upstream stops and the cached list goes stale,
    upstream.stop();
    std::thread::sleep(Duration::from_millis(1500));

    // then acme/widget still installs, from the last good list and the cached package,
    let cached = cache.terraform("widget", "~> 1.0");
    let output = init(&cached, "the cached acme/widget with the upstream stopped");
    assert!(
        output.contains(&format!("Installed {WIDGET} v1.1.0")),
        "{output}"
    );

    // acme/gadget, allowed but never fetched, fails fast,
    let uncached = cache.terraform("gadget", ">= 1.0");
    let started = Instant::now();
    uncached.init_fails();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(30), "init took {took:?} to fail");
    // with the mirror's JSON error naming the upstream,
    let path = "/v1/mirror/registry.upstream.test/acme/gadget/index.json";
    let (_, _, took) = cache.timed_get(path);
    assert!(took < Duration::from_secs(30), "GET {path} took {took:?}");
    let error = cache.mirror_error(path, 502);
    assert!(
        error.contains(UPSTREAM_HOST),
        "the error does not name the upstream: {error}"
    );
    // and `tfreg status` marks the widget's list stale.
    let status = cache.status();
    assert!(
        status.to_lowercase().contains("stale"),
        "tfreg status does not mark the last good list stale:\n{status}"
    );

    // Once the upstream is back (and the registry's wait after a failure is over), the
    // provider that failed installs.
    upstream.resume();
    std::thread::sleep(Duration::from_millis(1100));
    let output = init(&uncached, "acme/gadget once the upstream is back");
    assert!(
        output.contains("Installed registry.upstream.test/acme/gadget v2.0.0"),
        "{output}"
    );
}

#[test]
fn a_release_signed_by_another_key_is_refused_with_the_reason() {
    // Given an upstream whose download answers carry another key than the one that signed,
    let upstream = Upstream::start();
    let intruder = Gpg::new();
    intruder.generate("intruder@upstream.test", "rsa2048", "never", None);
    let armor = String::from_utf8(intruder.export("intruder@upstream.test")).unwrap();
    upstream.set(Fault::WrongKeys(armor));
    let cache = Cache::start(&upstream, &[ACME], &[]);

    // when Terraform installs acme/widget 1.1.0 through the mirror,
    let tf = cache.terraform("widget", "= 1.1.0");
    tf.init_fails();

    // then the mirror refuses the release with a 502 naming the signature,
    let error = cache
        .mirror_error(
            "/v1/mirror/registry.upstream.test/acme/widget/1.1.0.json",
            502,
        )
        .to_lowercase();
    assert!(
        error.contains("signature") || error.contains("key"),
        "the error does not say the signature failed: {error}"
    );
    // nothing is cached,
    let cached = cache.files_under("mirror");
    assert!(
        cached.is_empty(),
        "cached despite the bad signature: {cached:?}"
    );
    // and `tfreg status` says why.
    let status = cache.status().to_lowercase();
    assert!(
        status.contains("1.1.0") && (status.contains("signature") || status.contains("key")),
        "tfreg status does not show the refusal:\n{status}"
    );
}

#[test]
fn a_zip_that_does_not_match_sha256sums_is_refused_and_never_cached() {
    // Given an upstream whose packages arrive corrupted,
    let upstream = Upstream::start();
    upstream.set(Fault::CorruptZip);
    let cache = Cache::start(&upstream, &[ACME], &[]);
    let [own, _] = Upstream::platforms();

    // when Terraform installs acme/widget 1.1.0 through the mirror,
    let tf = cache.terraform("widget", "= 1.1.0");
    tf.init_fails();

    // then the package's URL answers a 502 naming SHA256SUMS,
    let version_path = "/v1/mirror/registry.upstream.test/acme/widget/1.1.0.json";
    let (status, body, _) = cache.timed_get(version_path);
    assert_eq!(status, 200, "the release itself verifies: {body}");
    let path = cache.package_path(&body, &own);
    let error = cache.mirror_error(&path, 502);
    assert!(
        error.contains("SHA256SUMS"),
        "the error does not say the zip does not match SHA256SUMS: {error}"
    );
    // nothing is written under mirror/,
    let cached = cache.files_under("mirror");
    assert!(cached.is_empty(), "the corrupt zip was cached: {cached:?}");
    // and `tfreg status` says why.
    let status = cache.status();
    assert!(
        status.contains("SHA256SUMS"),
        "tfreg status does not show the refused zip:\n{status}"
    );
}

/// The peak memory of a process (`VmHWM`), in MiB.
fn peak_memory_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/PID/status");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap();
    kib / 1024
}

#[test]
fn hostile_upstream_answers_end_in_a_bounded_502_and_the_server_keeps_serving() {
    // Given a registry whose upstream calls may take 3 seconds each, and which asks again a
    // second after a failure,
    let upstream = Upstream::start();
    let cache = Cache::start(
        &upstream,
        &[ACME],
        &["--upstream-timeout", "3s", "--upstream-refresh", "1s"],
    );
    let elsewhere = upstream.server().url.replace("127.0.0.1", "localhost");
    let faults = [
        Fault::Huge,
        Fault::Slow,
        Fault::Silent,
        Fault::Redirect(elsewhere),
        Fault::Malformed,
    ];
    for fault in faults {
        // when the upstream answers with a huge, slow or no body, a redirect to another
        // host, or invalid JSON,
        upstream.set(fault.clone());
        upstream.proxy().clear_seen();
        for path in [
            "/v1/mirror/registry.upstream.test/acme/widget/index.json",
            "/v1/mirror/registry.upstream.test/acme/widget/1.1.0.json",
        ] {
            // then each mirror request answers a 502 JSON error within bounded time.
            let (status, body, took) = cache.timed_get(path);
            assert!(
                took < Duration::from_secs(20),
                "{fault:?}: GET {path} took {took:?}"
            );
            assert_eq!(status, 502, "{fault:?}: GET {path} answered: {body}");
            serde_json::from_str::<serde_json::Value>(&body).unwrap_or_else(|e| {
                panic!("{fault:?}: GET {path}: not a JSON error ({e}): {body}")
            });
        }
        let asked = upstream.proxy().seen_containing("/v1/providers/");
        assert!(
            !asked.is_empty(),
            "{fault:?}: the registry never asked the upstream (it answered from an earlier failure)"
        );
        // (Past the registry's wait before asking again after a failure.)
        std::thread::sleep(Duration::from_millis(1100));
    }
    // The server never held the huge body in memory,
    let peak = peak_memory_mib(cache.server.pid());
    assert!(peak < 256, "the registry's memory peaked at {peak} MiB");
    // and, once the upstream behaves, it answers as before.
    upstream.set(Fault::None);
    let (status, body, _) = cache.timed_get("/.well-known/terraform.json");
    assert_eq!(status, 200, "{body}");
    let (status, body, _) =
        cache.timed_get("/v1/mirror/registry.upstream.test/acme/widget/index.json");
    assert_eq!(status, 200, "after the faults: {body}");
    assert!(body.contains("\"1.1.0\""), "{body}");
}

#[test]
fn tfreg_sync_copies_upstream_providers_into_a_data_dir_that_then_serves_them_offline() {
    // Given an empty data directory and a reachable upstream,
    let mut upstream = Upstream::start();
    let data = TempDir::new().unwrap();
    let [own, other] = Upstream::platforms();
    let dir = data.path().to_str().unwrap().to_owned();
    let mut args: Vec<String> = [
        "sync",
        WIDGET,
        "--version",
        ">= 1.0",
        "--platform",
        &own,
        "--platform",
        &other,
        "--data",
        &dir,
    ]
    .iter()
    .map(|a| (*a).to_owned())
    .collect();
    args.extend(upstream.registry_args());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    // when `tfreg sync` copies acme/widget >= 1.0 for two platforms,
    let (code, stdout, stderr) = tfreg_run(&args, &[]);
    assert_eq!(code, 0, "tfreg {args:?} failed:\n{stdout}{stderr}");
    assert!(
        !stdout.trim().is_empty(),
        "tfreg sync printed no summary; stderr:\n{stderr}"
    );

    // then every version and platform is in the data directory,
    for version in ["1.0.0", "1.1.0"] {
        for platform in [&own, &other] {
            let key = package_key("widget", version, platform);
            assert!(
                data.path().join(&key).is_file(),
                "{key} missing after sync; the data dir holds {:?}\n{stdout}{stderr}",
                files_under(data.path(), "")
            );
        }
        let record = release_key("widget", version);
        assert!(
            data.path().join(&record).is_file(),
            "{record} missing after sync"
        );
    }

    // a second run downloads no package again,
    upstream.proxy().clear_seen();
    let (code, again, stderr) = tfreg_run(&args, &[]);
    assert_eq!(code, 0, "second tfreg sync failed:\n{again}{stderr}");
    let fetched = upstream.proxy().seen_containing(".zip");
    assert!(
        fetched.is_empty(),
        "the second sync fetched {fetched:?}:\n{again}"
    );

    // and a registry serving that directory, with no upstream at all, installs it.
    upstream.stop();
    let server = Server::start(data.path(), &[]);
    let tf = Terraform::new(&mirror_config(&server.url), &server.cert);
    tf.write("main.tf", &requires_provider("widget", WIDGET, "~> 1.0"));
    let output = init(&tf, "offline install");
    assert!(
        output.contains(&format!("Installed {WIDGET} v1.1.0")),
        "{output}"
    );
}

#[test]
fn in_pass_through_mode_terraform_downloads_from_the_upstream_and_the_cache_fills_behind() {
    // Given a registry handing out the upstream's own package URLs,
    let upstream = Upstream::start();
    let cache = Cache::start(&upstream, &[ACME], &["--upstream-fetch", "pass-through"]);
    let [own, _] = Upstream::platforms();

    // when Terraform (trusting both certificates) installs acme/widget through the mirror,
    let certs = TempDir::new().unwrap();
    let bundle = certs.path().join("both.pem");
    let mut pem = std::fs::read(&cache.server.cert).unwrap();
    pem.extend(std::fs::read(upstream.cert()).unwrap());
    std::fs::write(&bundle, pem).unwrap();
    let tf = Terraform::new(&mirror_config(&cache.server.url), &bundle);
    tf.write("main.tf", &requires_provider("widget", WIDGET, "~> 1.0"));
    let output = init(&tf, "pass-through install");

    // then it got the package from the upstream, checked against the upstream's zh: hash,
    assert!(
        output.contains(&format!("Installed {WIDGET} v1.1.0")),
        "{output}"
    );
    let zip = format!("terraform-provider-widget_1.1.0_{own}.zip");
    assert!(
        !upstream.proxy().seen_containing(&zip).is_empty(),
        "{zip} was never downloaded from the upstream: {:?}",
        upstream.proxy().seen()
    );
    let log = cache.server.log();
    let served: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("tfreg::access") && l.contains(".zip"))
        .collect();
    assert!(
        served.is_empty(),
        "Terraform downloaded the package from the registry, not the upstream: {served:?}"
    );
    // and the registry caches the package behind it.
    let package = package_key("widget", "1.1.0", &own);
    let cached = tfreg_e2e::wait_until(Duration::from_secs(20), || cache.has(&package));
    assert!(
        cached,
        "{package} was not cached in the background; the data dir holds {:?}",
        cache.files_under("")
    );
}

#[test]
fn upstream_providers_take_the_registrys_tokens_and_their_namespace_scopes() {
    // Given a private registry caching registry.upstream.test/acme/*,
    let upstream = Upstream::start();
    let data = TempDir::new().unwrap();
    let mut args = vec!["--upstream".to_owned(), format!("{UPSTREAM_HOST}/acme/*")];
    args.extend(upstream.registry_args());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start_private(data.path(), &args);
    let acme = server.create_token(&["--namespace", "acme"]);
    let other = server.create_token(&["--namespace", "other"]);
    let index = format!(
        "{}/v1/mirror/{UPSTREAM_HOST}/acme/widget/index.json",
        server.url
    );
    let get = |token: Option<&str>| {
        let mut request = server.client().get(&index);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().unwrap();
        (response.status().as_u16(), response.text().unwrap())
    };

    // then without a token the mirror answers 401 and asks the upstream nothing,
    upstream.proxy().clear_seen();
    assert_eq!(get(None).0, 401);
    // a token for another namespace sees no such provider (as for a published one),
    let (status, body) = get(Some(&other));
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("has no provider"), "{body}");
    assert!(
        upstream.proxy().seen_containing("/versions").is_empty(),
        "the upstream was asked on behalf of a request that may not read acme"
    );
    // and a token for acme gets the upstream's versions.
    let (status, body) = get(Some(&acme));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("1.1.0"), "{body}");
}

/// A second door to the stand-in, on another port of 127.0.0.1: what an upstream's answer
/// could point the registry at on its own network. It answers as the stand-in does (so a
/// registry that followed the answer would succeed) and records what reached it.
fn another_port(upstream: &Upstream) -> TamperingProxy {
    let tls = upstream.data().join(".tfreg/tls");
    TamperingProxy::start(
        &upstream.server().url,
        &upstream.cert(),
        &tls.join("cert.pem"),
        &tls.join("key.pem"),
    )
}

/// Asserts a 502 that tells nothing of what the other port is or did.
fn assert_generic_refusal(what: &str, status: u16, body: &str, other: &TamperingProxy) {
    assert_eq!(status, 502, "{what}: {body}");
    assert!(
        body.contains("not one the registry fetches from") || body.contains("providers.v1"),
        "{what}: the 502 does not say it was refused: {body}"
    );
    let port = other.url.rsplit(':').next().unwrap();
    let lower = body.to_lowercase();
    for detail in [
        port,
        "connect",
        "certificate",
        "tls",
        "os error",
        "answered",
    ] {
        assert!(
            !lower.contains(detail),
            "{what}: the 502 tells {detail:?} of the other address: {body}"
        );
    }
}

#[test]
fn the_upstreams_answers_never_point_the_registry_at_another_address_unless_allowed() {
    // Given a registry caching the stand-in, and the same stand-in answering on another port
    // of the same host,
    let upstream = Upstream::start();
    let other = another_port(&upstream);
    let cache = Cache::start(&upstream, &[ACME], &["--upstream-refresh", "1s"]);
    let [own, _] = Upstream::platforms();

    // when service discovery points providers.v1 at the other port, then the version list
    // is not asked there: a 502 that says nothing of the other port;
    upstream.set(Fault::Discovery(other.url.clone()));
    let (status, body, _) =
        cache.timed_get("/v1/mirror/registry.upstream.test/acme/gadget/index.json");
    assert_generic_refusal("providers.v1 at another port", status, &body, &other);
    assert!(
        body.contains("providers.v1"),
        "the 502 does not say why: {body}"
    );

    // when an API answer redirects to the other port (asked again past the registry's wait
    // after a failure), then the redirect is not followed;
    std::thread::sleep(Duration::from_millis(1100));
    upstream.set(Fault::Redirect(other.url.clone()));
    let (status, body, _) =
        cache.timed_get("/v1/mirror/registry.upstream.test/acme/gadget/index.json");
    assert_generic_refusal("an API redirect to another port", status, &body, &other);

    // when the download answers name SHA256SUMS at the other port, then the release is not
    // verified from there;
    upstream.set(Fault::PointAt("shasums_url".into(), other.url.clone()));
    let (status, body, _) =
        cache.timed_get("/v1/mirror/registry.upstream.test/acme/widget/1.0.0.json");
    assert_generic_refusal("SHA256SUMS at another port", status, &body, &other);

    // when they name the package at the other port, then the package is not fetched there
    // (nor in the background).
    upstream.set(Fault::PointAt("download_url".into(), other.url.clone()));
    let (status, body, _) =
        cache.timed_get("/v1/mirror/registry.upstream.test/acme/widget/1.1.0.json");
    assert_eq!(status, 200, "the release itself verifies: {body}");
    let package = cache.package_path(&body, &own);
    let (status, body, _) = cache.timed_get(&package);
    assert_generic_refusal("a package at another port", status, &body, &other);
    // when a package's download redirects to the other port (gadget's list asked again
    // past the registry's wait after its failures), then the redirect is not followed.
    std::thread::sleep(Duration::from_millis(1100));
    upstream.set(Fault::RedirectZip(other.url.clone()));
    let (status, body, _) =
        cache.timed_get("/v1/mirror/registry.upstream.test/acme/gadget/2.0.0.json");
    assert_eq!(status, 200, "the release itself verifies: {body}");
    let package = cache.package_path(&body, &own);
    let (status, body, _) = cache.timed_get(&package);
    assert_generic_refusal(
        "a package redirected to another port",
        status,
        &body,
        &other,
    );
    assert!(
        other.seen().is_empty(),
        "the registry connected to the other port: {:?}",
        other.seen()
    );
    // The refusals are the same words on the status page.
    let page = cache.timed_get("/upstream").1;
    assert!(
        !page.contains(other.url.rsplit(':').next().unwrap()),
        "the /upstream page names the other port:\n{page}"
    );

    // Given a registry whose operator allows 127.0.0.1 (the company's download host),
    upstream.set(Fault::None);
    let allowed = Cache::start(
        &upstream,
        &[ACME],
        &[
            "--upstream-allow-address",
            "127.0.0.1/32",
            "--upstream-refresh",
            "1s",
        ],
    );
    // then a package at the other port installs from there,
    upstream.set(Fault::PointAt("download_url".into(), other.url.clone()));
    let tf = allowed.terraform("widget", "= 1.1.0");
    let output = init(&tf, "a package at an allowed address");
    assert!(
        output.contains(&format!("Installed {WIDGET} v1.1.0")),
        "{output}"
    );
    assert!(
        !other.seen_containing(".zip").is_empty(),
        "the allowed address was not used: {:?}",
        other.seen()
    );
    // while API calls still go only to the configured upstream (once the discovery it
    // read is a refresh time old).
    other.clear_seen();
    std::thread::sleep(Duration::from_millis(1100));
    upstream.set(Fault::Discovery(other.url.clone()));
    let (status, body, _) =
        allowed.timed_get("/v1/mirror/registry.upstream.test/acme/gadget/index.json");
    assert_generic_refusal("providers.v1 at an allowed address", status, &body, &other);
    assert!(other.seen().is_empty(), "{:?}", other.seen());
}

#[test]
fn a_package_that_stalls_or_trickles_is_abandoned_within_seconds() {
    // Given a registry caching the stand-in,
    let upstream = Upstream::start();
    let cache = Cache::start(&upstream, &[ACME], &[]);
    let [own, _] = Upstream::platforms();
    for (fault, version) in [(Fault::StallZip, "1.0.0"), (Fault::TrickleZip, "1.1.0")] {
        // when the upstream's packages stall after their first KiB, or trickle a byte every
        // five seconds,
        upstream.set(fault.clone());
        let (status, body, _) = cache.timed_get(&format!(
            "/v1/mirror/registry.upstream.test/acme/widget/{version}.json"
        ));
        assert_eq!(
            status, 200,
            "{fault:?}: the release itself verifies: {body}"
        );
        let package = cache.package_path(&body, &own);

        // then asking for one fails with a 502 within seconds: the registry abandons a
        // package when fewer than 64 KiB arrive in 15 s (before, a stall took 60 s and a
        // trickle had no answer after 60 s). Bounds are generous: this is no speed test.
        let (status, body, took) = cache.get_within(&package, Duration::from_secs(90));
        assert_eq!(
            status, 502,
            "{fault:?}: GET {package} after {took:?}: {body}"
        );
        assert!(
            took < Duration::from_secs(40),
            "{fault:?}: the 502 came after {took:?}: {body}"
        );
        assert!(
            cache.files_under("mirror").is_empty(),
            "{fault:?}: a partial package was stored"
        );
    }
}

/// The second stand-in's hostname, for the tests that need two upstream hosts.
const OTHER_HOST: &str = "other.upstream.test";

#[test]
fn a_slow_upstream_host_does_not_starve_another_hosts_releases() {
    // Given a registry caching two upstream hosts with the default four fetch slots,
    let slow = Upstream::start();
    let other = Upstream::start();
    let certs = TempDir::new().unwrap();
    let bundle = certs.path().join("both.pem");
    let mut pem = std::fs::read(slow.cert()).unwrap();
    pem.extend(std::fs::read(other.cert()).unwrap());
    std::fs::write(&bundle, pem).unwrap();
    let data = TempDir::new().unwrap();
    let args = [
        "--upstream".to_owned(),
        ACME.to_owned(),
        "--upstream".to_owned(),
        format!("{OTHER_HOST}/acme/*"),
        "--upstream-host".to_owned(),
        format!("{UPSTREAM_HOST}={}", slow.url()),
        "--upstream-host".to_owned(),
        format!("{OTHER_HOST}={}", other.url()),
        "--upstream-ca".to_owned(),
        bundle.display().to_string(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start(data.path(), &args);
    let cache = Cache { server, data };
    let [own, _] = Upstream::platforms();

    // when one host serves its packages slowly (16 KiB/s: never abandoned) and two of its
    // releases are asked for, whose packages the registry then fetches in the background,
    slow.set(Fault::SlowZip);
    for version in ["1.0.0", "1.1.0"] {
        let (status, body, _) = cache.timed_get(&format!(
            "/v1/mirror/{UPSTREAM_HOST}/acme/widget/{version}.json"
        ));
        assert_eq!(status, 200, "the slow host's {version}: {body}");
    }
    let busy = tfreg_e2e::wait_until(Duration::from_secs(20), || {
        slow.proxy().seen_containing(".zip").len() >= 2
    });
    assert!(
        busy,
        "the slow host's packages were not fetched: {:?}",
        slow.proxy().seen()
    );

    // then the slow host's metadata is still served (it never waits behind downloads),
    let (status, body, _) = cache.timed_get(&format!(
        "/v1/mirror/{UPSTREAM_HOST}/acme/gadget/2.0.0.json"
    ));
    assert_eq!(
        status, 200,
        "the slow host's gadget, while its downloads run: {body}"
    );
    // and the other host's release and package are served, from slots the slow host's
    // downloads may not take (before, they waited for them and got a 503 after 20 s).
    let (status, body, _) =
        cache.timed_get(&format!("/v1/mirror/{OTHER_HOST}/acme/widget/1.1.0.json"));
    assert_eq!(status, 200, "the other host's release: {body}");
    let package = cache.package_path(&body, &own);
    let (status, body, took) = cache.timed_get(&package);
    assert_eq!(
        status, 200,
        "the other host's package after {took:?}: {body}"
    );
    assert!(
        !other.proxy().seen_containing(".zip").is_empty(),
        "the other host's package did not come from it: {:?}",
        other.proxy().seen()
    );
}

#[test]
fn index_requests_and_made_up_names_cost_the_upstream_one_call_each() {
    // Given a registry caching the stand-in's acme/*,
    let upstream = Upstream::start();
    let cache = Cache::start(&upstream, &[ACME], &[]);
    upstream.proxy().clear_seen();

    // when acme/widget's index.json is asked three times,
    let widget = "/v1/mirror/registry.upstream.test/acme/widget/index.json";
    for _ in 0..3 {
        let (status, body, _) = cache.timed_get(widget);
        assert_eq!(status, 200, "{body}");
    }
    // then the upstream's version list was asked each time (a new release is listed at
    // once) but its service discovery once: one upstream call per request, not two;
    let seen = upstream.proxy().seen();
    let discovery = upstream
        .proxy()
        .seen_containing("/.well-known/terraform.json");
    assert_eq!(discovery.len(), 1, "discovery read per request: {seen:?}");
    let lists = upstream.proxy().seen_containing("/acme/widget/versions");
    assert_eq!(lists.len(), 3, "{seen:?}");

    // when a provider the upstream does not have is asked three times,
    let made_up = "/v1/mirror/registry.upstream.test/acme/nosuchthing/index.json";
    for _ in 0..3 {
        cache.mirror_error(made_up, 404);
    }
    // then the upstream was asked about it once,
    let asked = upstream.proxy().seen_containing("nosuchthing");
    assert_eq!(asked.len(), 1, "{:?}", upstream.proxy().seen());
    // and the /upstream page lists the provider that exists, not the made-up one.
    let (status, page, _) = cache.timed_get("/upstream");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("acme/widget"), "{page}");
    assert!(
        !page.contains("nosuchthing"),
        "the made-up name fills the page:\n{page}"
    );
}
