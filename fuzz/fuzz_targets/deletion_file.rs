#![no_main]
//! See `reference/tests/fuzz_checks/deletion_file.rs`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| lance_reference_fuzz::deletion_file::check(data));
