//! `tfreg lock` against network mirrors written in the test, with the lock file the real
//! `terraform init` made: it adds a mirror's hashes only when the answer agrees with a hash
//! the lock file records (a mirror serving another package, which `init` refuses because of
//! the lock file, is refused, where `terraform providers lock` adds its hashes), writes only
//! hashes of Terraform's forms, and sends the token of the CLI configuration's
//! `credentials` block, as Terraform does, to the mirror's host only (a redirect elsewhere is
//! not followed).

use std::collections::BTreeMap;
use std::io::Cursor;
use std::path::Path;

use tfreg_core::hash::{h1_of_zip, PackageLimits};
use tfreg_e2e::{
    mirror_config, provider_zip, requires_provider, sha256_hex, terraform_platform,
    test_certificate, tfreg_clean_env, Page, StaticSite, TempDir, Terraform,
};

const HOST: &str = "registry.example.test";
const ADDRESS: &str = "registry.example.test/acme/widget";

/// A network mirror serving `registry.example.test/acme/widget` 1.0.0 for `platform`: the
/// package `zip`, listed with `hashes`.
fn mirror(cert: &Path, key: &Path, platform: &str, zip: &[u8], hashes: &[String]) -> StaticSite {
    let base = format!("/v1/mirror/{ADDRESS}");
    let file = format!("terraform-provider-widget_1.0.0_{platform}.zip");
    let version = serde_json::json!({
        "archives": { platform: { "url": file, "hashes": hashes } }
    });
    let pages = BTreeMap::from([
        (
            format!("{base}/index.json"),
            Page::json(r#"{"versions": {"1.0.0": {}}}"#),
        ),
        (
            format!("{base}/1.0.0.json"),
            Page::json(&version.to_string()),
        ),
        (format!("{base}/{file}"), Page::bytes(zip.to_vec())),
    ]);
    StaticSite::start(cert, key, pages)
}

fn h1(zip: &[u8]) -> String {
    h1_of_zip(Cursor::new(zip), &PackageLimits::default()).unwrap()
}

/// `tfreg lock --mirror MIRROR/v1/mirror/ --dir DIR` with exactly `env` (and PATH); returns
/// the exit status and stdout + stderr.
fn tfreg_lock(mirror: &StaticSite, dir: &Path, env: &[(&str, String)]) -> (i32, String) {
    let mirror = format!("{}/v1/mirror/", mirror.origin);
    let args = ["lock", "--mirror", &mirror, "--dir"].map(std::ffi::OsStr::new);
    tfreg_clean_env(&[&args[..], &[dir.as_os_str()]].concat(), env)
}

/// An honest mirror, and a working directory `terraform init` installed the widget in
/// through it, its lock file holding the package's `h1:`.
struct Installed {
    tls: TempDir,
    platform: String,
    zip: Vec<u8>,
    honest: StaticSite,
    tf: Terraform,
}

impl Installed {
    fn new() -> Installed {
        let tls = TempDir::new().unwrap();
        let (cert, key) = test_certificate(tls.path());
        let platform = terraform_platform();
        let zip = provider_zip("widget", "1.0.0", &platform);
        let hashes = [h1(&zip), format!("zh:{}", sha256_hex(&zip))];
        let honest = mirror(&cert, &key, &platform, &zip, &hashes);
        let tf = Terraform::new(&mirror_config(&honest.origin), &cert);
        tf.write("main.tf", &requires_provider("widget", ADDRESS, "1.0.0"));
        tf.init(&[]);
        let installed = Installed {
            tls,
            platform,
            zip,
            honest,
            tf,
        };
        assert!(
            installed.lock().contains(&h1(&installed.zip)),
            "terraform init locked another hash:\n{}",
            installed.lock()
        );
        installed
    }

    fn lock(&self) -> String {
        std::fs::read_to_string(self.tf.dir.path().join(".terraform.lock.hcl")).unwrap()
    }

    fn cert(&self) -> std::path::PathBuf {
        self.tls.path().join("cert.pem")
    }

    /// Another mirror, serving `zip` listed with `hashes`.
    fn other_mirror(&self, zip: &[u8], hashes: &[String]) -> StaticSite {
        let key = self.tls.path().join("key.pem");
        mirror(&self.cert(), &key, &self.platform, zip, hashes)
    }

    /// The environment of `tfreg lock`: the certificate, `home`, and the CLI configuration
    /// `config` names, if any.
    fn env(&self, home: &Path, config: Option<&Path>) -> Vec<(&'static str, String)> {
        let mut env = vec![
            ("SSL_CERT_FILE", self.cert().display().to_string()),
            ("HOME", home.display().to_string()),
        ];
        env.extend(config.map(|c| ("TF_CLI_CONFIG_FILE", c.display().to_string())));
        env
    }
}

#[test]
fn a_mirror_listing_none_of_the_locked_hashes_is_refused_and_the_lock_keeps_protecting() {
    // Given a lock file holding the h1: of the package `terraform init` installed,
    let installed = Installed::new();
    let before = installed.lock();
    let home = TempDir::new().unwrap();
    // and a mirror that now serves another package for the same version, listing only its
    // hashes (consistent with what it serves, so only the lock file can tell),
    let other = provider_zip("widget", "1.0.0", "tampered");
    let other_hashes = [h1(&other), format!("zh:{}", sha256_hex(&other))];
    let lying = installed.other_mirror(&other, &other_hashes);
    // which `terraform init` refuses because of that lock file,
    let through_lying = Terraform::new(&mirror_config(&lying.origin), &installed.cert());
    through_lying.write("main.tf", &requires_provider("widget", ADDRESS, "1.0.0"));
    through_lying.write(".terraform.lock.hcl", &before);
    let refused = through_lying.init_fails();
    assert!(refused.contains("lock file"), "{refused}");

    // when `tfreg lock` asks that mirror, it refuses: a non-zero exit naming the provider and
    // the disagreement, and the lock file byte for byte as it was, still protecting.
    let dir = through_lying.dir.path();
    let (code, out) = tfreg_lock(&lying, dir, &installed.env(home.path(), None));
    assert_ne!(code, 0, "tfreg lock accepted the lying mirror:\n{out}");
    assert!(
        out.contains(ADDRESS) && out.contains("agree with none the lock file records"),
        "{out}"
    );
    assert!(out.contains("is unchanged"), "{out}");
    assert_eq!(
        std::fs::read_to_string(dir.join(".terraform.lock.hcl")).unwrap(),
        before
    );

    // (Terraform's own `providers lock` does not check the recorded hashes: it adds the
    // mirror's, after which `init` installs the other package. That is what tfreg lock
    // refuses to do.)
    let mirror_flag = format!("-net-mirror={}/v1/mirror/", lying.origin);
    let platform_flag = format!("-platform={}", installed.platform);
    through_lying.run_ok(
        &[
            "providers",
            "lock",
            "-no-color",
            &mirror_flag,
            &platform_flag,
        ],
        "terraform providers lock against the lying mirror",
    );
    let widened = std::fs::read_to_string(dir.join(".terraform.lock.hcl")).unwrap();
    assert!(widened.contains(&other_hashes[0]), "{widened}");
    through_lying.init(&[]);

    // The honest mirror's answer agrees, and adds its zh:.
    let (code, out) = tfreg_lock(
        &installed.honest,
        installed.tf.dir.path(),
        &installed.env(home.path(), None),
    );
    assert_eq!(code, 0, "{out}");
    let zh = format!("zh:{}", sha256_hex(&installed.zip));
    assert!(installed.lock().contains(&zh), "{}", installed.lock());
}

#[test]
fn a_malformed_hash_from_the_mirror_is_refused_and_the_lock_file_keeps_installing() {
    // Given the lock file `terraform init` made,
    let installed = Installed::new();
    let before = installed.lock();
    let home = TempDir::new().unwrap();
    // and a mirror listing the right h1: beside an HCL template where a hash should be,
    let hostile = installed.other_mirror(
        &installed.zip,
        &[
            h1(&installed.zip),
            "h1:${file(\"/etc/hostname\")}".to_owned(),
        ],
    );

    // when `tfreg lock` asks it, it refuses, names the hash, and writes nothing,
    let (code, out) = tfreg_lock(
        &hostile,
        installed.tf.dir.path(),
        &installed.env(home.path(), None),
    );
    assert_ne!(code, 0, "tfreg lock took a malformed hash:\n{out}");
    assert!(out.contains("malformed hash"), "{out}");
    assert!(out.contains("/etc/hostname"), "{out}");
    assert_eq!(installed.lock(), before);

    // so the lock file still installs with Terraform.
    std::fs::remove_dir_all(installed.tf.dir.path().join(".terraform")).unwrap();
    installed.tf.init(&[]);
}

#[test]
fn the_token_comes_from_the_cli_configurations_credentials_block_and_stays_on_its_host() {
    // Given the lock file `terraform init` made, a mirror that redirects its answer to
    // another host (the honest mirror), and a CLI configuration holding a token for each
    // mirror's host in `credentials` blocks (no TF_TOKEN_, no --token),
    let installed = Installed::new();
    let path = format!("/v1/mirror/{ADDRESS}/1.0.0.json");
    let mut redirect = Page::header("Location", &format!("{}{path}", installed.honest.origin));
    redirect.status = 302;
    let (cert, key) = (installed.cert(), installed.tls.path().join("key.pem"));
    let redirecting = StaticSite::start(&cert, &key, BTreeMap::from([(path, redirect)]));
    let home = TempDir::new().unwrap();
    let config = home.path().join("terraform.rc");
    std::fs::write(
        &config,
        format!(
            "credentials \"{}\" {{\n  token = \"lock-token\"\n}}\ncredentials \"{}\" {{\n  token = \"redirect-token\"\n}}\ncredentials \"{HOST}\" {{\n  token = \"not-this-one\"\n}}\n",
            installed.honest.addr, redirecting.addr
        ),
    )
    .unwrap();
    let env = installed.env(home.path(), Some(&config));

    // when `tfreg lock` asks the redirecting mirror, it sends that mirror's token, does not
    // follow it to the other host, and fails saying so, the lock file unchanged;
    let before = installed.lock();
    let (code, out) = tfreg_lock(&redirecting, installed.tf.dir.path(), &env);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("302"), "{out}");
    assert_eq!(installed.lock(), before);
    let seen = redirecting.requests();
    assert_eq!(
        seen.last().and_then(|r| r.authorization.as_deref()),
        Some("Bearer redirect-token"),
        "{seen:?}"
    );
    let leaked: Vec<_> = installed
        .honest
        .requests()
        .into_iter()
        .filter(|r| r.authorization.is_some())
        .collect();
    assert!(
        leaked.is_empty(),
        "a token went to another host: {leaked:?}"
    );

    // and when it asks the honest mirror, that mirror gets its own token, as Terraform sends
    // it to the mirror's host.
    let (code, out) = tfreg_lock(&installed.honest, installed.tf.dir.path(), &env);
    assert_eq!(code, 0, "{out}");
    let asked: Vec<_> = installed
        .honest
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/1.0.0.json"))
        .collect();
    let last = asked.last().expect("tfreg lock asked for 1.0.0.json");
    assert_eq!(
        last.authorization.as_deref(),
        Some("Bearer lock-token"),
        "{asked:?}"
    );
}
