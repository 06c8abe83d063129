//! Immutable versions in the local shape: bytes copied over a published module or provider
//! file (in place, as `cp` does) are refused, Terraform keeps getting the original bytes,
//! also after a restart; `tfreg restore` puts the pinned bytes back; deleting yanks, the same
//! bytes again un-yank.

use std::time::Duration;

use tfreg_e2e::{
    provider_release, publish, requires_provider, tar_gz, terraform_platform, tfreg, tfreg_bin,
    tfreg_run, wait_until, Gpg, Server, TempDir, Terraform,
};

const HOST: &str = "registry.example.test";
const MODULE: &str = "modules/acme/network/aws/1.2.0.tar.gz";

fn module(value: &str) -> Vec<u8> {
    tar_gz(&[(
        "main.tf",
        &format!("output \"v\" {{ value = \"{value}\" }}\n"),
    )])
}

fn config(server: &Server) -> String {
    format!(
        "module \"net\" {{\n  source  = \"{}/acme/network/aws\"\n  version = \"1.2.0\"\n}}\n{}",
        server.addr,
        requires_provider("widget", &format!("{HOST}/acme/widget"), "1.0.0")
    )
}

/// A fresh working directory with `lock` as its lock file; runs `terraform init`.
fn install(server: &Server, lock: Option<&str>) -> Terraform {
    let tf = Terraform::new(&server.printed_cli_config(), &server.cert);
    tf.write("main.tf", &config(server));
    if let Some(lock) = lock {
        tf.write(".terraform.lock.hcl", lock);
    }
    tf.init(&[]);
    tf
}

