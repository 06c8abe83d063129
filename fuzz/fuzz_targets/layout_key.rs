//! Fuzzes an object key through the publishing layout's classifier; the assertions are in `src/core_checks.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tfreg_fuzz::core_checks::layout_key(data));
