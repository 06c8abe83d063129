//! Part 3c: the first index of a data directory shaped as a growing team's registry (issue 46,
//! `tfreg_e2e::wide`), against the floor of reading and hashing every byte once; the files
//! per second of its first and last thousand module archives, from the server's
//! `tfreg::index_progress` events, so a per-file cost that grows with the index shows as a
//! ratio; and the time to publish one module version into a server over it (the one that just
//! indexed it, and one restarted over a copy), side by side with one over 100 files.

use tfreg_e2e::wide::{self, Running, Span, Wide, LOG};

use super::*;
use crate::first_index;

/// The largest ratio of the wide shape's first index to the read+hash floor.
const MAX_RATIO: f64 = 5.0;
/// The largest ratio of the per-file cost of the last thousand module archives to the first.
const MAX_SLOWDOWN: f64 = 2.0;
/// The largest ratio of a publish over the wide directory to one over 100 files.
const MAX_PUBLISH_RATIO: f64 = 1.5;
/// How long the last files' documents may take once every file looks served.
const SETTLE: Duration = Duration::from_secs(120);
/// The directory publishing over the wide one is compared with: 100 small modules (and the
/// signing key).
const HUNDRED: Wide = Wide {
    huge_versions: 0,
    namespaces: 1,
    modules_per_namespace: 100,
    versions_per_module: 1,
    provider_versions: 0,
    big_zips: 0,
    big_zip_bytes: 0,
};