/// `tfreg status`'s report (it exits non-zero when something is refused).
fn status(data: &std::path::Path) -> String {
    let output = std::process::Command::new(tfreg_bin())
        .args([
            "status",
            "--data",
            data.to_str().unwrap(),
            "--hostname",
            HOST,
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn published_bytes_are_what_terraform_gets_whatever_is_copied_over_them() {
    // Given a module and a signed provider release, installed once (lock file kept),
    let data = TempDir::new().unwrap();
    publish(data.path(), MODULE, &module("original"));
    let own = terraform_platform();
    let files = provider_release("widget", "1.0.0", &[own.as_str()]);
    let dir = "providers/acme/widget/1.0.0";
    for (name, content) in &files {
        publish(data.path(), &format!("{dir}/{name}"), content);
    }
    let gpg = Gpg::new();
    gpg.generate("release@example.test", "rsa2048", "never", None);
    let (sums_name, sums) = files.last().unwrap();
    let sums_key = format!("{dir}/{sums_name}");
    publish(
        data.path(),
        &format!("{sums_key}.sig"),
        &gpg.sign("release@example.test", sums, None),
    );
    publish(
        data.path(),
        "keys/acme/release.asc",
        &gpg.export("release@example.test"),
    );
    let mut server = Server::start(data.path(), &["--hostname", HOST]);
    let first = install(&server, None);
    assert!(first.module_file("net", "main.tf").contains("original"));
    // What was served is durable and in place: a pin and a kept copy under its own name for
    // the module, the package, SHA256SUMS and its signature; none waits under a temporary
    // name (they are committed a batch at a time, before the documents that serve them).
    for folder in ["pins", "kept"] {
        let names: Vec<String> = std::fs::read_dir(data.path().join(".tfreg").join(folder))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 4, "{folder}: {names:?}");
        assert!(
            names.iter().all(|n| !n.starts_with('.')),
            "{folder}: {names:?}"
        );
    }
    let lock = std::fs::read_to_string(first.dir.path().join(".terraform.lock.hcl")).unwrap();

    // when different bytes are written over the module, the package and SHA256SUMS,
    publish(data.path(), MODULE, &module("changed"));
    let zip_key = format!("{dir}/{}", files[0].0);
    let other = provider_release("widget", "9.9.9", &[own.as_str()]);
    publish(data.path(), &zip_key, &other[0].1);
    publish(data.path(), &sums_key, &other.last().unwrap().1);
    let refused = |log: &str| {
        [MODULE, zip_key.as_str(), sums_key.as_str()]
            .iter()
            .all(|key| {
                log.lines()
                    .any(|l| l.contains(key) && l.contains("was published with sha256"))
            })
    };
    assert!(
        wait_until(Duration::from_secs(15), || refused(&server.log())),
        "not refused:\n{}",
        server.log()
    );

    // then `tfreg status` says why, and Terraform with the earlier lock file installs the
    // original bytes, before and after a restart.
    let report = status(data.path());
    assert!(
        report.contains("version 1.2.0 of module acme/network/aws was published with sha256"),
        "{report}"
    );
    for round in ["before a restart", "after a restart"] {
        let again = install(&server, Some(&lock));
        assert!(
            again.module_file("net", "main.tf").contains("original"),
            "{round}: the module changed"
        );
        let now = std::fs::read_to_string(again.dir.path().join(".terraform.lock.hcl")).unwrap();
        assert_eq!(now, lock, "{round}");
        assert!(server.terminate(Duration::from_secs(10)));
        server = Server::start(data.path(), &["--hostname", HOST]);
    }

    // `tfreg restore` puts the pinned bytes back over the hand copies, and says so; the
    // refusals end; a second run finds everything in place.
    let original_module = module("original");
    let restore = |address: &str, version: &str| {
        let (code, stdout, stderr) = tfreg_run(
            &[
                "restore",
                address,
                version,
                "--data",
                data.path().to_str().unwrap(),
            ],
            &[],
        );
        assert_eq!(code, 0, "{stdout}{stderr}");
        stdout
    };
    let said = restore("acme/network/aws", "1.2.0");
    assert!(
        said.contains(&format!("restored: {MODULE} (sha256 ")),
        "{said}"
    );
    assert!(said.contains("it held other bytes"), "{said}");
    let said = restore("acme/widget", "1.0.0");
    assert!(said.contains(&format!("restored: {zip_key}")), "{said}");
    assert!(said.contains(&format!("restored: {sums_key}")), "{said}");
    assert!(
        said.contains(&format!("in place: {sums_key}.sig")),
        "{said}"
    );
    assert_eq!(
        std::fs::read(data.path().join(MODULE)).unwrap(),
        original_module
    );
    assert_eq!(
        std::fs::read(data.path().join(&zip_key)).unwrap(),
        files[0].1
    );
    assert_eq!(std::fs::read(data.path().join(&sums_key)).unwrap(), *sums);
    let report = status(data.path());
    assert!(!report.contains("was published with sha256"), "{report}");
    let said = restore("acme/network/aws", "1.2.0");
    assert!(said.contains("Nothing to restore"), "{said}");
    // `tfreg show` reads the provider as Terraform is served it.
    let shown = tfreg(&[
        "show",
        "acme/widget",
        "--data",
        data.path().to_str().unwrap(),
    ]);
    assert!(shown.starts_with("provider acme/widget 1.0.0\n"), "{shown}");
    assert!(
        shown.contains(&format!("platforms (1): {own}\n")),
        "{shown}"
    );
    let json = tfreg(&[
        "show",
        "acme/widget@1.0.0",
        "--json",
        "--data",
        data.path().to_str().unwrap(),
    ]);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let key_id = json["key_id"].as_str().unwrap();
    assert_eq!(key_id.len(), 16, "{json}");
    assert!(
        shown.contains(&format!("signed by key: {key_id}\n")),
        "{shown}"
    );
    assert_eq!(json["versions"], serde_json::json!(["1.0.0"]), "{json}");
    let (code, _, stderr) = tfreg_run(
        &[
            "restore",
            "acme/network/aws",
            "9.9.9",
            "--data",
            data.path().to_str().unwrap(),
        ],
        &[],
    );
    assert_ne!(code, 0);
    assert!(stderr.contains("never served"), "{stderr}");

    // Deleting the module yanks the version; the original bytes again un-yank it (put back
    // by `tfreg restore`).
    std::fs::remove_file(data.path().join(MODULE)).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || server
            .module_versions("acme/network/aws")
            .is_empty()),
        "not yanked"
    );
    let said = restore("acme/network/aws", "1.2.0");
    assert!(said.contains("it was missing"), "{said}");
    assert!(
        wait_until(Duration::from_secs(10), || server
            .module_versions("acme/network/aws")
            == ["1.2.0"]),
        "not un-yanked"
    );
    let back = install(&server, Some(&lock));
    assert!(back.module_file("net", "main.tf").contains("original"));
}
