//! `lance-conformance-runner`: the judge. It reads a case corpus that is already on disk
//! (`case.toml`, `expected/`, `SHA256SUMS`) and judges a reader or a writer against it, in
//! process ([`runner::ConformanceReader`], [`runner::ConformanceWriter`]) or over the JSON-lines
//! protocol ([`runner::protocol`]); [`validate`] judges any dataset directory by its bytes and
//! its history.
//!
//! Invariant: the judge never builds what it judges. Nothing here executes a scenario, writes a
//! dataset or generates `expected/`; that is `lance-conformance-generate`, which depends on this
//! crate and never the other way round, so cargo enforces the rule. Nor does this crate parse a
//! command line or carry `anyhow`: an implementer who calls [`runner::run_suite`] pays for the
//! judge alone.
//!
//! | module | concept |
//! |---|---|
//! | [`case`] | the `case.toml` format: metadata, queries, the step vocabulary, cell values |
//! | [`corpus`] | the corpus layout on disk: finding and parsing cases |
//! | [`checksums`] | which files a case generates and `SHA256SUMS`, shared with the generator |
//! | [`reader`] | reading one version as a conforming reader must (flags, validation, scan) |
//! | [`expected`] | expected results as typed JSON: computed from a read-back, and parsed |
//! | [`runner`] | checking a reader or writer (in process or a testee process) against the corpus |
//! | [`validate`] | judging a dataset directory written by anyone, version by version and commit by commit |
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod case;
pub mod checksums;
pub mod corpus;
pub mod expected;
pub mod reader;
pub mod runner;
pub mod validate;
