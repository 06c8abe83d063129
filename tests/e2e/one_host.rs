//! One host (docs/one-host.md): the systemd unit verifies and is hardened, and the nginx
//! example, in front of the real server, serves the registry under its public name.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tfreg_e2e::{
    free_port, publish, tar_gz, tfreg_bin, wait_until, workspace_root, Server, TempDir,
};

const PUBLIC: &str = "registry.example.test";

/// The path of `tool`, or a panic saying how to install it.
fn require(tool: &str, package: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "{tool} is missing: install it with `apt-get install -y {package}`"
    );
}

fn packaging(path: &str) -> String {
    std::fs::read_to_string(workspace_root().join("packaging").join(path)).unwrap()
}

/// Runs `command`; returns (success, stdout + stderr).
fn run(command: &mut Command) -> (bool, String) {
    let output = command.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[test]
fn the_systemd_unit_verifies_and_exposes_little() {
    require("systemd-analyze", "systemd");
    // The unit as installed, with the binary where this build put it (verify checks that
    // ExecStart is executable), with and without the drop-in for port 443.
    let dir = TempDir::new().unwrap();
    let unit = dir.path().join("tfreg.service");
    let text = packaging("systemd/tfreg.service")
        .replace("/usr/local/bin/tfreg", tfreg_bin().to_str().unwrap());
    std::fs::write(&unit, text).unwrap();
    let (ok, out) = run(Command::new("systemd-analyze").arg("verify").arg(&unit));
    assert!(
        ok && out.trim().is_empty(),
        "systemd-analyze verify:\n{out}"
    );
    // Exposure at most 2.5 ("OK") on systemd's scale of 10.
    let (ok, out) = run(Command::new("systemd-analyze").args([
        "security",
        "--offline=yes",
        "--threshold=25",
        "--no-pager",
        unit.to_str().unwrap(),
    ]));
    assert!(ok, "systemd-analyze security:\n{out}");
    let drop_in = dir.path().join("tfreg.service.d");
    std::fs::create_dir(&drop_in).unwrap();
    std::fs::write(
        drop_in.join("port-443.conf"),
        packaging("systemd/tfreg-port-443.conf"),
    )
    .unwrap();
    let (ok, out) = run(Command::new("systemd-analyze").arg("verify").arg(&unit));
    assert!(ok && out.trim().is_empty(), "with the drop-in:\n{out}");
    // The backup's service and timer.
    for name in ["tfreg-backup.service", "tfreg-backup.timer"] {
        std::fs::write(dir.path().join(name), packaging(&format!("systemd/{name}"))).unwrap();
    }
    let (ok, out) = run(Command::new("systemd-analyze")
        .arg("verify")
        .arg(dir.path().join("tfreg-backup.timer"))
        .arg(dir.path().join("tfreg-backup.service")));
    assert!(ok && out.trim().is_empty(), "the backup's units:\n{out}");
}

/// nginx in the foreground with `config` (an `http` block's content), stopped when dropped.
struct Nginx {
    child: Child,
    log: std::path::PathBuf,
}

impl Nginx {
    fn start(dir: &Path, site: &str) -> Nginx {
        std::fs::write(dir.join("tfreg.conf"), site).unwrap();
        let log = dir.join("error.log");
        let config = dir.join("nginx.conf");
        std::fs::write(
            &config,
            format!(
                "pid {d}/nginx.pid;\nerror_log {log};\nevents {{}}\nhttp {{\n    access_log off;\n    include {d}/tfreg.conf;\n}}\n",
                d = dir.display(),
                log = log.display()
            ),
        )
        .unwrap();
        let prefix = format!("{}/", dir.display());
        let (ok, out) = run(Command::new("nginx")
            .args(["-t", "-p", &prefix, "-c"])
            .arg(&config));
        assert!(ok, "nginx -t:\n{out}");
        let child = Command::new("nginx")
            .args(["-p", &prefix, "-g", "daemon off;", "-c"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Nginx { child, log }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "--- nginx error log ---\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
        }
    }
}

#[test]
fn nginx_in_front_serves_the_registry_under_its_public_name() {
    require("nginx", "nginx");
    // Given a registry whose public name is the proxy's, and nginx in front of it with the
    // example configuration (a certificate for the public name, tfreg's generated one trusted
    // for the upstream connection, test ports),
    let (data, dir) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let (server, archive, pem, cert_path, key_path) =
        registry_and_certificate(data.path(), dir.path());
    let (https, http) = (free_port(), free_port());
    let site = packaging("nginx/tfreg.conf")
        .replace(
            "/etc/letsencrypt/live/registry.example.com/fullchain.pem",
            &cert_path,
        )
        .replace(
            "/etc/letsencrypt/live/registry.example.com/privkey.pem",
            &key_path,
        )
        .replace(
            "/etc/nginx/tfreg-upstream.pem",
            server.cert.to_str().unwrap(),
        )
        .replace("registry.example.com", PUBLIC)
        .replace("127.0.0.1:8443", &server.addr)
        .replace("listen 443 ssl", &format!("listen 127.0.0.1:{https} ssl"))
        .replace("listen 80;", &format!("listen 127.0.0.1:{http};"))
        .lines()
        .filter(|l| !l.contains("listen [::]"))
        .collect::<Vec<_>>()
        .join("\n");
    let nginx = Nginx::start(dir.path(), &site);
    serves_under_public_name(&pem, https, &archive);
    // Plain HTTP is sent to HTTPS.
    let plain = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!(
            "http://127.0.0.1:{http}/v1/modules/acme/network/aws/versions"
        ))
        .header("host", PUBLIC)
        .send()
        .unwrap();
    assert_eq!(plain.status().as_u16(), 301);
    drop(nginx);
}

/// Through a proxy listening on `https` with the certificate `cert_pem` for [`PUBLIC`]:
/// discovery answers, a module's download URL names the public host (the Host header
/// reached tfreg), and through the proxy it gives `archive`.
fn serves_under_public_name(cert_pem: &str, https: u16, archive: &[u8]) {
    let cert = cert_pem;
    let client = reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(cert.as_bytes()).unwrap())
        .resolve(PUBLIC, ([127, 0, 0, 1], https).into())
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let base = format!("https://{PUBLIC}:{https}");
    assert!(
        wait_until(Duration::from_secs(10), || client
            .get(format!("{base}/.well-known/terraform.json"))
            .send()
            .is_ok_and(|r| r.status().is_success())),
        "the proxy does not answer"
    );

    // when Terraform asks the proxy for a module,
    let download = client
        .get(format!("{base}/v1/modules/acme/network/aws/1.0.0/download"))
        .send()
        .unwrap();
    assert_eq!(download.status().as_u16(), 204);
    let url = download.headers()["x-terraform-get"]
        .to_str()
        .unwrap()
        .to_owned();

    // then the URL it gets names the public host (the Host header reached tfreg), and
    // through the proxy it gives the archive's bytes.
    let prefix = format!("https://{PUBLIC}/v1/artifacts/");
    assert!(url.starts_with(&prefix), "{url}");
    let through = url.replacen(
        &format!("https://{PUBLIC}/"),
        &format!("https://{PUBLIC}:{https}/"),
        1,
    );
    let bytes = client.get(&through).send().unwrap();
    assert_eq!(bytes.status().as_u16(), 200, "{through}");
    assert_eq!(bytes.bytes().unwrap().to_vec(), archive);
}

