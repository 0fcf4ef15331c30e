#![no_main]
//! See `tests/fuzz_checks_runner/testee_response.rs`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| lance_reference_fuzz::testee_response::check(data));
