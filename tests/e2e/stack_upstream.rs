//! The upstream cache on the deployed stack (AWS shape): the mirror function answers for the
//! stand-in upstream's providers from their metadata, hands an uncached package out at the
//! upstream's own URL with its `zh:` hash and writes a fetch request into the bucket; the
//! fetcher function, started by that object's S3 event, fetches, verifies and stores the
//! package under `mirror/`, which the indexer then indexes; from then on the mirror serves it
//! from the bucket, with `h1:` and `zh:`, and Terraform installs it with the upstream gone.

use tfreg_e2e::stack::{Stack, StackOptions};
use tfreg_e2e::{
    client_trusting, mirror_config, requires_provider, sha256_hex, Fault, Terraform, Upstream,
    UPSTREAM_HOST,
};

const WIDGET: &str = "registry.upstream.test/acme/widget";

/// The stack with the stand-in's `acme/*` allowed (`UpstreamProviders`), its functions
/// pointed at the stand-in (`TFREG_UPSTREAM_HOSTS`, `TFREG_UPSTREAM_CA`), and a token.
fn stack_for(upstream: &Upstream) -> (Stack, String) {
    let stack = Stack::start(&StackOptions {
        upstream: Some(format!("{UPSTREAM_HOST}/acme/*")),
        function_env: vec![
            (
                "TFREG_UPSTREAM_HOSTS".into(),
                format!("{UPSTREAM_HOST}={}", upstream.url()),
            ),
            (
                "TFREG_UPSTREAM_CA".into(),
                upstream.cert().display().to_string(),
            ),
        ],
        ..StackOptions::default()
    });
    let token = stack.create_token(&[]);
    (stack, token)
}

/// A mirror document of the stack: its status and JSON.
fn mirror_get(stack: &Stack, token: &str, file: &str) -> (u16, serde_json::Value) {
    let url = format!("{}/v1/mirror/{WIDGET}/{file}", stack.url);
    let response = client_trusting(&stack.cert)
        .get(&url)
        .bearer_auth(token)
        .send()
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = response.status().as_u16();
    let body = response.text().unwrap();
    let json = serde_json::from_str(&body)
        .unwrap_or_else(|e| panic!("GET {url}: {e}: {body}\n{}", stack.logs()));
    (status, json)
}

