//! A version's life, end to end with the real Terraform on the local shape: a deprecated
//! module and provider version still install (Terraform 1.11.4 prints the provider's
//! deprecation, from the versions list's `warnings`, and nothing for a module), a yanked
//! version is not chosen by a constraint and its record shows in the read API, the pages and
//! `tfreg status`, `unyank` brings it back; hostile notice files are refused with a reason,
//! and reasons are shown escaped.

use std::path::Path;
use std::time::Duration;

use tfreg_e2e::browser::Browser;
use tfreg_e2e::counting::{measure, published};
use tfreg_e2e::stack::StackOptions;
use tfreg_e2e::{
    provider_release, publish, requires_provider, tar_gz, terraform_platform, tfreg, tfreg_run,
    wait_until, Gpg, Server, TempDir, Terraform,
};

const HOST: &str = "registry.example.test";
/// A reason a hostile (or careless) publisher could write: HTML and a terminal escape.
const HOSTILE_REASON: &str = "<script>window.__pwned=1</script> \u{1b}[31mred";

fn module(value: &str) -> Vec<u8> {
    tar_gz(&[(
        "main.tf",
        &format!("output \"v\" {{ value = \"{value}\" }}\n"),
    )])
}

/// acme/network/aws 1.0.0, 1.1.0 and 1.2.0, and a signed acme/widget 1.0.0 for this platform.
fn publish_all(data: &Path) {
    for version in ["1.0.0", "1.1.0", "1.2.0"] {
        publish(
            data,
            &format!("modules/acme/network/aws/{version}.tar.gz"),
            &module(version),
        );
    }
    let own = terraform_platform();
    let files = provider_release("widget", "1.0.0", &[own.as_str()]);
    let dir = "providers/acme/widget/1.0.0";
    for (name, content) in &files {
        publish(data, &format!("{dir}/{name}"), content);
    }
    let gpg = Gpg::new();
    gpg.generate("release@example.test", "rsa2048", "never", None);
    let (sums_name, sums) = files.last().unwrap();
    publish(
        data,
        &format!("{dir}/{sums_name}.sig"),
        &gpg.sign("release@example.test", sums, None),
    );
    publish(
        data,
        "keys/acme/release.asc",
        &gpg.export("release@example.test"),
    );
}

fn lifecycle(args: &[&str], data: &Path) -> String {
    let mut all = args.to_vec();
    all.extend(["--data", data.to_str().unwrap()]);
    tfreg(&all)
}

/// `tfreg status`'s report (it exits 3 when something is refused).
fn status(data: &Path) -> String {
    let (code, out, err) = tfreg_run(
        &[
            "status",
            "--data",
            data.to_str().unwrap(),
            "--hostname",
            HOST,
        ],
        &[],
    );
    assert!(
        code == 0 || code == 3,
        "status failed ({code}):\n{out}{err}"
    );
    out
}

fn versions_are(server: &Server, expected: &[&str]) -> bool {
    let mut got = server.module_versions("acme/network/aws");
    got.sort();
    got == expected
}

