//! The first index against the floor of reading and hashing every byte once: the ratio on
//! the scale fixture (part 3), and, with `--large-index`, on a fixture of 1 GB in 20,004
//! provider packages of incompressible data (it needs that much disk).

use std::io::Write as _;
use std::process::Stdio;

use super::*;

/// The largest ratio of the first index to the read+hash floor the issue allows.
pub(super) const MAX_RATIO: f64 = 3.0;
/// The largest peak memory of a first index.
pub(super) const MAX_PEAK_MIB: f64 = 512.0;

/// The large fixture's shape: releases × platforms packages of `PACKAGE_BYTES` each.
const RELEASES: usize = 3_334;
const PACKAGE_BYTES: usize = 50 * 1024;

/// The time to read every byte of every file in the data directory once and hash it with
/// SHA-256 (`find | xargs cat | sha256sum`), best of three, the state folder left out. The
/// files were just written, so both this and the first index read them from memory.
pub(super) fn read_hash_floor(data: &Path) -> Duration {
    let script = "find \"$1\" -type f -not -path '*/.tfreg/*' -print0 | xargs -0 cat | sha256sum";
    (0..3)
        .map(|_| {
            let started = Instant::now();
            let status = Command::new("sh")
                .args(["-c", script, "floor", data.to_str().unwrap()])
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "the read+hash floor failed");
            started.elapsed()
        })
        .min()
        .unwrap()
}

impl Bench {
    /// Records the ratio of a first index to its floor, and its peak memory, as targets.
    pub(super) fn first_index_targets(
        &mut self,
        fixture: &str,
        first_index: Duration,
        floor: Duration,
        peak: f64,
    ) -> f64 {
        let ratio = first_index.as_secs_f64() / floor.as_secs_f64();
        self.target(
            &format!("first index ≤ {MAX_RATIO}× the read+hash floor ({fixture})"),
            ratio <= MAX_RATIO,
            format!(
                "{ratio:.1}×: {:.1} s against {:.2} s",
                first_index.as_secs_f64(),
                floor.as_secs_f64()
            ),
        );
        self.target(
            &format!("first index peak memory < {MAX_PEAK_MIB} MiB ({fixture})"),
            peak < MAX_PEAK_MIB,
            format!("{peak:.0} MiB"),
        );
        ratio
    }

    /// Part 3b: the first index of 1 GB of provider packages, with `--large-index`.
    pub(super) fn large_index(&mut self) {
        println!("== First index of 1 GB");
        if !std::env::args().any(|a| a == "--large-index") {
            println!("   skipped: it needs 1 GB of disk (run with --large-index)");
            self.report.push_str("## 3b. First index of 1 GB\n\nNot run (`tfreg-bench --large-index` runs it: it needs 1 GB of disk).\n\n");
            return;
        }
        let data = TempDir::new().unwrap();
        let gpg = Gpg::new();
        gpg.generate("release@example.test", "rsa2048", "never", None);
        let platforms = tfreg_e2e::scale::PLATFORMS;
        for release in 0..RELEASES {
            let version = format!("1.{}.{}", release / 1000, release % 1000);
            publish_random_release(data.path(), &gpg, &version, &platforms, release as u64);
        }
        publish(
            data.path(),
            "keys/acme/release.asc",
            &gpg.export("release@example.test"),
        );
        let packages = RELEASES * platforms.len();
        let files = RELEASES * (platforms.len() + 2) + 1;
        println!("   {files} files ({packages} packages) published; first start");
        let floor = read_hash_floor(data.path());

        let started = Instant::now();
        let server = Server::start_with_env(data.path(), &["--hostname", HOST], &default_log());
        let token = server.create_token(&[]);
        let client = server.client();
        let served = || -> usize {
            let Ok(response) = client
                .get(format!("{}/v1/providers/acme/bulk/versions", server.url))
                .bearer_auth(&token)
                .send()
            else {
                return 0;
            };
            let json: serde_json::Value = response.json().unwrap_or_default();
            json["versions"].as_array().map_or(0, |versions| {
                versions
                    .iter()
                    .map(|v| v["platforms"].as_array().map_or(0, Vec::len))
                    .sum()
            })
        };
        let whole = tfreg_e2e::wait_until(Duration::from_secs(3600), || served() == packages);
        assert!(
            whole,
            "the first index of 1 GB did not finish within an hour"
        );
        let first_index = started.elapsed();
        let peak = peak_memory_mib(server.pid()).unwrap_or(0.0);
        drop(server);
        println!(
            "   indexed in {:.1} s; floor {:.2} s",
            first_index.as_secs_f64(),
            floor.as_secs_f64()
        );
        let ratio = self.first_index_targets("1 GB", first_index, floor, peak);
        let _ = write!(
            self.report,
            "## 3b. First index of 1 GB\n\n{files} files: {packages} provider packages of {} KiB of incompressible data each, in {RELEASES} signed releases × {} platforms. The floor reads and hashes every byte once (`find DATA -type f | xargs cat | sha256sum`, best of three); both read from the page cache.\n\n| first index (start until every package is served) | read+hash floor | ratio | peak memory |\n|---|---|---|---|\n| {:.1} s | {:.2} s | {ratio:.1}× | {peak:.0} MiB |\n\n",
            PACKAGE_BYTES / 1024,
            platforms.len(),
            first_index.as_secs_f64(),
            floor.as_secs_f64(),
        );
    }
}

/// Publishes a signed release of `acme/bulk` whose packages hold `PACKAGE_BYTES` of
/// incompressible bytes each (`seed` makes every release's bytes its own).
fn publish_random_release(data: &Path, gpg: &Gpg, version: &str, platforms: &[&str], seed: u64) {
    let dir = format!("providers/acme/bulk/{version}");
    let mut sums = String::new();
    for (i, platform) in platforms.iter().enumerate() {
        let name = format!("terraform-provider-bulk_{version}_{platform}.zip");
        let zip = random_zip(version, seed * 16 + i as u64);
        sums.push_str(&format!("{}  {name}\n", tfreg_e2e::sha256_hex(&zip)));
        publish(data, &format!("{dir}/{name}"), &zip);
    }
    let sums_name = format!("terraform-provider-bulk_{version}_SHA256SUMS");
    publish(data, &format!("{dir}/{sums_name}"), sums.as_bytes());
    publish(
        data,
        &format!("{dir}/{sums_name}.sig"),
        &gpg.sign("release@example.test", sums.as_bytes(), None),
    );
}

/// A provider zip holding its executable: `PACKAGE_BYTES` of pseudo-random bytes, stored.
fn random_zip(version: &str, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let bytes: Vec<u8> = (0..PACKAGE_BYTES)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .unix_permissions(0o755);
    writer
        .start_file(format!("terraform-provider-bulk_v{version}"), options)
        .unwrap();
    writer.write_all(&bytes).unwrap();
    writer.finish().unwrap().into_inner()
}
