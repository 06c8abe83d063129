//! `make bench`: measures tfreg side by side with baselines in one run, and writes
//! `BENCHMARKS.md` (the machine, the commands, raw figures, ratios, and each target met or
//! missed). Release builds; `tfreg-bench --quick` shortens every run (for trying it out;
//! it writes `build/BENCHMARKS-quick.md`, not the report).
//!
//! 1. API throughput and latency against nginx serving the same bytes over TLS, with 1 and
//!    with 10,001 stored tokens; request logging at `info` against `warn`.
//! 2. Pages against the versions endpoint.
//! 3. Scale: versions and download latency over module and provider sizes, 5,000 modules,
//!    the time from start to serving, a restart, and peak memory.
//! 4. The provider hashing of the indexer against `unzip -p | sha256sum`, and its memory.
//! 5. The functions' cold starts (`tfreg-coldstart`), and their zips' sizes.
//! 6. The deployed stack's DynamoDB and S3 calls per API request, counted at moto.
//! 7. Sign-in starts: one before and after a flood of 20,000 or more from one client.
//!
//! `--only=api|scale|hashing|coldstart|cost|signin` runs one part (into the quick report).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use tfreg_e2e::bench::{
    machine, peak_memory_mib, report_path, require, run_measured, version_of, wrk, Load, LoadShape,
    Nginx,
};
use tfreg_e2e::{provider_release, publish, tar_gz, Gpg, Server, TempDir};

const HOST: &str = "registry.example.test";

struct Bench {
    quick: bool,
    /// The one part to run (`--only=`), writing the quick report.
    only: Option<String>,
    report: String,
    /// Targets, as `(what, met, detail)`.
    targets: Vec<(String, bool, String)>,
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let only = std::env::args().find_map(|a| a.strip_prefix("--only=").map(str::to_owned));
    require("wrk", "install it from Debian: sudo apt-get install wrk");
    let mut bench = Bench {
        quick,
        only,
        report: String::new(),
        targets: Vec::new(),
    };
    let started = Instant::now();
    let parts: [(&str, Part); 6] = [
        ("api", Bench::api),
        ("scale", Bench::scale),
        ("hashing", Bench::hashing),
        ("coldstart", Bench::cold_start),
        ("cost", Bench::request_cost),
        ("signin", Bench::sign_in_flood),
    ];
    if let Some(only) = &bench.only {
        let names: Vec<&str> = parts.iter().map(|(name, _)| *name).collect();
        assert!(
            names.contains(&only.as_str()),
            "--only= takes one of {}",
            names.join(", ")
        );
    }
    for (name, part) in parts {
        if bench.only.as_deref().is_none_or(|only| only == name) {
            part(&mut bench);
        }
    }
    bench.write(started.elapsed());
}

/// One part of the run.
type Part = fn(&mut Bench);

/// The API's endpoints, by name and path.
const ENDPOINTS: [(&str, &str); 5] = [
    ("discovery", "/.well-known/terraform.json"),
    ("module versions", "/v1/modules/acme/network/aws/versions"),
    (
        "module download",
        "/v1/modules/acme/network/aws/1.0.0/download",
    ),
    (
        "provider download",
        "/v1/providers/acme/widget/1.0.0/download/linux/amd64",
    ),
    (
        "mirror version",
        "/v1/mirror/registry.example.test/acme/widget/1.0.0.json",
    ),
];

impl Bench {
    fn shape(&self, connections: u32) -> LoadShape {
        LoadShape {
            connections,
            threads: 2,
            seconds: if self.quick { 2 } else { 8 },
        }
    }

    fn target(&mut self, what: &str, met: bool, detail: String) {
        println!("{} {what}: {detail}", if met { "met   " } else { "MISSED" });
        self.targets.push((what.to_owned(), met, detail));
    }

    /// A registry with one module and one signed provider release, private.
    fn small_registry(&self) -> (TempDir, Gpg) {
        let data = TempDir::new().unwrap();
        let readme = "# Network\n\nA network for **acme**.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n";
        let main = "variable \"cidr\" {\n  type = string\n  description = \"CIDR\"\n}\noutput \"id\" { value = \"x\" }\n";
        publish(
            data.path(),
            "modules/acme/network/aws/1.0.0.tar.gz",
            &tar_gz(&[("main.tf", main), ("README.md", readme)]),
        );
        let gpg = Gpg::new();
        gpg.generate("release@example.test", "rsa2048", "never", None);
        publish_provider(
            data.path(),
            &gpg,
            "widget",
            "1.0.0",
            &["linux_amd64", "darwin_arm64"],
        );
        publish(
            data.path(),
            "keys/acme/release.asc",
            &gpg.export("release@example.test"),
        );
        (data, gpg)
    }

