//! Declared damage to a written version: the one list of corruption kinds a negative case
//! can name.
//!
//! Invariant: a corruption kind is one variant of the enum of the stage that applies it, and
//! nowhere else: [`ContentCorruption`] (the manifest's decoded content, applied by
//! `scenario::corrupt` to the snapshot), [`ManifestBytesCorruption`] (the newest manifest
//! file's bytes or protobuf, applied by `store::bytes::edit_manifest`) or
//! [`FileBytesCorruption`] (files and names beside the manifest, applied by
//! `store::bytes::damage_files`). Each stage matches its own enum exhaustively, so a kind added
//! to a stage without its application does not compile. Its `what` name is the serde tag it is
//! written with in `case.toml` ([`Corruption::name`]); [`Corruption`]'s `Deserialize` learns
//! each stage's names from that stage's own serde derive, never from a second hand-kept list.

use std::sync::OnceLock;

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};

use super::step::{FlagWordSpec, SequenceSpec};

/// A declared way of damaging the written dataset's newest version: one kind of one stage.
///
/// Written in `case.toml` as a table whose `what` names the kind; the stage is not written
/// (it follows from the name). `Debug` shows the kind as its stage shows it.
#[derive(Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Corruption {
    /// A corruption of the manifest's decoded content.
    Content(ContentCorruption),
    /// A corruption of the newest manifest file's bytes or protobuf.
    ManifestBytes(ManifestBytesCorruption),
    /// A corruption of files or names beside the manifest.
    FileBytes(FileBytesCorruption),
}

/// Damage stated on the manifest's decoded content: applied to the snapshot, which is then
/// re-encoded over the written manifest (`scenario::corrupt::apply_to_snapshot`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case", deny_unknown_fields)]
pub enum ContentCorruption {
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
    /// Copy `field`'s base column into another base file of the fragment, so two base files
    /// hold the field live; a fragment with one base file gets a second one, holding only the
    /// copy (`f<fragment>-duplicate-<field id>.lance`).
    DuplicateBaseField {
        /// Fragment id.
        fragment: u64,
        /// Field name.
        field: String,
    },
    /// Add one value (a copy of the last, or NULL) to one overlay value column: more values
    /// than covered offsets.
    ExtraOverlayValue {
        /// Fragment id.
        fragment: u64,
        /// Overlay position.
        overlay: usize,
        /// Field name.
        field: String,
    },
    /// Set index `index`'s `fragment_bitmap` to `fragments` (for example naming a fragment
    /// appended after the build, which its files hold nothing for).
    SetIndexCoverage {
        /// Index name.
        index: String,
        /// The fragment ids the bitmap lists.
        fragments: Vec<u32>,
    },
}

