#![no_main]
//! See `reference/tests/fuzz_checks/coverage_bitmap.rs`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| lance_reference_fuzz::coverage_bitmap::check(data));
