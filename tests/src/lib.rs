//! The end-to-end harness: starts the real `tfreg` binary on a free port over a temporary
//! data directory, builds module archives, and runs the real `terraform` CLI against it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub mod bench;
pub mod browser;
pub mod counting;
pub mod faults;
pub mod lambda;
pub mod oidc;
pub mod raw;
pub mod readme;
pub mod scale;
pub mod soak;
pub mod sqs;
pub mod stack;
pub mod static_site;
pub mod upstream;
pub mod wide;

mod gpg;
mod moto;
mod server;
mod terraform;

pub use lambda::{function_bin, RuntimeApi};
pub use oidc::OidcProvider;
pub use raw::{raw_request, raw_until_close, RawResponse};
pub use static_site::{Page, StaticSite};
pub use tempfile::TempDir;
pub use upstream::{Fault, TamperingProxy, Upstream, UPSTREAM_HOST};

pub use gpg::{provider_release, provider_zip, sha256_hex, Gpg};
pub use moto::{provision, upload_tree, Moto};
pub use server::Server;
pub use terraform::{
    host_block, install_error, installed, mirror_config, requires_provider, requires_providers,
    terraform_platform, Terraform,
};

/// The `tfreg` binary of this build (cargo puts it beside the test binary's `deps/` folder),
/// or the one in `TFREG_E2E_BIN_DIR` when set (binaries built elsewhere, e.g. a release
/// build, or a copy when several checkouts share one target directory).
pub fn tfreg_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    // Tests run from target/<profile>/deps/, binaries (tfreg-stack) from target/<profile>/.
    let mut dir = exe.parent().expect("target/<profile>/...").to_path_buf();
    if dir.ends_with("deps") {
        dir = dir.parent().expect("target/<profile>").to_path_buf();
    }
    if let Some(elsewhere) = std::env::var_os("TFREG_E2E_BIN_DIR") {
        dir = PathBuf::from(elsewhere);
    }
    let bin = dir.join(format!("tfreg{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: build it first with `cargo build --bins` (`make test` does both)",
        bin.display()
    );
    bin
}

/// Runs `tfreg ARGS...`, asserting success; returns its stdout.
pub fn tfreg(args: &[&str]) -> String {
    tfreg_with_env(args, &[])
}

/// Runs `tfreg ARGS...` with more environment, asserting success; returns its stdout.
pub fn tfreg_with_env(args: &[&str], env: &[(&str, String)]) -> String {
    let output = Command::new(tfreg_bin())
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("tfreg runs");
    assert!(
        output.status.success(),
        "tfreg {args:?} failed:\n{}",
        describe(&output)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Runs `tfreg` with `args` and exactly `env` (nothing of this process's environment but
/// PATH: no token or CLI configuration of the machine leaks in); returns the exit status and
/// stdout + stderr.
pub fn tfreg_clean_env<K: AsRef<std::ffi::OsStr>>(
    args: &[&std::ffi::OsStr],
    env: &[(K, String)],
) -> (i32, String) {
    let output = Command::new(tfreg_bin())
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (k, v.as_str())))
        .output()
        .expect("tfreg runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), text)
}

/// Runs `tfreg ARGS...` with more environment; returns its exit status, stdout and stderr.
pub fn tfreg_run(args: &[&str], env: &[(&str, String)]) -> (i32, String, String) {
    let output = Command::new(tfreg_bin())
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("tfreg runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs `tfreg status ARGS...`, asserting it could read the registry (exit status 0, or 3
/// when it lists something refused); returns its stdout.
pub fn tfreg_status(args: &[&str], env: &[(&str, String)]) -> String {
    let mut all = vec!["status"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = tfreg_run(&all, env);
    assert!(
        code == 0 || code == 3,
        "tfreg {all:?} failed ({code}):\n{stdout}{stderr}"
    );
    stdout
}

/// Fails the test, with install instructions, when `terraform` is not on PATH.
pub fn require_terraform() {
    let found = Command::new("terraform")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "the `terraform` CLI is not on PATH, and the end-to-end tests drive the real one. \
         Install Terraform 1.5 or later (https://developer.hashicorp.com/terraform/install, \
         or the HashiCorp apt repository: `apt-get install terraform`) and run the tests again."
    );
}

/// Polls `check` until it returns true or `timeout` passes; returns whether it did.
pub fn wait_until(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An HTTP client that trusts `cert` (the registry's self-signed certificate).
pub fn client_trusting(cert: &Path) -> reqwest::blocking::Client {
    let pem = std::fs::read(cert).unwrap();
    reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Writes `content` under `key` in a data directory, creating folders.
pub fn publish(data: &Path, key: &str, content: &[u8]) {
    let path = data.join(key);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// A gzipped tarball of `files` (path, content).
pub fn tar_gz(files: &[(&str, &str)]) -> Vec<u8> {
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(encoder);
    for (path, content) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(1_700_000_000);
        header.set_cksum();
        builder
            .append_data(&mut header, path, content.as_bytes())
            .unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// A zip archive of `files` (path, content, unix mode).
pub fn zip(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (path, content, mode) in files {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(*mode);
        writer.start_file(*path, options).unwrap();
        writer.write_all(content).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

/// A module whose `main.tf` reports `version`, so an installed copy can be identified.
pub fn module_files(version: &str) -> [(&'static str, String); 2] {
    [
        (
            "main.tf",
            format!("output \"version\" {{\n  value = \"{version}\"\n}}\n"),
        ),
        ("VERSION", format!("{version}\n")),
    ]
}

/// A command's stdout and stderr, for a failure message.
fn describe(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The folder of the workspace (where `.venv` lives).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A program from the test virtualenv (`make venv` installs it).
pub fn venv_tool(name: &str) -> PathBuf {
    let path = workspace_root().join(".venv/bin").join(name);
    assert!(
        path.is_file(),
        "{} is missing: the AWS tests run against moto's S3 and DynamoDB emulator. Run `make venv` \
         (which installs tests/requirements.txt into .venv), or `make test`, which does it first.",
        path.display()
    );
    path
}

/// A TCP port free on 127.0.0.1 right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A self-signed certificate for `127.0.0.1` and `localhost`, as PEM files in `dir`.
pub fn test_certificate(dir: &Path) -> (PathBuf, PathBuf) {
    let key_pair = rcgen::KeyPair::generate().unwrap();
    let params =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .unwrap();
    let cert = params.self_signed(&key_pair).unwrap();
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key_pair.serialize_pem()).unwrap();
    (cert_path, key_path)
}
