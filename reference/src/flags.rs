//! Reader and writer feature flags: which bits this reference implements, and whether a
//! snapshot's stored flags match its content.
//!
//! Invariant: a snapshot accepted by [`check_for_read`] sets no reader bit this reference does
//! not implement and declares every bit its content requires; [`check_for_write`] adds Lance's
//! word-pairing rule and the writer word; [`check_written_flags`] holds a manifest about to be
//! written to the stricter set of bits a writer may emit. Both directions matter: an
//! unknown bit means the dataset uses a feature whose semantics this code would silently get
//! wrong, and a missing bit means a reader that does not understand a feature (overlays,
//! spilled lineage) would open the dataset and return stale or incomplete values.
//!
//! Bit values and names are Lance 14.0.2's (`lance_table::feature_flags`). A manifest carries
//! two words: `reader_feature_flags` (field 9) lists what a reader must understand,
//! `writer_feature_flags` (field 10) what a writer must understand.
//!
//! Extra bits are allowed where harmless. Lance recomputes both words from the content at every
//! commit, so a bit whose content is gone is at worst stale: a set 1, 64 or 2048 with no
//! deletion file, overlay or column marker only makes a reader that lacks the feature refuse a
//! dataset it could have read. The exception is reader bit 2: it switches the reader to stable
//! row ids and obliges every fragment to carry a row-id sequence, so it must agree with the
//! snapshot.

use crate::model::{LineageSequence, Snapshot};

/// Bit 0: some fragment has a deletion file. Set in both words.
pub const FLAG_DELETION_FILES: u64 = 1 << 0;
/// Bit 1: row ids are stable and every fragment stores its row-id sequence. Both words.
pub const FLAG_STABLE_ROW_IDS: u64 = 1 << 1;
/// Bit 2: the old "v2 data files" marker. Never set by current writers; read only to infer a
/// missing `data_format`.
pub const FLAG_USE_V2_FORMAT_DEPRECATED: u64 = 1 << 2;
/// Bit 3: the table config map is non-empty. Writer word only.
pub const FLAG_TABLE_CONFIG: u64 = 1 << 3;
/// Bit 4: files may live under other base paths (`Manifest.base_paths`).
pub const FLAG_BASE_PATHS: u64 = 1 << 4;
/// Bit 5: writers must not write transaction files. Writer word only.
pub const FLAG_DISABLE_TRANSACTION_FILE: u64 = 1 << 5;
/// Bit 6: some fragment has data overlay files. Both words.
pub const FLAG_UNSTABLE_DATA_OVERLAY_FILES: u64 = 1 << 6;
/// Bit 7: some index declares covering fields (the fields after its key). Both words.
pub const FLAG_COVERED_INDEX_METADATA: u64 = 1 << 7;
/// Bit 8: data files may differ in exact file version. Paired: both words or neither.
pub const FLAG_MIXED_DATA_FILE_VERSIONS: u64 = 1 << 8;
/// Bit 9: fragment reuse together with stable row ids (debug builds of Lance only).
pub const FLAG_FRAG_REUSE_WITH_STABLE_ROW_IDS: u64 = 1 << 9;
/// Bit 10: a fragment reuse index is present. Paired.
pub const FLAG_FRAGMENT_REUSE_INDEX: u64 = 1 << 10;
/// Bit 11: some lineage sequence is stored as a hidden column (`RowLineageColumn`). Both words.
pub const FLAG_SPILLED_ROW_LINEAGE: u64 = 1 << 11;
/// Bit 12: fragments are stored in a fragment tree. Reserved; Lance 14 refuses it.
pub const FLAG_FRAGMENT_TREE: u64 = 1 << 12;
/// Bit 13: covering fields independent of key fields. Reserved; Lance 14 refuses it.
pub const FLAG_INDEPENDENT_COVERING_FIELDS: u64 = 1 << 13;
/// Bit 14: managed blobs. Paired.
pub const FLAG_MANAGED_BLOBS: u64 = 1 << 14;
/// Bit 15: field ids are never reused. Writer word only: in the reader word it is corrupt.
pub const FLAG_NON_REUSABLE_FIELD_IDS: u64 = 1 << 15;
/// Bit 16: zone write seeds. Paired; reserved, Lance 14 refuses it.
pub const FLAG_ZONE_WRITE_SEEDS: u64 = 1 << 16;
/// Bit 17: fragment / index metadata and clustering. Reserved; Lance 14 refuses it.
pub const FLAG_OBJECT_METADATA: u64 = 1 << 17;
/// Bit 18: the first bit Lance 14 assigns no meaning to; it and every higher bit are unknown.
pub const FLAG_UNKNOWN: u64 = 1 << 18;

/// Reader-word bits this reference implements: deletion files, stable row ids, the deprecated
/// v2 marker, data overlay files, covered index metadata, mixed data file versions (every file
/// is decoded by its own version pair, FLG-READ-5) and spilled row lineage.
pub const READER_FLAGS_IMPLEMENTED: u64 = FLAG_DELETION_FILES
    | FLAG_STABLE_ROW_IDS
    | FLAG_USE_V2_FORMAT_DEPRECATED
    | FLAG_UNSTABLE_DATA_OVERLAY_FILES
    | FLAG_COVERED_INDEX_METADATA
    | FLAG_MIXED_DATA_FILE_VERSIONS
    | FLAG_SPILLED_ROW_LINEAGE;

/// Writer-word bits this reference implements: the reader bits plus table config and the
/// "no transaction file" switch.
pub const WRITER_FLAGS_IMPLEMENTED: u64 =
    READER_FLAGS_IMPLEMENTED | FLAG_TABLE_CONFIG | FLAG_DISABLE_TRANSACTION_FILE;

/// Bits that Lance requires to be set in both words or in neither.
pub const PAIRED_FLAGS: u64 = FLAG_MIXED_DATA_FILE_VERSIONS
    | FLAG_FRAGMENT_REUSE_INDEX
    | FLAG_MANAGED_BLOBS
    | FLAG_ZONE_WRITE_SEEDS;

/// Bits that may only appear in the writer word: table config (8), "no transaction file" (32)
/// and non-reusable field ids (32768). No writer may put them in the reader word (FLG-WRITE-6),
/// so a reader word holding one is a corrupt manifest, refused as invalid (FLG-READ-4) before
/// any unknown bit. Lance 14 treats 32768 this way and reads past 8 and 32.
pub const WRITER_ONLY_FLAGS: u64 =
    FLAG_TABLE_CONFIG | FLAG_DISABLE_TRANSACTION_FILE | FLAG_NON_REUSABLE_FIELD_IDS;

/// Reader-word bits this reference's writer may put in a manifest it writes: the implemented
/// reader bits except the deprecated marker 4, which nothing writes.
pub const WRITABLE_READER_FLAGS: u64 = READER_FLAGS_IMPLEMENTED & !FLAG_USE_V2_FORMAT_DEPRECATED;

/// Writer-word bits this reference's writer may put in a manifest it writes.
pub const WRITABLE_WRITER_FLAGS: u64 = WRITER_FLAGS_IMPLEMENTED & !FLAG_USE_V2_FORMAT_DEPRECATED;

