//! Row lineage: a fragment's stable row ids and its created-at / last-updated-at versions,
//! their Lance 14 encodings, where each sequence is placed, and how a commit stamps them.
//!
//! Invariant: every sequence this module hands out holds exactly one value per physical row of
//! its fragment, and every byte string it accepts has been checked field by field before any
//! value is expanded. Decoding allocates at most in proportion to the input's byte length;
//! expanding to per-row values happens only after the caller has vouched for the row count
//! (`values(physical_rows)`), because a 6-byte `Range` can describe 2^64 rows.
//!
//! | module | concept |
//! |---|---|
//! | [`encoded_array`] | `EncodedU64Array`: base + fixed-width little-endian offsets |
//! | [`segment`] | `U64Segment`: the five segment kinds and Lance's encoder choice |
//! | [`row_ids`] | `RowIdSequence`: decode, encode, and Lance's whole-sequence builders |
//! | [`version`] | `RowDatasetVersionSequence`: run-length encoded versions |
//! | [`placement`](mod@placement) | inline vs spilled, and the compaction placement plan |
//! | [`stamping`] | what a commit assigns, and re-assigning it on a retry |
//!
//! Byte layouts (protobuf, package `lance.table`; `spec/protos/rowids.proto`):
//!
//! ```text
//! RowIdSequence              { 1: repeated U64Segment segments }
//! U64Segment  oneof segment  { 1: Range           { 1: start, 2: end }            end exclusive
//!                              2: RangeWithHoles  { 1: start, 2: end, 3: EncodedU64Array holes }
//!                                                  holes are ABSOLUTE values, strictly increasing
//!                              3: RangeWithBitmap { 1: start, 2: end, 3: bytes bitmap }
//!                                                  bit i = byte[i/8] & (1 << (i%8)), LSB first,
//!                                                  ceil((end-start)/8) bytes, padding bits 0
//!                              4: EncodedU64Array sorted_array      strictly increasing
//!                              5: EncodedU64Array array }           any order
//! EncodedU64Array oneof      { 1: U16Array { 1: base, 2: bytes offsets (u16 LE) }
//!                              2: U32Array { 1: base, 2: bytes offsets (u32 LE) }
//!                              3: U64Array {          2: bytes values  (u64 LE) } }
//! RowDatasetVersionSequence  { 1: repeated RowDatasetVersionRun runs }
//! RowDatasetVersionRun       { 1: U64Segment span (only its length counts), 2: uint64 version }
//!
//! e.g. 10 rows, all at version 1:  0a 08 | 0a 04 | 0a 02 10 0a | 10 01
//!                                  runs[0] span   range{end:10} version 1
//! ```

pub mod encoded_array;
pub mod placement;
pub mod row_ids;
pub mod segment;
pub mod stamping;
pub mod version;

pub use encoded_array::{ArrayWidth, EncodedU64Array};
pub use placement::{
    CompactionPlacement, DEFAULT_INLINE_MAX_BYTES, EncodedLengths, INLINE_MAX_BYTES_KEY, Origin,
    Placement, SPILL_KEY, SequenceKind, SpillConfig, placement, plan_compaction,
};
pub use row_ids::RowIdSequence;
pub use segment::U64Segment;
pub use stamping::{
    AppendedFragment, CarriedLineage, PendingCommit, append_fragment, restamp, stamp_overlays,
    stamp_rows,
};
pub use version::{RowDatasetVersionSequence, VersionRun};

