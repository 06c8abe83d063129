//! Publishing in bulk on the deployed stack: many versions of one module uploaded at once,
//! their S3 events delivered in batches to several instances of the real indexer function
//! side by side, as a sync or a migration makes them.

use tfreg_core::ModuleAddress;
use tfreg_e2e::client_trusting;
use tfreg_e2e::stack::{Stack, StackOptions};

#[test]
fn a_batch_of_events_makes_its_module_document_once_and_loses_no_version() {
    // Given the stack with three instances of the indexer function, when 120 versions of one
    // module are uploaded at once and their events delivered twenty records to an event, the
    // three instances taking events side by side,
    publish_in_bulk(120, 20, 3);
}

#[test]
#[ignore = "deep tier: make test-deep (2,000 versions against the emulator)"]
fn thousands_of_versions_publish_in_bulk_and_lose_none() {
    // Given the stack with six instances of the indexer function, when 2,000 versions of one
    // module are uploaded at once and their events delivered fifty records to an event (S3's
    // batches of a migration), the six instances taking events side by side,
    publish_in_bulk(2_000, 50, 6);
}

/// Publishes `versions` versions of one module on a stack of `instances` indexers, their
/// events `per_event` records each, and checks the outcome.
fn publish_in_bulk(versions: usize, per_event: usize, instances: usize) {
    let stack = Stack::start(&StackOptions {
        indexer_instances: instances,
        ..StackOptions::default()
    });
    let address = ModuleAddress::parse("acme", "bulk", "aws").unwrap();
    let delivery = stack.publish_module_in_bulk(&address, versions, per_event);

    // then no event is left for the dead-letter queue,
    assert!(
        delivery.dead_lettered.is_empty() && delivery.failed.is_empty(),
        "{delivery:?}\n{}",
        stack.logs()
    );
    // each event wrote the module's versions document once, whatever its instance lost
    // to the others' writes meanwhile (and retried),
    let summaries = stack.indexer_summaries();
    assert_eq!(summaries.len(), versions / per_event, "{summaries:?}");
    for summary in &summaries {
        assert_eq!(
            (summary.records, summary.documents_written, summary.failed),
            (per_event as u64, 1, 0),
            "{summaries:?}"
        );
    }

    // the API lists every version,
    let token = stack.create_token(&[]);
    let url = format!("{}/v1/modules/{address}/versions", stack.url);
    let response = client_trusting(&stack.cert)
        .get(&url)
        .bearer_auth(&token)
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let json: serde_json::Value = response.json().unwrap();
    let listed = json["modules"][0]["versions"].as_array().unwrap().len();
    assert_eq!(listed, versions);

    // and the document is the one `tfreg reindex` makes from the bucket.
    let published = stack.module_versions(&address).unwrap();
    let args = [
        "reindex",
        "--table",
        &stack.table,
        "--bucket",
        &stack.bucket,
    ];
    tfreg_e2e::tfreg_with_env(&args, &stack.env);
    assert_eq!(stack.module_versions(&address).unwrap(), published);
}
