//! Fuzzes JSON as an API Gateway HTTP API request into the API functions; the assertions are in `src/event_checks.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tfreg_fuzz::event_checks::apigw_event(data));