/// Which of the two flag words a bit was found in (or is missing from).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FlagWord {
    /// `reader_feature_flags` (manifest field 9).
    Reader,
    /// `writer_feature_flags` (manifest field 10).
    Writer,
}

impl FlagWord {
    /// `reader` or `writer`.
    pub fn as_str(self) -> &'static str {
        match self {
            FlagWord::Reader => "reader",
            FlagWord::Writer => "writer",
        }
    }
}

impl std::fmt::Display for FlagWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The set bits of `bits` as decimal values, lowest first: `4096, 131072`.
fn bit_list(bits: u64) -> String {
    (0..64)
        .map(|b| 1u64 << b)
        .filter(|v| bits & v != 0)
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Errors of this module.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FlagError {
    /// A word sets bits this reference does not implement.
    #[error("{word} feature flag(s) {} not implemented (the {word} word is {flags})", bit_list(*.unknown))]
    UnknownFlags {
        /// The word holding the bits.
        word: FlagWord,
        /// The unimplemented bits, as a mask.
        unknown: u64,
        /// The whole word as stored.
        flags: u64,
    },
    /// A writer-only bit is set in the reader word.
    #[error(
        "reader feature flag {flag} may only appear in the writer word (the reader word is {reader})"
    )]
    WriterOnlyFlagInReaderWord {
        /// The offending bit.
        flag: u64,
        /// The reader word as stored.
        reader: u64,
    },
    /// A paired bit is set in one word but not the other.
    #[error(
        "feature flag {flag} must be set in both words or neither (reader {reader}, writer {writer})"
    )]
    UnpairedFlag {
        /// The offending bit.
        flag: u64,
        /// The reader word as stored.
        reader: u64,
        /// The writer word as stored.
        writer: u64,
    },
    /// `max_allocated_field_id` (manifest field 24) and writer bit 32768 disagree.
    #[error("max_allocated_field_id is {} but writer flag 32768 is {} (the writer word is {writer})",
        if *.present { "present" } else { "absent" }, if *.present { "clear" } else { "set" })]
    FieldIdHighWaterMarkMismatch {
        /// Whether the manifest has `max_allocated_field_id`.
        present: bool,
        /// The writer word as stored.
        writer: u64,
    },
    /// The content requires a bit that the word does not set.
    #[error("{reason} but {word} flag {flag} is clear")]
    MissingFlag {
        /// The word missing the bit.
        word: FlagWord,
        /// The required bit.
        flag: u64,
        /// The content that requires it, e.g. `fragment 3 has 2 overlays`.
        reason: String,
    },
    /// A manifest being written sets a bit its writer must not set in that word.
    #[error("a written {word} word must not set flag(s) {} (the {word} word is {flags})", bit_list(*.bits))]
    ForbiddenWrittenFlags {
        /// The word holding the bits.
        word: FlagWord,
        /// The forbidden bits, as a mask.
        bits: u64,
        /// The whole word.
        flags: u64,
    },
    /// A manifest being written sets a reader bit without the same writer bit.
    #[error(
        "reader flag {flag} is set but writer flag {flag} is clear (reader {reader}, writer {writer})"
    )]
    ReaderFlagNotInWriterWord {
        /// The lowest such bit.
        flag: u64,
        /// The reader word.
        reader: u64,
        /// The writer word.
        writer: u64,
    },
    /// Reader bit 2 is set but a fragment has no row-id sequence.
    #[error("reader flag 2 (stable row ids) is set but fragment {fragment} has no row-id sequence")]
    MissingRowIds {
        /// The fragment without row ids.
        fragment: u64,
    },
    /// Reader bit 2 is set but the snapshot says stable row ids are off.
    #[error(
        "reader flag 2 turns stable row ids on but the snapshot has them off (the reader word is {reader})"
    )]
    StableRowIdsMismatch {
        /// The reader word as stored.
        reader: u64,
    },
}

crate::error_codes! {FlagError {
    FlagError::UnknownFlags { word: FlagWord::Reader, .. } => code("unknown_reader_flag", UnsupportedFeature, "A word sets bits this reference does not implement"),
    FlagError::UnknownFlags { word: FlagWord::Writer, .. } => code("unknown_writer_flag", UnsupportedFeature, "A word sets bits this reference does not implement"),
    FlagError::WriterOnlyFlagInReaderWord { .. } => code("writer_only_flag_in_reader_word", Invalid, "A writer-only bit is set in the reader word"),
    FlagError::UnpairedFlag { .. } => code("unpaired_flag", Invalid, "A paired bit is set in one word but not the other"),
    FlagError::FieldIdHighWaterMarkMismatch { .. } => code("field_id_high_water_mark_mismatch", Invalid, "`max_allocated_field_id` (manifest field 24) and writer bit 32768 disagree"),
    FlagError::MissingFlag { .. } => code("missing_flag", Invalid, "The content requires a bit that the word does not set"),
    FlagError::ForbiddenWrittenFlags { .. } => code("forbidden_written_flag", Invalid, "A manifest being written sets a bit its writer must not set in that word"),
    FlagError::ReaderFlagNotInWriterWord { .. } => code("reader_flag_not_in_writer_word", Invalid, "A manifest being written sets a reader bit without the same writer bit"),
    FlagError::MissingRowIds { .. } => code("missing_row_ids", Invalid, "Reader bit 2 is set but a fragment has no row-id sequence"),
    FlagError::StableRowIdsMismatch { .. } => code("stable_row_ids_mismatch", Invalid, "Reader bit 2 is set but the snapshot says stable row ids are off"),
}}

/// Refuses a reader word this reference cannot honour.
///
/// A writer-only bit (8, 32, 32768) in the reader word is a corrupt manifest
/// ([`ErrorClass::Invalid`](crate::ErrorClass::Invalid))
/// and is reported first, as Lance does; any other bit outside [`READER_FLAGS_IMPLEMENTED`] is
/// [`ErrorClass::UnsupportedFeature`](crate::ErrorClass::UnsupportedFeature), naming every such bit.
pub fn check_reader_flags(reader: u64) -> Result<(), FlagError> {
    check_reader_flags_supporting(reader, READER_FLAGS_IMPLEMENTED)
}

/// [`check_reader_flags`] for a reader that implements exactly the reader bits `implemented`
/// (for example a reader without overlay support: `READER_FLAGS_IMPLEMENTED & !64`).
pub fn check_reader_flags_supporting(reader: u64, implemented: u64) -> Result<(), FlagError> {
    let writer_only = reader & WRITER_ONLY_FLAGS;
    if writer_only != 0 {
        return Err(FlagError::WriterOnlyFlagInReaderWord {
            flag: lowest_bit(writer_only),
            reader,
        });
    }
    let unknown = reader & !implemented;
    if unknown != 0 {
        return Err(FlagError::UnknownFlags {
            word: FlagWord::Reader,
            unknown,
            flags: reader,
        });
    }
    Ok(())
}

