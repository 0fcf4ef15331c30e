#![no_main]
//! See `reference/tests/fuzz_checks/data_file.rs`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| lance_reference_fuzz::data_file::check(data));
