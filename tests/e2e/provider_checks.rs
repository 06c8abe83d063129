//! Provider releases that Terraform refuses at install are refused at publish, with the
//! reason, in the local and the AWS shape; and each is served raw (a static site standing in
//! for a registry without checks) to the real `terraform init`, which fails on it with its
//! own message. What Terraform accepts is served. Releases are grouped into few `terraform`
//! runs: Terraform reports every provider it failed to install, each with its address.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use tfreg_e2e::{
    install_error, provider_release, provider_zip, publish, requires_providers, sha256_hex,
    terraform_platform, test_certificate, tfreg_with_env, upload_tree, wait_until, zip, Gpg, Moto,
    Page, Server, StaticSite, TempDir, Terraform,
};

const HOST: &str = "registry.example.test";
const KEY: &str = "release@example.test";
/// A key made in 2020, so that a signature it made can have expired since.
const OLD_KEY: &str = "old@example.test";
/// A key nobody trusts.
const STRANGER: &str = "stranger@example.test";

/// The keys releases are signed with, made by gpg as publishers make them.
fn keys() -> Gpg {
    let gpg = Gpg::new();
    gpg.generate(KEY, "rsa2048", "never", None);
    gpg.generate(OLD_KEY, "rsa2048", "never", Some("20200101T000000"));
    gpg.generate(STRANGER, "rsa2048", "never", None);
    gpg
}

/// acme/<type_> 1.0.0 for one platform: its files, and the key that signed it.
struct Release {
    type_: &'static str,
    platform: String,
    files: Vec<(String, Vec<u8>)>,
    key: &'static str,
}

impl Release {
    fn folder(&self) -> String {
        format!("providers/acme/{}/1.0.0", self.type_)
    }

    fn zip_name(&self) -> String {
        format!(
            "terraform-provider-{}_1.0.0_{}.zip",
            self.type_, self.platform
        )
    }

    fn sums_name(&self) -> String {
        format!("terraform-provider-{}_1.0.0_SHA256SUMS", self.type_)
    }

    fn file(&self, name: &str) -> &[u8] {
        let found = self.files.iter().find(|(n, _)| n == name);
        &found.unwrap_or_else(|| panic!("{name}")).1
    }

    /// Writes the release (and its key) into a data directory.
    fn publish_into(&self, data: &Path, gpg: &Gpg) {
        for (name, content) in &self.files {
            publish(data, &format!("{}/{name}", self.folder()), content);
        }
        let key_file = self.key.split('@').next().unwrap();
        publish(
            data,
            &format!("keys/acme/{key_file}.asc"),
            &gpg.export(self.key),
        );
    }

    /// The registry protocol's answers for this release, with no checks: for a static site.
    fn pages(&self, gpg: &Gpg, pages: &mut BTreeMap<String, Page>) {
        let (os, arch) = self.platform.split_once('_').unwrap();
        let base = format!("/providers/acme/{}", self.type_);
        let files = format!("/files/{}", self.type_);
        pages.insert(
            format!("{base}/versions"),
            Page::json(&format!(
                r#"{{"versions":[{{"version":"1.0.0","protocols":["5.0"],"platforms":[{{"os":"{os}","arch":"{arch}"}}]}}]}}"#
            )),
        );
        let download = serde_json::json!({
            "protocols": ["5.0"],
            "os": os,
            "arch": arch,
            "filename": self.zip_name(),
            "download_url": format!("{{origin}}{files}/{}", self.zip_name()),
            "shasums_url": format!("{{origin}}{files}/{}", self.sums_name()),
            "shasums_signature_url": format!("{{origin}}{files}/{}.sig", self.sums_name()),
            "shasum": sha256_hex(self.file(&self.zip_name())),
            "signing_keys": {"gpg_public_keys": [{
                "key_id": gpg.key_id(self.key),
                "ascii_armor": String::from_utf8(gpg.export(self.key)).unwrap(),
            }]},
        });
        pages.insert(
            format!("{base}/1.0.0/download/{os}/{arch}"),
            Page::json(&download.to_string()),
        );
        for (name, content) in &self.files {
            pages.insert(format!("{files}/{name}"), Page::bytes(content.clone()));
        }
    }
}

