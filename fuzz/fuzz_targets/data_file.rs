#![no_main]
//! See `test-support/src/fuzz_checks/data_file.rs`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| lance_conformance_test_support::fuzz_checks::data_file::check(data));