/// Damage stated on the newest manifest file: its framing, or protobuf fields the decoded
/// model does not keep (written back in place), together with any new file the edited manifest
/// points at (`store::bytes::edit_manifest`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case", deny_unknown_fields)]
pub enum ManifestBytesCorruption {
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
    /// Replace the newest manifest file by a Manifest message of zero bytes: a length prefix 0
    /// directly before a footer whose position is 0. The framing is sound; the message decodes
    /// as a Manifest with every field unset.
    EmptyManifestMessage,
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
    /// Give `fragments[..].files[file]` a `base_id` (the manifest declares no base path unless a
    /// `declare_base_path` step adds one).
    SetBaseId {
        /// Fragment id.
        fragment: u64,
        /// Position in the fragment's files.
        file: usize,
        /// The id.
        base_id: u32,
    },
    /// Declare a base path `id` in `Manifest.base_paths`, pointing at the absolute `path` (a
    /// directory that does not exist), as a multi-base dataset does.
    DeclareBasePath {
        /// The id `base_id` fields refer to.
        id: u32,
        /// The absolute path.
        path: String,
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
    /// Overwrite `fragments[..].id` in the manifest (e.g. with 2^32) and clear
    /// `max_fragment_id`, which would otherwise be below the new id.
    SetFragmentId {
        /// Fragment id.
        fragment: u64,
        /// The id to store.
        id: u64,
    },
    /// Overwrite `Manifest.max_fragment_id` (e.g. with a value below a fragment's id).
    SetMaxFragmentId {
        /// The stored value.
        max_fragment_id: u32,
    },
    /// Overwrite `fragments[..].files[file].column_indices` (e.g. with fewer entries than the
    /// file's `fields`).
    SetColumnIndices {
        /// Fragment id.
        fragment: u64,
        /// Position in the fragment's files.
        file: usize,
        /// The stored list.
        column_indices: Vec<i32>,
    },
    /// Add `add` to `fragments[..].files[file].file_size_bytes`: the manifest states a size
    /// the file does not have (the file itself is untouched, and earlier versions keep stating
    /// its true size).
    SetFileSizeBytes {
        /// Fragment id.
        fragment: u64,
        /// Position in the fragment's files.
        file: usize,
        /// Bytes added to the stated size.
        add: u64,
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
    /// Rewrite the file holding `field` (the base file, or with `overlay` that overlay's value
    /// file) as `<name>-damaged.lance` with the field's column stored as another type: int32
    /// as int64, int64 as int32, utf8 as int64, anything else as utf8.
    WrongColumnType {
        /// Fragment id.
        fragment: u64,
        /// Field name.
        field: String,
        /// Overlay position; absent for the base file.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        overlay: Option<usize>,
    },
    /// Rewrite the v2.2 file holding `field` (the base file, or with `overlay` that overlay's
    /// value file) as `<name>-damaged.lance`, every column re-encoded by the kit's v2.2 writer
    /// and the field's page damaged as `damage` says.
    DamagePage {
        /// Fragment id.
        fragment: u64,
        /// Field name (a leaf: in v2.1+ only leaves have pages).
        field: String,
        /// Overlay position; absent for the base file.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        overlay: Option<usize>,
        /// What is wrong with the page.
        damage: PageDamage,
    },
    /// List struct field `field` in a v2.1+ overlay's `data_file.fields`, just before its first
    /// child there, as a v2.0 overlay lists it: `column_indices` gets the first child's column
    /// for it (a struct has no column of its own in v2.1+), and a sparse overlay's
    /// `offset_bitmaps` a copy of the first child's bitmap.
    ListStructInOverlay {
        /// Fragment id.
        fragment: u64,
        /// Overlay position.
        overlay: usize,
        /// The struct field's name.
        field: String,
    },
    /// Point an overlay's `data_file.path` at a file that does not exist
    /// (`<name>-missing.lance`).
    MissingOverlayFile {
        /// Fragment id.
        fragment: u64,
        /// Overlay position.
        overlay: usize,
    },
    /// Move an inline lineage sequence to the external arm of its oneof (field 6, 8 or 10): an
    /// `ExternalFile` naming `data/f<fragment>-<sequence>.external`, which holds the sequence's
    /// encoded bytes.
    SetExternalLineage {
        /// Fragment id.
        fragment: u64,
        /// Which (inline) sequence.
        sequence: SequenceSpec,
    },
    /// Overwrite index `index`'s `covering_fields` in the IndexSection (field ids).
    SetCoveringFields {
        /// Index name.
        index: String,
        /// The field ids stored.
        fields: Vec<i32>,
    },
}

/// Damage stated on files and names beside the manifest: an overlay file truncated in place,
/// further names in `_versions/`, a damaged copy of an index's files (which the newest manifest
/// is then pointed at) (`store::bytes::damage_files`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case", deny_unknown_fields)]
pub enum FileBytesCorruption {
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
    /// Store a copy of the newest manifest under `name` in `_versions/` too (e.g.
    /// `d2.manifest`, a detached name whose number lacks bit 63). Needs the on-disk dataset.
    ExtraManifestName {
        /// The file name inside `_versions/`.
        name: String,
    },
    /// Damage the files of index `index`: the newest manifest is pointed at a damaged copy of
    /// its directory (a new uuid), so earlier versions keep reading the intact files.
    DamageIndexFiles {
        /// Index name.
        index: String,
        /// What is wrong with the copy.
        damage: IndexFileDamage,
    },
}

/// How [`FileBytesCorruption::DamageIndexFiles`] damages an index's files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum IndexFileDamage {
    /// Keep the first half of `file`'s bytes; the manifest's `files` list gives the new size.
    Truncate {
        /// The file name (`page_data.lance`, `auxiliary.idx`, ...).
        file: String,
    },
    /// Leave `file` out of the copy; the manifest still lists it.
    Remove {
        /// The file name.
        file: String,
    },
    /// List `file` in the manifest as `../<file>`, a name that leaves the index's directory;
    /// a decoy is put where that name leads (`_indices/<file>`), so a reader that follows the
    /// name reads the decoy instead of failing on a missing file. The decoy is a copy of the
    /// file, or with `decoy_entry` the file as [`IndexFileDamage::SetEntry`] would rewrite it,
    /// so that a reader answering from it answers otherwise than one that opens the file in
    /// the index's own directory.
    EscapingName {
        /// The file name.
        file: String,
        /// The entry the decoy holds otherwise than the row.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decoy_entry: Option<EntryValue>,
    },
    /// Rewrite the files with the entry of `fragment`/`offset` holding `value` instead of the
    /// row's value at the index's `dataset_version`.
    SetEntry {
        /// Fragment id.
        fragment: u64,
        /// Physical offset.
        offset: u32,
        /// The stored value.
        value: super::cell::Cell,
    },
    /// Rewrite a BTree's lookup so that its `batch_size` metadata states `stated` rows per
    /// page while its pages are of the size the index was written with.
    StateBatchSize {
        /// The stated page size.
        stated: u64,
    },
}

/// One index entry and the value it is made to hold ([`IndexFileDamage::EscapingName`]'s decoy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntryValue {
    /// Fragment id.
    pub fragment: u64,
    /// Physical offset.
    pub offset: u32,
    /// The stored value.
    pub value: super::cell::Cell,
}

