//! A running `tfreg serve` over a temporary data directory, and what tests ask of it.

use super::*;

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