impl Bench {
    /// Part 3c: the wide shape (`Wide::FULL`; `--quick`: `Wide::DEEP`).
    pub(super) fn wide(&mut self) {
        println!("== First index of the wide shape");
        let (shape, name) = match self.quick {
            true => (Wide::DEEP, "Wide::DEEP"),
            false => (Wide::FULL, "Wide::FULL"),
        };
        let data = TempDir::new().unwrap();
        wide::write(data.path(), shape);
        let floor = first_index::read_hash_floor(data.path());
        println!(
            "   {} files written ({name}; read+hash floor {:.2} s); first start",
            shape.files(),
            floor.as_secs_f64()
        );

        let started = Instant::now();
        let wide_server = Running::start(data.path(), HOST);
        wide_server.assert_every_file_served(shape, Duration::from_secs(7200), SETTLE);
        let first_index = started.elapsed();
        let peak = peak_memory_mib(wide_server.server.pid()).unwrap_or(0.0);
        let log = wide_server.server.log();
        let batches = wide::batches(&log);
        let batch = batches.first().unwrap_or_else(|| {
            panic!("the server logged no tfreg::index_progress event (RUST_LOG={LOG})")
        });
        let indexed = batch.last().map_or(0, |m| m.done);
        let batch_seconds = batch.last().map_or(0.0, |m| m.seconds);
        println!(
            "   served whole after {:.1} s (its first batch: {indexed} files in {batch_seconds:.1} s)",
            first_index.as_secs_f64()
        );
        let ratio = first_index.as_secs_f64() / floor.as_secs_f64();
        self.target(
            &format!("first index of the wide shape ≤ {MAX_RATIO}× the read+hash floor"),
            ratio <= MAX_RATIO,
            format!(
                "{ratio:.1}×: {:.1} s against {:.2} s ({} files)",
                first_index.as_secs_f64(),
                floor.as_secs_f64(),
                shape.files()
            ),
        );
        // The batch must be the fixture's files, in the watcher's order, for its thousands
        // to be the module archives they are taken for.
        let (true, Some((first, last))) = (indexed == shape.files(), shape.module_spans(batch))
        else {
            panic!(
                "the first batch indexed {indexed} files, not the fixture's {}, or has no event at its thousands: {batch:?}",
                shape.files()
            )
        };
        // Per-file cost is the inverse of files/s.
        let slowdown = first.per_second() / last.per_second();
        self.target(
            &format!(
                "per-file cost of the last thousand module archives ≤ {MAX_SLOWDOWN}× the first's (wide shape)"
            ),
            slowdown <= MAX_SLOWDOWN,
            format!(
                "{slowdown:.2}×: {:.0} files/s (files {}–{}) against {:.0} files/s (files {}–{})",
                last.per_second(),
                last.from + 1,
                last.to,
                first.per_second(),
                first.from + 1,
                first.to
            ),
        );
        let timeline = timeline(shape, batch, (first, last));

        // (c) One module version published into each server in turns: the one whose first
        // index just ended, one started over a copy of its directory (from the index it
        // saved, as after any restart), and one over 100 files.
        let saved = data.path().join(".tfreg/index.json");
        assert!(
            tfreg_e2e::wait_until(Duration::from_secs(300), || saved.exists()),
            "the index was not saved"
        );
        std::thread::sleep(Duration::from_secs(3));
        let copy = TempDir::new().unwrap();
        let copied = Command::new("cp")
            .arg("-a")
            .arg(data.path().join("."))
            .arg(copy.path())
            .status()
            .is_ok_and(|s| s.success());
        assert!(copied, "could not copy the wide directory");
        let _ = std::fs::remove_file(copy.path().join(".tfreg/served.json"));
        let copy_server = Running::start(copy.path(), HOST);
        copy_server.assert_every_file_served(shape, Duration::from_secs(600), SETTLE);
        let hundred = TempDir::new().unwrap();
        wide::write(hundred.path(), HUNDRED);
        let small_server = Running::start(hundred.path(), HOST);
        small_server.assert_every_file_served(HUNDRED, Duration::from_secs(120), SETTLE);
        let rounds = if self.quick { 3 } else { 9 };
        let servers = [&wide_server, &copy_server, &small_server];
        let module = TempDir::new().unwrap();
        let mut by_cli = [Vec::new(), Vec::new(), Vec::new()];
        let mut by_writing = [Vec::new(), Vec::new(), Vec::new()];
        for round in 0..rounds {
            for step in 0..servers.len() {
                let i = (step + round) % servers.len();
                let version = format!("1.0.{round}");
                by_cli[i].push(publish_with_cli(servers[i], module.path(), &version));
                by_writing[i].push(publish_by_writing(servers[i], &version));
            }
        }
        println!(
            "   each round (s), tfreg publish: {by_cli:.2?}; writing the file: {by_writing:.3?}"
        );
        let [cli_wide, cli_copy, cli_small] = by_cli.map(|mut times| median(&mut times));
        let [write_wide, write_copy, write_small] = by_writing.map(|mut times| median(&mut times));
        // The target holds for both servers over the wide shape: the slower is compared.
        let (cli_worst, write_worst) = (cli_wide.max(cli_copy), write_wide.max(write_copy));
        let publish_ratio = cli_worst / cli_small;
        let write_ratio = write_worst / write_small;
        println!(
            "   tfreg publish: {cli_wide:.2} s over the wide shape after its first index, {cli_copy:.2} s after a restart, {cli_small:.2} s over 100 files; writing the file: {write_wide:.3} s, {write_copy:.3} s and {write_small:.3} s"
        );
        self.target(
            &format!(
                "`tfreg publish module` over the wide shape ≤ {MAX_PUBLISH_RATIO}× over 100 files"
            ),
            publish_ratio <= MAX_PUBLISH_RATIO,
            format!(
                "{publish_ratio:.2}×: {cli_worst:.2} s against {cli_small:.2} s (medians of {rounds}, in turns; a file written and polled for: {write_ratio:.2}×, {write_worst:.3} s against {write_small:.3} s)"
            ),
        );
        drop(copy_server);
        drop(small_server);
        drop(wide_server);

        let _ = write!(
            self.report,
            "## 3c. First index of the wide shape\n\nIssue 46's shape, `tfreg_e2e::wide::{name}` (`tfreg-bench --write-wide=DIR` writes it): a module of {} versions, {} small modules in {} namespaces, a signed provider of {} versions × 6 platforms, {} zips of {} MiB; {} files, {} of them module archives. The floor reads and hashes every byte once (`find DATA -type f | xargs cat | sha256sum`, best of three); both read from the page cache. The server runs with `RUST_LOG={LOG}`: its progress events give the time at every thousand files of the batch.\n\n| first index (start until every file is served, asked through the API) | its batch (first to last file) | read+hash floor | ratio | peak memory |\n|---|---|---|---|---|\n| {:.1} s | {batch_seconds:.1} s | {:.2} s | {ratio:.1}× | {peak:.0} MiB |\n\nFiles per second over the batch, each thousand (the two compared in **bold**: the first and the last full thousand of module archives; provider files come last, the big zips at the very end):\n\n{timeline}\nPublishing one module version into each of three servers in turns ({rounds} rounds, medians): the one over the wide directory whose first index just ended, one started over a copy of that directory (from the index it saved, as after a restart), and one over {} files (100 small modules and the key). The ratio is the slower wide server's against the small one's.\n\n| how | over the wide shape, after its first index | over the wide shape, after a restart | over 100 files | ratio |\n|---|---|---|---|---|\n| `tfreg publish module DIR ADDRESS VERSION --data DATA` (packs, checks, writes, waits until served) | {cli_wide:.2} s | {cli_copy:.2} s | {cli_small:.2} s | {publish_ratio:.2}× |\n| the archive written into the data directory, the versions endpoint polled every 10 ms until it lists it | {write_wide:.3} s | {write_copy:.3} s | {write_small:.3} s | {write_ratio:.2}× |\n\n",
            shape.huge_versions,
            shape.namespaces * shape.modules_per_namespace,
            shape.namespaces,
            shape.provider_versions,
            shape.big_zips,
            shape.big_zip_bytes >> 20,
            shape.files(),
            shape.module_archives(),
            first_index.as_secs_f64(),
            floor.as_secs_f64(),
            HUNDRED.files(),
        );
    }
}

