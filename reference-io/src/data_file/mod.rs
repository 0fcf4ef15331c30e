//! Lance data files: writers of formats v2.0, v2.1 and v2.2 ([`structural_encode`]), and a reader of
//! formats v2.0, v2.1 and v2.2, for the types the kit uses (`int32`, `int64`, `uint64`,
//! `float32`, `float64`, `utf8`, `bool`, `fixed_size_list<float32, N>` and structs), all with NULLs.
//!
//! Invariant: bytes written here are real Lance v2.0 files, laid out and encoded as the Lance
//! 14.0.2 writer does (so Lance reads them, and equal input gives equal bytes); the reader
//! decodes what the Lance 14.0.2 writer emits for these types in v2.0 (dictionary-encoded
//! strings and multi-page columns included) and in v2.1/v2.2 (the layouts and encodings of
//! [`structural`]), and refuses everything else by name: other footers (v2.3, legacy) with
//! [`DataFileError::UnsupportedFileVersion`], other encodings with
//! [`DataFileError::UnsupportedEncoding`]. Reading never panics and never allocates for a count
//! the file has not backed with bytes or bounded by [`MAX_DECODED_VALUES`]; encoding
//! trees deeper than [`page_decode::MAX_ENCODING_DEPTH`] are refused.
//!
//! ```text
//! [page buffers, 64-byte aligned][FileDescriptor][ColumnMetadata...][CMO table][GBO table][footer]
//! ```
//!
//! | module | concept |
//! |---|---|
//! | [`container`] | footer and offset tables: the validated container of a file |
//! | [`any`] | the `Any` envelope of encodings |
//! | [`page_encode`] | values → one page's encoding tree and buffers |
//! | [`page_decode`] | a v2.0 page's encoding tree and buffers → values |
//! | [`structural`] | a v2.1+ page's layout and buffers → values |
//! | [`structural_encode`] | values → one v2.1 or v2.2 page's `PageLayout` and buffers |
//! | [`writer`] | [`write_data_file`] |
//! | [`reader`] | [`read_data_file`], [`DataFileContents`] |

pub mod any;
pub mod compression;
pub mod container;
mod error;
pub mod page_decode;
pub mod page_encode;
pub mod reader;
pub mod structural;
pub mod structural_encode;
pub mod writer;

#[cfg(test)]
mod tests;

pub use container::{FileVersion, Region};
pub use error::DataFileError;
pub use reader::{
    DataFileContents, FileField, PageSummary, metadata_start, read_data_file, read_data_file_in,
};
pub use writer::{
    ColumnData, DataFileVersion, FileExtras, PageEdit, keep_page, write_data_file,
    write_data_file_edited, write_data_file_in, write_data_file_with,
};

/// The most values this reader decodes for one column or one page subtree (4 Mi). A file that
/// claims more (for example an all-NULL page of 2^60 rows, which needs no bytes) is refused
/// with [`DataFileError::RowLimitExceeded`] instead of being allocated.
pub const MAX_DECODED_VALUES: u64 = 1 << 22;
