//! Replaying a fuzz target's committed inputs under plain `cargo test`: shared by the test
//! files that include it with `#[path]` (`crates/core/tests/fuzz_regressions.rs`,
//! `crates/lambda/tests/fuzz_regressions.rs`). Both live two folders below the workspace
//! root, so `CARGO_MANIFEST_DIR/../../fuzz` is this folder's parent in each.

use std::path::{Path, PathBuf};

/// The seeds and kept crashers of one target, by path.
pub fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut inputs = Vec::new();
    for (folder, seeds_only) in [
        (fuzz.join("corpus").join(target), true),
        (fuzz.join("regressions").join(target), false),
    ] {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue; // a target without crashers has no regressions folder
        };
        for entry in entries {
            let path = entry.expect("a readable folder").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            // The corpus folder also holds what local fuzzing grew; only seeds are committed.
            if seeds_only && !name.starts_with("seed-") {
                continue;
            }
            let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            inputs.push((path, data));
        }
    }
    inputs.sort();
    inputs
}

/// Runs `check` on each input of `target`, naming the input that fails.
pub fn replay(target: &str, check: fn(&[u8])) {
    let inputs = inputs(target);
    assert!(!inputs.is_empty(), "{target} has no seeds");
    for (path, data) in inputs {
        if std::panic::catch_unwind(|| check(&data)).is_err() {
            panic!("{} fails the {target} checks", path.display());
        }
    }
}
