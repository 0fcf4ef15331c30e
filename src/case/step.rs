//! The scenario vocabulary: the steps a case (and later a property-test model) performs on a
//! dataset, as plain serde data.
//!
//! Invariant: a step names fields by (dotted) name and rows by explicit fragment id and
//! physical offset; it holds no derived state. Every step except `corrupt` and
//! `expect_refusal` is one commit (or, for `commit_retry`, two) and so adds one dataset version; `corrupt` steps come last and
//! damage the written dataset instead. Executing the same steps always yields the same
//! versions ([`crate::scenario::execute`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::cell::Cell;
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

/// A declared way of damaging the written dataset's newest version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case", deny_unknown_fields)]
pub enum Corruption {
    /// Clear one bit of a feature-flag word (e.g. 64 while overlays exist).
    ClearFlag {
        /// The word.
        word: FlagWordSpec,
        /// The bit's value (64, 2048, ...).
        bit: u64,
    },
    /// Set one bit of a feature-flag word (e.g. an unknown bit such as 262144).
    SetFlag {
        /// The word.
        word: FlagWordSpec,
        /// The bit's value.
        bit: u64,
    },
    /// Add `offset` (at or past `physical_rows`) to the coverage of `field` in one overlay.
    CoveragePastEnd {
        /// Fragment id.
        fragment: u64,
        /// Position in the fragment's overlay list.
        overlay: usize,
        /// Field name.
        field: String,
        /// The offset to add.
        offset: u32,
    },
    /// Drop the last bitmap of a sparse overlay's `field_coverage`.
    DropCoverageBitmap {
        /// Fragment id.
        fragment: u64,
        /// Overlay position.
        overlay: usize,
    },
    /// Remove the last value of one overlay value column (value count != coverage).
    DropOverlayValue {
        /// Fragment id.
        fragment: u64,
        /// Overlay position.
        overlay: usize,
        /// Field name.
        field: String,
    },
    /// List an overlay's first field twice (with a copy of its column and coverage).
    DuplicateOverlayField {
        /// Fragment id.
        fragment: u64,
        /// Overlay position.
        overlay: usize,
    },
    /// Overwrite an overlay's `committed_version` (0, or newer than the manifest).
    SetCommittedVersion {
        /// Fragment id.
        fragment: u64,
        /// Overlay position.
        overlay: usize,
        /// The new value.
        committed_version: u64,
    },
    /// Remove the last value of a base column (fewer values than `physical_rows`).
    TruncateBaseColumn {
        /// Fragment id.
        fragment: u64,
        /// Field name.
        field: String,
    },
    /// Remove the hidden column of a spilled sequence, keeping its column arm.
    DropLineageColumn {
        /// Fragment id.
        fragment: u64,
        /// Which sequence.
        sequence: SequenceSpec,
    },
    /// Add a deleted offset at or past `physical_rows`.
    DeletionPastEnd {
        /// Fragment id.
        fragment: u64,
        /// The offset.
        offset: u32,
    },
    /// Replace the serialized coverage bitmap of an overlay with bytes that do not parse.
    /// Needs the on-disk dataset.
    MalformedRoaring {
        /// Fragment id.
        fragment: u64,
        /// Overlay position.
        overlay: usize,
    },
    /// Point an overlay's data file outside the dataset root (`../x.lance`). Needs the
    /// on-disk dataset.
    PathEscapesRoot {
        /// Fragment id.
        fragment: u64,
        /// Overlay position.
        overlay: usize,
    },
    /// Truncate an overlay's value file on disk to half its bytes. Needs the on-disk dataset.
    TruncateOverlayFile {
        /// Fragment id.
        fragment: u64,
        /// Overlay position.
        overlay: usize,
    },
    /// Store the newest manifest under both the V1 and the V2 naming scheme. Needs the
    /// on-disk dataset.
    MixedManifestNames,
    /// Copy `field`'s base column into another base file of the fragment, so two base files
    /// hold the field live (the fragment needs at least two base files, e.g. after a fold).
    DuplicateBaseField {
        /// Fragment id.
        fragment: u64,
        /// Field name.
        field: String,
    },
    /// Remove an overlay's `data_file` from the manifest protobuf. Needs the on-disk dataset.
    DropOverlayDataFile {
        /// Fragment id.
        fragment: u64,
        /// Overlay position.
        overlay: usize,
    },
    /// Remove an overlay's coverage (`shared_offset_bitmap` / `field_coverage`) from the
    /// manifest protobuf. Needs the on-disk dataset.
    DropOverlayCoverage {
        /// Fragment id.
        fragment: u64,
        /// Overlay position.
        overlay: usize,
    },
    /// Replace an overlay's serialized coverage bitmap (the first one of a sparse overlay) with
    /// the given bytes, written as hex. Needs the on-disk dataset.
    CoverageBytes {
        /// Fragment id.
        fragment: u64,
        /// Overlay position.
        overlay: usize,
        /// The replacement bytes, hex (spaces allowed).
        hex: String,
    },
    /// Rewrite the file holding a spilled sequence's hidden column with that column damaged
    /// (a NULL, the wrong type, or one value short). Needs the on-disk dataset.
    DamageLineageColumn {
        /// Fragment id.
        fragment: u64,
        /// Which (spilled) sequence.
        sequence: SequenceSpec,
        /// What is wrong with the column.
        damage: LineageColumnDamage,
    },
    /// List, in the manifest, a second entry of the fragment's files holding the spilled
    /// sequence's reserved id (the holder file again, every other position tombstoned).
    DuplicateLineageColumn {
        /// Fragment id.
        fragment: u64,
        /// Which (spilled) sequence.
        sequence: SequenceSpec,
    },
    /// Replace an inline lineage sequence's bytes by a sequence of `physical_rows` values
    /// whose encoding breaks one decoding rule.
    MalformedLineage {
        /// Fragment id.
        fragment: u64,
        /// Which (inline) sequence.
        sequence: SequenceSpec,
        /// The broken rule.
        problem: LineageProblem,
    },
    /// Overwrite `fragments[..].files[file].path` in the manifest.
    SetDataFilePath {
        /// Fragment id.
        fragment: u64,
        /// Position in the fragment's files.
        file: usize,
        /// The new path.
        path: String,
    },
    /// Give `fragments[..].files[file]` a `base_id` (the manifest declares no base paths).
    SetBaseId {
        /// Fragment id.
        fragment: u64,
        /// Position in the fragment's files.
        file: usize,
        /// The id.
        base_id: u32,
    },
    /// Overwrite a base data file's version pair in the manifest (e.g. 2.1).
    SetDataFileVersion {
        /// Fragment id.
        fragment: u64,
        /// Position in the fragment's files.
        file: usize,
        /// `file_major_version`.
        major: u32,
        /// `file_minor_version`.
        minor: u32,
    },
    /// Overwrite `Manifest.version` (the file name keeps the real version).
    SetManifestVersion {
        /// The inner version to store.
        version: u64,
    },
    /// Keep only the first `keep` bytes of the newest manifest file.
    TruncateManifest {
        /// Bytes kept.
        keep: usize,
    },
    /// Add one to the Manifest message's u32 length prefix.
    BadManifestLength,
    /// Overwrite a fragment's `deletion_file.file_type` (e.g. 2, which names no form).
    SetDeletionFileType {
        /// Fragment id.
        fragment: u64,
        /// The stored value.
        file_type: i32,
    },
    /// Write a new Arrow deletion file for the fragment listing its first deleted offset twice
    /// (`num_deleted_rows` counts the listed offsets, repeat included).
    DuplicateDeletionOffset {
        /// Fragment id.
        fragment: u64,
    },
    /// Overwrite a fragment's `deletion_file.num_deleted_rows`.
    SetNumDeletedRows {
        /// Fragment id.
        fragment: u64,
        /// The stored count.
        count: u64,
    },
    /// Make the IndexSection's u32 length prefix (at `Manifest.index_section`) claim
    /// u32::MAX bytes. The version needs an index.
    BadIndexSectionLength,
    /// Write a new Arrow deletion file for the fragment with the same offsets but the `row_id`
    /// column declared as signed `int32`.
    SignedDeletionOffsets {
        /// Fragment id.
        fragment: u64,
    },
}

