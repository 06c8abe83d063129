//! The checks behind tfreg's fuzz targets. Each target in `fuzz_targets/` is one call into
//! these modules; `crates/core/tests/fuzz_regressions.rs` and
//! `crates/lambda/tests/fuzz_regressions.rs` compile the same files into the regular tests,
//! so a crasher kept under `regressions/` is replayed by `cargo test` through the same code.

pub mod core_checks;
pub mod event_checks;
