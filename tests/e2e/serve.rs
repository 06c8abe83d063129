//! `tfreg serve` itself: TLS, its printed instructions, downloads over the wire.

use std::time::Duration;

use tfreg_e2e::{client_trusting, publish, tar_gz, Server, TempDir};

#[test]
fn serve_uses_a_given_certificate() {
    // Given a certificate the user brings,
    let tls = TempDir::new().unwrap();
    let key_pair = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    let cert = params.self_signed(&key_pair).unwrap();
    let cert_path = tls.path().join("own-cert.pem");
    let key_path = tls.path().join("own-key.pem");
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key_pair.serialize_pem()).unwrap();
    let data = TempDir::new().unwrap();

    // when the server starts with it,
    let server = Server::start(
        data.path(),
        &[
            "--tls-cert",
            cert_path.to_str().unwrap(),
            "--tls-key",
            key_path.to_str().unwrap(),
        ],
    );

    // then clients trusting that certificate reach it, and no certificate was generated.
    let response = client_trusting(&cert_path)
        .get(format!("{}/.well-known/terraform.json", server.url))
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(!data.path().join(".tfreg/tls/cert.pem").exists());
    assert!(server.stdout().contains(&*cert_path.to_string_lossy()));
}

#[test]
fn serve_prints_the_certificate_and_a_cli_config() {
    let data = TempDir::new().unwrap();
    let server = Server::start(data.path(), &["--hostname", "registry.example.test"]);
    let out = server.stdout();
    assert!(
        out.contains(&format!("export SSL_CERT_FILE={}", server.cert.display())),
        "{out}"
    );
    let config = server.printed_cli_config();
    assert!(
        config.contains("host \"registry.example.test\""),
        "{config}"
    );
    assert!(
        config.contains(&format!(
            "\"modules.v1\"   = \"{}/v1/modules/\"",
            server.url
        )),
        "{config}"
    );
    // The generated certificate is reused on the next start.
    let pem = std::fs::read_to_string(&server.cert).unwrap();
    drop(server);
    let again = Server::start(data.path(), &[]);
    assert_eq!(std::fs::read_to_string(&again.cert).unwrap(), pem);
}

#[test]
fn downloads_work_with_head_and_get_and_refuse_tampering_over_the_wire() {
    let data = TempDir::new().unwrap();
    let archive = tar_gz(&[("main.tf", "")]);
    publish(
        data.path(),
        "modules/acme/network/aws/1.0.0.tar.gz",
        &archive,
    );
    let server = Server::start(data.path(), &[]);
    let client = server.client();

    let response = client
        .get(format!(
            "{}/v1/modules/acme/network/aws/1.0.0/download",
            server.url
        ))
        .send()
        .unwrap();
    assert_eq!(response.status(), 204);
    let url = response.headers()["x-terraform-get"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        url.starts_with(&format!("{}/v1/artifacts/", server.url)),
        "{url}"
    );

    let head = client.head(&url).send().unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(
        head.headers()["content-length"],
        archive.len().to_string().as_str()
    );
    let get = client.get(&url).send().unwrap();
    assert_eq!(get.status(), 200);
    assert_eq!(get.bytes().unwrap().as_ref(), archive.as_slice());

    let tampered = url.replace("signature=", "signature=A");
    let refused = client.get(&tampered).send().unwrap();
    assert_eq!(refused.status(), 403);
    let body: serde_json::Value = refused.json().unwrap();
    assert!(
        body["errors"][0].as_str().unwrap().contains("expired"),
        "{body}"
    );

    // The signature never reaches the log.
    let signature = url.split("signature=").nth(1).unwrap();
    assert!(!server.log().contains(signature));
}

#[test]
fn a_restart_indexes_only_what_changed_while_it_was_down() {
    let data = tempfile::tempdir().unwrap();
    let module = |version: &str| {
        let files = tfreg_e2e::module_files(version);
        let files: Vec<(&str, &str)> = files.iter().map(|(n, c)| (*n, c.as_str())).collect();
        tfreg_e2e::tar_gz(&files)
    };
    for version in ["1.0.0", "2.0.0"] {
        tfreg_e2e::publish(
            data.path(),
            &format!("modules/acme/network/aws/{version}.tar.gz"),
            &module(version),
        );
    }
    tfreg_e2e::publish(
        data.path(),
        "modules/acme/other/aws/1.0.0.tar.gz",
        &module("1.0.0"),
    );
    // Given a server that indexed two versions, and saved its index,
    let mut server = Server::start(data.path(), &[]);
    assert_eq!(
        server.module_versions("acme/network/aws"),
        ["1.0.0", "2.0.0"]
    );
    let saved = data.path().join(".tfreg/index.json");
    assert!(
        tfreg_e2e::wait_until(Duration::from_secs(10), || saved.exists()),
        "no saved index"
    );
    // (with the documents requests read, so a restart need not make them again),
    let text = std::fs::read_to_string(&saved).unwrap();
    assert!(text.contains("doc/module/acme/other/aws"), "{text}");
    assert!(server.terminate(Duration::from_secs(10)));
    // when a version is deleted and another added while it is down,
    std::fs::remove_file(data.path().join("modules/acme/network/aws/2.0.0.tar.gz")).unwrap();
    tfreg_e2e::publish(
        data.path(),
        "modules/acme/network/aws/3.0.0.tar.gz",
        &module("3.0.0"),
    );
    // then the restarted server starts from the saved index, and serves exactly what is there.
    let server = Server::start(data.path(), &[]);
    assert_eq!(
        server.module_versions("acme/network/aws"),
        ["1.0.0", "3.0.0"]
    );
    assert_eq!(server.module_versions("acme/other/aws"), ["1.0.0"]);
    assert!(
        server.log().contains("restored the saved index"),
        "{}",
        server.log()
    );
    // Only the two changed files were indexed at start, not the unchanged one.
    let indexed = server
        .log()
        .lines()
        .filter(|l| l.contains("modules/acme/network/aws/1.0.0.tar.gz"))
        .count();
    assert_eq!(indexed, 0, "{}", server.log());
}
