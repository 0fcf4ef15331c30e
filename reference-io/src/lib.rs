//! On-disk I/O of a Lance dataset: the byte formats the manifest points at, and whole versions
//! (manifest + every file it references) read into and written from [`lance_reference::model`].
//!
//! Invariant: nothing in this tree trusts the bytes it reads. Every decoder checks each length
//! and count against the bytes actually present before it allocates, rejects what the format
//! does not allow with a typed error naming the file and the message field, and never panics.
//! Every encoder writes what Lance 14 writes for the same content, so bytes produced here can
//! be compared with bytes produced by Lance. Table semantics (resolution, lineage, overlays)
//! live elsewhere: [`read`] hands finished snapshots to the model's validation and uses the
//! model's own rules to check index entries against the version each index claims.
//!
//! | module | concept |
//! |---|---|
//! | [`data_file`] | Lance v2.0 data files: base columns, overlay value columns, hidden lineage columns |
//! | [`roaring_format`] | the portable 32-bit roaring serialization (coverage, deletion vectors, fragment bitmaps) |
//! | [`deletion`] | deletion files: `_deletions/` paths, the Arrow IPC and roaring forms |
//! | [`index_file`] | index files under `_indices/<uuid>/`: BTree and IVF_FLAT, written and checked |
//! | [`manifest_file`] | the framing of `_versions/*.manifest`: sections, Manifest, footer |
//! | [`version_names`] | V1 / V2 / detached manifest names; listing versions |
//! | [`paths`] | confining manifest paths to the dataset root |
//! | [`layout`] | what a manifest records beyond the model (file sizes, versions, ids) |
//! | [`codec`] | `Manifest` protobuf <-> [`lance_reference::model::Snapshot`] + [`Layout`] |
//! | [`storage`] | where the bytes live: the [`storage::Storage`] seam, the local file system by default, memory for fuzzing |
//! | [`decoded`] | what readers decoded from a [`storage::MemoryStorage`]'s files, remembered by path and size |
//! | [`read`] | [`Dataset::open`], reading whole versions (time travel) |
//! | [`version_check`] | checking a version fragment by fragment, one fragment's columns per worker |
//! | [`write`](mod@write) | [`write_version`]: data, overlay, deletion files and the manifest |

pub mod codec;
pub mod data_file;
pub mod decoded;
pub mod deletion;
mod error;
mod in_order;
mod index_check;
pub mod index_file;
mod io_error;
pub mod layout;
pub mod manifest_file;
pub mod paths;
pub mod read;
pub mod roaring_format;
pub mod storage;
pub mod version_check;
pub mod version_names;
pub mod write;

pub use error::{DatasetError, FramingProblem};
pub use io_error::{BitmapProblem, DatasetIoError};
pub use layout::Layout;
pub use read::{Dataset, ReadOptions};
pub use storage::{LocalStorage, MemoryStorage, Storage, StorageError, StorageWrite};
pub use write::{
    WriteOptions, content_name, write_version, write_version_files_in, write_version_in,
};
