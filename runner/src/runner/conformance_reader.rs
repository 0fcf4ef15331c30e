//! The [`ConformanceReader`] trait: what the runner asks of a reader under test, in process.
//!
//! Invariant: every operation answers with a value in the typed JSON of `expected/` or a
//! [`Refusal`] that says *whose* failure it is: the data's ([`Refusal::Error`], judged against
//! the case), the reader's declared limits ([`Refusal::Unsupported`], [`Refusal::Skipped`]), or
//! the reader's own breakage ([`Refusal::Broken`], always an `error` verdict). The process
//! protocol ([`super::process`]) and the built-in reference ([`super::reference`]) implement
//! the same trait, so one runner judges both the same way.

use std::collections::BTreeSet;

use arrow_array::RecordBatch;

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
///
/// # Example
///
/// A complete reader, with the reference crates standing in for your engine: it opens and
/// checks a version, scans it as Arrow record batches (converted by
/// [`scan_result`](super::arrow_reader::scan_result)), and declares the data features it reads
/// but no lineage, exclusion or query capability, so those checks are `unsupported` and never
/// sent. It passes a positive case and a negative one (it refuses the damaged version with the
/// right class, and reads the undamaged twin):
///
/// ```
/// # use std::path::Path;
/// use lance_conformance_runner::expected::FragmentLineage;
/// use lance_conformance_runner::runner::arrow_reader::scan_result;
/// use lance_conformance_runner::runner::protocol::*;
/// use lance_conformance_runner::runner::{Answer, ConformanceReader, Description, Refusal};
/// use lance_conformance_runner::runner::{Options, run_suite};
/// use lance_reference::{error::CodedError, model::Snapshot};
///
/// struct Minimal;
///
/// fn refused(e: &dyn CodedError) -> Refusal {
///     let class = e.class().as_str().to_string();
///     Refusal::Error(ReadError { class, code: None, message: e.to_string() })
/// }
///
/// fn read(at: &VersionRef) -> Answer<Snapshot> {
///     let dataset = lance_reference_io::Dataset::open(Path::new(&at.dataset));
///     let version = dataset.and_then(|d| d.read_version(at.version));
///     version.map(|(snapshot, _)| snapshot).map_err(|e| refused(&e))
/// }
///
/// impl ConformanceReader for Minimal {
///     fn describe(&mut self) -> Answer<Description> {
///         let implementation = Implementation {
///             name: "minimal".into(),
///             version: "0.1.0".into(),
///             language: Some("rust".into()),
///             homepage: None,
///         };
///         let words = ["overlays", "sparse-overlays", "deletions", "stable-row-ids"];
///         let capabilities = words.map(String::from).into();
///         Ok(Description { implementation, capabilities })
///     }
///     fn open(&mut self, at: &VersionRef) -> Answer<OpenResult> {
///         Ok(OpenResult { version: read(at)?.version })
///     }
///     fn scan(&mut self, request: &ScanRequest) -> Answer<ScanResult> {
///         let snapshot = read(&request.at)?;
///         let columns = snapshot.schema.top_level();
///         let fields: Vec<i32> = match &request.columns {
///             None => columns.map(|f| f.id).collect(),
///             Some(names) => names
///                 .iter()
///                 .filter_map(|n| snapshot.schema.top_level().find(|f| f.name == *n))
///                 .map(|f| f.id)
///                 .collect(),
///         };
///         let batches = lance_reference::scan::scan_batches(&snapshot, Some(&fields));
///         scan_result(request, &batches.map_err(|e| refused(&e))?)
///     }
///     fn lineage(&mut self, _: &VersionRef, _: u64) -> Answer<FragmentLineage> {
///         Err(Refusal::Unsupported("lineage placement".into()))
///     }
///     fn exclusion(&mut self, _: &VersionRef) -> Answer<ExclusionResult> {
///         Err(Refusal::Unsupported("exclusion sets".into()))
///     }
///     fn query(&mut self, _: &VersionRef, _: &QueryRequest) -> Answer<QueryAnswer> {
///         Err(Refusal::Unsupported("queries".into()))
///     }
/// }
///
/// let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance-cases");
/// let mut options = Options::new(corpus);
/// options.filters.cases = vec![
///     "overlays/base-null-first-field".into(), // reads: a NULL base cell beside an overlay
///     "overlays/base-column-short".into(),     // refuses: a base column one value short
/// ];
/// let report = run_suite(&mut Minimal, options)?;
/// assert_eq!((report.summary.passed, report.summary.failed), (2, 0));
/// assert!(report.passed());
/// # Ok::<(), lance_conformance_runner::runner::RunnerError>(())
/// ```
pub trait ConformanceReader {
    /// Who the reader is and what it can do.
    fn describe(&mut self) -> Answer<Description>;
    /// Opens `at` and checks it as a reader must before returning rows.
    fn open(&mut self, at: &VersionRef) -> Answer<OpenResult>;
    /// Scans `request.at`.
    fn scan(&mut self, request: &ScanRequest) -> Answer<ScanResult>;
    /// The same scan as Arrow record batches (laid out as [`super::arrow_reader`] says), for
    /// a reader whose scans are batches; `None`, the default, for a reader that answers only
    /// with [`ConformanceReader::scan`]. A reader that answers here must answer what `scan`
    /// answers, converted: the runner judges a version's scans by these batches, checked as
    /// [`super::arrow_reader::scan_result`] checks them (a batch it would not convert is the
    /// reader's breakage) and compared with `expected/` cell by cell in place, and sends
    /// `scan` where it needs the protocol's rows.
    fn scan_batches(&mut self, request: &ScanRequest) -> Option<Answer<Vec<RecordBatch>>> {
        let _ = request;
        None
    }
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
