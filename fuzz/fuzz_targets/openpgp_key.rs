//! Fuzzes bytes as a published `keys/<namespace>/*.asc` public key; the assertions are in `src/core_checks.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tfreg_fuzz::core_checks::openpgp_key(data));
