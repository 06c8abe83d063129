//! What `make bench` (`tfreg-bench`) measures with: wrk for load, nginx serving the same
//! bytes as static files for the baseline, and peak memory from `/proc`. Timings are only
//! ever compared within one run on one machine; nothing in `make test` depends on them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::{wait_until, TempDir};

pub mod targets;

/// One wrk run: throughput and latency percentiles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// Requests answered per second.
    pub requests_per_sec: f64,
    /// Median latency, in milliseconds.
    pub p50_ms: f64,
    /// 99th-percentile latency, in milliseconds.
    pub p99_ms: f64,
    /// Responses that were not 2xx or 3xx (wrk's "Non-2xx or 3xx responses").
    pub errors: u64,
}

/// How a load is applied.
#[derive(Debug, Clone, Copy)]
pub struct LoadShape {
    /// Open connections (wrk `-c`).
    pub connections: u32,
    /// Client threads (wrk `-t`).
    pub threads: u32,
    /// Duration of the run, in seconds.
    pub seconds: u32,
}

/// Stops the benchmark, saying how to get a tool, when it is missing.
pub fn require(tool: &str, install: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(found, "{tool} is missing: {install}");
}

/// Runs wrk against `url` with `headers`, and reads its report.
pub fn wrk(url: &str, headers: &[String], shape: LoadShape) -> Load {
    let mut command = Command::new("wrk");
    command.args([
        "--latency",
        &format!("-t{}", shape.threads),
        &format!("-c{}", shape.connections),
        &format!("-d{}s", shape.seconds),
        "--timeout",
        "10s",
    ]);
    for header in headers {
        command.args(["-H", header]);
    }
    let output = command.arg(url).output().expect("wrk runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "wrk failed on {url}: {text}");
    parse_wrk(&text).unwrap_or_else(|| panic!("wrk's report is unreadable: {text}"))
}

/// Reads wrk's `--latency` report.
pub fn parse_wrk(text: &str) -> Option<Load> {
    let mut load = Load {
        requests_per_sec: 0.0,
        p50_ms: 0.0,
        p99_ms: 0.0,
        errors: 0,
    };
    for line in text.lines().map(str::trim) {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("50%"), Some(value)) => load.p50_ms = duration_ms(value)?,
            (Some("99%"), Some(value)) => load.p99_ms = duration_ms(value)?,
            (Some("Requests/sec:"), Some(value)) => load.requests_per_sec = value.parse().ok()?,
            _ => {}
        }
        if let Some(count) = line.strip_prefix("Non-2xx or 3xx responses:") {
            load.errors = count.trim().parse().ok()?;
        }
    }
    (load.requests_per_sec > 0.0).then_some(load)
}

/// `1.23ms`, `456.00us`, `1.02s` as milliseconds.
fn duration_ms(value: &str) -> Option<f64> {
    let (number, factor) = if let Some(n) = value.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = value.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = value.strip_suffix('s') {
        (n, 1000.0)
    } else {
        return None;
    };
    number.parse::<f64>().ok().map(|n| n * factor)
}

/// nginx serving a folder over TLS 1.3 (as tfreg does), with the certificate the registry
/// serves and no access log (tfreg logs no success at its default level): the static files
/// the registry's answers are compared with. Stopped when dropped.
pub struct Nginx {
    /// `https://127.0.0.1:PORT`.
    pub url: String,
    child: Child,
    _dir: TempDir,
}

impl Nginx {
    /// Serves `root` on a free port with `cert` and `key`.
    pub fn start(root: &Path, cert: &Path, key: &Path) -> Nginx {
        Self::start_with(root, cert, key, "")
    }

    /// As [`Nginx::start`], with more directives in its `server` block (`locations`: for
    /// example a `location = /path { return 204; }` twin of an answer without a body).
    pub fn start_with(root: &Path, cert: &Path, key: &Path, locations: &str) -> Nginx {
        require(
            "nginx",
            "install it from Debian: sudo apt-get install nginx-light",
        );
        let dir = TempDir::new().unwrap();
        let port = free_port();
        let conf = dir.path().join("nginx.conf");
        let config = format!(
            r#"daemon off;
worker_processes auto;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {dir};
  proxy_temp_path {dir};
  fastcgi_temp_path {dir};
  uwsgi_temp_path {dir};
  scgi_temp_path {dir};
  default_type application/json;
  keepalive_requests 1000000;
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    ssl_protocols TLSv1.3;
    root {root};
    location / {{ try_files $uri =404; }}
    {locations}
  }}
}}
"#,
            dir = dir.path().display(),
            cert = cert.display(),
            key = key.display(),
            root = root.display(),
        );
        std::fs::write(&conf, config).unwrap();
        let child = Command::new("nginx")
            .args([
                "-c",
                conf.to_str().unwrap(),
                "-p",
                dir.path().to_str().unwrap(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        let up = wait_until(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(up, "nginx did not listen on port {port}");
        Nginx {
            url: format!("https://127.0.0.1:{port}"),
            child,
            _dir: dir,
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGQUIT: a graceful stop of the master and its workers.
        let _ = Command::new("kill")
            .args(["-QUIT", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// A process's peak resident memory so far (`VmHWM`), in MiB.
pub fn peak_memory_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Runs `command`, sampling its peak memory until it exits; returns its wall time and peak
/// memory (MiB).
pub fn run_measured(command: &mut Command) -> (Duration, f64) {
    let started = std::time::Instant::now();
    let mut child = command
        .stdout(Stdio::null())
        .spawn()
        .expect("the command starts");
    let mut peak: f64 = 0.0;
    loop {
        if let Some(mib) = peak_memory_mib(child.id()) {
            peak = peak.max(mib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{command:?} failed");
            return (started.elapsed(), peak);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The machine, in one line: CPU model, cores, memory, kernel.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|k| k.parse::<f64>().ok())
        })
        .map_or("?".into(), |kib| {
            format!("{:.0} GiB", kib / 1024.0 / 1024.0)
        });
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_owned();
    format!("{cpu}, {cores} cores, {memory} RAM, Linux {kernel}")
}

/// A tool's version line (`wrk -v`, `nginx -v`).
pub fn version_of(tool: &str, flag: &str) -> String {
    let output = Command::new(tool).arg(flag).output();
    let text = output
        .map(|o| {
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
        })
        .unwrap_or_default();
    text.lines().next().unwrap_or("").trim().to_owned()
}

/// Where `make bench` writes its report.
pub fn report_path() -> PathBuf {
    crate::workspace_root().join("BENCHMARKS.md")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrk_reports_are_read() {
        let report = "Running 5s test @ https://127.0.0.1:1/\n  2 threads and 64 connections\n  Thread Stats   Avg      Stdev     Max   +/- Stdev\n    Latency     1.20ms  300.00us   9.00ms   90.00%\n  Latency Distribution\n     50%  812.00us\n     75%    1.10ms\n     90%    1.50ms\n     99%    2.31ms\n  100000 requests in 5.00s, 20.00MB read\n  Non-2xx or 3xx responses: 3\nRequests/sec:  20000.50\nTransfer/sec:      4.00MB\n";
        let load = parse_wrk(report).unwrap();
        assert_eq!(load.requests_per_sec, 20000.5);
        assert!((load.p50_ms - 0.812).abs() < 1e-9);
        assert!((load.p99_ms - 2.31).abs() < 1e-9);
        assert_eq!(load.errors, 3);
        assert!(parse_wrk("garbage").is_none());
    }
}
