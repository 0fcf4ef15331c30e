//! Deletion files: which physical offsets of a fragment are deleted.
//!
//! Invariant: [`read_deletion_file`] returns a set only when every offset in it is below the
//! fragment's `physical_rows`, no offset is listed twice, and a non-zero
//! `DeletionFile.num_deleted_rows` equals the number of offsets; [`write_deletion_file`]
//! produces bytes that read back to the same set. Deletions are a set of *physical* offsets,
//! so they compose with overlay coverage (also physical) without any remapping.
//!
//! A `DeletionFile` message stores no path. The file lives at
//! `_deletions/{fragment_id}-{read_version}-{id}.{arrow|bin}`, relative to the dataset root
//! (or to `base_paths[base_id]` when `base_id` is set), with the suffix chosen by `file_type`:
//!
//! | `file_type` | suffix | content |
//! |---|---|---|
//! | 0 `ARROW_ARRAY` | `.arrow` | Arrow IPC file, one batch, `row_id: UInt32 not null` (see [`arrow_file`]) |
//! | 1 `BITMAP` | `.bin` | portable roaring bitmap (see [`super::roaring_format`]) |
//!
//! # Rules this kit applies (where Lance 14 is lenient or silent)
//!
//! - **`num_deleted_rows`**: 0 means "unknown" and is never checked. A non-zero value must
//!   equal the number of deleted offsets, else [`DatasetIoError::DeletedRowCountMismatch`].
//!   Lance trusts a non-zero value for row counts and checks it only in `Fragment::validate`,
//!   which does not run when a dataset is opened.
//! - **Range**: every offset must be below `physical_rows`
//!   ([`DatasetIoError::DeletionOffsetOutOfRange`]); an Arrow batch with more rows than
//!   `physical_rows` is refused before any allocation.
//! - **Duplicates** in the Arrow form are refused ([`DatasetIoError::DuplicateDeletionOffset`]):
//!   Lance writes a set, so a repeated offset can only come from a broken writer, and it would
//!   make the file's row count disagree with the deleted-row count. Order is free (Lance
//!   writes hash-set order).
//! - **Empty** files decode to the empty set. Lance never writes one (a fragment without
//!   deletions has no `DeletionFile`), and this kit's writers only write one when asked.
//!
//! # Which form Lance writes
//!
//! Lance keeps deletions as a hash set and switches to a roaring bitmap once it holds more
//! than [`BITMAP_THRESHOLD`] offsets, or when a single delete supplies at least that many at
//! once. Observed with pylance 14.0.2: one delete of 4999 rows wrote `.arrow`, one of 5000 rows
//! wrote `.bin`. [`lance_file_type`] applies the one-shot rule, which is the only one a writer
//! that receives a whole set can follow. The `.arrow` form is ZSTD-compressed by Lance; this
//! kit writes it uncompressed (Lance reads both). The `.bin` form is serialized without run
//! containers (Lance does not call `optimize()` on deletion vectors).

pub mod arrow_file;
mod flatbuffer;

use roaring::RoaringBitmap;

use super::DatasetIoError;
use super::roaring_format::{read_bitmap, write_bitmap_without_runs};

/// The directory of deletion files, relative to the dataset root.
pub const DELETIONS_DIR: &str = "_deletions";

/// Lance switches from the Arrow form to the bitmap form at this many deletions.
pub const BITMAP_THRESHOLD: u64 = 5000;

/// The two forms of a deletion file (`DeletionFile.file_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeletionFileType {
    /// `ARROW_ARRAY = 0`: an Arrow IPC file, suffix `.arrow`.
    ArrowArray,
    /// `BITMAP = 1`: a portable roaring bitmap, suffix `.bin`.
    Bitmap,
}

impl DeletionFileType {
    /// The stored enum value (`0` or `1`).
    pub fn proto_value(self) -> i32 {
        match self {
            DeletionFileType::ArrowArray => 0,
            DeletionFileType::Bitmap => 1,
        }
    }

    /// Parses a stored enum value; other values are unknown (a newer writer's form).
    pub fn from_proto(fragment: u64, value: i32) -> Result<DeletionFileType, DatasetIoError> {
        match value {
            0 => Ok(DeletionFileType::ArrowArray),
            1 => Ok(DeletionFileType::Bitmap),
            file_type => Err(DatasetIoError::UnknownDeletionFileType {
                fragment,
                file_type,
            }),
        }
    }

    /// The file name suffix, without the dot.
    pub fn suffix(self) -> &'static str {
        match self {
            DeletionFileType::ArrowArray => "arrow",
            DeletionFileType::Bitmap => "bin",
        }
    }
}