    fn api(&mut self) {
        println!("== API throughput against nginx");
        let (data, _gpg) = self.small_registry();
        let extra = ["--hostname", HOST];
        let server = Server::start_with_env(data.path(), &extra, &default_log());
        let token = server.create_token(&[]);
        let auth = vec![format!("Authorization: Bearer {token}")];
        // The same bytes as static files, for nginx.
        let root = TempDir::new().unwrap();
        let client = server.client();
        for (_, path) in ENDPOINTS
            .iter()
            .chain(&[("", "/"), ("", "/modules/acme/network/aws")])
        {
            let response = client
                .get(format!("{}{path}", server.url))
                .bearer_auth(&token)
                .send()
                .unwrap();
            assert!(
                response.status().is_success(),
                "{path}: {}",
                response.status()
            );
            let body = response.bytes().unwrap();
            let file = match *path {
                "/" => root.path().join("index.html"),
                p => root.path().join(p.trim_start_matches('/')),
            };
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, body).unwrap();
        }
        let key = data.path().join(".tfreg/tls/key.pem");
        let nginx = Nginx::start(root.path(), &server.cert, &key);
        let shape = self.shape(64);

        let mut table = String::from(
            "| endpoint | tfreg req/s | p50 | p99 | nginx req/s | p50 | p99 | tfreg ÷ nginx |\n|---|---|---|---|---|---|---|---|\n",
        );
        let mut versions = None;
        let mut ratios = Vec::new();
        for (name, path) in ENDPOINTS {
            let ours = wrk(&format!("{}{path}", server.url), &auth, shape);
            let theirs = wrk(&format!("{}{path}", nginx.url), &auth, shape);
            assert_eq!(ours.errors, 0, "{name}: tfreg answered errors");
            let ratio = ours.requests_per_sec / theirs.requests_per_sec;
            ratios.push((name, ratio, ours.p99_ms, ours.requests_per_sec));
            let _ = writeln!(
                table,
                "| {name} | {:.0} | {:.2} ms | {:.2} ms | {:.0} | {:.2} ms | {:.2} ms | {ratio:.2}× |",
                ours.requests_per_sec, ours.p50_ms, ours.p99_ms, theirs.requests_per_sec, theirs.p50_ms, theirs.p99_ms
            );
            if path.ends_with("/versions") {
                versions = Some(ours);
            }
        }
        let versions = versions.unwrap();

        // Request logging: info (one line a request) against warn.
        // Request logging: three servers side by side, measured in turns, medians of three
        // rounds (one server's runs drift by a quarter between processes on this machine).
        let servers: Vec<Server> = ["warn", "info", "info,tfreg::access=debug"]
            .iter()
            .map(|level| {
                Server::start_with_env(data.path(), &extra, &[("RUST_LOG", level.to_string())])
            })
            .collect();
        let medians = in_turns(&servers, ENDPOINTS[1].1, &auth, shape);
        drop(servers);
        let (quiet, logged, chatty) = (medians[0].0, medians[1].0, medians[2].0);
        let logging_cost = 1.0 - logged / quiet;
        let every_line_cost = 1.0 - chatty / quiet;

        // Where the time goes: the same endpoints on a public server (no token check).
        let mut public = extra.to_vec();
        public.push("--public");
        let public_server = Server::start_with_env(data.path(), &public, &default_log());
        let mut costs = String::from(
            "| endpoint | public (no token) req/s | with a token req/s | token check's share |\n|---|---|---|---|\n",
        );
        for (name, path) in [ENDPOINTS[1], ENDPOINTS[3], ENDPOINTS[4]] {
            let open = wrk(&format!("{}{path}", public_server.url), &[], shape);
            let with = ratios.iter().find(|r| r.0 == name).map_or(0.0, |r| r.3);
            let _ = writeln!(
                costs,
                "| {name} | {:.0} | {with:.0} | {:.0} % |",
                open.requests_per_sec,
                (1.0 - with / open.requests_per_sec) * 100.0
            );
        }
        drop(public_server);

