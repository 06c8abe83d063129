//! The stack's function processes: each function's real binary under its own Runtime API
//! stand-in, with the template's environment; one the harness can kill (SIGKILL, as Lambda
//! ends a function at its timeout or out of memory) and start again in the same way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::lambda::{function_bin, RuntimeApi};

/// One function process.
pub(super) struct Function {
    pub(super) name: String,
    /// `(method, path)` as the template has them (`ANY`, `/v1/modules/{proxy+}`).
    pub(super) routes: Vec<(String, String)>,
    /// The object keys its S3 events take, `(prefix, suffix)`.
    pub(super) s3_keys: Vec<(String, String)>,
    pub(super) api: Arc<RuntimeApi>,
    pub(super) process: Arc<Process>,
    pub(super) log: PathBuf,
}

/// A function's running binary, and how to start it again.
pub(super) struct Process {
    command: Mutex<Command>,
    child: Mutex<Child>,
    api: Arc<RuntimeApi>,
    out: PathBuf,
    log: PathBuf,
    stopped: AtomicBool,
}

impl Process {
    /// Kills the process (SIGKILL), fails the invocation it was running as Lambda does, and
    /// starts it again under the same Runtime API, unless the stack is stopping.
    pub(super) fn crash(&self) {
        let mut child = self.child.lock().unwrap();
        let _ = child.kill();
        let _ = child.wait();
        self.api.fail_in_flight("signal: killed");
        if self.stopped.load(Ordering::SeqCst) {
            return;
        }
        note(
            &self.log,
            "--- killed by the harness at a crash point; started again ---",
        );
        let mut command = self.command.lock().unwrap();
        command.stdout(append(&self.out)).stderr(append(&self.log));
        *child = command.spawn().expect("the function starts again");
    }

    /// Kills the process for good.
    pub(super) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let mut child = self.child.lock().unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn append(path: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
}

fn note(path: &Path, line: &str) {
    use std::io::Write;
    let _ = writeln!(append(path), "{line}");
}

/// A function's name (its package's, `indexer`) from its `CodeUri`.
pub(super) fn function_name(environment: &BTreeMap<String, String>) -> &str {
    let code = &environment["__code_uri__"];
    code.trim_start_matches("build/lambda/")
        .split('/')
        .next()
        .unwrap()
}

/// Starts one instance (0 for the first) of a function's binary under its own Runtime API,
/// with the template's environment and `aws_env`.
pub(super) fn start_function(
    logical_id: &str,
    environment: &BTreeMap<String, String>,
    aws_env: &[(String, String)],
    dir: &Path,
    instance: usize,
) -> Function {
    let name = function_name(environment).to_owned();
    let file = match instance {
        0 => name.clone(),
        n => format!("{name}-{n}"),
    };
    let routes = environment
        .get("__routes__")
        .map(|r| {
            r.split_whitespace()
                .filter_map(|w| w.split_once(':'))
                .map(|(m, p)| (m.to_owned(), p.to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let s3_keys = environment
        .get("__s3_keys__")
        .map(|r| {
            r.split_whitespace()
                .filter_map(|w| w.split_once('*'))
                .map(|(p, s)| (p.to_owned(), s.to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let api = Arc::new(RuntimeApi::start(vec![]));
    let log = dir.join(format!("{file}.log"));
    let out = dir.join(format!("{file}.out"));
    let mut command = Command::new(function_bin(&name));
    command
        .env_clear()
        .envs(
            environment
                .iter()
                .filter(|(k, _)| !k.starts_with("__"))
                .map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .envs(aws_env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .envs([
            ("AWS_LAMBDA_RUNTIME_API", api.addr.as_str()),
            ("AWS_LAMBDA_FUNCTION_NAME", logical_id),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256"),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
        ])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&log).unwrap());
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("{name} starts: {e}"));
    let process = Arc::new(Process {
        command: Mutex::new(command),
        child: Mutex::new(child),
        api: Arc::clone(&api),
        out,
        log: log.clone(),
        stopped: AtomicBool::new(false),
    });
    Function {
        name,
        routes,
        s3_keys,
        api,
        process,
        log,
    }
}
