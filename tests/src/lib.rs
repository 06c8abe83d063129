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
pub mod lambda;
pub mod oidc;
pub mod raw;
pub mod scale;
pub mod stack;
pub mod static_site;

pub use lambda::{function_bin, RuntimeApi};
pub use oidc::OidcProvider;
pub use raw::{raw_request, raw_until_close, RawResponse};
pub use static_site::{Page, StaticSite};
pub use tempfile::TempDir;

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

/// A running `tfreg serve`, stopped when dropped.
pub struct Server {
    child: Child,
    /// `127.0.0.1:PORT`
    pub addr: String,
    /// `https://127.0.0.1:PORT`
    pub url: String,
    /// The data directory it serves.
    pub data: PathBuf,
    /// The self-signed certificate it serves (trust it with `SSL_CERT_FILE`).
    pub cert: PathBuf,
    stdout: Arc<Mutex<String>>,
    log: PathBuf,
    _log_dir: TempDir,
}

impl Server {
    /// Starts a public `tfreg serve --data DATA --listen 127.0.0.1:0 --public EXTRA...` and
    /// waits until it prints its address.
    pub fn start(data: &Path, extra: &[&str]) -> Server {
        let mut args = vec!["--public"];
        args.extend_from_slice(extra);
        Server::start_private(data, &args)
    }

    /// Starts `tfreg serve` requiring tokens (unless EXTRA says `--public`).
    pub fn start_private(data: &Path, extra: &[&str]) -> Server {
        Server::start_with_env(data, extra, &[])
    }

    /// Starts `tfreg serve --data DATA --listen 127.0.0.1:0 EXTRA...` with more environment.
    pub fn start_with_env(data: &Path, extra: &[&str], env: &[(&str, String)]) -> Server {
        let mut args = vec!["--data", data.to_str().unwrap()];
        args.extend_from_slice(extra);
        Server::launch(data, None, &args, env)
    }

    /// Starts `tfreg serve --listen 127.0.0.1:0 EXTRA...` in the working directory `cwd`,
    /// without `--data` (`state` is where the test expects its certificate, if any).
    pub fn start_in(cwd: &Path, state: &Path, extra: &[&str], env: &[(&str, String)]) -> Server {
        Server::launch(state, Some(cwd), extra, env)
    }

    fn launch(data: &Path, cwd: Option<&Path>, extra: &[&str], env: &[(&str, String)]) -> Server {
        let log_dir = TempDir::new().unwrap();
        let log = log_dir.path().join("tfreg.log");
        let mut command = Command::new(tfreg_bin());
        if let Some(cwd) = cwd {
            command.current_dir(cwd);
        }
        let mut child = command
            .arg("serve")
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            // Every request's line: tests read them.
            .env("RUST_LOG", "info,tfreg::access=debug")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("tfreg starts");
        let stdout = Arc::new(Mutex::new(String::new()));
        let (first_line_tx, first_line) = mpsc::channel();
        {
            let stdout = Arc::clone(&stdout);
            let pipe = child.stdout.take().unwrap();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(pipe);
                let mut line = String::new();
                let _ = reader.read_line(&mut line);
                stdout.lock().unwrap().push_str(&line);
                let _ = first_line_tx.send(line);
                loop {
                    let mut line = String::new();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => stdout.lock().unwrap().push_str(&line),
                    }
                }
            });
        }
        let line = first_line
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_default();
        let Some(url) = line
            .trim()
            .strip_prefix("tfreg serving ")
            .map(|u| u.trim_end_matches('/').to_owned())
        else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "tfreg did not start (first line {line:?}); its log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        };
        let addr = url.trim_start_matches("https://").to_owned();
        let cert = extra
            .iter()
            .position(|a| *a == "--tls-cert")
            .map(|i| PathBuf::from(extra[i + 1]))
            .unwrap_or_else(|| data.join(".tfreg/tls/cert.pem"));
        Server {
            child,
            addr,
            url,
            data: data.to_path_buf(),
            cert,
            stdout,
            log,
            _log_dir: log_dir,
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the server printed on stdout so far.
    pub fn stdout(&self) -> String {
        // The banner is printed in one go; give the reader thread a moment to collect it.
        let _ = wait_until(Duration::from_secs(5), || {
            self.stdout.lock().unwrap().contains("tfreg:cli-config:end")
        });
        self.stdout.lock().unwrap().clone()
    }

    /// The Terraform CLI configuration the server printed.
    pub fn printed_cli_config(&self) -> String {
        let out = self.stdout();
        let begin = out
            .find("# tfreg:cli-config:begin")
            .expect("config begin marker");
        let end = out
            .find("# tfreg:cli-config:end")
            .expect("config end marker");
        out[begin..end].to_owned()
    }

    /// The server's log (stderr) so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// An HTTPS client that trusts `cert`.
    pub fn client(&self) -> reqwest::blocking::Client {
        client_trusting(&self.cert)
    }

    /// `tfreg token create --data DATA ARGS...`: returns the token (the last line).
    pub fn create_token(&self, args: &[&str]) -> String {
        let mut all = vec!["token", "create", "--data", self.data.to_str().unwrap()];
        all.extend_from_slice(args);
        let out = tfreg(&all);
        out.lines().last().expect("a token line").trim().to_owned()
    }

    /// GETs a path on the server; returns status and body.
    pub fn get(&self, path: &str) -> (u16, String) {
        let response = self
            .client()
            .get(format!("{}{path}", self.url))
            .send()
            .unwrap();
        (response.status().as_u16(), response.text().unwrap())
    }

    /// Writes a file into the data directory, creating folders (as a publisher would).
    pub fn publish(&self, key: &str, content: &[u8]) {
        publish(&self.data, key, content);
    }

    /// The versions the registry lists for a module, or none if it's not found.
    pub fn module_versions(&self, module: &str) -> Vec<String> {
        let (status, body) = self.get(&format!("/v1/modules/{module}/versions"));
        if status == 404 {
            return vec![];
        }
        assert_eq!(status, 200, "{body}");
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        json["modules"][0]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["version"].as_str().unwrap().to_owned())
            .collect()
    }
}

