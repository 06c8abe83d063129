//! A stand-in upstream registry for the pull-through cache tests: a second `tfreg serve` over
//! its own data directory, with its own certificate and GPG key, publishing signed releases
//! of `acme/widget` (1.0.0, 1.1.0) and `acme/gadget` (2.0.0) for two platforms. The registry
//! under test reaches it as [`UPSTREAM_HOST`] through [`Upstream::registry_args`].
//!
//! It is reached through a [`TamperingProxy`] on a port of its own, so that the test can
//! switch faults on and off, and stop the upstream and start it again at the same URL.

mod proxy;

pub use proxy::{Fault, TamperingProxy, HUGE_BYTES};

use super::*;

/// The hostname the registry under test knows the stand-in by.
pub const UPSTREAM_HOST: &str = "registry.upstream.test";

/// The e-mail of the stand-in's release key.
const KEY: &str = "release@upstream.test";

/// The stand-in upstream registry; stopped when dropped.
pub struct Upstream {
    // Dropped first: the proxy's connections, then the server, then its data.
    proxy: TamperingProxy,
    server: Option<Server>,
    gpg: Gpg,
    data: TempDir,
}

impl Upstream {
    /// Starts the stand-in with `acme/widget` 1.0.0 and 1.1.0 and `acme/gadget` 2.0.0, each
    /// for [`Upstream::platforms`], signed by its key; returns once it serves them all.
    pub fn start() -> Upstream {
        let gpg = Gpg::new();
        gpg.generate(KEY, "rsa2048", "never", None);
        let data = TempDir::new().unwrap();
        let platforms = Upstream::platforms();
        let platforms: Vec<&str> = platforms.iter().map(String::as_str).collect();
        for (type_, version) in [
            ("widget", "1.0.0"),
            ("widget", "1.1.0"),
            ("gadget", "2.0.0"),
        ] {
            write_release(data.path(), &gpg, "acme", type_, version, &platforms);
        }
        let server = Server::start(data.path(), &[]);
        let tls = data.path().join(".tfreg/tls");
        let proxy = TamperingProxy::start(
            &server.url,
            &server.cert,
            &tls.join("cert.pem"),
            &tls.join("key.pem"),
        );
        let upstream = Upstream {
            proxy,
            server: Some(server),
            gpg,
            data,
        };
        for (type_, version) in [
            ("widget", "1.0.0"),
            ("widget", "1.1.0"),
            ("gadget", "2.0.0"),
        ] {
            upstream.wait_served("acme", type_, version, &platforms);
        }
        upstream
    }

    /// The two platforms every release is built for: the one this machine's Terraform
    /// installs for, then another (`darwin_arm64`, or `linux_amd64` on such a Mac).
    pub fn platforms() -> [String; 2] {
        let own = terraform_platform();
        let other = match own.as_str() {
            "darwin_arm64" => "linux_amd64",
            _ => "darwin_arm64",
        };
        [own, other.to_owned()]
    }

    /// `https://127.0.0.1:PORT`: where the registry under test reaches the stand-in (the
    /// proxy in front of it).
    pub fn url(&self) -> &str {
        &self.proxy.url
    }

    /// The stand-in's self-signed certificate (the proxy serves it too).
    pub fn cert(&self) -> PathBuf {
        self.data.path().join(".tfreg/tls/cert.pem")
    }

    /// The stand-in's data directory.
    pub fn data(&self) -> &Path {
        self.data.path()
    }

    /// The `tfreg serve` (or `tfreg sync`) flags that point the registry under test at the
    /// stand-in: `--upstream-host registry.upstream.test=URL --upstream-ca CERT`.
    pub fn registry_args(&self) -> Vec<String> {
        vec![
            "--upstream-host".into(),
            format!("{UPSTREAM_HOST}={}", self.url()),
            "--upstream-ca".into(),
            self.cert().display().to_string(),
        ]
    }

    /// The proxy in front of the stand-in.
    pub fn proxy(&self) -> &TamperingProxy {
        &self.proxy
    }

