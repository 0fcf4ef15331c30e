#![no_main]
//! See `test-support/src/fuzz_checks/lineage_values.rs`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| lance_conformance_test_support::fuzz_checks::lineage_values::check(data));
