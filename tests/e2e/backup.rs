//! Backup and restore on one host (docs/one-host.md): a copy taken with
//! `packaging/systemd/tfreg-backup` while the server serves and publishers keep publishing
//! restores to a registry that serves the same answers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tfreg_e2e::{
    client_trusting, provider_release, publish, tar_gz, wait_until, workspace_root, Gpg, Server,
    TempDir,
};

const HOST: &str = "registry.example.test";
const SIGNER: &str = "release@example.test";
const PLATFORMS: [&str; 2] = ["linux_amd64", "linux_arm64"];

/// Modules published before the backup: (address, version).
const MODULES: [(&str, &str); 3] = [
    ("acme/network/aws", "1.0.0"),
    ("acme/network/aws", "1.1.0"),
    ("acme/dns/aws", "0.1.0"),
];

fn module(address: &str, version: &str) -> Vec<u8> {
    tar_gz(&[(
        "main.tf",
        &format!("output \"v\" {{ value = \"{address} {version}\" }}\n"),
    )])
}

fn module_key(address: &str, version: &str) -> String {
    format!("modules/{address}/{version}.tar.gz")
}

/// Writes a file as `tfreg publish` does: a hidden temporary file in the same folder,
/// renamed into place.
fn publish_atomically(data: &Path, key: &str, content: &[u8]) {
    let target = data.join(key);
    let folder = target.parent().unwrap();
    std::fs::create_dir_all(folder).unwrap();
    let name = target.file_name().unwrap().to_str().unwrap();
    let temporary = folder.join(format!(".{name}.e2e-publish"));
    std::fs::write(&temporary, content).unwrap();
    std::fs::rename(&temporary, &target).unwrap();
}

/// A signed release's files in the order `tfreg publish` writes them (signature last).
fn signed_release(gpg: &Gpg, type_: &str, version: &str) -> Vec<(String, Vec<u8>)> {
    let dir = format!("providers/acme/{type_}/{version}");
    let mut files: Vec<(String, Vec<u8>)> = provider_release(type_, version, &PLATFORMS)
        .into_iter()
        .map(|(name, content)| (format!("{dir}/{name}"), content))
        .collect();
    let (sums_key, sums) = files.last().unwrap().clone();
    files.push((format!("{sums_key}.sig"), gpg.sign(SIGNER, &sums, None)));
    files
}

/// A client of one server with one token.
struct Reader {
    http: reqwest::blocking::Client,
    url: String,
    token: String,
}

impl Reader {
    fn of(server: &Server, token: &str) -> Reader {
        Reader {
            http: client_trusting(&server.cert),
            url: server.url.clone(),
            token: token.to_owned(),
        }
    }

    fn get(&self, path_or_url: &str) -> reqwest::blocking::Response {
        let url = match path_or_url.starts_with("https://") {
            true => path_or_url.to_owned(),
            false => format!("{}{path_or_url}", self.url),
        };
        self.http.get(url).bearer_auth(&self.token).send().unwrap()
    }

    /// `(status, JSON)` of an API answer.
    fn json(&self, path: &str) -> (u16, Value) {
        let response = self.get(path);
        let status = response.status().as_u16();
        let body = response.text().unwrap();
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    /// The bytes behind a download URL (signed; sent without the token, as Terraform does).
    fn bytes(&self, url: &str) -> Vec<u8> {
        let response = self.http.get(url).send().unwrap();
        assert_eq!(response.status().as_u16(), 200, "{url}");
        response.bytes().unwrap().to_vec()
    }

    /// A module version's archive, or `None` when the version is not served.
    fn module(&self, address: &str, version: &str) -> Option<Vec<u8>> {
        let response = self.get(&format!("/v1/modules/{address}/{version}/download"));
        if response.status().as_u16() == 404 {
            return None;
        }
        assert_eq!(response.status().as_u16(), 204, "{address} {version}");
        let url = response.headers()["x-terraform-get"]
            .to_str()
            .unwrap()
            .to_owned();
        Some(self.bytes(&url))
    }

    fn module_versions(&self, address: &str) -> Vec<String> {
        let (status, json) = self.json(&format!("/v1/modules/{address}/versions"));
        if status == 404 {
            return vec![];
        }
        assert_eq!(status, 200, "{json}");
        json["modules"][0]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["version"].as_str().unwrap().to_owned())
            .collect()
    }

