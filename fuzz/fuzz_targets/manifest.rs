#![no_main]
//! See `reference/tests/fuzz_checks/manifest.rs`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| lance_reference_fuzz::manifest::check(data));
