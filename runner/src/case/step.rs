//! The scenario vocabulary: the steps a case (and later a property-test model) performs on a
//! dataset, as plain serde data.
//!
//! Invariant: a step names fields by (dotted) name and rows by explicit fragment id and
//! physical offset; it holds no derived state. Every step except `corrupt` and
//! `expect_refusal` is one commit (or, for `commit_retry`, two) and so adds one dataset version; `corrupt` steps come last and
//! damage the written dataset instead. Executing the same steps always yields the same
//! versions (`lance_conformance_generate::scenario::execute`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::cell::Cell;
use super::corruption::Corruption;
use super::query::PredicateSpec;

/// One schema field as a case declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldSpec {
    /// Column name (unique among siblings; no dots).
    pub name: String,
    /// `bool`, `int32`, `int64`, `uint64`, `float32`, `float64`, `utf8`, `struct` or
    /// `fixed_size_list<float32,N>`.
    #[serde(rename = "type")]
    pub data_type: String,
    /// Explicit field id; by default ids count up in pre-order from 0 (or from one above the
    /// highest id already used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i32>,
    /// Whether NULL is allowed (default true).
    #[serde(default = "yes")]
    pub nullable: bool,
    /// Children of a `struct`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<FieldSpec>,
}

fn yes() -> bool {
    true
}

/// One row: top-level field name → value. A missing field is NULL.
pub type Row = BTreeMap<String, Cell>;

/// Per-field cells of an overlay: field name → (offset, written as a TOML key) → value.
pub type Cells = BTreeMap<String, BTreeMap<String, Cell>>;

/// How an overlay stores its coverage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// One `shared_offset_bitmap` for every field. Cells a field does not list are widened
    /// with their current value (post-image), as a writer widening an update must do.
    Dense,
    /// `field_coverage`: one bitmap per field, exactly the listed cells.
    Sparse,
    /// Dense when every field lists the same offsets, sparse otherwise.
    Auto,
}

/// One overlay a commit adds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverlaySpec {
    /// Target fragment (defaults to the step's `fragment`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragment: Option<u64>,
    /// Dense or sparse.
    pub shape: Shape,
    /// The cells, per field name and offset.
    pub cells: Cells,
    /// Order of the value columns (`data_file.fields`); defaults to field-id order. A field
    /// listed here without cells gets an empty coverage bitmap and an empty column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<String>>,
    /// Fields whose position is tombstoned (id `-2`) in the written overlay.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tombstone: Vec<String>,
    /// Fields whose position is written with a reserved negative id instead (e.g. `-5`), as a
    /// non-conforming writer might; readers must ignore such positions.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub relabel: BTreeMap<String, i32>,
    /// Sparse overlays: the offsets the bitmap of a struct position (listed in `fields`) holds.
    /// A struct position is a container whose coverage readers ignore (OVL-SHAPE-5), so these
    /// offsets change no cell and exclude nothing.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub struct_coverage: BTreeMap<String, Vec<u32>>,
    /// Whether the overlay lists the struct ancestors of every struct child it covers, each
    /// before its first descendant (default `true`: the form Lance's own writer produces). With
    /// `false` the overlay lists only the leaves, the other form the spec allows.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub list_ancestors: bool,
}

fn is_true(b: &bool) -> bool {
    *b
}

/// Index kinds a case can build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexKindSpec {
    /// A scalar BTree index.
    Btree,
    /// A vector index (exact L2) over a `fixed_size_list<float32,N>`.
    Vector,
}

/// An index to build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexSpec {
    /// Index name.
    pub name: String,
    /// Indexed fields by name; the first is the key.
    pub fields: Vec<String>,
    /// BTree or vector.
    pub kind: IndexKindSpec,
}

/// What a fold does to an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FoldPolicySpec {
    /// Rebuild the index at the fold's version.
    Rebuild,
    /// Remove the folded fragment from the index's coverage.
    Drop,
}

/// A flag word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagWordSpec {
    /// `reader_feature_flags`.
    Reader,
    /// `writer_feature_flags`.
    Writer,
}

/// A lineage sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SequenceSpec {
    /// Row ids (field -3).
    RowIds,
    /// Created-at versions (field -4).
    CreatedAt,
    /// Last-updated-at versions (field -5).
    LastUpdatedAt,
}

