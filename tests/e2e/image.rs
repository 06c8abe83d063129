//! The container image (packaging/container/Containerfile, built by tools/image.sh): built
//! with podman from this test's tfreg binary, run with the data directory a volume and its
//! port published, and the real `terraform init` installs a module through it.
//!
//! Podman runs rootful with a configuration and storage of its own in a temporary folder
//! (vfs storage, cgroupfs, file events, runc when installed: crun refuses hybrid cgroup
//! hosts), so the test neither reads nor changes the machine's containers or images.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use tfreg_e2e::{
    client_trusting, free_port, module_files, publish, tar_gz, tfreg_bin, wait_until,
    workspace_root, TempDir, Terraform,
};

/// The user the image runs as (packaging/container/passwd).
const UID: u32 = 65532;
const INSTALL: &str = "apt-get install -y podman runc";

/// Podman with a configuration and storage of its own, removed when dropped.
struct Podman {
    dir: TempDir,
}

impl Podman {
    fn new() -> Podman {
        let found = Command::new("podman")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "podman is not installed, and the container image test builds and runs the image \
             with it. Install it (as root): `{INSTALL}`, then run the tests again."
        );
        let dir = TempDir::new().unwrap();
        let root = dir.path();
        let storage = format!(
            "[storage]\ndriver = \"vfs\"\nrunroot = \"{}\"\ngraphroot = \"{}\"\n",
            root.join("run").display(),
            root.join("graph").display()
        );
        std::fs::write(root.join("storage.conf"), storage).unwrap();
        // crun refuses hosts whose cgroups are in hybrid mode; runc runs there too.
        let runc = Command::new("runc")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        let runtime = if runc { "runtime = \"runc\"\n" } else { "" };
        let conf = format!(
            "[containers]\n\
             default_ulimits = [\"nofile=8192:8192\", \"nproc=4096:4096\"]\n\
             [engine]\n\
             cgroup_manager = \"cgroupfs\"\n\
             events_logger = \"file\"\n\
             tmp_dir = \"{}\"\n\
             {runtime}",
            root.join("tmp").display()
        );
        std::fs::write(root.join("containers.conf"), conf).unwrap();
        Podman { dir }
    }

    /// The environment that points podman (and tools/image.sh) at this configuration.
    fn env(&self) -> [(&'static str, PathBuf); 2] {
        [
            ("CONTAINERS_CONF", self.dir.path().join("containers.conf")),
            (
                "CONTAINERS_STORAGE_CONF",
                self.dir.path().join("storage.conf"),
            ),
        ]
    }

    /// `PROGRAM ARGS...` under `timeout`, with this configuration.
    fn within(&self, secs: u32, program: &Path, args: &[&str]) -> Output {
        let output = Command::new("timeout")
            .args(["--kill-after=10", &secs.to_string()])
            .arg(program)
            .args(args)
            .envs(self.env())
            .output()
            .expect("timeout (coreutils) runs");
        assert_ne!(
            output.status.code(),
            Some(124),
            "{} {args:?} took more than {secs}s",
            program.display()
        );
        output
    }

    /// `podman ARGS...`, which must succeed; returns its stdout, trimmed.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.within(120, Path::new("podman"), args);
        assert!(
            output.status.success(),
            "podman {args:?} failed:\n{}",
            text(&output)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }
}

/// A built image, removed when dropped.
struct Image<'a> {
    podman: &'a Podman,
    id: String,
}

impl Drop for Image<'_> {
    fn drop(&mut self) {
        let _ = self
            .podman
            .within(60, Path::new("podman"), &["rmi", "-f", &self.id]);
    }
}

/// A running container, removed (with its anonymous volumes) when dropped; its log is
/// printed when the test fails.
struct Container<'a> {
    podman: &'a Podman,
    name: String,
}

impl Container<'_> {
    fn log(&self) -> String {
        text(
            &self
                .podman
                .within(30, Path::new("podman"), &["logs", &self.name]),
        )
    }
}

