//! The plain data the reference semantics operate on, decoded and in memory.
//!
//! Invariant: these types hold exactly what the manifest and the data files say, with no
//! derived state. Nothing here resolves a cell; that is [`crate::resolve`]. Every structure has a
//! `validate` that names the first broken invariant, and every consumer in this crate assumes a
//! validated value (readers validate at the boundary, before anything else runs).
//!
//! ```text
//! Snapshot (one dataset version)
//! ├── schema: Schema (pre-order fields, nested struct / fixed_size_list)
//! ├── fragments: [Fragment]
//! │   ├── physical_rows, deletions (offsets)
//! │   ├── files: [DataFile]            base columns by field id (-2 = tombstone), Arrow arrays
//! │   ├── overlays: [Overlay]          stored order; precedence is (committed_version, position)
//! │   │   ├── file: DataFile           one value column per field, values in rank order
//! │   │   ├── coverage: Dense(bitmap) | Sparse([bitmap; fields])
//! │   │   └── committed_version
//! │   └── lineage: row ids, created-at, last-updated-at (absent / inline / column)
//! └── indices: [Index]                 fields, dataset_version, fragment coverage, entries
//! ```

mod column;
mod fragment;
mod index;
mod schema;
mod snapshot;
mod value;

#[cfg(test)]
pub(crate) use column::test_columns as cols;
pub use column::{Column, Misfit, StructLayer, stored_type, value_at, vector_item};
pub use fragment::{
    CREATED_AT_FIELD_ID, Coverage, DataFile, Fragment, LAST_UPDATED_AT_FIELD_ID, Lineage,
    LineageSequence, Overlay, ROW_ID_FIELD_ID, TOMBSTONE_FIELD_ID,
};
pub use index::{Index, IndexEntry, IndexKind};
pub use schema::{DataType, Field, FieldId, Schema};
pub use snapshot::Snapshot;
pub use value::Value;