/// Makes SHA256SUMS from the package's own line (`<sha256>  <file>\n`).
type SumsFrom = Box<dyn Fn(&str) -> String>;

/// What to change in a well-formed release.
#[derive(Default)]
struct Made {
    /// The package instead of one holding `terraform-provider-<type>_v1.0.0`.
    zip: Option<Vec<u8>>,
    sums: Option<SumsFrom>,
    /// Who signs, and gpg's signing arguments (`--detach-sign` by default).
    signer: Option<&'static str>,
    sign_args: Option<&'static [&'static str]>,
    /// Bytes to put before the signature (another signature).
    signature_prefix: Option<Vec<u8>>,
}

fn release(gpg: &Gpg, type_: &'static str, made: Made) -> Release {
    static PLATFORM: OnceLock<String> = OnceLock::new();
    let platform = PLATFORM.get_or_init(terraform_platform).clone();
    let mut files = provider_release(type_, "1.0.0", &[&platform]);
    if let Some(zip) = made.zip {
        files[0].1 = zip;
    }
    let line = format!("{}  {}\n", sha256_hex(&files[0].1), files[0].0);
    files[1].1 = match &made.sums {
        Some(sums) => sums(&line).into_bytes(),
        None => line.into_bytes(),
    };
    let key = made.signer.unwrap_or(KEY);
    let args = made.sign_args.unwrap_or(&["--detach-sign"]);
    let mut signature = made.signature_prefix.unwrap_or_default();
    signature.extend(gpg.sign_as(key, &files[1].1, args));
    let sig_name = format!("{}.sig", files[1].0);
    files.push((sig_name, signature));
    Release {
        type_,
        platform,
        files,
        key,
    }
}

/// A release the registry refuses: which file is refused, why (as `tfreg status` says it),
/// and what Terraform says when it meets the same files.
struct Refused {
    release: Release,
    file: String,
    reason: &'static str,
    terraform: &'static str,
}