impl Drop for Container<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- container log ---\n{}--- end of container log ---",
                self.log()
            );
        }
        let _ = self.podman.within(
            60,
            Path::new("podman"),
            &["rm", "-f", "-v", "-t", "2", &self.name],
        );
    }
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
#[ignore = "deep tier: make test-deep (packaging: builds and runs the image with podman)"]
fn terraform_installs_a_module_through_the_container_image() {
    let podman = Podman::new();

    // Given the image, built by tools/image.sh from this build's binary (a debug build,
    // dynamically linked: --with-libs adds the libraries ldd lists; releases are static),
    let script = workspace_root().join("tools/image.sh");
    let bin = tfreg_bin();
    let output = podman.within(300, &script, &["--with-libs", bin.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "tools/image.sh failed:\n{}",
        text(&output)
    );
    let id = String::from_utf8_lossy(&output.stdout)
        .lines()
        .last()
        .expect("tools/image.sh prints the image id")
        .trim()
        .to_owned();
    assert!(id.starts_with("sha256:"), "not an image id: {id:?}");
    let image = Image {
        podman: &podman,
        id,
    };

    // which runs `tfreg serve` as a user that is not root, over the volume /data,
    let config = podman.ok(&[
        "image",
        "inspect",
        "--format",
        "{{.Config.User}}|{{json .Config.Entrypoint}}|{{json .Config.Cmd}}|{{json .Config.Volumes}}|{{json .Config.ExposedPorts}}",
        &image.id,
    ]);
    assert_eq!(
        config,
        format!(
            "{UID}:{UID}|[\"/tfreg\",\"serve\"]|[\"--data\",\"/data\",\"--listen\",\"0.0.0.0:8443\"]|{{\"/data\":{{}}}}|{{\"8443/tcp\":{{}}}}"
        )
    );
    let healthcheck = podman.ok(&[
        "image",
        "inspect",
        "--format",
        "{{json .Config.Healthcheck}}",
        &image.id,
    ]);

    // when it runs as documented (docs/container.md): a host folder as the volume, owned by
    // the image's user, the port published, the hostname it is reached by,
    let data = TempDir::new().unwrap();
    std::os::unix::fs::chown(data.path(), Some(UID), Some(UID)).unwrap();
    let port = free_port();
    let host = format!("127.0.0.1:{port}");
    let name = format!("tfreg-e2e-image-{}", std::process::id());
    podman.ok(&[
        "run",
        "-d",
        "--name",
        &name,
        "-p",
        &format!("{host}:8443"),
        "-v",
        &format!("{}:/data", data.path().display()),
        "-e",
        &format!("TFREG_HOSTNAME={host}"),
        &image.id,
    ]);
    let container = Container {
        podman: &podman,
        name,
    };

    // then it generates its certificate in the volume and answers discovery over HTTPS
    // through the published port (the probe a health check would make),
    let cert = data.path().join(".tfreg/tls/cert.pem");
    let url = format!("https://{host}");
    let up = wait_until(Duration::from_secs(60), || {
        cert.is_file()
            && client_trusting(&cert)
                .get(format!("{url}/.well-known/terraform.json"))
                .send()
                .is_ok_and(|r| r.status() == 200)
    });
    assert!(up, "the container never answered discovery on {url}");
    // its healthcheck (`tfreg health`) passes,
    assert!(healthcheck.contains("health"), "{healthcheck}");
    podman.ok(&["healthcheck", "run", &container.name]);

    // its process and the files it writes belong to the image's user, not root,
    let pid = podman.ok(&["inspect", "--format", "{{.State.Pid}}", &container.name]);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uids = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .expect("a Uid line");
    assert!(
        uids.split_whitespace()
            .skip(1)
            .all(|u| u == UID.to_string()),
        "the server runs as {uids}"
    );
    for file in [".tfreg/tls/cert.pem", ".tfreg/tls/key.pem", "modules"] {
        let meta = std::fs::metadata(data.path().join(file)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (UID, UID), "{file}");
    }

    // a token is made with the image's own binary (the data directory is the default),
    let token = podman.ok(&[
        "exec",
        &container.name,
        "/tfreg",
        "token",
        "create",
        "--namespace",
        "acme",
        "--expires",
        "1d",
    ]);
    let token = token.lines().last().unwrap_or_default().to_owned();
    assert!(token.starts_with("tfreg_"), "{token:?}");

    // a module is published by copying it into the volume, and is served,
    let files = module_files("1.0.0");
    publish(
        data.path(),
        "modules/acme/network/aws/1.0.0.tar.gz",
        &tar_gz(&[(files[0].0, &files[0].1), (files[1].0, &files[1].1)]),
    );
    let client = client_trusting(&cert);
    let served = wait_until(Duration::from_secs(30), || {
        client
            .get(format!("{url}/v1/modules/acme/network/aws/versions"))
            .bearer_auth(&token)
            .send()
            .is_ok_and(|r| r.status() == 200 && r.text().is_ok_and(|t| t.contains("1.0.0")))
    });
    assert!(served, "the module was never served");
    let anonymous = client
        .get(format!("{url}/v1/modules/acme/network/aws/versions"))
        .send()
        .unwrap();
    assert_eq!(anonymous.status(), 401, "the registry requires tokens");

    // and the real `terraform init` installs it from the container's registry.
    let tf = Terraform::new(
        &format!("credentials \"{host}\" {{\n  token = \"{token}\"\n}}\n"),
        &cert,
    );
    tf.write(
        "main.tf",
        &format!(
            "module \"network\" {{\n  source  = \"{host}/acme/network/aws\"\n  version = \"~> 1.0\"\n}}\n"
        ),
    );
    tf.init(&[]);
    assert_eq!(
        tf.installed_modules().get("network").map(String::as_str),
        Some("1.0.0")
    );
    assert!(tf
        .module_file("network", "main.tf")
        .contains("value = \"1.0.0\""));

    // Stopped, the server (PID 1 in the container) ends on SIGTERM, cleanly.
    podman.ok(&["stop", "-t", "20", &container.name]);
    let exit = podman.ok(&[
        "inspect",
        "--format",
        "{{.State.ExitCode}}",
        &container.name,
    ]);
    assert_eq!(exit, "0", "{}", container.log());
    assert!(
        !data.path().join(".tfreg/served.json").exists(),
        "a clean stop removes served.json"
    );
}
