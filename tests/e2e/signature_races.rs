//! A full index judges module signatures as the files arriving one by one do (issue: with a
//! namespace policy requiring signed modules and versions whose `.sig` is another
//! namespace's key's or garbage, 5 to 9 of 10 fresh `tfreg status --json` runs, and up to 1
//! in 3 server starts, served one of them: a `.sig`'s event deleted the verdict its
//! archive's event had written meanwhile, and a version without a verdict was served).
//!
//! One data directory, indexed whole many times: by fresh `tfreg status --json` runs, by
//! server starts on fresh copies (whose reads, made while the first index runs, must never
//! see a refused version), and by `tfreg reindex` into fresh tables in the AWS shape. Every
//! time, exactly the well-signed versions are served. The interleavings themselves are
//! explored step by step in the core's `module_signature_races`.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use tfreg_e2e::{
    publish, tar_gz, tfreg_status, tfreg_with_env, upload_tree, Gpg, Moto, Server, TempDir,
};

const SIGNER: &str = "release@acme.test";
const OTHER: &str = "release@other.test";
/// Versions of each module: a third well signed, a third signed by another namespace's
/// key, a third with a garbage signature (and, under the policy, one more unsigned).
const VERSIONS: usize = 12;

/// The directory, and the versions that must be served of each module.
fn data_directory(dir: &Path) -> Vec<(&'static str, BTreeSet<String>)> {
    let gpg = Gpg::new();
    gpg.generate(SIGNER, "rsa2048", "never", None);
    gpg.generate(OTHER, "rsa2048", "never", None);
    publish(dir, "keys/acme/release.asc", &gpg.export(SIGNER));
    publish(dir, "keys/other/release.asc", &gpg.export(OTHER));
    publish(
        dir,
        "keys/acme/policy.json",
        br#"{"require_signed_modules": true}"#,
    );
    let mut good = Vec::new();
    // acme/strict is under the policy; plain/open has none, but a bad signature refuses
    // its version all the same. plain's key is acme's, published under plain too.
    publish(dir, "keys/plain/release.asc", &gpg.export(SIGNER));
    for module in ["acme/strict/aws", "plain/open/aws"] {
        let mut served = BTreeSet::new();
        for i in 0..VERSIONS {
            let version = format!("1.{i}.0");
            let bytes = tar_gz(&[(
                "main.tf",
                &format!("output \"v\" {{ value = \"{module} {version}\" }}\n"),
            )]);
            let archive = format!("modules/{module}/{version}.tar.gz");
            publish(dir, &archive, &bytes);
            let sig = match i % 3 {
                0 => {
                    served.insert(version);
                    gpg.sign(SIGNER, &bytes, None)
                }
                1 => gpg.sign(OTHER, &bytes, None),
                _ => format!("not a signature {i}").into_bytes(),
            };
            publish(dir, &format!("{archive}.sig"), &sig);
        }
        let unsigned = format!("modules/{module}/2.0.0.tar.gz");
        publish(dir, &unsigned, &tar_gz(&[("main.tf", "# unsigned\n")]));
        if module.starts_with("plain/") {
            served.insert("2.0.0".to_owned());
        }
        good.push((module, served));
    }
    good
}

/// The versions `tfreg status --json` says are served, per module.
fn served_by_status(json: &str) -> Vec<(String, BTreeSet<String>)> {
    let doc: serde_json::Value = serde_json::from_str(json).unwrap();
    doc["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let versions = m["versions"].as_array().unwrap().iter();
            (
                m["address"].as_str().unwrap().to_owned(),
                versions
                    .map(|v| v["version"].as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect()
}

fn expected(good: &[(&str, BTreeSet<String>)]) -> Vec<(String, BTreeSet<String>)> {
    good.iter()
        .map(|(m, v)| ((*m).to_owned(), v.clone()))
        .collect()
}

/// A copy of `from` without the registry's own state, as restored or copied elsewhere.
fn fresh_copy(from: &Path) -> TempDir {
    let to = TempDir::new().unwrap();
    let status = std::process::Command::new("cp")
        .args(["-r", "--", &format!("{}/.", from.display())])
        .arg(to.path())
        .status()
        .unwrap();
    assert!(status.success());
    let _ = std::fs::remove_dir_all(to.path().join(".tfreg"));
    to
}

#[test]
fn a_full_index_serves_exactly_the_well_signed_versions_every_time_in_both_shapes() {
    let data = TempDir::new().unwrap();
    let good = data_directory(data.path());
    let want = expected(&good);

    // Local shape: fresh `tfreg status` runs, each indexing the whole directory;
    for run in 0..10 {
        let copy = fresh_copy(data.path());
        let json = tfreg_status(&["--json", "--data", copy.path().to_str().unwrap()], &[]);
        assert_eq!(served_by_status(&json), want, "status run {run}: {json}");
    }
    // server starts on fresh copies, read while they index: a refused version is never
    // served, and the well-signed ones all are in the end.
    for start in 0..3 {
        let copy = fresh_copy(data.path());
        let server = Server::start(copy.path(), &[]);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let served: Vec<(String, BTreeSet<String>)> = good
                .iter()
                .map(|(m, _)| {
                    (
                        (*m).to_owned(),
                        server.module_versions(m).into_iter().collect(),
                    )
                })
                .collect();
            for ((module, now), (_, allowed)) in served.iter().zip(&good) {
                let refused: Vec<&String> = now.difference(allowed).collect();
                assert!(
                    refused.is_empty(),
                    "start {start}: {module} served {refused:?}\n{}",
                    server.log()
                );
            }
            if served == want && server.log().contains("indexed ") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "start {start}: {served:?}\n{}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    // AWS shape: a reindex into a fresh table (its events all indexed side by side).
    let moto = Moto::start();
    let env = moto.env();
    for round in 0..2 {
        let name = format!("tfreg-races-{round}");
        upload_tree(&moto, data.path(), &name, &name);
        let aws = ["--table", &name, "--bucket", &name];
        let reindex: Vec<&str> = ["reindex"].into_iter().chain(aws).collect();
        let out = tfreg_with_env(&reindex, &env);
        assert!(out.contains("0 failed"), "{out}");
        let status: Vec<&str> = ["--json"].into_iter().chain(aws).collect();
        let json = tfreg_status(&status, &env);
        assert_eq!(served_by_status(&json), want, "aws round {round}: {json}");
    }
}
