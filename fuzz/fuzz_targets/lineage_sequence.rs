#![no_main]
//! See `reference/tests/fuzz_checks/lineage_sequence.rs`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| lance_reference_fuzz::lineage_sequence::check(data));