#[test]
fn a_deprecated_version_installs_and_a_yanked_one_is_not_chosen() {
    // Given three module versions and a provider release, served,
    let data = TempDir::new().unwrap();
    publish_all(data.path());
    let server = Server::start(data.path(), &["--hostname", HOST]);
    let all = ["1.0.0", "1.1.0", "1.2.0"];
    assert!(wait_until(Duration::from_secs(15), || versions_are(
        &server, &all
    )));

    // when 1.0.0 and the provider are deprecated and 1.2.0 is yanked with the CLI,
    let out = lifecycle(
        &[
            "deprecate",
            "acme/network/aws",
            "1.0.0",
            "--reason",
            HOSTILE_REASON,
            "--use",
            "1.1.0",
            "--retire-on",
            "2027-03-31",
            "--by",
            "alice",
        ],
        data.path(),
    );
    assert!(
        out.contains("wrote: modules/acme/network/aws/1.0.0_deprecation.json"),
        "{out}"
    );
    // (the reason's escape character is never printed raw)
    assert!(!out.contains('\u{1b}'), "{out:?}");
    lifecycle(
        &[
            "deprecate",
            "acme/widget",
            "1.0.0",
            "--reason",
            "widget 1 is end of life",
        ],
        data.path(),
    );
    let out = lifecycle(
        &[
            "yank",
            "acme/network/aws",
            "1.2.0",
            "--reason",
            "leaked a test key",
            "--by",
            "bob",
        ],
        data.path(),
    );
    assert!(
        out.contains("deleted: modules/acme/network/aws/1.2.0.tar.gz"),
        "{out}"
    );
    assert!(!data
        .path()
        .join("modules/acme/network/aws/1.2.0.tar.gz")
        .exists());
    assert!(
        wait_until(Duration::from_secs(15), || versions_are(
            &server,
            &["1.0.0", "1.1.0"]
        )),
        "1.2.0 is still offered"
    );

    // then Terraform installs the deprecated version, and a constraint that allowed the yanked
    // one picks another;
    let tf = Terraform::new(&server.printed_cli_config(), &server.cert);
    tf.write(
        "main.tf",
        &format!(
            "module \"old\" {{\n  source  = \"{a}/acme/network/aws\"\n  version = \"1.0.0\"\n}}\n\
             module \"new\" {{\n  source  = \"{a}/acme/network/aws\"\n  version = \">= 1.0.0\"\n}}\n{}",
            requires_provider("widget", &format!("{HOST}/acme/widget"), "1.0.0"),
            a = server.addr,
        ),
    );
    let init = tf.init(&[]);
    let installed = tf.installed_modules();
    assert_eq!(installed["old"], "1.0.0", "{installed:?}");
    assert_eq!(installed["new"], "1.1.0", "{installed:?}");
    // Terraform 1.11.4 prints a provider registry's `warnings` (docs/lifecycle.md says so),
    assert!(
        init.contains("Additional provider information from registry")
            && init.contains("1.0.0 is deprecated: widget 1 is end of life"),
        "{init}"
    );
    // and nothing about a module's deprecation: its module client reads no such field.
    assert!(
        !init.contains("window.__pwned") && !init.to_lowercase().contains("module deprecat"),
        "{init}"
    );

    // `tfreg status` lists both, the reason escaped;
    let report = status(data.path());
    assert!(!report.contains('\u{1b}'), "{report:?}");
    assert!(
        report.contains("<script>window.__pwned=1</script>"),
        "{report}"
    );
    assert!(report.contains("leaked a test key"), "{report}");

    // the audit log has a line for each;
    let audit = std::fs::read_to_string(data.path().join(".tfreg/audit.log")).unwrap();
    for event in ["version_deprecated", "version_yanked"] {
        assert!(audit.contains(event), "{audit}");
    }
    assert!(!audit.contains('\u{1b}'), "{audit:?}");

    // the read API marks the deprecated version and lists the withdrawn one with its record;
    let (status, body) = server.get("/v1/modules/acme/network/aws/1.0.0");
    assert_eq!(status, 200, "{body}");
    let details: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        details["deprecation"]["reason"], HOSTILE_REASON,
        "{details}"
    );
    assert_eq!(details["deprecation"]["replacement"], "1.1.0", "{details}");
    assert_eq!(
        details["deprecation"]["retire_on"], "2027-03-31",
        "{details}"
    );
    let withdrawn = &details["withdrawn"][0];
    assert_eq!(withdrawn["version"], "1.2.0", "{details}");
    assert_eq!(withdrawn["reason"], "leaked a test key", "{details}");
    assert_eq!(withdrawn["by"], "bob", "{details}");

    // the pages show both in a real browser, the reason as text (its script never runs),
    // and the downloads Terraform just made;
    let browser = Browser::start(1280, 1000);
    browser.goto(&format!("{}/modules/acme/network/aws/1.0.0", server.url));
    let banner = browser.text("#deprecation");
    assert!(
        banner.contains("<script>window.__pwned=1</script>"),
        "{banner}"
    );
    // (and its escape character as a visible escape, never raw)
    assert!(
        banner.contains("\\u{1b}[31mred") && !banner.contains('\u{1b}'),
        "{banner:?}"
    );
    assert_eq!(browser.eval("return window.__pwned === undefined"), true);
    assert_eq!(browser.text("#replacement"), "1.1.0");
    assert!(banner.contains("2027-03-31"), "{banner}");
    let withdrawn = browser.text("#withdrawn");
    assert!(
        withdrawn.contains("1.2.0 was withdrawn on")
            && withdrawn.contains("by bob: leaked a test key"),
        "{withdrawn}"
    );
    let downloads = browser.text("#downloads");
    assert!(downloads.contains("All versions"), "{downloads}");
    // (a public registry shows no consumers: no token says who is looking)
    assert!(browser
        .text("#consumers")
        .contains("shown only to people signed in"));
    browser.checked_screenshot("lifecycle-module-deprecated");
    browser.goto(&format!("{}/providers/acme/widget/1.0.0", server.url));
    assert!(browser
        .text("#deprecation")
        .contains("widget 1 is end of life"));
    browser.checked_screenshot("lifecycle-provider-deprecated");
    let (_, downloads) = server.get("/v1/modules/acme/network/aws/downloads");
    let downloads: serde_json::Value = serde_json::from_str(&downloads).unwrap();
    assert_eq!(downloads["data"]["attributes"]["total"], 2, "{downloads}");

    // and `tfreg unyank` puts 1.2.0 back, byte for byte.
    let out = lifecycle(&["unyank", "acme/network/aws", "1.2.0"], data.path());
    assert!(
        out.contains("restored: modules/acme/network/aws/1.2.0.tar.gz"),
        "{out}"
    );
    assert!(!data
        .path()
        .join("modules/acme/network/aws/1.2.0_yank.json")
        .exists());
    assert_eq!(
        std::fs::read(data.path().join("modules/acme/network/aws/1.2.0.tar.gz")).unwrap(),
        module("1.2.0")
    );
    assert!(wait_until(Duration::from_secs(15), || versions_are(
        &server, &all
    )));
    let audit = std::fs::read_to_string(data.path().join(".tfreg/audit.log")).unwrap();
    assert!(audit.contains("version_unyanked"), "{audit}");
}