/// One step of a scenario. Each is a commit (one new version) unless stated otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Version 1: the schema, one fragment holding `rows` (none when empty), the table
    /// config, and indices built over that data in the same commit.
    Create {
        /// Top-level fields in order (structs carry their children).
        schema: Vec<FieldSpec>,
        /// Rows of fragment 0.
        #[serde(default)]
        rows: Vec<Row>,
        /// Instead of `rows`: this many rows, row `i` holding `i` in every integer top-level
        /// field and NULL elsewhere (for fragments too large to list).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        generate_rows: Option<u64>,
        /// Stable row ids on (default) or off.
        #[serde(default = "yes")]
        stable_row_ids: bool,
        /// Table config entries.
        #[serde(default)]
        config: BTreeMap<String, String>,
        /// Indices built at version 1 (`dataset_version = 1`).
        #[serde(default)]
        indices: Vec<IndexSpec>,
    },
    /// Append one new fragment holding `rows`.
    Append {
        /// The rows.
        #[serde(default)]
        rows: Vec<Row>,
        /// Instead of `rows`: generated rows (see [`Step::Create`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        generate_rows: Option<u64>,
    },
    /// Add overlays in one commit: either one overlay given inline (`fragment`, `shape`,
    /// `cells`, `fields`) or several in `overlays`.
    Overlay {
        /// Target fragment of the inline overlay, and default for `overlays` entries.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fragment: Option<u64>,
        /// Shape of the inline overlay.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shape: Option<Shape>,
        /// Cells of the inline overlay.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cells: Option<Cells>,
        /// Column order of the inline overlay.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fields: Option<Vec<String>>,
        /// Tombstoned fields of the inline overlay.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tombstone: Vec<String>,
        /// Reserved negative ids for fields of the inline overlay (see [`OverlaySpec::relabel`]).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        relabel: BTreeMap<String, i32>,
        /// Struct-position bitmaps of the inline overlay (see [`OverlaySpec::struct_coverage`]).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        struct_coverage: BTreeMap<String, Vec<u32>>,
        /// Whether the inline overlay lists struct ancestors (see [`OverlaySpec::list_ancestors`]).
        #[serde(default = "yes", skip_serializing_if = "is_true")]
        list_ancestors: bool,
        /// Several overlays in this one commit, appended in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        overlays: Vec<OverlaySpec>,
    },
    /// Delete rows: `offsets` of `fragment`, or every live row matching `where`.
    Delete {
        /// The fragment whose `offsets` are deleted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fragment: Option<u64>,
        /// Physical offsets.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        offsets: Vec<u32>,
        /// A predicate over current (resolved) values.
        #[serde(default, rename = "where", skip_serializing_if = "Option::is_none")]
        predicate: Option<PredicateSpec>,
    },
    /// Build an index over the dataset as of `built_from` (default: the current version),
    /// committed as a new version with `dataset_version = built_from`. Names are unique.
    BuildIndex {
        /// Index name.
        name: String,
        /// Indexed fields; the first is the key.
        fields: Vec<String>,
        /// BTree or vector.
        kind: IndexKindSpec,
        /// The version the build read (models an index build racing other commits).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        built_from: Option<u64>,
    },
    /// Merge the overlays at `positions` (contiguous in precedence) of `fragment` into one.
    CompactOverlays {
        /// Fragment id.
        fragment: u64,
        /// Positions in the fragment's overlay list.
        positions: Vec<usize>,
        /// The merged overlay's `committed_version` as the caller states it (default: the
        /// newest input's, [OVL-MERGE-3]); any other is refused (`merged_version_mismatch`,
        /// [OVL-MERGE-6]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        committed_version: Option<u64>,
    },
    /// Fold every overlay of `fragment` into a new base file; `indices` says, per index name,
    /// `rebuild` or `drop` (the fragment from its coverage).
    Fold {
        /// Fragment id.
        fragment: u64,
        /// Per-index policy.
        #[serde(default)]
        indices: BTreeMap<String, FoldPolicySpec>,
    },
    /// Rewrite the live rows of adjacent `fragments` into one new fragment.
    RewriteRows {
        /// Fragment ids, adjacent in the manifest.
        fragments: Vec<u64>,
        /// Cut the rows into new fragments of at most this many rows (default: one fragment).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rows_per_fragment: Option<u64>,
    },
    /// `write` (an `overlay` or `append`) loses a race to `conflict`, which commits first;
    /// `write` is retried and re-stamped at the next version. Two versions.
    CommitRetry {
        /// The commit that is retried.
        write: Box<Step>,
        /// The commit that wins the race.
        conflict: Box<Step>,
    },
    /// Change table config entries.
    SetConfig {
        /// Entries to set.
        #[serde(default)]
        set: BTreeMap<String, String>,
        /// Keys to remove.
        #[serde(default)]
        unset: Vec<String>,
    },
    /// Add top-level fields to the schema. Without `fill` existing fragments hold no data for
    /// them (every row reads NULL, nothing is written); with it the commit writes, for every
    /// fragment, a data file holding the new fields for every physical row (a backfill).
    AddFields {
        /// The new fields.
        schema: Vec<FieldSpec>,
        /// The value every existing row holds in a new field, by field name (top-level,
        /// non-struct fields only); a new field not named here is NULL in the backfill.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        fill: BTreeMap<String, Cell>,
    },
    /// Drop top-level fields from the schema (data files keep their columns).
    DropFields {
        /// Field names.
        fields: Vec<String>,
    },
    /// Damage the newest written version (no new version). Only at the end of a scenario.
    Corrupt(Corruption),
    /// Store one fragment's overlay list in the given order (a permutation of its positions),
    /// as a committer breaking OVL-PREC-5 would. One version; nothing else changes.
    ReorderOverlays {
        /// Fragment id.
        fragment: u64,
        /// `order[i]` is the old position of the overlay stored at position `i`.
        order: Vec<usize>,
    },
    /// One version equal to the newest, with `bit` also set in its writer word: the commit of
    /// a newer writer that implements a feature this kit does not (a bit at or above 1 << 18,
    /// or one the reference writer refuses). No writer is asked to make it; a case that holds it
    /// hands the writer the stored version (`writer_from`). Readers ignore the writer word
    /// ([FLG-READ-3]).
    SetWriterFlag {
        /// The bit's value (a power of two).
        bit: u64,
    },
    /// `attempt` must be refused by the reference with `code`. No version: the dataset stays
    /// as it was.
    ExpectRefusal {
        /// The operation that must be refused.
        attempt: Box<Step>,
        /// The reference's error code (`non_contiguous_merge`, `stale_index`, ...).
        code: String,
        /// A writer may commit `attempt` instead of refusing it, when the commit it makes is
        /// one `validate` finds clean (a fold that completes a stale plan by itself,
        /// [OVL-FOLD-6]); its run of the case ends there, since the later steps assume the
        /// refusal. The reference always refuses.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        may_commit: bool,
        /// Only with a `compact_overlays` attempt: the generator also builds the malformed
        /// merge's result as a caller would state it (the merged overlay file and the whole
        /// overlay list) and stores it under `refused/`, and a writer declaring
        /// `write:prepared-commit` is handed it as a `merge` to commit, which its committer must
        /// refuse ([OVL-MERGE-6]); the next step is its well-formed twin, handed over the same
        /// way (spec/conformance.md §7.4).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        prepared: bool,
    },
    /// A row-moving update: the rows at `offsets` of `fragment` are deleted there and written,
    /// with `set` applied, to one new fragment that carries their row ids and created-at.
    UpdateRows {
        /// The fragment holding the rows.
        fragment: u64,
        /// Their physical offsets, in the order they are written.
        offsets: Vec<u32>,
        /// New values of top-level fields, the same for every moved row.
        #[serde(default)]
        set: BTreeMap<String, Cell>,
    },
    /// An update by predicate, as `UPDATE ... SET ... WHERE` makes it: every live row matching
    /// `where` (in fragment id, then offset order) is moved, with `set` applied,
    /// to one new fragment, exactly as [`Step::UpdateRows`] moves the rows it names.
    Update {
        /// A predicate over current (resolved) values.
        #[serde(rename = "where")]
        predicate: PredicateSpec,
        /// New values of top-level fields, the same for every matched row.
        set: BTreeMap<String, Cell>,
    },
    /// An update that rewrites columns in place: the fragment keeps its id, rows and offsets;
    /// a new data file holds the `set` fields for every physical row (the new value at
    /// `offsets`, the current value elsewhere), and their old positions are tombstoned.
    RewriteColumns {
        /// The fragment.
        fragment: u64,
        /// The physical offsets whose values change.
        offsets: Vec<u32>,
        /// New values of top-level, non-struct fields, the same for every listed row.
        set: BTreeMap<String, Cell>,
    },
    /// An upsert keyed on the top-level field `on`: each row of `rows` whose key equals a live
    /// row's replaces it (the live row is deleted where it is and moved, with its row id and
    /// created-at), and each other row is inserted. One new fragment holds the replacing rows,
    /// in `rows` order, followed by the inserted rows, in `rows` order.
    MergeInsert {
        /// The key field (top-level; its values are distinct among `rows` and among the live
        /// rows they match, and not NULL).
        on: String,
        /// The source rows (a missing field is NULL, as in `append`).
        rows: Vec<Row>,
    },
    /// Restores version `version`: the new version holds that version's schema, fragments,
    /// indices and config, while `next_row_id` (and the fragment ids used) keep counting from
    /// the newest version, so no id is handed out twice.
    Restore {
        /// The version brought back (older than the newest).
        version: u64,
    },
    /// A commit that advances `next_row_id` by `count` and changes nothing else. It stands for
    /// rows appended and deleted since (their fragments left the manifest).
    ReserveRowIds {
        /// How many row ids are used up.
        count: u64,
    },
    /// A commit by a writer that records none of `sequences` for `fragment` (an older writer):
    /// they become absent, and read as version 1 (LIN-READ-1). Row ids cannot be cleared while
    /// the dataset has stable row ids.
    ClearLineage {
        /// Fragment id.
        fragment: u64,
        /// The sequences left out.
        sequences: Vec<SequenceSpec>,
    },
    /// A commit that leaves index `index`'s `fragment_bitmap` out of the manifest, as an index
    /// written before coverage was recorded: it then covers no fragment (OVL-IDX-6).
    ClearIndexCoverage {
        /// Index name.
        index: String,
    },
    /// A commit that adds to `fragment` a data file `f<fragment>-s<step>-system.lance` holding
    /// one `uint64` column (value `i` at offset `i`) under the reserved negative field id `id`
    /// (not -2 to -5), as a writer reserving a system column might. Readers skip it (LIN-COL-4).
    AddSystemColumn {
        /// Fragment id.
        fragment: u64,
        /// The negative field id.
        id: i32,
    },
    /// Stores the version the previous step committed in an equivalent form its writer did not
    /// choose (no new version): it must read exactly as committed.
    Reencode(Reencoding),
}

