#![no_main]
//! See `reference/tests/fuzz_checks/lineage_values.rs`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| lance_reference_fuzz::lineage_values::check(data));