        // Pages against the versions endpoint.
        let mut pages =
            String::from("| page | req/s | p50 | p99 | versions ÷ page |\n|---|---|---|---|---|\n");
        let mut worst_page: f64 = 0.0;
        for (name, path) in [
            ("catalogue", "/"),
            ("module page", "/modules/acme/network/aws"),
        ] {
            let load = wrk(&format!("{}{path}", server.url), &auth, shape);
            assert_eq!(load.errors, 0, "{name}");
            let slower = versions.requests_per_sec / load.requests_per_sec;
            worst_page = worst_page.max(slower);
            let _ = writeln!(
                pages,
                "| {name} | {:.0} | {:.2} ms | {:.2} ms | {slower:.2}× |",
                load.requests_per_sec, load.p50_ms, load.p99_ms
            );
        }
        drop(server);

        // 10,000 more stored tokens: a copy of the data directory whose token file holds
        // them, served beside the original, both measured in turns (medians of three rounds).
        let crowded = TempDir::new().unwrap();
        let copied = Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", data.path().display()))
            .arg(crowded.path())
            .status()
            .unwrap();
        assert!(copied.success(), "cp -a of the data directory");
        add_tokens(&crowded.path().join(".tfreg/tokens.json"), 10_000);
        let pair = [
            Server::start_with_env(data.path(), &extra, &default_log()),
            Server::start_with_env(crowded.path(), &extra, &default_log()),
        ];
        let mut many = String::from(
            "| endpoint | req/s with 1 token | with 10,001 tokens | p99 with 10,001 | ratio |\n|---|---|---|---|---|\n",
        );
        let mut worst_many: f64 = f64::MAX;
        for (name, path) in [ENDPOINTS[1], ENDPOINTS[3]] {
            let medians = in_turns(&pair, path, &auth, shape);
            let ((one, _), (crowd, crowd_p99)) = (medians[0], medians[1]);
            let share = crowd / one;
            worst_many = worst_many.min(share);
            let _ = writeln!(
                many,
                "| {name} | {one:.0} | {crowd:.0} | {crowd_p99:.2} ms | {share:.2}× |"
            );
        }
        drop(pair);

