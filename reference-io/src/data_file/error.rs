//! Errors of reading and writing Lance data files (v2.0 read and write; v2.1 and v2.2 read).
//!
//! Invariant: every variant names the file (or, for the writer, the column) and the structure
//! that is wrong, and maps to exactly one [`ErrorClass`] and one stable [`DataFileError::code`],
//! so negative conformance cases never depend on message text.

/// What went wrong while reading or writing a data file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataFileError {
    /// The file is shorter than the 40-byte footer.
    #[error("{file}: {len} bytes is too short for a Lance file (the footer alone is 40 bytes)")]
    TooShort {
        /// File path.
        file: String,
        /// File length.
        len: u64,
    },
    /// The last four bytes are not `LANC`.
    #[error("{file}: footer magic is {found:02x?}, expected \"LANC\"")]
    BadMagic {
        /// File path.
        file: String,
        /// The four bytes found.
        found: [u8; 4],
    },
    /// The footer names a version this reader does not decode (it reads v2.0, footer `(0,3)` or
    /// `(2,0)`, v2.1 `(2,1)` and v2.2 `(2,2)`).
    #[error("{file}: unsupported file version {major}.{minor}{hint}")]
    UnsupportedFileVersion {
        /// File path.
        file: String,
        /// Footer major version.
        major: u16,
        /// Footer minor version.
        minor: u16,
        /// A short explanation (`: v2.1+ structural encodings` and the like).
        hint: String,
    },
    /// A position, size or count points outside the region it must lie in.
    #[error("{file}: {structure}: {problem}")]
    OutOfBounds {
        /// File path.
        file: String,
        /// The structure holding the bad number (`footer`, `ColumnMetadata[2].pages[0]`).
        structure: String,
        /// What is wrong, with the numbers.
        problem: String,
    },
    /// Bytes that should hold a protobuf message do not decode.
    #[error("{file}: {structure}: malformed protobuf: {problem}")]
    MalformedProtobuf {
        /// File path.
        file: String,
        /// The message that failed (`ColumnMetadata[2].pages[0].encoding`).
        structure: String,
        /// The decoder's message.
        problem: String,
    },
    /// A message or oneof that must be present is absent.
    #[error("{file}: {structure} is missing")]
    MissingField {
        /// File path.
        file: String,
        /// The absent structure.
        structure: String,
    },
    /// An encoding (or encoding location, or type URL) this reader does not decode.
    #[error("{file}: {structure}: unsupported encoding: {encoding}")]
    UnsupportedEncoding {
        /// File path.
        file: String,
        /// Where the encoding appears.
        structure: String,
        /// Which encoding.
        encoding: String,
    },
    /// The encoding cannot hold values of the expected data type.
    #[error("{file}: {structure}: encoding holds {found}, expected {expected}")]
    EncodingTypeMismatch {
        /// File path.
        file: String,
        /// Where the encoding appears.
        structure: String,
        /// What the caller asked for.
        expected: String,
        /// What the encoding describes.
        found: String,
    },
    /// Page data decodes but breaks a rule of its encoding (offsets going backwards, a
    /// dictionary code past the dictionary, bytes that are not UTF-8).
    #[error("{file}: {structure}: {problem}")]
    InvalidPageData {
        /// File path.
        file: String,
        /// The structure holding the data.
        structure: String,
        /// What is wrong.
        problem: String,
    },
    /// A column or page claims more rows than this reader decodes ([`super::MAX_DECODED_VALUES`]).
    #[error("{file}: {structure}: {rows} values exceed this reader's limit of {limit}")]
    RowLimitExceeded {
        /// File path.
        file: String,
        /// The structure.
        structure: String,
        /// The claimed count.
        rows: u64,
        /// The limit.
        limit: u64,
    },
    /// The requested column index is not in the file.
    #[error("{file}: column {column} requested but the file has {num_columns} columns")]
    NoSuchColumn {
        /// File path.
        file: String,
        /// Requested column index.
        column: usize,
        /// Columns in the file.
        num_columns: usize,
    },
    /// A v2.1 or v2.2 page uses a form of the grammar its file version does not allow (a v2.1
    /// page with the v2.2 mini-block chunk grammar, an inline constant in a v2.1 file, ...).
    #[error("{file}: {structure}: format v{major}.{minor} does not allow {form}")]
    VersionGrammar {
        /// File path.
        file: String,
        /// Where the form appears.
        structure: String,
        /// Footer major version.
        major: u16,
        /// Footer minor version.
        minor: u16,
        /// The form that is not allowed, and what the version requires instead.
        form: String,
    },
    /// A buffer compressed with LZ4 or zstd does not decompress to what it declares.
    #[error("{file}: {structure}: {scheme} decompression failed: {problem}")]
    Decompression {
        /// File path.
        file: String,
        /// The compressed buffer.
        structure: String,
        /// `lz4` or `zstd`.
        scheme: String,
        /// What went wrong.
        problem: String,
    },
    /// Writer: a value does not fit its field's type.
    #[error("column {column} (field {field}): row {row} is {found}, expected {expected}")]
    ValueTypeMismatch {
        /// Column position in the writer's input.
        column: usize,
        /// Field id.
        field: i32,
        /// Row number.
        row: u64,
        /// Declared type.
        expected: String,
        /// Kind of the value found.
        found: String,
    },
    /// Writer: a NULL in a field declared non-nullable.
    #[error("column {column} (field {field}): row {row} is NULL but the field is not nullable")]
    NullInNonNullable {
        /// Column position in the writer's input.
        column: usize,
        /// Field id.
        field: i32,
        /// Row number.
        row: u64,
    },
    /// Writer: a NULL struct. Format v2.0 stores no struct validity (Lance 14 refuses it too).
    #[error(
        "column {column} (field {field}): row {row} is a NULL struct, which format v2.0 cannot store"
    )]
    NullStruct {
        /// Column position in the writer's input.
        column: usize,
        /// Field id.
        field: i32,
        /// Row number.
        row: u64,
    },
    /// Writer: the columns are not a pre-order list of fields (a child whose parent is not an
    /// earlier struct column).
    #[error("column {column} (field {field}): {problem}")]
    BadFieldOrder {
        /// Column position in the writer's input.
        column: usize,
        /// Field id.
        field: i32,
        /// What is wrong.
        problem: String,
    },
}

