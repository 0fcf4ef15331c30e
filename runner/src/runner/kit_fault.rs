//! Kit faults: what stops the kit from judging a check that is no failure of the implementation
//! under test.
//!
//! Invariant: a problem of the corpus (an `expected/` file that cannot be read or parsed, a case
//! that names a query it does not declare, a stored version the reference cannot read) or of the
//! runner's own set-up (a scratch directory it cannot make) is a [`KitFault`], recorded as a
//! check with verdict [`super::Verdict::KitFault`], and never as a failure kind of the reader or
//! writer; a run holding one ends with exit status 2 and names the case
//! ([`super::Report::exit_code`]). Each fault has a stable code ([`KitFault::code`]) and names the
//! file or version and what was wrong.

use std::path::PathBuf;

/// Why the kit could not judge a check.
#[derive(Debug, thiserror::Error)]
pub enum KitFault {
    /// A file or directory of the case's `expected/` cannot be read.
    #[error("{}: cannot read the expected results: {source}", path.display())]
    ExpectedUnreadable {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An `expected/` file does not parse.
    #[error("{}: the expected results do not parse: {message}", path.display())]
    ExpectedMalformed {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// A negative case has no `expected/undamaged.json`.
    #[error("{}: a negative case without its undamaged twin (regenerate the corpus)", path.display())]
    TwinMissing {
        /// The missing file.
        path: PathBuf,
    },
    /// The expected results of a case could not be handed over by the loading thread.
    #[error("{}: the expected results were not loaded", path.display())]
    ExpectedLost {
        /// The case directory.
        path: PathBuf,
    },
    /// The runner cannot tell which capabilities a version of the case needs.
    #[error("{}: cannot tell what v{version} needs: {message}", dataset.display())]
    Needs {
        /// The dataset directory.
        dataset: PathBuf,
        /// The version.
        version: u64,
        /// What went wrong.
        message: String,
    },
    /// `expected/` lists a query the case does not declare.
    #[error("the case declares no query named {name:?} (corpus problem)")]
    UndeclaredQuery {
        /// The query's name.
        name: String,
    },
    /// A declared query cannot be turned into a request (its literals typed by the schema).
    #[error("query {name:?} at v{version}: {message}")]
    QueryRequest {
        /// The query's name.
        name: String,
        /// The version.
        version: u64,
        /// What went wrong.
        message: String,
    },
    /// A version of the stored case cannot be read by the reference, or a step cannot be put
    /// on the wire against it (writer runs).
    #[error("the stored case's v{version}: {message}")]
    StoredCase {
        /// The version.
        version: u64,
        /// What went wrong.
        message: String,
    },
    /// `expected/` has no result for a version the case commits (writer runs).
    #[error("the case has no expected result for v{version} (corpus problem)")]
    NoExpectedVersion {
        /// The version.
        version: u64,
    },
    /// The directory a writer writes into cannot be cleared or made.
    #[error("{}: cannot prepare the writer's directory: {source}", path.display())]
    Scratch {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The spec's worked example cannot be walked by the reference.
    #[error("the worked example could not be walked: {message}")]
    Walk {
        /// What went wrong.
        message: String,
    },
    /// A fuzz trial could not be built by the kit's own generator and store, or the kit could
    /// not judge it.
    #[error("trial {index} of seed {seed} {problem}")]
    Trial {
        /// The seed.
        seed: u64,
        /// The trial.
        index: u64,
        /// What went wrong: `could not be built: …`, or `could not be judged: …`.
        problem: String,
    },
}

impl KitFault {
    /// The stable code of the fault (`expected_unreadable`, ...).
    pub fn code(&self) -> &'static str {
        match self {
            KitFault::ExpectedUnreadable { .. } => "expected_unreadable",
            KitFault::ExpectedMalformed { .. } => "expected_malformed",
            KitFault::TwinMissing { .. } => "twin_missing",
            KitFault::ExpectedLost { .. } => "expected_lost",
            KitFault::Needs { .. } => "needs_unknown",
            KitFault::UndeclaredQuery { .. } => "undeclared_query",
            KitFault::QueryRequest { .. } => "query_request",
            KitFault::StoredCase { .. } => "stored_case",
            KitFault::NoExpectedVersion { .. } => "no_expected_version",
            KitFault::Scratch { .. } => "scratch",
            KitFault::Walk { .. } => "walk",
            KitFault::Trial { .. } => "fuzz_trial",
        }
    }
}
