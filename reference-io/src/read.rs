//! Reading whole versions of a dataset directory.
//!
//! Invariant: [`Dataset::read_version`] returns a snapshot only after its manifest framing,
//! name/version agreement, reader flags, every path, every referenced file (data, overlay,
//! lineage, deletion) and the finished snapshot ([`Snapshot::validate`],
//! [`lance_reference::flags::check_for_read`]) have been checked; any failure is a [`DatasetError`]
//! naming the file and the manifest field. No file is read before its size is checked against
//! [`ReadOptions::max_file_bytes`], and nothing is expanded beyond
//! [`ReadOptions::max_fragment_rows`] rows per fragment. Manifests, deletion files and index
//! files are read whole; a data file by parts: its metadata region, then each page's buffers
//! as its column is decoded, one page at a time ([`read_data_file_in`]), with the checks and
//! the first error of a whole read. Every version listed stays readable
//! (time travel): nothing here depends on which version is the newest.
//!
//! How each data-file position becomes a model column (`DataFile.fields[p]`, read from column
//! `column_indices[p]`):
//!
//! | field id at `p` | base file | overlay file |
//! |---|---|---|
//! | a schema field | decoded with the schema's type, which the file must store | decoded likewise (struct fields: empty) |
//! | −3 / −4 / −5 (lineage) | decoded as `uint64`; the file must store `uint64` | empty |
//! | −2 (tombstone) | empty: never read | empty |
//! | other (dropped field, other reserved id) | decoded with the file schema's type | empty |
//!
//! Base columns other than tombstones are decoded because the model checks that each holds
//! `physical_rows` values ([OVL-LAYOUT-7]); overlay positions that supply no cell are never
//! read, as [OVL-LAYOUT-1] needs only the live ones.
//!
//! **Versions.** Each data file is decoded by its own manifest pair, and its footer must name
//! the same format ([DS-FILE-3], [DS-FILE-6]); files of versions other than `data_format`'s need
//! reader bit 256, checked from the manifest before any file is opened ([FLG-CONS-7]). From
//! v2.1 on only leaves take columns: a struct id in such a file's `fields` is refused before
//! its bytes are read ([DS-LEAF-2]), a leaf below structs is read with the validity of each
//! struct above it ([`lance_reference::model::StructLayer`], kept on base columns only,
//! [DS-LEAF-1], [OVL-SHAPE-8]), and a leaf value under a NULL struct reads as NULL
//! ([DS-LEAF-4]).
//!
//! **Index entries.** An index's entries are read from its files (`_indices/<uuid>/`,
//! [`crate::index_file`]): every file the kit's layout needs must exist, match its size in the
//! manifest's `files` list, and pass the layout checks of its kind. Stored ids are then turned
//! into rows of the version the index claims (`dataset_version`, read by time travel): row
//! addresses for a BTree of `index_version` 1, row ids (through that version's row-id
//! sequences) for a vector index and a BTree of `index_version` 0. Entries for fragments
//! outside `fragment_bitmap` are ignored (coverage only narrows after a build). For every
//! covered fragment that existed at `dataset_version` the stored entries must equal the
//! rebuild of that version ([`lance_reference::index_build::entries`]): a row without an
//! entry, an entry whose value differs, and an entry naming no row of that version are each an
//! error of its own. A covered fragment of the version read that did not exist then is
//! *covered after the build* (a compaction remapped the index into it, or an incremental index
//! update added it) when the files hold entries for it: every live row of it in the version
//! read needs an entry equal to its value, except rows in the index's exclusion set, whose
//! entries are never used; with no entry for it, the coverage is refused. An index whose
//! `dataset_version` has no manifest is an error. An index whose `fragment_bitmap` is present
//! and empty and whose `files` list is empty has no entries and no file is read
//! ([IDX-READ-11]); one that lists files is read like any other.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::codec::decode_manifest_with;
use super::data_file::container::Extent;
use super::data_file::{
    DataFileError, MAX_DECODED_VALUES, Region, metadata_start, read_data_file_in,
};
use super::decoded::{ColumnRequest, IndexRequest};
use super::deletion::{DeletionFile, read_deletion_file};
use super::error::DatasetError;
use super::index_file::{
    BTREE_DATA, BTREE_LOOKUP, IVF_INDEX, IVF_STORAGE, IndexFileError, StoredEntries, index_dir,
    read_btree, read_vector_index,
};
use super::layout::IndexLayout;
use super::layout::{FileLayout, FragmentLayout, Layout};
use super::manifest_file::{ManifestFile, decode_manifest_file};
use super::storage::{LocalStorage, Storage, StorageError};
use super::version_names::{VERSIONS_DIR, VersionEntry, list_versions_in};
use arrow_array::{Array, ArrayRef, make_array};
use arrow_buffer::NullBuffer;
use lance_reference::exclusion::exclusion_set;
use lance_reference::flags::{
    FileFormatVersion, FlagWord, check_mixed_versions, check_reader_flags,
};
use lance_reference::index_build::entries as index_entries;
use lance_reference::model::StructLayer;
use lance_reference::model::{
    CREATED_AT_FIELD_ID, Column, DataFile, DataType, Fragment, Index, IndexEntry, IndexKind,
    LAST_UPDATED_AT_FIELD_ID, ROW_ID_FIELD_ID, Schema, Snapshot, TOMBSTONE_FIELD_ID, Value,
};
use lance_reference::readable::{check_readable, check_readable_manifest};

/// Limits that keep reading untrusted directories bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// The largest file read (default 1 GiB).
    pub max_file_bytes: u64,
    /// The largest `physical_rows` of a fragment (default: the data file reader's limit).
    pub max_fragment_rows: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            max_file_bytes: 1 << 30,
            max_fragment_rows: MAX_DECODED_VALUES,
        }
    }
}

/// A dataset and the versions it holds, read through a [`Storage`].
#[derive(Debug, Clone)]
pub struct Dataset {
    storage: Arc<dyn Storage>,
    entries: Vec<VersionEntry>,
    options: ReadOptions,
}

/// Reads `rel` (a root-relative path) whole from `storage`, refusing files over `limit`
/// before any byte is read. `field` names the manifest field that referenced the file.
pub fn read_bounded(
    storage: &dyn Storage,
    rel: &str,
    limit: u64,
    field: &str,
) -> Result<Vec<u8>, DatasetError> {
    let size = bounded_size(storage, rel, limit, field)?;
    read_part(storage, rel, 0..size, field)
}

/// A storage's failure on `rel` as the dataset's error: a missing file is named with the
/// manifest `field` that referenced it.
fn storage_error(rel: &str, field: &str, operation: &'static str, e: StorageError) -> DatasetError {
    match e {
        StorageError::NotFound => DatasetError::MissingFile {
            file: rel.to_string(),
            field: field.to_string(),
        },
        StorageError::Other(problem) => DatasetError::Io {
            file: rel.to_string(),
            operation,
            problem,
        },
    }
}

