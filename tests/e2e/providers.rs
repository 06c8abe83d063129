//! Installing signed providers with `terraform init`, from the registry and through the
//! network mirror. Terraform only accepts a port-less provider hostname through a mirror, so
//! the server runs as `registry.example.test`, mapped to its port by a CLI `host` block.

use std::path::Path;

use tfreg_e2e::{
    mirror_config, provider_release, provider_zip, publish, requires_provider, sha256_hex,
    terraform_platform, Gpg, Server, TempDir, Terraform,
};

const HOST: &str = "registry.example.test";
const KEY: &str = "release@example.test";

/// Publishes `acme/<type>` `version` for `platforms` into `data`, as goreleaser's `dist/`
/// files, signed by `signer`'s key `email`. Returns the release's files.
fn publish_signed(
    data: &Path,
    gpg: &Gpg,
    email: &str,
    type_: &str,
    version: &str,
    platforms: &[&str],
) -> Vec<(String, Vec<u8>)> {
    let files = provider_release(type_, version, platforms);
    let dir = format!("providers/acme/{type_}/{version}");
    for (name, content) in &files {
        publish(data, &format!("{dir}/{name}"), content);
    }
    let sums = &files.last().unwrap();
    publish(
        data,
        &format!("{dir}/{}.sig", sums.0),
        &gpg.sign(email, &sums.1, None),
    );
    files
}

fn platforms() -> Vec<String> {
    let own = terraform_platform();
    let mut all = vec![own];
    for other in ["darwin_arm64", "windows_amd64", "linux_arm64"] {
        if !all.iter().any(|p| p == other) {
            all.push(other.to_owned());
        }
    }
    all.truncate(3);
    all
}

fn lock_file(tf: &Terraform) -> String {
    std::fs::read_to_string(tf.dir.path().join(".terraform.lock.hcl")).expect("a lock file")
}

#[test]
fn terraform_installs_a_signed_provider_and_the_mirror_agrees_on_the_lock_file() {
    // Given a signed release of acme/widget for three platforms and its key under keys/acme/,
    let gpg = Gpg::new();
    gpg.generate(KEY, "rsa2048", "never", None);
    let data = TempDir::new().unwrap();
    let platforms = platforms();
    let platform_refs: Vec<&str> = platforms.iter().map(String::as_str).collect();
    let files = publish_signed(data.path(), &gpg, KEY, "widget", "1.2.0", &platform_refs);
    publish(data.path(), "keys/acme/release.asc", &gpg.export(KEY));
    let server = Server::start(data.path(), &["--hostname", HOST]);

    // when Terraform installs it from the registry,
    let tf = Terraform::new(&server.printed_cli_config(), &server.cert);
    tf.write(
        "main.tf",
        &requires_provider("widget", &format!("{HOST}/acme/widget"), "~> 1.0"),
    );
    let output = tf.init(&[]);

    // then the signature is verified with the published key,
    let key_id = gpg.key_id(KEY);
    assert!(
        output.contains(&format!(
            "Installed {HOST}/acme/widget v1.2.0 (self-signed, key ID {key_id})"
        )),
        "{output}"
    );
    // and the lock file holds zh: for every platform in SHA256SUMS, plus an h1:.
    let lock = lock_file(&tf);
    for (name, content) in files.iter().filter(|(n, _)| n.ends_with(".zip")) {
        assert!(
            lock.contains(&format!("\"zh:{}\"", sha256_hex(content))),
            "{name} missing:\n{lock}"
        );
    }
    assert!(lock.contains("\"h1:"), "{lock}");
    // Terraform asked with HEAD before it downloaded the package, and got a 200.
    let path = format!(
        "path=\"/v1/artifacts/providers/acme/widget/1.2.0/terraform-provider-widget_1.2.0_{}.zip\"",
        platforms[0]
    );
    let head = server
        .log()
        .lines()
        .any(|l| l.contains("method=HEAD") && l.contains(&path) && l.contains("status=200"));
    assert!(head, "no successful HEAD:\n{}", server.log());

    // Given the same configuration and lock file in a fresh directory, installing through
    // the registry's network mirror passes: the mirror's h1: agrees with the lock file.
    let mirror = Terraform::new(&mirror_config(&server.url), &server.cert);
    mirror.write(
        "main.tf",
        &requires_provider("widget", &format!("{HOST}/acme/widget"), "~> 1.0"),
    );
    mirror.write(".terraform.lock.hcl", &lock);
    let output = mirror.init(&[]);
    assert!(
        output.contains(&format!("Installed {HOST}/acme/widget v1.2.0")),
        "{output}"
    );
    assert!(
        server
            .log()
            .contains(&format!("/v1/mirror/{HOST}/acme/widget/1.2.0.json")),
        "the mirror was not used"
    );
}

