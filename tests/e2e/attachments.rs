//! Attachments end to end (docs/attachments.md): SBOMs and provenance statements published
//! beside a module and a provider version are listed in the read API and on the pages with
//! signed download links; a signed statement shows verified, an unsigned one unverified; a
//! 100 MB file, invalid JSON and a statement about other bytes are refused with reasons in
//! `tfreg status`; a statement that arrives before its archive is judged once it is there.
//! And one SBOM through the deployed stack (S3 events, DynamoDB, presigned URLs).

use std::path::Path;
use std::time::Duration;

use tfreg_e2e::stack::{Stack, StackOptions};
use tfreg_e2e::{
    client_trusting, provider_release, publish, sha256_hex, tar_gz, terraform_platform,
    tfreg_status, wait_until, Gpg, Server, TempDir,
};

const HOST: &str = "registry.example.test";
const SIGNER: &str = "release@example.test";

fn archive(version: &str) -> Vec<u8> {
    tar_gz(&[(
        "main.tf",
        &format!("output \"v\" {{ value = \"{version}\" }}\n"),
    )])
}

fn spdx(name: &str) -> Vec<u8> {
    serde_json::to_vec_pretty(&serde_json::json!({
        "spdxVersion": "SPDX-2.3",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": name,
        "dataLicense": "CC0-1.0",
        "documentNamespace": format!("https://example.test/spdx/{name}"),
        "creationInfo": {"created": "2026-11-28T00:00:00Z", "creators": ["Tool: test"]},
        "packages": []
    }))
    .unwrap()
}

/// A SLSA provenance statement (one line) about `file` with digest `sha256`.
fn statement(file: &str, sha256: &str) -> Vec<u8> {
    let mut line = serde_json::to_vec(&serde_json::json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": file, "digest": {"sha256": sha256}}],
        "predicateType": "https://slsa.dev/provenance/v1",
        "predicate": {"buildDefinition": {"buildType": "https://example.test/ci"}, "runDetails": {}}
    }))
    .unwrap();
    line.push(b'\n');
    line
}

/// A version's attachments as the read API lists them, by file name.
fn listed(server: &Server, path: &str) -> Vec<serde_json::Value> {
    let (status, body) = server.get(path);
    if status != 200 {
        return vec![];
    }
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    json["attachments"].as_array().cloned().unwrap_or_default()
}

fn names(attachments: &[serde_json::Value]) -> Vec<&str> {
    attachments
        .iter()
        .map(|a| a["filename"].as_str().unwrap())
        .collect()
}

fn status(data: &Path) -> String {
    tfreg_status(&["--data", data.to_str().unwrap(), "--hostname", HOST], &[])
}

