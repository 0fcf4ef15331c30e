//! The errors of reading and writing whole dataset directories (manifests, version names,
//! paths, and the files a manifest points at).
//!
//! Invariant: every variant names the file it is about (a path relative to the dataset root)
//! and, where the problem sits inside a message, the message field (e.g.
//! `fragments[2].files[0].path`); every variant belongs to exactly one [`ErrorClass`]. Negative
//! conformance cases match on [`DatasetError::class`] and [`DatasetError::code`], never on
//! message text. Errors of other modules (model validation, flags, lineage, data files,
//! deletion files, roaring bitmaps) are wrapped with the file they came from, keeping their
//! own class and code.

use crate::DatasetIoError;
use crate::data_file::DataFileError;
use crate::index_file::IndexFileError;
use lance_reference::error::Error;
use lance_reference::flags::FlagError;
use lance_reference::lineage::LineageError;

/// What is wrong with a manifest file's framing (the bytes around the protobuf messages).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FramingProblem {
    /// Fewer bytes than the 16-byte footer.
    #[error("{size} bytes, fewer than the 16-byte footer")]
    TooShort {
        /// File size.
        size: u64,
    },
    /// The last four bytes are not `LANC`.
    #[error("footer magic is {found:02x?}, not \"LANC\"")]
    BadMagic {
        /// The last four bytes.
        found: [u8; 4],
    },
    /// The footer's manifest position is negative or leaves no room for a length prefix.
    #[error("manifest position {position} is outside the {size}-byte file")]
    PositionOutOfRange {
        /// The stored i64 position.
        position: i64,
        /// File size.
        size: u64,
    },
    /// The Manifest's length prefix does not reach exactly to the footer.
    #[error(
        "manifest length prefix says {declared} bytes, but {expected} bytes lie between it and the footer"
    )]
    LengthMismatch {
        /// The stored u32 length.
        declared: u32,
        /// file size − position − 20.
        expected: u64,
    },
    /// A section (IndexSection) offset or length points outside the bytes before the Manifest.
    #[error(
        "{section} at offset {offset} (length {length:?}) does not lie before the manifest at {manifest_position}"
    )]
    SectionOutOfRange {
        /// Which section (`IndexSection`).
        section: &'static str,
        /// The stored offset.
        offset: u64,
        /// The stored length, when it could be read.
        length: Option<u32>,
        /// Where the Manifest's length prefix starts.
        manifest_position: u64,
    },
}

lance_reference::error_codes! {FramingProblem {
    FramingProblem::TooShort { .. } => code("manifest_too_short", Malformed, "The manifest file is shorter than its 16-byte footer"),
    FramingProblem::BadMagic { .. } => code("manifest_bad_magic", Malformed, "The manifest file does not end in `LANC`"),
    FramingProblem::PositionOutOfRange { .. } => code("manifest_position_out_of_range", Malformed, "The footer's manifest position lies outside the file"),
    FramingProblem::LengthMismatch { .. } => code("manifest_length_mismatch", Malformed, "The Manifest's length prefix disagrees with the bytes present"),
    FramingProblem::SectionOutOfRange { .. } => code("manifest_section_out_of_range", Malformed, "A section (index section, transaction) lies outside the file"),
}}

