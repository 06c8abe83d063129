//! `tfreg publish` and `tfreg status` for scripts, as a publisher uses them: a module folder
//! (with local state that must stay behind) and goreleaser's `dist/` published into a data
//! directory that `tfreg serve` watches, then installed by `terraform init`; refusals with
//! their reasons and exit status; and a bucket (moto), in parts, waited on through the table.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tfreg_e2e::{
    provider_release, requires_provider, sha256_hex, terraform_platform, tfreg_run, Gpg, Moto,
    Server, TempDir, Terraform,
};

const HOST: &str = "registry.example.test";
const KEY: &str = "release@example.test";
const REFUSED: i32 = 3;

fn write(root: &Path, path: &str, content: &[u8]) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// A module folder as a working copy has it: configuration, plus Terraform's and git's
/// local state, a state file and a variables file with a secret.
fn module_folder(root: &Path, version: &str) {
    write(
        root,
        "main.tf",
        format!("output \"version\" {{\n  value = \"{version}\"\n}}\n").as_bytes(),
    );
    write(
        root,
        "modules/sub/main.tf",
        b"output \"sub\" { value = 1 }\n",
    );
    write(root, ".terraform/modules/modules.json", b"{}");
    write(root, ".git/HEAD", b"ref: refs/heads/main\n");
    write(root, "terraform.tfstate", b"{\"secret\": \"state\"}");
    write(root, "prod.tfvars", b"password = \"hunter2\"\n");
}

/// goreleaser's `dist/` for acme/`type_` `version`: packages, SHA256SUMS, its binary
/// signature by `gpg`'s key, the manifest, and goreleaser's other files.
fn goreleaser_dist(dist: &Path, gpg: &Gpg, type_: &str, version: &str, platforms: &[&str]) {
    let files = provider_release(type_, version, platforms);
    for (name, content) in &files {
        write(dist, name, content);
    }
    let (sums_name, sums) = files.last().unwrap();
    write(
        dist,
        &format!("{sums_name}.sig"),
        &gpg.sign(KEY, sums, None),
    );
    write(
        dist,
        &format!("terraform-provider-{type_}_{version}_manifest.json"),
        br#"{"version":1,"metadata":{"protocol_versions":["5.0"]}}"#,
    );
    write(dist, "config.yaml", b"project_name: widget\n");
    write(dist, "metadata.json", b"{}");
    write(dist, "artifacts.json", b"[]");
    write(
        dist,
        &format!("terraform-provider-{type_}_linux_amd64_v1/terraform-provider-{type_}_v{version}"),
        b"binary",
    );
}

