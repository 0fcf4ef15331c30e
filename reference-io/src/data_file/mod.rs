//! Lance data files, format v2.0: a writer and a reader for the types the kit uses (`int32`,
//! `int64`, `uint64`, `float32`, `float64`, `utf8`, `bool`, `fixed_size_list<float32, N>` and
//! struct header columns), all with NULLs; and a writer of format v2.2 for the same types
//! ([`structural_encode`]).
//!
//! Invariant: bytes written here are real Lance v2.0 files, laid out and encoded as the Lance
//! 14.0.2 writer does (so Lance reads them, and equal input gives equal bytes); the reader
//! decodes what the Lance 14.0.2 v2.0 writer emits for these types, dictionary-encoded strings
//! and multi-page columns included, and refuses everything else by name: v2.1+ footers with
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
//! | [`page_decode`] | a page's encoding tree and buffers → values |
//! | [`structural_encode`] | values → one v2.2 page's `PageLayout` and buffers |
//! | [`writer`] | [`write_data_file`] |
//! | [`reader`] | [`read_data_file`], [`DataFileContents`] |

pub mod any;
pub mod container;
mod error;
pub mod page_decode;
pub mod page_encode;
pub mod reader;
pub mod structural_encode;
pub mod writer;

#[cfg(test)]
mod tests;

pub use container::FileVersion;
pub use error::DataFileError;
pub use reader::{DataFileContents, FileField, PageSummary, read_data_file};
pub use writer::{
    ColumnData, DataFileVersion, FileExtras, write_data_file, write_data_file_in,
    write_data_file_with,
};

/// The most values this reader decodes for one column or one page subtree (4 Mi). A file that
/// claims more (for example an all-NULL page of 2^60 rows, which needs no bytes) is refused
/// with [`DataFileError::RowLimitExceeded`] instead of being allocated.
pub const MAX_DECODED_VALUES: u64 = 1 << 22;
