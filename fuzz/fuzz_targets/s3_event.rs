//! Fuzzes JSON as an S3 event notification into the indexer function; the assertions are in `src/event_checks.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tfreg_fuzz::event_checks::s3_event(data));