/// Every failure of reading or writing a dataset directory.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// The operating system refused an operation (open, read, list, create).
    #[error("{file}: {operation} failed: {problem}")]
    Io {
        /// The file or directory.
        file: String,
        /// What was being done (`read`, `list`, `write`, `create directory`).
        operation: &'static str,
        /// The operating system's message.
        problem: String,
    },
    /// A file the manifest references does not exist.
    #[error("{file}: referenced by {field} but does not exist")]
    MissingFile {
        /// The missing file.
        file: String,
        /// The manifest field referencing it.
        field: String,
    },
    /// A file is larger than the configured read limit.
    #[error("{file}: {size} bytes exceeds the read limit of {limit} bytes")]
    FileTooLarge {
        /// The file.
        file: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The bytes around the manifest's protobuf messages are wrong.
    #[error("{file}: {problem}")]
    Framing {
        /// The manifest file.
        file: String,
        /// What is wrong.
        problem: FramingProblem,
    },
    /// A protobuf message does not decode.
    #[error("{file}: {message} does not decode: {problem}")]
    Protobuf {
        /// The file holding it.
        file: String,
        /// The message type (`lance.table.Manifest`, `lance.table.IndexSection`).
        message: &'static str,
        /// What prost said.
        problem: String,
    },
    /// A field the kit requires is absent (e.g. an overlay's `data_file`, an index's `uuid`).
    #[error("{file}: {field} is missing")]
    MissingField {
        /// The file holding the message.
        file: String,
        /// The absent field.
        field: String,
    },
    /// A field decodes but its value breaks a rule.
    #[error("{file}: {field}: {problem}")]
    InvalidField {
        /// The file holding the message.
        file: String,
        /// The offending field.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// A field uses a feature this kit does not implement (e.g. `base_id`, an unknown
    /// logical type or index kind).
    #[error("{file}: {field}: unsupported: {feature}")]
    Unsupported {
        /// The file holding the message.
        file: String,
        /// The field.
        field: String,
        /// The feature.
        feature: String,
    },
    /// A path stored in (or built from) a manifest would leave the dataset root.
    #[error("{file}: {field}: path {path:?} is not confined to the dataset: {problem}")]
    PathEscape {
        /// The manifest.
        file: String,
        /// The field holding the path.
        field: String,
        /// The path as stored.
        path: String,
        /// Which rule it breaks.
        problem: &'static str,
    },
    /// `_versions/` mixes the V1 and V2 naming schemes.
    #[error("{dir}: mixes manifest naming schemes: {v1:?} is V1, {v2:?} is V2")]
    MixedNamingSchemes {
        /// The `_versions` directory.
        dir: String,
        /// A V1 name found.
        v1: String,
        /// A V2 (or detached) name found.
        v2: String,
    },
    /// A name ends in `manifest` but is no version name.
    #[error("{file}: not a manifest name: {problem}")]
    BadVersionName {
        /// The file name.
        file: String,
        /// Why it does not parse.
        problem: &'static str,
    },
    /// Two names denote the same version.
    #[error("version {version} has two manifests: {first} and {second}")]
    DuplicateVersion {
        /// The version.
        version: u64,
        /// One name.
        first: String,
        /// The other.
        second: String,
    },
    /// A manifest's inner `version` differs from the version its name says.
    #[error("{file}: Manifest.version is {inner}, but the file name says {named}")]
    VersionMismatch {
        /// The manifest file.
        file: String,
        /// The version in the name.
        named: u64,
        /// `Manifest.version`.
        inner: u64,
    },
    /// A version that has no manifest was requested (directly or by an index's
    /// `dataset_version`).
    #[error("version {version} does not exist ({context})")]
    VersionNotFound {
        /// The version.
        version: u64,
        /// Who asked.
        context: String,
    },
    /// A file to be written exists and holds different content.
    #[error(
        "{file}: exists with different content ({problem}); content-derived names should make this impossible"
    )]
    ExistingFileDiffers {
        /// The file.
        file: String,
        /// What differs.
        problem: String,
    },
    /// A snapshot cannot be written as asked (e.g. no version, a bad file name).
    #[error("cannot write {what}: {problem}")]
    Unwritable {
        /// What was being written.
        what: String,
        /// Why not.
        problem: String,
    },
    /// The decoded snapshot (or the one to be written) breaks a model rule.
    #[error("{file}: {error}")]
    Model {
        /// The manifest.
        file: String,
        /// The model's error (boxed: it is large).
        error: Box<Error>,
    },
    /// Feature flags refused.
    #[error("{file}: {error}")]
    Flags {
        /// The manifest.
        file: String,
        /// The flags module's error.
        error: FlagError,
    },
    /// An inline lineage sequence does not decode.
    #[error("{file}: {field}: {error}")]
    Lineage {
        /// The manifest.
        file: String,
        /// The field (`fragments[0].inline_row_ids`).
        field: String,
        /// The lineage module's error (boxed: it is large).
        error: Box<LineageError>,
    },
    /// A data file (base, overlay or lineage) does not decode or cannot be encoded.
    #[error("{field}: {error}")]
    DataFile {
        /// The manifest field referencing the file.
        field: String,
        /// The data file module's error (it names the file; boxed: it is large).
        error: Box<DataFileError>,
    },
    /// An index's files are missing parts, damaged, or disagree with the manifest or the
    /// table.
    #[error("{field}: {error}")]
    IndexFile {
        /// The manifest field of the index (`_versions/..: indices[0]`).
        field: String,
        /// The index files' error (boxed: it is large).
        error: Box<IndexFileError>,
    },
    /// A deletion file or roaring bitmap does not decode.
    #[error("{field}: {error}")]
    FileFormat {
        /// The manifest field referencing the bytes.
        field: String,
        /// The on-disk format error (it names the file; boxed: it is large).
        error: Box<DatasetIoError>,
    },
}

