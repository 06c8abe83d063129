//! Who uploaded what, on the deployed stack (#32, point 5): the real indexer function reads
//! `userIdentity.principalId` from S3 events shaped as AWS sends them, records it per file
//! revision, shows it in `tfreg status --table` and in the read API to a token that reads
//! the namespace (and to no other), and a namespace policy's `allowed_publishers` refuses
//! another principal's upload with the reason while an allowed one's is served. The local
//! shape records no uploader: it says so, and a list refuses what it cannot attribute.

use std::time::Duration;

use tfreg_e2e::stack::{Stack, StackOptions};
use tfreg_e2e::{client_trusting, publish, tar_gz, wait_until, Server, TempDir};

const CI: &str = "AWS:AROAEXAMPLECIROLE:ci-4821";
const MALLORY: &str = "AWS:AIDAEXAMPLEMALLORY";

fn module(version: &str) -> Vec<u8> {
    tar_gz(&[(
        "main.tf",
        &format!("output \"v\" {{ value = \"{version}\" }}\n"),
    )])
}

#[test]
fn uploaders_are_recorded_shown_to_namespace_readers_and_held_to_the_policy() {
    // Given the stack, and acme's policy: only the CI role's sessions may publish,
    let stack = Stack::start(&StackOptions::default());
    let policy = "keys/acme/policy.json";
    stack.upload(
        policy,
        br#"{"allowed_publishers": ["AWS:AROAEXAMPLECIROLE:ci-*"]}"#,
    );
    stack.deliver(&[policy]);
    // when the CI role uploads 1.0.0, a user outside the policy uploads 1.1.0, and someone
    // publishes in beta (which has no policy),
    let (good, bad) = (
        "modules/acme/net/aws/1.0.0.tar.gz",
        "modules/acme/net/aws/1.1.0.tar.gz",
    );
    stack.upload_as(CI, good, &module("1.0.0"));
    stack.upload_as(MALLORY, bad, &module("1.1.0"));
    let beta = "modules/beta/net/aws/1.0.0.tar.gz";
    stack.upload_as(MALLORY, beta, &module("b"));
    stack.deliver(&[good, bad, beta]);

    // then tfreg status names each served version's uploader, and why 1.1.0 is refused,
    let args = ["--table", &stack.table, "--bucket", &stack.bucket];
    let status = tfreg_e2e::tfreg_status(&args, &stack.env);
    assert!(
        status.contains(&format!("module acme/net/aws 1.0.0: {CI} at ")),
        "{status}\n{}",
        stack.log("indexer")
    );
    assert!(
        status.contains(&format!("module beta/net/aws 1.0.0: {MALLORY}")),
        "{status}"
    );
    let refusal = status
        .lines()
        .skip_while(|l| !l.contains(bad))
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    assert!(
        refusal.contains(&format!("uploaded by {MALLORY}")),
        "{status}"
    );
    assert!(
        refusal.contains("allowed_publishers of keys/acme/policy.json"),
        "{status}"
    );
    let json = tfreg_e2e::tfreg_status(&[&args[..], &["--json"]].concat(), &stack.env);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["uploaders_recorded"], true);
    assert!(doc["uploads"]
        .as_array()
        .unwrap()
        .iter()
        .any(|u| u["key"] == good && u["principal"] == CI && u["revision"].is_string()));

    // and the API serves only 1.0.0 of acme's module,
    let client = client_trusting(&stack.cert);
    let acme = stack.create_token(&["--namespace", "acme"]);
    let other = stack.create_token(&["--namespace", "beta"]);
    let get = |path: &str, token: &str| {
        let response = client
            .get(format!("{}{path}", stack.url))
            .bearer_auth(token)
            .send()
            .unwrap();
        let status = response.status().as_u16();
        (status, response.text().unwrap())
    };
    let (code, versions) = get("/v1/modules/acme/net/aws/versions", &acme);
    assert_eq!(code, 200, "{versions}");
    assert!(
        versions.contains("\"1.0.0\"") && !versions.contains("1.1.0"),
        "{versions}"
    );
    // with its uploader to a token that reads acme,
    let (code, body) = get("/v1/modules/acme/net/aws/1.0.0/uploads", &acme);
    assert_eq!(code, 200, "{body}");
    let uploads: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(uploads["id"], "acme/net/aws/1.0.0");
    assert_eq!(uploads["uploads"][0]["key"], good);
    assert_eq!(uploads["uploads"][0]["principal"], CI);
    // and to no token of another namespace: absent, as the module is to it.
    let (code, body) = get("/v1/modules/acme/net/aws/1.0.0/uploads", &other);
    assert_eq!(code, 404, "{body}");
    assert!(!body.contains(CI), "{body}");
    let (code, body) = get("/v1/modules/beta/net/aws/1.0.0/uploads", &other);
    assert_eq!((code, body.contains(MALLORY)), (200, true), "{body}");

    // When the CI role uploads 1.1.0 again, it is served.
    stack.upload_as("AWS:AROAEXAMPLECIROLE:ci-4822", bad, &module("1.1.0"));
    stack.deliver(&[bad]);
    let (_, versions) = get("/v1/modules/acme/net/aws/versions", &acme);
    assert!(
        versions.contains("1.1.0"),
        "{versions}\n{}",
        stack.log("indexer")
    );
}

#[test]
fn the_local_shape_records_no_uploader_and_says_so() {
    // Given a data directory with a module in acme, and one in beta, whose policy lists
    // allowed publishers (which a data directory cannot attribute),
    let data = TempDir::new().unwrap();
    let (acme, beta) = (
        "modules/acme/net/aws/1.0.0.tar.gz",
        "modules/beta/net/aws/1.0.0.tar.gz",
    );
    publish(data.path(), acme, &module("1.0.0"));
    publish(data.path(), beta, &module("b"));
    publish(
        data.path(),
        "keys/beta/policy.json",
        br#"{"allowed_publishers": ["AWS:AIDAEXAMPLEUSER"]}"#,
    );
    // then tfreg status says no uploader is recorded, and refuses beta's module for it,
    let dir = data.path().to_str().unwrap();
    let status = tfreg_e2e::tfreg_status(&["--data", dir], &[]);
    assert!(
        status.contains("Uploaders: not recorded (local data directory"),
        "{status}"
    );
    let refusal = status
        .lines()
        .skip_while(|l| !l.contains(beta))
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    assert!(refusal.contains("uploader is not recorded"), "{status}");
    assert!(refusal.contains("keys/beta/policy.json"), "{status}");

    // a private server has no uploads to show a reader of acme,
    let server = Server::start_private(data.path(), &[]);
    let token = server.create_token(&["--namespace", "acme"]);
    let get = |server: &Server, path: &str, token: Option<&str>| {
        let mut request = server.client().get(format!("{}{path}", server.url));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().unwrap();
        (response.status().as_u16(), response.text().unwrap())
    };
    let served = wait_until(Duration::from_secs(60), || {
        get(&server, "/v1/modules/acme/net/aws/versions", Some(&token)).0 == 200
    });
    assert!(served);
    let (code, body) = get(
        &server,
        "/v1/modules/acme/net/aws/1.0.0/uploads",
        Some(&token),
    );
    assert_eq!(code, 404, "{body}");
    drop(server);
    // and a public one shows uploaders to nobody.
    let public = Server::start(data.path(), &[]);
    let (code, body) = get(&public, "/v1/modules/acme/net/aws/1.0.0/uploads", None);
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("uploaders are shown only"), "{body}");
}
