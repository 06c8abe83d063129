//! The fuzz targets' inputs as regular tests: every seed (`fuzz/corpus/<target>/seed-*`) and
//! every kept crasher (`fuzz/regressions/<target>/*`) is replayed through the very checks the
//! `cargo fuzz` targets run, compiled in from `fuzz/src/core_checks.rs`. So a bug a fuzzer
//! once found stays fixed under plain `cargo test`, without nightly or libFuzzer.

#[path = "../../../fuzz/src/core_checks.rs"]
mod core_checks;

#[path = "../../../fuzz/src/replay.rs"]
mod replay;

use replay::{inputs, replay};

#[test]
fn layout_key() {
    replay("layout_key", core_checks::layout_key);
}

#[test]
fn version() {
    replay("version", core_checks::version);
}

#[test]
fn names() {
    replay("names", core_checks::names);
}

#[test]
fn sha256sums() {
    replay("sha256sums", core_checks::sha256sums);
}

#[test]
fn manifest() {
    replay("manifest", core_checks::manifest);
}

#[test]
fn openpgp_key() {
    replay("openpgp_key", core_checks::openpgp_key);
}

#[test]
fn openpgp_signature() {
    replay("openpgp_signature", core_checks::openpgp_signature);
}

#[test]
fn zip_listing() {
    replay("zip_listing", core_checks::zip_listing);
}

/// The seeds are what they claim to be: the valid signatures verify, so the signature target
/// starts from inputs that reach the cryptography, and the fixture keys are accepted.
#[test]
fn the_seeds_reach_past_the_parsers() {
    use tfreg_core::gpg;
    let inputs = inputs("openpgp_signature");
    let verified = inputs
        .iter()
        .filter(|(_, data)| {
            let (key, signature, content) = core_checks::signature_input(data).unwrap();
            gpg::verify_detached(key, signature, content, core_checks::now()).is_ok()
        })
        .count();
    // The four detached signatures of the document; not the armored one, the certifications
    // passed off as document signatures, nor the one checked with the wrong key: Terraform
    // refuses those.
    assert_eq!(verified, 4, "the binary document signatures verify");
    let keys = inputs_named("openpgp_key");
    assert!(gpg::parse_public_key(&keys["seed-release"], core_checks::now()).is_ok());
    assert!(gpg::parse_public_key(&keys["seed-subkey"], core_checks::now()).is_ok());
}

fn inputs_named(target: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
    inputs(target)
        .into_iter()
        .map(|(path, data)| {
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                data,
            )
        })
        .collect()
}