#[test]
fn what_the_commands_refuse_writes_nothing() {
    let data = TempDir::new().unwrap();
    publish(
        data.path(),
        "modules/acme/network/aws/1.0.0.tar.gz",
        &module("1"),
    );
    let server = Server::start(data.path(), &[]);
    assert!(wait_until(Duration::from_secs(15), || versions_are(
        &server,
        &["1.0.0"]
    )));
    let d = data.path().to_str().unwrap();
    let refused = |args: &[&str], expected: &str| {
        let mut all = args.to_vec();
        all.extend(["--data", d]);
        let (code, out, err) = tfreg_run(&all, &[]);
        assert_ne!(code, 0, "{args:?} succeeded:\n{out}");
        assert!(err.contains(expected), "{args:?}: {err}");
    };
    refused(
        &["deprecate", "acme/network/aws", "2.0.0", "--reason", "x"],
        "has never served version 2.0.0",
    );
    refused(
        &["deprecate", "acme/network/aws", "1.0.0", "--reason", " "],
        "empty reason",
    );
    refused(
        &[
            "deprecate",
            "acme/network/aws",
            "1.0.0",
            "--reason",
            "x",
            "--use",
            "1.0.0",
        ],
        "names the version itself",
    );
    // A replacement the registry does not serve, named with the versions it does.
    refused(
        &[
            "deprecate",
            "acme/network/aws",
            "1.0.0",
            "--reason",
            "x",
            "--use",
            "9.9.9",
        ],
        "--use 9.9.9: the registry serves no version 9.9.9 of module acme/network/aws; the versions it serves: 1.0.0.",
    );
    refused(
        &[
            "deprecate",
            "acme/network/aws",
            "1.0.0",
            "--reason",
            "x",
            "--retire-on",
            "soon",
        ],
        "not a day",
    );
    refused(
        &[
            "yank",
            "acme/network/aws",
            "1.0.0",
            "--reason",
            &"x".repeat(1001),
        ],
        "longer than 1000 characters",
    );
    refused(
        &["undeprecate", "acme/network/aws", "1.0.0"],
        "is not deprecated",
    );
    refused(&["unyank", "acme/network/aws", "3.0.0"], "never served");
    let names: Vec<_> = std::fs::read_dir(data.path().join("modules/acme/network/aws"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["1.0.0.tar.gz"]);
}

#[test]
fn on_the_deployed_stack_yank_unyank_and_deprecate_go_through_the_bucket() {
    // Given the deployed stack with acme/network/aws 1.0.0 and 1.1.0,
    let (stack, token) = published(StackOptions::default());
    let run = |args: &[&str]| -> (String, String) {
        let mut all = args.to_vec();
        all.extend(["--table", &stack.table, "--bucket", &stack.bucket]);
        let (code, out, err) = tfreg_run(&all, &stack.env);
        assert_eq!(code, 0, "tfreg {all:?}:\n{out}{err}");
        (out, err)
    };
    let versions = || -> Vec<String> {
        let answer = measure(
            &stack,
            Some(&token),
            "/v1/modules/acme/network/aws/versions",
        );
        let json: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
        let mut all: Vec<String> = json["modules"][0]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["version"].as_str().unwrap().to_owned())
            .collect();
        all.sort();
        all
    };
    let archive = "modules/acme/network/aws/1.1.0.tar.gz";
    let bytes = |key: &str| -> Vec<u8> {
        use tfreg_core::ArtifactStore;
        use tokio::io::AsyncReadExt;
        let store = stack.artifacts();
        stack.block_on(async {
            let mut body = store.open(key).await.unwrap().expect("the object").reader;
            let mut all = Vec::new();
            body.read_to_end(&mut all).await.unwrap();
            all
        })
    };
    let published_bytes = bytes(archive);

    // when 1.1.0 is yanked with the CLI (S3 events delivered as S3 would),
    let (out, err) = run(&[
        "yank",
        "acme/network/aws",
        "1.1.0",
        "--reason",
        "withdrawn on AWS",
        "--by",
        "carol",
    ]);
    assert!(out.contains(&format!("deleted: {archive}")), "{out}");
    // (its audit line goes to stderr, for the operator's records)
    assert!(
        err.contains("version_yanked") && err.contains("carol"),
        "{err}"
    );
    let record = "modules/acme/network/aws/1.1.0_yank.json";
    stack.deliver(&[archive, record]);

    // then it is no longer offered, and its record is in the bucket;
    assert_eq!(versions(), ["1.0.0"]);
    assert!(stack.keys_under(record).len() == 1);

    // `tfreg unyank` puts the kept object version back and removes the record;
    let (out, _) = run(&["unyank", "acme/network/aws", "1.1.0"]);
    assert!(out.contains(&format!("restored: {archive}")), "{out}");
    stack.deliver(&[archive, record]);
    assert_eq!(versions(), ["1.0.0", "1.1.0"]);
    assert_eq!(bytes(archive), published_bytes);
    assert!(stack.keys_under(record).is_empty());

    // a replacement the bucket does not serve is refused, naming the versions it does,
    let mut all = vec![
        "deprecate",
        "acme/network/aws",
        "1.0.0",
        "--reason",
        "x",
        "--use",
        "9.9.9",
    ];
    all.extend(["--table", &stack.table, "--bucket", &stack.bucket]);
    let (code, out, err) = tfreg_run(&all, &stack.env);
    assert_ne!(code, 0, "{out}{err}");
    assert!(
        err.contains("the registry serves no version 9.9.9 of module acme/network/aws; the versions it serves: 1.0.0, 1.1.0."),
        "{err}"
    );
    assert!(stack
        .keys_under("modules/acme/network/aws/1.0.0_deprecation.json")
        .is_empty());

    // and a deprecation is a file the indexer reads: the read API marks the version.
    run(&[
        "deprecate",
        "acme/network/aws",
        "1.0.0",
        "--reason",
        "use 1.1",
        "--use",
        "1.1.0",
    ]);
    stack.deliver(&["modules/acme/network/aws/1.0.0_deprecation.json"]);
    let answer = measure(&stack, Some(&token), "/v1/modules/acme/network/aws/1.0.0");
    let details: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(details["deprecation"]["reason"], "use 1.1", "{details}");
    assert_eq!(details["deprecation"]["replacement"], "1.1.0", "{details}");
    assert_eq!(
        versions(),
        ["1.0.0", "1.1.0"],
        "a deprecated version stays offered"
    );
}