/// How [`ManifestBytesCorruption::DamagePage`] damages a v2.2 page (a mini-block page: the column must hold
/// a value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PageDamage {
    /// The layout's `num_items` is one more than the page's rows (`ColumnMetadata` page
    /// `length`); the chunks hold the page's rows.
    ItemCount,
    /// The page is written dictionary-encoded (a fixed-width column: `int32`, `int64`,
    /// `uint64`, `float32`, `float64`), and the dictionary then loses its last item: the stored
    /// items and `num_dictionary_items` end one early, so the rows holding the last distinct
    /// value carry an index one past the dictionary.
    DictionaryIndex,
    /// The field is a leaf below a struct, and its page says that struct (its parent) is NULL
    /// at the page's first row: that row's definition level stops at the struct's layer and
    /// the leaf's value there is not stored, as below any NULL struct. The rewrite writes every
    /// struct present in every row, so the struct's other leaves still say it is present
    /// there, and the file's leaves disagree on the struct's validity.
    StructLayer,
}

/// How [`ManifestBytesCorruption::DamageLineageColumn`] damages a hidden column.
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

/// Which decoding rule [`ManifestBytesCorruption::MalformedLineage`] breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineageProblem {
    /// A `RangeWithBitmap` over `0..n` with every bit set and a padding bit set too.
    BitmapPadding,
    /// A `RangeWithHoles` over `0..n+2` whose two holes are listed in decreasing order.
    UnsortedHoles,
    /// A `RangeWithHoles` over `0..n+1` whose one hole is `n + 1`, its end: `n` values if the
    /// hole is simply counted, `n + 1` if it is dropped for lying outside the range.
    HoleOutsideRange,
    /// A `RangeWithHoles` over `1..n+2` whose one hole is `0`, below its start: `n` values by
    /// the count, but a hole must lie within `[start, end)`.
    HoleBelowStart,
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
    /// An `Array` of `n` `u16` offsets `0, 1, ...` on the base `u64::MAX`: every value past the
    /// first overflows u64.
    OffsetOverflow,
}

impl LineageProblem {
    /// Every rule, in declaration order.
    pub const ALL: [LineageProblem; 10] = [
        LineageProblem::BitmapPadding,
        LineageProblem::UnsortedHoles,
        LineageProblem::HoleOutsideRange,
        LineageProblem::HoleBelowStart,
        LineageProblem::BadArrayWidth,
        LineageProblem::LengthMismatch,
        LineageProblem::ReversedRange,
        LineageProblem::MissingKind,
        LineageProblem::HugeRange,
        LineageProblem::OffsetOverflow,
    ];

