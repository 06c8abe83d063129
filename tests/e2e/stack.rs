//! The deployed stack, end to end: the real function binaries under Runtime API stand-ins,
//! behind an API Gateway stand-in built from template.yaml's routes, over moto; S3 events
//! delivered to the indexer binary as AWS sends them; and the real `terraform init`
//! installing through it, in both download modes.

use tfreg_e2e::stack::{Stack, StackOptions};
use tfreg_e2e::{
    host_block, mirror_config, provider_release, requires_provider, sha256_hex, tar_gz,
    terraform_platform, Gpg, Terraform,
};

const HOST: &str = "registry.example.test";

fn install_through_the_stack(download_mode: &str) {
    // Given the stack deployed with a custom domain (the registry's own hostname),
    let stack = Stack::start(&StackOptions {
        download_mode: download_mode.into(),
        domain: Some(HOST.into()),
        ..StackOptions::default()
    });
    // (whose banner's token command runs as printed, in a shell with its exports: the
    // workspace's tfreg, which knows --table),
    let banner = stack.banner(HOST);
    let script = Stack::banner_command(&banner, "Token:").expect(&banner);
    let run = std::process::Command::new("bash")
        .args(["-euc", &script])
        .env_remove("TFREG_TABLE")
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{script}\n{printed}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        printed.lines().last().unwrap().starts_with("tfreg_"),
        "{printed}"
    );
    // a module (its version has a `+`, which S3 events URL-encode), a signed provider
    // release for two platforms, and its key, uploaded to the bucket,
    let module = "modules/acme/network/aws/1.0.0+build.1.tar.gz";
    stack.upload(
        module,
        &tar_gz(&[("main.tf", "output \"v\" { value = \"1\" }\n")]),
    );
    let own = terraform_platform();
    let platforms = [own.as_str(), "windows_arm64"];
    let gpg = Gpg::new();
    // (an ed25519 key, as `gpg --quick-gen-key NAME ed25519 sign` makes it: GnuPG 2.3+'s default)
    gpg.generate("release@example.test", "ed25519", "never", None);
    let mut keys = vec![module.to_owned()];
    keys.extend(stack.upload_signed_release(&gpg, "widget", "1.2.0", &platforms));
    // (the same bytes, for the checks below: releases are made deterministically)
    let files = provider_release("widget", "1.2.0", &platforms);
    let dir = "providers/acme/widget/1.2.0";
    let sums_name = &files.last().unwrap().0;
    // with their event notifications delivered to the indexer, twice and out of order,
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    stack.deliver(&keys);

    // and a token from the table,
    let token = stack.create_token(&[]);
    let credentials = format!(
        "credentials \"{HOST}\" {{ token = \"{token}\" }}\ncredentials \"{}\" {{ token = \"{token}\" }}\n",
        stack.addr
    );

    // when Terraform installs the module and the provider through the API,
    let tf = Terraform::new(
        &format!("{}{credentials}", host_block(HOST, &stack.url)),
        &stack.cert,
    );
    tf.write(
        "main.tf",
        &format!(
            "module \"net\" {{\n  source  = \"{}/acme/network/aws\"\n  version = \"1.0.0+build.1\"\n}}\n{}",
            stack.addr,
            requires_provider("widget", &format!("{HOST}/acme/widget"), "1.2.0")
        ),
    );
    let output = tf.init(&[]);

    // then both are installed, the lock file holds zh: for every platform and an h1:,
    assert!(
        output.contains(&format!("Installed {HOST}/acme/widget v1.2.0 (self-signed")),
        "{output}\n{}",
        stack.logs()
    );
    assert_eq!(tf.installed_modules()["net"], "1.0.0+build.1");
    let lock = std::fs::read_to_string(tf.dir.path().join(".terraform.lock.hcl")).unwrap();
    for (name, content) in files.iter().filter(|(n, _)| n.ends_with(".zip")) {
        assert!(
            lock.contains(&format!("\"zh:{}\"", sha256_hex(content))),
            "{name} missing:\n{lock}"
        );
    }
    assert!(lock.contains("\"h1:"), "{lock}");

    // and the provider installs through the network mirror too, with the same h1:.
    let mirrored = Terraform::new(
        &format!("{}{credentials}", mirror_config(&stack.url)),
        &stack.cert,
    );
    mirrored.write(
        "main.tf",
        &requires_provider("widget", &format!("{HOST}/acme/widget"), "1.2.0"),
    );
    let output = mirrored.init(&[]);
    assert!(
        output.contains(&format!("Installed {HOST}/acme/widget v1.2.0")),
        "{output}\n{}",
        stack.logs()
    );
    let mirrored_lock =
        std::fs::read_to_string(mirrored.dir.path().join(".terraform.lock.hcl")).unwrap();
    let h1 = |lock: &str| {
        lock.lines()
            .find(|l| l.contains("\"h1:"))
            .map(|l| l.trim().trim_end_matches(',').to_owned())
    };
    assert_eq!(h1(&mirrored_lock), h1(&lock), "{mirrored_lock}");

    // Given different bytes uploaded later over the published module, a package and the
    // release's SHA256SUMS (S3 keeps the versions first published),
    stack.upload(
        module,
        &tar_gz(&[("main.tf", "output \"v\" { value = \"changed\" }\n")]),
    );
    let own_zip = format!("{dir}/terraform-provider-widget_1.2.0_{own}.zip");
    let other = provider_release("widget", "9.9.9", &platforms);
    stack.upload(&own_zip, &other[0].1);
    let sums_key = format!("{dir}/{sums_name}");
    stack.upload(&sums_key, &other.last().unwrap().1);
    stack.deliver(&[module, &own_zip, &sums_key]);
    // then each is refused with the reason, as `tfreg status` shows,
    let status = tfreg_e2e::tfreg_status(
        &["--table", &stack.table, "--bucket", &stack.bucket],
        &stack.env,
    );
    for key in [module, own_zip.as_str(), sums_key.as_str()] {
        let lines: Vec<&str> = status.lines().collect();
        let refused = lines
            .windows(2)
            .any(|w| w[0].trim() == key && w[1].contains("was published with sha256"));
        assert!(refused, "{key} not refused:\n{status}");
    }
    // and Terraform, with the earlier lock file in a fresh directory, installs exactly what
    // was published first.
    let again = Terraform::new(
        &format!("{}{credentials}", host_block(HOST, &stack.url)),
        &stack.cert,
    );
    again.write(
        "main.tf",
        &std::fs::read_to_string(tf.dir.path().join("main.tf")).unwrap(),
    );
    again.write(".terraform.lock.hcl", &lock);
    let output = again.init(&[]);
    assert!(output.contains("Installed"), "{output}\n{}", stack.logs());
    assert!(
        again
            .module_file("net", "main.tf")
            .contains("value = \"1\""),
        "the module changed"
    );
    assert_eq!(
        std::fs::read_to_string(again.dir.path().join(".terraform.lock.hcl")).unwrap(),
        lock
    );

    // Every function answered as its own family: the downloads function only in redirect
    // mode, where Terraform's HEAD and GET both went through it.
    let downloads = stack.log("downloads");
    if download_mode == "redirect" {
        for method in ["HEAD", "GET"] {
            let redirected = downloads.lines().any(|l| {
                l.contains(&format!("\"method\":\"{method}\""))
                    && l.contains("\"status\":307")
                    && l.contains("\"route\":\"downloads\"")
            });
            assert!(redirected, "no redirected {method}:\n{downloads}");
        }
    } else {
        assert_eq!(downloads, "", "no downloads function without redirect mode");
    }
}

#[test]
fn terraform_installs_through_the_deployed_stack_with_presigned_downloads() {
    install_through_the_stack("presigned");
}

#[test]
fn terraform_installs_through_the_deployed_stack_with_redirected_downloads() {
    install_through_the_stack("redirect");
}