lance_reference::error_codes! {DataFileError {
    DataFileError::TooShort { .. } => code("data_file_too_short", Malformed, "The file is shorter than the 40-byte footer"),
    DataFileError::BadMagic { .. } => code("data_file_bad_magic", Malformed, "The last four bytes are not `LANC`"),
    DataFileError::UnsupportedFileVersion { .. } => code("unsupported_file_version", UnsupportedFeature, "The footer names a version this reader does not decode (it reads v2.0, v2.1 and v2.2)"),
    DataFileError::OutOfBounds { .. } => code("data_file_out_of_bounds", Malformed, "A position, size or count points outside the region it must lie in"),
    DataFileError::MalformedProtobuf { .. } => code("data_file_malformed_protobuf", Malformed, "Bytes that should hold a protobuf message do not decode"),
    DataFileError::MissingField { .. } => code("data_file_missing_field", Malformed, "A message or oneof that must be present is absent"),
    DataFileError::UnsupportedEncoding { .. } => code("unsupported_encoding", UnsupportedFeature, "An encoding (or encoding location, or type URL) this reader does not decode"),
    DataFileError::EncodingTypeMismatch { .. } => code("encoding_type_mismatch", Invalid, "The encoding cannot hold values of the expected data type"),
    DataFileError::InvalidPageData { .. } => code("invalid_page_data", Invalid, "Page data decodes but breaks a rule of its encoding (offsets going backwards, a dictionary code past the dictionary, bytes that are not UTF-8)"),
    DataFileError::RowLimitExceeded { .. } => code("row_limit_exceeded", UnsupportedFeature, "A column or page claims more rows than this reader decodes (`MAX_DECODED_VALUES`)"),
    DataFileError::NoSuchColumn { .. } => code("no_such_column", Invalid, "The requested column index is not in the file"),
    DataFileError::VersionGrammar { .. } => code("data_file_version_grammar", Invalid, "A v2.1 or v2.2 page uses a form of the grammar its file version does not allow"),
    DataFileError::Decompression { .. } => code("data_file_decompression", Malformed, "A buffer compressed with LZ4 or zstd does not decompress to what it declares"),
    DataFileError::ValueTypeMismatch { .. } => code("value_type_mismatch", Invalid, "Writer: a value does not fit its field's type"),
    DataFileError::NullInNonNullable { .. } => code("null_in_non_nullable", Invalid, "Writer: a NULL in a field declared non-nullable"),
    DataFileError::NullStruct { .. } => code("null_struct_unsupported", UnsupportedFeature, "Writer: a NULL struct (format v2.0 stores no struct validity)"),
    DataFileError::BadFieldOrder { .. } => code("bad_field_order", Invalid, "Writer: the columns are not a pre-order list of fields"),
}}
