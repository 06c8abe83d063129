//! Module hashes and `tfreg verify`, with the real `terraform init`: the `h1:` the registry
//! records at publish is the `h1:` of the folder Terraform installs, for .tar.gz, .tgz and
//! .zip modules and for a `//subdir` source; `tfreg verify` passes on what was installed,
//! and fails after a byte is changed or a file is added; it finds the token as Terraform
//! does. The deployed AWS stack answers the same hashes.

use std::path::Path;

use tfreg_core::hash::h1_of_dir;
use tfreg_e2e::stack::{Stack, StackOptions};
use tfreg_e2e::{publish, sha256_hex, tar_gz, tfreg_clean_env, zip, Server, TempDir, Terraform};

/// A module with a root, a nested submodule and a file in a folder of its own.
fn files(name: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "main.tf",
            format!("output \"name\" {{\n  value = \"{name}\"\n}}\n"),
        ),
        ("README.md", format!("# {name}\n")),
        (
            "modules/inner/main.tf",
            "output \"inner\" {\n  value = 1\n}\n".to_owned(),
        ),
        ("templates/user_data.sh", "#!/bin/sh\necho hi\n".to_owned()),
    ]
}

fn tar_of(name: &str) -> Vec<u8> {
    let files = files(name);
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    tar_gz(&refs)
}

fn zip_of(name: &str) -> Vec<u8> {
    let files = files(name);
    let refs: Vec<(&str, &[u8], u32)> = files
        .iter()
        .map(|(p, c)| (*p, c.as_bytes(), 0o644))
        .collect();
    zip(&refs)
}

/// `tfreg verify --dir DIR ARGS` with exactly `env` (and nothing of this process's
/// environment but PATH); returns the exit status and stdout + stderr.
fn verify(dir: &Path, args: &[&str], env: &[(&str, String)]) -> (i32, String) {
    let mut all = ["verify", "--dir"].map(std::ffi::OsStr::new).to_vec();
    all.push(dir.as_os_str());
    all.extend(args.iter().map(std::ffi::OsStr::new));
    tfreg_clean_env(&all, env)
}

