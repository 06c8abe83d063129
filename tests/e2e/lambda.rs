//! The real Lambda function binaries, under a stand-in for the Runtime API.

use std::process::{Command, Stdio};
use std::time::Duration;

use tfreg_e2e::{function_bin, wait_until, RuntimeApi};

const TOKEN: &str = "tfreg_0123456789abcdef_s3cretS3cretS3cretS3cretS3cretS3cretS3cr";

fn event(name: &str) -> String {
    let path = format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn a_function_logging_at_trace_never_writes_a_bearer_token() {
    // Given the discovery function at the most verbose level (where the runtime logs each
    // raw event, headers included), and an event carrying a bearer token,
    let with_token = event("apigw-discovery.json").replace("REPLACED-BY-TESTS", TOKEN);
    let api = RuntimeApi::start(vec![with_token]);
    let logs = tfreg_e2e::TempDir::new().unwrap();
    let (out, err) = (logs.path().join("out"), logs.path().join("err"));
    let mut child = Command::new(function_bin("discovery"))
        .env_clear()
        .envs([
            ("AWS_LAMBDA_RUNTIME_API", api.addr.as_str()),
            ("AWS_LAMBDA_FUNCTION_NAME", "tfreg-discovery"),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256"),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
            ("AWS_LAMBDA_LOG_STREAM_NAME", "stream"),
            ("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/tfreg-discovery"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("TFREG_TABLE", "tfreg"),
            ("TFREG_BUCKET", "tfreg-artifacts"),
            ("TFREG_DOWNLOADS", "redirect"),
            ("RUST_LOG", "trace"),
        ])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("the discovery function starts");

    // when it answers the invocation,
    let answered = wait_until(Duration::from_secs(30), || !api.answers().is_empty());
    let _ = child.kill();
    let _ = child.wait();
    let log = std::fs::read_to_string(&out).unwrap() + &std::fs::read_to_string(&err).unwrap();
    assert!(answered, "no answer from the function; its log:\n{log}");

    // then it answered the request (without the URL secret it never uses),
    let (id, body) = &api.answers()[0];
    assert_eq!(id, "request-0/response", "{body}\n{log}");
    assert!(body.contains("modules.v1"), "{body}");
    // and its trace log shows the raw event, with the token redacted.
    assert!(
        log.contains("raw JSON event"),
        "not logging at trace:\n{log}"
    );
    assert!(
        !log.contains(&TOKEN[23..]),
        "the token's secret was logged:\n{log}"
    );
    assert!(log.contains("[REDACTED]"), "{log}");
}