/// The size of `rel`, refused when it is over `limit` ([`read_bounded`]'s first step).
pub(crate) fn bounded_size(
    storage: &dyn Storage,
    rel: &str,
    limit: u64,
    field: &str,
) -> Result<u64, DatasetError> {
    let size = storage
        .size(rel)
        .map_err(|e| storage_error(rel, field, "stat", e))?;
    if size > limit {
        return Err(DatasetError::FileTooLarge {
            file: rel.to_string(),
            size,
            limit,
        });
    }
    Ok(size)
}

/// The bytes `range` of `rel`.
fn read_part(
    storage: &dyn Storage,
    rel: &str,
    range: std::ops::Range<u64>,
    field: &str,
) -> Result<Vec<u8>, DatasetError> {
    storage
        .read_range(rel, range)
        .map_err(|e| storage_error(rel, field, "read", e))
}

/// How many bytes at the end of a data file are read first: its footer and, in a file Lance
/// wrote with a few columns, its offset tables, column metadata and schema too.
const METADATA_TAIL: u64 = 64 * 1024;

/// The bytes of the data file `rel` (of `size` bytes) its metadata lies in, and the file
/// position they start at: the last [`METADATA_TAIL`] bytes, extended back as far as
/// [`metadata_start`] asks (at most twice: to `column_meta_start`, then to global buffer 0).
fn read_metadata_region(
    storage: &dyn Storage,
    rel: &str,
    size: u64,
    field: &str,
) -> Result<(u64, Vec<u8>), DatasetError> {
    let mut start = size.saturating_sub(METADATA_TAIL);
    let mut bytes = read_part(storage, rel, start..size, field)?;
    loop {
        let held = Region {
            start,
            bytes: &bytes,
        };
        let from = metadata_start(held, size, rel);
        if from >= start {
            return Ok((start, bytes));
        }
        let mut joined = read_part(storage, rel, from..start, field)?;
        joined.extend_from_slice(&bytes);
        bytes = joined;
        start = from;
    }
}

/// Why a page of a data file was not decoded: its bytes could not be read, or they do not
/// decode.
enum PageRead {
    Storage(DatasetError),
    Data(DataFileError),
}

impl From<DataFileError> for PageRead {
    fn from(e: DataFileError) -> PageRead {
        PageRead::Data(e)
    }
}

/// Which model type a data-file position is decoded with, or `None` when it is left empty.
fn position_type(schema: &Schema, field: i32, overlay: bool) -> Option<Option<DataType>> {
    match field {
        TOMBSTONE_FIELD_ID => None,
        ROW_ID_FIELD_ID | CREATED_AT_FIELD_ID | LAST_UPDATED_AT_FIELD_ID if !overlay => {
            Some(Some(DataType::UInt64))
        }
        f if f >= 0 => match schema.field(f) {
            Some(sf) if overlay && sf.data_type == DataType::Struct => None,
            Some(sf) => Some(Some(sf.data_type.clone())),
            None if overlay => None,
            None => Some(None), // dropped: the file schema's type
        },
        _ if overlay => None,
        _ => Some(None),
    }
}

/// Whether `field` is one of the reserved lineage ids (-3, -4, -5).
fn is_lineage(field: i32) -> bool {
    matches!(
        field,
        ROW_ID_FIELD_ID | CREATED_AT_FIELD_ID | LAST_UPDATED_AT_FIELD_ID
    )
}

/// Whether a read decodes the column at a position holding `field` (see the module docs).
pub fn reads_position(schema: &Schema, field: i32, overlay: bool) -> bool {
    position_type(schema, field, overlay).is_some()
}

/// Decodes the columns of one data file as the model wants them (see the module docs); from a
/// storage that remembers decodings ([`Storage::decoded`]) a file already decoded for the same
/// request is not decoded again.
pub fn read_file_columns(
    storage: &dyn Storage,
    schema: &Schema,
    file: &DataFile,
    layout: &FileLayout,
    overlay: bool,
    field: &str,
    limit: u64,
) -> Result<Vec<Column>, DatasetError> {
    let Some(decoded) = storage.decoded() else {
        return decode_file_columns(storage, schema, file, layout, overlay, field, limit);
    };
    let request = ColumnRequest {
        overlay,
        fields: file
            .fields
            .iter()
            .map(|&id| {
                let data_type = schema.field(id).map(|f| f.data_type.clone());
                (id, data_type, schema.ancestry(id))
            })
            .collect(),
        column_indices: layout.column_indices.clone(),
        version: (layout.file_major_version, layout.file_minor_version),
    };
    // The checks of what the manifest says of the file come first, hit or miss; a size the
    // storage cannot tell is the decode's error to report.
    let size = storage.size(&layout.path).ok();
    let fits = |size: u64| {
        size <= limit && (layout.file_size_bytes == 0 || layout.file_size_bytes == size)
    };
    if let Some(size) = size.filter(|&s| fits(s)) {
        if let Some(columns) = decoded.columns(&layout.path, size, &request) {
            return Ok(columns);
        }
    }
    let columns = decode_file_columns(storage, schema, file, layout, overlay, field, limit)?;
    if let Some(size) = size {
        decoded.keep_columns(&layout.path, size, request, columns.clone());
    }
    Ok(columns)
}

