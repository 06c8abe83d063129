//! The deployed stack under faults (issue #31): throttles, 500 and 503 answers, delays past
//! the SDK's attempt timeout, lost answers and crashes of the indexer, injected by the proxy
//! in front of moto. Each test also shows its fault bit (a control), so it fails if the
//! retry or the idempotence it relies on is removed.

use std::time::{Duration, Instant};

use tfreg_core::ModuleAddress;
use tfreg_e2e::faults::{CrashPoint, FaultKind, FaultPlan, FaultRule};
use tfreg_e2e::stack::{Stack, StackOptions};
use tfreg_e2e::{client_trusting, host_block, tar_gz, Gpg, Terraform};

const HOST: &str = "registry.example.test";
/// The indexer's table writes.
const TABLE_WRITES: &str = "PutItem|UpdateItem|TransactWriteItems|DeleteItem|BatchWriteItem";

/// A stack with the proxy in front of moto and no fault yet, SDK attempts cut at 1.5 s.
fn stack() -> Stack {
    Stack::start(&StackOptions {
        domain: Some(HOST.into()),
        faults: Some(FaultPlan::new(31)),
        function_env: vec![("TFREG_AWS_ATTEMPT_TIMEOUT_MS".into(), "1500".into())],
        ..StackOptions::default()
    })
}

fn module_key(version: &str) -> String {
    format!("modules/acme/network/aws/{version}.tar.gz")
}

fn module_archive(version: &str) -> Vec<u8> {
    tar_gz(&[(
        "main.tf",
        &format!("output \"v\" {{ value = \"{version}\" }}\n"),
    )])
}

/// Uploads module versions; returns their keys.
fn upload_modules(stack: &Stack, versions: &[&str]) -> Vec<String> {
    versions
        .iter()
        .map(|version| {
            stack.upload(&module_key(version), &module_archive(version));
            module_key(version)
        })
        .collect()
}

fn get(stack: &Stack, token: &str, path: &str) -> reqwest::blocking::Response {
    client_trusting(&stack.cert)
        .get(format!("{}{path}", stack.url))
        .bearer_auth(token)
        .send()
        .unwrap()
}

/// The versions the API lists of `acme/network/aws`, sorted.
fn listed_modules(stack: &Stack, token: &str) -> Vec<String> {
    let answer = get(stack, token, "/v1/modules/acme/network/aws/versions");
    assert_eq!(answer.status().as_u16(), 200, "{}", stack.logs());
    let json: serde_json::Value = answer.json().unwrap();
    let mut versions: Vec<String> = json["modules"][0]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap().to_owned())
        .collect();
    versions.sort();
    versions
}

/// The provider `acme/widget`'s versions and their platforms, as the API lists them.
fn listed_provider(stack: &Stack, token: &str) -> serde_json::Value {
    let answer = get(stack, token, "/v1/providers/acme/widget/versions");
    assert_eq!(answer.status().as_u16(), 200, "{}", stack.logs());
    answer.json::<serde_json::Value>().unwrap()["versions"].clone()
}

/// The bytes a module version's download gives (through its presigned URL).
fn downloaded(stack: &Stack, token: &str, version: &str) -> Vec<u8> {
    let path = format!("/v1/modules/acme/network/aws/{version}/download");
    let answer = get(stack, token, &path);
    assert_eq!(answer.status().as_u16(), 204, "{}", stack.logs());
    let url = answer.headers()["x-terraform-get"].to_str().unwrap();
    let file = client_trusting(&stack.cert).get(url).send().unwrap();
    assert_eq!(file.status().as_u16(), 200, "{url}");
    file.bytes().unwrap().to_vec()
}

/// Asserts `tfreg reindex` (from the bucket, faults off) changes no document of the module.
fn reindex_changes_nothing(stack: &Stack) {
    let address = ModuleAddress::parse("acme", "network", "aws").unwrap();
    let indexed = stack
        .module_versions(&address)
        .expect("a versions document");
    let args = [
        "reindex",
        "--table",
        &stack.table,
        "--bucket",
        &stack.bucket,
    ];
    tfreg_e2e::tfreg_with_env(&args, &stack.env);
    assert_eq!(stack.module_versions(&address).unwrap(), indexed);
}