impl Server {
    /// Sends SIGTERM and waits up to `within` for the process to exit; true if it did.
    pub fn terminate(&mut self, within: Duration) -> bool {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .is_ok_and(|s| s.success());
        assert!(sent, "kill -TERM {pid} failed");
        wait_until(within, || matches!(self.child.try_wait(), Ok(Some(_))))
    }

    /// True while the server process runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- tfreg log ---\n{}--- end of tfreg log ---", self.log());
        }
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

/// A working directory for the real `terraform` CLI with its own CLI configuration.
pub struct Terraform {
    /// The working directory: `terraform` runs here.
    pub dir: TempDir,
    env: Vec<(String, String)>,
}

impl Terraform {
    /// A fresh directory whose CLI configuration is `cli_config`, trusting `cert`.
    pub fn new(cli_config: &str, cert: &Path) -> Terraform {
        require_terraform();
        let dir = TempDir::new().unwrap();
        let config = dir.path().join("terraform.rc");
        std::fs::write(&config, cli_config).unwrap();
        let env = vec![
            ("TF_CLI_CONFIG_FILE".into(), config.display().to_string()),
            ("SSL_CERT_FILE".into(), cert.display().to_string()),
            ("CHECKPOINT_DISABLE".into(), "1".into()),
            ("TF_IN_AUTOMATION".into(), "1".into()),
            ("TF_INPUT".into(), "0".into()),
        ];
        Terraform { dir, env }
    }

    /// Writes `content` to `file` in the working directory.
    pub fn write(&self, file: &str, content: &str) {
        std::fs::write(self.dir.path().join(file), content).unwrap();
    }

    /// Sets an environment variable for every run (`HOME`, for `terraform login`'s
    /// credentials file).
    pub fn set_env(&mut self, name: &str, value: &str) {
        self.env.retain(|(k, _)| k != name);
        self.env.push((name.to_owned(), value.to_owned()));
    }

    /// The environment every run gets.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// Runs `terraform ARGS...` in the directory.
    pub fn run(&self, args: &[&str]) -> Output {
        let mut command = Command::new("terraform");
        command.args(args).current_dir(self.dir.path());
        for (k, v) in &self.env {
            command.env(k, v);
        }
        command
            .env_remove("TF_LOG")
            .env_remove("TF_PLUGIN_CACHE_DIR");
        command.output().expect("terraform runs")
    }

    /// `terraform init`, asserting it succeeds.
    pub fn init(&self, extra: &[&str]) -> String {
        let mut args = vec!["init", "-no-color", "-input=false"];
        args.extend_from_slice(extra);
        let output = self.run(&args);
        let text = describe(&output);
        assert!(output.status.success(), "terraform init failed:\n{text}");
        text
    }

    /// `terraform init`, asserting it fails; returns its output.
    pub fn init_fails(&self) -> String {
        let output = self.run(&["init", "-no-color", "-input=false"]);
        let text = describe(&output);
        assert!(
            !output.status.success(),
            "terraform init should have failed:\n{text}"
        );
        text
    }

