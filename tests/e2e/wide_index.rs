//! The first index of a data directory shaped as a growing team's registry (issue 46,
//! `tfreg_e2e::wide` at `Wide::DEEP`, past the 10,000 files where it collapsed): every file is
//! served once it ends, the last thousand module archives are not indexed much slower than
//! the first (a collapse detector, not a timing target: `make bench` measures the figures),
//! and a first index stopped midway resumes at the next start instead of starting over.

use std::time::Duration;

use tfreg_e2e::wide::{self, Running, Wide, BIG_PROVIDER, LOG, PROVIDER};
use tfreg_e2e::{sha256_hex, wait_until, TempDir};

const HOST: &str = "registry.example.test";
/// The last thousand module archives may be indexed this many times slower than the first
/// before it counts as a collapse: loose, as a loaded test machine varies, yet a per-file
/// cost that grows with the index (ten times the files by the last thousand) goes far past.
const COLLAPSE: f64 = 4.0;

/// How long a first index of `Wide::DEEP` may take on a loaded machine.
const WITHIN: Duration = Duration::from_secs(1200);
/// How long the last files' documents may take once every file looks served.
const SETTLE: Duration = Duration::from_secs(60);

/// The bytes behind a provider package's download link are the package its answer names
/// (by SHA-256).
fn assert_downloads(running: &Running, provider: &str, version: &str, platform: &str) {
    let path = format!(
        "/v1/providers/{provider}/{version}/download/{}",
        platform.replace('_', "/")
    );
    let (status, answer) = running.api().get(&path).expect("an answer");
    assert_eq!(status, 200, "{path}: {answer}");
    let url = answer["download_url"].as_str().expect("a download_url");
    let response = running.client.get(url).send().unwrap();
    assert_eq!(response.status().as_u16(), 200, "{url}");
    let bytes = response.bytes().unwrap();
    assert_eq!(
        sha256_hex(&bytes),
        answer["shasum"].as_str().unwrap(),
        "{url}"
    );
}

#[test]
#[ignore = "deep tier: make test-deep (a first index of 11,407 files, 126 MB: about a minute)"]
fn a_wide_first_index_serves_every_file_without_collapsing() {
    // Given a data directory of 11,407 files: a module of 5,000 versions, 2,000 small modules
    // in 20 namespaces, a signed provider of 300 versions × 6 platforms and two 32 MiB zips,
    let shape = Wide::DEEP;
    let data = TempDir::new().unwrap();
    wide::write(data.path(), shape);

    // when `tfreg serve` starts over it and its first index ends,
    let running = Running::start(data.path(), HOST);

    // then every version of every module is listed and every provider package downloads,
    running.assert_every_file_served(shape, WITHIN, SETTLE);
    assert_downloads(
        &running,
        PROVIDER,
        &Wide::provider_version(0),
        "linux_amd64",
    );
    let last = Wide::provider_version(shape.provider_versions - 1);
    assert_downloads(&running, PROVIDER, &last, "windows_amd64");
    for v in 0..shape.big_zips {
        assert_downloads(&running, BIG_PROVIDER, &Wide::big_version(v), "linux_amd64");
    }

    // in one batch of the fixture's files,
    let log = running.server.log();
    let batches = wide::batches(&log);
    let batch = batches.first().expect("tfreg::index_progress events");
    assert_eq!(
        batch.last().map(|m| (m.done, m.end)),
        Some((shape.files(), true)),
        "the first batch is not the fixture's {} files: {batch:?}",
        shape.files()
    );
    // whose last thousand module archives went at no less than a quarter of the first's pace.
    let (first, last) = shape.module_spans(batch).expect("events at each thousand");
    let timeline: Vec<String> = wide::spans(batch)
        .iter()
        .map(|s| format!("{}–{}: {:.0} files/s", s.from + 1, s.to, s.per_second()))
        .collect();
    assert!(
        last.per_second() * COLLAPSE >= first.per_second(),
        "the first index collapsed: files {}–{} went at {:.0} files/s, the first thousand at {:.0}; each thousand: {timeline:#?}",
        last.from + 1,
        last.to,
        last.per_second(),
        first.per_second()
    );
}

#[test]
#[ignore = "deep tier: make test-deep (a first index of 11,407 files, 126 MB, stopped and started again: about a minute)"]
fn a_first_index_stopped_midway_resumes_at_the_next_start_and_serves_every_file() {
    // Given the wide data directory and a server stopped (SIGTERM, as systemd or Ctrl-C
    // stops it) once its first index has done a third of the files,
    let shape = Wide::DEEP;
    let total = shape.files();
    let data = TempDir::new().unwrap();
    wide::write(data.path(), shape);
    // (started by hand: the test helper waits until the server says it serves, which it
    // says only once a first index shorter than 30 s has ended)
    let log_dir = TempDir::new().unwrap();
    let log_path = log_dir.path().join("first.log");
    let mut first = std::process::Command::new(tfreg_e2e::tfreg_bin())
        .args(["serve", "--data", data.path().to_str().unwrap()])
        .args(["--listen", "127.0.0.1:0", "--hostname", HOST])
        .env("RUST_LOG", LOG)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .expect("tfreg starts");
    let first_log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let a_third = wait_until(Duration::from_secs(600), || {
        first_batch_done(&first_log()) >= total / 3
    });
    if !a_third {
        let _ = first.kill();
    }
    assert!(
        a_third,
        "the first index did not reach a third of the files"
    );
    let stopped = std::process::Command::new("kill")
        .args(["-TERM", &first.id().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(stopped, "kill -TERM failed");
    let exited = wait_until(Duration::from_secs(60), || {
        matches!(first.try_wait(), Ok(Some(_)))
    });
    if !exited {
        let _ = first.kill();
    }
    let _ = first.wait();
    assert!(exited, "the server did not stop within 60 s of SIGTERM");
    let done_at_stop = first_batch_done(&first_log());
    assert!(
        done_at_stop < total,
        "the first index ended before the server could be stopped midway ({done_at_stop} files)"
    );

    // when it starts again over the same directory,
    let second = Running::start(data.path(), HOST);

    // then it serves every file in the end,
    second.assert_every_file_served(shape, WITHIN, SETTLE);
    let log = second.server.log();
    // having indexed at its start fewer than the whole directory: what the first start did
    // is kept.
    let announced = wide::batches_announced(&log);
    let indexed = first_batch_done(&log);
    assert!(
        announced.first().is_none_or(|n| *n < total) && indexed < total,
        "the second start indexed the whole directory again ({announced:?} announced, {indexed} files in its first batch, of {total}) though the first had done {done_at_stop} files"
    );
}

/// The files the log's first batch has indexed, as its last progress event says.
fn first_batch_done(log: &str) -> usize {
    wide::batches(log)
        .first()
        .and_then(|batch| batch.last())
        .map_or(0, |m| m.done)
}
