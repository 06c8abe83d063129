//! `tools/deploy-release.sh` (what `make deploy-release` runs) deploys a release only when its
//! sums carry a good signature by the release key: the fingerprint of
//! `tools/release-key.fingerprint`, or the one the deployer names with `--release-key`, as
//! the primary key of gpg's `VALIDSIG`. No signature, another key of the deployer's keyring, a
//! revoked release key, a key ID, or no fingerprint at all: refused, and nothing laid out.
//! Deploying without the check takes `--insecure-skip-signature`, which says so on stderr.
//!
//! Each case packs the Lambda bundle with the release's own script (`tools/release-lambda.sh`,
//! over stand-in zips whose `bootstrap` is only an arm64 ELF header), signs the sums with gpg
//! through `tools/release-sums.sh` as the release workflow does, and deploys from a checkout at
//! the release's tag (the script, the fingerprint file and `template.yaml`) in a dry run:
//! everything but `sam deploy`, with the SAM CLI's own `sam validate --lint`.

use std::path::{Path, PathBuf};
use std::process::Command;

use tfreg_e2e::{venv_tool, workspace_root, Gpg, TempDir};
use tfreg_lambda::Function;

const VERSION: &str = "0.0.1";
const RELEASE: &str = "release@tfreg.test";
const OTHER: &str = "other@tfreg.test";

/// A release's assets, a keyring holding the release key and another key, and a checkout at
/// the release's tag whose `tools/release-key.fingerprint` names the release key.
struct Release {
    scratch: TempDir,
    gpg: Gpg,
    release_key: String,
    other_key: String,
}

impl Release {
    fn new() -> Release {
        let scratch = TempDir::new().unwrap();
        let gpg = Gpg::new();
        gpg.generate(RELEASE, "ed25519", "never", None);
        gpg.generate(OTHER, "ed25519", "never", None);
        let release_key = gpg.fingerprints(RELEASE).remove(0);
        let other_key = gpg.fingerprints(OTHER).remove(0);

        // Stand-in Lambda zips: release-lambda.sh checks each bootstrap is an arm64 ELF binary.
        let lambda = scratch.path().join("lambda");
        let mut elf = b"\x7fELF".to_vec();
        elf.resize(18, 0);
        elf.extend(183u16.to_le_bytes()); // EM_AARCH64
        elf.resize(64, 0);
        for function in Function::ALL {
            let dir = lambda.join(function.name());
            std::fs::create_dir_all(&dir).unwrap();
            let zip = tfreg_e2e::zip(&[("bootstrap", &elf, 0o755)]);
            std::fs::write(dir.join("bootstrap.zip"), zip).unwrap();
        }
        let names: Vec<&str> = Function::ALL.iter().map(|f| f.name()).collect();
        let packed = Command::new(workspace_root().join("tools/release-lambda.sh"))
            .args([VERSION, "arm64"])
            .arg(scratch.path().join("assets"))
            .args(&names)
            .env("LAMBDA_DIR", &lambda)
            .env_remove("SIGN_KEY")
            .output()
            .unwrap();
        assert!(packed.status.success(), "{}", text(&packed));

        // The checkout at the release's tag.
        let clone = scratch.path().join("clone");
        std::fs::create_dir_all(clone.join("tools")).unwrap();
        for file in ["tools/deploy-release.sh", "template.yaml"] {
            std::fs::copy(workspace_root().join(file), clone.join(file)).unwrap();
        }
        let pinned = format!("# the release key\n{release_key}\n");
        std::fs::write(clone.join("tools/release-key.fingerprint"), pinned).unwrap();
        Release {
            scratch,
            gpg,
            release_key,
            other_key,
        }
    }

    fn assets(&self) -> PathBuf {
        self.scratch.path().join("assets")
    }

    fn checkout(&self) -> PathBuf {
        self.scratch.path().join("clone")
    }

    fn sums(&self) -> PathBuf {
        self.assets().join(format!("tfreg-{VERSION}-SHA256SUMS"))
    }

    /// Rewrites the sums and signs them with `key`'s secret key, as the release workflow does.
    fn sign(&self, key: &str) {
        let signed = Command::new(workspace_root().join("tools/release-sums.sh"))
            .arg(VERSION)
            .arg(self.assets())
            .env("GNUPGHOME", self.gpg.home())
            .env("SIGN_KEY", key)
            .output()
            .unwrap();
        assert!(signed.status.success(), "{}", text(&signed));
    }

    /// `SCRIPT --dry-run --version VERSION --arch arm64 ARGS... ASSETS`, as the deployer with
    /// the keyring; the exit status and what it printed.
    fn deploy_with(&self, script: &Path, args: &[&str]) -> (bool, String) {
        let output = Command::new(script)
            .args(["--dry-run", "--version", VERSION, "--arch", "arm64"])
            .args(args)
            .arg(self.assets())
            .env("GNUPGHOME", self.gpg.home())
            .env("SAM", venv_tool("sam"))
            .env("SAM_CLI_TELEMETRY", "0")
            .output()
            .unwrap();
        (output.status.success(), text(&output))
    }

