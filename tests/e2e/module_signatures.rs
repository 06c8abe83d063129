//! Signed modules end to end (docs/module-signing.md): a version whose `<archive>.sig`
//! verifies with a key of its namespace is served with `signed_by` in its details and on its
//! page, and `terraform init` installs it; a signature by another key or an armored one
//! refuses the version with the reason in `tfreg status`; a namespace policy requiring
//! signatures refuses unsigned versions, and a refused policy file keeps refusing them;
//! `tfreg publish module --sign` signs as it publishes (with an RSA or an ed25519 key). And the
//! same judgement through the deployed stack (S3 events, DynamoDB).

use std::path::Path;
use std::time::Duration;

use tfreg_e2e::stack::{Stack, StackOptions};
use tfreg_e2e::{
    client_trusting, publish, tar_gz, tfreg_run, tfreg_status, wait_until, Gpg, Server, TempDir,
    Terraform,
};

const HOST: &str = "registry.example.test";
const SIGNER: &str = "release@example.test";
const STRANGER: &str = "stranger@example.test";

fn archive(version: &str) -> Vec<u8> {
    tar_gz(&[(
        "main.tf",
        &format!("output \"v\" {{ value = \"{version}\" }}\n"),
    )])
}

fn status(data: &Path) -> String {
    tfreg_status(&["--data", data.to_str().unwrap(), "--hostname", HOST], &[])
}

/// The version's details, or `None` when it is not served.
fn details(server: &Server, module: &str, version: &str) -> Option<serde_json::Value> {
    let (code, body) = server.get(&format!("/v1/modules/{module}/{version}"));
    (code == 200).then(|| serde_json::from_str(&body).unwrap())
}