#[test]
fn attachments_are_checked_listed_linked_and_refused_with_reasons() {
    // Given a module version with an SBOM, a signed and an unsigned provenance statement
    // about its archive, and three files that must be refused,
    let data = TempDir::new().unwrap();
    let d = data.path();
    let module = archive("1.0.0");
    let sha = sha256_hex(&module);
    publish(d, "modules/acme/network/aws/1.0.0.tar.gz", &module);
    let folder = "modules/acme/network/aws/1.0.0.attachments";
    let sbom = spdx("network");
    publish(d, &format!("{folder}/sbom.spdx.json"), &sbom);
    let gpg = Gpg::new();
    gpg.generate(SIGNER, "rsa2048", "never", None);
    publish(d, "keys/acme/release.asc", &gpg.export(SIGNER));
    let signed = statement("1.0.0.tar.gz", &sha);
    publish(d, &format!("{folder}/build.intoto.jsonl"), &signed);
    publish(
        d,
        &format!("{folder}/build.intoto.jsonl.sig"),
        &gpg.sign(SIGNER, &signed, None),
    );
    publish(d, &format!("{folder}/unsigned.intoto.jsonl"), &signed);
    // (a 100 MB file, sparse: it is refused by its size, never read)
    let huge = d.join(format!("{folder}/huge.cdx.json"));
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(100 * 1024 * 1024)
        .unwrap();
    publish(
        d,
        &format!("{folder}/broken.spdx.json"),
        b"{\n  \"spdxVersion\": \"SPDX-2.3\",\n  oops\n}\n",
    );
    publish(
        d,
        &format!("{folder}/other.intoto.jsonl"),
        &statement("1.0.0.tar.gz", &"0".repeat(64)),
    );
    // and a provider release with an SBOM,
    let own = terraform_platform();
    let files = provider_release("widget", "1.0.0", &[own.as_str()]);
    let dir = "providers/acme/widget/1.0.0";
    for (name, content) in &files {
        publish(d, &format!("{dir}/{name}"), content);
    }
    let (sums_name, sums) = files.last().unwrap();
    publish(
        d,
        &format!("{dir}/{sums_name}.sig"),
        &gpg.sign(SIGNER, sums, None),
    );
    publish(
        d,
        &format!("{dir}/attachments/widget.spdx.json"),
        &spdx("widget"),
    );

    // when the registry serves them,
    let server = Server::start(d, &["--hostname", HOST]);
    let details = "/v1/modules/acme/network/aws/1.0.0";
    // (the key and the files are indexed side by side: whichever comes last judges the
    // signed statement, so the test waits for that verdict, not for the first listing)
    let settled = |found: &[serde_json::Value]| {
        found.len() == 3 && found.iter().any(|a| a["verified"] == true)
    };
    assert!(
        wait_until(Duration::from_secs(60), || settled(&listed(
            &server, details
        ))),
        "{:?}\n{}",
        listed(&server, details),
        server.log()
    );

    // then the read API lists the three that check, in the attachments proposal's shape,
    let found = listed(&server, details);
    assert_eq!(
        names(&found),
        [
            "build.intoto.jsonl",
            "sbom.spdx.json",
            "unsigned.intoto.jsonl"
        ]
    );
    let (build, bom, unsigned) = (&found[0], &found[1], &found[2]);
    assert_eq!(bom["media_type"], "application/spdx+json");
    assert_eq!(bom["size"], sbom.len() as u64);
    assert_eq!(bom["sha256"], sha256_hex(&sbom));
    assert_eq!(build["media_type"], "application/vnd.in-toto+json");
    assert_eq!(
        build["predicate_types"][0],
        "https://slsa.dev/provenance/v1"
    );
    // the signed statement verified with the namespace's key, the unsigned one not,
    assert_eq!(build["verified"], true, "{build}");
    assert_eq!(build["key_id"], gpg.key_id(SIGNER));
    assert_eq!(unsigned["verified"], false);
    assert!(
        unsigned["unverified_reason"]
            .as_str()
            .unwrap()
            .contains("no signature"),
        "{unsigned}"
    );
    // the SBOM's link returns its bytes,
    let url = bom["download_url"].as_str().unwrap();
    let got = server.client().get(url).send().unwrap();
    assert_eq!(got.status().as_u16(), 200, "{url}");
    assert_eq!(
        got.headers()["content-type"].to_str().unwrap(),
        "application/spdx+json"
    );
    assert_eq!(got.bytes().unwrap().to_vec(), sbom);
    // the module's page lists them with their verdicts and links,
    let (code, page) = server.get("/modules/acme/network/aws/1.0.0");
    assert_eq!(code, 200);
    assert!(page.contains("id=\"attachments\""), "{page}");
    assert!(page.contains("sbom.spdx.json") && page.contains("SBOM (SPDX)"));
    assert!(page.contains("verified · key") && page.contains(">unverified<"));
    assert!(
        page.contains("/v1/artifacts/modules/acme/network/aws/1.0.0.attachments/sbom.spdx.json")
    );
    // the provider release's SBOM is listed in its details and on its page,
    let provider = listed(&server, "/v1/providers/acme/widget/1.0.0");
    assert_eq!(names(&provider), ["widget.spdx.json"], "{}", server.log());
    let (_, page) = server.get("/providers/acme/widget/1.0.0");
    assert!(page.contains("widget.spdx.json"), "{page}");
    // and `tfreg status` says why each refused file is refused.
    let report = status(d);
    for (file, reason) in [
        (
            "huge.cdx.json",
            "is 104857600 bytes, more than the 10485760",
        ),
        ("broken.spdx.json", "not valid JSON"),
        ("broken.spdx.json", "line 3 column"),
        ("other.intoto.jsonl", "subject digest does not match"),
    ] {
        assert!(
            report.lines().any(|l| l.contains(file)) && report.contains(reason),
            "{file}: {reason}\n{report}"
        );
    }

    // Given a statement published before its version's archive,
    let early = "modules/acme/network/aws/1.1.0.attachments/build.intoto.jsonl";
    let module = archive("1.1.0");
    server.publish(early, &statement("1.1.0.tar.gz", &sha256_hex(&module)));
    // it waits for the archive,
    assert!(
        wait_until(Duration::from_secs(60), || status(d).contains("waits for")),
        "{}",
        status(d)
    );
    // and is listed once the archive is there.
    server.publish("modules/acme/network/aws/1.1.0.tar.gz", &module);
    let details = "/v1/modules/acme/network/aws/1.1.0";
    assert!(
        wait_until(Duration::from_secs(60), || listed(&server, details).len()
            == 1),
        "{}",
        status(d)
    );
    assert!(!status(d).contains("waits for"));

    // When the namespace's key is removed, the signed statement is no longer verified.
    std::fs::remove_file(d.join("keys/acme/release.asc")).unwrap();
    let details = "/v1/modules/acme/network/aws/1.0.0";
    assert!(
        wait_until(Duration::from_secs(60), || listed(&server, details)
            .iter()
            .any(
                |a| a["filename"] == "build.intoto.jsonl" && a["verified"] == false
            )),
        "{:?}",
        listed(&server, details)
    );
}

#[test]
fn an_sbom_is_listed_through_the_deployed_stack() {
    // Given the stack, a module version and its SBOM uploaded to the bucket,
    let stack = Stack::start(&StackOptions {
        domain: Some(HOST.into()),
        ..StackOptions::default()
    });
    let module = "modules/acme/network/aws/1.0.0.tar.gz";
    let sbom_key = "modules/acme/network/aws/1.0.0.attachments/sbom.spdx.json";
    let sbom = spdx("network");
    stack.upload(module, &archive("1.0.0"));
    stack.upload(sbom_key, &sbom);
    // when their S3 events reach the indexer,
    stack.deliver(&[sbom_key, module]);
    // then the module's details list the SBOM, whose presigned link returns its bytes.
    let token = stack.create_token(&[]);
    let http = client_trusting(&stack.cert);
    let answer = http
        .get(format!("{}/v1/modules/acme/network/aws/1.0.0", stack.url))
        .bearer_auth(&token)
        .send()
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200, "{}", stack.logs());
    let json: serde_json::Value = answer.json().unwrap();
    let found = json["attachments"].as_array().unwrap();
    assert_eq!(names(found), ["sbom.spdx.json"], "{}", stack.logs());
    assert_eq!(found[0]["verified"], false);
    let url = found[0]["download_url"].as_str().unwrap();
    let file = http.get(url).send().unwrap();
    assert_eq!(file.status().as_u16(), 200, "{url}");
    assert_eq!(file.bytes().unwrap().to_vec(), sbom);
}