        let _ = write!(
            self.report,
            "## 1. API throughput and latency\n\n`wrk -t{} -c{} -d{}s --latency` with a token, against `tfreg serve` (release build, its self-signed certificate, `RUST_LOG=info`) and against nginx {} serving each answer's bytes as a static file over TLS with the same certificate (access log on, buffered), one after the other on this machine; wrk shares its 2 cores with the server.\n\n{table}\n",
            shape.threads,
            shape.connections,
            shape.seconds,
            version_of("nginx", "-v").trim_start_matches("nginx version: "),
        );
        let _ = write!(
            self.report,
            "Where the time goes: discovery is TLS, HTTP and routing alone (no token, no index). The same endpoints on a public server, against the figures above:\n\n{costs}\nWith 10,001 tokens in the token file (the same token used; two servers side by side, one over a copy of the data directory with 10,000 more tokens, in turns, medians of three rounds):\n\n{many}\nRequest logging (three servers side by side, in turns, the median of three rounds each): module versions served {logged:.0} req/s at `RUST_LOG=info` (the default: refusals and failures logged, successes at `debug`) and {:.0} at `warn`: logging at `info` costs {:.1} % of throughput. With a line for every request (`RUST_LOG=info,tfreg::access=debug`), {:.0} req/s: {:.1} %.\n\n",
            quiet,
            logging_cost * 100.0,
            chatty,
            every_line_cost * 100.0
        );
        let _ = write!(
            self.report,
            "## 2. Pages\n\nThe catalogue and a module page, with the token as a bearer header, against module versions in the same run:\n\n{pages}\n"
        );
        let worst = ratios.iter().map(|r| r.1).fold(f64::MAX, f64::min);
        let worst_p99 = ratios.iter().map(|r| r.2).fold(0.0, f64::max);
        self.target(
            "API ≥ 0.8× nginx on every endpoint",
            worst >= 0.8,
            format!("lowest ratio {worst:.2}×"),
        );
        self.target(
            "API p99 < 5 ms",
            worst_p99 < 5.0,
            format!("highest p99 {worst_p99:.2} ms at 64 connections"),
        );
        self.target(
            "10,000 stored tokens change nothing",
            worst_many >= 0.9,
            format!("lowest throughput with them {worst_many:.2}× of one token's"),
        );
        self.target(
            "request logging at info costs ≤ 5 %",
            logging_cost <= 0.05,
            format!("{:.1} %", logging_cost * 100.0),
        );
        self.target(
            "pages within 2× of versions",
            worst_page <= 2.0,
            format!("slowest page {worst_page:.2}× slower"),
        );
    }

    fn scale(&mut self) {
        println!("== Scale");
        let sizes: Vec<usize> = if self.quick {
            vec![10, 100, 1000]
        } else {
            vec![10, 100, 1_000, 10_000]
        };
        let provider_sizes: Vec<usize> = if self.quick {
            vec![10, 100]
        } else {
            vec![10, 100, 1_000]
        };
        let listed_modules = if self.quick { 500 } else { 5_000 };
        let data = TempDir::new().unwrap();
        let archive = tar_gz(&[("main.tf", "output \"v\" { value = 1 }\n")]);
        let mut files = 0usize;
        for size in &sizes {
            for v in 0..*size {
                let key = format!("modules/acme/s{size}/aws/1.{}.{}.tar.gz", v / 100, v % 100);
                publish(data.path(), &key, &archive);
                files += 1;
            }
        }
        for m in 0..listed_modules {
            publish(
                data.path(),
                &format!("modules/acme/m{m:05}/aws/1.0.0.tar.gz"),
                &archive,
            );
            files += 1;
        }
        let gpg = Gpg::new();
        gpg.generate("release@example.test", "rsa2048", "never", None);
        let platforms = tfreg_e2e::scale::PLATFORMS;
        for size in &provider_sizes {
            for v in 0..*size {
                let version = format!("1.{}.{}", v / 100, v % 100);
                publish_provider(data.path(), &gpg, &format!("p{size}"), &version, &platforms);
                files += platforms.len() + 2;
            }
        }
        publish(
            data.path(),
            "keys/acme/release.asc",
            &gpg.export("release@example.test"),
        );
        println!("   {files} files published; first start");

        let extra = ["--hostname", HOST];
        let started = Instant::now();
        let server = Server::start_with_env(data.path(), &extra, &default_log());
        let first_start = started.elapsed();
        let token = server.create_token(&[]);
        // The server answers before the first index ends when it takes over 30 s: wait until
        // the largest module and provider are whole.
        let client = server.client();
        let count = |path: &str, field: &str| -> usize {
            let Ok(response) = client
                .get(format!("{}{path}", server.url))
                .bearer_auth(&token)
                .send()
            else {
                return 0;
            };
            let json: serde_json::Value = response.json().unwrap_or_default();
            match field {
                "modules" => json["modules"][0]["versions"]
                    .as_array()
                    .map_or(0, Vec::len),
                _ => json["versions"].as_array().map_or(0, Vec::len),
            }
        };
        let (largest, largest_provider) = (*sizes.last().unwrap(), *provider_sizes.last().unwrap());
        let whole = tfreg_e2e::wait_until(Duration::from_secs(3600), || {
            count(
                &format!("/v1/modules/acme/s{largest}/aws/versions"),
                "modules",
            ) == largest
                && count(
                    &format!("/v1/providers/acme/p{largest_provider}/versions"),
                    "providers",
                ) == largest_provider
        });
        assert!(whole, "the first index did not finish within an hour");
        let fully_indexed = started.elapsed();
        println!("   indexed in {:.1} s", fully_indexed.as_secs_f64());
        let auth = vec![format!("Authorization: Bearer {token}")];
        let shape = LoadShape {
            connections: 8,
            threads: 1,
            seconds: if self.quick { 2 } else { 4 },
        };
        let mut table = String::from(
            "| what | size | answer bytes | req/s | p50 | p99 |\n|---|---|---|---|---|---|\n",
        );
        let mut versions_10k = None;
        let mut measure = |what: &str, size: String, path: String| -> Load {
            let bytes = client
                .get(format!("{}{path}", server.url))
                .bearer_auth(&token)
                .send()
                .unwrap()
                .bytes()
                .unwrap()
                .len();
            let load = wrk(&format!("{}{path}", server.url), &auth, shape);
            assert_eq!(load.errors, 0, "{what} {size}");
            let _ = writeln!(
                table,
                "| {what} | {size} | {bytes} | {:.0} | {:.2} ms | {:.2} ms |",
                load.requests_per_sec, load.p50_ms, load.p99_ms
            );
            load
        };
        for size in &sizes {
            let load = measure(
                "module versions",
                format!("{size} versions"),
                format!("/v1/modules/acme/s{size}/aws/versions"),
            );
            if *size == 10_000 {
                versions_10k = Some(load);
            }
            measure(
                "module download",
                format!("{size} versions"),
                format!("/v1/modules/acme/s{size}/aws/1.0.5/download"),
            );
        }
        for size in &provider_sizes {
            measure(
                "provider versions",
                format!("{size} × 6 platforms"),
                format!("/v1/providers/acme/p{size}/versions"),
            );
            measure(
                "provider download",
                format!("{size} × 6 platforms"),
                format!("/v1/providers/acme/p{size}/1.0.5/download/linux/amd64"),
            );
        }
        measure(
            "module search",
            format!("{listed_modules} modules"),
            "/v1/modules/search?q=m00042".into(),
        );
        measure(
            "catalogue page",
            format!("{listed_modules} modules"),
            "/".into(),
        );
        let peak = peak_memory_mib(server.pid()).unwrap_or(0.0);
        // The index is saved once the watcher is idle; then a graceful stop.
        let saved = data.path().join(".tfreg/index.json");
        assert!(
            tfreg_e2e::wait_until(Duration::from_secs(120), || saved.exists()),
            "the index was not saved"
        );
        std::thread::sleep(Duration::from_secs(3));
        let mut server = server;
        assert!(server.terminate(Duration::from_secs(30)));
        drop(server);

        // A restart over the same data: nothing changed, so nothing should be re-hashed.
        let started = Instant::now();
        let server = Server::start_with_env(data.path(), &extra, &default_log());
        let restart = started.elapsed();
        let restart_peak = peak_memory_mib(server.pid()).unwrap_or(0.0);
        drop(server);

        let _ = write!(
            self.report,
            "## 3. Scale\n\nOne data directory holding modules with 10 to {} versions, {listed_modules} more modules, and signed providers with 10 to {} versions × 6 platforms: {files} files. `wrk -t1 -c8 -d{}s`, with a token.\n\n{table}\n| start | time to serving | peak memory |\n|---|---|---|\n| first start (indexes every file; serving after at most 30 s, whole after {:.1} s) | {:.1} s | {peak:.0} MiB |\n| restart, nothing changed | {:.2} s | {restart_peak:.0} MiB |\n\n",
            sizes.last().unwrap(),
            provider_sizes.last().unwrap(),
            shape.seconds,
            fully_indexed.as_secs_f64(),
            first_start.as_secs_f64(),
            restart.as_secs_f64(),
        );
        if let Some(load) = versions_10k {
            self.target(
                "versions of 10,000 versions < 50 ms",
                load.p99_ms < 50.0,
                format!("p50 {:.2} ms, p99 {:.2} ms", load.p50_ms, load.p99_ms),
            );
        }
        self.target(
            "a restart serves within 1 s",
            restart < Duration::from_secs(1),
            format!("{:.2} s over {files} files", restart.as_secs_f64()),
        );
    }

    fn hashing(&mut self) {
        println!("== Provider hashing");
        let dir = TempDir::new().unwrap();
        let sizes: &[u64] = if self.quick { &[50] } else { &[50, 500] };
        let tfreg = tfreg_e2e::tfreg_bin();
        let mut table = String::from("| package | `tfreg hash` (`h1:` + `zh:`) | peak memory | `unzip -p \\| sha256sum` | tfreg ÷ baseline speed |\n|---|---|---|---|---|\n");
        let mut worst_speed: f64 = f64::MAX;
        let mut worst_memory: f64 = 0.0;
        for mib in sizes {
            let zip = dir
                .path()
                .join(format!("terraform-provider-big_{mib}mb.zip"));
            big_zip(&zip, mib * 1024 * 1024);
            let (ours, memory) = run_measured(Command::new(&tfreg).arg("hash").arg(&zip));
            let (baseline, _) = run_measured(
                Command::new("sh")
                    .arg("-c")
                    .arg(format!("unzip -p '{}' | sha256sum", zip.display())),
            );
            let speed = baseline.as_secs_f64() / ours.as_secs_f64();
            worst_speed = worst_speed.min(speed);
            worst_memory = worst_memory.max(memory);
            let _ = writeln!(
                table,
                "| {mib} MB of data, deflated ({} MB zip) | {:.2} s | {memory:.0} MiB | {:.2} s | {speed:.2}× |",
                std::fs::metadata(&zip).unwrap().len() / 1_000_000,
                ours.as_secs_f64(),
                baseline.as_secs_f64()
            );
        }
        let _ = write!(
            self.report,
            "## 4. Indexer: hashing a provider package\n\n`tfreg hash` computes what the indexer computes for a package (`zh:`, the SHA-256 of the zip, beside `h1:`, the hash of its unpacked files), with the indexer's code and limits. The baseline reads the zip and hashes its contents once with standard tools.\n\n{table}\n"
        );
        self.target(
            "hashing ≥ 1.0× `unzip -p | sha256sum`",
            worst_speed >= 1.0,
            format!("slowest {worst_speed:.2}×"),
        );
        self.target(
            "hashing memory < 64 MB, flat",
            worst_memory < 64.0,
            format!("peak {worst_memory:.0} MiB"),
        );
    }

    fn cold_start(&mut self) {
        println!("== Cold starts");
        let coldstart = tfreg_e2e::tfreg_bin().with_file_name("tfreg-coldstart");
        let runs = if self.quick { "5" } else { "25" };
        let output = Command::new(&coldstart)
            .arg(runs)
            .output()
            .expect("tfreg-coldstart runs");
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let mut zips = String::new();
        let lambda = tfreg_e2e::workspace_root().join("build/lambda");
        for function in tfreg_lambda::Function::ALL.map(tfreg_lambda::Function::name) {
            let zip = lambda.join(function).join("bootstrap.zip");
            if let Ok(meta) = std::fs::metadata(&zip) {
                let _ = writeln!(
                    zips,
                    "| {function} | {:.2} MB |",
                    meta.len() as f64 / 1_000_000.0
                );
            }
        }
        let _ = write!(
            self.report,
            "## 5. Cold starts\n\n`tfreg-coldstart {runs}`: each function binary (release, x86_64 here) from exec to its first poll of a stand-in Lambda Runtime API, the median of {runs} runs, next to a hello-world `lambda_http` binary, interleaved:\n\n```\n{text}```\n\n"
        );
        if zips.is_empty() {
            self.report
                .push_str("Zip sizes: run `make build` first (`make test` builds them).\n\n");
        } else {
            let _ = write!(self.report, "The deployable arm64 zips (`make build`):\n\n| function | bootstrap.zip |\n|---|---|\n{zips}\n");
        }
        self.target(
            "cold start ≤ 2× hello world",
            output.status.success(),
            text.lines().last().unwrap_or("").to_owned(),
        );
    }

    /// A sign-in start (`GET /oauth/sign-in`) fresh, and again after a flood of at least
    /// 20,000 others from one client that never came back: starts store nothing, so the
    /// later ones cost what the first did.
    fn sign_in_flood(&mut self) {
        println!("== Sign-in starts under a flood");
        let provider = tfreg_e2e::OidcProvider::start();
        let data = TempDir::new().unwrap();
        let identity = data.path().join("identity.json");
        let document = format!(
            r#"{{"sign_in": {{"issuer": "{}", "client_id": "tfreg", "namespaces": {{"everyone": ["*"]}}}}}}"#,
            provider.issuer
        );
        std::fs::write(&identity, document).unwrap();
        let server = Server::start_with_env(
            data.path(),
            &["--identity", identity.to_str().unwrap()],
            &[("TFREG_OIDC_CLIENT_SECRET", "secret".to_owned())],
        );
        let url = format!("{}/oauth/sign-in?next=/", server.url);
        let shape = self.shape(16);
        let first = wrk(&url, &[], shape);
        let mut flooded = 0.0;
        while flooded < 20_000.0 {
            flooded += wrk(&url, &[], shape).requests_per_sec * f64::from(shape.seconds);
        }
        let after = wrk(&url, &[], shape);
        let grants = walkdir_count(&data.path().join(".tfreg/grants"));
        let ratio = after.requests_per_sec / first.requests_per_sec;
        let _ = write!(
            self.report,
            "## Sign-in starts under a flood

`GET /oauth/sign-in` with wrk ({} connections, {} s), before and after {flooded:.0} more from the same client that never came back. Records stored for them: {grants}.

| | requests/s | p50 | p99 | refused |
|---|---|---|---|---|
| first | {:.0} | {:.2} ms | {:.2} ms | {} |
| after the flood | {:.0} | {:.2} ms | {:.2} ms | {} |

",
            shape.connections,
            shape.seconds,
            first.requests_per_sec,
            first.p50_ms,
            first.p99_ms,
            first.errors,
            after.requests_per_sec,
            after.p50_ms,
            after.p99_ms,
            after.errors,
        );
        self.target(
            "a sign-in start after 20,000 others that never came back: as fast as the first (≥ 0.8×), none refused, nothing stored",
            ratio >= 0.8 && after.errors == 0 && grants == 0,
            format!(
                "{ratio:.2}× the first's requests/s ({:.0} against {:.0}), {} refused, {grants} records stored, after {flooded:.0} starts",
                after.requests_per_sec, first.requests_per_sec, after.errors
            ),
        );
    }

    /// DynamoDB and S3 calls per API request of the deployed stack, counted at moto.
    fn request_cost(&mut self) {
        use tfreg_e2e::counting::{cost, published, Call, REQUESTS};
        use tfreg_e2e::stack::StackOptions;
        println!("== AWS request cost");
        fn cell(calls: &[Call]) -> String {
            if calls.is_empty() {
                return "none".into();
            }
            let bytes: usize = calls.iter().map(|c| c.response_bytes).sum();
            let actions: Vec<&str> = calls.iter().map(|c| c.action.as_str()).collect();
            format!("{} ({} B)", actions.join(" + "), bytes)
        }
        let shapes = [
            (
                "a token, kept (`CacheTtl` 60s, the default)",
                StackOptions::default(),
                true,
            ),
            (
                "a token, not kept (`CacheTtl` 0s)",
                StackOptions {
                    cache_ttl: Some("0s".into()),
                    ..StackOptions::default()
                },
                true,
            ),
            (
                "public, no token",
                StackOptions {
                    public: true,
                    ..StackOptions::default()
                },
                false,
            ),
        ];
        let mut columns: Vec<Vec<(String, String)>> = Vec::new();
        let mut most_warm = 0;
        let mut warm_writes = 0;
        for (i, (_, options, with_token)) in shapes.into_iter().enumerate() {
            let (stack, token) = published(options);
            let token = with_token.then_some(token.as_str());
            let mut column = Vec::new();
            for (name, path) in REQUESTS {
                let (_, first) = cost(&stack, token, path);
                let (status, then) = cost(&stack, token, path);
                assert!(matches!(status, 200 | 204), "{name}: {status}");
                if i == 0 {
                    let dynamodb = then.iter().filter(|c| c.service == "dynamodb").count();
                    most_warm = most_warm.max(dynamodb);
                    warm_writes += then.iter().filter(|c| c.writes()).count();
                }
                column.push((cell(&first), cell(&then)));
            }
            columns.push(column);
        }
        let mut table = String::from("| request | with a token, kept: first | then | with a token, not kept: then | public: then |\n|---|---|---|---|---|\n");
        for (row, (name, _)) in REQUESTS.iter().enumerate() {
            let _ = writeln!(
                table,
                "| {name} | {} | {} | {} | {} |",
                columns[0][row].0, columns[0][row].1, columns[1][row].1, columns[2][row].1
            );
        }
        let _ = write!(
            self.report,
            "## 6. AWS request cost\n\nThe deployed stack on this machine (`tests/src/stack.rs`: the real function binaries, moto for DynamoDB and S3), its functions' calls counted by a proxy in front of moto (`tests/src/counting.rs`), for a registry of two module versions and one signed provider release. Each cell lists the calls one request made and the bytes DynamoDB answered; \"first\" is a function's first request with that token, \"then\" every later one within the cache's time to live. No request calls S3: download URLs are presigned without a call.\n\n{table}\nThe same counts are asserted by the test command (`tests/e2e/request_cost.rs`).\n\n"
        );
        self.target(
            "one DynamoDB round trip per API request",
            most_warm <= 1 && warm_writes == 0,
            format!(
                "at most {most_warm} call per request with a known token, {warm_writes} writes"
            ),
        );
    }

    fn write(&self, took: Duration) {
        let mut out = String::new();
        let _ = write!(
            out,
            "# Benchmarks\n\nWritten by `make bench` ({}) on {}; wrk {}. Every comparison ran side by side in this one run: absolute figures drift between machines and runs, ratios much less. The test command depends on none of this.\n\n## Targets\n\n| target | | measured |\n|---|---|---|\n",
            if self.quick { "`--quick`: short runs, small sizes" } else { "full" },
            machine(),
            version_of("wrk", "-v").split_whitespace().nth(1).unwrap_or("?"),
        );
        for (what, met, detail) in &self.targets {
            let _ = writeln!(
                out,
                "| {what} | {} | {detail} |",
                if *met { "met" } else { "**missed**" }
            );
        }
        let _ = write!(
            out,
            "\n{}{}\nTook {:.0} s.\n",
            self.report,
            include_str!("../../bench/analysis.md"),
            took.as_secs_f64()
        );
        // A quick run's figures are not the report's: they go to the build folder.
        let path = match self.quick || self.only.is_some() {
            true => tfreg_e2e::workspace_root().join("build/BENCHMARKS-quick.md"),
            false => report_path(),
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, out).unwrap();
        println!("wrote {}", path.display());
    }
}