/// Refuses a writer word this reference cannot honour: any bit outside
/// [`WRITER_FLAGS_IMPLEMENTED`], all named at once.
pub fn check_writer_flags(writer: u64) -> Result<(), FlagError> {
    check_writer_flags_supporting(writer, WRITER_FLAGS_IMPLEMENTED)
}

/// [`check_writer_flags`] for a writer that implements exactly the writer bits `implemented`.
pub fn check_writer_flags_supporting(writer: u64, implemented: u64) -> Result<(), FlagError> {
    let unknown = writer & !implemented;
    if unknown != 0 {
        return Err(FlagError::UnknownFlags {
            word: FlagWord::Writer,
            unknown,
            flags: writer,
        });
    }
    Ok(())
}

/// Refuses words that disagree on a [`PAIRED_FLAGS`] bit. Lance 14 runs this before looking at
/// which bits it supports, on reads and writes alike, so the mismatch is reported as corruption
/// even for bits it would refuse anyway. The kit runs it on writes only ([`check_for_write`]).
pub fn check_paired_flags(reader: u64, writer: u64) -> Result<(), FlagError> {
    let unpaired = (reader ^ writer) & PAIRED_FLAGS;
    if unpaired != 0 {
        return Err(FlagError::UnpairedFlag {
            flag: lowest_bit(unpaired),
            reader,
            writer,
        });
    }
    Ok(())
}

/// Refuses a manifest whose `max_allocated_field_id` presence disagrees with writer bit
/// 32768: the field is present exactly when the bit is set. This is a Lance 14 rule (checked
/// there on reads too); [`Snapshot`] does not carry field 24, so a manifest decoder calls this
/// directly.
pub fn check_field_id_high_water_mark(writer: u64, present: bool) -> Result<(), FlagError> {
    if present != (writer & FLAG_NON_REUSABLE_FIELD_IDS != 0) {
        return Err(FlagError::FieldIdHighWaterMarkMismatch { present, writer });
    }
    Ok(())
}

/// A data file format version as a manifest names it: a `DataFile`'s
/// (`file_major_version`, `file_minor_version`) or the `data_format.version` string. The legacy
/// pair (0, 3) of v2.0 is held as (2, 0), so two names of one format compare equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileFormatVersion {
    /// Major version (2 for every v2 format).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl FileFormatVersion {
    /// The format a `DataFile` version pair names; (0, 3) names v2.0.
    pub fn from_pair(major: u32, minor: u32) -> FileFormatVersion {
        match (major, minor) {
            (0, 3) => FileFormatVersion { major: 2, minor: 0 },
            (major, minor) => FileFormatVersion { major, minor },
        }
    }

    /// The format a `data_format.version` string names (`"2.0"`, `"2.1"`, `"2.2"`, ...), or
    /// `None` when the string is not `<major>.<minor>`.
    pub fn from_data_format(version: &str) -> Option<FileFormatVersion> {
        let (major, minor) = version.split_once('.')?;
        Some(FileFormatVersion::from_pair(
            major.parse().ok()?,
            minor.parse().ok()?,
        ))
    }
}

