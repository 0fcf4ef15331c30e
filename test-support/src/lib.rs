//! `lance-conformance-test-support`: code shared by the workspace's tests and the cargo-fuzz
//! targets, so that nothing is included by `#[path]`.
//!
//! Invariant: a fuzz target in `fuzz/fuzz_targets/` is one line calling a check in
//! [`fuzz_checks`], and `tests/fuzz_regressions.rs` calls the same check on every committed seed
//! and regression input. A crash libFuzzer finds therefore replays under a plain `cargo test` on
//! stable, and the check cannot drift between the two. This crate links no libFuzzer.
//!
//! | module | what |
//! |---|---|
//! | [`fuzz_checks`] | the body of every fuzz target, as `fn(&[u8])` |
//! | [`bench_fixtures`] | seeded inputs of the criterion benches (no clock) |
//! | [`dataset_scenarios`] | small fixed datasets written by the reference (interop, probes, tests) |
//!
//! The default feature `kit` adds the one check that needs the kit crate
//! (`fuzz_checks::testee_response`). The reference crates' tests and the benches depend on this
//! crate without it, so building them does not build the kit.
// Test code: fixtures panic on a broken fixture, and their items are documented by module.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

pub mod bench_fixtures;
pub mod dataset_scenarios;
pub mod fuzz_checks;