    /// A provider's versions answer, by version.
    fn provider_versions(&self, type_: &str) -> BTreeMap<String, Value> {
        let (status, json) = self.json(&format!("/v1/providers/acme/{type_}/versions"));
        if status == 404 {
            return BTreeMap::new();
        }
        assert_eq!(status, 200, "{json}");
        json["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["version"].as_str().unwrap().to_owned(), v.clone()))
            .collect()
    }

    /// A provider version's download answer for one platform (URLs reduced to their path:
    /// the host and signature differ between servers), with the bytes behind each URL.
    fn provider_download(&self, type_: &str, version: &str, platform: &str) -> (Value, Value) {
        let (os, arch) = platform.split_once('_').unwrap();
        let path = format!("/v1/providers/acme/{type_}/{version}/download/{os}/{arch}");
        let (status, mut answer) = self.json(&path);
        assert_eq!(status, 200, "{path}: {answer}");
        let mut bytes = serde_json::Map::new();
        for field in ["download_url", "shasums_url", "shasums_signature_url"] {
            let url = answer[field].as_str().unwrap().to_owned();
            bytes.insert(field.into(), Value::from(self.bytes(&url)));
            answer[field] = Value::from(url_path(&url));
        }
        (answer, Value::Object(bytes))
    }
}

/// A URL without its scheme, host and query.
fn url_path(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = &rest[rest.find('/').unwrap_or(rest.len())..];
    path.split('?').next().unwrap().to_owned()
}

fn run(command: &mut Command) {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// What the background publisher put in place, in order.
enum Published {
    Module(String, Vec<u8>),
    Release(String, Vec<(String, Vec<u8>)>),
}

#[test]
fn a_copy_taken_while_serving_and_publishing_restores_to_the_same_answers() {
    // Given modules and a signed provider release, served by a registry that needs tokens,
    let data = TempDir::new().unwrap();
    for (address, version) in MODULES {
        publish(
            data.path(),
            &module_key(address, version),
            &module(address, version),
        );
    }
    let gpg = Gpg::new();
    gpg.generate(SIGNER, "rsa2048", "never", None);
    publish(data.path(), "keys/acme/release.asc", &gpg.export(SIGNER));
    for (key, content) in signed_release(&gpg, "widget", "1.0.0") {
        publish(data.path(), &key, &content);
    }
    // (and a large file outside the layout, copied before the modules and providers, so
    // that publishing goes on between the copy of the pins and that of the files)
    let filler = data.path().join("aaa-filler");
    std::fs::create_dir_all(&filler).unwrap();
    let block: Vec<u8> = (0..1024 * 1024)
        .map(|i: u64| (i * 7919 % 251) as u8)
        .collect();
    std::fs::write(filler.join("blob"), block.repeat(64)).unwrap();
    let mut server = Server::start_private(data.path(), &["--hostname", HOST]);
    let token = server.create_token(&["--description", "backup e2e"]);
    let reader = Reader::of(&server, &token);
    assert!(
        wait_until(Duration::from_secs(30), || {
            reader.module_versions("acme/network/aws").len() == 2
                && reader.module_versions("acme/dns/aws").len() == 1
                && reader.provider_versions("widget").contains_key("1.0.0")
        }),
        "not served:\n{}",
        server.log()
    );
    // (one module's file overwritten in place after it was served: its pin keeps it)
    let overwritten = module_key("acme/dns/aws", "0.1.0");
    publish(data.path(), &overwritten, &module("acme/dns/aws", "other"));

    // and their answers,
    let before_modules: Vec<Vec<u8>> = MODULES
        .iter()
        .map(|(a, v)| reader.module(a, v).expect("served"))
        .collect();
    assert_eq!(before_modules[2], module("acme/dns/aws", "0.1.0"));
    // (a download URL handed out now: signed with the key the backup keeps)
    let handed_out = reader
        .get("/v1/modules/acme/dns/aws/0.1.0/download")
        .headers()["x-terraform-get"]
        .to_str()
        .unwrap()
        .to_owned();
    let original_url = server.url.clone();
    let before_versions = [
        reader.json("/v1/modules/acme/network/aws/versions").1,
        reader.json("/v1/modules/acme/dns/aws/versions").1,
        reader.json("/v1/providers/acme/widget/versions").1,
    ];
    let before_downloads: Vec<(Value, Value)> = PLATFORMS
        .iter()
        .map(|p| reader.provider_download("widget", "1.0.0", p))
        .collect();

    // when a backup is taken with the documented command while one thread keeps publishing
    // new module versions and signed releases, and another keeps reading,
    let releases: Vec<Vec<(String, Vec<u8>)>> = (1..=4)
        .map(|i| signed_release(&gpg, "gadget", &format!("1.{i}.0")))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let published = Arc::new(Mutex::new(Vec::<Published>::new()));
    let publisher = {
        let (stop, published, data) = (
            Arc::clone(&stop),
            Arc::clone(&published),
            data.path().to_path_buf(),
        );
        std::thread::spawn(move || {
            let mut releases = releases.into_iter();
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                let version = format!("2.0.{i}");
                let bytes = module("acme/network/aws", &version);
                publish_atomically(&data, &module_key("acme/network/aws", &version), &bytes);
                published
                    .lock()
                    .unwrap()
                    .push(Published::Module(version, bytes));
                if i % 3 == 1 {
                    if let Some(files) = releases.next() {
                        let version = files[0].0.split('/').nth(3).unwrap().to_owned();
                        for (key, content) in &files {
                            publish_atomically(&data, key, content);
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        published
                            .lock()
                            .unwrap()
                            .push(Published::Release(version, files));
                    }
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(15));
            }
        })
    };
    let failures = Arc::new(AtomicUsize::new(0));
    let requester = {
        let (stop, failures) = (Arc::clone(&stop), Arc::clone(&failures));
        let reader = Reader::of(&server, &token);
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                for path in [
                    "/v1/modules/acme/network/aws/versions",
                    "/v1/providers/acme/widget/versions",
                    "/v1/modules/acme/dns/aws/0.1.0/download",
                ] {
                    let answer = reader
                        .http
                        .get(format!("{}{path}", reader.url))
                        .bearer_auth(&reader.token)
                        .send();
                    if !answer.is_ok_and(|a| a.status().is_success()) {
                        failures.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
        })
    };
    assert!(wait_until(Duration::from_secs(10), || {
        published.lock().unwrap().len() >= 4
    }));
    let backups = TempDir::new().unwrap();
    let backup = backups.path().join("tfreg-backup");
    let script = workspace_root().join("packaging/systemd/tfreg-backup");
    run(Command::new("bash")
        .arg(&script)
        .arg(data.path())
        .arg(&backup));
    let state = backup.join(".tfreg");
    for kept in [
        "pins",
        "kept",
        "tokens.json",
        "url-signing.key",
        "tls/cert.pem",
    ] {
        assert!(state.join(kept).exists(), "{kept} is not in the backup");
    }
    for derived in [
        "index.json",
        "index.journal",
        "served.json",
        "indexing.json",
    ] {
        assert!(!state.join(derived).exists(), "{derived} is in the backup");
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::SeqCst);
    publisher.join().unwrap();
    requester.join().unwrap();
    assert_eq!(failures.load(Ordering::SeqCst), 0, "{}", server.log());
    assert!(server.terminate(Duration::from_secs(10)));

    // and restored into a fresh directory (as the docs say) that a new server serves,
    let restored_parent = TempDir::new().unwrap();
    let restored: PathBuf = restored_parent.path().join("tfreg");
    run(Command::new("cp").arg("-a").arg(&backup).arg(&restored));
    let server = Server::start_private(&restored, &["--hostname", HOST]);
    let reader = Reader::of(&server, &token);

    // then the token still works, and every version published before the backup is served
    // with the same versions and download answers and the same bytes,
    assert!(
        wait_until(Duration::from_secs(30), || {
            let network = reader.module_versions("acme/network/aws");
            network.contains(&"1.0.0".to_owned())
                && network.contains(&"1.1.0".to_owned())
                && reader.module_versions("acme/dns/aws").len() == 1
                && reader.provider_versions("widget").contains_key("1.0.0")
        }),
        "not served after the restore:\n{}",
        server.log()
    );
    for ((address, version), bytes) in MODULES.iter().zip(&before_modules) {
        assert_eq!(
            reader.module(address, version).as_ref(),
            Some(bytes),
            "{address} {version}"
        );
    }
    assert_eq!(
        reader.json("/v1/modules/acme/dns/aws/versions").1,
        before_versions[1]
    );
    assert_eq!(
        reader.json("/v1/providers/acme/widget/versions").1,
        before_versions[2]
    );
    let network = reader.json("/v1/modules/acme/network/aws/versions").1;
    for version in before_versions[0]["modules"][0]["versions"]
        .as_array()
        .unwrap()
    {
        assert!(
            network["modules"][0]["versions"]
                .as_array()
                .unwrap()
                .contains(version),
            "{version} not in {network}"
        );
    }
    for (platform, before) in PLATFORMS.iter().zip(&before_downloads) {
        assert_eq!(
            &reader.provider_download("widget", "1.0.0", platform),
            before,
            "{platform}"
        );
    }
    let (status, _) =
        Reader::of(&server, "tfr_not-a-token").json("/v1/providers/acme/widget/versions");
    assert_eq!(status, 401);
    // A download URL the first server handed out works on the restored one (the URL
    // signing key, which also signs web sessions, was kept), for the overwritten module too.
    let handed_out = handed_out.replacen(&original_url, &server.url, 1);
    assert!(handed_out.starts_with(&server.url), "{handed_out}");
    assert_eq!(reader.bytes(&handed_out), before_modules[2]);

    // every version published during the copy is whole or absent,
    let published = std::mem::take(&mut *published.lock().unwrap());
    let network = reader.module_versions("acme/network/aws");
    let gadget = reader.provider_versions("gadget");
    let (mut present, mut absent) = (0, 0);
    for item in &published {
        match item {
            Published::Module(version, bytes) => match network.contains(version) {
                true => {
                    assert_eq!(
                        reader.module("acme/network/aws", version).as_ref(),
                        Some(bytes),
                        "module version {version}"
                    );
                    present += 1;
                }
                false => {
                    assert_eq!(reader.module("acme/network/aws", version), None);
                    absent += 1;
                }
            },
            Published::Release(version, files) => match gadget.get(version) {
                Some(entry) => {
                    assert_eq!(
                        entry["platforms"].as_array().unwrap().len(),
                        PLATFORMS.len(),
                        "half a release: {entry}"
                    );
                    for platform in PLATFORMS {
                        let (_, bytes) = reader.provider_download("gadget", version, platform);
                        let zip = files
                            .iter()
                            .find(|(k, _)| k.ends_with(&format!("_{platform}.zip")))
                            .unwrap();
                        assert_eq!(bytes["download_url"], Value::from(zip.1.clone()));
                        let sums = files.iter().find(|(k, _)| k.ends_with("SHA256SUMS"));
                        assert_eq!(bytes["shasums_url"], Value::from(sums.unwrap().1.clone()));
                    }
                    present += 1;
                }
                None => absent += 1,
            },
        }
    }
    eprintln!("published while the backup was taken: {present} restored, {absent} not in it");
    assert!(present > 0, "nothing published during the copy was in it");

    // and a published version's pin holds in the restored directory: different bytes
    // copied over it are refused, and the version keeps its bytes.
    let key = module_key("acme/network/aws", "1.0.0");
    publish(&restored, &key, &module("acme/network/aws", "changed"));
    assert!(
        wait_until(Duration::from_secs(15), || server.log().lines().any(|l| l
            .contains(&key)
            && l.contains("was published with sha256"))),
        "not refused:\n{}",
        server.log()
    );
    assert_eq!(
        reader.module("acme/network/aws", "1.0.0").as_ref(),
        Some(&before_modules[0])
    );
}
