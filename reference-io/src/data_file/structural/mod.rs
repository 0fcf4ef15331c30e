//! Decoding the pages of Lance data files v2.1 and v2.2 ("structural" encodings): each page is
//! a [`PageLayout`](lance_reference::proto::lance::encodings21::PageLayout) that arranges rows,
//! definition levels and values in the page's buffers, and a tree of
//! [`CompressiveEncoding`](lance_reference::proto::lance::encodings21::CompressiveEncoding)s
//! that compress each stream.
//!
//! Invariant: decoding a page never reads outside a buffer, never panics and never allocates for
//! a count the page has not backed with bytes or bounded by [`super::MAX_DECODED_VALUES`]; every
//! count a layout declares (rows, items, chunk values, levels, dictionary items) is checked
//! against the others and against the bytes that hold it, and a layout or encoding this reader
//! does not decode is refused by name ([`DataFileError::UnsupportedEncoding`]). Lists
//! (repetition levels) are refused: the kit's columns have none.
//!
//! | module | concept |
//! |---|---|
//! | [`page_layout`] | the `PageLayout` of a page: parsing, the v2.1/v2.2 grammar check, dispatch |
//! | [`mini_block`] | the mini-block layout: chunk metadata words, chunk headers, padding, dictionary |
//! | [`full_zip`] | the full-zip layout: control words and zipped fixed or variable width values |
//! | [`constant`] | the constant layout: all NULL or one inline scalar, optional level buffers |
//! | [`rep_def`] | definition levels: layer meanings, levels to validity |
//! | [`compressive`] | compressive encodings: the mini-block, block and per-value forms of each |
//! | [`buffer_compression`] | LZ4 and zstd buffers |
//! | [`block`] | [`block::Block`], the decoded values of a stream |
//! | [`assemble`] | a column's decoded pages → one Arrow array of the caller's type |

pub mod assemble;
pub mod block;
pub mod buffer_compression;
pub mod compressive;
pub mod constant;
pub mod full_zip;
pub mod mini_block;
pub mod page_layout;
pub mod rep_def;

use super::DataFileError;
use super::MAX_DECODED_VALUES;

/// Where in a file a structure lies, for error messages: the file path and a structure path
/// such as `ColumnMetadata[3].pages[0].mini_block_layout.chunks[2].def`.
#[derive(Debug, Clone)]
pub struct Site<'a> {
    /// File path.
    pub file: &'a str,
    /// Structure path.
    pub path: String,
}

impl<'a> Site<'a> {
    /// A site at `path` in `file`.
    pub fn new(file: &'a str, path: impl Into<String>) -> Self {
        Site {
            file,
            path: path.into(),
        }
    }

    /// The site of a part of this structure (`self.path` + `.` + `part`).
    pub fn at(&self, part: impl std::fmt::Display) -> Site<'a> {
        Site {
            file: self.file,
            path: format!("{}.{part}", self.path),
        }
    }

    /// [`DataFileError::OutOfBounds`] here.
    pub fn oob(&self, problem: impl Into<String>) -> DataFileError {
        DataFileError::OutOfBounds {
            file: self.file.to_string(),
            structure: self.path.clone(),
            problem: problem.into(),
        }
    }

    /// [`DataFileError::InvalidPageData`] here.
    pub fn invalid(&self, problem: impl Into<String>) -> DataFileError {
        DataFileError::InvalidPageData {
            file: self.file.to_string(),
            structure: self.path.clone(),
            problem: problem.into(),
        }
    }

    /// [`DataFileError::UnsupportedEncoding`] here.
    pub fn unsupported(&self, encoding: impl Into<String>) -> DataFileError {
        DataFileError::UnsupportedEncoding {
            file: self.file.to_string(),
            structure: self.path.clone(),
            encoding: encoding.into(),
        }
    }

    /// [`DataFileError::MissingField`] for the part `part` of this structure.
    pub fn missing(&self, part: &str) -> DataFileError {
        DataFileError::MissingField {
            file: self.file.to_string(),
            structure: format!("{}.{part}", self.path),
        }
    }

    /// [`DataFileError::EncodingTypeMismatch`] here.
    pub fn mismatch(&self, expected: impl Into<String>, found: impl Into<String>) -> DataFileError {
        DataFileError::EncodingTypeMismatch {
            file: self.file.to_string(),
            structure: self.path.clone(),
            expected: expected.into(),
            found: found.into(),
        }
    }

    /// Refuses a count above [`MAX_DECODED_VALUES`].
    pub fn check_count(&self, count: u64) -> Result<usize, DataFileError> {
        if count > MAX_DECODED_VALUES {
            return Err(DataFileError::RowLimitExceeded {
                file: self.file.to_string(),
                structure: self.path.clone(),
                rows: count,
                limit: MAX_DECODED_VALUES,
            });
        }
        Ok(count as usize)
    }
}

/// The little-endian unsigned integer of `width` bytes (1, 2, 4 or 8) at `at`, if present.
pub(crate) fn le_uint(bytes: &[u8], at: usize, width: usize) -> Option<u64> {
    let s = bytes.get(at..at.checked_add(width)?)?;
    let mut b8 = [0u8; 8];
    b8.get_mut(..width)?.copy_from_slice(s);
    Some(u64::from_le_bytes(b8))
}

#[cfg(test)]
mod tests;