fn decode_file_columns(
    storage: &dyn Storage,
    schema: &Schema,
    file: &DataFile,
    layout: &FileLayout,
    overlay: bool,
    field: &str,
    limit: u64,
) -> Result<Vec<Column>, DatasetError> {
    let version = layout.version();
    if version >= FileFormatVersion::from_pair(2, 1) {
        // [DS-LEAF-2]: from v2.1 on a struct takes no column, so an entry for one names a
        // column holding something else, or none.
        if let Some((p, id)) = file.fields.iter().enumerate().find(|(_, id)| {
            schema
                .field(**id)
                .is_some_and(|f| f.data_type == DataType::Struct)
        }) {
            return Err(DatasetError::InvalidField {
                file: layout.path.clone(),
                field: format!("{field}.fields[{p}]"),
                problem: format!(
                    "field {id} is a struct, which takes no column in a v{version} data file \
                     (only its leaves do)"
                ),
            });
        }
    }
    // The file is not read whole: its metadata region first, then each column's pages one at
    // a time, so a worker holds one page's bytes besides the columns it decoded. What is
    // checked, and the first error, are a whole read's (`read_data_file_in`).
    let path_field = format!("{field}.path");
    let size = bounded_size(storage, &layout.path, limit, &path_field)?;
    if layout.file_size_bytes != 0 && layout.file_size_bytes != size {
        return Err(DatasetError::InvalidField {
            file: layout.path.clone(),
            field: format!("{field}.file_size_bytes"),
            problem: format!("says {} bytes, the file has {size}", layout.file_size_bytes),
        });
    }
    let data_err = |error| DatasetError::DataFile {
        field: field.to_string(),
        error: Box::new(error),
    };
    let page_err = |e| match e {
        PageRead::Storage(e) => e,
        PageRead::Data(e) => data_err(e),
    };
    let fetch = |span: Extent| {
        let range = span.position..span.position.saturating_add(span.size);
        read_part(storage, &layout.path, range, &path_field)
            .map(Cow::Owned)
            .map_err(PageRead::Storage)
    };
    let (start, metadata) = read_metadata_region(storage, &layout.path, size, &path_field)?;
    let held = Region {
        start,
        bytes: &metadata,
    };
    let contents = read_data_file_in(held, size, &layout.path).map_err(data_err)?;
    // [DS-FILE-6]: the manifest's pair decides how the pages are read; a footer naming another
    // format means the file is not the one the manifest describes.
    let footer = contents.version();
    let footer_version = FileFormatVersion::from_pair(footer.major.into(), footer.minor.into());
    if footer_version != version {
        return Err(DatasetError::InvalidField {
            file: layout.path.clone(),
            field: format!("{field}.file_major_version"),
            problem: format!(
                "the manifest says data file version {}.{}, the file's footer says {}.{}",
                layout.file_major_version, layout.file_minor_version, footer.major, footer.minor
            ),
        });
    }
    let mut columns = Vec::with_capacity(file.fields.len());
    for (p, &id) in file.fields.iter().enumerate() {
        let Some(data_type) = position_type(schema, id, overlay) else {
            columns.push(Column::empty());
            continue;
        };
        let bad_index = |problem: String| DatasetError::InvalidField {
            file: layout.path.clone(),
            field: format!("{field}.column_indices[{p}]"),
            problem,
        };
        let stored = layout
            .column_indices
            .get(p)
            .copied()
            .ok_or_else(|| bad_index("missing".into()))?;
        let index = usize::try_from(stored)
            .map_err(|_| bad_index(format!("{stored} is negative for field {id}")))?;
        let data_type = match data_type {
            Some(t) => {
                // [OVL-LAYOUT-9], [LIN-COL-3]: the file itself must store the field's type;
                // decoding one type's bytes as another would silently reinterpret them.
                let stored = contents
                    .column_field(index)
                    .map(|f| f.logical_type.as_str());
                if stored.and_then(DataType::from_logical_type).as_ref() != Some(&t) {
                    let what = if is_lineage(id) {
                        "hidden lineage column"
                    } else {
                        "field"
                    };
                    return Err(DatasetError::InvalidField {
                        file: layout.path.clone(),
                        field: format!("{field}.fields[{p}]"),
                        problem: format!(
                            "{what} {id} is stored as {:?}, not {:?}",
                            stored.unwrap_or("(no such column)"),
                            t.logical_type()
                        ),
                    });
                }
                t
            }
            None => {
                let logical = contents
                    .column_field(index)
                    .map(|f| f.logical_type.clone())
                    .unwrap_or_default();
                DataType::from_logical_type(&logical).ok_or_else(|| DatasetError::Unsupported {
                    file: layout.path.clone(),
                    field: format!("{field}.fields[{p}]"),
                    feature: format!("field {id} (not in the schema) has file type {logical:?}"),
                })?
            }
        };
        let array = contents
            .column_array_with(index, &data_type, fetch)
            .map_err(page_err)?;
        // From v2.1 on a leaf's column also stores the validity of each struct above it.
        let ancestors = match schema.ancestry(id).split_last() {
            Some((_, structs)) if contents.is_structural() && id >= 0 => structs.to_vec(),
            _ => Vec::new(),
        };
        if ancestors.is_empty() {
            columns.push(Column::new(array));
            continue;
        }
        let layers = contents
            .struct_validity_with(index, fetch)
            .map_err(page_err)?;
        // A file may hold a struct child without its parent (an overlay listing leaves only,
        // [OVL-SHAPE-6]; the base file a fold writes for a struct child): the file's schema
        // then puts the leaf at its top level and its column stores no struct layer. Like a
        // v2.0 file without the struct's column, it says nothing of the struct's validity.
        if layers.is_empty() {
            columns.push(Column::new(array));
            continue;
        }
        if layers.len() != ancestors.len() {
            return Err(DatasetError::InvalidField {
                file: layout.path.clone(),
                field: format!("{field}.fields[{p}]"),
                problem: format!(
                    "field {id} sits in {} structs in the dataset's schema, but its column \
                     stores {} struct layers",
                    ancestors.len(),
                    layers.len()
                ),
            });
        }
        // [DS-LEAF-4]: under a NULL struct the leaf stores no value. The layers are cumulative
        // (a struct is present only where every struct around it is), so the innermost decides.
        let array = match layers.last().and_then(Option::as_ref) {
            Some(validity) if array.data_type() != &arrow_schema::DataType::Null => {
                null_where_absent(array, validity).map_err(|problem| {
                    DatasetError::InvalidField {
                        file: layout.path.clone(),
                        field: format!("{field}.fields[{p}]"),
                        problem: format!(
                            "field {id}'s struct layer does not fit its values: {problem}"
                        ),
                    }
                })?
            }
            _ => array,
        };
        // [DS-LEAF-1]: a base file holds its structs through their layers; an overlay's layers
        // carry nothing ([OVL-SHAPE-8]), so its columns keep none.
        let column = Column::new(array);
        columns.push(if overlay {
            column
        } else {
            column.with_struct_layers(
                ancestors
                    .into_iter()
                    .zip(layers)
                    .map(|(field, validity)| StructLayer::new(field, validity))
                    .collect(),
            )
        });
    }
    Ok(columns)
}

/// `values` with NULL wherever the struct around them is absent (`present` unset), and
/// wherever they were NULL already; values and offsets are kept as they are. The layer must
/// have one bit per value. The array is checked again as it is rebuilt (a text column's
/// UTF-8 included), a cost only leaves under structs pay.
fn null_where_absent(values: ArrayRef, present: &NullBuffer) -> Result<ArrayRef, String> {
    if values.len() != present.len() {
        return Err(format!(
            "{} struct validity bits for {} values",
            present.len(),
            values.len()
        ));
    }
    if values.is_empty() {
        return Ok(values);
    }
    let nulls = NullBuffer::union(values.nulls(), Some(present));
    values
        .to_data()
        .into_builder()
        .nulls(nulls)
        .build()
        .map(make_array)
        .map_err(|e| e.to_string())
}

/// The fewest physical rows in a version for [`Dataset::read_version`] to share its fragments
/// among threads.
pub const PARALLEL_READ_MIN_ROWS: u64 = 1 << 16;

/// The number of cores this process may use, asked of the system once (the answer reads
/// cgroup files, which costs more than reading a small version).
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

impl Dataset {
    /// Opens the dataset at `root` with default [`ReadOptions`], listing its versions.
    pub fn open(root: &Path) -> Result<Dataset, DatasetError> {
        Dataset::open_with(root, ReadOptions::default())
    }

    /// Opens the dataset at `root` with `options`.
    pub fn open_with(root: &Path, options: ReadOptions) -> Result<Dataset, DatasetError> {
        Dataset::open_in(Arc::new(LocalStorage::new(root)), options)
    }

    /// Opens the dataset held by `storage` (a directory, an object-store prefix, memory) with
    /// `options`, listing its versions through it.
    pub fn open_in(
        storage: Arc<dyn Storage>,
        options: ReadOptions,
    ) -> Result<Dataset, DatasetError> {
        let entries = list_versions_in(storage.as_ref())?;
        Ok(Dataset {
            storage,
            entries,
            options,
        })
    }

