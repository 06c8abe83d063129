//! Installing modules with `terraform init` from a local registry.

use std::time::Duration;

use tfreg_e2e::{module_files, publish, tar_gz, wait_until, zip, Server, TempDir, Terraform};

fn tar_module(version: &str) -> Vec<u8> {
    let files = module_files(version);
    tar_gz(&[(files[0].0, &files[0].1), (files[1].0, &files[1].1)])
}

fn zip_module(version: &str) -> Vec<u8> {
    let files = module_files(version);
    zip(&[
        (files[0].0, files[0].1.as_bytes(), 0o644),
        (files[1].0, files[1].1.as_bytes(), 0o644),
    ])
}

/// A data directory with several versions of three modules (.tar.gz, .zip and .tgz), a
/// pre-release, and files whose names break the layout.
fn published_data() -> TempDir {
    let data = TempDir::new().unwrap();
    for v in ["0.9.0", "1.0.0", "1.1.0", "2.0.0-beta.1"] {
        publish(
            data.path(),
            &format!("modules/acme/network/aws/{v}.tar.gz"),
            &tar_module(v),
        );
    }
    for v in ["0.1.0", "0.2.0"] {
        publish(
            data.path(),
            &format!("modules/acme/dns/azure/{v}.zip"),
            &zip_module(v),
        );
    }
    publish(
        data.path(),
        "modules/Acme/Storage/GCP/3.0.0.tgz",
        &tar_module("3.0.0"),
    );
    // Never served: not semantic versions. `~> 1.0` would pick "v1.5.0" if it were.
    publish(
        data.path(),
        "modules/acme/network/aws/latest.tar.gz",
        &tar_module("latest"),
    );
    publish(
        data.path(),
        "modules/acme/network/aws/v1.5.0.tar.gz",
        &tar_module("v1.5.0"),
    );
    data
}

fn module_block(name: &str, source: &str, version: Option<&str>) -> String {
    let version = version.map_or(String::new(), |v| format!("  version = \"{v}\"\n"));
    format!("module \"{name}\" {{\n  source  = \"{source}\"\n{version}}}\n")
}

#[test]
fn terraform_installs_modules_by_version_constraint() {
    // Given a registry serving several versions of three modules,
    let data = published_data();
    let server = Server::start(data.path(), &[]);
    let host = &server.addr;
    let calls = [
        ("pessimistic", "acme/network/aws", Some("~> 1.0"), "1.1.0"),
        ("range", "acme/network/aws", Some(">= 0.9, < 1.1"), "1.0.0"),
        ("any_release", "acme/network/aws", Some(">= 0.1"), "1.1.0"),
        (
            "exact_prerelease",
            "acme/network/aws",
            Some("2.0.0-beta.1"),
            "2.0.0-beta.1",
        ),
        ("zip_exact", "acme/dns/azure", Some("0.1.0"), "0.1.0"),
        ("zip_newest", "acme/dns/azure", None, "0.2.0"),
        ("tgz_mixed_case", "ACME/storage/gcp", Some("3.0.0"), "3.0.0"),
    ];
    let tf = Terraform::new(&server.printed_cli_config(), &server.cert);
    let config: String = calls
        .iter()
        .map(|(name, module, constraint, _)| {
            module_block(name, &format!("{host}/{module}"), *constraint)
        })
        .collect();
    tf.write("main.tf", &config);

    // when Terraform initialises the configuration,
    tf.init(&[]);

    // then each call gets the newest version its constraint allows (pre-releases only when
    // asked for exactly), unpacked from its archive.
    let installed = tf.installed_modules();
    for (name, _, _, expected) in calls {
        assert_eq!(
            installed.get(name).map(String::as_str),
            Some(expected),
            "{name}: {installed:?}"
        );
        assert!(
            tf.module_file(name, "main.tf")
                .contains(&format!("value = \"{expected}\"")),
            "{name} holds the files of another version"
        );
    }
    // and the invalid file names were reported, never served.
    let log = server.log();
    for bad in ["latest.tar.gz", "v1.5.0.tar.gz"] {
        assert!(
            log.lines()
                .any(|l| l.contains("rejected") && l.contains(bad)),
            "no rejection logged for {bad}:\n{log}"
        );
    }
    assert_eq!(
        server.module_versions("acme/network/aws"),
        ["0.9.0", "1.0.0", "1.1.0", "2.0.0-beta.1"]
    );
}

#[test]
fn files_published_and_deleted_while_serving_take_effect_without_a_restart() {
    let data = published_data();
    let server = Server::start(data.path(), &[]);
    let tf = Terraform::new("", &server.cert);
    let source = format!("{}/acme/network/aws", server.addr);
    tf.write("main.tf", &module_block("net", &source, Some("~> 1.0")));
    tf.init(&[]);
    assert_eq!(tf.installed_modules()["net"], "1.1.0");

    // Given a new version published into a folder that did not exist yet (new module) and
    // into an existing one,
    server.publish(
        "modules/acme/network/aws/1.2.0.tar.gz",
        &tar_module("1.2.0"),
    );
    server.publish("modules/acme/fresh/aws/0.0.1.zip", &zip_module("0.0.1"));
    // then both are served without a restart,
    assert!(
        wait_until(Duration::from_secs(10), || {
            server
                .module_versions("acme/network/aws")
                .contains(&"1.2.0".to_owned())
                && server.module_versions("acme/fresh/aws") == ["0.0.1"]
        }),
        "new files were not picked up: {:?}",
        server.module_versions("acme/network/aws")
    );
    tf.init(&["-upgrade"]);
    assert_eq!(tf.installed_modules()["net"], "1.2.0");

    // and deleting a file (or a whole module folder) unpublishes it.
    std::fs::remove_file(data.path().join("modules/acme/network/aws/1.2.0.tar.gz")).unwrap();
    std::fs::remove_dir_all(data.path().join("modules/acme/fresh")).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || {
            !server
                .module_versions("acme/network/aws")
                .contains(&"1.2.0".to_owned())
                && server.module_versions("acme/fresh/aws").is_empty()
        }),
        "deleted files are still served"
    );
    let again = Terraform::new("", &server.cert);
    again.write("main.tf", &module_block("net", &source, Some("~> 1.0")));
    again.init(&[]);
    assert_eq!(again.installed_modules()["net"], "1.1.0");
}

#[test]
fn terraform_reports_modules_and_versions_that_do_not_exist() {
    let data = published_data();
    let server = Server::start(data.path(), &[]);

    let tf = Terraform::new("", &server.cert);
    tf.write(
        "main.tf",
        &module_block(
            "missing",
            &format!("{}/acme/missing/aws", server.addr),
            None,
        ),
    );
    let output = tf.init_fails();
    assert!(
        output.contains("cannot be found in the module registry"),
        "{output}"
    );

    let tf = Terraform::new("", &server.cert);
    let source = format!("{}/acme/network/aws", server.addr);
    tf.write("main.tf", &module_block("too_new", &source, Some(">= 5.0")));
    let output = tf.init_fails();
    assert!(
        output.contains("Unresolvable module version constraint"),
        "{output}"
    );
    // Terraform wraps its messages; compare with whitespace folded.
    let folded = output.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        folded.contains("The newest available version is 1.1.0"),
        "{output}"
    );
}
