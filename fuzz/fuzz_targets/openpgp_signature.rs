//! Fuzzes a detached signature and content, checked against a fixture key; the assertions are in `src/core_checks.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tfreg_fuzz::core_checks::openpgp_signature(data));