/// One `U64Segment` of [`Reencoding::RowIdSegments`], written out. Arrays (the holes, and the
/// values of `sorted_array`) are stored in the narrowest width that holds their offsets from
/// their smallest value, as the reference writer stores them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SegmentForm {
    /// `start..end` (empty when they are equal).
    Range {
        /// First value.
        start: u64,
        /// One past the last value.
        end: u64,
    },
    /// `start..end` without `holes`.
    RangeWithHoles {
        /// First value of the range.
        start: u64,
        /// One past its last value.
        end: u64,
        /// The values left out, increasing.
        holes: Vec<u64>,
    },
    /// These values, increasing.
    SortedArray {
        /// The values.
        values: Vec<u64>,
    },
}

/// An equivalent form of a written version (see [`Step::Reencode`]): different bytes, the same
/// table. The store applies it after writing the version, under new file names, so other
/// versions keep their files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "form", rename_all = "snake_case", deny_unknown_fields)]
pub enum Reencoding {
    /// Rewrites `files[file]` of `fragment` (a base or lineage file) with its columns stored in
    /// the order `order` (`order[c]` is the `fields` position whose column is stored as column
    /// `c`); `fields` keep their order and `column_indices` say where each column went.
    PermuteColumns {
        /// Fragment id.
        fragment: u64,
        /// Position in the fragment's files.
        file: usize,
        /// A permutation of the file's positions.
        order: Vec<usize>,
    },
    /// Rewrites the value file of the fragment's overlay at position `overlay` of its list with
    /// its columns stored in the order `order`, as [`Reencoding::PermuteColumns`] does for a
    /// base file: the overlay's `fields` keep their order and its `column_indices` say where
    /// each value column went ([DS-FILE-4], [OVL-LAYOUT-1]).
    PermuteOverlayColumns {
        /// Fragment id.
        fragment: u64,
        /// Position in the fragment's overlay list.
        overlay: usize,
        /// A permutation of the value file's positions.
        order: Vec<usize>,
    },
    /// Stores the fragment's inline row ids as consecutive segments of these lengths (which add
    /// up to `physical_rows`), each encoded as the writer encodes a whole sequence.
    SplitRowIds {
        /// Fragment id.
        fragment: u64,
        /// Segment lengths.
        lengths: Vec<u64>,
    },
    /// Stores the fragment's inline row ids as exactly these segments, in order (their values,
    /// concatenated, must be the fragment's row ids): forms a writer may choose that the
    /// reference writer never does, such as an empty range or a hole at a range's start.
    RowIdSegments {
        /// Fragment id.
        fragment: u64,
        /// The segments.
        segments: Vec<SegmentForm>,
    },
    /// Stores an inline version sequence with spans holding `values` (one per physical row,
    /// cut into the runs the writer chooses) instead of row offsets: each run's span is the
    /// writer's encoding of its slice of `values`. Only a span's length carries meaning.
    VersionSpans {
        /// Fragment id.
        fragment: u64,
        /// `created_at` or `last_updated_at`.
        sequence: SequenceSpec,
        /// The span values, one per physical row.
        values: Vec<u64>,
    },
    /// Sets bit 4, the deprecated v2-format marker that no current writer sets, in both flag
    /// words, as an older writer did. The bit asks nothing of a reader (FLG-READ-2).
    DeprecatedV2Flag,
    /// Stores an `IndexSection` that lists no index (a zero length prefix and no bytes) in a
    /// version without indices, as a writer that dropped the last index may leave it: the
    /// section then ends exactly where the Manifest's length prefix begins.
    EmptyIndexSection,
    /// Stores a copy of the version's manifest as a detached version: the name
    /// `_versions/d{2^63 + N}.manifest`, with the same number as its inner `version`. A
    /// detached version belongs to no version history (DS-NAME-3), so the table reads as
    /// before.
    DetachedCopy,
    /// Writes an inline transaction section (an empty Transaction message) between the
    /// IndexSection and the Manifest, as Lance writes a commit's transaction: the IndexSection
    /// then ends before the Manifest's position instead of at it. Readers ignore the section.
    TransactionSection,
    /// Renames every manifest in `_versions/` to its V1 name `{N}.manifest`, the scheme of
    /// datasets written before Lance adopted V2 names. Must be the last step: a later commit
    /// would add a V2 name beside them.
    V1ManifestNames,
}