#[test]
fn a_throttled_table_answers_503_with_retry_after_and_terraform_retries_through_it() {
    // Given a module published on the stack and a token,
    let stack = stack();
    let keys = upload_modules(&stack, &["1.0.0"]);
    stack.deliver(&[keys[0].as_str()]);
    let token = stack.create_token(&[]);
    let path = "/v1/modules/acme/network/aws/versions";
    assert_eq!(get(&stack, &token, path).status().as_u16(), 200);
    let reads = || FaultRule::next(3, FaultKind::Throttle).service("dynamodb");
    let reads = move || reads().action("GetItem|Query").function("modules");

    // when the modules function's next two table reads are throttled, its SDK's retries
    // absorb them (the control: without retries this is a 503),
    stack.set_faults(Some(FaultPlan::new(1).rule(reads().limit(2))));
    let answer = get(&stack, &token, path);
    assert_eq!(answer.status().as_u16(), 200, "{}", stack.logs());
    assert_eq!(stack.fault_stats().of(FaultKind::Throttle), 2);

    // and when the next three are (past its three attempts), the answer is a 503 with
    // Retry-After and the JSON errors body, never a 500, well within the 10 s,
    stack.set_faults(Some(FaultPlan::new(2).rule(reads())));
    let started = Instant::now();
    let answer = get(&stack, &token, path);
    let took = started.elapsed();
    assert_eq!(answer.status().as_u16(), 503, "{}", stack.logs());
    assert!(answer.headers().contains_key("retry-after"));
    let body: serde_json::Value = answer.json().unwrap();
    assert!(
        body["errors"].as_array().is_some_and(|e| !e.is_empty()),
        "{body}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(stack.fault_stats().of(FaultKind::Throttle), 5);

    // and Terraform, meeting the same three throttles, installs the module all the same.
    stack.set_faults(Some(FaultPlan::new(3).rule(reads())));
    let credentials = format!(
        "credentials \"{HOST}\" {{ token = \"{token}\" }}\ncredentials \"{}\" {{ token = \"{token}\" }}\n",
        stack.addr
    );
    let tf = Terraform::new(
        &format!("{}{credentials}", host_block(HOST, &stack.url)),
        &stack.cert,
    );
    tf.write(
        "main.tf",
        &format!(
            "module \"net\" {{\n  source  = \"{}/acme/network/aws\"\n  version = \"1.0.0\"\n}}\n",
            stack.addr
        ),
    );
    tf.init(&[]);
    assert_eq!(tf.installed_modules()["net"], "1.0.0");
    assert_eq!(stack.fault_stats().of(FaultKind::Throttle), 8);
}

#[test]
fn errors_and_throttles_on_a_third_of_the_indexers_calls_lose_nothing() {
    // Given the indexer's calls failing a third of the time (throttled, 500, 503),
    let stack = stack();
    let mut plan = FaultPlan::new(7);
    for kind in [
        FaultKind::Throttle,
        FaultKind::ServerError,
        FaultKind::Unavailable,
    ] {
        plan = plan.rule(FaultRule::new(kind, 0.1).function("indexer"));
    }
    stack.set_faults(Some(plan));

    // when two module versions and a signed provider release for two platforms are published,
    let mut keys = upload_modules(&stack, &["1.0.0", "1.1.0"]);
    let gpg = Gpg::new();
    gpg.generate("release@example.test", "rsa2048", "never", None);
    let platforms = ["linux_amd64", "darwin_arm64"];
    keys.extend(stack.upload_signed_release(&gpg, "widget", "1.2.0", &platforms));
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let delivery = stack.try_deliver(&keys);

    // then the faults bit, and the SDK's retries took them all: no invocation failed,
    let stats = stack.fault_stats();
    assert!(stats.total() >= 5, "{stats:?}");
    assert!(
        delivery.failed.is_empty() && delivery.dead_lettered.is_empty(),
        "{delivery:#?}\n{}",
        stack.fault_log()
    );
    // and, faults off, everything is served, the documents as a reindex makes them.
    stack.set_faults(None);
    let token = stack.create_token(&[]);
    assert_eq!(listed_modules(&stack, &token), ["1.0.0", "1.1.0"]);
    let provider = listed_provider(&stack, &token);
    assert_eq!(provider[0]["version"], "1.2.0", "{provider}");
    assert_eq!(provider[0]["platforms"].as_array().unwrap().len(), 2);
    reindex_changes_nothing(&stack);
}

#[test]
fn delayed_and_lost_writes_of_the_indexer_converge_with_nothing_doubled() {
    // Given the indexer's writes delayed past its 1.5 s attempts or applied with their
    // answers lost, table and bucket alike,
    let stack = stack();
    let writes = |kind, service, action, rate| {
        let rule = FaultRule::new(kind, rate).service(service).action(action);
        rule.function("indexer")
    };
    let plan = FaultPlan::new(11)
        .holding(Duration::from_millis(1_600))
        .rule(writes(FaultKind::LostAnswer, "dynamodb", TABLE_WRITES, 0.2))
        .rule(writes(FaultKind::Delay, "dynamodb", TABLE_WRITES, 0.1))
        .rule(writes(FaultKind::LostAnswer, "s3", "PUT|POST|DELETE", 0.2))
        .rule(writes(FaultKind::Delay, "s3", "PUT|POST|DELETE", 0.1));
    stack.set_faults(Some(plan));

    // when three versions are published and one of them deleted again,
    let keys = upload_modules(&stack, &["1.0.0", "1.1.0", "2.0.0"]);
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let published = stack.try_deliver(&keys);
    stack.delete(keys[1]);
    let deleted = stack.try_deliver(&keys[1..2]);

    // then both kinds bit, the indexer settled every event anyway,
    let stats = stack.fault_stats();
    assert!(stats.of(FaultKind::LostAnswer) > 0, "{stats:?}");
    assert!(stats.of(FaultKind::Delay) > 0, "{stats:?}");
    for delivery in [&published, &deleted] {
        // (a write the SDK sends again after its answer was lost must not fail the event)
        assert!(
            delivery.failed.is_empty() && delivery.dead_lettered.is_empty(),
            "{delivery:#?}\n{}\n{}",
            stack.fault_log(),
            stack.logs()
        );
    }
    // and, faults off, each version is listed once, the deleted one not at all, every
    // download gives its bytes, and a reindex finds nothing to change.
    stack.set_faults(None);
    let token = stack.create_token(&[]);
    assert_eq!(listed_modules(&stack, &token), ["1.0.0", "2.0.0"]);
    for version in ["1.0.0", "2.0.0"] {
        assert_eq!(downloaded(&stack, &token, version), module_archive(version));
    }
    reindex_changes_nothing(&stack);
}

#[test]
fn a_crashed_indexer_is_redelivered_and_an_event_that_always_crashes_is_dead_lettered() {
    let stack = stack();
    let crashed = |failed: &[String]| {
        failed.len() == 1 && failed[0].contains("Runtime.ExitError") && failed[0].contains("killed")
    };
    // Given the indexer killed at its second table write,
    stack.crash_indexer_at(CrashPoint::new("dynamodb", TABLE_WRITES, 2));
    // when a version is published, the killed invocation fails and its redelivery completes;
    let keys = upload_modules(&stack, &["1.0.0"]);
    let delivery = stack.try_deliver(&[keys[0].as_str()]);
    assert_eq!(stack.fault_stats().crashes, 1);
    assert!(crashed(&delivery.failed), "{delivery:#?}");
    assert!(delivery.dead_lettered.is_empty(), "{delivery:#?}");

    // and so for the indexer killed at its first read of the bucket.
    stack.crash_indexer_at(CrashPoint::new("s3", "GET|HEAD", 1));
    let keys = upload_modules(&stack, &["1.1.0"]);
    let delivery = stack.try_deliver(&[keys[0].as_str()]);
    assert_eq!(stack.fault_stats().crashes, 2);
    assert!(crashed(&delivery.failed), "{delivery:#?}");
    assert!(delivery.dead_lettered.is_empty(), "{delivery:#?}");
    let token = stack.create_token(&[]);
    assert_eq!(listed_modules(&stack, &token), ["1.0.0", "1.1.0"]);

    // When an event crashes the indexer on every attempt, it is dead-lettered after three,
    stack.crash_indexer_at(CrashPoint::new("dynamodb", TABLE_WRITES, 1).times(3));
    let keys = upload_modules(&stack, &["2.0.0"]);
    let delivery = stack.redeliver(vec![stack.s3_event(&keys[0], 0)]);
    assert_eq!((delivery.invocations, delivery.failed.len()), (3, 3));
    assert_eq!(delivery.dead_lettered.len(), 1, "{delivery:#?}");
    assert_eq!(stack.fault_stats().crashes, 5);
    assert_eq!(listed_modules(&stack, &token), ["1.0.0", "1.1.0"]);

    // and redriving it, the indexer well again, publishes the version.
    let redriven = stack.redeliver(delivery.dead_lettered);
    assert!(redriven.failed.is_empty(), "{redriven:#?}");
    assert_eq!(listed_modules(&stack, &token), ["1.0.0", "1.1.0", "2.0.0"]);
    reindex_changes_nothing(&stack);
}
