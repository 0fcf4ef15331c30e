//! The testee protocol: JSON lines exchanged with a reader in another process.
//!
//! Invariant: every message is one JSON object on one line; every request carries a `seq` that
//! its response repeats, and a response carries exactly one of `result`, `error`,
//! `unsupported`, `skipped` or `errored`. These types are the whole vocabulary: the runner
//! writes only [`Request`]s and accepts only [`Response`]s, so what `spec/conformance.md` and
//! `spec/schemas/protocol/*.json` describe is exactly what is exchanged. Answers reuse the
//! typed JSON of `expected/` ([`crate::expected`]).

use serde::{Deserialize, Serialize};

use crate::expected::tagged::Tagged;
use crate::expected::{Column, ExclusionSet, Hit, QueryKind, Row};

/// The protocol version this runner speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// A request from the runner, tagged by `cmd`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case", deny_unknown_fields)]
pub enum Command {
    /// The handshake: the first request after the testee starts.
    Start {
        /// The protocol version the runner speaks.
        protocol: u32,
    },
    /// Open one version of a dataset and check everything a reader must check before it
    /// returns rows.
    Open(VersionRef),
    /// Scan one version.
    Scan(ScanRequest),
    /// Where one fragment's lineage sequences live.
    Lineage {
        /// The dataset version.
        #[serde(flatten)]
        at: VersionRef,
        /// The fragment id.
        fragment: u64,
    },
    /// Every exclusion set of one version.
    Exclusion(VersionRef),
    /// Answer one query at one version.
    Query {
        /// The dataset version.
        #[serde(flatten)]
        at: VersionRef,
        /// The query.
        query: QueryRequest,
    },
    /// Commit one step of the case vocabulary to a dataset directory (writers, §7 of
    /// `spec/conformance.md`).
    Write(WriteRequest),
    /// Prepare a commit of one step on the dataset's newest version, without committing it: the
    /// first half of a retried commit.
    Prepare(WriteRequest),
    /// Commit a prepared step on whatever version is newest now.
    Commit {
        /// Absolute path of the dataset directory.
        dataset: String,
        /// The token `prepare` returned.
        transaction: String,
    },
    /// Commit files the kit wrote itself, as the transaction says (a writer declaring
    /// `write:prepared-commit`, §7.4 of `spec/conformance.md`).
    CommitPrepared(CommitPreparedRequest),
    /// The last request: the testee answers and exits.
    Stop,
}

/// A write or a prepare: one step, to commit on top of `read_version`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteRequest {
    /// Absolute path of the dataset directory (empty or absent for `create`).
    pub dataset: String,
    /// The dataset's newest version, which the commit builds on (0 for `create`).
    pub read_version: u64,
    /// The step, in the case vocabulary with every cell and literal tagged
    /// ([`super::write_step`]).
    pub step: serde_json::Value,
    /// The data file version (`"2.0"`, `"2.1"`, `"2.2"`) every data file of the commit must be written
    /// in, when the run asks for one (`run --data-file-version`); absent, the writer chooses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_file_version: Option<String>,
}

/// A prepared commit: files already in the dataset directory, to commit on top of
/// `read_version` as `transaction` says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitPreparedRequest {
    /// Absolute path of the dataset directory.
    pub dataset: String,
    /// The dataset's newest version, which the commit builds on.
    pub read_version: u64,
    /// What to commit.
    pub transaction: PreparedTransaction,
}

/// The operation of a prepared commit, named by the fields of the manifest it changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreparedOperation {
    /// Add overlays to fragments; the committer stamps their `committed_version` with the
    /// version it creates and moves last-updated-at ([OVL-VER-1], [OVL-LIN-1]).
    Overlay,
    /// Replace each named fragment's overlay list with the one given, `committed_version`
    /// included, as a caller-built commit does (Lance's `Merge`).
    Merge,
    /// Add new fragments of the caller's data files; the committer assigns their ids, row ids
    /// and lineage (Lance's `Append`).
    Append,
    /// Give fragments a new deletion file, which replaces the one they had (Lance's `Delete`).
    Delete,
}

impl PreparedOperation {
    /// The operation's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            PreparedOperation::Overlay => "overlay",
            PreparedOperation::Merge => "merge",
            PreparedOperation::Append => "append",
            PreparedOperation::Delete => "delete",
        }
    }
}

/// A prepared commit's transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreparedTransaction {
    /// The operation.
    pub operation: PreparedOperation,
    /// The fragments it touches, by id, in manifest order.
    pub fragments: Vec<PreparedFragment>,
}

