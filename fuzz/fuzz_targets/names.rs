//! Fuzzes NUL-separated strings through the address, platform and hostname parsers; the assertions are in `src/core_checks.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tfreg_fuzz::core_checks::names(data));
