//! What each API request costs the deployed stack, counted at the emulator: the function
//! binaries' DynamoDB and S3 calls pass through a counting proxy in front of moto. And how
//! long a revoked token keeps working in a function that keeps tokens in memory.

use std::time::{Duration, Instant};

use tfreg_e2e::counting::{cost, measure, published, Call, HOST, REQUESTS};
use tfreg_e2e::scale::{self, publish_at_scale, Scale, MODULE, PLATFORMS, PROVIDER};
use tfreg_e2e::stack::StackOptions;
use tfreg_e2e::tfreg_with_env;

fn summary(calls: &[Call]) -> String {
    calls
        .iter()
        .map(Call::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn a_request_with_a_known_token_makes_at_most_one_table_read_and_no_write() {
    let (stack, token) = published(StackOptions::default());
    for (name, path) in REQUESTS {
        // The first request to a function reads the token (and, for providers, the keys),
        // and records the token's use: one write at most.
        let (status, first) = cost(&stack, Some(&token), path);
        assert!(
            matches!(status, 200 | 204),
            "{name}: {status}\n{}",
            stack.logs()
        );
        let writes = first.iter().filter(|c| c.writes()).count();
        assert!(writes <= 1, "{name} (cold): {}", summary(&first));
        // Every later one, within the cache's time to live, reads one partition at most
        // and writes nothing; no request touches S3 (download URLs are presigned here).
        for _ in 0..3 {
            let (status, calls) = cost(&stack, Some(&token), path);
            assert!(matches!(status, 200 | 204), "{name}: {status}");
            let dynamodb: Vec<&Call> = calls.iter().filter(|c| c.service == "dynamodb").collect();
            assert!(
                dynamodb.len() <= 1
                    && dynamodb
                        .iter()
                        .all(|c| c.action == "Query" || c.action == "GetItem"),
                "{name}: {}",
                summary(&calls)
            );
            assert!(
                calls.iter().all(|c| c.service == "dynamodb"),
                "{name}: {}",
                summary(&calls)
            );
        }
    }
    // Without a token, or with a wrong one, the request is refused with no call at all
    // (an id the table does not know is one read, never cached).
    let (status, calls) = cost(&stack, None, REQUESTS[1].1);
    assert_eq!((status, calls.len()), (401, 0), "{}", summary(&calls));
    let wrong = format!("{}x", &token[..token.len() - 1]);
    let (status, calls) = cost(&stack, Some(&wrong), REQUESTS[1].1);
    assert_eq!(status, 401);
    assert!(calls.iter().all(|c| !c.writes()), "{}", summary(&calls));
}

#[test]
fn a_revoked_token_is_refused_within_the_cache_ttl() {
    let ttl = Duration::from_secs(3);
    let (stack, token) = published(StackOptions {
        cache_ttl: Some("3s".into()),
        ..StackOptions::default()
    });
    let path = REQUESTS[1].1;
    assert_eq!(cost(&stack, Some(&token), path).0, 200);
    let id = token.split('_').nth(1).unwrap();
    tfreg_with_env(
        &["token", "revoke", "--table", &stack.table, id],
        &stack.env,
    );
    let revoked = Instant::now();
    let refused_after = loop {
        if cost(&stack, Some(&token), path).0 == 401 {
            break revoked.elapsed();
        }
        assert!(
            revoked.elapsed() < ttl + Duration::from_secs(10),
            "the revoked token still works {:?} after its revocation",
            revoked.elapsed()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    // Refused from the moment the function's copy is older than the time to live (plus
    // this loop's own pace); the token's record is read again, not kept for good.
    assert!(
        refused_after <= ttl + Duration::from_secs(3),
        "{refused_after:?}"
    );
}

/// What one item may add to a request's reads beyond twice its answer: a version's archive
/// record, a release document (a few kilobytes, compressed).
const ONE_ITEM: usize = 8 * 1024;

/// What the indexer may read from the table per event: a version's records and its
/// subject's documents (about 44 KB at full scale, SCALING.md), never a whole partition.
const PER_EVENT: usize = 256 * 1024;

#[test]
fn each_request_reads_one_small_item_whatever_the_partition_holds() {
    // A module of 1,000 versions and a provider of 100 versions × 6 platforms: each partition
    // holds more than the indexer may read per event, and thousands of items where a request
    // may read one, so a read that grows with the partition fails here as at full scale.
    reads_one_small_item_and_writes_nothing(Scale::GATE);
}

#[test]
#[ignore = "deep tier: make test-deep (10,000 module versions, 1,000 provider versions: about 11 minutes against the emulator)"]
fn at_scale_each_request_reads_one_small_item_and_writes_nothing() {
    reads_one_small_item_and_writes_nothing(Scale::FULL);
}

/// Publishes the fixture at `size` on the stack, then counts what indexing its last
/// versions read and what each API request reads and writes.
fn reads_one_small_item_and_writes_nothing(size: Scale) {
    let stack = tfreg_e2e::stack::Stack::start(&StackOptions {
        domain: Some(HOST.into()),
        count_calls: true,
        // What is measured is what a request reads, not how fast: the emulator answers a
        // query by walking the whole 10,000-item partition in Python, which on a loaded test
        // machine outlasts the functions' 1.5 s attempts (a 503 there would say nothing
        // about DynamoDB, which reads only the items a query returns).
        function_env: vec![("TFREG_AWS_ATTEMPT_TIMEOUT_MS".into(), "20000".into())],
        ..StackOptions::default()
    });
    let last = publish_at_scale(&stack, size);
    // The fixture is big enough: reading either partition whole, even once for all of the
    // events, exceeds what the indexer may read per event.
    let (module_bytes, provider_bytes) = last.partition_bytes;
    assert!(
        module_bytes > PER_EVENT && provider_bytes > PER_EVENT,
        "the fixture's partitions ({module_bytes} and {provider_bytes} bytes) must each exceed \
         {PER_EVENT} bytes, or reading one whole would pass unnoticed"
    );
    // Indexing a file reads that version's records and its subject's documents, never the
    // whole partition (thousands of items): a few kilobytes an event.
    let read: usize = last
        .calls
        .iter()
        .filter(|c| c.service == "dynamodb")
        .map(|c| c.response_bytes)
        .sum();
    assert!(
        read / last.events <= PER_EVENT,
        "the indexer read {read} bytes from the table for {} events",
        last.events
    );
    eprintln!(
        "indexing the last versions: {} events, {read} bytes read from the table, {} calls",
        last.events,
        last.calls.len()
    );
    let token = stack.create_token(&[]);
    stack.calls();
    let old = scale::version(size.module_versions / 2);
    let some = scale::version(size.provider_versions / 2);
    let requests = [
        ("module versions", format!("/v1/modules/{MODULE}/versions")),
        (
            "module download",
            format!("/v1/modules/{MODULE}/{old}/download"),
        ),
        (
            "provider versions",
            format!("/v1/providers/{PROVIDER}/versions"),
        ),
        (
            "provider download",
            format!("/v1/providers/{PROVIDER}/{some}/download/linux/arm64"),
        ),
        (
            "mirror index",
            format!("/v1/mirror/{HOST}/{PROVIDER}/index.json"),
        ),
        (
            "mirror version",
            format!("/v1/mirror/{HOST}/{PROVIDER}/{some}.json"),
        ),
    ];
    let mut figures = Vec::new();
    for (name, path) in &requests {
        // The first request of a function reads the token (and may record its use).
        let first = measure(&stack, Some(&token), path);
        assert!(
            matches!(first.status, 200 | 204),
            "{name}: {}\n{}",
            first.status,
            stack.logs()
        );
        for _ in 0..3 {
            let cost = measure(&stack, Some(&token), path);
            assert!(matches!(cost.status, 200 | 204), "{name}: {}", cost.status);
            let calls = summary(&cost.calls);
            let dynamodb: Vec<&Call> = cost
                .calls
                .iter()
                .filter(|c| c.service == "dynamodb")
                .collect();
            assert!(dynamodb.len() <= 1, "{name}: {calls}");
            assert!(cost.calls.iter().all(|c| !c.writes()), "{name}: {calls}");
            assert!(
                cost.calls.iter().all(|c| c.service == "dynamodb"),
                "{name}: {calls}"
            );
            let read: usize = dynamodb.iter().map(|c| c.response_bytes).sum();
            let items: usize = dynamodb.iter().map(|c| c.items).sum();
            assert!(items <= 1, "{name} read {items} items: {calls}");
            assert!(
                read <= 2 * cost.answer_bytes + ONE_ITEM,
                "{name}: read {read} bytes for an answer of {}: {calls}",
                cost.answer_bytes
            );
            figures.push(format!(
                "{name}: {} DynamoDB call(s) ({}), {read} bytes read, answer {} bytes",
                dynamodb.len(),
                dynamodb
                    .iter()
                    .map(|c| c.action.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                cost.answer_bytes
            ));
        }
    }
    // What was read is the whole answer: every version, every platform.
    let versions = |path: &str| -> serde_json::Value {
        serde_json::from_slice(&measure(&stack, Some(&token), path).body).unwrap()
    };
    let modules = versions(&requests[0].1);
    let listed = modules["modules"][0]["versions"].as_array().unwrap();
    assert_eq!(listed.len(), size.module_versions);
    assert!(listed.iter().any(|v| v["version"] == scale::LAST));
    let providers = versions(&requests[2].1);
    let listed = providers["versions"].as_array().unwrap();
    assert_eq!(listed.len(), size.provider_versions);
    assert!(listed
        .iter()
        .all(|v| v["platforms"].as_array().unwrap().len() == PLATFORMS.len()));
    let index = versions(&requests[4].1);
    assert_eq!(
        index["versions"].as_object().unwrap().len(),
        size.provider_versions
    );
    figures.dedup();
    eprintln!(
        "per request, with a warm token cache:\n{}",
        figures.join("\n")
    );
}
