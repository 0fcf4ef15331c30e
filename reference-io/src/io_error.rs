//! The errors of on-disk dataset I/O.
//!
//! Invariant: each variant names the file (a path relative to the dataset root) and, where the
//! bytes sit inside a message, the message field, plus the values that were wrong; each variant
//! belongs to exactly one [`ErrorClass`]. Negative conformance cases match on
//! [`DatasetIoError::class`] and [`DatasetIoError::code`], never on message text.

/// What was wrong with a serialized roaring bitmap.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BitmapProblem {
    /// Zero bytes: a serialized bitmap, even an empty one, is at least 8 bytes.
    #[error("no bytes (an empty bitmap serializes to 8 bytes)")]
    Empty,
    /// The bytes end before a structure they declare.
    #[error("truncated: {what} needs {needed} bytes at offset {at}, {available} remain")]
    Truncated {
        /// The structure being read.
        what: &'static str,
        /// Its byte offset.
        at: usize,
        /// Bytes it needs.
        needed: usize,
        /// Bytes left in the input.
        available: usize,
    },
    /// The first four bytes are neither cookie 12346 nor cookie 12347.
    #[error("unknown cookie {0:#010x}")]
    UnknownCookie(u32),
    /// A cookie-12346 header declares more than 65536 containers.
    #[error("{0} containers declared, at most 65536 exist")]
    TooManyContainers(u64),
    /// The run-container flags have a bit set past the last container.
    #[error("run flag set for container {index}, past the {containers} containers")]
    RunFlagPastEnd {
        /// The flagged container index.
        index: usize,
        /// Number of containers.
        containers: usize,
    },
    /// Container keys are not strictly increasing.
    #[error("container {index}: key {key} does not follow key {previous}")]
    KeysNotIncreasing {
        /// Container index.
        index: usize,
        /// Its key.
        key: u16,
        /// The key before it.
        previous: u16,
    },
    /// An offset-table entry does not point at its container.
    #[error("container {index}: offset table says {stated}, the container starts at {actual}")]
    WrongOffset {
        /// Container index.
        index: usize,
        /// The stored offset.
        stated: u32,
        /// Where the container really starts.
        actual: usize,
    },
    /// Array values are not strictly increasing.
    #[error("container {index}: array value {value} does not follow {previous}")]
    ArrayNotIncreasing {
        /// Container index.
        index: usize,
        /// The value.
        value: u16,
        /// The value before it.
        previous: u16,
    },
    /// A run container holds zero runs.
    #[error("container {index}: run container with zero runs")]
    NoRuns {
        /// Container index.
        index: usize,
    },
    /// A run extends past 65535.
    #[error("container {index}: run {start}+{length_minus_one} passes 65535")]
    RunPastEnd {
        /// Container index.
        index: usize,
        /// Run start.
        start: u16,
        /// Stored length (number of values minus one).
        length_minus_one: u16,
    },
    /// Runs overlap, touch, or are out of order.
    #[error(
        "container {index}: run starting at {start} does not begin past the gap after the run ending at {previous_end}"
    )]
    RunsNotIncreasing {
        /// Container index.
        index: usize,
        /// Start of the offending run.
        start: u16,
        /// Last value of the run before it.
        previous_end: u16,
    },
    /// A container holds a different number of values than its descriptor says.
    #[error("container {index}: descriptor says {declared} values, the container holds {found}")]
    CardinalityMismatch {
        /// Container index.
        index: usize,
        /// The descriptor's cardinality.
        declared: u32,
        /// Values actually stored.
        found: u32,
    },
    /// The `roaring` crate refused bytes this module's checks accepted (a bug here, reported as
    /// malformed input rather than trusted).
    #[error("roaring crate refused the bytes: {0}")]
    Unmaterializable(String),
    /// Bytes remain after the last container.
    #[error("{0} bytes after the last container")]
    TrailingBytes(usize),
}

