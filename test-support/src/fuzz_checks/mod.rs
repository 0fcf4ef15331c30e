//! The bodies of the cargo-fuzz targets, as plain functions over `&[u8]`.
//!
//! Invariant: every fuzz target in `fuzz/fuzz_targets/` is one line that calls a `check`
//! function here, and `test-support/tests/fuzz_regressions.rs` calls the same function on every
//! committed seed and regression input ([`TARGETS`] lists them all). So a crash found by
//! libFuzzer replays under a plain `cargo test` on stable, with no libFuzzer and no nightly, and
//! the check cannot drift between the two.
//!
//! Conventions: a `check` returns normally when the input is refused with a typed error or
//! accepted and every property holds; it panics (an `assert!`) when a property fails, which is
//! what both libFuzzer and the test harness report. Structured targets decode their input with
//! [`arbitrary::Unstructured`] exactly as `libfuzzer_sys::fuzz_target!(|x: T| ...)` does
//! (`arbitrary_take_rest`), so their regression files replay to the same value.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs
)]

pub mod coverage_bitmap;
pub mod data_file;
pub mod deletion_file;
pub mod history;
pub mod lineage_sequence;
pub mod lineage_values;
pub mod manifest;
pub mod resolve_differential;
#[cfg(feature = "kit")]
pub mod testee_response;

/// A target's check: returns when the input is refused or every property holds, panics
/// otherwise.
pub type Check = fn(&[u8]);

/// Every target name, with its check. The test replays `fuzz/seeds/<name>/` and
/// `fuzz/regressions/<name>/` through these; `fuzz/ci.sh` runs a libFuzzer binary per name.
pub const TARGETS: &[(&str, Check)] = &[
    ("manifest", manifest::check),
    ("coverage_bitmap", coverage_bitmap::check),
    ("data_file", data_file::check),
    ("deletion_file", deletion_file::check),
    ("lineage_sequence", lineage_sequence::check),
    ("lineage_values", lineage_values::check),
    ("resolve_differential", resolve_differential::check),
    ("history", history::check),
    #[cfg(feature = "kit")]
    ("testee_response", testee_response::check),
];

/// Decodes a structured input the way `fuzz_target!(|x: T| ...)` does; `None` when the bytes
/// do not make a `T` (libFuzzer then skips the input, and so does the replay).
pub fn structured<'a, T: arbitrary::Arbitrary<'a>>(data: &'a [u8]) -> Option<T> {
    T::arbitrary_take_rest(arbitrary::Unstructured::new(data)).ok()
}
