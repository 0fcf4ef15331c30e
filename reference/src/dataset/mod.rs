//! On-disk I/O of a Lance dataset: the byte formats the manifest points at.
//!
//! Invariant: nothing in this tree trusts the bytes it reads, and nothing in it interprets
//! table semantics. Every decoder checks each length and count against the bytes actually
//! present before it allocates, rejects what the format does not allow with a typed error
//! naming the file and the message field, and never panics. Every encoder writes what Lance 14
//! writes for the same content, so bytes produced here can be compared with bytes produced by
//! Lance. Resolution, lineage and overlays live elsewhere and never see bytes.
//!
//! | module | concept |
//! |---|---|
//! | [`data_file`] | Lance v2.0 data files: base columns, overlay value columns, hidden lineage columns |
//! | [`roaring_format`] | the portable 32-bit roaring serialization (coverage, deletion vectors, fragment bitmaps) |
//! | [`deletion`] | deletion files: `_deletions/` paths, the Arrow IPC and roaring forms |

pub mod data_file;
pub mod deletion;
mod io_error;
pub mod roaring_format;

pub use io_error::{BitmapProblem, DatasetIoError};