#[test]
fn installed_modules_hash_as_recorded_and_verify_catches_any_change() {
    // Given a private registry serving a module in each archive format,
    let data = TempDir::new().unwrap();
    publish(
        data.path(),
        "modules/acme/net/aws/1.0.0.tar.gz",
        &tar_of("net"),
    );
    publish(
        data.path(),
        "modules/acme/dns/azure/1.0.0.tgz",
        &tar_of("dns"),
    );
    publish(
        data.path(),
        "modules/acme/store/gcp/1.0.0.zip",
        &zip_of("store"),
    );
    let server = Server::start_private(data.path(), &[]);
    let token = server.create_token(&[]);
    let host = &server.addr;
    let credentials = format!("credentials \"{host}\" {{\n  token = \"{token}\"\n}}\n");
    let tf = Terraform::new(
        &format!("{}{credentials}", server.printed_cli_config()),
        &server.cert,
    );
    // and a configuration calling each, one through a `//subdir`, and a local module,
    std::fs::create_dir_all(tf.dir.path().join("local")).unwrap();
    tf.write("local/main.tf", "output \"local\" {\n  value = 1\n}\n");
    let calls = [
        ("net", "acme/net/aws"),
        ("dns", "acme/dns/azure"),
        ("store", "acme/store/gcp"),
        ("inner", "acme/net/aws//modules/inner"),
    ];
    let mut config: String = calls
        .iter()
        .map(|(key, module)| {
            format!(
                "module \"{key}\" {{\n  source  = \"{host}/{module}\"\n  version = \"1.0.0\"\n}}\n"
            )
        })
        .collect();
    config.push_str("module \"local\" {\n  source = \"./local\"\n}\n");
    tf.write("main.tf", &config);

    // when Terraform installs them,
    tf.init(&[]);

    // then the h1: the registry recorded at publish is the h1: of each installed folder (the
    // package's, for the subdir call), in the details and in the versions listing,
    let client = server.client();
    let get = |path: &str| -> serde_json::Value {
        let response = client
            .get(format!("{}{path}", server.url))
            .bearer_auth(&token)
            .send()
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        response.json().unwrap()
    };
    for (key, module) in calls {
        let package = module.split("//").next().unwrap();
        let installed = h1_of_dir(&tf.dir.path().join(".terraform/modules").join(key)).unwrap();
        let details = get(&format!("/v1/modules/{package}/1.0.0"));
        let hashes = details["hashes"].as_array().expect("hashes").clone();
        assert_eq!(hashes.len(), 2, "{details}");
        assert_eq!(hashes[0], installed.as_str(), "{key}: {details}");
        assert!(hashes[1].as_str().unwrap().starts_with("zh:"), "{details}");
        let versions = get(&format!("/v1/modules/{package}/versions"));
        assert_eq!(
            versions["modules"][0]["versions"][0]["hashes"],
            details["hashes"]
        );
    }
    let archive = std::fs::read(data.path().join("modules/acme/store/gcp/1.0.0.zip")).unwrap();
    let details = get("/v1/modules/acme/store/gcp/1.0.0");
    assert_eq!(details["hashes"][1], format!("zh:{}", sha256_hex(&archive)));

    // and `tfreg verify` finds every registry module as recorded, and the local one not
    // from a registry (the token from the CLI configuration Terraform used),
    let env: Vec<(&str, String)> = tf
        .env()
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    let (code, out) = verify(tf.dir.path(), &[], &env);
    assert_eq!(code, 0, "{out}");
    for (key, module) in calls {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("module.{key} ")))
            .unwrap_or_else(|| panic!("no line for {key}:\n{out}"));
        assert!(line.starts_with("ok "), "{line}");
        assert!(line.contains(module), "{line}");
    }
    assert!(out.contains("skipped   module.local"), "{out}");
    assert!(
        out.contains("4 ok, 0 mismatched, 0 unknown, 1 not from a registry"),
        "{out}"
    );

    // when one byte of an installed file changes, the module is a mismatch (exit 1),
    let file = tf.dir.path().join(".terraform/modules/dns/README.md");
    let original = std::fs::read(&file).unwrap();
    let mut changed = original.clone();
    changed[2] ^= 0x20;
    std::fs::write(&file, &changed).unwrap();
    let (code, out) = verify(tf.dir.path(), &[], &env);
    assert_eq!(code, 1, "{out}");
    let line = out.lines().find(|l| l.contains("module.dns ")).unwrap();
    assert!(line.starts_with("MISMATCH"), "{out}");
    assert!(
        line.contains("installed h1:") && line.contains("recorded h1:"),
        "{line}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("ok ") && l.contains("module.net ")),
        "{out}"
    );
    std::fs::write(&file, &original).unwrap();
    assert_eq!(verify(tf.dir.path(), &[], &env).0, 0);

    // and when a file is added, even in a new folder (zip module),
    let added = tf
        .dir
        .path()
        .join(".terraform/modules/store/extra/backdoor.tf");
    std::fs::create_dir_all(added.parent().unwrap()).unwrap();
    std::fs::write(&added, "# added\n").unwrap();
    let (code, out) = verify(tf.dir.path(), &["--json"], &env);
    assert_eq!(code, 1, "{out}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let store = json["modules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["module"] == "module.store")
        .unwrap();
    assert_eq!(store["verdict"], "mismatch", "{json}");
    assert_eq!(json["summary"]["mismatch"], 1, "{json}");
    std::fs::remove_dir_all(added.parent().unwrap()).unwrap();

    // The token is found where Terraform finds it: credentials.tfrc.json alone (no
    // TF_CLI_CONFIG_FILE), and TF_TOKEN_<host> (dots as underscores),
    let home = TempDir::new().unwrap();
    std::fs::create_dir_all(home.path().join(".terraform.d")).unwrap();
    std::fs::write(
        home.path().join(".terraform.d/credentials.tfrc.json"),
        format!("{{\"credentials\": {{\"{host}\": {{\"token\": \"{token}\"}}}}}}"),
    )
    .unwrap();
    let cert = ("SSL_CERT_FILE", server.cert.display().to_string());
    let with_home = [cert.clone(), ("HOME", home.path().display().to_string())];
    let (code, out) = verify(tf.dir.path(), &[], &with_home);
    assert_eq!(code, 0, "{out}");
    let bare_home = TempDir::new().unwrap();
    let variable = format!("TF_TOKEN_{}", host.replace('.', "_"));
    let with_env = [
        cert.clone(),
        ("HOME", bare_home.path().display().to_string()),
        (variable.as_str(), token.clone()),
    ];
    let (code, out) = verify(tf.dir.path(), &[], &with_env);
    assert_eq!(code, 0, "{out}");

    // and a refused token, or none, is an unknown (exit 2), never a pass.
    let wrong = [
        cert.clone(),
        ("HOME", bare_home.path().display().to_string()),
        (variable.as_str(), "tfreg_wrong".to_owned()),
    ];
    let (code, out) = verify(tf.dir.path(), &[], &wrong);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("refused the token from TF_TOKEN_"), "{out}");
    let (code, out) = verify(
        tf.dir.path(),
        &[],
        &[cert, ("HOME", bare_home.path().display().to_string())],
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("4 unknown"), "{out}");
}