#[test]
fn signed_modules_are_served_with_their_signer_and_bad_or_missing_signatures_refused() {
    // Given a namespace key, a version signed with it, one signed by a stranger's key, one
    // with an armored signature, and an unsigned module,
    let data = TempDir::new().unwrap();
    let d = data.path();
    let gpg = Gpg::new();
    gpg.generate(SIGNER, "rsa2048", "never", None);
    gpg.generate(STRANGER, "rsa2048", "never", None);
    let key_id = gpg.key_id(SIGNER);
    publish(d, "keys/acme/release.asc", &gpg.export(SIGNER));
    let dir = "modules/acme/signed/aws";
    for (version, by, armored) in [
        ("1.0.0", SIGNER, false),
        ("1.1.0", STRANGER, false),
        ("1.2.0", SIGNER, true),
    ] {
        let bytes = archive(version);
        publish(d, &format!("{dir}/{version}.tar.gz"), &bytes);
        let sig = match armored {
            false => gpg.sign(by, &bytes, None),
            true => gpg.sign_as(by, &bytes, &["--detach-sign", "--armor"]),
        };
        publish(d, &format!("{dir}/{version}.tar.gz.sig"), &sig);
    }
    publish(d, "modules/acme/plain/aws/1.0.0.zip", &{
        tfreg_e2e::zip(&[("main.tf", b"output \"v\" { value = 1 }\n", 0o644)])
    });

    // when the registry serves them,
    let mut server = Server::start(d, &["--hostname", HOST]);
    assert!(
        wait_until(Duration::from_secs(60), || server
            .module_versions("acme/plain/aws")
            .len()
            == 1),
        "{}",
        server.log()
    );
    // then only the well-signed version is served, with its signer in the details and on
    // the page, and the unsigned module as unsigned;
    assert_eq!(server.module_versions("acme/signed/aws"), ["1.0.0"]);
    let signed = details(&server, "acme/signed/aws", "1.0.0").unwrap();
    assert_eq!(signed["signed_by"]["key_id"], key_id.as_str(), "{signed}");
    let plain = details(&server, "acme/plain/aws", "1.0.0").unwrap();
    assert!(plain["signed_by"].is_null(), "{plain}");
    let (code, page) = server.get("/modules/acme/signed/aws/1.0.0");
    assert_eq!(code, 200);
    assert!(
        page.contains("Signed by") && page.contains(&key_id),
        "{page}"
    );
    let (_, page) = server.get("/modules/acme/plain/aws/1.0.0");
    assert!(page.contains("Not signed."), "{page}");
    // the refused ones say why, as for providers;
    let report = status(d);
    assert!(
        report.contains("1.1.0.tar.gz.sig") && report.contains("does not verify with any"),
        "{report}"
    );
    assert!(
        report.contains("1.2.0.tar.gz.sig") && report.contains("ASCII-armored"),
        "{report}"
    );
    assert!(details(&server, "acme/signed/aws", "1.1.0").is_none());

    // and the real Terraform installs the signed version.
    let tf = Terraform::new("", &server.cert);
    tf.write(
        "main.tf",
        &format!(
            "module \"signed\" {{\n  source  = \"{}/acme/signed/aws\"\n  version = \"~> 1.0\"\n}}\n",
            server.addr
        ),
    );
    tf.init(&[]);
    assert_eq!(tf.installed_modules()["signed"], "1.0.0");

    // Given a policy that requires signed modules, previewed before it is published: it
    // would withdraw the unsigned module only (exit status 3, as for a refusal),
    let work = TempDir::new().unwrap();
    let policy = work.path().join("policy.json");
    std::fs::write(&policy, br#"{"require_signed_modules": true}"#).unwrap();
    let (code, out, err) = tfreg_run(
        &[
            "status",
            "acme",
            "--policy",
            policy.to_str().unwrap(),
            "--data",
            d.to_str().unwrap(),
            "--hostname",
            HOST,
        ],
        &[],
    );
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains("as keys/acme/policy.json would withdraw 1 served version of acme within seconds of its upload:\n  module acme/plain/aws 1.0.0: not signed: publish modules/acme/plain/aws/1.0.0.zip.sig beside it first"),
        "{out}"
    );
    assert!(!out.contains("acme/signed/aws"), "{out}");
    assert!(!d.join("keys/acme/policy.json").exists());
    publish(
        d,
        "keys/acme/policy.json",
        br#"{"require_signed_modules": true}"#,
    );
    // the unsigned module is no longer served, with the reason naming the policy file,
    assert!(
        wait_until(Duration::from_secs(60), || server
            .module_versions("acme/plain/aws")
            .is_empty()),
        "{}",
        status(d)
    );
    let report = status(d);
    assert!(
        report.contains("modules/acme/plain/aws/1.0.0.zip")
            && report.contains("keys/acme/policy.json requires signed modules"),
        "{report}"
    );
    assert_eq!(server.module_versions("acme/signed/aws"), ["1.0.0"]);

    // and `tfreg publish module --sign` publishes a signed version, which is served;
    let work = TempDir::new().unwrap();
    let folder = work.path().join("module");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("main.tf"), "output \"v\" { value = 2 }\n").unwrap();
    let secret = work.path().join("secret.asc");
    std::fs::write(&secret, gpg.export_secret(SIGNER)).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let publish_signed = |version: &str, key: &Path| {
        tfreg_run(
            &[
                "publish",
                "module",
                &s(&folder),
                "acme/plain/aws",
                version,
                "--sign",
                &s(key),
                "--data",
                &s(d),
                "--hostname",
                HOST,
            ],
            &[],
        )
    };
    let (code, out, err) = publish_signed("2.0.0", &secret);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!("signed the archive with key {key_id}")),
        "{out}"
    );
    assert!(d.join("modules/acme/plain/aws/2.0.0.tar.gz.sig").is_file());
    assert!(
        wait_until(Duration::from_secs(60), || server
            .module_versions("acme/plain/aws")
            == ["2.0.0"]),
        "{}",
        status(d)
    );
    let published = details(&server, "acme/plain/aws", "2.0.0").unwrap();
    assert_eq!(published["signed_by"]["key_id"], key_id.as_str());
    // publishing the same folder again, without --sign, is the identical republish it is
    // without the policy (the signature published beside the archive stays),
    let (code, out, err) = tfreg_run(
        &[
            "publish",
            "module",
            &s(&folder),
            "acme/plain/aws",
            "2.0.0",
            "--data",
            &s(d),
            "--hostname",
            HOST,
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("already published, identical: module acme/plain/aws 2.0.0"),
        "{out}{err}"
    );
    // (an ed25519 key, GnuPG 2.3+'s default, signs as well: Terraform verifies EdDSA),
    let eddsa = Gpg::new();
    eddsa.generate("ed@example.test", "ed25519", "never", None);
    publish(d, "keys/acme/ed.asc", &eddsa.export("ed@example.test"));
    let ed_secret = work.path().join("ed.asc");
    std::fs::write(&ed_secret, eddsa.export_secret("ed@example.test")).unwrap();
    let (code, out, err) = publish_signed("2.1.0", &ed_secret);
    assert_eq!(code, 0, "{out}{err}");
    let ed_id = eddsa.key_id("ed@example.test");
    assert!(
        out.contains(&format!("signed the archive with key {ed_id}")),
        "{out}"
    );
    assert!(
        wait_until(Duration::from_secs(60), || server
            .module_versions("acme/plain/aws")
            == ["2.0.0", "2.1.0"]),
        "{}",
        status(d)
    );

    // and a policy file that is refused keeps requiring signatures, with its reason.
    publish(
        d,
        "keys/acme/policy.json",
        br#"{"require_signed_module": false}"#,
    );
    assert!(
        wait_until(Duration::from_secs(60), || status(d)
            .contains("unknown field")),
        "{}",
        status(d)
    );
    assert_eq!(server.module_versions("acme/plain/aws"), ["2.0.0", "2.1.0"]);
    let report = status(d);
    assert!(
        report.contains("the policy file keys/acme/policy.json is refused"),
        "{report}"
    );
    server.terminate(Duration::from_secs(10));
}