/// Each server's median requests/s and p99 (ms) on `path`, measured in turns over three
/// rounds, each round starting with the next server, so drift between processes and over
/// the run falls on all of them alike.
fn in_turns(servers: &[Server], path: &str, auth: &[String], shape: LoadShape) -> Vec<(f64, f64)> {
    let mut rates = vec![Vec::new(); servers.len()];
    let mut p99s = vec![Vec::new(); servers.len()];
    for round in 0..3 {
        for step in 0..servers.len() {
            let i = (step + round) % servers.len();
            let load = wrk(&format!("{}{path}", servers[i].url), auth, shape);
            assert_eq!(load.errors, 0, "{path}");
            rates[i].push(load.requests_per_sec);
            p99s[i].push(load.p99_ms);
        }
    }
    rates
        .iter_mut()
        .zip(p99s.iter_mut())
        .map(|(rate, p99)| (median(rate), median(p99)))
        .collect()
}

/// The median of `values`.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

/// `tfreg serve`'s own default verbosity (the test helpers log every request).
fn default_log() -> Vec<(&'static str, String)> {
    vec![("RUST_LOG", "info".into())]
}

/// Publishes a signed release of `acme/TYPE` for `platforms`.
fn publish_provider(data: &Path, gpg: &Gpg, type_: &str, version: &str, platforms: &[&str]) {
    let dir = format!("providers/acme/{type_}/{version}");
    let release = provider_release(type_, version, platforms);
    let (sums_name, sums) = release.last().unwrap().clone();
    for (name, content) in release {
        publish(data, &format!("{dir}/{name}"), &content);
    }
    publish(
        data,
        &format!("{dir}/{sums_name}.sig"),
        &gpg.sign("release@example.test", &sums, None),
    );
}