    /// Where the dataset's bytes are read from.
    pub fn storage(&self) -> &dyn Storage {
        self.storage.as_ref()
    }

    /// The limits reads keep.
    pub fn options(&self) -> ReadOptions {
        self.options
    }

    /// Reads the root-relative file `rel` whole, within [`ReadOptions::max_file_bytes`];
    /// `field` names what referenced it, for errors.
    pub fn read_file(&self, rel: &str, field: &str) -> Result<Vec<u8>, DatasetError> {
        read_bounded(self.storage(), rel, self.options.max_file_bytes, field)
    }

    /// Every manifest found, sorted by version (detached ones included).
    pub fn entries(&self) -> &[VersionEntry] {
        &self.entries
    }

    /// The attached versions, ascending.
    pub fn versions(&self) -> Vec<u64> {
        self.entries
            .iter()
            .filter(|e| !e.detached)
            .map(|e| e.version)
            .collect()
    }

    /// The newest attached version, if any.
    pub fn latest_version(&self) -> Option<u64> {
        self.versions().last().copied()
    }

    /// Reads version `version` (see the module docs for every check).
    pub fn read_version(&self, version: u64) -> Result<(Snapshot, Layout), DatasetError> {
        self.read_uncached(version, &mut BTreeMap::new(), true)
    }

    /// Reads every attached version, ascending.
    pub fn read_all(&self) -> Result<Vec<(Snapshot, Layout)>, DatasetError> {
        let mut cache = BTreeMap::new();
        self.versions()
            .into_iter()
            .map(|v| self.read_cached(v, &mut cache))
            .collect()
    }

    fn read_cached(
        &self,
        version: u64,
        cache: &mut BTreeMap<u64, (Snapshot, Layout)>,
    ) -> Result<(Snapshot, Layout), DatasetError> {
        if let Some(hit) = cache.get(&version) {
            return Ok(hit.clone());
        }
        let read = self.read_uncached(version, cache, true)?;
        cache.insert(version, read.clone());
        Ok(read)
    }

    /// Reads the manifest level of `version`: the manifest, the reader word, the deletion
    /// files and every rule of [`check_readable_manifest`], without reading a data, overlay or
    /// index file (every `columns` list stays empty, no index has entries). `validate` judges
    /// a version by it when [`Dataset::read_version`] refuses a file this kit cannot decode.
    pub fn read_manifest_level(&self, version: u64) -> Result<(Snapshot, Layout), DatasetError> {
        let (mut snapshot, layout, file) = self.decoded(version)?;
        for (i, (fragment, fl)) in snapshot
            .fragments
            .iter_mut()
            .zip(&layout.fragments)
            .enumerate()
        {
            self.read_deletions(&file, i, fragment, fl)?;
        }
        check_readable_manifest(&snapshot).map_err(|error| DatasetError::Model {
            file: file.clone(),
            error: Box::new(error),
        })?;
        Ok((snapshot, layout))
    }

    /// The decoded manifest of `version` (its name, framing and inner version checked) with
    /// the reader word checked, and the manifest's root-relative path.
    pub(crate) fn decoded(&self, version: u64) -> Result<(Snapshot, Layout, String), DatasetError> {
        self.decoded_with(version, true)
            .map(|(snapshot, layout, file, _)| (snapshot, layout, file))
    }

    /// [`Self::decoded`], with the manifest file it was decoded from; without `lineage` the
    /// fragments' inline lineage values are dropped as each fragment is decoded
    /// ([`decode_manifest_with`]), the checks and errors unchanged.
    pub(crate) fn decoded_with(
        &self,
        version: u64,
        lineage: bool,
    ) -> Result<(Snapshot, Layout, String, ManifestFile), DatasetError> {
        let entry = self
            .entries
            .iter()
            .find(|e| e.version == version)
            .ok_or_else(|| DatasetError::VersionNotFound {
                version,
                context: format!("{} lists no such manifest", VERSIONS_DIR),
            })?;
        let file = format!("{VERSIONS_DIR}/{}", entry.name);
        let limit = self.options.max_file_bytes;
        let bytes = read_bounded(self.storage(), &file, limit, "_versions listing")?;
        let manifest_file = decode_manifest_file(&bytes, &file)?;
        if manifest_file.manifest.version != version {
            return Err(DatasetError::VersionMismatch {
                file,
                named: version,
                inner: manifest_file.manifest.version,
            });
        }
        let (snapshot, layout) = decode_manifest_with(
            &manifest_file,
            &file,
            self.options.max_fragment_rows,
            lineage,
        )?;
        let flags = |error| DatasetError::Flags {
            file: file.clone(),
            error,
        };
        check_reader_flags(snapshot.reader_flags).map_err(flags)?;
        // [FLG-CONS-7]: files of another version than `data_format` need bit 256.
        let mixed = layout.mixed_versions();
        check_mixed_versions(
            mixed.as_deref(),
            &[(FlagWord::Reader, snapshot.reader_flags)],
        )
        .map_err(flags)?;
        Ok((snapshot, layout, file, manifest_file))
    }

    /// Reads fragment `i`'s deletion file, if it has one, into `fragment.deletions`.
    pub(crate) fn read_deletions(
        &self,
        file: &str,
        i: usize,
        fragment: &mut Fragment,
        fl: &FragmentLayout,
    ) -> Result<(), DatasetError> {
        let Some(d) = &fl.deletion else {
            return Ok(());
        };
        let field = format!("{file}: fragments[{i}].deletion_file");
        let bytes = read_bounded(self.storage(), &d.path, self.options.max_file_bytes, &field)?;
        let stored = DeletionFile {
            file_type: d.form.proto_value(),
            read_version: d.read_version,
            id: d.id,
            num_deleted_rows: d.num_deleted_rows,
            base_id: None,
        };
        fragment.deletions =
            read_deletion_file(fragment.id, &stored, &bytes, fragment.physical_rows).map_err(
                |error| DatasetError::FileFormat {
                    field,
                    error: Box::new(error),
                },
            )?;
        Ok(())
    }

    /// Reads the data level of `version`: everything [`Dataset::read_version`] reads and
    /// checks except the index files (no index has entries). `validate` judges a version by it
    /// when an index file is one this kit cannot decode.
    pub fn read_data_level(&self, version: u64) -> Result<(Snapshot, Layout), DatasetError> {
        self.read_uncached(version, &mut BTreeMap::new(), false)
    }