#[test]
fn the_deployed_stack_serves_signed_modules_and_refuses_unsigned_ones_under_a_policy() {
    // Given the stack, a namespace key and a policy requiring signatures, a signed version
    // and an unsigned one, uploaded to the bucket,
    let stack = Stack::start(&StackOptions {
        domain: Some(HOST.into()),
        ..StackOptions::default()
    });
    let gpg = Gpg::new();
    gpg.generate(SIGNER, "rsa2048", "never", None);
    let signed = archive("1.0.0");
    let keys = ["keys/acme/release.asc", "keys/acme/policy.json"];
    stack.upload(keys[0], &gpg.export(SIGNER));
    stack.upload(keys[1], br#"{"require_signed_modules": true}"#);
    let files = [
        "modules/acme/network/aws/1.0.0.tar.gz.sig",
        "modules/acme/network/aws/1.0.0.tar.gz",
        "modules/acme/network/aws/1.1.0.tar.gz",
    ];
    stack.upload(files[0], &gpg.sign(SIGNER, &signed, None));
    stack.upload(files[1], &signed);
    stack.upload(files[2], &archive("1.1.0"));
    // when their S3 events reach the indexer (the signature before its archive),
    stack.deliver(&keys);
    stack.deliver(&files);
    // then the signed version alone is listed, with its signer in its details.
    let token = stack.create_token(&[]);
    let http = client_trusting(&stack.cert);
    let get = |path: &str| {
        let answer = http
            .get(format!("{}{path}", stack.url))
            .bearer_auth(&token)
            .send()
            .unwrap();
        (answer.status().as_u16(), answer.text().unwrap())
    };
    let (code, body) = get("/v1/modules/acme/network/aws/versions");
    assert_eq!(code, 200, "{body}\n{}", stack.logs());
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let versions: Vec<&str> = json["modules"][0]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["1.0.0"], "{}", stack.logs());
    let (code, body) = get("/v1/modules/acme/network/aws/1.0.0");
    assert_eq!(code, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["signed_by"]["key_id"], gpg.key_id(SIGNER).as_str());
    let (code, _) = get("/v1/modules/acme/network/aws/1.1.0");
    assert_eq!(code, 404);

    // A preview through the table: the policy in force would withdraw nothing more, and one
    // that lists other publishers would withdraw the served version, naming its uploader.
    let work = TempDir::new().unwrap();
    let preview = |policy: &[u8]| {
        let file = work.path().join("policy.json");
        std::fs::write(&file, policy).unwrap();
        let args = [
            "status",
            "acme",
            "--policy",
            file.to_str().unwrap(),
            "--table",
            &stack.table,
            "--bucket",
            &stack.bucket,
        ];
        tfreg_run(&args, &stack.env)
    };
    let (code, out, err) = preview(br#"{"require_signed_modules": true}"#);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("would withdraw nothing"), "{out}");
    let (code, out, err) = preview(br#"{"allowed_publishers": ["AWS:NOBODY"]}"#);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains("would withdraw 1 served version of acme")
            && out.contains("module acme/network/aws 1.0.0: modules/acme/network/aws/1.0.0.tar.gz")
            && out.contains("not among allowed_publishers"),
        "{out}"
    );
}