fn tar_entries(archive: &[u8]) -> Vec<String> {
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(archive));
    tar.entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
        .collect()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn a_module_folder_and_a_goreleaser_dist_are_published_served_and_installed() {
    let gpg = Gpg::new();
    gpg.generate(KEY, "rsa2048", "never", None);
    let data = TempDir::new().unwrap();
    let server = Server::start(data.path(), &["--hostname", HOST]);
    let work = TempDir::new().unwrap();
    let (folder, dist, key) = (
        work.path().join("network"),
        work.path().join("dist"),
        work.path().join("release.asc"),
    );
    module_folder(&folder, "1.0.0");
    let own = terraform_platform();
    goreleaser_dist(&dist, &gpg, "widget", "1.2.0", &[&own, "windows_arm64"]);
    std::fs::write(&key, gpg.export(KEY)).unwrap();

    // When the module folder is published into the served data directory,
    let (code, out, err) = tfreg_run(
        &[
            "publish",
            "module",
            s(&folder),
            "acme/network/aws",
            "1.0.0",
            "--data",
            s(data.path()),
        ],
        &[],
    );
    // then it is checked, uploaded and served, and publish says how to use it,
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("left out (never published): .git/ .terraform/ prod.tfvars terraform.tfstate"),
        "{out}"
    );
    assert!(out.contains("checks passed"), "{out}");
    assert!(
        out.contains("served: module acme/network/aws 1.0.0"),
        "{out}"
    );
    assert!(
        out.contains(&format!("source  = \"{HOST}/acme/network/aws\"")),
        "{out}"
    );
    // as the folder's contents, without its local state.
    let key_path = data.path().join("modules/acme/network/aws/1.0.0.tar.gz");
    let archive = std::fs::read(&key_path).unwrap();
    assert_eq!(
        tar_entries(&archive),
        ["main.tf", "modules/", "modules/sub/", "modules/sub/main.tf"]
    );
    let no_temporary_left = std::fs::read_dir(key_path.parent().unwrap())
        .unwrap()
        .count()
        == 1;
    assert!(no_temporary_left, "a temporary file was left behind");

    // When goreleaser's dist/ is published with the key that signed it,
    let (code, out, err) = tfreg_run(
        &[
            "publish",
            "provider",
            s(&dist),
            "acme/widget",
            "--key",
            s(&key),
            "--data",
            s(data.path()),
        ],
        &[],
    );
    // then it is served for both platforms, signed by that key.
    assert_eq!(code, 0, "{out}{err}");
    let key_id = gpg.key_id(KEY);
    assert!(out.contains("left alone: artifacts.json config.yaml metadata.json terraform-provider-widget_linux_amd64_v1/"), "{out}");
    let mut platforms = [own.clone(), "windows_arm64".to_owned()];
    platforms.sort();
    let served = format!(
        "served: provider acme/widget 1.2.0 for {} (protocols 5.0), signed by key {key_id}",
        platforms.join(" ")
    );
    assert!(out.contains(&served), "{out}");
    assert!(data
        .path()
        .join(format!("keys/acme/{key_id}.asc"))
        .is_file());

    // `tfreg status --json` says the same, in a form a script reads.
    let (code, out, err) = tfreg_run(&["status", "--data", s(data.path()), "--json"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let status: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(status["schema"], 1);
    assert_eq!(status["refused"], 0);
    let module = &status["modules"][0];
    assert_eq!(module["address"], "acme/network/aws");
    assert_eq!(module["versions"][0]["version"], "1.0.0");
    assert_eq!(module["versions"][0]["sha256"], sha256_hex(&archive));
    let release = &status["providers"][0]["versions"][0];
    assert_eq!(
        (release["version"].as_str(), release["served"].as_bool()),
        (Some("1.2.0"), Some(true))
    );
    assert_eq!(release["signed_by"], key_id.as_str());

    // Terraform installs both from the addresses publish printed.
    let tf = Terraform::new(&server.printed_cli_config(), &server.cert);
    tf.write(
        "main.tf",
        &format!(
            "module \"network\" {{\n  source  = \"{HOST}/acme/network/aws\"\n  version = \"1.0.0\"\n}}\n{}",
            requires_provider("widget", &format!("{HOST}/acme/widget"), "1.2.0")
        ),
    );
    let output = tf.init(&[]);
    assert!(
        output.contains(&format!("Installed {HOST}/acme/widget v1.2.0")),
        "{output}"
    );
    assert_eq!(tf.installed_modules()["network"], "1.0.0");
    assert!(tf.module_file("network", "main.tf").contains("1.0.0"));

    // Publishing the same folder again is recognised as identical and changes nothing.
    let before = std::fs::metadata(&key_path).unwrap().modified().unwrap();
    let (code, out, err) = tfreg_run(
        &[
            "publish",
            "module",
            s(&folder),
            "acme/network/aws",
            "1.0.0",
            "--data",
            s(data.path()),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("already published, identical: module acme/network/aws 1.0.0"),
        "{out}"
    );
    assert_eq!(
        std::fs::metadata(&key_path).unwrap().modified().unwrap(),
        before
    );

    // A dry run checks and uploads nothing.
    let (code, out, err) = tfreg_run(
        &[
            "publish",
            "module",
            s(&folder),
            "acme/network/aws",
            "1.1.0",
            "--data",
            s(data.path()),
            "--dry-run",
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("dry run: nothing uploaded"), "{out}");
    assert!(!data
        .path()
        .join("modules/acme/network/aws/1.1.0.tar.gz")
        .exists());
}

#[test]
fn refused_publishes_exit_3_with_the_reason_and_upload_nothing() {
    let gpg = Gpg::new();
    gpg.generate(KEY, "rsa2048", "never", None);
    let data = TempDir::new().unwrap();
    let work = TempDir::new().unwrap();
    let folder = work.path().join("network");
    module_folder(&folder, "1.0.0");
    let publish_module = |version: &str| {
        tfreg_run(
            &[
                "publish",
                "module",
                s(&folder),
                "acme/network/aws",
                version,
                "--data",
                s(data.path()),
                "--no-wait",
            ],
            &[],
        )
    };
    let (code, out, err) = publish_module("1.0.0");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("not waiting"), "{out}");
    let key_path = data.path().join("modules/acme/network/aws/1.0.0.tar.gz");
    let original = std::fs::read(&key_path).unwrap();

    // Given different bytes under a version already published, publish refuses: versions
    // are immutable.
    write(
        &folder,
        "main.tf",
        b"output \"version\" { value = \"changed\" }\n",
    );
    let (code, out, err) = publish_module("1.0.0");
    assert_eq!(code, REFUSED, "{out}{err}");
    assert!(
        err.contains(&format!(
            "version 1.0.0 was published with sha256 {}; publish a new version",
            sha256_hex(&original)
        )),
        "{err}"
    );
    assert_eq!(std::fs::read(&key_path).unwrap(), original);

    // The same version in another format would change what is served: refused too.
    let zip = work.path().join("network-1.0.0.zip");
    std::fs::write(
        &zip,
        tfreg_e2e::zip(&[("main.tf", b"output \"v\" { value = 1 }\n", 0o644)]),
    )
    .unwrap();
    let (code, out, err) = tfreg_run(
        &[
            "publish",
            "module",
            s(&zip),
            "acme/network/aws",
            "1.0.0",
            "--data",
            s(data.path()),
        ],
        &[],
    );
    assert_eq!(code, REFUSED, "{out}{err}");
    assert!(
        err.contains("version 1.0.0 is already published as modules/acme/network/aws/1.0.0.tar.gz"),
        "{err}"
    );
    assert!(!data
        .path()
        .join("modules/acme/network/aws/1.0.0.zip")
        .exists());

    // An unsigned release (no key of the namespace signed it) is refused before any upload,
    // with the registry's own reason.
    let dist = work.path().join("dist");
    goreleaser_dist(&dist, &gpg, "widget", "1.0.0", &["linux_amd64"]);
    let (code, out, err) = tfreg_run(
        &[
            "publish",
            "provider",
            s(&dist),
            "acme/widget",
            "--data",
            s(data.path()),
        ],
        &[],
    );
    assert_eq!(code, REFUSED, "{out}{err}");
    assert!(
        err.contains("would not be served; nothing was uploaded"),
        "{err}"
    );
    assert!(
        err.contains("no usable signing key is published under keys/acme/"),
        "{err}"
    );
    // and the option that fixes it.
    assert!(err.contains("with --key KEY.asc"), "{err}");
    assert!(!data.path().join("providers").exists());

    // A dist/ without its signature is refused, saying what is missing.
    std::fs::remove_file(dist.join("terraform-provider-widget_1.0.0_SHA256SUMS.sig")).unwrap();
    let (code, _, err) = tfreg_run(
        &[
            "publish",
            "provider",
            s(&dist),
            "acme/widget",
            "--data",
            s(data.path()),
        ],
        &[],
    );
    assert_eq!(code, REFUSED, "{err}");
    assert!(err.contains("lacks _SHA256SUMS.sig"), "{err}");

    // Without a server watching the data directory, publish says so instead of hanging.
    let (code, out, err) = publish_module("1.1.0");
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = tfreg_run(
        &[
            "publish",
            "module",
            s(&folder),
            "acme/network/aws",
            "1.2.0",
            "--data",
            s(data.path()),
            "--wait-timeout",
            "2s",
        ],
        &[],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("no `tfreg serve` is watching"), "{err}");

    // `tfreg status` exits 3 when something within its filter is refused, 0 otherwise.
    write(data.path(), "modules/acme/network/aws/latest.tar.gz", b"x");
    let (code, out, _) = tfreg_run(
        &[
            "status",
            "--data",
            s(data.path()),
            "--json",
            "acme/network/aws",
        ],
        &[],
    );
    assert_eq!(code, REFUSED, "{out}");
    let status: serde_json::Value = serde_json::from_str(&out).unwrap();
    let problem = &status["problems"][0];
    assert_eq!(problem["key"], "modules/acme/network/aws/latest.tar.gz");
    assert_eq!(problem["address"], "acme/network/aws");
    assert!(
        problem["reason"]
            .as_str()
            .unwrap()
            .contains("not a semantic version"),
        "{problem}"
    );
    let (code, out, _) = tfreg_run(
        &["status", "--data", s(data.path()), "--namespace", "globex"],
        &[],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Modules:\n  (none)"), "{out}");
}

/// Runs `tfreg reindex` over and over while alive: the S3 events' indexer, for moto.
struct Indexing {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Indexing {
    fn start(env: Vec<(&'static str, String)>, table: &str, bucket: &str) -> Indexing {
        let stop = Arc::new(AtomicBool::new(false));
        let (table, bucket, flag) = (table.to_owned(), bucket.to_owned(), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let _ = tfreg_run(&["reindex", "--table", &table, "--bucket", &bucket], &env);
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        Indexing {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Indexing {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn publishing_to_a_bucket_uploads_in_parts_and_waits_through_the_table() {
    const BUCKET: &str = "tfreg-publish";
    const TABLE: &str = "tfreg-publish";
    let moto = Moto::start();
    let env = moto.env();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let s3 = runtime
        .block_on(async { tfreg_e2e::provision(&moto.sdk_config().await, BUCKET, TABLE).await });
    let _indexing = Indexing::start(env.clone(), TABLE, BUCKET);

    // Given a module folder holding an 11 MiB file (a bundled asset that does not
    // compress), and parts of 5 MiB,
    let work = TempDir::new().unwrap();
    let folder = work.path().join("network");
    module_folder(&folder, "1.0.0");
    let mut asset = Vec::with_capacity(11 << 20);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    while asset.len() < 11 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        asset.extend_from_slice(&x.to_le_bytes());
    }
    write(&folder, "files/asset.bin", &asset);
    let bucket_args = [
        "--bucket",
        BUCKET,
        "--table",
        TABLE,
        "--multipart-threshold",
        "5MiB",
    ];

    // when it is published to the bucket,
    let mut args = vec!["publish", "module", s(&folder), "acme/network/aws", "1.0.0"];
    args.extend_from_slice(&bucket_args);
    let (code, out, err) = tfreg_run(&args, &env);
    // then it went up in three parts, and publish waited until the indexer served it.
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("served: module acme/network/aws 1.0.0"),
        "{out}"
    );
    let key = "modules/acme/network/aws/1.0.0.tar.gz";
    let head = runtime
        .block_on(s3.head_object().bucket(BUCKET).key(key).send())
        .unwrap();
    assert!(
        head.e_tag().unwrap_or_default().ends_with("-3\""),
        "{:?}",
        head.e_tag()
    );
    assert_eq!(head.content_type(), Some("application/gzip"));

    // Published again, it is identical: nothing is uploaded (the object keeps its version).
    let (code, out, err) = tfreg_run(&args, &env);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("already published, identical"), "{out}");
    let again = runtime
        .block_on(s3.head_object().bucket(BUCKET).key(key).send())
        .unwrap();
    assert_eq!(again.version_id(), head.version_id());

    // A signed release and its key go up too, the signature last, and are served.
    let gpg = Gpg::new();
    gpg.generate(KEY, "rsa2048", "never", None);
    let dist = work.path().join("dist");
    goreleaser_dist(
        &dist,
        &gpg,
        "widget",
        "2.0.0",
        &["linux_amd64", "darwin_arm64"],
    );
    let key_file = work.path().join("release.asc");
    std::fs::write(&key_file, gpg.export(KEY)).unwrap();
    let mut args = vec![
        "publish",
        "provider",
        s(&dist),
        "acme/widget",
        "--key",
        s(&key_file),
    ];
    args.extend_from_slice(&bucket_args);
    let (code, out, err) = tfreg_run(&args, &env);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("served: provider acme/widget 2.0.0 for darwin_arm64 linux_amd64"),
        "{out}"
    );
    let uploaded: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("uploaded s3://tfreg-publish/"))
        .collect();
    assert_eq!(uploaded.len(), 6, "{out}");
    assert!(uploaded[0].starts_with("keys/acme/"), "{uploaded:?}");
    assert!(uploaded[5].ends_with("_SHA256SUMS.sig"), "{uploaded:?}");

    // Different bytes under the published module version are refused.
    write(
        &folder,
        "main.tf",
        b"output \"version\" { value = \"changed\" }\n",
    );
    let mut args = vec!["publish", "module", s(&folder), "acme/network/aws", "1.0.0"];
    args.extend_from_slice(&bucket_args);
    let (code, out, err) = tfreg_run(&args, &env);
    assert_eq!(code, REFUSED, "{out}{err}");
    assert!(
        err.contains("version 1.0.0 was published with sha256"),
        "{err}"
    );

    // And the table's status, as JSON, filtered to the namespace.
    let (code, out, err) = tfreg_run(
        &[
            "status",
            "--table",
            TABLE,
            "--bucket",
            BUCKET,
            "--json",
            "--namespace",
            "acme",
        ],
        &env,
    );
    assert_eq!(code, 0, "{out}{err}");
    let status: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(status["modules"][0]["versions"][0]["version"], "1.0.0");
    assert_eq!(status["providers"][0]["versions"][0]["served"], true);
}
