//! Fuzzes bytes as a release's `_manifest.json`; the assertions are in `src/core_checks.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tfreg_fuzz::core_checks::manifest(data));