    /// Whether a sequence of `rows` values can break this rule, and why not: the padding bit
    /// of `bitmap_padding` needs a bitmap whose last byte is not full, and `offset_overflow`
    /// needs a second value (the first does not overflow) and offsets that fit in `u16`.
    pub fn fits(self, rows: u64) -> Result<(), &'static str> {
        match self {
            LineageProblem::BitmapPadding if rows % 8 == 0 => {
                Err("bitmap_padding needs physical_rows that is not a multiple of 8")
            }
            LineageProblem::OffsetOverflow if !(2..=1 << 16).contains(&rows) => {
                Err("offset_overflow needs between 2 and 65536 rows")
            }
            _ => Ok(()),
        }
    }
}

impl From<ContentCorruption> for Corruption {
    fn from(c: ContentCorruption) -> Corruption {
        Corruption::Content(c)
    }
}

impl From<ManifestBytesCorruption> for Corruption {
    fn from(c: ManifestBytesCorruption) -> Corruption {
        Corruption::ManifestBytes(c)
    }
}

impl From<FileBytesCorruption> for Corruption {
    fn from(c: FileBytesCorruption) -> Corruption {
        Corruption::FileBytes(c)
    }
}

impl std::fmt::Debug for Corruption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Corruption::Content(c) => c.fmt(f),
            Corruption::ManifestBytes(c) => c.fmt(f),
            Corruption::FileBytes(c) => c.fmt(f),
        }
    }
}

impl Corruption {
    /// The `what` name it is written with in `case.toml` (its serde tag).
    pub fn name(&self) -> String {
        match self {
            Corruption::Content(c) => c.name(),
            Corruption::ManifestBytes(c) => c.name(),
            Corruption::FileBytes(c) => c.name(),
        }
    }
}

impl ContentCorruption {
    /// The `what` name it is written with in `case.toml` (its serde tag).
    pub fn name(&self) -> String {
        tag_of(self)
    }
}

impl ManifestBytesCorruption {
    /// The `what` name it is written with in `case.toml` (its serde tag).
    pub fn name(&self) -> String {
        tag_of(self)
    }
}

impl FileBytesCorruption {
    /// The `what` name it is written with in `case.toml` (its serde tag).
    pub fn name(&self) -> String {
        tag_of(self)
    }
}

/// The `what` tag `kind` is written with.
fn tag_of(kind: &impl Serialize) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.get("what").and_then(|w| w.as_str()).map(str::to_string))
        .unwrap_or_else(|| "unnamed".to_string())
}

/// The error of a probe deserialization: the variant names a stage's derive offers when it
/// meets a tag it does not know, or nothing for any other failure.
#[derive(Debug)]
struct NamesProbe(Option<&'static [&'static str]>);

impl std::fmt::Display for NamesProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("names probe")
    }
}

impl std::error::Error for NamesProbe {}

impl de::Error for NamesProbe {
    fn custom<T: std::fmt::Display>(_: T) -> NamesProbe {
        NamesProbe(None)
    }

    fn unknown_variant(_: &str, expected: &'static [&'static str]) -> NamesProbe {
        NamesProbe(Some(expected))
    }
}

/// The `what` names stage `T` accepts, as its serde derive lists them: `T` is given a `what`
/// that no kind has, and refuses it by naming the ones it knows.
fn stage_names<T: DeserializeOwned>() -> &'static [&'static str] {
    let probe =
        de::value::MapDeserializer::<_, NamesProbe>::new(std::iter::once(("what", "\u{0}")));
    match T::deserialize(probe) {
        Err(NamesProbe(Some(names))) => names,
        _ => &[],
    }
}

/// Every `what` name, stage by stage.
fn all_names() -> &'static [&'static str] {
    static ALL: OnceLock<Vec<&'static str>> = OnceLock::new();
    ALL.get_or_init(|| {
        [
            stage_names::<ContentCorruption>(),
            stage_names::<ManifestBytesCorruption>(),
            stage_names::<FileBytesCorruption>(),
        ]
        .concat()
    })
}