#[test]
fn oversized_and_malformed_notice_files_are_refused_with_a_reason() {
    // Given a served module and provider, and notice files written by hand that break the rules,
    let data = TempDir::new().unwrap();
    publish_all(data.path());
    let dir = "modules/acme/network/aws";
    let huge = format!(r#"{{"reason": "{}"}}"#, "x".repeat(5000));
    publish(
        data.path(),
        &format!("{dir}/1.0.0_deprecation.json"),
        huge.as_bytes(),
    );
    publish(
        data.path(),
        &format!("{dir}/1.1.0_deprecation.json"),
        b"{\"reason\": ",
    );
    publish(
        data.path(),
        &format!("{dir}/1.2.0_yank.json"),
        br#"{"reason": "x", "retire_on": "2027-01-01"}"#,
    );
    publish(
        data.path(),
        "providers/acme/widget/1.0.0/deprecation.json",
        br#"{"reason": "x", "replacement": "v2"}"#,
    );
    let server = Server::start(data.path(), &["--hostname", HOST]);
    let all = ["1.0.0", "1.1.0", "1.2.0"];
    assert!(wait_until(Duration::from_secs(15), || versions_are(
        &server, &all
    )));

    // then each is refused with its reason, and the versions stay served as if it were absent.
    let report = status(data.path());
    for expected in [
        "more than the 4096 this kind of file may have",
        "is not {\"reason\"",
        "a yank record has no retire_on",
        "invalid version \"v2\"",
    ] {
        assert!(report.contains(expected), "{expected:?} missing:\n{report}");
    }
    let (_, body) = server.get("/v1/modules/acme/network/aws/1.0.0");
    let details: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        details.get("deprecation").is_none_or(|d| d.is_null()),
        "{details}"
    );
    assert!(
        details
            .get("withdrawn")
            .is_none_or(|d| d.as_array().is_some_and(|a| a.is_empty())),
        "{details}"
    );
}