/// Adds `count` tokens (whose secrets nobody keeps) to a token file.
fn add_tokens(file: &Path, count: usize) {
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let now = std::time::SystemTime::now();
    let tokens = json["tokens"].as_array_mut().unwrap();
    for _ in 0..count {
        let new = tfreg_core::tokens::generate(vec![], String::new(), None, now);
        tokens.push(serde_json::to_value(new.record).unwrap());
    }
    std::fs::write(file, json.to_string()).unwrap();
}

/// A provider zip holding one executable of `bytes` bytes of data that deflates about 3:1,
/// as executables do.
fn big_zip(path: &Path, bytes: u64) {
    use std::io::Write;
    let file = std::fs::File::create(path).unwrap();
    let mut writer = zip::ZipWriter::new(std::io::BufWriter::new(file));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(1))
        .unix_permissions(0o755)
        .large_file(bytes >= u32::MAX as u64);
    writer
        .start_file("terraform-provider-big_v1.0.0", options)
        .unwrap();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut chunk = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        for (i, byte) in chunk.iter_mut().enumerate() {
            // Mostly a few repeating values, sometimes noise: compressible like code.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *byte = if state.is_multiple_of(4) {
                state as u8
            } else {
                (i % 16) as u8
            };
        }
        let n = left.min(chunk.len() as u64) as usize;
        writer.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    writer.finish().unwrap();
}

/// The files under `dir`, at any depth (none when it does not exist).
fn walkdir_count(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type().is_ok_and(|t| t.is_dir()) {
            true => walkdir_count(&entry.path()),
            false => 1,
        })
        .sum()
}