/// Every refusal whose files Terraform fails on (the empty SHA256SUMS line, which crashes
/// Terraform, is apart: a crash ends the run).
fn refused(gpg: &Gpg) -> Vec<Refused> {
    let other_zip = provider_zip("gadget", "1.0.0", "elsewhere");
    let sig = |r: Release, reason, terraform| {
        let file = format!("{}.sig", r.sums_name());
        Refused {
            release: r,
            file,
            reason,
            terraform,
        }
    };
    let sums = |r: Release, reason, terraform| Refused {
        file: r.sums_name(),
        release: r,
        reason,
        terraform,
    };
    let package = |r: Release, reason, terraform| Refused {
        file: r.zip_name(),
        release: r,
        reason,
        terraform,
    };
    let signer = |args: &'static [&'static str]| Made {
        sign_args: Some(args),
        ..Made::default()
    };
    let wrong_first = gpg.sign_as(KEY, b"something else", &["--detach-sign"]);
    vec![
        sig(
            release(gpg, "armored", signer(&["--detach-sign", "--armor"])),
            "ASCII-armored",
            "tag byte does not have MSB set",
        ),
        sig(
            release(gpg, "clearsigned", signer(&["--clearsign"])),
            "cleartext-signed",
            "tag byte does not have MSB set",
        ),
        sig(
            release(gpg, "message", signer(&["--sign"])),
            "not a detached signature",
            "non signature packet found",
        ),
        sig(
            release(
                gpg,
                "notation",
                signer(&["--detach-sign", "--sig-notation", "!ci@example.test=1"]),
            ),
            "critical notation",
            "unknown critical notation",
        ),
        sig(
            release(
                gpg,
                "future",
                signer(&["--detach-sign", "--faked-system-time", "20990101T000000"]),
            ),
            "made in the future",
            "signature expired",
        ),
        sig(
            release(
                gpg,
                "lapsed",
                Made {
                    signer: Some(OLD_KEY),
                    sign_args: Some(&[
                        "--detach-sign",
                        "--faked-system-time",
                        "20210101T000000",
                        "--default-sig-expire",
                        "2021-06-01",
                    ]),
                    ..Made::default()
                },
            ),
            "expired at 2021-0",
            "signature expired",
        ),
        sig(
            release(
                gpg,
                "wrongfirst",
                Made {
                    signature_prefix: Some(wrong_first),
                    ..Made::default()
                },
            ),
            "does not match the signed file",
            "invalid signature",
        ),
        sums(
            release(
                gpg,
                "starred",
                Made {
                    sums: Some(Box::new(|line: &str| line.replacen("  ", " *", 1))),
                    ..Made::default()
                },
            ),
            "line 1 marks",
            "checksum list has no SHA-256 hash for",
        ),
        sums(
            release(
                gpg,
                "twice",
                Made {
                    sums: Some(Box::new(move |line: &str| {
                        let (_, name) = line.split_once("  ").unwrap();
                        format!("{}  {name}{line}", "0".repeat(64))
                    })),
                    ..Made::default()
                },
            ),
            "lines 1 and 2 give",
            "checksum list has unexpected SHA-256 hash",
        ),
        sums(
            release(
                gpg,
                "elsewhere",
                Made {
                    sums: Some(Box::new(move |_: &str| {
                        format!(
                            "{}  terraform-provider-elsewhere_0.9.0_linux_amd64.zip\n",
                            sha256_hex(&other_zip)
                        )
                    })),
                    ..Made::default()
                },
            ),
            "line 1 lists terraform-provider-elsewhere_0.9.0_linux_amd64.zip",
            "checksum list has no SHA-256 hash for",
        ),
        sums(
            release(
                gpg,
                "unlisted",
                Made {
                    sums: Some(Box::new(|line: &str| {
                        let (hash, _) = line.split_once("  ").unwrap();
                        format!("{hash}  README.md\n")
                    })),
                    ..Made::default()
                },
            ),
            "lists no package of terraform-provider-unlisted_1.0.0",
            "checksum list has no SHA-256 hash for",
        ),
        package(
            release(
                gpg,
                "infolder",
                Made {
                    zip: Some(zip(&[(
                        "bin/terraform-provider-infolder_v1.0.0",
                        b"#!/bin/sh\n",
                        0o755,
                    )])),
                    ..Made::default()
                },
            ),
            "is inside a folder",
            "could not find executable file starting with terraform-provider-infolder",
        ),
        package(
            release(
                gpg,
                "misnamed",
                Made {
                    zip: Some(provider_zip("misnamedx", "1.0.0", "any")),
                    ..Made::default()
                },
            ),
            "no provider executable at its top level",
            "could not find executable file starting with terraform-provider-misnamed",
        ),
    ]
}

/// Releases the registry serves although they are not as goreleaser makes them, because
/// Terraform installs them: extra lines in SHA256SUMS, an executable without a version, a
/// signature file whose first signature is by a key nobody trusts, a text-mode signature.
fn accepted(gpg: &Gpg) -> Vec<Release> {
    let stranger = gpg.sign_as(STRANGER, b"whatever", &["--detach-sign"]);
    vec![
        release(
            gpg,
            "extralines",
            Made {
                sums: Some(Box::new(|line: &str| {
                    let hash = "a".repeat(64);
                    format!("{line}{hash}  terraform-provider-extralines_1.0.0_manifest.json\n{hash}  README.md\n")
                })),
                ..Made::default()
            },
        ),
        release(
            gpg,
            "unversioned",
            Made {
                zip: Some(zip(&[
                    ("README.md", b"read me", 0o644),
                    ("terraform-provider-unversioned", b"#!/bin/sh\n", 0o755),
                ])),
                ..Made::default()
            },
        ),
        release(
            gpg,
            "strangerfirst",
            Made {
                signature_prefix: Some(stranger),
                ..Made::default()
            },
        ),
        release(
            gpg,
            "textmode",
            Made {
                sign_args: Some(&["--detach-sign", "--textmode"]),
                ..Made::default()
            },
        ),
    ]
}