/// The table of files per second, one row per span of the batch.
fn timeline(shape: Wide, batch: &[wide::Milestone], compared: (Span, Span)) -> String {
    let mut table =
        String::from("| files of the batch | what | seconds | files/s |\n|---|---|---|---|\n");
    let archives_end = shape.module_archives() + 1;
    for span in wide::spans(batch) {
        let what = match (span.from + 1, span.to) {
            (_, to) if to <= archives_end => "module archives",
            (from, _) if from > archives_end => "provider files",
            _ => "module archives, then provider files",
        };
        let rate = format!("{:.0}", span.per_second());
        let rate = match span == compared.0 || span == compared.1 {
            true => format!("**{rate}**"),
            false => rate,
        };
        let _ = writeln!(
            table,
            "| {}–{} | {what} | {:.2} | {rate} |",
            span.from + 1,
            span.to,
            span.seconds
        );
    }
    table
}

/// `tfreg publish module` of a folder as `acme/published/aws VERSION` into the server's data
/// directory: seconds until it exits, having seen the version served.
fn publish_with_cli(running: &Running, folder: &Path, version: &str) -> f64 {
    std::fs::write(
        folder.join("main.tf"),
        format!("output \"version\" {{ value = \"{version}\" }}\n"),
    )
    .unwrap();
    let data = running.server.data.to_str().unwrap();
    let started = Instant::now();
    let output = Command::new(tfreg_e2e::tfreg_bin())
        .args(["publish", "module", folder.to_str().unwrap()])
        .args(["acme/published/aws", version, "--data", data])
        .output()
        .expect("tfreg publish runs");
    let took = started.elapsed().as_secs_f64();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && out.contains("served: module acme/published/aws"),
        "tfreg publish failed:\n{out}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    took
}

/// An archive written as `acme/written/aws VERSION` into the server's data directory:
/// seconds until the versions endpoint lists it (polled every 10 ms).
fn publish_by_writing(running: &Running, version: &str) -> f64 {
    let archive = tar_gz(&[(
        "main.tf",
        &format!("output \"version\" {{ value = \"{version}\" }}\n"),
    )]);
    let api = running.api();
    let started = Instant::now();
    running.server.publish(
        &format!("modules/acme/written/aws/{version}.tar.gz"),
        &archive,
    );
    loop {
        let listed = api
            .module_versions("acme/written/aws")
            .is_some_and(|versions| versions.iter().any(|v| v == version));
        if listed {
            return started.elapsed().as_secs_f64();
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "acme/written/aws {version} was not served within 300 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