    /// Reads every fragment's data, overlay and deletion files into `snapshot`, the fragments
    /// shared among the available cores (a version of fewer than [`PARALLEL_READ_MIN_ROWS`]
    /// physical rows on the calling thread alone). Each fragment is read by one thread, in the order
    /// files, overlays, deletion file; the error returned is the one of the first fragment (in
    /// manifest order) that failed, as a sequential read would return, and fragments after a
    /// failed one are not started. Which thread read which fragment changes nothing read.
    fn read_fragments(
        &self,
        snapshot: &mut Snapshot,
        layout: &Layout,
        file: &str,
    ) -> Result<(), DatasetError> {
        let schema = &snapshot.schema;
        let read_one = |i: usize, fragment: &mut Fragment, fl: &FragmentLayout| {
            self.read_fragment_files(schema, file, i, fragment, fl)
        };
        let count = snapshot.fragments.len().min(layout.fragments.len());
        let rows: u64 = snapshot.fragments[..count]
            .iter()
            .map(|f| f.physical_rows)
            .fold(0, u64::saturating_add);
        // Threads only pay for themselves on a version of some size: a small one (a test's, a
        // fuzzer's) is read faster on the calling thread than threads start.
        let workers = if rows < PARALLEL_READ_MIN_ROWS {
            1
        } else {
            cores().min(count)
        };
        if workers <= 1 {
            for (i, (fragment, fl)) in snapshot
                .fragments
                .iter_mut()
                .zip(&layout.fragments)
                .enumerate()
            {
                read_one(i, fragment, fl)?;
            }
            return Ok(());
        }
        let slots: Vec<Mutex<&mut Fragment>> = snapshot.fragments[..count]
            .iter_mut()
            .map(Mutex::new)
            .collect();
        let next = AtomicUsize::new(0);
        let failed = AtomicUsize::new(usize::MAX);
        let errors: Mutex<BTreeMap<usize, DatasetError>> = Mutex::new(BTreeMap::new());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= count || i > failed.load(Ordering::Relaxed) {
                            break;
                        }
                        // Each slot is taken by exactly one thread: the lock is never contended.
                        let mut slot = match slots[i].lock() {
                            Ok(slot) => slot,
                            Err(poisoned) => poisoned.into_inner(),
                        };
                        if let Err(e) = read_one(i, &mut slot, &layout.fragments[i]) {
                            failed.fetch_min(i, Ordering::Relaxed);
                            let mut errors = match errors.lock() {
                                Ok(errors) => errors,
                                Err(poisoned) => poisoned.into_inner(),
                            };
                            errors.insert(i, e);
                        }
                    }
                });
            }
        });
        let errors = match errors.into_inner() {
            Ok(errors) => errors,
            Err(poisoned) => poisoned.into_inner(),
        };
        match errors.into_values().next() {
            Some(first) => Err(first),
            None => Ok(()),
        }
    }

    /// Reads fragment `i`'s data and overlay files (in that order) into its `columns`, then its
    /// deletion file, as [`Dataset::read_version`] reads each fragment; `file` is the manifest.
    pub(crate) fn read_fragment_files(
        &self,
        schema: &Schema,
        file: &str,
        i: usize,
        fragment: &mut Fragment,
        fl: &FragmentLayout,
    ) -> Result<(), DatasetError> {
        let limit = self.options.max_file_bytes;
        for (j, (df, l)) in fragment.files.iter_mut().zip(&fl.files).enumerate() {
            let field = format!("{file}: fragments[{i}].files[{j}]");
            df.columns = read_file_columns(self.storage(), schema, df, l, false, &field, limit)?;
        }
        for (k, (o, l)) in fragment.overlays.iter_mut().zip(&fl.overlays).enumerate() {
            let field = format!("{file}: fragments[{i}].overlays[{k}].data_file");
            o.file.columns =
                read_file_columns(self.storage(), schema, &o.file, l, true, &field, limit)?;
        }
        self.read_deletions(file, i, fragment, fl)
    }

    /// Reads `version` without caching it (older versions its indices need are cached), so a
    /// single read does not copy the whole table; `indices` false leaves the index files
    /// unread.
    fn read_uncached(
        &self,
        version: u64,
        cache: &mut BTreeMap<u64, (Snapshot, Layout)>,
        indices: bool,
    ) -> Result<(Snapshot, Layout), DatasetError> {
        let (mut snapshot, layout, file) = self.decoded(version)?;
        self.read_fragments(&mut snapshot, &layout, &file)?;
        check_readable(&snapshot).map_err(|error| DatasetError::Model {
            file: file.clone(),
            error: Box::new(error),
        })?;
        if !indices {
            return Ok((snapshot, layout));
        }
        let read = check_indices_in_order(
            &snapshot,
            &layout,
            &file,
            |older| self.read_cached(older, cache).map(|(older, _)| older),
            |index, il, older, field| {
                let at_build = older.as_ref().unwrap_or(&snapshot);
                let (stored, _) = read_index_files(
                    self.storage(),
                    &index_dir(&il.uuid),
                    il,
                    index,
                    &at_build.schema,
                    self.options.max_file_bytes,
                    field,
                )?;
                checked_entries(at_build, &snapshot, index, il, stored.into_pairs())
                    .map_err(|e| e.at(field))
            },
        )?;
        for (n, entries) in read {
            snapshot.indices[n].entries = entries;
        }
        Ok((snapshot, layout))
    }
}

pub use crate::decoded::FileSizes;

/// The one order in which a version's indices are checked, kept by [`Dataset::read_version`]
/// and by [`VersionCheck`](crate::version_check::VersionCheck) alike: index by index in
/// manifest order; an index claiming a later version is passed over (the version's own check
/// refused it); an older version the index claims is read first (`claimed`), before anything of
/// the index, and a missing one is named as `indices[n].dataset_version`; then the index's
/// layout must exist; an index with nothing to read ([`nothing_to_read`]) answers nothing;
/// only then does `entries` read the index's files and check its entries, given the claimed
/// version when it is older and the error context `"<file>: indices[n]"`. Returns the entries
/// of each index it did not pass over, by position.
pub(crate) fn check_indices_in_order<T>(
    snapshot: &Snapshot,
    layout: &Layout,
    file: &str,
    mut claimed: impl FnMut(u64) -> Result<T, DatasetError>,
    mut entries: impl FnMut(
        &Index,
        &IndexLayout,
        Option<T>,
        &str,
    ) -> Result<Vec<IndexEntry>, DatasetError>,
) -> Result<Vec<(usize, Vec<IndexEntry>)>, DatasetError> {
    let version = snapshot.version;
    let mut out = Vec::with_capacity(snapshot.indices.len());
    for (n, index) in snapshot.indices.iter().enumerate() {
        let dataset_version = index.dataset_version;
        let older = if dataset_version == version {
            None
        } else if dataset_version < version {
            Some(claimed(dataset_version).map_err(|e| match e {
                DatasetError::VersionNotFound { version, .. } => DatasetError::VersionNotFound {
                    version,
                    context: format!("{file}: indices[{n}].dataset_version"),
                },
                other => other,
            })?)
        } else {
            continue; // from the future: the version's own check refused it
        };
        let il = layout
            .indices
            .get(n)
            .ok_or_else(|| DatasetError::MissingField {
                file: file.to_string(),
                field: format!("indices[{n}] layout"),
            })?;
        if nothing_to_read(index, il) {
            out.push((n, Vec::new()));
            continue;
        }
        out.push((
            n,
            entries(index, il, older, &format!("{file}: indices[{n}]"))?,
        ));
    }
    Ok(out)
}

