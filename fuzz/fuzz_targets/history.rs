#![no_main]
//! See `reference/tests/fuzz_checks/history.rs`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| lance_reference_fuzz::history::check(data));
