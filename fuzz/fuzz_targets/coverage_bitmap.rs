#![no_main]
//! See `test-support/src/fuzz_checks/coverage_bitmap.rs`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| lance_conformance_test_support::fuzz_checks::coverage_bitmap::check(data));