/// A configuration requiring acme/<type> 1.0.0 for each type.
fn requiring(types: &[&str]) -> String {
    let providers: Vec<(&str, String)> = types
        .iter()
        .map(|t| (*t, format!("{HOST}/acme/{t}")))
        .collect();
    requires_providers(&providers, "1.0.0")
}

/// Terraform's error for one provider, whitespace folded (Terraform wraps its messages).
fn error_for(output: &str, type_: &str) -> String {
    install_error(output, &format!("{HOST}/acme/{type_}"), "1.0.0")
}

/// Serves `releases` raw from a static site, and runs `terraform init` requiring them all.
fn init_from_static_site(gpg: &Gpg, releases: &[&Release]) -> (Terraform, std::process::Output) {
    let tls = TempDir::new().unwrap();
    let (cert, key) = test_certificate(tls.path());
    let mut pages = BTreeMap::new();
    for release in releases {
        release.pages(gpg, &mut pages);
    }
    let site = StaticSite::start(&cert, &key, pages);
    let tf = Terraform::new(&site.host_block(HOST), &cert);
    let types: Vec<&str> = releases.iter().map(|r| r.type_).collect();
    tf.write("main.tf", &requiring(&types));
    let output = tf.run(&["init", "-no-color", "-input=false"]);
    drop(site);
    (tf, output)
}

fn text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The reason `tfreg status` gives for `key`: the line under it in its list of problems.
fn status_reason<'a>(status: &'a str, key: &str) -> &'a str {
    let at = status
        .find(&format!("  {key}\n"))
        .unwrap_or_else(|| panic!("{key} is not reported:\n{status}"));
    status[at..].lines().nth(1).unwrap_or("")
}

#[test]
fn terraform_fails_on_every_release_the_registry_refuses() {
    // Given releases whose files Terraform cannot install, served as they are,
    let gpg = keys();
    let refused = refused(&gpg);
    let releases: Vec<&Release> = refused.iter().map(|r| &r.release).collect();
    // when Terraform installs them all,
    let (_, output) = init_from_static_site(&gpg, &releases);
    let output = text(&output);
    // then it fails on each, with the message the registry's reason quotes.
    for case in &refused {
        let error = error_for(&output, case.release.type_);
        assert!(
            error.contains(case.terraform),
            "{}: {error:?}\n{output}",
            case.release.type_
        );
    }

    // An empty line in SHA256SUMS crashes Terraform.
    let blank = release(
        &gpg,
        "blank",
        Made {
            sums: Some(Box::new(|line: &str| format!("{line}\n"))),
            ..Made::default()
        },
    );
    let (_, output) = init_from_static_site(&gpg, &[&blank]);
    let output = text(&output);
    assert!(
        output.contains("TERRAFORM CRASH") && output.contains("index out of range"),
        "{output}"
    );

    // A SHA256SUMS that also lists another release's package installs, and the lock file
    // then trusts that package's hash for this release: the reason the registry refuses it.
    let other_zip = provider_zip("other", "2.0.0", "anywhere");
    let other_hash = sha256_hex(&other_zip);
    let mixed = release(
        &gpg,
        "mixed",
        Made {
            sums: Some(Box::new(move |line: &str| {
                format!("{line}{other_hash}  terraform-provider-other_2.0.0_linux_amd64.zip\n")
            })),
            ..Made::default()
        },
    );
    let (tf, output) = init_from_static_site(&gpg, &[&mixed]);
    assert!(output.status.success(), "{}", text(&output));
    let lock = std::fs::read_to_string(tf.dir.path().join(".terraform.lock.hcl")).unwrap();
    assert!(
        lock.contains(&format!("\"zh:{}\"", sha256_hex(&other_zip))),
        "{lock}"
    );
}