/// [IDX-READ-11]: an index covering no fragment that lists no file answers nothing, so a
/// reader reads no file for it.
pub(crate) fn nothing_to_read(index: &Index, layout: &IndexLayout) -> bool {
    index.covers_no_fragment() && layout.files.is_empty()
}

/// The file names an index of `kind` needs.
pub fn index_file_names(kind: IndexKind) -> [&'static str; 2] {
    match kind {
        IndexKind::BTree => [BTREE_DATA, BTREE_LOOKUP],
        IndexKind::Vector => [IVF_STORAGE, IVF_INDEX],
    }
}

/// Reads the files of `index` from `dir` (root-relative) and returns what they store (`(id,
/// value)` pairs, or ids only for a quantized vector index) and every file's size. Each file the kind needs must exist, be within `limit` and,
/// when `layout.files` lists it, have the listed size; a listed file the kind does not use must
/// exist too. `schema` gives the key's type; `field` names the index in errors. From a storage
/// that remembers decodings ([`Storage::decoded`]) files of the same sizes already decoded for
/// the same kind and key type are not decoded again.
pub fn read_index_files(
    storage: &dyn Storage,
    dir: &str,
    layout: &IndexLayout,
    index: &Index,
    schema: &Schema,
    limit: u64,
    field: &str,
) -> Result<(StoredEntries, FileSizes), DatasetError> {
    let key_type = index
        .fields
        .first()
        .and_then(|k| schema.field(*k))
        .map(|f| f.data_type.clone());
    let (Some(decoded), Some(key_type)) = (storage.decoded(), key_type) else {
        return decode_index_files(storage, dir, layout, index, schema, limit, field);
    };
    let request = IndexRequest {
        kind: index.kind,
        key_type,
    };
    // Every file's size, checked as a decode checks it; anything else is the decode's to report.
    let sizes: Option<FileSizes> = index_names(index, layout)
        .into_iter()
        .map(|name| {
            let size = storage.size(&format!("{dir}/{name}")).ok()?;
            let listed = layout.files.iter().find(|(n, _)| *n == name);
            (size <= limit && listed.is_none_or(|(_, l)| *l == size)).then_some((name, size))
        })
        .collect();
    if let Some(stored) = sizes
        .as_ref()
        .and_then(|sizes| decoded.index(dir, sizes, &request))
    {
        return Ok((stored, sizes.unwrap_or_default()));
    }
    let (stored, sizes) = decode_index_files(storage, dir, layout, index, schema, limit, field)?;
    decoded.keep_index(dir, sizes.clone(), request, stored.clone());
    Ok((stored, sizes))
}

/// The names of the files an index's read opens: those its kind needs and those its layout
/// lists, in name order.
pub(crate) fn index_names(index: &Index, layout: &IndexLayout) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = index_file_names(index.kind)
        .iter()
        .map(|n| (*n).to_string())
        .collect();
    names.extend(layout.files.iter().map(|(n, _)| n.clone()));
    names
}

fn decode_index_files(
    storage: &dyn Storage,
    dir: &str,
    layout: &IndexLayout,
    index: &Index,
    schema: &Schema,
    limit: u64,
    field: &str,
) -> Result<(StoredEntries, FileSizes), DatasetError> {
    let index_error = |error| DatasetError::IndexFile {
        field: field.to_string(),
        error: Box::new(error),
    };
    let names = index_names(index, layout);
    let mut files = BTreeMap::new();
    let mut sizes = Vec::new();
    for name in names {
        let rel = format!("{dir}/{name}");
        let bytes = read_bounded(storage, &rel, limit, &format!("{field}.files"))?;
        if let Some((_, listed)) = layout.files.iter().find(|(n, _)| *n == name) {
            if *listed != bytes.len() as u64 {
                return Err(index_error(IndexFileError::SizeMismatch {
                    file: rel,
                    listed: *listed,
                    actual: bytes.len() as u64,
                }));
            }
        }
        sizes.push((name.clone(), bytes.len() as u64));
        files.insert(name, bytes);
    }
    let key_type = index_key_type(index, schema, dir).map_err(index_error)?;
    let stored = match (index.kind, &key_type) {
        (IndexKind::BTree, t) => read_btree(&files, t).map(StoredEntries::Values),
        (IndexKind::Vector, DataType::FixedSizeList { dimension }) => {
            read_vector_index(&files, *dimension)
        }
        (IndexKind::Vector, t) => Err(IndexFileError::Unsupported {
            file: dir.to_string(),
            feature: format!("a vector index keyed on {}", t.logical_type()),
        }),
    };
    // Errors inside one file name that file; prefix the directory.
    let stored = stored.map_err(|e| index_error(in_dir(dir, e)))?;
    Ok((stored, sizes))
}

pub(crate) fn in_dir(dir: &str, e: IndexFileError) -> IndexFileError {
    let at = |file: String| format!("{dir}/{file}");
    match e {
        IndexFileError::Layout { file, problem } => IndexFileError::Layout {
            file: at(file),
            problem,
        },
        IndexFileError::LookupMismatch {
            file,
            page,
            problem,
        } => IndexFileError::LookupMismatch {
            file: at(file),
            page,
            problem,
        },
        IndexFileError::Unsorted {
            file,
            row,
            previous,
        } => IndexFileError::Unsorted {
            file: at(file),
            row,
            previous,
        },
        IndexFileError::DuplicateId { file, id } => {
            IndexFileError::DuplicateId { file: at(file), id }
        }
        IndexFileError::Unsupported { file, feature } => IndexFileError::Unsupported {
            file: at(file),
            feature,
        },
        other => other,
    }
}

