//! The crate's error type.
//!
//! Invariant: every way untrusted input can be wrong has its own variant carrying the offending
//! values (which file, which message field, which number), and every variant belongs to exactly
//! one [`ErrorClass`]. Negative conformance cases match on the class and the stable
//! [`Error::code`], never on message text.
//!
//! Each concept module owns the errors of its own domain ([`LineageError`], [`FlagError`],
//! [`CompactionError`], [`QueryError`], [`DatasetIoError`], [`DataFileError`], [`DatasetError`]); [`Error`] wraps them so callers handle one type.

use crate::compaction::CompactionError;
use crate::dataset::data_file::DataFileError;
use crate::dataset::{DatasetError, DatasetIoError};
use crate::flags::FlagError;
use crate::lineage::LineageError;
use crate::query::QueryError;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The class a failure belongs to: the unit a negative conformance case requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorClass {
    /// Bytes that cannot be decoded (bad protobuf, bad roaring, truncated file).
    Malformed,
    /// Decodes, but breaks an invariant of the specification.
    Invalid,
    /// Uses a feature (flag bit, file version, encoding) the reader does not support.
    UnsupportedFeature,
    /// A requested operation that the specification forbids (for example a non-contiguous merge
    /// or a fold that would leave an index stale).
    Refused,
}

impl ErrorClass {
    /// Stable snake_case name used in expected results and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Malformed => "malformed",
            ErrorClass::Invalid => "invalid",
            ErrorClass::UnsupportedFeature => "unsupported_feature",
            ErrorClass::Refused => "refused",
        }
    }
}