#[test]
fn terraform_installs_providers_uploaded_under_mirror() {
    let own = terraform_platform();
    let data = TempDir::new().unwrap();
    // Given a provider of the public registry synced under mirror/ in the layout
    // `terraform providers mirror` writes, with that command's own JSON files beside it,
    let zip = provider_zip("fakecloud", "2.0.0", &own);
    let dir = "mirror/registry.terraform.io/hashicorp/fakecloud";
    publish(
        data.path(),
        &format!("{dir}/terraform-provider-fakecloud_2.0.0_{own}.zip"),
        &zip,
    );
    publish(
        data.path(),
        &format!("{dir}/index.json"),
        br#"{"versions":{"9.9.9":{}}}"#,
    );
    publish(data.path(), &format!("{dir}/2.0.0.json"), b"not even json");
    let server = Server::start(data.path(), &["--hostname", HOST]);

    // when Terraform installs it through the mirror,
    let tf = Terraform::new(&mirror_config(&server.url), &server.cert);
    tf.write(
        "main.tf",
        &requires_provider("fakecloud", "hashicorp/fakecloud", ">= 1.0"),
    );
    let output = tf.init(&[]);

    // then it gets the uploaded version (the stale index.json is ignored), verified by the
    // mirror's hashes, and the lock file records the h1: the mirror announced.
    assert!(
        output.contains("Installed hashicorp/fakecloud v2.0.0"),
        "{output}"
    );
    let (status, body) =
        server.get("/v1/mirror/registry.terraform.io/hashicorp/fakecloud/2.0.0.json");
    assert_eq!(status, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let h1 = json["archives"][&own]["hashes"][0]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        lock_file(&tf).contains(&format!("\"{h1}\"")),
        "{}",
        lock_file(&tf)
    );
}

#[test]
fn the_output_of_terraform_providers_mirror_can_be_synced_under_mirror() {
    // Given a registry serving a signed provider,
    let gpg = Gpg::new();
    gpg.generate(KEY, "rsa2048", "never", None);
    let data = TempDir::new().unwrap();
    let own = terraform_platform();
    publish_signed(data.path(), &gpg, KEY, "widget", "3.0.0", &[&own]);
    publish(data.path(), "keys/acme/release.asc", &gpg.export(KEY));
    let origin = Server::start(data.path(), &["--hostname", HOST]);

    // when `terraform providers mirror` copies it and the result is synced into another
    // registry's mirror/ folder,
    let tf = Terraform::new(&origin.printed_cli_config(), &origin.cert);
    tf.write(
        "main.tf",
        &requires_provider("widget", &format!("{HOST}/acme/widget"), "3.0.0"),
    );
    let out = tf.dir.path().join("mirror-out");
    let output = tf.run(&["providers", "mirror", out.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let second = TempDir::new().unwrap();
    copy_tree(&out, &second.path().join("mirror"));
    drop(origin);
    let mirror = Server::start(second.path(), &["--hostname", "mirror.example.test"]);

    // then Terraform installs it from that mirror.
    let fresh = Terraform::new(&mirror_config(&mirror.url), &mirror.cert);
    fresh.write(
        "main.tf",
        &requires_provider("widget", &format!("{HOST}/acme/widget"), "3.0.0"),
    );
    let output = fresh.init(&[]);
    assert!(
        output.contains(&format!("Installed {HOST}/acme/widget v3.0.0")),
        "{output}"
    );
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn releases_that_cannot_be_verified_are_never_offered() {
    let gpg = Gpg::new();
    gpg.generate(KEY, "rsa2048", "never", None);
    gpg.generate("stranger@example.test", "rsa2048", "never", None);
    let own = terraform_platform();
    let data = TempDir::new().unwrap();
    publish(data.path(), "keys/acme/release.asc", &gpg.export(KEY));

    // A zip that does not match its SHA256SUMS line.
    publish_signed(data.path(), &gpg, KEY, "tampered", "1.0.0", &[&own]);
    let zip = format!("providers/acme/tampered/1.0.0/terraform-provider-tampered_1.0.0_{own}.zip");
    publish(
        data.path(),
        &zip,
        &provider_zip("tampered", "1.0.0", "something else"),
    );
    // A signature by a key outside keys/acme/ (it is trusted for another namespace only).
    publish_signed(
        data.path(),
        &gpg,
        "stranger@example.test",
        "foreign",
        "1.0.0",
        &[&own],
    );
    publish(
        data.path(),
        "keys/globex/stranger.asc",
        &gpg.export("stranger@example.test"),
    );
    // No signature at all.
    let files = provider_release("unsigned", "1.0.0", &[&own]);
    for (name, content) in &files {
        publish(
            data.path(),
            &format!("providers/acme/unsigned/1.0.0/{name}"),
            content,
        );
    }
    let server = Server::start(data.path(), &["--hostname", HOST]);
    for type_ in ["tampered", "foreign", "unsigned"] {
        let (status, body) = server.get(&format!("/v1/providers/acme/{type_}/versions"));
        assert_eq!(status, 404, "{type_}: {body}");
        assert!(body.contains("is not published here"), "{body}");
        let (status, _) = server.get(&format!("/v1/mirror/{HOST}/acme/{type_}/index.json"));
        assert_eq!(status, 404, "{type_} is offered by the mirror");

        let tf = Terraform::new(&server.printed_cli_config(), &server.cert);
        tf.write(
            "main.tf",
            &requires_provider(type_, &format!("{HOST}/acme/{type_}"), "1.0.0"),
        );
        let output = tf.init_fails();
        assert!(output.contains(&format!("{HOST}/acme/{type_}")), "{output}");
    }
    // The publisher sees why in `tfreg status`, for every release.
    let status = tfreg_e2e::tfreg_status(&["--data", data.path().to_str().unwrap()], &[]);
    for expected in [
        "acme/tampered",
        "does not match SHA256SUMS",
        "acme/foreign",
        "does not verify with any of the 1 usable key(s) under keys/acme/",
        "acme/unsigned",
        "terraform-provider-unsigned_1.0.0_SHA256SUMS.sig has not been published",
    ] {
        assert!(
            status.contains(expected),
            "status lacks {expected:?}:\n{status}"
        );
    }
}