    /// Deploys from the checkout at the release's tag.
    fn deploy(&self, args: &[&str]) -> (bool, String) {
        self.deploy_with(&self.checkout().join("tools/deploy-release.sh"), args)
    }

    /// Did a deploy lay out any function where template.yaml's CodeUris name them?
    fn laid_out(&self) -> bool {
        self.checkout().join("build/lambda").exists()
    }
}

fn text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn an_unsigned_release_is_refused_and_nothing_is_laid_out() {
    // Given a release whose sums have no signature (release-lambda.sh without SIGN_KEY),
    let release = Release::new();
    assert!(!release.sums().with_extension("sig").exists());
    assert!(release.sums().exists());

    // when it is deployed as docs/releasing.md says,
    let (deployed, out) = release.deploy(&[]);

    // then it is refused, saying what is missing and how to deploy without it.
    assert!(!deployed, "an unsigned release deployed:\n{out}");
    assert!(
        out.contains(&format!("has no tfreg-{VERSION}-SHA256SUMS.sig")),
        "{out}"
    );
    assert!(out.contains("--insecure-skip-signature"), "{out}");
    assert!(!release.laid_out(), "{out}");
}

#[test]
fn a_release_signed_by_another_key_of_the_keyring_or_by_the_revoked_release_key_is_refused() {
    // Given a keyring that holds the release key and another key, and sums signed by the
    // other: a good signature, to gpg,
    let release = Release::new();
    release.sign(OTHER);
    let verified = Command::new("gpg")
        .args(["--batch", "--verify"])
        .arg(
            release
                .sums()
                .with_file_name(format!("tfreg-{VERSION}-SHA256SUMS.sig")),
        )
        .arg(release.sums())
        .env("GNUPGHOME", release.gpg.home())
        .output()
        .unwrap();
    assert!(verified.status.success(), "{}", text(&verified));

    // when the release is deployed, it is refused: the signer is named, and the release key.
    let (deployed, out) = release.deploy(&[]);
    assert!(
        !deployed,
        "a release signed by another key deployed:\n{out}"
    );
    assert!(
        out.contains(&format!(
            "by {}, not by the release key {}",
            release.other_key, release.release_key
        )),
        "{out}"
    );
    assert!(!release.laid_out(), "{out}");

    // Signed by the release key, then that key revoked (its revocation certificate imported,
    // as a deployer would when the project publishes it): refused too, though gpg's
    // VALIDSIG still names the key and its exit status is 0.
    release.sign(RELEASE);
    release.gpg.revoke(RELEASE);
    let (deployed, out) = release.deploy(&[]);
    assert!(
        !deployed,
        "a release signed by a revoked key deployed:\n{out}"
    );
    assert!(out.contains("signed by a revoked key"), "{out}");
    assert!(!release.laid_out(), "{out}");
}

#[test]
fn a_release_signed_by_the_release_key_deploys_in_a_dry_run() {
    // Given sums signed by the release key, in a keyring that also holds another key,
    let release = Release::new();
    release.sign(RELEASE);

    // when the release is deployed from the checkout at its tag,
    let (deployed, out) = release.deploy(&[]);

    // then the signature is checked against the fingerprint of tools/release-key.fingerprint,
    // and every function is laid out as packed.
    assert!(deployed, "{out}");
    let fingerprint_file = release.checkout().join("tools/release-key.fingerprint");
    assert!(
        out.contains(&format!(
            "a good signature by the release key {} (from {})",
            release.release_key,
            fingerprint_file.display()
        )),
        "{out}"
    );
    assert!(out.contains("would deploy; sam deploy not run"), "{out}");
    for function in Function::ALL {
        let laid = release
            .checkout()
            .join(format!("build/lambda/{}/bootstrap.zip", function.name()));
        let packed = release
            .scratch
            .path()
            .join(format!("lambda/{}/bootstrap.zip", function.name()));
        assert_eq!(std::fs::read(laid).unwrap(), std::fs::read(packed).unwrap());
    }
}

