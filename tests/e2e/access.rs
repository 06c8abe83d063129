//! Access control, as Terraform meets it: a registry that is not public answers only
//! requests with a valid token, which Terraform sends from a `credentials` block.

use tfreg_e2e::{
    mirror_config, provider_release, provider_zip, publish, requires_provider, tar_gz,
    terraform_platform, tfreg, Gpg, Server, TempDir, Terraform,
};

const HOST: &str = "registry.example.test";
const KEY: &str = "release@example.test";

fn credentials(host: &str, token: &str) -> String {
    format!("credentials \"{host}\" {{\n  token = \"{token}\"\n}}\n")
}

#[test]
fn terraform_installs_with_a_token_and_reports_401_without_one() {
    // Given a private registry with a module, a signed provider and a mirrored provider,
    let own = terraform_platform();
    let gpg = Gpg::new();
    gpg.generate(KEY, "rsa2048", "never", None);
    let data = TempDir::new().unwrap();
    publish(
        data.path(),
        "modules/acme/network/aws/1.0.0.tar.gz",
        &tar_gz(&[("main.tf", "")]),
    );
    let files = provider_release("widget", "1.0.0", &[&own]);
    for (name, content) in &files {
        publish(
            data.path(),
            &format!("providers/acme/widget/1.0.0/{name}"),
            content,
        );
    }
    let sums = files.last().unwrap();
    let sig = gpg.sign(KEY, &sums.1, None);
    publish(
        data.path(),
        &format!("providers/acme/widget/1.0.0/{}.sig", sums.0),
        &sig,
    );
    publish(data.path(), "keys/acme/release.asc", &gpg.export(KEY));
    let mirrored = format!(
        "mirror/registry.terraform.io/hashicorp/fakecloud/terraform-provider-fakecloud_2.0.0_{own}.zip"
    );
    publish(
        data.path(),
        &mirrored,
        &provider_zip("fakecloud", "2.0.0", &own),
    );
    let server = Server::start_private(data.path(), &["--hostname", HOST]);
    let token = server.create_token(&["--description", "e2e"]);
    assert!(token.starts_with("tfreg_"), "{token}");

    // The module source the banner suggests names the registry's hostname, not its address.
    let banner = server.stdout();
    let source_host = banner
        .lines()
        .find_map(|l| l.trim().strip_prefix("source  = \""))
        .and_then(|s| s.strip_suffix("/<namespace>/<name>/<system>\""))
        .unwrap_or_else(|| panic!("{banner}"));
    assert_eq!(source_host, HOST, "{banner}");
    let config = format!(
        "module \"net\" {{\n  source = \"{source_host}/acme/network/aws\"\n}}\n{}",
        requires_provider("widget", &format!("{HOST}/acme/widget"), "1.0.0")
    );
    let with_credentials = format!(
        "{}{}{}",
        server.printed_cli_config(),
        credentials(HOST, &token),
        credentials(&server.addr, &token)
    );

    // When Terraform has the token, modules and providers install from the registry,
    let tf = Terraform::new(&with_credentials, &server.cert);
    tf.write("main.tf", &config);
    let output = tf.init(&[]);
    assert!(
        output.contains(&format!("Installed {HOST}/acme/widget v1.0.0")),
        "{output}"
    );
    assert_eq!(tf.installed_modules()["net"], "1.0.0");

    // and providers install through the mirror (whose credentials name the host and port).
    let mirror = Terraform::new(
        &format!(
            "{}{}",
            mirror_config(&server.url),
            credentials(&server.addr, &token)
        ),
        &server.cert,
    );
    mirror.write(
        "main.tf",
        &format!(
            "terraform {{\n  required_providers {{\n    \
             fakecloud = {{ source = \"hashicorp/fakecloud\" }}\n    \
             widget = {{ source = \"{HOST}/acme/widget\" }}\n  }}\n}}\n"
        ),
    );
    let output = mirror.init(&[]);
    assert!(
        output.contains("Installed hashicorp/fakecloud v2.0.0"),
        "{output}"
    );
    assert!(
        output.contains(&format!("Installed {HOST}/acme/widget v1.0.0")),
        "{output}"
    );

    // Without it, Terraform reports the 401.
    let anonymous = Terraform::new(&server.printed_cli_config(), &server.cert);
    anonymous.write("main.tf", &config);
    let output = anonymous.init_fails();
    assert!(output.contains("401"), "{output}");

    // The token never reaches the log; its use is recorded.
    // The secret is everything after `tfreg_<id>_` (it may itself contain '_').
    let secret = token.splitn(3, '_').nth(2).unwrap();
    assert!(!server.log().contains(secret), "the token was logged");
    let data_arg = data.path().to_str().unwrap();
    let list = tfreg(&["token", "list", "--data", data_arg]);
    assert!(!list.contains(secret), "{list}");
    let id = token.split('_').nth(1).unwrap();
    let row = list.lines().find(|l| l.starts_with(id)).unwrap();
    assert!(
        row.contains("active") && row.contains("e2e") && !row.ends_with("never  e2e"),
        "{row}"
    );

    // Rotation: a new token works at once, and the revoked one no longer does.
    let next = server.create_token(&[]);
    tfreg(&["token", "revoke", "--data", data_arg, id]);
    let revoked = Terraform::new(&with_credentials, &server.cert);
    revoked.write("main.tf", &config);
    assert!(revoked.init_fails().contains("401"));
    let rotated = Terraform::new(
        &format!(
            "{}{}{}",
            server.printed_cli_config(),
            credentials(HOST, &next),
            credentials(&server.addr, &next)
        ),
        &server.cert,
    );
    rotated.write("main.tf", &config);
    rotated.init(&[]);
}

#[test]
fn a_scoped_token_reads_only_its_namespaces() {
    let data = TempDir::new().unwrap();
    publish(
        data.path(),
        "modules/acme/network/aws/1.0.0.tar.gz",
        &tar_gz(&[("main.tf", "")]),
    );
    publish(
        data.path(),
        "modules/globex/secret/aws/1.0.0.tar.gz",
        &tar_gz(&[("main.tf", "")]),
    );
    let server = Server::start_private(data.path(), &[]);
    let token = server.create_token(&["--namespace", "acme"]);
    let client = server.client();
    let get = |path: &str| {
        let response = client
            .get(format!("{}{path}", server.url))
            .bearer_auth(&token)
            .send()
            .unwrap();
        (response.status().as_u16(), response.text().unwrap())
    };
    assert_eq!(get("/v1/modules/acme/network/aws/versions").0, 200);
    let hidden = get("/v1/modules/globex/secret/aws/versions");
    let absent = get("/v1/modules/globex/nothing/aws/versions");
    assert_eq!(hidden.0, 404);
    assert_eq!(hidden.1, absent.1.replace("nothing", "secret"));
}