/// The entries of the `remapped` fragments of `now` from their stored pairs (`stored`, by
/// fragment and offset) ([IDX-READ-9]): every live row of such a fragment has one, holding the
/// row's value, except the rows its overlays cover for a field related to the index (all of
/// them newer than the index): those are in the exclusion set ([OVL-IDX-1]), so their entries
/// are never used and may hold the base value (a remap) or the overlaid one (an incremental
/// index update). An entry for a row deleted since is dropped, as deletions apply to an
/// index's answers ([IDX-READ-5]). A quantized entry (`None`: an IVF_PQ code) holds no value to
/// compare; it takes the row's value, or NULL in the exclusion set, where it is never used.
fn remapped_entries(
    now: &Snapshot,
    remapped: &[&Fragment],
    index: &Index,
    mut stored: BTreeMap<(u64, u32), Option<Value>>,
) -> Result<Vec<IndexEntry>, Checked> {
    if remapped.is_empty() {
        return Ok(Vec::new());
    }
    let mut excluded: BTreeMap<u64, roaring::RoaringBitmap> = BTreeMap::new();
    let mut entries = Vec::new();
    for f in remapped {
        let set = exclusion_set(&now.schema, index, f);
        for offset in &set {
            if let Some(value) = stored.remove(&(f.id, offset)) {
                entries.push(IndexEntry {
                    fragment: f.id,
                    offset,
                    value: value.unwrap_or(Value::Null),
                });
            }
        }
        excluded.insert(f.id, set);
    }
    let as_stored = Snapshot {
        fragments: remapped
            .iter()
            .map(|f| {
                let mut f = (*f).clone();
                f.overlays.clear();
                f
            })
            .collect(),
        version: now.version,
        schema: now.schema.clone(),
        indices: Vec::new(),
        config: BTreeMap::new(),
        stable_row_ids: now.stable_row_ids,
        next_row_id: now.next_row_id,
        reader_flags: now.reader_flags,
        writer_flags: now.writer_flags,
    };
    let rebuilt = index_entries(&as_stored, index).map_err(Checked::Model)?;
    for e in rebuilt {
        if excluded
            .get(&e.fragment)
            .is_some_and(|set| set.contains(e.offset))
        {
            continue;
        }
        let Some(value) = stored.remove(&(e.fragment, e.offset)) else {
            return Err(Checked::Index(IndexFileError::MissingEntry {
                index: index.name.clone(),
                fragment: e.fragment,
                offset: e.offset,
                remapped: true,
            }));
        };
        let value = value.unwrap_or_else(|| e.value.clone());
        if !value.identical(&e.value) {
            return Err(Checked::Index(stale_entry(
                index,
                &e,
                &value,
                index.dataset_version,
                true,
            )));
        }
        entries.push(IndexEntry {
            fragment: e.fragment,
            offset: e.offset,
            value,
        });
    }
    let deleted = |(fragment, offset): &(u64, u32)| {
        remapped
            .iter()
            .any(|f| f.id == *fragment && f.deletions.contains(*offset))
    };
    if let Some((row, value)) = stored.into_iter().find(|(k, _)| !deleted(k)) {
        return Err(Checked::Index(unclaimed_entry(
            index,
            row,
            stored_text(value.as_ref()),
            index.dataset_version,
            true,
        )));
    }
    entries.sort_by_key(|e| (e.fragment, e.offset));
    Ok(entries)
}

/// Every row of `fragments` by its stable row id: (fragment id, offset).
fn rows_by_row_id<'a>(
    fragments: impl Iterator<Item = &'a Fragment>,
) -> Result<BTreeMap<u64, (u64, u32)>, Checked> {
    let mut out = BTreeMap::new();
    for f in fragments {
        let ids = f.lineage_slice(ROW_ID_FIELD_ID).map_err(Checked::Model)?;
        for (offset, &id) in ids.unwrap_or_default().iter().enumerate() {
            out.insert(id, (f.id, offset as u32));
        }
    }
    Ok(out)
}

/// A stored value as an error names it (a quantized entry has none).
pub(crate) fn stored_text(value: Option<&Value>) -> String {
    value.map_or_else(|| "a quantized code".into(), Value::to_string)
}

/// The [`IndexFileError::StaleEntry`] of a stored entry holding `stored` where the rebuilt entry
/// `e` holds the row's value: its value at `dataset_version`, or, for a fragment covered after
/// the build (`remapped`), its value now.
pub(crate) fn stale_entry(
    index: &Index,
    e: &IndexEntry,
    stored: &Value,
    dataset_version: u64,
    remapped: bool,
) -> IndexFileError {
    IndexFileError::StaleEntry {
        index: index.name.clone(),
        fragment: e.fragment,
        offset: e.offset,
        stored: stored.to_string(),
        expected: if remapped {
            format!(
                "{} (its value in fragment {}, covered after the build)",
                e.value, e.fragment
            )
        } else {
            e.value.to_string()
        },
        dataset_version,
        remapped,
    }
}

/// The [`IndexFileError::StaleEntry`] of a stored entry (its value as [`stored_text`] names it)
/// at `fragment`, `offset` that no live row's rebuilt entry claims: the index may hold no entry
/// there ([IDX-FILE-5]).
pub(crate) fn unclaimed_entry(
    index: &Index,
    (fragment, offset): (u64, u32),
    stored: String,
    dataset_version: u64,
    remapped: bool,
) -> IndexFileError {
    IndexFileError::StaleEntry {
        index: index.name.clone(),
        fragment,
        offset,
        stored,
        expected: "no entry (the index holds no vector with a NULL or NaN item, IDX-FILE-5)".into(),
        dataset_version,
        remapped,
    }
}

/// Why [`checked_entries`] refused.
pub(crate) enum Checked {
    Model(lance_reference::Error),
    Index(IndexFileError),
}

impl Checked {
    /// The refusal as the dataset's error, for the index at `field` (`"<file>: indices[n]"`).
    pub(crate) fn at(self, field: &str) -> DatasetError {
        match self {
            Checked::Model(error) => DatasetError::Model {
                file: field.to_string(),
                error: Box::new(error),
            },
            Checked::Index(error) => DatasetError::IndexFile {
                field: field.to_string(),
                error: Box::new(error),
            },
        }
    }
}

/// Whether a BTree of `index_version` stores row addresses (1) or row ids (0, absent).
pub(crate) fn stores_addresses(
    index: &Index,
    layout: &IndexLayout,
) -> Result<bool, IndexFileError> {
    let version = layout.index_version.unwrap_or(0);
    let (max, kind) = match index.kind {
        IndexKind::BTree => (1, "BTree"),
        IndexKind::Vector => (2, "vector"),
    };
    if !(0..=max).contains(&version) {
        return Err(IndexFileError::Unsupported {
            file: index.name.clone(),
            feature: format!("index_version {version} of a {kind} index (at most {max} is read)"),
        });
    }
    Ok(index.kind == IndexKind::BTree && version >= 1)
}

/// The data type of `index`'s key (its first field) in `schema`; an index in `dir` whose key
/// field the schema does not hold is one this reader cannot check.
pub(crate) fn index_key_type(
    index: &Index,
    schema: &Schema,
    dir: &str,
) -> Result<DataType, IndexFileError> {
    index
        .fields
        .first()
        .and_then(|k| schema.field(*k))
        .map(|f| f.data_type.clone())
        .ok_or_else(|| IndexFileError::Unsupported {
            file: dir.to_string(),
            feature: "an index whose key field is not in the schema".into(),
        })
}

/// The row a stored entry's `id` names, `(fragment, offset)`: its address, or with `by_ids` the
/// row holding that row id in a covered fragment at `dataset_version` (`then`), else in a
/// remapped fragment now (`later`), else at `dataset_version` in a fragment the index does not
/// cover. `Ok(None)` for an entry to ignore: a row id assigned after the build that no fragment
/// holds now (`held_now`), a row deleted since (row ids are never reused; [IDX-READ-9]; Lance
/// keeps such entries when a compaction drops the deleted rows of a fragment an incremental
/// update had covered). The error is the problem of an id no row has.
#[allow(clippy::too_many_arguments)]
pub(crate) fn entry_row(
    id: u64,
    by_ids: bool,
    index: &Index,
    then: impl Fn(u64) -> Option<(u64, u32)>,
    later: impl Fn(u64) -> Option<(u64, u32)>,
    held_now: impl Fn(u64) -> bool,
    at_build: &Snapshot,
    now_next_row_id: u64,
) -> Result<Option<(u64, u32)>, String> {
    if !by_ids {
        return Ok(Some((id >> 32, (id & 0xffff_ffff) as u32)));
    }
    let covered_then = then(id).filter(|r| index.covers(r.0));
    match covered_then.or_else(|| later(id)).or_else(|| then(id)) {
        Some(row) => Ok(Some(row)),
        None if (at_build.next_row_id..now_next_row_id).contains(&id) && !held_now(id) => Ok(None),
        None => Err(format!(
            "no row has this row id at dataset_version {} or in a remapped fragment",
            at_build.version
        )),
    }
}