/// One fragment of a prepared commit. Each operation uses its own members and no other:
/// `overlay` and `merge` the `overlays`, `append` the `files` and `physical_rows`, `delete` the
/// `deletion_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreparedFragment {
    /// `DataFragment.id`; in an `append`, the id the fragment had where the kit's files come
    /// from (the committer assigns the one it takes).
    pub id: u64,
    /// `overlay`: the overlays to add, oldest first; `merge`: the fragment's whole overlay list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlays: Vec<PreparedOverlay>,
    /// `append`: the new fragment's data files (`DataFragment.files`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<PreparedFile>,
    /// `append`: `DataFragment.physical_rows`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_rows: Option<u64>,
    /// `delete`: the fragment's new `DataFragment.deletion_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_file: Option<PreparedDeletionFile>,
}

/// A `DeletionFile` entry: the file is already at
/// `_deletions/{fragment id}-{read_version}-{id}.{arrow|bin}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreparedDeletionFile {
    /// `"array"` (`ARROW_ARRAY`, `.arrow`) or `"bitmap"` (`BITMAP`, `.bin`).
    pub file_type: PreparedDeletionFileType,
    /// `DeletionFile.read_version`.
    pub read_version: u64,
    /// `DeletionFile.id`.
    pub id: u64,
    /// `DeletionFile.num_deleted_rows` (0: unknown).
    pub num_deleted_rows: u64,
}

/// `DeletionFile.file_type`, by the names Lance's API uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreparedDeletionFileType {
    /// `ARROW_ARRAY = 0`.
    Array,
    /// `BITMAP = 1`.
    Bitmap,
}

/// One `DataOverlayFile` of a prepared commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreparedOverlay {
    /// The value file.
    pub file: PreparedFile,
    /// Which offsets it covers.
    pub coverage: PreparedCoverage,
    /// Set by the caller in a `merge`; absent in an `overlay`, where the committer stamps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub committed_version: Option<u64>,
}

/// A `DataFile` entry: the file is already at `data/<path>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreparedFile {
    /// Relative to the dataset's `data/` directory, as `DataFile.path`.
    pub path: String,
    /// `DataFile.fields`.
    pub fields: Vec<i32>,
    /// `DataFile.column_indices`.
    pub column_indices: Vec<i32>,
    /// `DataFile.file_major_version`.
    pub file_major_version: u32,
    /// `DataFile.file_minor_version`.
    pub file_minor_version: u32,
    /// `DataFile.file_size_bytes` (0: unknown).
    pub file_size_bytes: u64,
}

/// An overlay's coverage as offset lists: `{"dense": [...]}` (`shared_offset_bitmap`) or
/// `{"sparse": [[...], ...]}` (`field_coverage`, one list per `fields` position).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreparedCoverage {
    /// One offset list shared by every field.
    Dense(Vec<u32>),
    /// One offset list per position of the value file's `fields`.
    Sparse(Vec<Vec<u32>>),
}

/// `write`'s and `commit`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteResult {
    /// The version the commit created.
    pub version: u64,
    /// The writer's own measure of the lineage it wrote ([`LineageLengths`]); optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lineage_lengths: Option<Vec<LineageLengths>>,
}

impl WriteResult {
    /// A result that reports no lineage lengths.
    pub fn new(version: u64) -> WriteResult {
        WriteResult {
            version,
            lineage_lengths: None,
        }
    }
}

/// One fragment a commit wrote, and the byte length of the inline encoding of each of its
/// lineage sequences by the writer's own encoder (the `RowIdSequence` or
/// `RowDatasetVersionSequence` message), whether the writer stored it inline or spilled it:
/// the length [LIN-ENC-6] makes the measure of [LIN-PLACE-3] (spec/conformance.md §7.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineageLengths {
    /// The fragment's id in the version created.
    pub fragment: u64,
    /// Row ids (absent: not stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_ids: Option<u64>,
    /// Created-at versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<u64>,
    /// Last-updated-at versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_at: Option<u64>,
}

/// `prepare`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrepareResult {
    /// An opaque token for `commit`.
    pub transaction: String,
}

/// A request line: `{"seq": N, "cmd": ..., ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Sequence number, repeated by the response.
    pub seq: u64,
    /// The command and its arguments.
    #[serde(flatten)]
    pub command: Command,
}

/// One version of one dataset directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionRef {
    /// Absolute path of the dataset directory.
    pub dataset: String,
    /// The dataset version.
    pub version: u64,
}

/// A scan: every live row with `_rowid`, both lineage versions and the projected columns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanRequest {
    /// The dataset version.
    #[serde(flatten)]
    pub at: VersionRef,
    /// Top-level column names in the order wanted; absent means every top-level column in
    /// schema order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub columns: Option<Vec<String>>,
}