/// Every failure of on-disk dataset I/O.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DatasetIoError {
    /// A serialized roaring bitmap does not decode.
    #[error("{file}: {field}: malformed roaring bitmap: {problem}")]
    MalformedBitmap {
        /// The file holding the bitmap (manifest or deletion file).
        file: String,
        /// The message field holding it, e.g. `DataOverlayFile.shared_offset_bitmap`.
        field: String,
        /// What was wrong.
        problem: BitmapProblem,
    },
    /// A `DeletionFile.file_type` other than ARROW_ARRAY (0) or BITMAP (1).
    #[error(
        "fragment {fragment}: DeletionFile.file_type {file_type} is not a known deletion file type"
    )]
    UnknownDeletionFileType {
        /// The fragment the deletion file belongs to.
        fragment: u64,
        /// The stored enum value.
        file_type: i32,
    },
    /// An Arrow-form deletion file that is not a well-formed Arrow IPC file.
    #[error("{file}: malformed Arrow IPC file: {problem}")]
    MalformedArrowFile {
        /// The deletion file.
        file: String,
        /// What was wrong.
        problem: String,
    },
    /// A well-formed Arrow IPC file using something this reader does not implement.
    #[error("{file}: unsupported Arrow IPC feature: {feature}")]
    UnsupportedArrowFeature {
        /// The deletion file.
        file: String,
        /// The feature (compression codec, endianness, metadata version).
        feature: String,
    },
    /// The Arrow schema is not exactly `row_id: UInt32, non-nullable`, without metadata.
    #[error("{file}: deletion file schema must be `row_id: UInt32 not null`: {problem}")]
    WrongDeletionSchema {
        /// The deletion file.
        file: String,
        /// How it differs.
        problem: String,
    },
    /// The Arrow file holds other than exactly one record batch.
    #[error("{file}: a deletion file holds exactly one record batch, found {batches}")]
    DeletionBatchCount {
        /// The deletion file.
        file: String,
        /// Batches found.
        batches: usize,
    },
    /// A null among the deleted offsets.
    #[error("{file}: row {row} of the deletion file is null")]
    NullDeletionOffset {
        /// The deletion file.
        file: String,
        /// Row index within the batch.
        row: u64,
    },
    /// A deleted offset at or past the fragment's `physical_rows`.
    #[error("{file}: deleted offset {offset} is not below physical_rows {physical_rows}")]
    DeletionOffsetOutOfRange {
        /// The deletion file.
        file: String,
        /// The offset.
        offset: u32,
        /// The fragment's physical row count.
        physical_rows: u64,
    },
    /// The same offset listed twice in an Arrow-form deletion file.
    #[error("{file}: offset {offset} is listed more than once")]
    DuplicateDeletionOffset {
        /// The deletion file.
        file: String,
        /// The repeated offset.
        offset: u32,
    },
    /// More deleted offsets declared than the fragment has rows.
    #[error("{file}: {rows} deleted offsets declared, the fragment has {physical_rows} rows")]
    DeletionCountExceedsRows {
        /// The deletion file.
        file: String,
        /// Declared row count.
        rows: u64,
        /// The fragment's physical row count.
        physical_rows: u64,
    },
    /// `DeletionFile.num_deleted_rows` is non-zero and differs from the file's content.
    #[error("{file}: DeletionFile.num_deleted_rows is {declared}, the file deletes {found} rows")]
    DeletedRowCountMismatch {
        /// The deletion file.
        file: String,
        /// The manifest's value.
        declared: u64,
        /// Offsets in the file.
        found: u64,
    },
}

lance_reference::error_codes! {DatasetIoError {
    DatasetIoError::MalformedBitmap { .. } => code("malformed_bitmap", Malformed, "A serialized roaring bitmap does not decode"),
    DatasetIoError::UnknownDeletionFileType { .. } => code("unknown_deletion_file_type", UnsupportedFeature, "A `DeletionFile.file_type` other than ARROW_ARRAY (0) or BITMAP (1)"),
    DatasetIoError::MalformedArrowFile { .. } => code("malformed_arrow_file", Malformed, "An Arrow-form deletion file that is not a well-formed Arrow IPC file"),
    DatasetIoError::UnsupportedArrowFeature { .. } => code("unsupported_arrow_feature", UnsupportedFeature, "A well-formed Arrow IPC file using something this reader does not implement"),
    DatasetIoError::WrongDeletionSchema { .. } => code("wrong_deletion_schema", Invalid, "The Arrow schema is not exactly `row_id: UInt32`, non-nullable, without metadata"),
    DatasetIoError::DeletionBatchCount { .. } => code("deletion_batch_count", Invalid, "The Arrow file holds other than exactly one record batch"),
    DatasetIoError::NullDeletionOffset { .. } => code("null_deletion_offset", Invalid, "A null among the deleted offsets"),
    DatasetIoError::DeletionOffsetOutOfRange { .. } => code("deletion_offset_out_of_range", Invalid, "A deleted offset at or past the fragment's `physical_rows`"),
    DatasetIoError::DuplicateDeletionOffset { .. } => code("duplicate_deletion_offset", Invalid, "The same offset listed twice in an Arrow-form deletion file"),
    DatasetIoError::DeletionCountExceedsRows { .. } => code("deletion_count_exceeds_rows", Invalid, "More deleted offsets declared than the fragment has rows"),
    DatasetIoError::DeletedRowCountMismatch { .. } => code("deleted_row_count_mismatch", Invalid, "`DeletionFile.num_deleted_rows` is non-zero and differs from the file's content"),
}}
