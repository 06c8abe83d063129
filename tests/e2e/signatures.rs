//! Terraform's verdict on each way a provider release can be signed, and tfreg's, side by
//! side. Each case is signed with `gpg` as publishers sign, then:
//!
//! 1. served raw by a neutral registry (a static site written here, not tfreg) to the real
//!    `terraform init`, which gives Terraform's verdict;
//! 2. published to tfreg as its own provider, in the local shape (`tfreg serve`) and the AWS
//!    shape (`tfreg reindex` into moto);
//! 3. installed through tfreg's upstream cache, with the neutral registry as the upstream.
//!
//! tfreg must serve exactly what Terraform installs, and Terraform must install it through
//! tfreg, except where a case names the registry's own stricter rule. A served release whose
//! key has expired stays served across a restart and a reindex, and `tfreg status` warns of
//! it, and of a key that expires soon.

use std::collections::BTreeMap;
use std::path::Path;

use tfreg_e2e::{
    install_error, installed, mirror_config, provider_release, publish, requires_providers,
    sha256_hex, terraform_platform, test_certificate, tfreg_status, tfreg_with_env, upload_tree,
    Gpg, Moto, Page, Server, StaticSite, TempDir, Terraform,
};

/// The hostname Terraform knows tfreg's own providers by, and the neutral registry's.
const HOST: &str = "registry.example.test";
/// The hostname tfreg's upstream cache knows the neutral registry by.
const UPSTREAM: &str = "registry.upstream.test";
/// Every case is `<case>/sig` 1.0.0: one namespace (and so one key) a case.
const TYPE: &str = "sig";
const VERSION: &str = "1.0.0";

/// What Terraform does with a case, and what tfreg does.
#[derive(Clone, Copy, Debug)]
enum Verdict {
    /// Terraform installs it, and so does tfreg.
    Installs,
    /// Terraform refuses it, with this in its message; tfreg refuses it with the second text
    /// in its reason.
    Refused(&'static str, &'static str),
    /// Terraform installs it; tfreg refuses it by the registry's own declared rule, with this
    /// in its reason. Why the rule exists is said where the case is made.
    RegistryRule(&'static str),
}

/// One signed release.
struct Case {
    name: &'static str,
    verdict: Verdict,
    gpg: Gpg,
    email: String,
    files: Vec<(String, Vec<u8>)>,
}

impl Case {
    fn address(&self, host: &str) -> String {
        format!("{host}/{}/{TYPE}", self.name)
    }

    fn tfreg_serves(&self) -> bool {
        matches!(self.verdict, Verdict::Installs)
    }

    fn folder(&self) -> String {
        format!("providers/{}/{TYPE}/{VERSION}", self.name)
    }

    fn key_file(&self) -> String {
        format!("keys/{}/release.asc", self.name)
    }

    /// Writes the release and its key into a data directory, as publishers upload them.
    fn publish_into(&self, data: &Path) {
        for (name, content) in &self.files {
            publish(data, &format!("{}/{name}", self.folder()), content);
        }
        publish(data, &self.key_file(), &self.gpg.export(&self.email));
    }

