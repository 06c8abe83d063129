//! Fuzzes two version strings (split at a NUL byte) through `Version::parse` and `semver`; the assertions are in `src/core_checks.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tfreg_fuzz::core_checks::version(data));
