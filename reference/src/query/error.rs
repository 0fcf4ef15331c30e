//! The errors of query reconciliation, apart from the reconciliation itself so that the
//! crate's [`crate::Error`] can wrap them without depending on how queries are answered.

use crate::model::{FieldId, IndexKind};

/// Errors of query reconciliation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// No index has this name.
    #[error("no index named {index:?}")]
    UnknownIndex {
        /// The requested name.
        index: String,
    },
    /// The index is of the wrong kind for the query (a scalar query on a vector index, ...).
    #[error("index {index:?} is a {found:?} index, the query needs a {expected:?} index")]
    IndexKindMismatch {
        /// Index name.
        index: String,
        /// The kind the query needs.
        expected: IndexKind,
        /// The index's kind.
        found: IndexKind,
    },
    /// The index lists no fields, so it has no key.
    #[error("index {index:?} has no fields")]
    IndexWithoutFields {
        /// Index name.
        index: String,
    },
    /// The query references a field the schema does not have.
    #[error("query references field {field}, which is not in the schema")]
    UnknownField {
        /// The field id.
        field: FieldId,
    },
    /// An ordering or equality comparison on a field whose type has no such comparison.
    #[error("field {field} of type {data_type} cannot be compared (only IsNull/IsNotNull apply)")]
    NotComparable {
        /// The field id.
        field: FieldId,
        /// Its logical type.
        data_type: String,
    },
    /// Two values of different types meet (a literal, an index entry or the indexed field).
    #[error("field {field}: {context}: expected {expected}, found {found}")]
    TypeMismatch {
        /// The field id.
        field: FieldId,
        /// Where the mismatch was found (`literal`, `index entry`, `vector index key`).
        context: String,
        /// The type required.
        expected: String,
        /// The type found.
        found: String,
    },
    /// The predicate references a field other than the index's key.
    #[error("index {index:?} cannot answer a predicate on field {field}: only on its key {key}")]
    NotIndexable {
        /// Index name.
        index: String,
        /// The index's key (first field).
        key: FieldId,
        /// A field of the predicate other than the key.
        field: FieldId,
    },
    /// The predicate nests `And`/`Or` deeper than [`MAX_PREDICATE_DEPTH`](super::MAX_PREDICATE_DEPTH).
    #[error("predicate nests deeper than {limit} levels")]
    PredicateTooDeep {
        /// The limit.
        limit: usize,
    },
    /// A vector (query or stored) does not have the field's dimension.
    #[error("{context}: expected {expected} items, found {found}")]
    DimensionMismatch {
        /// Which vector (`query`, `index entry`, `resolved value`).
        context: String,
        /// The field's dimension.
        expected: u64,
        /// The vector's length.
        found: u64,
    },
    /// A top-k query with `k = 0`.
    #[error("k must be at least 1")]
    ZeroK,
    /// A query vector item is NaN or infinite.
    #[error("query vector item {position} is not finite")]
    NonFiniteQuery {
        /// Position of the item.
        position: usize,
    },
    /// An index entry names an offset at or past its fragment's `physical_rows`.
    #[error(
        "index {index:?}: entry for fragment {fragment} offset {offset} is not below physical_rows {physical_rows}"
    )]
    EntryOutOfRange {
        /// Index name.
        index: String,
        /// Fragment id.
        fragment: u64,
        /// The entry's offset.
        offset: u64,
        /// The fragment's physical row count.
        physical_rows: u64,
    },
    /// An index holds two entries for one row.
    #[error("index {index:?}: more than one entry for fragment {fragment} offset {offset}")]
    DuplicateEntry {
        /// Index name.
        index: String,
        /// Fragment id.
        fragment: u64,
        /// Offset.
        offset: u64,
    },
}

crate::error_codes! {QueryError {
    QueryError::UnknownIndex { .. } => code("unknown_index", Invalid, "No index has this name"),
    QueryError::IndexKindMismatch { .. } => code("index_kind_mismatch", Invalid, "The index is of the wrong kind for the query (a scalar query on a vector index, ...)"),
    QueryError::IndexWithoutFields { .. } => code("index_without_fields", Invalid, "The index lists no fields, so it has no key"),
    QueryError::UnknownField { .. } => code("query_unknown_field", Invalid, "The query references a field the schema does not have"),
    QueryError::NotComparable { .. } => code("not_comparable", Invalid, "An ordering or equality comparison on a field whose type has no such comparison"),
    QueryError::TypeMismatch { .. } => code("query_type_mismatch", Invalid, "Two values of different types meet (a literal, an index entry or the indexed field)"),
    QueryError::NotIndexable { .. } => code("not_indexable", UnsupportedFeature, "The predicate references a field other than the index's key"),
    QueryError::PredicateTooDeep { .. } => code("predicate_too_deep", UnsupportedFeature, "The predicate nests `And`/`Or` deeper than [`MAX_PREDICATE_DEPTH`]"),
    QueryError::DimensionMismatch { .. } => code("dimension_mismatch", Invalid, "A vector (query or stored) does not have the field's dimension"),
    QueryError::ZeroK => code("zero_k", Invalid, "A top-k query with `k = 0`"),
    QueryError::NonFiniteQuery { .. } => code("non_finite_query", Invalid, "A query vector item is NaN or infinite"),
    QueryError::EntryOutOfRange { .. } => code("index_entry_out_of_range", Invalid, "An index entry names an offset at or past its fragment's `physical_rows`"),
    QueryError::DuplicateEntry { .. } => code("duplicate_index_entry", Invalid, "An index holds two entries for one row"),
}}
