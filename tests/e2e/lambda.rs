//! The real Lambda function binaries, under a stand-in for the Runtime API.

use std::process::{Command, Stdio};
use std::time::Duration;

use tfreg_e2e::{function_bin, wait_until, RuntimeApi};
use tfreg_lambda::Function;

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
    // Every line is one JSON object, as CloudWatch wants it; the request's line has its
    // route and the invocation's request id.
    let lines: Vec<serde_json::Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(lines.iter().all(|l| l["level"].is_string()), "{log}");
    let request = lines
        .iter()
        .find(|l| l["target"] == "tfreg::access")
        .unwrap_or_else(|| panic!("no access line:\n{log}"));
    assert_eq!(request["route"], "discovery", "{request}");
    assert_eq!(request["span"]["requestId"], "request-0", "{request}");
}

/// Starts a function binary under `api` with `env`; returns the child.
fn start(function: &str, api: &RuntimeApi, env: &[(&str, &str)]) -> std::process::Child {
    Command::new(function_bin(function))
        .env_clear()
        .envs([
            ("AWS_LAMBDA_RUNTIME_API", api.addr.as_str()),
            ("AWS_LAMBDA_FUNCTION_NAME", function),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256"),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
            ("AWS_REGION", "us-east-1"),
        ])
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the function starts")
}

#[test]
fn a_bad_setting_stops_the_cold_start_with_a_message_naming_it() {
    // Given the modules function in redirect mode without its secret,
    let api = RuntimeApi::start(vec![]);
    let mut child = start(
        "modules",
        &api,
        &[
            ("TFREG_TABLE", "t"),
            ("TFREG_BUCKET", "b"),
            ("TFREG_DOWNLOADS", "redirect"),
        ],
    );
    // then it reports a readable init error to the Runtime API, and stops.
    let reported = wait_until(Duration::from_secs(30), || !api.answers().is_empty());
    let exited = wait_until(Duration::from_secs(30), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    let _ = child.kill();
    assert!(reported && exited, "{:?}", api.answers());
    let (kind, body) = &api.answers()[0];
    assert_eq!(kind, "init/error");
    let json: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(json["errorType"], "tfreg.ConfigurationError");
    assert!(
        json["errorMessage"]
            .as_str()
            .unwrap()
            .starts_with("configuration: TFREG_URL_SECRET: is not set"),
        "{json}"
    );
}

/// The demangled symbols of a function binary.
fn symbols(function: &str) -> String {
    let output = Command::new("nm")
        .args(["--demangle"])
        .arg(function_bin(function))
        .output()
        .expect(
            "`nm` runs (it comes with binutils, which Rust's linker needs: apt-get install binutils)",
        );
    assert!(output.status.success(), "nm failed on {function}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// How many of `symbols` belong to `module` (a Rust path prefix).
fn count(symbols: &str, module: &str) -> usize {
    symbols.lines().filter(|l| l.contains(module)).count()
}

#[test]
fn each_function_binary_holds_only_its_familys_code() {
    for function in Function::ALL {
        let symbols = symbols(function.name());
        for other in Function::ALL {
            let module = other.spec().code;
            let count = count(&symbols, module);
            if other == function {
                assert!(count > 0, "{function:?} lacks its own code ({module})");
            } else {
                assert_eq!(count, 0, "{function:?} holds {other:?}'s code ({module})");
            }
        }
        match function {
            // Discovery connects to nothing; downloads to S3 alone.
            Function::Discovery => assert_eq!(count(&symbols, "aws_sdk_"), 0),
            Function::Downloads => {
                assert_eq!(count(&symbols, "aws_sdk_dynamodb::"), 0);
                assert!(count(&symbols, "aws_sdk_s3::") > 0);
            }
            // The pages read the table; the markdown renderer and sanitiser are theirs.
            Function::Web => assert!(count(&symbols, "ammonia::") > 0),
            Function::Modules | Function::Login => assert_eq!(count(&symbols, "ammonia::"), 0),
            _ => {}
        }
    }
}
