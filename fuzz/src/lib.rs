//! The fuzz targets' check functions. They live in `reference/tests/fuzz_checks/` so that
//! `cargo test` replays committed seeds and regressions through the very same code without
//! libFuzzer; this crate only includes them.

#[path = "../../reference/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

pub use fuzz_checks::*;

/// The runner's parsing of testee responses (a check of the root package, replayed by
/// `tests/fuzz_regressions_runner.rs`).
#[path = "../../tests/fuzz_checks_runner/testee_response.rs"]
pub mod testee_response;