/// How [`Corruption::DamageLineageColumn`] damages a hidden column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineageColumnDamage {
    /// The column becomes nullable and its first value NULL.
    Null,
    /// The column is stored as `int64` (same numbers).
    WrongType,
    /// The column loses its last value.
    Short,
}

/// Which decoding rule [`Corruption::MalformedLineage`] breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineageProblem {
    /// A `RangeWithBitmap` over `0..n` with every bit set and a padding bit set too.
    BitmapPadding,
    /// A `RangeWithHoles` over `0..n+2` whose two holes are listed in decreasing order.
    UnsortedHoles,
    /// An `Array` of `u16` offsets whose byte length is odd.
    BadArrayWidth,
    /// One `Range` (or one run) of `n + 1` values.
    LengthMismatch,
    /// A `Range` whose start (`n + 1`) is greater than its end (`1`).
    ReversedRange,
    /// A segment with no encoding set.
    MissingKind,
    /// One `Range` of 2^60 values: the length must be checked against `physical_rows` before
    /// anything is allocated.
    HugeRange,
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
        rows: Vec<Row>,
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
    /// Add top-level fields to the schema (existing fragments hold no data for them).
    AddFields {
        /// The new fields.
        schema: Vec<FieldSpec>,
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
    /// `attempt` must be refused by the reference with error class `refused` and `code`.
    /// No version: the dataset stays as it was.
    ExpectRefusal {
        /// The operation that must be refused.
        attempt: Box<Step>,
        /// The reference's error code (`non_contiguous_merge`, `stale_index`, ...).
        code: String,
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
    /// A commit that advances `next_row_id` by `count` and changes nothing else. It stands for
    /// rows appended and deleted since (their fragments left the manifest).
    ReserveRowIds {
        /// How many row ids are used up.
        count: u64,
    },
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
            Step::UpdateRows { .. } => "update_rows",
            Step::ReserveRowIds { .. } => "reserve_row_ids",
        }
    }
}
