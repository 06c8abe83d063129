//! The dead-letter redrive (docs/operations.md): S3 events the indexer gave up on, parked
//! in its dead-letter queue as Lambda parks them, indexed by `tfreg redrive`; what is not
//! an S3 event stays in the queue and fails the command, naming it.

use tfreg_e2e::sqs::{batched, Queues};
use tfreg_e2e::stack::{Stack, StackOptions};
use tfreg_e2e::{client_trusting, tar_gz, tfreg_run, Gpg};

/// `GET path` on the stack's API with `token`: the status and the body.
fn get(stack: &Stack, token: &str, path: &str) -> (u16, String) {
    let response = client_trusting(&stack.cert)
        .get(format!("{}{path}", stack.url))
        .bearer_auth(token)
        .send()
        .unwrap();
    (response.status().as_u16(), response.text().unwrap())
}

/// `tfreg redrive` against the stack's table, bucket and `queue` (named by the
/// environment, as the runbook's shell has it): exit status, stdout, stderr.
fn redrive(stack: &Stack, queue: &str) -> (i32, String, String) {
    let mut env = stack.env.clone();
    env.push(("TFREG_DEAD_LETTER_QUEUE", queue.to_owned()));
    let args = [
        "redrive",
        "--table",
        &stack.table,
        "--bucket",
        &stack.bucket,
    ];
    tfreg_run(&args, &env)
}

#[test]
fn redrive_indexes_the_parked_events_and_leaves_what_is_not_one() {
    // Given the stack with a module version and a signed provider release uploaded, whose
    // events never reached the indexer (it failed them three times),
    let stack = Stack::start(&StackOptions::default());
    let module = "modules/acme/network/aws/1.0.0+build.1.tar.gz";
    stack.upload(
        module,
        &tar_gz(&[("main.tf", "output \"v\" { value = \"1\" }\n")]),
    );
    let gpg = Gpg::new();
    gpg.generate("release@example.test", "rsa2048", "never", None);
    let release =
        stack.upload_signed_release(&gpg, "widget", "1.2.0", &["linux_amd64", "darwin_arm64"]);
    let token = stack.create_token(&[]);
    let modules = "/v1/modules/acme/network/aws/versions";
    let providers = "/v1/providers/acme/widget/versions";
    let (_, before) = get(&stack, &token, modules);
    assert!(!before.contains("1.0.0+build.1"), "{before}");
    // and their events parked in the indexer's dead-letter queue as Lambda parks them: the
    // module's alone, the release's keys as one batch (the key's last), and one message
    // that is no S3 event,
    let queues = Queues::of(&stack);
    let queue = queues.create("tfreg-IndexerDeadLetterQueue");
    let module_message = queues.park(&queue, &stack.s3_event(module, 0));
    let events: Vec<String> = release
        .iter()
        .enumerate()
        .map(|(i, key)| stack.s3_event(key, i))
        .collect();
    let release_message = queues.park(&queue, &batched(&events));
    let junk = queues.park(&queue, "{\"Records\": \"nope\"}");
    assert_eq!(queues.count(&queue), 3);

    // when `tfreg redrive` runs,
    let (code, stdout, stderr) = redrive(&stack, &queue);

    // it fails, naming the message it left and why, after redriving the others,
    assert_ne!(code, 0, "{stdout}{stderr}");
    assert!(stderr.contains(&junk), "{stdout}{stderr}");
    assert!(stderr.contains("not an S3 event"), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("redriven {module_message}: 1 keys")),
        "{stdout}{stderr}"
    );
    assert!(
        stdout.contains(&format!(
            "redriven {release_message}: {} keys",
            release.len()
        )),
        "{stdout}{stderr}"
    );
    assert!(
        stdout.contains("it had failed: tfreg.IndexFailure"),
        "{stdout}"
    );
    assert!(stdout.contains("redrove 2 messages"), "{stdout}");
    // the versions are served,
    let (status, served_modules) = get(&stack, &token, modules);
    assert_eq!(status, 200, "{served_modules}");
    assert!(served_modules.contains("1.0.0+build.1"), "{served_modules}");
    let (status, served_providers) = get(&stack, &token, providers);
    assert_eq!(status, 200, "{served_providers}");
    let platforms: serde_json::Value = serde_json::from_str(&served_providers).unwrap();
    assert_eq!(
        platforms["versions"][0]["version"], "1.2.0",
        "{served_providers}"
    );
    assert_eq!(
        platforms["versions"][0]["platforms"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "{served_providers}"
    );
    // and only the junk message is left in the queue, visible again for the next look.
    assert_eq!(queues.count(&queue), 1);
    let left = queues.peek(&queue);
    assert_eq!(
        left.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
        [junk.as_str()]
    );

    // Once the junk is deleted and the same events parked again (Lambda may park an event
    // whose retry had meanwhile succeeded), a redrive succeeds and changes nothing.
    queues.purge(&queue);
    queues.park(&queue, &stack.s3_event(module, 0));
    queues.park(&queue, &batched(&events));
    let (code, stdout, stderr) = redrive(&stack, &queue);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("redrove 2 messages"), "{stdout}");
    assert!(stdout.contains("0 left in the queue"), "{stdout}");
    assert_eq!(queues.count(&queue), 0);
    assert_eq!(get(&stack, &token, modules).1, served_modules);
    assert_eq!(get(&stack, &token, providers).1, served_providers);
    // An empty queue is redriven at once.
    let (code, stdout, stderr) = redrive(&stack, &queue);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("redrove 0 messages"), "{stdout}");
}

#[test]
fn redrive_says_what_it_needs() {
    // Without a queue, or with a name where its URL goes, it explains and does nothing.
    let (code, _, stderr) = tfreg_run(&["redrive", "--table", "t", "--bucket", "b"], &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--queue"), "{stderr}");
    let args = ["redrive", "--queue", "dlq", "--table", "t", "--bucket", "b"];
    let (code, _, stderr) = tfreg_run(&args, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not a queue URL"), "{stderr}");
    let args = [
        "redrive",
        "--queue",
        "https://sqs.example.test/1/dlq",
        "--table",
        "t",
    ];
    let (code, _, stderr) = tfreg_run(&args, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("--bucket"), "{stderr}");
}