/// The manifest's `DeletionFile` message (`DataFragment.deletion_file`), fields as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeletionFile {
    /// `file_type = 1`: 0 ARROW_ARRAY, 1 BITMAP; anything else is refused on use.
    pub file_type: i32,
    /// `read_version = 2`: the dataset version the deletions were computed from.
    pub read_version: u64,
    /// `id = 3`: an opaque number that keeps concurrent writers' file names apart.
    pub id: u64,
    /// `num_deleted_rows = 4`: number of deleted offsets, 0 meaning unknown.
    pub num_deleted_rows: u64,
    /// `base_id = 7`: when set, the path is relative to `base_paths[base_id]`.
    pub base_id: Option<u32>,
}

impl DeletionFile {
    /// The parsed `file_type`.
    pub fn file_type(&self, fragment_id: u64) -> Result<DeletionFileType, DatasetIoError> {
        DeletionFileType::from_proto(fragment_id, self.file_type)
    }

    /// `_deletions/{fragment_id}-{read_version}-{id}.{suffix}`.
    pub fn relative_path(&self, fragment_id: u64) -> Result<String, DatasetIoError> {
        let suffix = self.file_type(fragment_id)?.suffix();
        Ok(format!(
            "{DELETIONS_DIR}/{fragment_id}-{}-{}.{suffix}",
            self.read_version, self.id
        ))
    }
}

/// The form Lance 14 picks for a deletion set of `count` offsets written at once.
pub fn lance_file_type(count: u64) -> DeletionFileType {
    if count >= BITMAP_THRESHOLD {
        DeletionFileType::Bitmap
    } else {
        DeletionFileType::ArrowArray
    }
}

/// Decodes the deletion file of fragment `fragment_id` described by `deletion_file`, given
/// its bytes and the fragment's `physical_rows`, and checks the rules in the module doc.
pub fn read_deletion_file(
    fragment_id: u64,
    deletion_file: &DeletionFile,
    bytes: &[u8],
    physical_rows: u64,
) -> Result<RoaringBitmap, DatasetIoError> {
    let file = deletion_file.relative_path(fragment_id)?;
    let deleted = match deletion_file.file_type(fragment_id)? {
        DeletionFileType::Bitmap => {
            let bitmap = read_bitmap(bytes, &file, "deletion bitmap")?;
            if let Some(offset) = bitmap.max().filter(|&m| u64::from(m) >= physical_rows) {
                return Err(DatasetIoError::DeletionOffsetOutOfRange {
                    file,
                    offset,
                    physical_rows,
                });
            }
            bitmap
        }
        DeletionFileType::ArrowArray => {
            let offsets = arrow_file::read_row_ids(bytes, &file, physical_rows)?;
            if let Some(&offset) = offsets.iter().find(|&&o| u64::from(o) >= physical_rows) {
                return Err(DatasetIoError::DeletionOffsetOutOfRange {
                    file,
                    offset,
                    physical_rows,
                });
            }
            let mut sorted = offsets;
            sorted.sort_unstable();
            if let Some(pair) = sorted.windows(2).find(|w| w[0] == w[1]) {
                return Err(DatasetIoError::DuplicateDeletionOffset {
                    file,
                    offset: pair[0],
                });
            }
            let mut bitmap = RoaringBitmap::new();
            // Sorted and distinct, so `append` cannot refuse them.
            let _ = bitmap.append(sorted);
            bitmap
        }
    };
    let declared = deletion_file.num_deleted_rows;
    if declared != 0 && declared != deleted.len() {
        return Err(DatasetIoError::DeletedRowCountMismatch {
            file,
            declared,
            found: deleted.len(),
        });
    }
    Ok(deleted)
}

/// Encodes `deleted` in the given form: the Arrow form uncompressed with offsets in
/// increasing order, the bitmap form as Lance writes it (no run containers).
pub fn write_deletion_file(deleted: &RoaringBitmap, form: DeletionFileType) -> Vec<u8> {
    match form {
        DeletionFileType::ArrowArray => {
            arrow_file::write_row_ids(&deleted.iter().collect::<Vec<u32>>())
        }
        DeletionFileType::Bitmap => write_bitmap_without_runs(deleted),
    }
}

/// The Arrow form listing `offsets` exactly as given, order and repeats kept. A conforming
/// writer writes a set ([`write_deletion_file`]); this exists to build damaged files for tests
/// and negative conformance cases (a repeated offset, [`DatasetIoError::DuplicateDeletionOffset`]).
pub fn write_arrow_offsets(offsets: &[u32]) -> Vec<u8> {
    arrow_file::write_row_ids(offsets)
}

/// The Arrow form with the `row_id` column declared as signed `int32` instead of `uint32`: a
/// file a reader must refuse ([`DatasetIoError::WrongDeletionSchema`]; Lance 14 refuses it
/// too). For tests and negative conformance cases only.
pub fn write_arrow_int32_offsets(offsets: &[u32]) -> Vec<u8> {
    let mut layout = arrow_file::FileShape::deletion(offsets.len());
    for column in &mut layout.columns {
        column.signed = true;
    }
    arrow_file::write_file(&layout, offsets)
}

#[cfg(test)]
mod tests;