#[test]
fn skipping_the_signature_check_is_an_explicit_flag_that_says_so_loudly() {
    // Given a release with no signature,
    let release = Release::new();

    // when the deployer opts out of the check,
    let (deployed, out) = release.deploy(&["--insecure-skip-signature"]);

    // then it deploys (checked against the sums only), with a warning before and after.
    assert!(deployed, "{out}");
    assert!(
        out.contains(&format!(
            "deploy-release: WARNING: --insecure-skip-signature: the signature of tfreg-{VERSION}-SHA256SUMS is NOT checked."
        )),
        "{out}"
    );
    assert!(
        out.contains("would deploy WITHOUT its signature checked"),
        "{out}"
    );

    // Naming a release key as well contradicts the opt-out: refused.
    let key = release.release_key.as_str();
    let (deployed, out) = release.deploy(&["--insecure-skip-signature", "--release-key", key]);
    assert!(!deployed, "{out}");
    assert!(out.contains("give one or the other"), "{out}");

    // make deploy-release passes the opt-out, and the release key, to the script.
    let make = Command::new("make")
        .args(["-n", "--no-print-directory", "deploy-release"])
        .args([
            "INSECURE_SKIP_SIGNATURE=1",
            "RELEASE_KEY=ABCD 1234",
            "DRY_RUN=1",
        ])
        .current_dir(workspace_root())
        .output()
        .unwrap();
    let planned = text(&make);
    assert!(make.status.success(), "{planned}");
    let command = planned
        .split("tools/deploy-release.sh")
        .nth(1)
        .unwrap_or_else(|| {
            panic!("make deploy-release runs no tools/deploy-release.sh:\n{planned}")
        });
    assert!(
        command.contains("--release-key \"ABCD 1234\"")
            && command.contains("--insecure-skip-signature")
            && command.contains("--dry-run"),
        "{planned}"
    );
}

#[test]
fn the_release_key_comes_from_its_one_file_or_the_command_line_as_a_full_fingerprint() {
    // The one file that holds the release key's fingerprint: docs/releasing.md sends readers
    // to it and repeats no fingerprint.
    let repo = workspace_root();
    let releasing = std::fs::read_to_string(repo.join("docs/releasing.md")).unwrap();
    assert!(
        releasing.contains("tools/release-key.fingerprint"),
        "docs/releasing.md does not name tools/release-key.fingerprint"
    );
    let hex_run = releasing
        .split(|c: char| !c.is_ascii_hexdigit())
        .find(|word| word.len() >= 40);
    assert_eq!(
        hex_run, None,
        "docs/releasing.md repeats a fingerprint: it must name the file instead"
    );
    let pinned: Vec<String> = std::fs::read_to_string(repo.join("tools/release-key.fingerprint"))
        .unwrap()
        .lines()
        .map(|l| l.split('#').next().unwrap().trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect();

    // --help names both ways to choose the key, and the opt-out.
    let help = Command::new(repo.join("tools/deploy-release.sh"))
        .arg("--help")
        .output()
        .unwrap();
    let help = text(&help);
    for option in [
        "Options:",
        "--release-key FPR",
        "--insecure-skip-signature",
        "SAM=path",
    ] {
        assert!(
            help.contains(option),
            "--help does not say {option}:\n{help}"
        );
    }

    // Given sums signed by a throwaway key, deployed with this repository's own script,
    let release = Release::new();
    release.sign(RELEASE);
    let script = repo.join("tools/deploy-release.sh");

    // without --release-key, the file decides: while it holds no fingerprint (until the first
    // release), the script refuses and says how to name one; once it holds the real key's,
    // the throwaway key is not it.
    let checkout = release.checkout();
    let root = ["--root", path(&checkout)];
    let (deployed, out) = release.deploy_with(&script, &root);
    assert!(!deployed, "{out}");
    match pinned.as_slice() {
        [] => assert!(
            out.contains("holds no fingerprint yet") && out.contains("--release-key FINGERPRINT"),
            "{out}"
        ),
        [real] => assert!(
            out.contains(&format!("not by the release key {real}")),
            "{out}"
        ),
        more => panic!(
            "tools/release-key.fingerprint holds {} fingerprints",
            more.len()
        ),
    }

    // With --release-key, the named key, however gpg --fingerprint prints it, decides.
    let spaced = release
        .release_key
        .to_lowercase()
        .as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join(" ");
    let (deployed, out) =
        release.deploy_with(&script, &[&root[..], &["--release-key", &spaced]].concat());
    assert!(deployed, "{out}");
    assert!(
        out.contains(&format!(
            "a good signature by the release key {} (from --release-key)",
            release.release_key
        )),
        "{out}"
    );

    // The other key of the keyring, named, does not accept the release key's signature; a
    // key ID (the fingerprint's last 16 digits) is refused before gpg runs.
    let other = release.other_key.as_str();
    let (deployed, out) =
        release.deploy_with(&script, &[&root[..], &["--release-key", other]].concat());
    assert!(!deployed, "{out}");
    assert!(
        out.contains(&format!("not by the release key {other}")),
        "{out}"
    );
    let key_id = &release.release_key[24..];
    let (deployed, out) =
        release.deploy_with(&script, &[&root[..], &["--release-key", key_id]].concat());
    assert!(!deployed, "{out}");
    assert!(
        out.contains("is not a full fingerprint (40 hex digits)"),
        "{out}"
    );
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}
