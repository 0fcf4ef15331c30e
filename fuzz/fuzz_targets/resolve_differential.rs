#![no_main]
//! See `reference/tests/fuzz_checks/resolve_differential.rs`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| lance_reference_fuzz::resolve_differential::check(data));
