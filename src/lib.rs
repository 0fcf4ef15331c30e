//! `lance-conformance`: the conformance kit around the reference semantics in
//! `lance-reference`, as one library: the command line's own modules (fuzzing, the testee
//! server, the `run`, `report`, `explain` and `validate` subcommands) over the two crates that
//! do the work, re-exported under the paths they have always had.
//!
//! A case is a directory `conformance-cases/<area>/<case-id>/` with a hand-written `case.toml`
//! (a scenario of steps), from which the generator produces `dataset/` (every version) and
//! `expected/` (typed JSON per version, or the error a reader must raise); the runner judges a
//! reader or a writer against them.
//!
//! Invariant: the crates form one chain, `lance-conformance-runner` (the judge) ←
//! `lance-conformance-generate` (the builder) ← this crate (the CLI), and this crate only adds
//! modules beside theirs: every path of the kit (`lance_conformance::runner::run_suite`,
//! `lance_conformance::case::Case`, ...) names the same item as before the split. This
//! facade is the command line's library and the workspace tests' way in (it turns on the
//! runner crate's `internal-api`), not an API: a Rust implementer depends on
//! `lance-conformance-runner` alone and uses what it makes public without that feature.
//!
//! | module | concept | crate |
//! |---|---|---|
//! | [`case`] | the `case.toml` format: metadata, queries, the step vocabulary, cell values | runner |
//! | [`corpus`] | the corpus layout on disk: finding and parsing cases | runner |
//! | [`checksums`] | which files a case generates and `SHA256SUMS`, shared by the generator and the runner | runner |
//! | [`reader`] | reading one version as a conforming reader must (flags, validation, scan) | runner |
//! | [`expected`] | expected results as typed JSON, computed from the read-back, and parsed | runner |
//! | [`mod@runner`] | checking a reader (in process or a testee process) against the corpus; here also its subcommands | runner, and this crate |
//! | [`validate`] | judging a dataset directory written by anyone, version by version and commit by commit; here also its subcommand | runner, and this crate |
//! | [`scenario`] | executing steps on the reference: one snapshot per committed version | generate |
//! | [`store`] | writing the versions as a dataset and reading them back | generate |
//! | [`build`] | building one case | generate |
//! | [`render`] | the readable manifest rendering used by the insta snapshots | generate |
//! | [`generate`] | the `generate` command | generate |
//! | [`error_codes`] | the error vocabulary: every code with its class, rendered as `spec/error-codes.md` | generate |
//! | [`reference_writer`] | the reference as a writer under test | generate |
//! | [`fuzz`] | differential testing: random histories judged against any reader, shrunk to a case | this crate |
//! | [`testee`] | the reference reader and writer served over the protocol | this crate |
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub use lance_conformance_generate::{
    build, error_codes, generate, reference_writer, render, scenario, store,
};
pub use lance_conformance_runner::{case, checksums, corpus, expected, reader};

pub mod fuzz;
pub mod testee;

pub mod runner {
    //! The runner ([`lance_conformance_runner::runner`]), and the subcommands around it.
    //!
    //! Invariant: everything of the runner crate's `runner` module is here under the same name;
    //! the modules declared here only parse arguments, print and choose exit codes around it.
    //!
    //! | module | concept |
    //! |---|---|
    //! | [`command`] | the `run`, `report` and `explain` subcommands, and the arguments of `testee` |
    //! | [`html`] | several JSON reports as one static HTML page (`lance-conformance report`) |
    //! | [`walk`] | the spec's worked example walked in memory (reference self-check) |
    //! | [`explain`] | the decision trail of a corpus case |

    pub use lance_conformance_runner::runner::*;

    pub mod command;
    pub mod explain;
    pub mod html;
    pub mod walk;
}

pub mod validate {
    //! `validate` ([`lance_conformance_runner::validate`]), and its subcommand.
    //!
    //! Invariant: everything of the runner crate's `validate` module is here under the same name;
    //! [`command()`] only parses arguments, prints and chooses the exit code around it; [`scan`]
    //! reads a table at the same kind of location with the reference reader and prints its rows.

    pub use lance_conformance_runner::validate::*;

    mod command;
    pub use command::{ValidateArgs, command};
    pub mod scan;
}
