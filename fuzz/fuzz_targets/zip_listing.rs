//! Fuzzes bytes as a provider package zip, hashed to its `h1:`; the assertions are in `src/core_checks.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tfreg_fuzz::core_checks::zip_listing(data));