impl<'de> Deserialize<'de> for Corruption {
    /// Reads the table, finds the stage whose kinds include its `what`, and lets that stage's
    /// derive read it (so unknown fields and missing ones are refused as the stage refuses
    /// them).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Corruption, D::Error> {
        let table = toml::Value::deserialize(deserializer)?;
        let what = table
            .get("what")
            .ok_or_else(|| de::Error::missing_field("what"))?
            .as_str()
            .ok_or_else(|| de::Error::custom("`what` is not a string"))?;
        let read = |e: toml::de::Error| <D::Error as de::Error>::custom(e.message());
        if stage_names::<ContentCorruption>().contains(&what) {
            ContentCorruption::deserialize(table)
                .map(Corruption::Content)
                .map_err(read)
        } else if stage_names::<ManifestBytesCorruption>().contains(&what) {
            ManifestBytesCorruption::deserialize(table)
                .map(Corruption::ManifestBytes)
                .map_err(read)
        } else if stage_names::<FileBytesCorruption>().contains(&what) {
            FileBytesCorruption::deserialize(table)
                .map(Corruption::FileBytes)
                .map_err(read)
        } else {
            Err(de::Error::unknown_variant(what, all_names()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serde_tags() {
        let c: Corruption = ManifestBytesCorruption::BadManifestLength.into();
        assert_eq!(c.name(), "bad_manifest_length");
        let c: Corruption = ContentCorruption::SetFlag {
            word: FlagWordSpec::Reader,
            bit: 64,
        }
        .into();
        assert_eq!(c.name(), "set_flag");
    }

    /// Each `what` is read into the stage that lists it, the stage's own `Debug` shows it, and
    /// the table it writes is the one it was read from.
    #[test]
    fn each_name_reads_into_its_stage() {
        let c: Corruption =
            toml::from_str("what = \"clear_flag\"\nword = \"reader\"\nbit = 64").unwrap();
        assert!(matches!(
            c,
            Corruption::Content(ContentCorruption::ClearFlag { bit: 64, .. })
        ));
        assert_eq!(format!("{c:?}"), "ClearFlag { word: Reader, bit: 64 }");
        let c: Corruption = toml::from_str("what = \"truncate_manifest\"\nkeep = 20").unwrap();
        assert!(matches!(
            c,
            Corruption::ManifestBytes(ManifestBytesCorruption::TruncateManifest { keep: 20 })
        ));
        let c: Corruption = toml::from_str("what = \"mixed_manifest_names\"").unwrap();
        assert_eq!(c, FileBytesCorruption::MixedManifestNames.into());
        assert_eq!(
            toml::to_string(&c).unwrap().trim(),
            "what = \"mixed_manifest_names\""
        );
    }

    #[test]
    fn every_stage_lists_its_names_and_no_name_is_in_two() {
        let (c, m, f) = (
            stage_names::<ContentCorruption>(),
            stage_names::<ManifestBytesCorruption>(),
            stage_names::<FileBytesCorruption>(),
        );
        assert!(c.contains(&"set_index_coverage"));
        assert!(m.contains(&"bad_manifest_length"));
        assert!(f.contains(&"damage_index_files"));
        let mut all = all_names().to_vec();
        assert_eq!(all.len(), c.len() + m.len() + f.len());
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), c.len() + m.len() + f.len());
    }

    #[test]
    fn unknown_names_and_fields_are_refused() {
        let e = toml::from_str::<Corruption>("what = \"no_such_damage\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown variant `no_such_damage`"), "{e}");
        assert!(
            e.contains("`clear_flag`") && e.contains("`damage_index_files`"),
            "{e}"
        );
        let e = toml::from_str::<Corruption>("what = \"truncate_manifest\"\nkeep = 1\nextra = 2")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `extra`"), "{e}");
        let e = toml::from_str::<Corruption>("what = \"truncate_manifest\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field `keep`"), "{e}");
        let e = toml::from_str::<Corruption>("keep = 1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field `what`"), "{e}");
    }
}
