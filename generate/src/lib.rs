//! `lance-conformance-generate`: the builder. From a case's hand-written `case.toml` it executes
//! the steps on the reference, writes every version as a Lance dataset (damaging it where a
//! negative case says so), reads it back, and writes `expected/` and `SHA256SUMS`; it also holds
//! the reference writer the testee serves. The flow is one direction only:
//!
//! ```text
//! case.toml ──case──▶ steps ──scenario──▶ versions ──store──▶ read back ──expected──▶ v<N>.json
//!                                                                     └──render──▶ snapshots/
//! ```
//!
//! Invariant: the builder depends on the judge (`lance-conformance-runner`: the case format,
//! the expected-result types, the checksums, the writer protocol) and the judge never on the
//! builder. The judge's modules are imported at this crate's root under their own names, so
//! `crate::case` here is the runner crate's [`case`].
//!
//! This crate is the kit's own machinery, not an API: its modules are public for the command
//! line (`lance-conformance`) and the workspace's tests, and change with them. An implementer
//! needs only the judge, `lance-conformance-runner`.
//!
//! | module | concept |
//! |---|---|
//! | [`scenario`] | executing steps on the reference: one snapshot per committed version |
//! | [`store`] | writing the versions as a dataset, damaging it, and reading them back |
//! | [`build`] | building one case: the scenario, the store and the expected results together |
//! | [`render`] | the readable manifest rendering used by the insta snapshots and `explain` |
//! | [`generate`] | the `generate` command |
//! | [`error_codes`] | the error vocabulary: every code with its class, rendered as `spec/error-codes.md` |
//! | [`reference_writer`] | the reference as a writer under test ([`runner::ConformanceWriter`]) |
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

use lance_conformance_runner::{case, checksums, corpus, expected, reader, runner, validate};

pub mod build;
pub mod error_codes;
pub mod generate;
pub mod reference_writer;
pub mod render;
pub mod scenario;
pub mod store;
