//! The [`ConformanceReader`] trait: what the runner asks of a reader under test, in process.
//!
//! Invariant: every operation answers with a value in the typed JSON of `expected/` or a
//! [`Refusal`] that says *whose* failure it is: the data's ([`Refusal::Error`], judged against
//! the case), the reader's declared limits ([`Refusal::Unsupported`], [`Refusal::Skipped`]), or
//! the reader's own breakage ([`Refusal::Broken`], always an `error` verdict). The process
//! protocol ([`super::process`]) and the built-in reference ([`super::reference`]) implement
//! the same trait, so one runner judges both the same way.

use std::collections::BTreeSet;

use super::protocol::{
    ExclusionResult, Implementation, OpenResult, QueryAnswer, QueryRequest, ReadError, ScanRequest,
    ScanResult, VersionRef,
};
use crate::expected::FragmentLineage;

/// Why an operation returned no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The reader refuses the data (class, optional code, message). A negative case needs
    /// this; on a readable version it is a failure.
    Error(ReadError),
    /// The reader cannot do this (a capability it lacks). Verdict `unsupported`.
    Unsupported(String),
    /// The reader chooses not to answer. Verdict `skip`.
    Skipped(String),
    /// The reader broke: crashed, hung, answered garbage or out of protocol, or caught a bug
    /// of its own. Verdict `error`; the rest of the case is not run.
    Broken(String),
}

/// An answer or a refusal.
pub type Answer<T> = Result<T, Refusal>;

/// A reader under test.
///
/// Contract, for implementers:
///
/// - [`describe`](Self::describe) names the reader and its capabilities
///   ([`super::capability`]). The runner never asks for what is not declared: such checks are
///   `unsupported`. Declaring a capability the reader does not have makes its checks fail.
/// - Every other method gets an absolute dataset directory and a version, and must read
///   *that directory* (no caching across different directories, no reading of `expected/`).
///   [`open`](Self::open) is always called first for a version; it must perform every check a
///   reader makes before returning rows (flags, manifest, file references, overlay and lineage
///   invariants), and return [`Refusal::Error`] with the spec's error class when one fails.
///   A reader that validates lazily may also refuse in [`scan`](Self::scan).
/// - [`scan`](Self::scan) returns every live row: fragments in manifest order, rows in
///   physical order, with `fragment`, `offset`, `_rowid`, `_row_created_at_version`,
///   `_row_last_updated_at_version` and the projected columns as tagged values.
/// - [`lineage`](Self::lineage) (capability `lineage-placement`) says where a fragment's three
///   lineage sequences live; [`exclusion`](Self::exclusion) (capability `exclusion`) returns
///   every (index, fragment) exclusion set; [`query`](Self::query) (capabilities
///   `scalar-query` / `vector-query`) returns a query's final rows, and the reconciliation's
///   lists too when the reader declares `exclusion`.
/// - Nothing may panic for the runner's sake: return [`Refusal::Broken`] instead.
pub trait ConformanceReader {
    /// Who the reader is and what it can do.
    fn describe(&mut self) -> Answer<Description>;
    /// Opens `at` and checks it as a reader must before returning rows.
    fn open(&mut self, at: &VersionRef) -> Answer<OpenResult>;
    /// Scans `request.at`.
    fn scan(&mut self, request: &ScanRequest) -> Answer<ScanResult>;
    /// The lineage placement of `fragment` at `at`.
    fn lineage(&mut self, at: &VersionRef, fragment: u64) -> Answer<FragmentLineage>;
    /// Every exclusion set at `at`.
    fn exclusion(&mut self, at: &VersionRef) -> Answer<ExclusionResult>;
    /// Answers `query` at `at`.
    fn query(&mut self, at: &VersionRef, query: &QueryRequest) -> Answer<QueryAnswer>;
}

/// A reader's name and capabilities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    /// Who it is.
    pub implementation: Implementation,
    /// What it can do.
    pub capabilities: BTreeSet<String>,
}