impl Step {
    /// The step's `op` name as written in `case.toml`.
    pub fn op(&self) -> &'static str {
        match self {
            Step::Create { .. } => "create",
            Step::Append { .. } => "append",
            Step::Overlay { .. } => "overlay",
            Step::Delete { .. } => "delete",
            Step::BuildIndex { .. } => "build_index",
            Step::CompactOverlays { .. } => "compact_overlays",
            Step::Fold { .. } => "fold",
            Step::RewriteRows { .. } => "rewrite_rows",
            Step::CommitRetry { .. } => "commit_retry",
            Step::SetConfig { .. } => "set_config",
            Step::AddFields { .. } => "add_fields",
            Step::DropFields { .. } => "drop_fields",
            Step::Corrupt(_) => "corrupt",
            Step::ReorderOverlays { .. } => "reorder_overlays",
            Step::ExpectRefusal { .. } => "expect_refusal",
            Step::SetWriterFlag { .. } => "set_writer_flag",
            Step::UpdateRows { .. } => "update_rows",
            Step::Update { .. } => "update",
            Step::RewriteColumns { .. } => "rewrite_columns",
            Step::MergeInsert { .. } => "merge_insert",
            Step::Restore { .. } => "restore",
            Step::ReserveRowIds { .. } => "reserve_row_ids",
            Step::ClearLineage { .. } => "clear_lineage",
            Step::ClearIndexCoverage { .. } => "clear_index_coverage",
            Step::AddSystemColumn { .. } => "add_system_column",
            Step::Reencode(_) => "reencode",
        }
    }
}