#[test]
fn the_local_registry_refuses_them_with_the_reason_and_serves_what_terraform_accepts() {
    // Given the refused releases, one SHA256SUMS listing another release's package, and
    // releases Terraform accepts, in a data directory,
    let gpg = keys();
    let data = TempDir::new().unwrap();
    let refused = refused(&gpg);
    let accepted = accepted(&gpg);
    for case in &refused {
        case.release.publish_into(data.path(), &gpg);
    }
    for release in &accepted {
        release.publish_into(data.path(), &gpg);
    }
    let other = provider_zip("gadget", "1.0.0", "linux_amd64");
    let mixed = release(
        &gpg,
        "mixed",
        Made {
            sums: Some(Box::new(move |line: &str| {
                format!(
                    "{line}{}  terraform-provider-gadget_1.0.0_linux_amd64.zip\n",
                    sha256_hex(&other)
                )
            })),
            ..Made::default()
        },
    );
    mixed.publish_into(data.path(), &gpg);
    let server = Server::start(data.path(), &["--hostname", HOST]);

    // then Terraform installs what it accepts (the server indexed every file before it
    // began serving),
    let tf = Terraform::new(&server.printed_cli_config(), &server.cert);
    let types: Vec<&str> = accepted.iter().map(|r| r.type_).collect();
    tf.write("main.tf", &requiring(&types));
    let output = tf.init(&[]);
    for type_ in &types {
        assert!(
            output.contains(&format!("Installed {HOST}/acme/{type_} v1.0.0")),
            "{output}"
        );
    }

    // Once the server has indexed every file (in the background, as it serves),
    let indexed = wait_until(Duration::from_secs(60), || {
        let log = server.log();
        refused.iter().all(|case| log.contains(case.reason))
    });
    // it has logged why each release is refused,
    let log = server.log();
    let missing: Vec<&str> = refused
        .iter()
        .map(|case| case.reason)
        .filter(|reason| !log.contains(reason))
        .collect();
    assert!(indexed, "these reasons are not logged: {missing:?}\n{log}");
    // and none of the refused is offered, by the registry or its mirror.
    for type_ in refused.iter().map(|r| r.release.type_).chain(["mixed"]) {
        let (status, body) = server.get(&format!("/v1/providers/acme/{type_}/versions"));
        assert_eq!(status, 404, "{type_} is offered: {body}");
        let (status, _) = server.get(&format!("/v1/mirror/{HOST}/acme/{type_}/index.json"));
        assert_eq!(status, 404, "{type_} is offered by the mirror");
    }
    // `tfreg status` tells the publisher why, for each.
    let status = tfreg_e2e::tfreg_status(&["--data", data.path().to_str().unwrap()], &[]);
    for case in &refused {
        let key = format!("{}/{}", case.release.folder(), case.file);
        let reason = status_reason(&status, &key);
        assert!(reason.contains(case.reason), "{key}: {reason}");
    }
    let key = format!("{}/{}", mixed.folder(), mixed.sums_name());
    let reason = status_reason(&status, &key);
    assert!(
        reason.contains("line 2 lists terraform-provider-gadget_1.0.0_linux_amd64.zip"),
        "{reason}"
    );
}

#[test]
fn the_aws_shape_refuses_them_with_the_reason() {
    // Given the refused releases uploaded to a bucket,
    let gpg = keys();
    let refused = refused(&gpg);
    let staging = TempDir::new().unwrap();
    for case in &refused {
        case.release.publish_into(staging.path(), &gpg);
    }
    let moto = Moto::start();
    let env = moto.env();
    upload_tree(&moto, staging.path(), BUCKET, TABLE);

    // when the indexer runs over them,
    let out = tfreg_with_env(&["reindex", "--table", TABLE, "--bucket", BUCKET], &env);
    assert!(out.contains("0 failed"), "{out}");

    // then the status of the table gives each reason, and none is served.
    let status = tfreg_e2e::tfreg_status(&["--table", TABLE, "--bucket", BUCKET], &env);
    assert!(!status.contains("served, signed by"), "{status}");
    for case in &refused {
        let key = format!("{}/{}", case.release.folder(), case.file);
        let reason = status_reason(&status, &key);
        assert!(reason.contains(case.reason), "{key}: {reason}");
    }
}

const BUCKET: &str = "tfreg-checks";
const TABLE: &str = "tfreg-checks";