/// The stand-in's zip of `acme/widget` `version` for `platform`.
fn upstream_zip(upstream: &Upstream, version: &str, platform: &str) -> Vec<u8> {
    let path = upstream.data().join(format!(
        "providers/acme/widget/{version}/terraform-provider-widget_{version}_{platform}.zip"
    ));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn package_key(version: &str, platform: &str) -> String {
    format!("mirror/{WIDGET}/terraform-provider-widget_{version}_{platform}.zip")
}

fn fetch_request_key(version: &str, platform: &str) -> String {
    format!("upstream/{WIDGET}/fetch/{version}_{platform}.json")
}

/// Delivers the events of every object under `prefix` (to the functions subscribed).
fn deliver_under(stack: &Stack, prefix: &str) -> Vec<String> {
    let keys = stack.keys_under(prefix);
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    stack.deliver(&refs);
    keys
}

#[test]
fn the_stack_passes_uncached_packages_through_and_the_fetcher_caches_them_for_good() {
    // Given the stand-in upstream and the stack allowing its providers,
    let mut upstream = Upstream::start();
    let (stack, token) = stack_for(&upstream);
    let [own, other] = Upstream::platforms();

    // when the mirror is asked for acme/widget's versions and 1.1.0's packages,
    let (status, index) = mirror_get(&stack, &token, "index.json");
    assert_eq!(status, 200, "{index}\n{}", stack.logs());
    for version in ["1.0.0", "1.1.0"] {
        assert!(index["versions"].get(version).is_some(), "{index}");
    }
    let (status, packages) = mirror_get(&stack, &token, "1.1.0.json");
    assert_eq!(status, 200, "{packages}\n{}", stack.logs());

    // then each platform not cached yet is handed out at the upstream's own URL with the
    // zh: hash of the signed SHA256SUMS,
    for platform in [&own, &other] {
        let archive = &packages["archives"][platform.as_str()];
        let url = archive["url"].as_str().unwrap_or_default();
        assert!(
            !url.is_empty() && !url.starts_with(&stack.url),
            "{platform}: {archive}"
        );
        let zh = format!(
            "zh:{}",
            sha256_hex(&upstream_zip(&upstream, "1.1.0", platform))
        );
        assert_eq!(archive["hashes"], serde_json::json!([zh]), "{platform}");
    }
    // the release record and a fetch request per platform land in the bucket, no package
    // yet,
    let written = stack.keys_under("upstream/");
    for key in [
        format!("upstream/{WIDGET}/1.1.0.json"),
        fetch_request_key("1.1.0", &own),
        fetch_request_key("1.1.0", &other),
    ] {
        assert!(written.contains(&key), "{key} not in {written:?}");
    }
    assert_eq!(stack.keys_under("mirror/"), Vec::<String>::new());
    // and Terraform (trusting both certificates) installs it from the upstream, on a cold
    // cache, through the stack's mirror,
    let credentials = format!("credentials \"{}\" {{ token = \"{token}\" }}\n", stack.addr);
    let config = format!("{}{credentials}", mirror_config(&stack.url));
    let bundle = stack.dir().join("stack-and-upstream.pem");
    let mut pem = std::fs::read(&stack.cert).unwrap();
    pem.extend(std::fs::read(upstream.cert()).unwrap());
    std::fs::write(&bundle, pem).unwrap();
    let cold = Terraform::new(&config, &bundle);
    cold.write("main.tf", &requires_provider("widget", WIDGET, "1.1.0"));
    let output = cold.run_ok(
        &["init", "-no-color", "-input=false"],
        "pass-through install",
    );
    assert!(
        output.contains(&format!("Installed {WIDGET} v1.1.0")),
        "{output}\n{}",
        stack.logs()
    );
    let zip = format!("terraform-provider-widget_1.1.0_{own}.zip");
    assert!(
        !upstream.proxy().seen_containing(&zip).is_empty(),
        "{zip} was not downloaded from the upstream: {:?}",
        upstream.proxy().seen()
    );

    // and once the bucket's events reach the fetcher, each verified package is stored
    // under mirror/ with the upstream's bytes,
    deliver_under(&stack, "upstream/");
    let bucket = stack.artifacts();
    for platform in [&own, &other] {
        let key = package_key("1.1.0", platform);
        let stored = stack.block_on(async {
            use tfreg_core::ArtifactStore;
            let body = bucket.open(&key).await.unwrap();
            let mut body = body.unwrap_or_else(|| panic!("{key} not stored\n{}", stack.logs()));
            let mut bytes = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut body.reader, &mut bytes)
                .await
                .unwrap();
            bytes
        });
        assert_eq!(stored, upstream_zip(&upstream, "1.1.0", platform), "{key}");
    }
    assert!(
        stack.log("fetcher").contains("cached the package"),
        "{}",
        stack.log("fetcher")
    );

    // and once the indexer has indexed them, the mirror serves them from the bucket with
    // h1: and zh:.
    deliver_under(&stack, "mirror/");
    let (status, packages) = mirror_get(&stack, &token, "1.1.0.json");
    assert_eq!(status, 200, "{packages}");
    let archive = &packages["archives"][own.as_str()];
    let hashes: Vec<&str> = archive["hashes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h.as_str())
        .collect();
    assert!(hashes.iter().any(|h| h.starts_with("h1:")), "{archive}");
    assert!(hashes.iter().any(|h| h.starts_with("zh:")), "{archive}");
    let url = archive["url"].as_str().unwrap();
    assert!(
        url.contains("X-Amz-Signature") && !url.starts_with(upstream.url()),
        "not the bucket's presigned URL: {url}"
    );

    // Given the upstream stopped, Terraform installs the provider through the stack's
    // mirror from the bucket alone.
    upstream.stop();
    let credentials = format!("credentials \"{}\" {{ token = \"{token}\" }}\n", stack.addr);
    let tf = Terraform::new(
        &format!("{}{credentials}", mirror_config(&stack.url)),
        &stack.cert,
    );
    tf.write("main.tf", &requires_provider("widget", WIDGET, "1.1.0"));
    let output = tf.run_ok(
        &["init", "-no-color", "-input=false"],
        "install from the bucket",
    );
    assert!(
        output.contains(&format!("Installed {WIDGET} v1.1.0")),
        "{output}\n{}",
        stack.logs()
    );
}

#[test]
fn the_fetcher_refuses_a_zip_that_does_not_match_sha256sums_and_stores_nothing() {
    // Given the stack, and an upstream whose zips arrive corrupted,
    let upstream = Upstream::start();
    let (stack, token) = stack_for(&upstream);
    let [own, _] = Upstream::platforms();
    upstream.set(Fault::CorruptZip);

    // when the mirror hands 1.0.0 out (its metadata is intact) and the fetcher is asked
    // for its packages,
    let (status, packages) = mirror_get(&stack, &token, "1.0.0.json");
    assert_eq!(status, 200, "{packages}\n{}", stack.logs());
    assert!(stack
        .keys_under("upstream/")
        .contains(&fetch_request_key("1.0.0", &own)));
    deliver_under(&stack, "upstream/");

    // then it refuses them, says why, and stores nothing under mirror/.
    assert_eq!(
        stack.keys_under("mirror/"),
        Vec::<String>::new(),
        "{}",
        stack.log("fetcher")
    );
    let log = stack.log("fetcher");
    assert!(log.contains("refused"), "{log}");
    assert!(log.contains("SHA256SUMS"), "{log}");
}