lance_reference::error_codes! {DatasetError {
    DatasetError::Io { .. } => code("io", Malformed, "The operating system refused an operation (open, read, list, create)"),
    DatasetError::MissingFile { .. } => code("missing_file", Invalid, "A file the manifest references does not exist"),
    DatasetError::FileTooLarge { .. } => code("file_too_large", UnsupportedFeature, "A file is larger than the configured read limit"),
    DatasetError::Framing { problem, .. } => wraps(problem: FramingProblem),
    DatasetError::Protobuf { .. } => code("protobuf", Malformed, "A protobuf message does not decode"),
    DatasetError::MissingField { .. } => code("missing_field", Malformed, "A field the kit requires is absent (an overlay's `data_file`, an index's `uuid`)"),
    DatasetError::InvalidField { .. } => code("invalid_field", Invalid, "A field decodes but its value breaks a rule"),
    DatasetError::Unsupported { .. } => code("unsupported", UnsupportedFeature, "A field uses a feature this kit does not implement (`base_id`, an unknown logical type or index kind)"),
    DatasetError::PathEscape { .. } => code("path_escape", Invalid, "A path stored in (or built from) a manifest would leave the dataset root"),
    DatasetError::MixedNamingSchemes { .. } => code("mixed_naming_schemes", Invalid, "`_versions/` mixes the V1 and V2 naming schemes"),
    DatasetError::BadVersionName { .. } => code("bad_version_name", Invalid, "A name ends in `manifest` but is no version name"),
    DatasetError::DuplicateVersion { .. } => code("duplicate_version", Invalid, "Two names denote the same version"),
    DatasetError::VersionMismatch { .. } => code("version_mismatch", Invalid, "A manifest's inner `version` differs from the version its name says"),
    DatasetError::VersionNotFound { .. } => code("version_not_found", Invalid, "A version that has no manifest was requested (directly or by an index's `dataset_version`)"),
    DatasetError::ExistingFileDiffers { .. } => code("existing_file_differs", Invalid, "A file to be written exists and holds different content"),
    DatasetError::Unwritable { .. } => code("unwritable", Invalid, "A snapshot cannot be written as asked (no version, a bad file name)"),
    DatasetError::Model { error, .. } => wraps(error: Error),
    DatasetError::Flags { error, .. } => wraps(error: FlagError),
    DatasetError::Lineage { error, .. } => wraps(error: LineageError),
    DatasetError::DataFile { error, .. } => wraps(error: DataFileError),
    DatasetError::IndexFile { error, .. } => wraps(error: IndexFileError),
    DatasetError::FileFormat { error, .. } => wraps(error: DatasetIoError),
}}