    /// The registry protocol's answers for this release, unchecked: for the neutral registry.
    fn pages(&self, pages: &mut BTreeMap<String, Page>) {
        let platform = terraform_platform();
        let (os, arch) = platform.split_once('_').unwrap();
        let base = format!("/providers/{}/{TYPE}", self.name);
        let files = format!("/files/{}", self.name);
        let (zip, sums) = (&self.files[0], &self.files[1]);
        pages.insert(
            format!("{base}/versions"),
            Page::json(&format!(
                r#"{{"versions":[{{"version":"{VERSION}","protocols":["5.0"],"platforms":[{{"os":"{os}","arch":"{arch}"}}]}}]}}"#
            )),
        );
        let download = serde_json::json!({
            "protocols": ["5.0"],
            "os": os,
            "arch": arch,
            "filename": zip.0,
            "download_url": format!("{{origin}}{files}/{}", zip.0),
            "shasums_url": format!("{{origin}}{files}/{}", sums.0),
            "shasums_signature_url": format!("{{origin}}{files}/{}.sig", sums.0),
            "shasum": sha256_hex(&zip.1),
            "signing_keys": {"gpg_public_keys": [{
                "key_id": self.gpg.key_id(&self.email),
                "ascii_armor": String::from_utf8(self.gpg.export(&self.email)).unwrap(),
            }]},
        });
        pages.insert(
            format!("{base}/{VERSION}/download/{os}/{arch}"),
            Page::json(&download.to_string()),
        );
        for (name, content) in &self.files {
            pages.insert(format!("{files}/{name}"), Page::bytes(content.clone()));
        }
    }
}

/// How a case's key is made and its SHA256SUMS signed, in a fresh GnuPG home.
type Make = fn(&Gpg, &str, &[u8]) -> Vec<u8>;

/// A row of the table.
fn row(name: &'static str, verdict: Verdict, make: Make) -> (&'static str, Verdict, Make) {
    (name, verdict, make)
}

fn sign(gpg: &Gpg, email: &str, sums: &[u8]) -> Vec<u8> {
    gpg.sign(email, sums, None)
}

/// Every case: the rows of issue 44's table and more. Keys are made in parallel (RSA key
/// generation is the slow part).
fn cases() -> Vec<Case> {
    use Verdict::*;
    let table = vec![
        row("rsa", Installs, |g, e, s| {
            g.generate(e, "rsa2048", "never", None);
            sign(g, e, s)
        }),
        row("rsasubkey", Installs, |g, e, s| {
            g.generate_for(e, "rsa2048", "cert", "never");
            g.add_signing_subkey(e, "rsa2048");
            sign(g, e, s)
        }),
        row("dsa", Installs, |g, e, s| {
            g.generate(e, "dsa2048", "never", None);
            sign(g, e, s)
        }),
        // GnuPG 2.3+'s default key, as `gpg --quick-gen-key NAME ed25519 sign` makes it.
        row("ed25519", Installs, |g, e, s| {
            g.generate(e, "ed25519", "never", None);
            sign(g, e, s)
        }),
        row("ed25519subkey", Installs, |g, e, s| {
            g.generate_for(e, "ed25519", "cert", "never");
            g.add_signing_subkey(e, "ed25519");
            sign(g, e, s)
        }),
        // Two user IDs, the newer one revoked: the other speaks for the key.
        row("twouids", Installs, |g, e, s| {
            g.generate(e, "rsa2048", "never", None);
            g.add_uid(e, "second <second@example.test>");
            g.revoke_uid(e, "second <second@example.test>");
            sign(g, e, s)
        }),
        // Made in 2020 to expire in 2021, and the release signed in 2020 while it was valid.
        row("keyexpired", Installs, |g, e, s| {
            g.generate(e, "rsa2048", "2021-01-01", Some("20200101T000000"));
            g.sign(e, s, Some("20200601T000000"))
        }),
        row("expiressoon", Installs, |g, e, s| {
            g.generate(e, "rsa2048", "10d", None);
            sign(g, e, s)
        }),
        row(
            "revoked",
            Refused("signature made by revoked key", "has been revoked"),
            |g, e, s| {
                g.generate(e, "rsa2048", "never", None);
                let signature = sign(g, e, s);
                g.revoke(e);
                signature
            },
        ),
        row(
            "revokedsubkey",
            Refused("signature made by revoked key", "which has been revoked"),
            |g, e, s| {
                g.generate_for(e, "rsa2048", "cert", "never");
                g.add_signing_subkey(e, "rsa2048");
                let signature = sign(g, e, s);
                g.revoke_subkey(e);
                signature
            },
        ),
        row(
            "armored",
            Refused("tag byte does not have MSB set", "ASCII-armored"),
            |g, e, s| {
                g.generate(e, "rsa2048", "never", None);
                g.sign_as(e, s, &["--detach-sign", "--armor"])
            },
        ),
        row(
            "sigexpired",
            Refused("signature expired", "expired at 2021-06-01"),
            |g, e, s| {
                g.generate(e, "rsa2048", "never", Some("20200101T000000"));
                let args = [
                    "--detach-sign",
                    "--faked-system-time",
                    "20210101T000000",
                    "--default-sig-expire",
                    "2021-06-01",
                ];
                g.sign_as(e, s, &args)
            },
        ),
        row(
            "future",
            Refused("signature expired", "made in the future"),
            |g, e, s| {
                g.generate(e, "rsa2048", "never", None);
                g.sign(e, s, Some("20990101T000000"))
            },
        ),
        // The registry's rule: a signature made after the key expired is refused. Terraform
        // ignores key expiry altogether, so it installs it. (The date is the signer's claim:
        // the rule stops mistakes; revoking is what stops a thief.)
        row(
            "signedafterexpiry",
            RegistryRule("after the key expired"),
            |g, e, s| {
                g.generate(e, "rsa2048", "never", Some("20200101T000000"));
                let signature = g.sign(e, s, Some("20220101T000000"));
                g.set_expire(e, "2021-01-01", Some("20200601T000000"));
                signature
            },
        ),
        // The registry's rule: an expired signature is refused whatever its key. Terraform
        // stops checking once it finds the key expired, so it installs this one.
        row(
            "bothexpired",
            RegistryRule("Terraform stops checking"),
            |g, e, s| {
                g.generate(e, "rsa2048", "2021-01-01", Some("20200101T000000"));
                let args = [
                    "--detach-sign",
                    "--faked-system-time",
                    "20200601T000000",
                    "--default-sig-expire",
                    "2020-09-01",
                ];
                g.sign_as(e, s, &args)
            },
        ),
    ];
    let platform = terraform_platform();
    std::thread::scope(|scope| {
        let made: Vec<_> = table
            .into_iter()
            .map(|(name, verdict, make)| {
                let platform = platform.clone();
                scope.spawn(move || {
                    let gpg = Gpg::new();
                    let email = format!("{name}@example.test");
                    let mut files = provider_release(TYPE, VERSION, &[&platform]);
                    let signature = make(&gpg, &email, &files[1].1);
                    files.push((format!("{}.sig", files[1].0), signature));
                    Case {
                        name,
                        verdict,
                        gpg,
                        email,
                        files,
                    }
                })
            })
            .collect();
        made.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// `terraform init` requiring every case from `host`, with `cli_config`; its output.
fn init_all(cases: &[Case], host: &str, cli_config: &str, cert: &Path) -> String {
    let tf = Terraform::new(cli_config, cert);
    let providers: Vec<(&str, String)> = cases.iter().map(|c| (c.name, c.address(host))).collect();
    tf.write("main.tf", &requires_providers(&providers, VERSION));
    let output = tf.run(&["init", "-no-color", "-input=false"]);
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The cases `terraform init`'s output says it installed from `host`.
fn installed_cases<'a>(cases: &'a [Case], host: &str, output: &str) -> Vec<&'a str> {
    cases
        .iter()
        .filter(|c| installed(output, &c.address(host), VERSION))
        .map(|c| c.name)
        .collect()
}

/// The cases tfreg should serve.
fn tfreg_serves(cases: &[Case]) -> Vec<&str> {
    cases
        .iter()
        .filter(|c| c.tfreg_serves())
        .map(|c| c.name)
        .collect()
}

/// A case's provider version in `tfreg status --json`.
fn status_of<'a>(status: &'a serde_json::Value, case: &Case) -> &'a serde_json::Value {
    let address = format!("{}/{TYPE}", case.name);
    let provider = status["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["address"] == address.as_str())
        .unwrap_or_else(|| panic!("{address} is not in the status: {status:#}"));
    &provider["versions"][0]
}

/// Checks a status document against every case: served as expected, each refusal with its
/// reason, and the expiry warnings.
fn check_status(cases: &[Case], status: &str, shape: &str) {
    let status: serde_json::Value = serde_json::from_str(status).unwrap();
    let problems = status["problems"].to_string();
    for case in cases {
        let version = status_of(&status, case);
        assert_eq!(
            version["served"].as_bool(),
            Some(case.tfreg_serves()),
            "{shape}: {}: {version:#}",
            case.name
        );
        let reason = match case.verdict {
            Verdict::Installs => continue,
            Verdict::Refused(_, reason) | Verdict::RegistryRule(reason) => reason,
        };
        // The reason is on the version, on its signature file, or on its key file.
        let said = format!("{}{problems}", version["problems"]);
        assert!(
            said.contains(reason),
            "{shape}: {}: {reason:?} in {said}",
            case.name
        );
    }
    // A key that expired, with the release it signed still served, is warned about; and so
    // is a key that expires within 30 days.
    let warnings: Vec<String> = status["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| Some(format!("{}: {}", k["key"], k["warning"].as_str()?)))
        .collect();
    let warned = |name: &str, text: &str| {
        warnings
            .iter()
            .any(|w| w.contains(&format!("keys/{name}/")) && w.contains(text))
    };
    assert!(
        warned("keyexpired", "expired on 2021-01-01"),
        "{shape}: {warnings:#?}"
    );
    assert!(
        warned("expiressoon", "expires on"),
        "{shape}: {warnings:#?}"
    );
    assert!(!warned("rsa", ""), "{shape}: {warnings:#?}");
    let expired = cases.iter().find(|c| c.name == "keyexpired").unwrap();
    let version_warnings = status_of(&status, expired)["warnings"].to_string();
    assert!(
        version_warnings.contains("which expired on 2021-01-01: still served"),
        "{shape}: {version_warnings}"
    );
}

#[test]
fn tfreg_serves_exactly_the_releases_terraform_installs_and_installs_them() {
    let cases = cases();
    let tls = TempDir::new().unwrap();
    let (cert, key) = test_certificate(tls.path());
    let mut pages = BTreeMap::new();
    pages.insert(
        "/.well-known/terraform.json".to_owned(),
        Page::json(r#"{"providers.v1":"/providers/"}"#),
    );
    for case in &cases {
        case.pages(&mut pages);
    }
    let neutral = StaticSite::start(&cert, &key, pages);

    // Terraform's verdicts, from the neutral registry: each as the table says.
    let output = init_all(&cases, HOST, &neutral.host_block(HOST), &cert);
    for case in &cases {
        let error = install_error(&output, &case.address(HOST), VERSION);
        match case.verdict {
            Verdict::Installs | Verdict::RegistryRule(_) => assert!(
                installed(&output, &case.address(HOST), VERSION),
                "Terraform did not install {}: {error}\n{output}",
                case.name
            ),
            Verdict::Refused(terraform, _) => {
                assert!(
                    error.contains(terraform),
                    "{}: {error:?}\n{output}",
                    case.name
                )
            }
        }
    }

    // tfreg's own providers, local shape: Terraform installs exactly what tfreg should serve.
    let data = TempDir::new().unwrap();
    for case in &cases {
        case.publish_into(data.path());
    }
    let mut server = Server::start(data.path(), &["--hostname", HOST]);
    let output = init_all(&cases, HOST, &server.printed_cli_config(), &server.cert);
    assert_eq!(
        installed_cases(&cases, HOST, &output),
        tfreg_serves(&cases),
        "{output}"
    );
    let data_arg = ["--json", "--data", data.path().to_str().unwrap()];
    check_status(&cases, &tfreg_status(&data_arg, &[]), "local");
    let text = tfreg_status(&data_arg[1..], &[]);
    assert!(
        text.contains("\nSigning keys:\n")
            && text.contains("\n  warning: keys/keyexpired/release.asc: key")
            && text.contains("warning: signed by key"),
        "{text}"
    );
    // and a restart keeps serving the release whose key has expired since it was signed.
    assert!(server.terminate(std::time::Duration::from_secs(10)));
    let server = Server::start(data.path(), &["--hostname", HOST]);
    let (status, body) = server.get(&format!("/v1/providers/keyexpired/{TYPE}/versions"));
    assert_eq!(status, 200, "{body}");
    // Its page says so; a key expiring soon is announced on its release's page too.
    for (case, note) in [
        ("keyexpired", "which expired on 2021-01-01: still served"),
        ("expiressoon", "which expires on"),
    ] {
        let (status, page) = server.get(&format!("/providers/{case}/{TYPE}/{VERSION}"));
        assert!(
            status == 200 && page.contains("id=\"key-expiry\""),
            "{case}: {status} {page}"
        );
        assert!(page.contains(note), "{case}: {page}");
    }
    let (_, page) = server.get(&format!("/providers/rsa/{TYPE}/{VERSION}"));
    assert!(!page.contains("key-expiry"), "{page}");
    drop(server);

    // The AWS shape: the same verdicts after a reindex, and after another.
    let moto = Moto::start();
    let env = moto.env();
    upload_tree(&moto, data.path(), "tfreg-signatures", "tfreg-signatures");
    let aws = [
        "--table",
        "tfreg-signatures",
        "--bucket",
        "tfreg-signatures",
    ];
    for _ in 0..2 {
        let reindex: Vec<&str> = ["reindex"].into_iter().chain(aws).collect();
        let out = tfreg_with_env(&reindex, &env);
        assert!(out.contains("0 failed"), "{out}");
        let status: Vec<&str> = ["--json"].into_iter().chain(aws).collect();
        check_status(&cases, &tfreg_status(&status, &env), "aws");
    }

    // The upstream cache, with the neutral registry as its upstream: Terraform installs
    // through it exactly what tfreg should serve.
    let cache_data = TempDir::new().unwrap();
    let upstream = format!("{UPSTREAM}={}", neutral.origin);
    let every_case = format!("{UPSTREAM}/*/{TYPE}");
    let cache = Server::start(
        cache_data.path(),
        &[
            "--upstream",
            &every_case,
            "--upstream-host",
            &upstream,
            "--upstream-ca",
            cert.to_str().unwrap(),
        ],
    );
    let output = init_all(&cases, UPSTREAM, &mirror_config(&cache.url), &cache.cert);
    assert_eq!(
        installed_cases(&cases, UPSTREAM, &output),
        tfreg_serves(&cases),
        "{output}"
    );
}