/// Why an index entry at `fragment`, `offset` of a covered (not remapped) fragment names no
/// live row of `at_build`, the version the index was built at: the fragment does not exist
/// there, the offset is past its rows, or the row was deleted by then. `None` when it names one.
pub(crate) fn unplaced(at_build: &Snapshot, fragment: u64, offset: u32) -> Option<String> {
    let Some(f) = at_build.fragments.iter().find(|f| f.id == fragment) else {
        return Some(format!(
            "fragment {fragment} does not exist at dataset_version {}",
            at_build.version
        ));
    };
    if u64::from(offset) >= f.physical_rows {
        return Some(format!(
            "offset {offset} is past fragment {fragment}'s {} rows",
            f.physical_rows
        ));
    }
    f.deletions.contains(offset).then(|| {
        format!(
            "fragment {fragment} offset {offset} was deleted at dataset_version {}",
            at_build.version
        )
    })
}

/// The entries of `index` from its stored pairs, checked against `at_build` (the version the
/// index claims) and, for remapped fragments, against `now` (the version read): see the module
/// docs.
pub(crate) fn checked_entries(
    at_build: &Snapshot,
    now: &Snapshot,
    index: &Index,
    layout: &IndexLayout,
    stored: Vec<(u64, Option<Value>)>,
) -> Result<Vec<IndexEntry>, Checked> {
    let unknown = |id: u64, problem: String| {
        Checked::Index(IndexFileError::UnknownRow {
            index: index.name.clone(),
            id,
            problem,
        })
    };
    let addresses = stores_addresses(index, layout).map_err(Checked::Index)?;
    // Covered fragments of the version read that did not exist at `dataset_version`: covered
    // after the build (a compaction remapped the index into them, or an incremental update
    // added them), judged against the version read ([IDX-READ-4], [IDX-READ-9]).
    let remapped: Vec<&Fragment> = now
        .fragments
        .iter()
        .filter(|f| index.fragment_bitmap.is_some() && index.covers(f.id))
        .filter(|f| !at_build.fragments.iter().any(|b| b.id == f.id))
        .collect();
    let by_ids = !addresses && at_build.stable_row_ids;
    let (then, later) = if by_ids {
        (
            rows_by_row_id(at_build.fragments.iter())?,
            rows_by_row_id(remapped.iter().copied())?,
        )
    } else {
        (BTreeMap::new(), BTreeMap::new())
    };
    // Every row id the version read holds, when row ids were assigned after the build.
    let held_now = if by_ids && now.next_row_id > at_build.next_row_id {
        rows_by_row_id(now.fragments.iter())?
    } else {
        BTreeMap::new()
    };
    let mut rows: BTreeMap<(u64, u32), Option<Value>> = BTreeMap::new();
    let mut remapped_rows: BTreeMap<(u64, u32), Option<Value>> = BTreeMap::new();
    for (id, value) in stored {
        let placed = entry_row(
            id,
            by_ids,
            index,
            |id| then.get(&id).copied(),
            |id| later.get(&id).copied(),
            |id| held_now.contains_key(&id),
            at_build,
            now.next_row_id,
        );
        let Some((fragment, offset)) = placed.map_err(|problem| unknown(id, problem))? else {
            continue;
        };
        if !index.covers(fragment) {
            continue;
        }
        if let Some(f) = remapped.iter().find(|f| f.id == fragment) {
            if u64::from(offset) >= f.physical_rows {
                return Err(unknown(
                    id,
                    format!(
                        "offset {offset} is past remapped fragment {fragment}'s {} rows",
                        f.physical_rows
                    ),
                ));
            }
            remapped_rows.insert((fragment, offset), value);
            continue;
        }
        if let Some(problem) = unplaced(at_build, fragment, offset) {
            return Err(unknown(id, problem));
        }
        rows.insert((fragment, offset), value);
    }
    // A remapped fragment the files hold nothing for is coverage the index never had.
    if let Some(f) = remapped
        .iter()
        .find(|f| !remapped_rows.keys().any(|(id, _)| *id == f.id))
    {
        return Err(Checked::Index(IndexFileError::CoverageWithoutEntries {
            index: index.name.clone(),
            fragment: f.id,
            dataset_version: at_build.version,
        }));
    }
    let rebuilt = index_entries(at_build, index).map_err(Checked::Model)?;
    let mut entries = Vec::with_capacity(rebuilt.len());
    for e in rebuilt {
        let Some(value) = rows.remove(&(e.fragment, e.offset)) else {
            return Err(Checked::Index(IndexFileError::MissingEntry {
                index: index.name.clone(),
                fragment: e.fragment,
                offset: e.offset,
                remapped: false,
            }));
        };
        // A quantized entry stands for the row's vector ([`StoredEntries::Quantized`]).
        let value = value.unwrap_or_else(|| e.value.clone());
        if !value.identical(&e.value) {
            return Err(Checked::Index(stale_entry(
                index,
                &e,
                &value,
                at_build.version,
                false,
            )));
        }
        entries.push(IndexEntry {
            fragment: e.fragment,
            offset: e.offset,
            value,
        });
    }
    entries.extend(remapped_entries(now, &remapped, index, remapped_rows)?);
    if let Some((row, value)) = rows.into_iter().next() {
        return Err(Checked::Index(unclaimed_entry(
            index,
            row,
            stored_text(value.as_ref()),
            at_build.version,
            false,
        )));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use arrow_array::{Int64Array, StringArray};

    use super::*;

    #[test]
    fn values_under_an_absent_struct_read_as_null() {
        let present = NullBuffer::from(vec![true, false, true, true]);
        let values: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(2), None, Some(4)]));
        let read = null_where_absent(values, &present).unwrap();
        let want = Int64Array::from(vec![Some(1), None, None, Some(4)]);
        assert_eq!(read.as_ref(), &want as &dyn Array);

        let values: ArrayRef = Arc::new(StringArray::from(vec!["a", "b", "c", "d"]).slice(0, 4));
        let read = null_where_absent(values, &present).unwrap();
        let want = StringArray::from(vec![Some("a"), None, Some("c"), Some("d")]);
        assert_eq!(read.as_ref(), &want as &dyn Array);
        // A layer where every struct is present leaves no validity behind.
        let all = NullBuffer::new_valid(4);
        let values: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3, 4]));
        assert!(null_where_absent(values, &all).unwrap().nulls().is_none());
    }

    #[test]
    fn a_layer_of_another_length_is_a_problem_not_a_panic() {
        let present = NullBuffer::from(vec![true, false]);
        let values: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3]));
        let problem = null_where_absent(values, &present).unwrap_err();
        assert_eq!(problem, "2 struct validity bits for 3 values");
    }
}