#[test]
fn a_tampered_manifest_is_refused_never_followed() {
    // Given a working directory whose modules.json points a registry module elsewhere,
    let work = TempDir::new().unwrap();
    let outside = TempDir::new().unwrap();
    std::fs::write(outside.path().join("main.tf"), "# not installed here\n").unwrap();
    std::fs::create_dir_all(work.path().join(".terraform/modules")).unwrap();
    std::fs::write(
        work.path().join(".terraform/modules/modules.json"),
        format!(
            "{{\"Modules\":[{{\"Key\":\"\",\"Source\":\"\",\"Dir\":\".\"}},{{\"Key\":\"net\",\"Source\":\"127.0.0.1:1/acme/net/aws\",\"Version\":\"1.0.0\",\"Dir\":\"{}\"}}]}}",
            outside.path().display()
        ),
    )
    .unwrap();
    // when it is verified, the module is a mismatch that says why, and nothing was asked of
    // the (unreachable) registry.
    let (code, out) = verify(work.path(), &[], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("MISMATCH") && out.contains("refused, not followed"),
        "{out}"
    );
    // A directory Terraform never initialised is an error that says so (exit 2).
    let empty = TempDir::new().unwrap();
    let (code, out) = verify(empty.path(), &[], &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("terraform init"), "{out}");
}

#[test]
fn the_deployed_stack_answers_the_recorded_hashes() {
    // Given the stack, and a zip module uploaded to its bucket and indexed,
    let stack = Stack::start(&StackOptions::default());
    let archive = zip_of("stack");
    let key = "modules/acme/net/aws/1.0.0.zip";
    stack.upload(key, &archive);
    stack.deliver(&[key]);
    let token = stack.create_token(&[]);
    // when its read API is asked for the version's details,
    let client = tfreg_e2e::client_trusting(&stack.cert);
    let details: serde_json::Value = client
        .get(format!("{}/v1/modules/acme/net/aws/1.0.0", stack.url))
        .bearer_auth(&token)
        .send()
        .unwrap()
        .json()
        .unwrap();
    // then it lists the h1: of the tree the archive unpacks to, and the zh: of its bytes.
    let unpacked = TempDir::new().unwrap();
    for (path, content) in files("stack") {
        let at = unpacked.path().join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, content).unwrap();
    }
    let expected = [
        h1_of_dir(unpacked.path()).unwrap(),
        format!("zh:{}", sha256_hex(&archive)),
    ];
    assert_eq!(details["hashes"], serde_json::json!(expected), "{details}");
}