    /// The installed version of each module call, from `.terraform/modules/modules.json`.
    pub fn installed_modules(&self) -> std::collections::BTreeMap<String, String> {
        let path = self.dir.path().join(".terraform/modules/modules.json");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        json["Modules"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["Key"] != "")
            .map(|m| {
                (
                    m["Key"].as_str().unwrap().to_owned(),
                    m["Version"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    }

    /// The content of an installed module's file.
    pub fn module_file(&self, key: &str, file: &str) -> String {
        let path = self
            .dir
            .path()
            .join(".terraform/modules")
            .join(key)
            .join(file);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

fn describe(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The platform this machine's Terraform installs for (`linux_amd64`).
pub fn terraform_platform() -> String {
    require_terraform();
    let output = Command::new("terraform")
        .args(["version", "-json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    json["platform"]
        .as_str()
        .expect("terraform version -json has a platform")
        .to_owned()
}

/// A throwaway GnuPG home for making release keys and signatures, as publishers do.
pub struct Gpg {
    home: TempDir,
}

impl Gpg {
    /// A fresh GnuPG home with one RSA signing key (Terraform refuses EdDSA).
    pub fn new() -> Gpg {
        let found = Command::new("gpg")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "`gpg` is not on PATH, and the provider tests sign releases with it as publishers do. \
             Install GnuPG (`apt-get install gnupg`) and run the tests again."
        );
        Gpg {
            home: TempDir::new().unwrap(),
        }
    }

    fn gpg(&self, args: &[&str]) -> Output {
        let output = Command::new("gpg")
            .env("GNUPGHOME", self.home.path())
            .args([
                "--batch",
                "--yes",
                "--pinentry-mode",
                "loopback",
                "--passphrase",
                "",
            ])
            .args(args)
            .output()
            .expect("gpg runs");
        assert!(
            output.status.success(),
            "gpg {args:?} failed:\n{}",
            describe(&output)
        );
        output
    }

    /// Generates a key (`rsa2048`, `ed25519`, ...) for `email`, expiring as `expire` says
    /// (`never`, or a date).
    pub fn generate(&self, email: &str, algorithm: &str, expire: &str, faked_time: Option<&str>) {
        let uid = format!("tfreg test <{email}>");
        let mut args = vec![];
        if let Some(time) = faked_time {
            args.extend(["--faked-system-time", time]);
        }
        args.extend(["--quick-gen-key", &uid, algorithm, "sign", expire]);
        self.gpg(&args);
    }

    /// The ASCII-armored public key of `email`.
    pub fn export(&self, email: &str) -> Vec<u8> {
        self.gpg(&["--armor", "--export", email]).stdout
    }

    /// The 16-hex-digit key ID of `email`'s primary key.
    pub fn key_id(&self, email: &str) -> String {
        let out = self.gpg(&["--list-keys", "--with-colons", email]).stdout;
        let text = String::from_utf8(out).unwrap();
        let pub_line = text.lines().find(|l| l.starts_with("pub:")).unwrap();
        pub_line.split(':').nth(4).unwrap().to_owned()
    }

    /// A binary detached signature of `content` by `email`, as `gpg --detach-sign` makes it.
    pub fn sign(&self, email: &str, content: &[u8], faked_time: Option<&str>) -> Vec<u8> {
        let dir = TempDir::new().unwrap();
        let input = dir.path().join("in");
        let output = dir.path().join("in.sig");
        std::fs::write(&input, content).unwrap();
        let mut args = vec![];
        if let Some(time) = faked_time {
            args.extend(["--faked-system-time", time]);
        }
        args.extend(["--local-user", email, "--detach-sign", "-o"]);
        let (i, o) = (input.to_str().unwrap(), output.to_str().unwrap());
        args.extend([o, i]);
        self.gpg(&args);
        std::fs::read(output).unwrap()
    }
}

impl Gpg {
    /// `gpg --local-user EMAIL ARGS... -o OUT IN` over `content`: any signing command
    /// (`--detach-sign --armor`, `--clearsign`, `--sign`, ...). Returns what gpg wrote.
    pub fn sign_as(&self, email: &str, content: &[u8], args: &[&str]) -> Vec<u8> {
        let dir = TempDir::new().unwrap();
        let (input, output) = (dir.path().join("in"), dir.path().join("out"));
        std::fs::write(&input, content).unwrap();
        let mut all = vec!["--local-user", email];
        all.extend_from_slice(args);
        all.extend(["-o", output.to_str().unwrap(), input.to_str().unwrap()]);
        self.gpg(&all);
        std::fs::read(output).unwrap()
    }
}

impl Default for Gpg {
    fn default() -> Self {
        Self::new()
    }
}

/// A provider package: a zip holding an executable `terraform-provider-<type>_v<version>`.
pub fn provider_zip(type_: &str, version: &str, platform: &str) -> Vec<u8> {
    let binary = format!("terraform-provider-{type_}_v{version}");
    let content = format!("#!/bin/sh\necho 'fake provider {type_} {version} for {platform}'\n");
    zip(&[(&binary, content.as_bytes(), 0o755)])
}

/// The files goreleaser's `dist/` holds for a release: one zip per platform and SHA256SUMS.
/// Returns (file name, content) pairs; the signature is made separately.
pub fn provider_release(type_: &str, version: &str, platforms: &[&str]) -> Vec<(String, Vec<u8>)> {
    use sha2::Digest;
    let mut files = Vec::new();
    let mut sums = String::new();
    for platform in platforms {
        let name = format!("terraform-provider-{type_}_{version}_{platform}.zip");
        let zip = provider_zip(type_, version, platform);
        sums.push_str(&format!(
            "{}  {name}\n",
            hex::encode(sha2::Sha256::digest(&zip))
        ));
        files.push((name, zip));
    }
    files.push((
        format!("terraform-provider-{type_}_{version}_SHA256SUMS"),
        sums.into_bytes(),
    ));
    files
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The CLI configuration that maps `hostname` to a local server (providers and modules).
pub fn host_block(hostname: &str, url: &str) -> String {
    format!(
        "host \"{hostname}\" {{\n  services = {{\n    \"modules.v1\"   = \"{url}/v1/modules/\"\n    \"providers.v1\" = \"{url}/v1/providers/\"\n  }}\n}}\n"
    )
}

/// A CLI configuration installing every provider through a network mirror.
pub fn mirror_config(url: &str) -> String {
    format!(
        "provider_installation {{\n  network_mirror {{\n    url = \"{url}/v1/mirror/\"\n  }}\n}}\n"
    )
}

/// A configuration requiring one provider.
pub fn requires_provider(name: &str, source: &str, version: &str) -> String {
    format!(
        "terraform {{\n  required_providers {{\n    {name} = {{\n      source  = \"{source}\"\n      version = \"{version}\"\n    }}\n  }}\n}}\n"
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

/// moto's server, emulating S3 and DynamoDB on a free port; stopped when dropped.
pub struct Moto {
    child: Child,
    /// `http://127.0.0.1:PORT`, the endpoint the AWS SDK is pointed at.
    pub endpoint: String,
}

/// Creates what template.yaml creates for the registry: a versioned bucket and the table.
/// Returns the S3 client.
pub async fn provision(
    config: &aws_config::SdkConfig,
    bucket: &str,
    table: &str,
) -> aws_sdk_s3::Client {
    let s3 = tfreg_aws::s3_client(config);
    s3.create_bucket().bucket(bucket).send().await.unwrap();
    s3.put_bucket_versioning()
        .bucket(bucket)
        .versioning_configuration(
            aws_sdk_s3::types::VersioningConfiguration::builder()
                .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap();
    tfreg_aws::dynamo::create_table(&tfreg_aws::dynamodb_client(config), table)
        .await
        .unwrap();
    s3
}

impl Moto {
    /// The SDK configuration for this moto: its endpoint, test credentials, `us-east-1`.
    pub async fn sdk_config(&self) -> aws_config::SdkConfig {
        let credentials =
            aws_sdk_s3::config::Credentials::new("testing", "testing", None, None, "test");
        tfreg_aws::config_loader()
            .endpoint_url(&self.endpoint)
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(credentials)
            .load()
            .await
    }

    /// Starts moto over plain HTTP.
    pub fn start() -> Moto {
        Moto::start_with(None)
    }

    /// Starts moto over HTTPS with the given certificate and key.
    pub fn start_tls(cert: &Path, key: &Path) -> Moto {
        Moto::start_with(Some((cert, key)))
    }

    fn start_with(tls: Option<(&Path, &Path)>) -> Moto {
        let port = free_port();
        let mut command = Command::new(venv_tool("moto_server"));
        command.args(["-H", "127.0.0.1", "-p", &port.to_string()]);
        let scheme = match tls {
            Some((cert, key)) => {
                command.arg("-c").arg(cert).arg("-k").arg(key);
                "https"
            }
            None => "http",
        };
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server starts");
        let endpoint = format!("{scheme}://127.0.0.1:{port}");
        let moto = Moto { child, endpoint };
        let up = wait_until(Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(up, "moto_server did not start on port {port}");
        moto
    }

    /// The environment that points the AWS SDK (in this process or a child) at moto.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
        ]
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