impl std::fmt::Display for FileFormatVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Whether the data files of one version are mixed (spec feature-flags.md, "Mixed data file
/// versions"), and if so why: the first file, in the order given, whose version differs from
/// `data_format`; without a `data_format`, the first file whose version differs from the first
/// file's. `files` names each data file (base, lineage or overlay value file) as an error
/// should, with its version.
pub fn mixed_versions<'a>(
    data_format: Option<FileFormatVersion>,
    files: impl IntoIterator<Item = (&'a str, FileFormatVersion)>,
) -> Option<String> {
    let mut files = files.into_iter();
    let (expected, from) = match data_format {
        Some(v) => (v, "data_format".to_string()),
        None => {
            let (name, v) = files.next()?;
            (v, name.to_string())
        }
    };
    files
        .find(|(_, v)| *v != expected)
        .map(|(name, v)| format!("{name} is version {v} but {from} is {expected}"))
}

/// Refuses a manifest whose data files are mixed while a word lacks bit 256 (FLG-CONS-7 for the
/// reader word, FLG-WRITE-8 for both). `mixed` is the reason [`mixed_versions`] gave, if any;
/// `words` are the words checked, each with its stored value.
pub fn check_mixed_versions(
    mixed: Option<&str>,
    words: &[(FlagWord, u64)],
) -> Result<(), FlagError> {
    let Some(reason) = mixed else {
        return Ok(());
    };
    match words
        .iter()
        .find(|(_, stored)| stored & FLAG_MIXED_DATA_FILE_VERSIONS == 0)
    {
        Some(&(word, _)) => Err(FlagError::MissingFlag {
            word,
            flag: FLAG_MIXED_DATA_FILE_VERSIONS,
            reason: reason.to_string(),
        }),
        None => Ok(()),
    }
}

/// Sets bit 256 in both words of a snapshot about to be written when its data files are mixed
/// (FLG-WRITE-8). A bit already set stays set ([`set_commit_flags`] never clears it), which
/// makes it sticky (FLG-WRITE-9).
pub fn set_mixed_versions_flag(snapshot: &mut Snapshot, mixed: bool) {
    if mixed {
        snapshot.reader_flags |= FLAG_MIXED_DATA_FILE_VERSIONS;
        snapshot.writer_flags |= FLAG_MIXED_DATA_FILE_VERSIONS;
    }
}

fn lowest_bit(bits: u64) -> u64 {
    bits & bits.wrapping_neg()
}

/// One bit the content requires, and the first piece of content requiring it.
struct Requirement {
    flag: u64,
    reader: bool,
    reason: String,
}

/// Every bit the snapshot's content requires, in bit order, each with the first fragment (in
/// manifest order) or setting that requires it. Reader bits are also writer bits, except that
/// the table config bit is writer-only.
fn requirements(snapshot: &Snapshot) -> Vec<Requirement> {
    let mut out = Vec::new();
    let frags = &snapshot.fragments;
    if let Some(f) = frags.iter().find(|f| !f.deletions.is_empty()) {
        out.push(Requirement {
            flag: FLAG_DELETION_FILES,
            reader: true,
            reason: format!("fragment {} has {} deleted rows", f.id, f.deletions.len()),
        });
    }
    let row_ids = frags
        .iter()
        .find(|f| f.lineage.row_ids != LineageSequence::Absent);
    if snapshot.stable_row_ids || row_ids.is_some() {
        let reason = match (snapshot.stable_row_ids, row_ids) {
            (false, Some(f)) => format!("fragment {} has a row-id sequence", f.id),
            _ => "the snapshot uses stable row ids".to_string(),
        };
        out.push(Requirement {
            flag: FLAG_STABLE_ROW_IDS,
            reader: true,
            reason,
        });
    }
    if let Some((key, _)) = snapshot.config.iter().next() {
        out.push(Requirement {
            flag: FLAG_TABLE_CONFIG,
            reader: false,
            reason: format!(
                "the table config has {} entries (first key `{key}`)",
                snapshot.config.len()
            ),
        });
    }
    if let Some(f) = frags.iter().find(|f| !f.overlays.is_empty()) {
        out.push(Requirement {
            flag: FLAG_UNSTABLE_DATA_OVERLAY_FILES,
            reader: true,
            reason: format!("fragment {} has {} overlays", f.id, f.overlays.len()),
        });
    }
    if let Some(index) = snapshot.indices.iter().find(|i| i.fields.len() > 1) {
        out.push(Requirement {
            flag: FLAG_COVERED_INDEX_METADATA,
            reader: true,
            reason: format!(
                "index {} has {} covering fields",
                index.name,
                index.fields.len() - 1
            ),
        });
    }
    let spilled = frags.iter().find_map(|f| {
        [
            (&f.lineage.row_ids, "row ids"),
            (&f.lineage.created_at, "created-at versions"),
            (&f.lineage.last_updated_at, "last-updated-at versions"),
        ]
        .into_iter()
        .find(|(seq, _)| **seq == LineageSequence::Column)
        .map(|(_, what)| (f.id, what))
    });
    if let Some((id, what)) = spilled {
        out.push(Requirement {
            flag: FLAG_SPILLED_ROW_LINEAGE,
            reader: true,
            reason: format!("fragment {id} stores its {what} in a hidden column"),
        });
    }
    out
}

/// The `(reader, writer)` bits the snapshot's content demands:
///
/// | content | reader | writer |
/// |---|---|---|
/// | any fragment with deleted rows | 1 | 1 |
/// | stable row ids on, or any fragment with a row-id sequence | 2 | 2 |
/// | non-empty table config | — | 8 |
/// | any fragment with an overlay | 64 | 64 |
/// | any lineage sequence stored as a column | 2048 | 2048 |
///
/// A row-id sequence demands bit 2 even when the snapshot says stable row ids are off: without
/// the bit a reader ignores the sequence, and with it every fragment must have one, so a
/// snapshot where only some fragments carry row ids is invalid either way.
pub fn required_flags(snapshot: &Snapshot) -> (u64, u64) {
    requirements(snapshot).iter().fold((0, 0), |(r, w), req| {
        (if req.reader { r | req.flag } else { r }, w | req.flag)
    })
}

/// The bits that [`required_flags`] derives from content, per word.
const CONTENT_READER_BITS: u64 = FLAG_DELETION_FILES
    | FLAG_STABLE_ROW_IDS
    | FLAG_UNSTABLE_DATA_OVERLAY_FILES
    | FLAG_COVERED_INDEX_METADATA
    | FLAG_SPILLED_ROW_LINEAGE;
const CONTENT_WRITER_BITS: u64 = CONTENT_READER_BITS | FLAG_TABLE_CONFIG;

/// Sets the content-derived bits of a snapshot a commit is about to write exactly as its
/// content demands (a stale bit from an earlier version is cleared, as Lance recomputes flags on
/// every commit); every other bit is kept, bit 256 among them: it is sticky (FLG-WRITE-9) and
/// set by [`set_mixed_versions_flag`], since the snapshot does not know file versions.
pub fn set_commit_flags(snapshot: &mut Snapshot) {
    let (reader, writer) = required_flags(snapshot);
    snapshot.reader_flags = (snapshot.reader_flags & !CONTENT_READER_BITS) | reader;
    snapshot.writer_flags = (snapshot.writer_flags & !CONTENT_WRITER_BITS) | writer;
}

/// Checks the stored words against the content: every required bit (see [`required_flags`])
/// must be set, reader bits before writer bits, lower bits first; then, if reader bit 2 is
/// set, the snapshot must have stable row ids on and every fragment must carry a row-id
/// sequence. Extra bits are otherwise allowed (see the module docs). This is what a writer
/// holds a manifest to; a reader holds only the reader word to it ([`check_for_read`]).
pub fn check_consistency(snapshot: &Snapshot) -> Result<(), FlagError> {
    check_content(snapshot, &[FlagWord::Reader, FlagWord::Writer])
}

/// [`check_consistency`] restricted to the words in `words`.
fn check_content(snapshot: &Snapshot, words: &[FlagWord]) -> Result<(), FlagError> {
    let reqs = requirements(snapshot);
    for &word in words {
        let stored = match word {
            FlagWord::Reader => snapshot.reader_flags,
            FlagWord::Writer => snapshot.writer_flags,
        };
        for req in &reqs {
            let needed = word == FlagWord::Writer || req.reader;
            if needed && stored & req.flag == 0 {
                return Err(FlagError::MissingFlag {
                    word,
                    flag: req.flag,
                    reason: req.reason.clone(),
                });
            }
        }
    }
    if snapshot.reader_flags & FLAG_STABLE_ROW_IDS != 0 {
        if !snapshot.stable_row_ids {
            return Err(FlagError::StableRowIdsMismatch {
                reader: snapshot.reader_flags,
            });
        }
        if let Some(f) = snapshot
            .fragments
            .iter()
            .find(|f| f.lineage.row_ids == LineageSequence::Absent)
        {
            return Err(FlagError::MissingRowIds { fragment: f.id });
        }
    }
    Ok(())
}

/// Everything a reader checks before trusting a snapshot: the reader word, then the reader
/// word against the content. The writer word binds writers only, so nothing in it stops a read
/// (FLG-READ-3), not even a content bit missing from it; this is where the kit departs from
/// Lance 14, which also refuses unpaired bits at read time (see [`check_paired_flags`]).
pub fn check_for_read(snapshot: &Snapshot) -> Result<(), FlagError> {
    check_reader_flags(snapshot.reader_flags)?;
    check_content(snapshot, &[FlagWord::Reader])
}

/// Everything a writer checks before committing on top of a snapshot: word pairing, the
/// writer-only rule on the reader word, the writer word, then content consistency.
pub fn check_for_write(snapshot: &Snapshot) -> Result<(), FlagError> {
    check_paired_flags(snapshot.reader_flags, snapshot.writer_flags)?;
    let writer_only = snapshot.reader_flags & WRITER_ONLY_FLAGS;
    if writer_only != 0 {
        return Err(FlagError::WriterOnlyFlagInReaderWord {
            flag: lowest_bit(writer_only),
            reader: snapshot.reader_flags,
        });
    }
    check_writer_flags(snapshot.writer_flags)?;
    check_consistency(snapshot)
}

/// What a writer checks on a manifest it is about to write (the words it computed and the
/// content): the reader word holds only [`WRITABLE_READER_FLAGS`] (no writer-only, reserved,
/// unknown or deprecated bit), the writer word only [`WRITABLE_WRITER_FLAGS`], every reader bit
/// is also a writer bit, and every bit the content requires is set ([`check_consistency`]).
pub fn check_written_flags(snapshot: &Snapshot) -> Result<(), FlagError> {
    let (reader, writer) = (snapshot.reader_flags, snapshot.writer_flags);
    for (word, flags, allowed) in [
        (FlagWord::Reader, reader, WRITABLE_READER_FLAGS),
        (FlagWord::Writer, writer, WRITABLE_WRITER_FLAGS),
    ] {
        let bits = flags & !allowed;
        if bits != 0 {
            return Err(FlagError::ForbiddenWrittenFlags { word, bits, flags });
        }
    }
    let reader_only = reader & !writer;
    if reader_only != 0 {
        return Err(FlagError::ReaderFlagNotInWriterWord {
            flag: lowest_bit(reader_only),
            reader,
            writer,
        });
    }
    check_consistency(snapshot)
}

#[cfg(test)]
mod tests {
    use crate::ErrorClass;
    use crate::model::cols;
    use std::collections::BTreeMap;

    use roaring::RoaringBitmap;

    use super::*;
    use crate::model::{
        Coverage, DataFile, DataType, Field, Fragment, Lineage, Overlay, Schema, Value,
    };

    /// Bit positions the brief and [FLG-READ-2] name for the reader word, written out
    /// independently of the constants under test.
    const READER_OK: [u32; 7] = [0, 1, 2, 6, 7, 8, 11];
    /// The same for the writer word ([FLG-WRITE-5]): the reader bits plus 3 and 5.
    const WRITER_OK: [u32; 9] = [0, 1, 2, 3, 5, 6, 7, 8, 11];

    fn fragment(id: u64) -> Fragment {
        Fragment::new(
            id,
            "f.lance",
            vec![0],
            cols(vec![vec![Value::Int64(1), Value::Int64(2)]]),
        )
    }

    fn overlay() -> Overlay {
        Overlay {
            file: DataFile {
                path: "o.lance".into(),
                fields: vec![0],
                columns: cols(vec![vec![Value::Int64(9)]]),
            },
            coverage: Coverage::Dense(RoaringBitmap::from_iter([0u32])),
            committed_version: 2,
        }
    }

    fn snapshot(fragments: Vec<Fragment>, reader: u64, writer: u64) -> Snapshot {
        Snapshot {
            version: 5,
            schema: Schema::new(vec![Field::new(0, "v", DataType::Int64)]).unwrap(),
            fragments,
            indices: Vec::new(),
            config: BTreeMap::new(),
            stable_row_ids: false,
            next_row_id: 0,
            reader_flags: reader,
            writer_flags: writer,
        }
    }

    fn with_row_ids(mut f: Fragment) -> Fragment {
        f.lineage.row_ids = LineageSequence::Inline(vec![0, 1]);
        f
    }

    #[test]
    fn reader_word_single_bits_exhaustive() {
        // covers: FLG-READ-1, FLG-READ-2, FLG-BITS-2, FLG-READ-4
        for b in 0..64u32 {
            let flag = 1u64 << b;
            let result = check_reader_flags(flag);
            if READER_OK.contains(&b) {
                assert_eq!(result, Ok(()), "bit {b}");
            } else if [3, 5, 15].contains(&b) {
                let err = result.unwrap_err();
                assert_eq!(err.class(), ErrorClass::Invalid);
                assert_eq!(err.code(), "writer_only_flag_in_reader_word");
            } else {
                let err = result.unwrap_err();
                assert_eq!(err.class(), ErrorClass::UnsupportedFeature, "bit {b}");
                assert_eq!(err.code(), "unknown_reader_flag");
                assert_eq!(
                    err,
                    FlagError::UnknownFlags {
                        word: FlagWord::Reader,
                        unknown: flag,
                        flags: flag
                    }
                );
                assert!(err.to_string().contains(&flag.to_string()), "{err}");
                assert!(err.to_string().contains("reader"), "{err}");
            }
        }
    }

    #[test]
    fn writer_word_single_bits_exhaustive() {
        // covers: FLG-WRITE-5, FLG-BITS-2
        for b in 0..64u32 {
            let flag = 1u64 << b;
            let result = check_writer_flags(flag);
            if WRITER_OK.contains(&b) {
                assert_eq!(result, Ok(()), "bit {b}");
            } else {
                let err = result.unwrap_err();
                assert_eq!(err.class(), ErrorClass::UnsupportedFeature, "bit {b}");
                assert_eq!(err.code(), "unknown_writer_flag");
                assert_eq!(
                    err,
                    FlagError::UnknownFlags {
                        word: FlagWord::Writer,
                        unknown: flag,
                        flags: flag
                    }
                );
                assert!(err.to_string().contains(&flag.to_string()), "{err}");
            }
        }
    }

    #[test]
    fn every_unknown_bit_and_the_word_are_named() {
        // covers: FLG-READ-2
        let word = 1 | 4096 | (1 << 63);
        let err = check_reader_flags(word).unwrap_err();
        assert_eq!(
            err,
            FlagError::UnknownFlags {
                word: FlagWord::Reader,
                unknown: 4096 | (1 << 63),
                flags: word
            }
        );
        let text = err.to_string();
        assert!(text.contains("4096, 9223372036854775808"), "{text}");
        assert!(text.contains(&format!("is {word}")), "{text}");
    }

    #[test]
    fn writer_only_bit_in_reader_word_is_corruption_before_unknown() {
        // covers: FLG-READ-2
        let err = check_reader_flags(32768 | 4096).unwrap_err();
        assert_eq!(
            err,
            FlagError::WriterOnlyFlagInReaderWord {
                flag: 32768,
                reader: 36864
            }
        );
        assert_eq!(err.class(), ErrorClass::Invalid);
        // In the writer word the same bit is merely not implemented.
        assert_eq!(
            check_writer_flags(32768).unwrap_err().code(),
            "unknown_writer_flag"
        );
    }

    #[test]
    fn implemented_words_and_lance_observed_values_pass() {
        // covers: FLG-READ-2, FLG-WRITE-5
        assert_eq!(check_reader_flags(1 | 2 | 4 | 64 | 2048), Ok(()));
        assert_eq!(check_writer_flags(1 | 2 | 4 | 8 | 32 | 64 | 2048), Ok(()));
        // Words Lance 14 wrote: deletes only; stable ids + overlays + deletes; stable ids +
        // spilled lineage + config (reader 2050, writer 2058).
        for (r, w) in [(1, 1), (67, 67), (2050, 2058)] {
            assert_eq!(check_reader_flags(r), Ok(()));
            assert_eq!(check_writer_flags(w), Ok(()));
        }
        // Table config is a writer-only bit: in the reader word it marks a corrupt manifest.
        assert_eq!(
            check_reader_flags(8).unwrap_err().code(),
            "writer_only_flag_in_reader_word"
        );
    }

    #[test]
    fn paired_bits_must_match_across_words() {
        for flag in [256u64, 1024, 16384, 65536] {
            assert_eq!(check_paired_flags(flag, flag), Ok(()));
            for (r, w) in [(flag, 0), (0, flag), (flag | 1, 1)] {
                let err = check_paired_flags(r, w).unwrap_err();
                assert_eq!(
                    err,
                    FlagError::UnpairedFlag {
                        flag,
                        reader: r,
                        writer: w
                    }
                );
                assert_eq!(
                    (err.class(), err.code()),
                    (ErrorClass::Invalid, "unpaired_flag")
                );
            }
        }
        // Bits outside the pairing rule may differ.
        assert_eq!(check_paired_flags(64, 0), Ok(()));
        assert_eq!(check_paired_flags(0, 8), Ok(()));
    }

    #[test]
    fn field_id_high_water_mark_needs_writer_bit_32768() {
        assert_eq!(check_field_id_high_water_mark(0, false), Ok(()));
        assert_eq!(check_field_id_high_water_mark(32768, true), Ok(()));
        for (w, present) in [(0, true), (32768 | 1, false)] {
            let err = check_field_id_high_water_mark(w, present).unwrap_err();
            assert_eq!(err.code(), "field_id_high_water_mark_mismatch");
            assert_eq!(err.class(), ErrorClass::Invalid);
        }
    }

    #[test]
    fn required_flags_per_content() {
        // covers: FLG-WRITE-1, FLG-WRITE-2, FLG-WRITE-3, FLG-WRITE-4
        assert_eq!(required_flags(&snapshot(vec![fragment(0)], 0, 0)), (0, 0));

        let mut deleted = fragment(0);
        deleted.deletions.insert(1);
        assert_eq!(required_flags(&snapshot(vec![deleted], 0, 0)), (1, 1));

        let mut stable = snapshot(vec![with_row_ids(fragment(0))], 0, 0);
        stable.stable_row_ids = true;
        assert_eq!(required_flags(&stable), (2, 2));
        // Stable row ids on an empty dataset still demand the bit.
        let mut empty = snapshot(vec![], 0, 0);
        empty.stable_row_ids = true;
        assert_eq!(required_flags(&empty), (2, 2));

        let mut overlaid = fragment(0);
        overlaid.overlays.push(overlay());
        assert_eq!(required_flags(&snapshot(vec![overlaid], 0, 0)), (64, 64));

        let mut config = snapshot(vec![], 0, 0);
        config
            .config
            .insert("lance.row_lineage.spill".into(), "true".into());
        assert_eq!(required_flags(&config), (0, 8));

        // Each column arm on its own demands 2048; the row-id arm also demands 2.
        let mut created = fragment(0);
        created.lineage.created_at = LineageSequence::Column;
        assert_eq!(required_flags(&snapshot(vec![created], 0, 0)), (2048, 2048));
        let mut updated = fragment(0);
        updated.lineage.last_updated_at = LineageSequence::Column;
        assert_eq!(required_flags(&snapshot(vec![updated], 0, 0)), (2048, 2048));
        let mut ids = fragment(0);
        ids.lineage.row_ids = LineageSequence::Column;
        assert_eq!(required_flags(&snapshot(vec![ids], 0, 0)), (2050, 2050));
        // Inline sequences need no 2048.
        let mut inline = fragment(0);
        inline.lineage.created_at = LineageSequence::Inline(vec![1, 1]);
        assert_eq!(required_flags(&snapshot(vec![inline], 0, 0)), (0, 0));
    }

    #[test]
    fn required_flags_reproduce_lance_observed_words() {
        // covers: FLG-BITS-1, FLG-WRITE-1, FLG-WRITE-3, FLG-WRITE-4
        // Stable row ids + overlays + deletes: Lance wrote 67 / 67.
        let mut f = with_row_ids(fragment(0));
        f.overlays.push(overlay());
        f.deletions.insert(0);
        let mut s = snapshot(vec![f], 0, 0);
        s.stable_row_ids = true;
        assert_eq!(required_flags(&s), (67, 67));
        // Stable row ids + spilled lineage + config: Lance wrote 2050 / 2058.
        let mut f = fragment(0);
        f.lineage = Lineage {
            row_ids: LineageSequence::Column,
            created_at: LineageSequence::Column,
            last_updated_at: LineageSequence::Column,
        };
        let mut s = snapshot(vec![f], 0, 0);
        s.stable_row_ids = true;
        s.config
            .insert("lance.row_lineage.spill".into(), "true".into());
        assert_eq!(required_flags(&s), (2050, 2058));
    }

    #[test]
    fn missing_overlay_flag_names_fragment_and_count() {
        // covers: OVL-FLAG-3, OVL-FLAG-4, FLG-WRITE-1
        let mut f = fragment(3);
        f.overlays = vec![overlay(), overlay()];
        let err = check_consistency(&snapshot(vec![fragment(1), f.clone()], 0, 64)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "fragment 3 has 2 overlays but reader flag 64 is clear"
        );
        assert_eq!(
            (err.class(), err.code()),
            (ErrorClass::Invalid, "missing_flag")
        );
        let err = check_consistency(&snapshot(vec![f.clone()], 64, 0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "fragment 3 has 2 overlays but writer flag 64 is clear"
        );
        assert_eq!(check_consistency(&snapshot(vec![f], 64, 64)), Ok(()));
    }

    #[test]
    fn missing_spilled_lineage_flag_is_refused() {
        // covers: FLG-CONS-1, FLG-CONS-3, FLG-WRITE-2
        let mut f = fragment(7);
        f.lineage.last_updated_at = LineageSequence::Column;
        let err = check_consistency(&snapshot(vec![f.clone()], 0, 2048)).unwrap_err();
        assert_eq!(
            err,
            FlagError::MissingFlag {
                word: FlagWord::Reader,
                flag: 2048,
                reason: "fragment 7 stores its last-updated-at versions in a hidden column".into(),
            }
        );
        assert_eq!(check_for_read(&snapshot(vec![f], 2048, 2048)), Ok(()));
    }

    #[test]
    fn missing_deletion_and_config_flags_are_named() {
        // covers: FLG-WRITE-3
        let mut f = fragment(4);
        f.deletions.insert(0);
        let err = check_consistency(&snapshot(vec![f], 0, 0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "fragment 4 has 1 deleted rows but reader flag 1 is clear"
        );
        let mut s = snapshot(vec![], 0, 0);
        s.config.insert("k".into(), "v".into());
        let err = check_consistency(&s).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the table config has 1 entries (first key `k`) but writer flag 8 is clear"
        );
        s.writer_flags = 8;
        assert_eq!(check_consistency(&s), Ok(()));
    }

    #[test]
    fn lowest_missing_reader_bit_is_reported_first() {
        let mut f = fragment(0);
        f.deletions.insert(0);
        f.overlays.push(overlay());
        let err = check_consistency(&snapshot(vec![f], 0, 0)).unwrap_err();
        assert_eq!(
            err,
            FlagError::MissingFlag {
                word: FlagWord::Reader,
                flag: 1,
                reason: "fragment 0 has 1 deleted rows".into(),
            }
        );
    }

    #[test]
    fn stale_extra_bits_are_allowed() {
        // Bits 1, 64 and 2048 without deletions, overlays or column arms, and 8 without config.
        let s = snapshot(vec![fragment(0)], 1 | 64 | 2048, 1 | 8 | 64 | 2048);
        assert_eq!(check_consistency(&s), Ok(()));
        assert_eq!(check_for_read(&s), Ok(()));
    }

    #[test]
    fn reader_bit_2_needs_stable_row_ids_and_every_fragment_carrying_them() {
        // covers: FLG-WRITE-4
        let s = snapshot(vec![with_row_ids(fragment(0))], 2, 2);
        let err = check_consistency(&s).unwrap_err();
        assert_eq!(err, FlagError::StableRowIdsMismatch { reader: 2 });
        assert_eq!(err.code(), "stable_row_ids_mismatch");

        let mut s = snapshot(vec![with_row_ids(fragment(0)), fragment(5)], 2, 2);
        s.stable_row_ids = true;
        let err = check_consistency(&s).unwrap_err();
        assert_eq!(err, FlagError::MissingRowIds { fragment: 5 });
        assert_eq!(
            (err.class(), err.code()),
            (ErrorClass::Invalid, "missing_row_ids")
        );

        s.fragments[1] = with_row_ids(fragment(5));
        assert_eq!(check_consistency(&s), Ok(()));

        // Stable row ids on but bit 2 clear.
        s.reader_flags = 0;
        let err = check_consistency(&s).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the snapshot uses stable row ids but reader flag 2 is clear"
        );
    }

    #[test]
    fn partial_row_ids_without_stable_row_ids_demand_bit_2() {
        // covers: FLG-WRITE-4
        let s = snapshot(vec![fragment(0), with_row_ids(fragment(9))], 0, 0);
        let err = check_consistency(&s).unwrap_err();
        assert_eq!(
            err.to_string(),
            "fragment 9 has a row-id sequence but reader flag 2 is clear"
        );
    }

    #[test]
    fn reads_hold_the_reader_word_to_row_ids_and_covering_fields() {
        // covers: FLG-CONS-4, FLG-CONS-5, FLG-CONS-6
        // Bit 2 set, but fragment 3 stores no row-id sequence: no row ids to return for it.
        let mut s = snapshot(vec![with_row_ids(fragment(0)), fragment(3)], 2, 2);
        s.stable_row_ids = true;
        assert_eq!(
            check_for_read(&s),
            Err(FlagError::MissingRowIds { fragment: 3 })
        );
        // Row-id sequences while bit 2 is clear.
        let s = snapshot(vec![fragment(0), with_row_ids(fragment(4))], 0, 2);
        let err = check_for_read(&s).unwrap_err();
        assert_eq!(
            (err.class(), err.code()),
            (ErrorClass::Invalid, "missing_flag")
        );
        assert_eq!(
            err.to_string(),
            "fragment 4 has a row-id sequence but reader flag 2 is clear"
        );
        // An index with a covering field needs bit 128; one without does not.
        let index = |fields: Vec<crate::model::FieldId>| crate::model::Index {
            name: "idx".into(),
            fields,
            dataset_version: 1,
            fragment_bitmap: None,
            kind: crate::model::IndexKind::BTree,
            entries: Vec::new(),
        };
        let mut s = snapshot(vec![fragment(0)], 0, 0);
        s.indices = vec![index(vec![0])];
        assert_eq!(check_for_read(&s), Ok(()));
        s.indices = vec![index(vec![0, 1])];
        let err = check_for_read(&s).unwrap_err();
        assert_eq!(
            err,
            FlagError::MissingFlag {
                word: FlagWord::Reader,
                flag: FLAG_COVERED_INDEX_METADATA,
                reason: "index idx has 1 covering fields".into(),
            }
        );
        s.reader_flags = FLAG_COVERED_INDEX_METADATA;
        assert_eq!(check_for_read(&s), Ok(()));
    }

    #[test]
    fn reads_ignore_the_writer_word() {
        // covers: FLG-READ-3
        let s = snapshot(vec![fragment(0)], 0, (1 << 40) | 256 | 32768);
        assert_eq!(check_for_read(&s), Ok(()));
        let s = snapshot(vec![fragment(0)], 4096, 0);
        assert_eq!(
            check_for_read(&s).unwrap_err().code(),
            "unknown_reader_flag"
        );
        // Content that needs bit 2 in both words: a read looks at the reader word only.
        let mut s = snapshot(vec![with_row_ids(fragment(0))], FLAG_STABLE_ROW_IDS, 0);
        s.stable_row_ids = true;
        assert_eq!(check_for_read(&s), Ok(()));
        assert_eq!(check_consistency(&s).unwrap_err().code(), "missing_flag");
    }

    #[test]
    fn writes_check_pairing_then_writer_word() {
        // covers: FLG-WRITE-5
        let s = snapshot(vec![fragment(0)], 256, 0);
        assert_eq!(check_for_write(&s).unwrap_err().code(), "unpaired_flag");
        let s = snapshot(vec![fragment(0)], 32768, 0);
        assert_eq!(
            check_for_write(&s).unwrap_err().code(),
            "writer_only_flag_in_reader_word"
        );
        let s = snapshot(vec![fragment(0)], 0, 1 << 40);
        assert_eq!(
            check_for_write(&s).unwrap_err().code(),
            "unknown_writer_flag"
        );
        // Reader-word bits a writer does not implement do not stop it (only pairing does).
        let s = snapshot(vec![fragment(0)], 16, 32);
        assert_eq!(check_for_write(&s), Ok(()));
        let mut f = fragment(0);
        f.overlays.push(overlay());
        let s = snapshot(vec![f], 64, 0);
        assert_eq!(check_for_write(&s).unwrap_err().code(), "missing_flag");
    }

    #[test]
    fn written_words_hold_only_writable_bits() {
        // covers: FLG-BITS-3, FLG-WRITE-6, FLG-CONS-2
        for b in 0..64u32 {
            let flag = 1u64 << b;
            // A lone reader bit is also put in the writer word, so only the allow-list decides.
            let s = snapshot(vec![], flag, flag | 8);
            let reader_ok = [0u32, 1, 6, 7, 8, 11].contains(&b);
            let result = check_written_flags(&s);
            if reader_ok {
                // Bit 1 (stable row ids) additionally needs the snapshot to say so.
                if b == 1 {
                    assert_eq!(result.unwrap_err().code(), "stable_row_ids_mismatch");
                } else {
                    assert_eq!(result, Ok(()), "bit {b}");
                }
            } else {
                let err = result.unwrap_err();
                assert_eq!(err.code(), "forbidden_written_flag", "bit {b}");
                assert_eq!(
                    err,
                    FlagError::ForbiddenWrittenFlags {
                        word: FlagWord::Reader,
                        bits: flag,
                        flags: flag
                    }
                );
            }
            let s = snapshot(vec![], 0, flag);
            let writer_ok = [0u32, 1, 3, 5, 6, 7, 8, 11].contains(&b);
            assert_eq!(check_written_flags(&s).is_ok(), writer_ok, "writer bit {b}");
        }
        let s = snapshot(vec![], 64 | 2048, 2048);
        assert_eq!(
            check_written_flags(&s).unwrap_err(),
            FlagError::ReaderFlagNotInWriterWord {
                flag: 64,
                reader: 2112,
                writer: 2048
            }
        );
    }

    #[test]
    fn every_error_has_a_distinct_code() {
        let errors = [
            FlagError::UnknownFlags {
                word: FlagWord::Reader,
                unknown: 8,
                flags: 8,
            },
            FlagError::UnknownFlags {
                word: FlagWord::Writer,
                unknown: 16,
                flags: 16,
            },
            FlagError::WriterOnlyFlagInReaderWord {
                flag: 32768,
                reader: 32768,
            },
            FlagError::UnpairedFlag {
                flag: 256,
                reader: 256,
                writer: 0,
            },
            FlagError::FieldIdHighWaterMarkMismatch {
                present: true,
                writer: 0,
            },
            FlagError::MissingFlag {
                word: FlagWord::Reader,
                flag: 64,
                reason: "x".into(),
            },
            FlagError::ForbiddenWrittenFlags {
                word: FlagWord::Reader,
                bits: 8,
                flags: 8,
            },
            FlagError::ReaderFlagNotInWriterWord {
                flag: 1,
                reader: 1,
                writer: 0,
            },
            FlagError::MissingRowIds { fragment: 0 },
            FlagError::StableRowIdsMismatch { reader: 2 },
        ];
        let codes: std::collections::BTreeSet<&str> = errors.iter().map(|e| e.code()).collect();
        assert_eq!(codes.len(), errors.len());
        // Only unimplemented bits are an unsupported feature.
        for e in &errors {
            let unsupported = matches!(e, FlagError::UnknownFlags { .. });
            assert_eq!(
                e.class() == ErrorClass::UnsupportedFeature,
                unsupported,
                "{e}"
            );
        }
    }

    #[test]
    fn a_reader_or_writer_without_overlay_support_refuses_bit_64() {
        // covers: OVL-FLAG-1, OVL-FLAG-2
        let reader_without = READER_FLAGS_IMPLEMENTED & !FLAG_UNSTABLE_DATA_OVERLAY_FILES;
        let writer_without = WRITER_FLAGS_IMPLEMENTED & !FLAG_UNSTABLE_DATA_OVERLAY_FILES;
        let err = check_reader_flags_supporting(64 | 2, reader_without).unwrap_err();
        assert_eq!(err.class(), ErrorClass::UnsupportedFeature);
        assert_eq!(err.code(), "unknown_reader_flag");
        let err = check_writer_flags_supporting(64 | 2, writer_without).unwrap_err();
        assert_eq!(err.code(), "unknown_writer_flag");
        assert!(check_reader_flags_supporting(2, reader_without).is_ok());
        assert!(
            check_reader_flags(64 | 2).is_ok(),
            "the reference itself reads overlays"
        );
    }

    fn v(major: u32, minor: u32) -> FileFormatVersion {
        FileFormatVersion::from_pair(major, minor)
    }

    #[test]
    fn bit_256_is_read_for_itself() {
        // covers: FLG-READ-2, FLG-READ-5
        assert_eq!(check_reader_flags(256 | 64 | 2), Ok(()));
        let s = snapshot(vec![fragment(0)], 256, 256);
        assert_eq!(check_for_read(&s), Ok(()));
        // Mixed versions with the bit set in the reader word read.
        let mixed = mixed_versions(Some(v(2, 0)), [("overlay", v(2, 2))]);
        assert!(mixed.is_some());
        let words = [(FlagWord::Reader, 256)];
        assert_eq!(check_mixed_versions(mixed.as_deref(), &words), Ok(()));
    }

    #[test]
    fn versions_are_mixed_when_a_file_differs_from_data_format() {
        // covers: FLG-WRITE-8
        // (0, 3) and (2, 0) are both v2.0.
        assert_eq!(v(0, 3), v(2, 0));
        assert_eq!(FileFormatVersion::from_data_format("2.0"), Some(v(0, 3)));
        assert_eq!(FileFormatVersion::from_data_format("2.2"), Some(v(2, 2)));
        assert_eq!(FileFormatVersion::from_data_format("stable"), None);
        assert_eq!(
            mixed_versions(Some(v(2, 0)), [("a", v(0, 3)), ("b", v(2, 0))]),
            None
        );
        assert_eq!(
            mixed_versions(
                Some(v(2, 0)),
                [("a", v(2, 0)), ("b", v(2, 2)), ("c", v(2, 1))]
            ),
            Some("b is version 2.2 but data_format is 2.0".to_string())
        );
        // Every file in one version that is not data_format's is mixed too (Lance sets 256).
        assert_eq!(
            mixed_versions(Some(v(2, 0)), [("a", v(2, 2))]),
            Some("a is version 2.2 but data_format is 2.0".to_string())
        );
        // Without data_format: mixed when the files disagree among themselves.
        assert_eq!(mixed_versions(None, [("a", v(2, 2)), ("b", v(2, 2))]), None);
        assert_eq!(
            mixed_versions(None, [("a", v(2, 2)), ("b", v(2, 1))]),
            Some("b is version 2.1 but a is 2.2".to_string())
        );
        assert_eq!(mixed_versions(None, []), None);
    }

    #[test]
    fn mixed_versions_without_bit_256_are_refused() {
        // covers: FLG-CONS-7, FLG-WRITE-8
        let reason = "fragments[0].overlays[0].data_file is version 2.2 but data_format is 2.0";
        let err = check_mixed_versions(Some(reason), &[(FlagWord::Reader, 64)]).unwrap_err();
        assert_eq!(
            err,
            FlagError::MissingFlag {
                word: FlagWord::Reader,
                flag: 256,
                reason: reason.into(),
            }
        );
        assert_eq!(
            (err.class(), err.code()),
            (ErrorClass::Invalid, "missing_flag")
        );
        assert_eq!(
            err.to_string(),
            format!("{reason} but reader flag 256 is clear")
        );
        // A writer holds both words to it.
        let both = [(FlagWord::Reader, 256), (FlagWord::Writer, 0)];
        assert_eq!(
            check_mixed_versions(Some(reason), &both).unwrap_err(),
            FlagError::MissingFlag {
                word: FlagWord::Writer,
                flag: 256,
                reason: reason.into(),
            }
        );
        // Not mixed: nothing to check.
        assert_eq!(check_mixed_versions(None, &[(FlagWord::Reader, 0)]), Ok(()));
    }

    #[test]
    fn bit_256_is_set_in_both_words_and_stays_set() {
        // covers: FLG-WRITE-8, FLG-WRITE-9
        let mut s = snapshot(vec![fragment(0)], 0, 0);
        set_mixed_versions_flag(&mut s, false);
        assert_eq!((s.reader_flags, s.writer_flags), (0, 0));
        set_mixed_versions_flag(&mut s, true);
        assert_eq!((s.reader_flags, s.writer_flags), (256, 256));
        assert_eq!(check_written_flags(&s), Ok(()));
        // A later commit recomputes the content bits and keeps 256.
        set_commit_flags(&mut s);
        assert_eq!((s.reader_flags, s.writer_flags), (256, 256));
        set_mixed_versions_flag(&mut s, false);
        assert_eq!((s.reader_flags, s.writer_flags), (256, 256));
        // Written alone in one word it is unpaired.
        let one = snapshot(vec![fragment(0)], 256, 0);
        assert_eq!(check_for_write(&one).unwrap_err().code(), "unpaired_flag");
    }
}