/// A registry with one module whose public name is [`PUBLIC`], and a certificate for that
/// name in `dir` (the proxy's): (server, archive, certificate PEM, certificate, key).
fn registry_and_certificate(data: &Path, dir: &Path) -> (Server, Vec<u8>, String, String, String) {
    let archive = tar_gz(&[("main.tf", "output \"v\" { value = 1 }\n")]);
    publish(data, "modules/acme/network/aws/1.0.0.tar.gz", &archive);
    let server = Server::start(data, &["--hostname", PUBLIC]);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec![PUBLIC.to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (cert_path, key_path) = (dir.join("public.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    (
        server,
        archive,
        cert.pem(),
        cert_path.display().to_string(),
        key_path.display().to_string(),
    )
}

#[test]
fn caddy_in_front_serves_the_registry_under_its_public_name() {
    require("caddy", "caddy");
    // Given a registry whose public name is the proxy's, and Caddy in front of it with the
    // example Caddyfile (a given certificate instead of one from an ACME CA, test ports,
    // no admin endpoint, its storage in a temporary folder),
    let (data, dir) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let (server, archive, pem, cert, key) = registry_and_certificate(data.path(), dir.path());
    let (https, http) = (free_port(), free_port());
    let global = format!(
        "{{\n\tadmin off\n\tauto_https disable_redirects\n\tskip_install_trust\n\thttp_port {http}\n\thttps_port {https}\n\tstorage file_system {}\n}}\n\nhttps://{PUBLIC}:{https} {{\n\ttls {cert} {key}",
        dir.path().join("storage").display()
    );
    let caddyfile = packaging("caddy/Caddyfile")
        .replace("registry.example.com {", &global)
        .replace(
            "/etc/caddy/tfreg-upstream.pem",
            server.cert.to_str().unwrap(),
        )
        .replace("127.0.0.1:8443", &server.addr);
    let config = dir.path().join("Caddyfile");
    std::fs::write(&config, caddyfile).unwrap();
    let (ok, out) = run(Command::new("caddy")
        .args(["validate", "--adapter", "caddyfile", "--config"])
        .arg(&config)
        .env("HOME", dir.path()));
    assert!(ok, "caddy validate:\n{out}");
    let log = dir.path().join("caddy.log");
    let mut caddy = Command::new("caddy")
        .args(["run", "--adapter", "caddyfile", "--config"])
        .arg(&config)
        .env("HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let outcome = std::panic::catch_unwind(|| serves_under_public_name(&pem, https, &archive));
    let _ = caddy.kill();
    let _ = caddy.wait();
    if let Err(panic) = outcome {
        eprintln!(
            "--- caddy log ---\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn the_backup_script_passes_shellcheck() {
    require("shellcheck", "shellcheck");
    let script = workspace_root().join("packaging/systemd/tfreg-backup");
    let (ok, out) = run(Command::new("shellcheck").arg(&script));
    assert!(ok, "shellcheck {}:\n{out}", script.display());
}