/// Errors of this module. Decoding errors name where in the message they were found
/// (`location`, e.g. `RowIdSequence.segments[2]`) and which message field was wrong (`field`,
/// e.g. `U64Segment.range_with_bitmap.bitmap`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LineageError {
    /// The bytes are not a protobuf message of the expected type.
    #[error("{message}: not a valid protobuf message: {problem}")]
    Protobuf {
        /// The message type being decoded.
        message: &'static str,
        /// What the protobuf decoder said.
        problem: String,
    },
    /// A oneof that must hold one arm holds none (or a required sub-message is absent).
    #[error("{location}: {field} is not set")]
    MissingField {
        /// Where in the message.
        location: String,
        /// The unset oneof or field.
        field: &'static str,
    },
    /// A packed byte array's length is not a multiple of its element width.
    #[error("{location}: {field} has {len} bytes, not a multiple of {width}")]
    ByteLength {
        /// Where in the message.
        location: String,
        /// The bytes field.
        field: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The element width in bytes.
        width: usize,
    },
    /// A range's start exceeds its end.
    #[error("{location}: {field}: start {start} exceeds end {end}")]
    RangeReversed {
        /// Where in the message.
        location: String,
        /// The range's message.
        field: &'static str,
        /// `start`.
        start: u64,
        /// `end`.
        end: u64,
    },
    /// Values that must be strictly increasing are not.
    #[error(
        "{location}: {field}: value {index} ({next}) is not greater than the one before ({previous})"
    )]
    NotIncreasing {
        /// Where in the message.
        location: String,
        /// The array field.
        field: &'static str,
        /// Index of the offending value.
        index: usize,
        /// The value before it.
        previous: u64,
        /// The offending value.
        next: u64,
    },
    /// A hole lies outside its segment's range.
    #[error("{location}: {field}: hole {hole} is outside {start}..{end}")]
    HoleOutsideRange {
        /// Where in the message.
        location: String,
        /// The holes field.
        field: &'static str,
        /// The hole.
        hole: u64,
        /// Range start.
        start: u64,
        /// Range end.
        end: u64,
    },
    /// A bitmap's byte length is not ceil(range length / 8).
    #[error("{location}: {field} has {len} bytes, expected {expected} for a range of {range_len}")]
    BitmapLength {
        /// Where in the message.
        location: String,
        /// The bitmap field.
        field: &'static str,
        /// Actual byte length.
        len: usize,
        /// Required byte length.
        expected: u64,
        /// end - start.
        range_len: u64,
    },
    /// A bitmap's bits past the range's end are not zero.
    #[error("{location}: {field}: padding bits of the last byte {last_byte:#04x} are not zero")]
    BitmapPadding {
        /// Where in the message.
        location: String,
        /// The bitmap field.
        field: &'static str,
        /// The last byte.
        last_byte: u8,
    },
    /// `base + offset` does not fit in u64.
    #[error("{location}: {field}: base {base} + offset {offset} overflows u64")]
    OffsetOverflow {
        /// Where in the message.
        location: String,
        /// The array field.
        field: &'static str,
        /// The base.
        base: u64,
        /// The largest offset.
        offset: u64,
    },
    /// The total number of values does not fit in u64.
    #[error("{message}: total length overflows u64")]
    LengthOverflow {
        /// The message type.
        message: &'static str,
    },
    /// A sequence's length differs from the row count it must match.
    #[error("{sequence}: holds {len} values, expected {expected}")]
    LengthMismatch {
        /// Which sequence (`row ids`, `created-at`, ...).
        sequence: &'static str,
        /// Its length.
        len: u64,
        /// The required length.
        expected: u64,
    },
    /// Rechunking was asked for chunk sizes that do not add up to the rows available.
    #[error("rechunk: chunk sizes total {requested} rows but the sequences hold {available}")]
    ChunkMismatch {
        /// Sum of the chunk sizes.
        requested: u64,
        /// Rows in the input sequences.
        available: u64,
    },
    /// An offset (coverage, deletion) is at or past the sequence's / fragment's row count.
    #[error("{what}: offset {offset} is not below physical_rows {physical_rows}")]
    OffsetOutOfRange {
        /// Which structure held the offset (`fragment 3: coverage of overlay 1`).
        what: String,
        /// The offset.
        offset: u64,
        /// The fragment's physical row count.
        physical_rows: u64,
    },
    /// A table config value could not be used.
    #[error("table config {key}={value:?}: {problem}")]
    BadConfig {
        /// The config key.
        key: &'static str,
        /// The stored value.
        value: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A commit names a fragment the snapshot does not hold.
    #[error("fragment {fragment} does not exist ({context})")]
    UnknownFragment {
        /// Fragment id.
        fragment: u64,
        /// What referenced it.
        context: &'static str,
    },
}

crate::error_codes! {LineageError {
    LineageError::Protobuf { .. } => code("lineage_protobuf", Malformed, "The bytes are not a protobuf message of the expected type"),
    LineageError::MissingField { .. } => code("lineage_missing_field", Malformed, "A oneof that must hold one arm holds none (or a required sub-message is absent)"),
    LineageError::ByteLength { .. } => code("lineage_byte_length", Malformed, "A packed byte array's length is not a multiple of its element width"),
    LineageError::RangeReversed { .. } => code("lineage_range_reversed", Invalid, "A range's start exceeds its end"),
    LineageError::NotIncreasing { .. } => code("lineage_not_increasing", Invalid, "Values that must be strictly increasing are not"),
    LineageError::HoleOutsideRange { .. } => code("lineage_hole_outside_range", Invalid, "A hole lies outside its segment's range"),
    LineageError::BitmapLength { .. } => code("lineage_bitmap_length", Invalid, "A bitmap's byte length is not ceil(range length / 8)"),
    LineageError::BitmapPadding { .. } => code("lineage_bitmap_padding", Invalid, "A bitmap's bits past the range's end are not zero"),
    LineageError::OffsetOverflow { .. } => code("lineage_offset_overflow", Invalid, "`base + offset` does not fit in u64"),
    LineageError::LengthOverflow { .. } => code("lineage_length_overflow", Invalid, "The total number of values does not fit in u64"),
    LineageError::LengthMismatch { .. } => code("lineage_length_mismatch", Invalid, "A sequence's length differs from the row count it must match"),
    LineageError::ChunkMismatch { .. } => code("lineage_chunk_mismatch", Invalid, "Rechunking was asked for chunk sizes that do not add up to the rows available"),
    LineageError::OffsetOutOfRange { .. } => code("lineage_offset_out_of_range", Invalid, "An offset (coverage, deletion) is at or past the sequence's / fragment's row count"),
    LineageError::BadConfig { .. } => code("lineage_bad_config", Invalid, "A table config value could not be used"),
    LineageError::UnknownFragment { .. } => code("lineage_unknown_fragment", Invalid, "A commit names a fragment the snapshot does not hold"),
}}