    /// Switches the proxy's fault from the next request on.
    pub fn set(&self, fault: Fault) {
        self.proxy.set(fault);
    }

    /// The stand-in server itself, while it runs.
    pub fn server(&self) -> &Server {
        self.server.as_ref().expect("the upstream is stopped")
    }

    /// The ID of the stand-in's release key.
    pub fn key_id(&self) -> String {
        self.gpg.key_id(KEY)
    }

    /// The stand-in's ASCII-armored public release key.
    pub fn public_key(&self) -> String {
        String::from_utf8(self.gpg.export(KEY)).unwrap()
    }

    /// Publishes `NS/TYPE` `version` for `platforms`, signed by the stand-in's key, and
    /// waits until the stand-in serves it.
    pub fn publish_release(&self, namespace: &str, type_: &str, version: &str, platforms: &[&str]) {
        write_release(
            self.data.path(),
            &self.gpg,
            namespace,
            type_,
            version,
            platforms,
        );
        self.wait_served(namespace, type_, version, platforms);
    }

    fn wait_served(&self, namespace: &str, type_: &str, version: &str, platforms: &[&str]) {
        let server = self.server();
        let path = format!("/v1/providers/{namespace}/{type_}/versions");
        let mut last = String::new();
        let served = wait_until(Duration::from_secs(30), || {
            let (status, body) = server.get(&path);
            last = format!("{status} {body}");
            let Ok(json) = serde_json::from_str::<serde_json::Value>(&body) else {
                return false;
            };
            let Some(entry) = json["versions"]
                .as_array()
                .and_then(|all| all.iter().find(|v| v["version"] == version))
            else {
                return false;
            };
            let listed: Vec<String> = entry["platforms"]
                .as_array()
                .map(|all| {
                    all.iter()
                        .map(|p| {
                            format!(
                                "{}_{}",
                                p["os"].as_str().unwrap_or(""),
                                p["arch"].as_str().unwrap_or("")
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            platforms.iter().all(|p| listed.iter().any(|l| l == p))
        });
        assert!(
            served,
            "the stand-in upstream does not serve {namespace}/{type_} {version} for {platforms:?}; \
             its last answer to {path}: {last}\n`tfreg status`:\n{}",
            tfreg_status(&["--data", self.data.path().to_str().unwrap()], &[])
        );
    }

    /// Stops the stand-in and its proxy: the upstream's URL refuses connections.
    pub fn stop(&mut self) {
        self.proxy.stop();
        self.server = None;
    }

    /// Starts the stand-in again over the same data, reachable at the same URL.
    pub fn resume(&mut self) {
        assert!(self.server.is_none(), "the upstream is running");
        let server = Server::start(self.data.path(), &[]);
        self.proxy.retarget(&server.url, &server.cert);
        self.server = Some(server);
        self.proxy.resume();
    }

    /// True while the stand-in runs.
    pub fn is_running(&self) -> bool {
        self.server.is_some()
    }
}

/// Writes a signed release into a data directory as goreleaser's `dist/` holds it, under
/// `providers/NS/TYPE/VERSION/`, and the signing key under `keys/NS/`.
fn write_release(
    data: &Path,
    gpg: &Gpg,
    namespace: &str,
    type_: &str,
    version: &str,
    platforms: &[&str],
) {
    let key = format!("keys/{namespace}/upstream.asc");
    if !data.join(&key).is_file() {
        publish(data, &key, &gpg.export(KEY));
    }
    let files = provider_release(type_, version, platforms);
    let dir = format!("providers/{namespace}/{type_}/{version}");
    let (sums_name, sums) = files.last().unwrap();
    // The signature first and the zips last: the release appears whole once they arrive.
    publish(
        data,
        &format!("{dir}/{sums_name}.sig"),
        &gpg.sign(KEY, sums, None),
    );
    for (name, content) in files.iter().rev() {
        publish(data, &format!("{dir}/{name}"), content);
    }
}
