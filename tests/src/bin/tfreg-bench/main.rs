//! `make bench`: measures tfreg side by side with baselines in one run, and writes
//! `BENCHMARKS.md` (the machine, the commands, raw figures, ratios, and each target met or
//! missed), and the README's performance lines from the same targets
//! (`tfreg_e2e::bench::targets`). Release builds; `tfreg-bench --quick` shortens every run
//! (for trying it out; it writes `build/BENCHMARKS-quick.md`, not the report, and leaves the
//! README alone).
//!
//! 1. API throughput and latency against nginx serving the same bytes over TLS, with 1 and
//!    with 10,001 stored tokens; request logging at `info` against `warn`.
//! 2. Pages against the versions endpoint.
//! 3. Scale: versions and download latency over module and provider sizes, 5,000 modules,
//!    the time from start to serving, the first index against the floor of reading and
//!    hashing every byte once, a restart, and peak memory; with `--large-index`, the same
//!    ratio over 1 GB of provider packages; and the wide shape of a growing team's registry
//!    (issue 46, `tfreg_e2e::wide`): its first index against the floor, the files per second
//!    of its first and last thousand module archives, and a publish over it against one over
//!    100 files.
//! 4. The provider hashing of the indexer against `unzip -p | sha256sum`, and its memory.
//! 5. The functions' cold starts (`tfreg-coldstart`), and their zips' sizes.
//! 6. The deployed stack's DynamoDB and S3 calls per API request, counted at moto.
//! 7. Sign-in starts: one before and after a flood of 20,000 or more from one client.
//! 8. Bulk publishing on the deployed stack: events/s of the indexer function over counts
//!    of one module's versions (`--bulk-10k` adds 10,000).
//!
//! `--only=api|scale|index|wide|hashing|coldstart|cost|signin|bulk` runs one part (into the quick
//! report). `--readme` measures nothing: it writes the README's performance lines from
//! `BENCHMARKS.md`'s targets table as it stands (after a part's figures were spliced in by
//! hand).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use tfreg_e2e::bench::targets::{parse_targets, readme_with_targets, targets_table, Target};
use tfreg_e2e::bench::{
    machine, peak_memory_mib, report_path, require, run_measured, version_of, wrk, Load, LoadShape,
    Nginx,
};
use tfreg_e2e::{publish, tar_gz, Gpg, Server, TempDir};

mod answers;
mod api;
mod bulk;
mod first_index;
mod parts;
mod scale;
mod wide;

const HOST: &str = "registry.example.test";

struct Bench {
    quick: bool,
    /// The one part to run (`--only=`), writing the quick report.
    only: Option<String>,
    report: String,
    /// Targets, met or missed, in the order measured.
    targets: Vec<Target>,
}

fn main() {
    if std::env::args().any(|a| a == "--readme") {
        let report = std::fs::read_to_string(report_path()).unwrap();
        let targets = parse_targets(&report).unwrap_or_else(|e| panic!("BENCHMARKS.md: {e}"));
        write_readme(&targets);
        return;
    }
    if let Some(dir) =
        std::env::args().find_map(|a| a.strip_prefix("--write-wide=").map(str::to_owned))
    {
        // The wide fixture alone, to try the first index on by hand.
        let shape = if std::env::args().any(|a| a == "--deep") {
            tfreg_e2e::wide::Wide::DEEP
        } else {
            tfreg_e2e::wide::Wide::FULL
        };
        tfreg_e2e::wide::write(Path::new(&dir), shape);
        println!("{} files written to {dir}", shape.files());
        return;
    }
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
    let parts: [(&str, Part); 9] = [
        ("api", Bench::api),
        ("scale", Bench::scale),
        ("index", Bench::large_index),
        ("wide", Bench::wide),
        ("hashing", Bench::hashing),
        ("coldstart", Bench::cold_start),
        ("cost", Bench::request_cost),
        ("signin", Bench::sign_in_flood),
        ("bulk", Bench::bulk),
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
const ENDPOINTS: [(&str, &str); 7] = [
    ("discovery", "/.well-known/terraform.json"),
    ("module versions", "/v1/modules/acme/network/aws/versions"),
    (
        "module download",
        "/v1/modules/acme/network/aws/1.0.0/download",
    ),
    ("provider versions", "/v1/providers/acme/widget/versions"),
    (
        "provider download",
        "/v1/providers/acme/widget/1.0.0/download/linux/amd64",
    ),
    (
        "mirror index",
        "/v1/mirror/registry.example.test/acme/widget/index.json",
    ),
    (
        "mirror version",
        "/v1/mirror/registry.example.test/acme/widget/1.0.0.json",
    ),
];

/// The endpoint named `name`.
fn endpoint(name: &str) -> (&'static str, &'static str) {
    *ENDPOINTS
        .iter()
        .find(|(n, _)| *n == name)
        .expect("a known endpoint")
}

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
        self.targets.push(Target::new(what, met, &detail));
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

    fn write(&self, took: Duration) {
        let mut out = String::new();
        let _ = write!(
            out,
            "# Benchmarks\n\nWritten by `make bench` ({}) on {}; wrk {}. Every comparison ran side by side in this one run: absolute figures drift between machines and runs, ratios much less. The test command depends on none of this.\n\n{}",
            if self.quick { "`--quick`: short runs, small sizes" } else { "full" },
            machine(),
            version_of("wrk", "-v").split_whitespace().nth(1).unwrap_or("?"),
            targets_table(&self.targets),
        );
        let _ = write!(
            out,
            "\n{}{}\nTook {:.0} s.\n",
            self.report,
            include_str!("../../../bench/analysis.md"),
            took.as_secs_f64()
        );
        // A quick run's figures are not the report's: they go to the build folder, and the
        // README keeps the full run's.
        let full = !self.quick && self.only.is_none();
        let path = match full {
            false => tfreg_e2e::workspace_root().join("build/BENCHMARKS-quick.md"),
            true => report_path(),
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, out).unwrap();
        println!("wrote {}", path.display());
        if full {
            write_readme(&self.targets);
        }
    }
}

/// Writes the README's performance lines from `targets`.
fn write_readme(targets: &[Target]) {
    let readme = tfreg_e2e::workspace_root().join("README.md");
    let text = std::fs::read_to_string(&readme).unwrap();
    let text = readme_with_targets(&text, targets)
        .unwrap_or_else(|e| panic!("README.md's performance lines: {e}"));
    std::fs::write(&readme, text).unwrap();
    println!("wrote the performance lines of {}", readme.display());
}

/// Each server's median requests/s and p99 (ms) on `path` (each server by its base URL),
/// measured in turns over `rounds` rounds, each round starting with the next server, so
/// drift between processes and over the run falls on all of them alike.
fn in_turns(
    servers: &[&str],
    path: &str,
    auth: &[String],
    shape: LoadShape,
    rounds: usize,
) -> Vec<(f64, f64)> {
    let mut rates = vec![Vec::new(); servers.len()];
    let mut p99s = vec![Vec::new(); servers.len()];
    for round in 0..rounds {
        for step in 0..servers.len() {
            let i = (step + round) % servers.len();
            let load = wrk(&format!("{}{path}", servers[i]), auth, shape);
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

/// Publishes a signed release of `acme/TYPE` for `platforms` (signed by
/// `tfreg_e2e::wide::SIGNER`, `release@example.test`).
fn publish_provider(data: &Path, gpg: &Gpg, type_: &str, version: &str, platforms: &[&str]) {
    tfreg_e2e::wide::publish_signed_release(
        data,
        gpg,
        &format!("acme/{type_}"),
        version,
        platforms,
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
