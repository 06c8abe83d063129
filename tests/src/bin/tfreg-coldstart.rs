//! `make coldstart`: each function's cold start (from process start to its first request
//! for an event, which is where Lambda's init duration ends) against a hello-world
//! `lambda_http` binary's, in the same run, on release builds. Fails if any function takes
//! more than twice as long as the hello world.
//!
//! `tfreg-coldstart [RUNS]` (default 25); each figure is the median of the runs.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tfreg_e2e::{function_bin, RuntimeApi};

const SECRET: &str = "0123456789abcdef0123456789abcdef0123456789abcdef";

/// An identity document for the login function (it does not start without one): one CI
/// rule, whose issuer is only asked for its keys when a CI token arrives.
const IDENTITY: &str = r#"{"ci": [{"name": "infra-main", "issuer": "https://token.actions.githubusercontent.com", "audience": "https://registry.example.com", "claims": {"repository": "acme/infra"}, "namespaces": ["network"]}]}"#;

fn cold_start(binary: &str) -> Duration {
    let api = RuntimeApi::start(vec![]);
    let started = Instant::now();
    let mut child = Command::new(function_bin(binary))
        .env_clear()
        .envs([
            ("AWS_LAMBDA_RUNTIME_API", api.addr.as_str()),
            ("AWS_LAMBDA_FUNCTION_NAME", binary),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256"),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
            ("TFREG_TABLE", "tfreg-table"),
            ("TFREG_BUCKET", "tfreg-bucket"),
            ("TFREG_DOWNLOADS", "redirect"),
            ("TFREG_URL_SECRET", SECRET),
            ("TFREG_SESSION_SECRET", SECRET),
            ("TFREG_IDENTITY", IDENTITY),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the function starts");
    let polled = api.first_poll(Duration::from_secs(30));
    let _ = child.kill();
    let _ = child.wait();
    polled.expect("the function asked for an event") - started
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|r| r.parse().expect("RUNS is a number"))
        .unwrap_or(25);
    let mut binaries = vec!["lambda-hello"];
    binaries.extend(tfreg_lambda::Function::ALL.map(tfreg_lambda::Function::name));
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); binaries.len()];
    // A first round to warm the page cache, not counted.
    for binary in &binaries {
        cold_start(binary);
    }
    for run in 0..runs {
        // Interleaved, and in a rotating order, so a busy moment of the machine (or being
        // first in a round) touches every binary alike.
        for step in 0..binaries.len() {
            let i = (step + run) % binaries.len();
            times[i].push(cold_start(binaries[i]));
        }
    }
    let median = |t: &mut Vec<Duration>| {
        t.sort();
        t[t.len() / 2]
    };
    let hello = median(&mut times[0]);
    println!("{:<14} {:>10} {:>8}", "function", "cold start", "× hello");
    let mut worst: f64 = 0.0;
    for (i, binary) in binaries.iter().enumerate() {
        let time = median(&mut times[i]);
        let ratio = time.as_secs_f64() / hello.as_secs_f64();
        worst = worst.max(ratio);
        println!(
            "{binary:<14} {:>8.1}ms {ratio:>8.2}",
            time.as_secs_f64() * 1000.0
        );
    }
    if worst > 2.0 {
        eprintln!("a function's cold start is more than twice the hello world's");
        std::process::exit(1);
    }
}
