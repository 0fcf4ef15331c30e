//! Index metadata, plus the entries an index held when it was built.
//!
//! Invariant: an [`Index`] is frozen at `dataset_version`: its `entries` are the indexed
//! field's values as of that version, for the fragments in `fragment_bitmap`. It never sees a
//! later overlay; [`crate::exclusion`] and [`crate::query`] make queries correct anyway.

use roaring::RoaringBitmap;

use super::schema::FieldId;
use super::value::Value;

/// What kind of index this is; decides how [`crate::query`] searches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    /// A scalar (BTree) index: answers scalar predicates.
    BTree,
    /// A vector index over a `fixed_size_list<float32, N>`: answers L2 top-k.
    Vector,
}

/// One row's indexed value as of the index's `dataset_version`.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexEntry {
    /// Fragment id.
    pub fragment: u64,
    /// Physical row offset.
    pub offset: u32,
    /// The value the index recorded.
    pub value: Value,
}

/// An index as recorded in the manifest, plus its contents.
#[derive(Debug, Clone, PartialEq)]
pub struct Index {
    /// Index name.
    pub name: String,
    /// Indexed field ids (the first is the key; the rest are covering fields).
    pub fields: Vec<FieldId>,
    /// The dataset version the index was built from.
    pub dataset_version: u64,
    /// Fragments the index covers; `None` means unknown, treated as no fragment (OVL-IDX-6):
    /// reading it as "every fragment" would hide the rows of fragments appended after the build,
    /// for which the index holds no entries and no overlay excludes anything.
    pub fragment_bitmap: Option<RoaringBitmap>,
    /// Scalar or vector.
    pub kind: IndexKind,
    /// What the index holds (as of `dataset_version`).
    pub entries: Vec<IndexEntry>,
}

impl Index {
    /// Whether the index's `fragment_bitmap` is present and empty: it covers no fragment, so it
    /// answers nothing and may have no files ([IDX-READ-11], [IDX-FILE-7]).
    pub fn covers_no_fragment(&self) -> bool {
        self.fragment_bitmap
            .as_ref()
            .is_some_and(RoaringBitmap::is_empty)
    }

    /// Whether the index covers fragment `id`.
    pub fn covers(&self, id: u64) -> bool {
        match (&self.fragment_bitmap, u32::try_from(id)) {
            (None, _) => false,
            (Some(b), Ok(id)) => b.contains(id),
            (Some(_), Err(_)) => false,
        }
    }
}
