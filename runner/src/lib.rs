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
//!
//! # The API
//!
//! What an implementer holds: a reader implements [`runner::ConformanceReader`] (or
//! [`runner::arrow_reader::ArrowReader`], answering with Arrow record batches) and is judged by
//! [`runner::run_suite`]; a writer implements [`runner::ConformanceWriter`] and is judged by
//! [`runner::run_writer_suite`]. Both answer in the types of [`runner::protocol`] and
//! [`expected`] (the typed JSON of `expected/`); a writer is sent the steps of the case format
//! ([`case::Step`]), which is why [`case`] is public; [`corpus`] lists the cases a run selects.
//! A run returns a [`runner::Report`] ([`runner::output`] renders it); [`validate::validate`]
//! judges any dataset directory.
//!
//! Everything else (the checksums, the reference's read path, the runner's own checks, the
//! testee process and server, validate's rules) is the kit's internal API: public only with the
//! feature `internal-api`, which the workspace's generator, command line and tests turn on, and
//! private otherwise, so it can change without notice. Built without the feature, those modules
//! are private and the lints that only make sense for public modules (`unreachable_pub`,
//! `dead_code` for what only the generator calls) are allowed there; the workspace builds and
//! lints with the feature on, and CI checks the crate without it as an implementer builds it.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]
// The module tables name the internal modules too; without `internal-api` those links point
// at private items (documented with `--document-private-items`).
#![cfg_attr(not(feature = "internal-api"), allow(rustdoc::private_intra_doc_links))]

/// Declares a module of the kit's internal API: `pub` with the feature `internal-api`,
/// private to the crate without it.
macro_rules! internal_api {
    ($(#[$meta:meta])* mod $name:ident;) => {
        $(#[$meta])*
        #[cfg(feature = "internal-api")]
        pub mod $name;
        $(#[$meta])*
        #[cfg(not(feature = "internal-api"))]
        #[allow(unreachable_pub, dead_code, unused_imports, private_interfaces, private_bounds)]
        pub(crate) mod $name;
    };
}

pub mod case;
internal_api! { mod checksums; }
pub mod corpus;
pub mod expected;
internal_api! { mod reader; }
pub mod runner;
pub mod validate;