/// A predicate with typed literals: `{"field", "op", "value"?}`, `{"and": [...]}` or
/// `{"or": [...]}`. `value` is a tagged value, or an array of them for `in`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Predicate {
    /// A comparison of one field (dotted name).
    Leaf {
        /// The field's dotted name.
        field: String,
        /// `=`, `!=`, `<`, `<=`, `>`, `>=`, `in`, `is_null`, `is_not_null`.
        op: crate::case::Op,
        /// The literal: tagged (an array of tagged for `in`); absent for the null tests.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<Literal>,
    },
    /// Every part holds.
    And {
        /// The parts.
        and: Vec<Predicate>,
    },
    /// Some part holds.
    Or {
        /// The parts.
        or: Vec<Predicate>,
    },
}

/// A predicate literal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Literal {
    /// One tagged value.
    One(Tagged),
    /// The list of an `in`.
    List(Vec<Tagged>),
}

/// A query to answer: scalar (`where`) or vector (`vector` and `k`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryRequest {
    /// The query's name in the case.
    pub name: String,
    /// The index to answer it through.
    pub index: String,
    /// A scalar predicate.
    #[serde(default, rename = "where", skip_serializing_if = "Option::is_none")]
    pub predicate: Option<Predicate>,
    /// The query vector (tagged `fixed_size_list<float32,N>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<Tagged>,
    /// Top k.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<u64>,
}

/// Who the testee is, from the handshake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Implementation {
    /// The reader's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its language (free text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Where to read about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub homepage: Option<String>,
}

/// The handshake's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartResult {
    /// The protocol version the testee speaks (must equal the runner's).
    pub protocol: u32,
    /// Who it is.
    pub implementation: Implementation,
    /// What it can do (see [`crate::runner::capability`]).
    pub capabilities: Vec<String>,
}

/// `open`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenResult {
    /// The version opened.
    pub version: u64,
}

/// `scan`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanResult {
    /// The projected columns, in projection order.
    pub columns: Vec<Column>,
    /// Live rows, fragments in manifest order, rows in physical order; `values` in `columns`
    /// order.
    pub rows: Vec<Row>,
}

/// `exclusion`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExclusionResult {
    /// Every (index, covered fragment) exclusion set.
    pub exclusion_sets: Vec<ExclusionSet>,
}

/// `query`'s result: `final` always; the reconciliation's other lists together or not at all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryAnswer {
    /// Scalar or vector.
    pub kind: QueryKind,
    /// The answer (scalar: sorted by row; vector: rank order, with distances).
    #[serde(rename = "final")]
    pub final_rows: Vec<Hit>,
    /// How the answer was reconciled, when the testee declares `exclusion`.
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub reconciliation: Option<Reconciliation>,
    /// How the reader answered: through the index or on the flat path, with its own account
    /// of the plan. Optional; when given, the runner fails a query that should have used the
    /// index and did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<QueryPlan>,
}

/// A reader's account of how it answered a query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryPlan {
    /// Whether the named index answered (some of) the query.
    pub index: bool,
    /// The reader's plan, as text (recorded in the check's detail).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// The lists a reconciled query goes through (as in `expected/`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reconciliation {
    /// What the index returns.
    pub candidates: Vec<Hit>,
    /// Index hits dropped because they are in the exclusion set.
    pub excluded: Vec<Hit>,
    /// Live rows evaluated on current values.
    pub reevaluated: Vec<Hit>,
    /// Re-evaluated rows that match (scalar) or have a distance (vector).
    pub rematched: Vec<Hit>,
}

/// The reader refused the data: the error class (`malformed`, `invalid`,
/// `unsupported_feature`), optionally the reference's code, and a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadError {
    /// The class.
    pub class: String,
    /// The reference's error code, when the testee declares `error-codes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Free text.
    #[serde(default)]
    pub message: String,
}

/// Why a request was not answered (`unsupported`, `skipped`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reason {
    /// Free text.
    pub reason: String,
    /// A tracking issue, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue_url: Option<String>,
}

/// The testee caught a failure of its own (a bug, not a verdict on the data).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Errored {
    /// Free text.
    pub message: String,
    /// More context (a traceback, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A response line. Exactly one of the optional members is present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Response {
    /// The request's `seq`.
    pub seq: u64,
    /// The answer (its shape depends on the command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// The reader refuses the data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ReadError>,
    /// The reader cannot do what was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<Reason>,
    /// The reader chooses not to answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<Reason>,
    /// The reader failed by its own fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errored: Option<Errored>,
}

impl Response {
    /// How many of the five members are present (a valid response has exactly one).
    pub fn members(&self) -> usize {
        usize::from(self.result.is_some())
            + usize::from(self.error.is_some())
            + usize::from(self.unsupported.is_some())
            + usize::from(self.skipped.is_some())
            + usize::from(self.errored.is_some())
    }
}