/// Every error the reference semantics can report.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A field id is not part of the schema where the schema is required to hold it.
    #[error("field {field} is not in the schema ({context})")]
    UnknownField {
        /// The field id.
        field: i32,
        /// Where it was referenced.
        context: String,
    },
    /// The schema itself is inconsistent (duplicate id, parent after child, bad parent type).
    #[error("schema: field {field}: {problem}")]
    InvalidSchema {
        /// The offending field id.
        field: i32,
        /// What is wrong.
        problem: String,
    },
    /// A row offset lies at or past the fragment's `physical_rows`.
    #[error(
        "fragment {fragment}: {file}: {what} offset {offset} is not below physical_rows {physical_rows}"
    )]
    OffsetOutOfRange {
        /// Fragment id.
        fragment: u64,
        /// The file the offset comes from (overlay data file or deletion file).
        file: String,
        /// Which structure held the offset (`coverage of field 3`, `deletion set`).
        what: String,
        /// The offending offset.
        offset: u64,
        /// The fragment's physical row count.
        physical_rows: u64,
    },
    /// An overlay's value column does not hold exactly one value per covered offset.
    #[error(
        "fragment {fragment}: overlay {file}: field {field} has {values} values but its coverage has {covered} offsets"
    )]
    ValueCountMismatch {
        /// Fragment id.
        fragment: u64,
        /// Overlay data file path.
        file: String,
        /// Field id of the value column.
        field: i32,
        /// Number of values stored.
        values: u64,
        /// Cardinality of the coverage bitmap.
        covered: u64,
    },
    /// A sparse overlay's number of per-field bitmaps differs from its number of fields.
    #[error(
        "fragment {fragment}: overlay {file}: field_coverage has {bitmaps} bitmaps for {fields} fields"
    )]
    FieldCoverageCountMismatch {
        /// Fragment id.
        fragment: u64,
        /// Overlay data file path.
        file: String,
        /// Number of `offset_bitmaps`.
        bitmaps: usize,
        /// Number of `data_file.fields`.
        fields: usize,
    },
    /// A data file's `fields` and its stored columns disagree in number.
    #[error("fragment {fragment}: {file}: {fields} fields but {columns} columns")]
    ColumnCountMismatch {
        /// Fragment id.
        fragment: u64,
        /// Data file path.
        file: String,
        /// Number of field ids.
        fields: usize,
        /// Number of columns.
        columns: usize,
    },
    /// A base column does not hold exactly `physical_rows` values.
    #[error(
        "fragment {fragment}: {file}: field {field} has {values} values, physical_rows is {physical_rows}"
    )]
    BaseLengthMismatch {
        /// Fragment id.
        fragment: u64,
        /// Data file path.
        file: String,
        /// Field id.
        field: i32,
        /// Stored values.
        values: u64,
        /// Expected count.
        physical_rows: u64,
    },
    /// A live field id appears more than once where it must be unique.
    #[error("fragment {fragment}: {file}: field {field} appears more than once ({context})")]
    DuplicateField {
        /// Fragment id.
        fragment: u64,
        /// Data file path.
        file: String,
        /// The repeated field id.
        field: i32,
        /// Within one file, or across the fragment's base files.
        context: String,
    },
    /// A value's type does not match its field's declared type.
    #[error(
        "fragment {fragment}: {file}: field {field}: value {index} is {found}, expected {expected}"
    )]
    TypeMismatch {
        /// Fragment id.
        fragment: u64,
        /// Data file path.
        file: String,
        /// Field id.
        field: i32,
        /// Index of the value within its column.
        index: u64,
        /// Declared type.
        expected: String,
        /// Found value kind.
        found: String,
    },
    /// An overlay's `committed_version` is impossible for the snapshot holding it.
    #[error("fragment {fragment}: overlay {file}: committed_version {committed_version} {problem}")]
    BadCommittedVersion {
        /// Fragment id.
        fragment: u64,
        /// Overlay data file path.
        file: String,
        /// The stored version.
        committed_version: u64,
        /// What is wrong with it.
        problem: String,
    },
    /// A roaring bitmap could not be decoded.
    #[error("{file}: {field}: malformed roaring bitmap: {problem}")]
    MalformedBitmap {
        /// File holding the bitmap (manifest, deletion file).
        file: String,
        /// Message field holding it.
        field: String,
        /// What the decoder said.
        problem: String,
    },
    /// A fragment id is referenced but does not exist in the snapshot.
    #[error("fragment {fragment} does not exist ({context})")]
    UnknownFragment {
        /// Fragment id.
        fragment: u64,
        /// Where it was referenced.
        context: String,
    },
    /// A lineage sequence stored as a column, while no data file of the fragment holds its
    /// reserved field id.
    #[error(
        "fragment {fragment}: the manifest stores lineage field {field} as a column, but no data file of the fragment holds that id"
    )]
    MissingLineageColumn {
        /// Fragment id.
        fragment: u64,
        /// The reserved field id (-3, -4 or -5).
        field: i32,
    },
    /// Index metadata that cannot be right (for example built from a future version).
    #[error("index {index}: {problem}")]
    InvalidIndex {
        /// Index name.
        index: String,
        /// What is wrong.
        problem: String,
    },
    /// Row lineage sequences and their encodings.
    #[error(transparent)]
    Lineage(#[from] LineageError),
    /// Feature flags.
    #[error(transparent)]
    Flags(#[from] FlagError),
    /// Compaction planning.
    #[error(transparent)]
    Compaction(#[from] CompactionError),
    /// Query reconciliation.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// On-disk bytes: bitmaps, deletion files, data files, manifests.
    #[error(transparent)]
    Dataset(#[from] DatasetIoError),
    /// Lance data files.
    #[error(transparent)]
    DataFile(#[from] DataFileError),
    /// Dataset directories: manifests, version names, paths, whole versions.
    #[error(transparent)]
    Layout(#[from] Box<DatasetError>),
}

impl Error {
    /// The class of this failure.
    pub fn class(&self) -> ErrorClass {
        match self {
            Error::MalformedBitmap { .. } | Error::FieldCoverageCountMismatch { .. } => {
                ErrorClass::Malformed
            }
            Error::Lineage(e) => e.class(),
            Error::Flags(e) => e.class(),
            Error::Compaction(e) => e.class(),
            Error::Query(e) => e.class(),
            Error::Dataset(e) => e.class(),
            Error::DataFile(e) => e.class(),
            Error::Layout(e) => e.class(),
            _ => ErrorClass::Invalid,
        }
    }

    /// A stable snake_case identifier of the variant, for golden negative cases.
    pub fn code(&self) -> &'static str {
        match self {
            Error::UnknownField { .. } => "unknown_field",
            Error::InvalidSchema { .. } => "invalid_schema",
            Error::OffsetOutOfRange { .. } => "offset_out_of_range",
            Error::ValueCountMismatch { .. } => "value_count_mismatch",
            Error::FieldCoverageCountMismatch { .. } => "field_coverage_count_mismatch",
            Error::ColumnCountMismatch { .. } => "column_count_mismatch",
            Error::BaseLengthMismatch { .. } => "base_length_mismatch",
            Error::DuplicateField { .. } => "duplicate_field",
            Error::TypeMismatch { .. } => "type_mismatch",
            Error::BadCommittedVersion { .. } => "bad_committed_version",
            Error::MalformedBitmap { .. } => "malformed_bitmap",
            Error::UnknownFragment { .. } => "unknown_fragment",
            Error::InvalidIndex { .. } => "invalid_index",
            Error::MissingLineageColumn { .. } => "missing_lineage_column",
            Error::Lineage(e) => e.code(),
            Error::Flags(e) => e.code(),
            Error::Compaction(e) => e.code(),
            Error::Query(e) => e.code(),
            Error::Dataset(e) => e.code(),
            Error::DataFile(e) => e.code(),
            Error::Layout(e) => e.code(),
        }
    }
}

impl From<DatasetError> for Error {
    fn from(e: DatasetError) -> Error {
        Error::Layout(Box::new(e))
    }
}
