//! `lance-conformance`: the conformance kit around the reference semantics in
//! `lance-reference`: the case corpus, its generator, and (in `src/main.rs`) the command line.
//!
//! A case is a directory `conformance-cases/<area>/<case-id>/` with a hand-written `case.toml`
//! (a scenario of steps), from which the generator produces `dataset/` (every version) and
//! `expected/` (typed JSON per version, or the error a reader must raise). The flow is one
//! direction only:
//!
//! ```text
//! case.toml ──case──▶ steps ──scenario──▶ versions ──store──▶ read back ──expected──▶ v<N>.json
//!                                                                     └──render──▶ snapshots/
//! ```
//!
//! | module | concept |
//! |---|---|
//! | [`case`] | the `case.toml` format: metadata, queries, the step vocabulary, cell values |
//! | [`scenario`] | executing steps on the reference: one snapshot per committed version |
//! | [`store`] | writing the versions as a dataset and reading them back |
//! | [`reader`] | reading one version as a conforming reader must (flags, validation, scan) |
//! | [`expected`] | expected results as typed JSON, computed from the read-back, and parsed |
//! | [`render`] | the readable manifest rendering used by the insta snapshots |
//! | [`checksums`] | which files a case generates and `SHA256SUMS`, shared by the generator and the runner |
//! | [`corpus`] | the corpus layout on disk and building one case |
//! | [`generate`] | the `generate` command |
//! | [`error_codes`] | the error vocabulary: every code with its class, rendered as `spec/error-codes.md` |
//! | [`fuzz`] | differential testing: random histories judged against any reader, shrunk to a case |
//! | [`runner`] | checking a reader (in process or a testee process) against the corpus |
//! | [`validate`] | judging a dataset directory written by anyone, version by version and commit by commit |
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod build;
pub mod case;
pub mod checksums;
pub mod corpus;
pub mod error_codes;
pub mod expected;
pub mod fuzz;
pub mod generate;
pub mod reader;
pub mod reference_writer;
pub mod render;
pub mod runner;
pub mod scenario;
pub mod store;
pub mod testee;
pub mod validate;
