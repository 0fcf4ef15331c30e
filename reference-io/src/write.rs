//! Writing one version of a dataset directory: the data, overlay, lineage and deletion files a
//! snapshot references, then its manifest.
//!
//! Invariant: [`write_version`] (a local directory) and [`write_version_in`] (any
//! [`StorageWrite`], e.g. memory) are deterministic (no clock, no randomness: identical input
//! gives byte-identical files) and never overwrites a file with different content. It writes
//! nothing before the snapshot has passed [`Snapshot::validate`] and
//! [`lance_reference::flags::check_written_flags`], and the manifest last, so a failure leaves at worst
//! unreferenced data files, never a manifest pointing at missing ones.
//!
//! # Naming
//!
//! | file | name |
//! |---|---|
//! | data, overlay and lineage files | whatever `DataFile.path` says (relative to `data/`); builders name them `data/<content_name(bytes)>.lance` with [`content_file_name`] / [`name_files_by_content`] |
//! | deletion files | `_deletions/{fragment}-0-{id}.{arrow,bin}`, `id` = the first 8 bytes (LE) of SHA-256 over the file's bytes; `read_version` is 0 |
//! | manifests | V2: `_versions/{u64::MAX - version:020}.manifest` |
//! | hint | `_versions/latest_version_hint.json` = `{"version":N}` for the newest version present |
//!
//! [`content_name`] is the lowercase hex SHA-256 of the bytes. Because every file name is
//! derived from content, a data file that already exists is expected to hold the same
//! content. It is checked, not rewritten: its columns are decoded exactly as a read would
//! decode them and compared with the snapshot (so a base file whose column was later
//! tombstoned still matches); any difference is [`DatasetError::ExistingFileDiffers`]. A
//! deletion file or manifest that exists must be byte-identical.
//!
//! # What a fresh data file holds
//!
//! One column per `DataFile.fields` position, in order (`column_indices` = 0..n). Each column's
//! file-schema entry is the schema field (a struct child whose parent is not in the same file
//! is written top-level), `_rowid` / `_row_created_at_version` / `_row_last_updated_at_version`
//! (non-nullable `uint64`) for −3 / −4 / −5, and for any other id (tombstone, dropped field) a
//! nullable field named `_field{position}` whose type is taken from the first non-null value
//! (`int32` when there is none). In an overlay value file, a struct position whose column is
//! empty is written as one present struct per covered offset ([`overlay_file_bytes`]): Lance
//! 14 reads a struct child's overlay column only through its parent's.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::codec::{FILE_FORMAT, deletion_layout, encode_manifest, index_layout};
use super::data_file::{ColumnData, DataFileVersion, FileExtras, write_data_file_in};
use super::deletion::{DeletionFileType, lance_file_type, write_deletion_file};
use super::error::DatasetError;
use super::index_file::{DEFAULT_BATCH_SIZE, btree_files, index_dir, ivf_files};
use super::layout::{DataFormat, FileLayout, FragmentLayout, Layout};
use super::manifest_file::encode_manifest_file;
use super::paths::{DATA_DIR, data_file_path};
use super::read::{index_file_names, read_file_columns, reads_position};
use super::storage::{LocalStorage, StorageError, StorageWrite};
use super::version_names::{
    DETACHED_VERSION_MASK, NamingScheme, VERSION_HINT_FILE, VERSIONS_DIR, list_versions_in,
    manifest_name, version_hint,
};
use lance_reference::flags::{
    FLAG_MIXED_DATA_FILE_VERSIONS, FileFormatVersion, check_written_flags, mixed_versions,
    required_flags, set_mixed_versions_flag,
};
use lance_reference::model::{
    CREATED_AT_FIELD_ID, Column, Coverage, DataFile, DataType, Field, Index, IndexKind,
    LAST_UPDATED_AT_FIELD_ID, Overlay, ROW_ID_FIELD_ID, Schema, Snapshot, Value,
};

/// Which flag words a written manifest carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlagPolicy {
    /// Recompute both words from the content ([`lance_reference::flags::required_flags`]), as Lance
    /// does at every commit. Bit 256 (mixed data file versions), which the snapshot's content
    /// cannot decide, is kept when the snapshot sets it (sticky, FLG-WRITE-9) and set in both
    /// words when the files written are mixed (FLG-WRITE-8).
    #[default]
    Recompute,
    /// Write the snapshot's stored words (still checked by
    /// [`lance_reference::flags::check_written_flags`]).
    AsStored,
}

/// Choices a writer makes that the snapshot does not decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOptions {
    /// The deletion file form for every fragment; `None` follows Lance's rule
    /// ([`crate::deletion::lance_file_type`]: `.arrow` below 5000 deletions, `.bin`
    /// from 5000).
    pub deletion_form: Option<DeletionFileType>,
    /// Per-fragment overrides of [`WriteOptions::deletion_form`].
    pub deletion_forms: BTreeMap<u64, DeletionFileType>,
    /// Whether to (re)write `_versions/latest_version_hint.json`.
    pub version_hint: bool,
    /// Which flag words to write.
    pub flags: FlagPolicy,
    /// The format of every data file written (base, lineage and overlay value files), recorded
    /// in each `DataFile` and in `data_format.version`. In v2.2 a struct field takes no column:
    /// its positions are left out of `DataFile.fields` (and a sparse overlay's
    /// `offset_bitmaps`) in the manifest, while the file schema still lists it.
    pub data_file_version: DataFileVersion,
    /// Per-file overrides of [`WriteOptions::data_file_version`], keyed by `DataFile.path`: a
    /// file named here is written (or checked) in this version, and a manifest whose files
    /// then differ from the dataset's version is a mixed one (bit 256 in both words).
    pub file_versions: BTreeMap<String, DataFileVersion>,
}

impl WriteOptions {
    /// The version the data file at `path` is written in.
    pub fn version_of(&self, path: &str) -> DataFileVersion {
        self.file_versions
            .get(path)
            .copied()
            .unwrap_or(self.data_file_version)
    }
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            deletion_form: None,
            deletion_forms: BTreeMap::new(),
            version_hint: true,
            flags: FlagPolicy::Recompute,
            data_file_version: DataFileVersion::V2_0,
            file_versions: BTreeMap::new(),
        }
    }
}

/// The lowercase hex SHA-256 of `bytes`.
pub fn content_name(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The first 8 bytes (little-endian) of SHA-256 over `bytes`: a deletion file's `id`.
fn content_id(bytes: &[u8]) -> u64 {
    let digest = Sha256::digest(bytes);
    let mut id = [0u8; 8];
    id.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(id)
}

fn lineage_name(id: i32) -> Option<&'static str> {
    match id {
        ROW_ID_FIELD_ID => Some("_rowid"),
        CREATED_AT_FIELD_ID => Some("_row_created_at_version"),
        LAST_UPDATED_AT_FIELD_ID => Some("_row_last_updated_at_version"),
        _ => None,
    }
}

fn inferred_type(values: &[Value]) -> DataType {
    match values.iter().find(|v| !v.is_null()) {
        Some(Value::Bool(_)) => DataType::Bool,
        Some(Value::Int64(_)) => DataType::Int64,
        Some(Value::UInt64(_)) => DataType::UInt64,
        Some(Value::Float32(_)) => DataType::Float32,
        Some(Value::Float64(_)) => DataType::Float64,
        Some(Value::Utf8(_)) => DataType::Utf8,
        Some(Value::Vector(v)) => DataType::FixedSizeList {
            dimension: v.len().max(1) as u32,
        },
        Some(Value::Struct(_)) => DataType::Struct,
        Some(Value::Int32(_)) | Some(Value::Null) | None => DataType::Int32,
    }
}

/// The file-schema entry of position `pos` of `file` (see the module docs).
fn column_field(schema: &Schema, file: &DataFile, pos: usize, id: i32, values: &[Value]) -> Field {
    if let Some(f) = schema.field(id) {
        let mut f = f.clone();
        if f.parent_id != -1 && !file.fields[..pos].contains(&f.parent_id) {
            f.parent_id = -1;
        }
        return f;
    }
    if let Some(name) = lineage_name(id) {
        // A hidden lineage column is uint64. Other values under a lineage id come only from
        // an overlay position relabelled by a non-conforming writer (case `relabel`), and
        // keep their own type.
        let foreign = values
            .iter()
            .any(|v| !v.is_null() && !matches!(v, Value::UInt64(_)));
        return Field {
            id,
            parent_id: -1,
            name: name.into(),
            data_type: if foreign {
                inferred_type(values)
            } else {
                DataType::UInt64
            },
            nullable: foreign,
        };
    }
    Field {
        id,
        parent_id: -1,
        name: format!("_field{pos}"),
        data_type: inferred_type(values),
        nullable: true,
    }
}

/// The bytes of a fresh Lance v2.0 data file holding `file`'s columns.
pub fn data_file_bytes(schema: &Schema, file: &DataFile) -> Result<Vec<u8>, DatasetError> {
    data_file_bytes_in(DataFileVersion::V2_0, schema, file)
}

/// [`data_file_bytes`] in format `version`. In v2.2 a struct position of `file` gives the file
/// schema its entry but no column.
pub fn data_file_bytes_in(
    version: DataFileVersion,
    schema: &Schema,
    file: &DataFile,
) -> Result<Vec<u8>, DatasetError> {
    if file.fields.len() != file.columns.len() {
        return Err(DatasetError::Unwritable {
            what: format!("data file {:?}", file.path),
            problem: format!(
                "{} fields but {} columns",
                file.fields.len(),
                file.columns.len()
            ),
        });
    }
    let columns: Vec<ColumnData> = file
        .fields
        .iter()
        .zip(&file.columns)
        .enumerate()
        .map(|(pos, (&id, column))| {
            let values = column.values();
            ColumnData::new(column_field(schema, file, pos, id, &values), values)
        })
        .collect();
    write_data_file_in(version, &columns, &FileExtras::default()).map_err(|error| {
        DatasetError::DataFile {
            field: format!("data file {:?}", file.path),
            error: Box::new(error),
        }
    })
}

/// The bytes of a fresh overlay value file. A struct position carries no cell values (a read
/// leaves it empty) but Lance 14 needs the struct's column beside its children's, so an empty
/// struct column is written as one present struct per offset its coverage holds.
pub fn overlay_file_bytes(schema: &Schema, overlay: &Overlay) -> Result<Vec<u8>, DatasetError> {
    overlay_file_bytes_in(DataFileVersion::V2_0, schema, overlay)
}

/// [`overlay_file_bytes`] in format `version`.
pub fn overlay_file_bytes_in(
    version: DataFileVersion,
    schema: &Schema,
    overlay: &Overlay,
) -> Result<Vec<u8>, DatasetError> {
    let mut file = overlay.file.clone();
    for (pos, (&id, column)) in overlay
        .file
        .fields
        .iter()
        .zip(file.columns.iter_mut())
        .enumerate()
    {
        let is_struct = schema
            .field(id)
            .is_some_and(|f| f.data_type == DataType::Struct);
        if is_struct && column.is_empty() {
            let covered = overlay.coverage.at(pos).map_or(0, |b| b.len());
            let present: Vec<Value> = (0..covered).map(|_| Value::Struct(Vec::new())).collect();
            *column =
                Column::of(&DataType::Struct, &present).map_err(|m| DatasetError::Unwritable {
                    what: format!("overlay file {:?}", overlay.file.path),
                    problem: format!("struct field {id}: {m:?}"),
                })?;
        }
    }
    data_file_bytes_in(version, schema, &file)
}

/// True when field `id` is a struct of `schema`.
fn is_struct(schema: &Schema, id: i32) -> bool {
    schema
        .field(id)
        .is_some_and(|f| f.data_type == DataType::Struct)
}

/// `snapshot` as a manifest records it when the files `leaf_only` names are v2.1+ files: every
/// struct position removed from those files' `fields` and `columns`, and from a sparse
/// overlay's per-position bitmaps (a struct takes no column from v2.1 on; its validity is
/// written into the layers of the leaves below it). Other files keep their struct positions (v2.0).
pub fn leaf_positions_only(snapshot: &Snapshot, leaf_only: &dyn Fn(&str) -> bool) -> Snapshot {
    let mut out = snapshot.clone();
    let schema = snapshot.schema.clone();
    let keep = |file: &DataFile| -> Vec<bool> {
        let only = leaf_only(&file.path);
        file.fields
            .iter()
            .map(|&id| !(only && is_struct(&schema, id)))
            .collect()
    };
    let retain = |file: &mut DataFile, keep: &[bool]| {
        let mut k = keep.iter();
        file.fields.retain(|_| k.next().copied().unwrap_or(true));
        let mut k = keep.iter();
        file.columns.retain(|_| k.next().copied().unwrap_or(true));
    };
    for fragment in &mut out.fragments {
        for file in &mut fragment.files {
            let kept = keep(file);
            retain(file, &kept);
        }
        for overlay in &mut fragment.overlays {
            let kept = keep(&overlay.file);
            retain(&mut overlay.file, &kept);
            if let Coverage::Sparse(bitmaps) = &mut overlay.coverage {
                let mut k = kept.iter();
                bitmaps.retain(|_| k.next().copied().unwrap_or(true));
            }
        }
    }
    out
}

/// `<content_name>.lance` for the bytes [`data_file_bytes`] gives `file`.
pub fn content_file_name(schema: &Schema, file: &DataFile) -> Result<String, DatasetError> {
    Ok(format!(
        "{}.lance",
        content_name(&data_file_bytes(schema, file)?)
    ))
}

/// Gives every data file (base, lineage, overlay) whose `path` is empty its content-derived
/// name (`<content_name(bytes)>.lance`, bytes from [`data_file_bytes`] or
/// [`overlay_file_bytes`]); named files are left alone.
pub fn name_files_by_content(snapshot: &mut Snapshot) -> Result<(), DatasetError> {
    let schema = snapshot.schema.clone();
    for fragment in &mut snapshot.fragments {
        for file in fragment.files.iter_mut().filter(|f| f.path.is_empty()) {
            file.path = content_file_name(&schema, file)?;
        }
        for overlay in fragment
            .overlays
            .iter_mut()
            .filter(|o| o.file.path.is_empty())
        {
            overlay.file.path = format!(
                "{}.lance",
                content_name(&overlay_file_bytes(&schema, overlay)?)
            );
        }
    }
    Ok(())
}

/// `snapshot` with the flag words `policy` writes; `mixed` says whether the data files
/// written are of mixed versions ([`lance_reference::flags::mixed_versions`]).
pub fn with_written_flags(snapshot: &Snapshot, policy: FlagPolicy, mixed: bool) -> Snapshot {
    let mut out = snapshot.clone();
    if policy == FlagPolicy::Recompute {
        let (reader, writer) = required_flags(snapshot);
        // Bit 256 is no content bit: kept when set (FLG-WRITE-9), set when mixed (FLG-WRITE-8).
        out.reader_flags = reader | (snapshot.reader_flags & FLAG_MIXED_DATA_FILE_VERSIONS);
        out.writer_flags = writer | (snapshot.writer_flags & FLAG_MIXED_DATA_FILE_VERSIONS);
        set_mixed_versions_flag(&mut out, mixed);
    }
    out
}

/// Why the data files `options` writes for `snapshot` are mixed, if they are: each file's
/// version against the dataset's. Every manifest written names `data_format` (the codec writes
/// "2.0" for a v2.0 dataset), so a v2.0 dataset whose files all share another version is mixed
/// too (spec feature-flags.md, "Mixed data file versions").
fn written_mixed_versions(snapshot: &Snapshot, options: &WriteOptions) -> Option<String> {
    let pair = |v: DataFileVersion| {
        let (major, minor) = v.manifest_numbers();
        FileFormatVersion::from_pair(major, minor)
    };
    let data_format = Some(pair(options.data_file_version));
    let files: Vec<(String, FileFormatVersion)> = snapshot
        .fragments
        .iter()
        .flat_map(|f| f.files.iter().chain(f.overlays.iter().map(|o| &o.file)))
        .map(|file| (file.path.clone(), pair(options.version_of(&file.path))))
        .collect();
    mixed_versions(data_format, files.iter().map(|(n, v)| (n.as_str(), *v)))
}

fn io_error(file: &str, operation: &'static str, e: StorageError) -> DatasetError {
    DatasetError::Io {
        file: file.to_string(),
        operation,
        problem: e.to_string(),
    }
}

/// The size of the file at `rel`, `None` when there is none.
fn existing_size(storage: &dyn StorageWrite, rel: &str) -> Result<Option<u64>, DatasetError> {
    match storage.size(rel) {
        Ok(size) => Ok(Some(size)),
        Err(StorageError::NotFound) => Ok(None),
        Err(e) => Err(io_error(rel, "stat", e)),
    }
}

/// The whole file at `rel`, `None` when there is none.
fn existing_bytes(storage: &dyn StorageWrite, rel: &str) -> Result<Option<Vec<u8>>, DatasetError> {
    let Some(size) = existing_size(storage, rel)? else {
        return Ok(None);
    };
    storage
        .read_range(rel, 0..size)
        .map(Some)
        .map_err(|e| io_error(rel, "read", e))
}

/// Writes `bytes` at `rel` unless a file is there; an existing file must be byte-identical.
fn write_new_or_same(
    storage: &dyn StorageWrite,
    rel: &str,
    bytes: &[u8],
) -> Result<(), DatasetError> {
    match existing_bytes(storage, rel)? {
        Some(existing) if existing == bytes => Ok(()),
        Some(existing) => Err(DatasetError::ExistingFileDiffers {
            file: rel.to_string(),
            problem: format!("{} bytes on disk, {} to write", existing.len(), bytes.len()),
        }),
        None => storage
            .write(rel, bytes)
            .map_err(|e| io_error(rel, "write", e)),
    }
}

/// Writes (or checks) one data file and returns its layout; `overlay` is the overlay the file
/// belongs to, if it is a value file.
fn put_data_file(
    storage: &dyn StorageWrite,
    schema: &Schema,
    file: &DataFile,
    overlay: Option<&Overlay>,
    version: DataFileVersion,
    field: &str,
) -> Result<FileLayout, DatasetError> {
    let path = data_file_path(
        &file.path,
        "(snapshot being written)",
        &format!("{field}.path"),
    )?;
    let columns = if version.struct_has_column() {
        file.fields.len()
    } else {
        file.fields
            .iter()
            .filter(|&&id| !is_struct(schema, id))
            .count()
    };
    let (major, minor) = version.manifest_numbers();
    let mut layout = FileLayout {
        path: path.clone(),
        column_indices: (0..columns).map(|i| i as i32).collect(),
        file_major_version: major,
        file_minor_version: minor,
        file_size_bytes: 0,
    };
    let fresh = || match overlay {
        Some(o) => overlay_file_bytes_in(version, schema, o),
        None => data_file_bytes_in(version, schema, file),
    };
    match existing_size(storage, &path)? {
        // A v2.2 file the writer would write again byte for byte is the same file.
        Some(size)
            if version != DataFileVersion::V2_0
                && existing_bytes(storage, &path).ok().flatten() == fresh().ok() =>
        {
            layout.file_size_bytes = size;
        }
        Some(size) => {
            let is_overlay = overlay.is_some();
            // A v2.1+ file is read as its manifest entry records it: leaves only.
            let mut recorded = file.clone();
            if !version.struct_has_column() {
                let keep: Vec<bool> = file
                    .fields
                    .iter()
                    .map(|&id| !is_struct(schema, id))
                    .collect();
                let mut k = keep.iter();
                recorded
                    .fields
                    .retain(|_| k.next().copied().unwrap_or(true));
                let mut k = keep.iter();
                recorded
                    .columns
                    .retain(|_| k.next().copied().unwrap_or(true));
            }
            let stored = read_file_columns(
                storage,
                schema,
                &recorded,
                &layout,
                is_overlay,
                field,
                u64::MAX,
            )?;
            let stored: Vec<Vec<Value>> = stored.iter().map(Column::values).collect();
            if !same_columns(&stored, &masked_columns(schema, &recorded, is_overlay)) {
                return Err(DatasetError::ExistingFileDiffers {
                    file: path,
                    problem: "its decoded columns differ from the snapshot's".into(),
                });
            }
            layout.file_size_bytes = size;
        }
        None => {
            let bytes = fresh()?;
            write_new_or_same(storage, &path, &bytes)?;
            layout.file_size_bytes = bytes.len() as u64;
        }
    }
    Ok(layout)
}

/// `file`'s columns with the positions a read leaves empty emptied (see [`super::read`]).
fn masked_columns(schema: &Schema, file: &DataFile, overlay: bool) -> Vec<Vec<Value>> {
    file.fields
        .iter()
        .zip(&file.columns)
        .map(|(&id, column)| {
            if reads_position(schema, id, overlay) {
                column.values()
            } else {
                Vec::new()
            }
        })
        .collect()
}

fn same_columns(a: &[Vec<Value>], b: &[Vec<Value>]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.len() == y.len() && x.iter().zip(y).all(|(u, v)| u.identical(v)))
}

/// The row address of `(fragment, offset)`: `fragment << 32 | offset`.
pub fn row_address(fragment: u64, offset: u32) -> u64 {
    (fragment << 32) | u64::from(offset)
}

/// The `(id, value)` pairs an index's files store for the entries of `index` in `snapshot`:
/// for a BTree the id is the row address, for a vector index the row id (the fragment's row-id
/// sequence value with stable row ids, else the address). With stable row ids, entries of a
/// fragment `snapshot` no longer holds have no row id to store and are left out.
pub fn stored_entries(
    snapshot: &Snapshot,
    index: &Index,
) -> Result<Vec<(u64, Value)>, DatasetError> {
    let by_row_id = index.kind == IndexKind::Vector && snapshot.stable_row_ids;
    let mut row_ids = BTreeMap::new();
    if by_row_id {
        for f in &snapshot.fragments {
            let values =
                f.lineage_values(ROW_ID_FIELD_ID)
                    .map_err(|error| DatasetError::Model {
                        file: format!("index {:?}", index.name),
                        error: Box::new(error),
                    })?;
            row_ids.insert(f.id, values.unwrap_or_default());
        }
    }
    let mut out = Vec::with_capacity(index.entries.len());
    for e in &index.entries {
        if !by_row_id {
            out.push((row_address(e.fragment, e.offset), e.value.clone()));
            continue;
        }
        let Some(ids) = row_ids.get(&e.fragment) else {
            continue;
        };
        let id = ids
            .get(e.offset as usize)
            .ok_or_else(|| DatasetError::Unwritable {
                what: format!("index {:?}", index.name),
                problem: format!(
                    "fragment {} has no row id for offset {}",
                    e.fragment, e.offset
                ),
            })?;
        out.push((*id, e.value.clone()));
    }
    Ok(out)
}

/// The files the kit writes for `index` over `snapshot` (see [`crate::index_file`]), sorted by
/// name.
pub fn index_files_bytes(
    snapshot: &Snapshot,
    index: &Index,
) -> Result<Vec<(String, Vec<u8>)>, DatasetError> {
    let unwritable = |problem: String| DatasetError::Unwritable {
        what: format!("index {:?}", index.name),
        problem,
    };
    let key = index
        .fields
        .first()
        .and_then(|k| snapshot.schema.field(*k))
        .ok_or_else(|| unwritable("its key field is not in the schema".into()))?;
    let entries = stored_entries(snapshot, index)?;
    let files = match (index.kind, &key.data_type) {
        (IndexKind::BTree, t) => btree_files(t, &entries, DEFAULT_BATCH_SIZE),
        (IndexKind::Vector, DataType::FixedSizeList { dimension }) => {
            ivf_files(*dimension, &entries)
        }
        (IndexKind::Vector, t) => {
            return Err(unwritable(format!(
                "a vector index keyed on {}",
                t.logical_type()
            )));
        }
    };
    files.map_err(|error| DatasetError::IndexFile {
        field: format!("index {:?}", index.name),
        error: Box::new(error),
    })
}

/// Writes the files of index `n` unless its directory holds them already, and returns its
/// layout with the `files` list. Files already there must hold every entry the snapshot's
/// index holds (a later version carries the same index with equal or narrower coverage).
fn put_index(
    storage: &dyn StorageWrite,
    snapshot: &Snapshot,
    index: &Index,
    n: usize,
) -> Result<super::layout::IndexLayout, DatasetError> {
    let mut layout = index_layout(index);
    let dir = index_dir(&layout.uuid);
    // The files of an index already written are checked, not encoded again.
    let mut present = false;
    for name in index_file_names(index.kind) {
        present |= existing_size(storage, &format!("{dir}/{name}"))?.is_some();
    }
    // [IDX-FILE-7]: a build covering no fragment has no entries to store, and gets no files; an
    // index whose coverage narrowed to nothing later keeps the files it has ([IDX-META-2]).
    if index.covers_no_fragment() && !present {
        layout.files = Vec::new();
        return Ok(layout);
    }
    if present {
        let field = format!("indices[{n}]");
        let (stored, sizes) = super::read::read_index_files(
            storage,
            &dir,
            &layout,
            index,
            &snapshot.schema,
            u64::MAX,
            &field,
        )?;
        // The kit writes no quantized index: a code there differs from the vector it wrote.
        let stored: BTreeMap<u64, Option<Value>> = stored.into_pairs().into_iter().collect();
        for (id, value) in stored_entries(snapshot, index)? {
            if !stored
                .get(&id)
                .is_some_and(|v| v.as_ref().is_some_and(|v| v.identical(&value)))
            {
                return Err(DatasetError::ExistingFileDiffers {
                    file: dir,
                    problem: format!("the stored index does not hold {value} for id {id}"),
                });
            }
        }
        layout.files = sizes;
    } else {
        let files = index_files_bytes(snapshot, index)?;
        for (name, bytes) in &files {
            write_new_or_same(storage, &format!("{dir}/{name}"), bytes)?;
        }
        layout.files = files
            .iter()
            .map(|(name, bytes)| (name.clone(), bytes.len() as u64))
            .collect();
    }
    Ok(layout)
}

/// Writes version `snapshot.version` of the dataset at `root` (see the module docs) and
/// returns its layout.
pub fn write_version(
    root: &Path,
    snapshot: &Snapshot,
    options: &WriteOptions,
) -> Result<Layout, DatasetError> {
    write_version_in(&LocalStorage::new(root), snapshot, options)
}

/// Writes version `snapshot.version` of the dataset `storage` holds (a directory, memory) and
/// returns its layout; [`write_version`] is this on a local directory.
pub fn write_version_in(
    storage: &dyn StorageWrite,
    snapshot: &Snapshot,
    options: &WriteOptions,
) -> Result<Layout, DatasetError> {
    let (manifest_path, bytes) = write_files_in(storage, snapshot, options)?;
    // Fill in what the decoder reports, so the returned layout equals a read's.
    let (_, read_layout) = super::codec::decode_manifest(
        &super::manifest_file::decode_manifest_file(&bytes, &manifest_path)?,
        &manifest_path,
        u64::MAX,
    )?;
    Ok(read_layout)
}

/// [`write_version_in`] without the layout: the same files written or checked, the same
/// errors, but the manifest written is not decoded again to report what a read finds. For a
/// caller that reads the version back itself (the `history` fuzz target reads every version it
/// wrote through [`crate::Dataset`]), that decode would be a second one of the same bytes.
pub fn write_version_files_in(
    storage: &dyn StorageWrite,
    snapshot: &Snapshot,
    options: &WriteOptions,
) -> Result<(), DatasetError> {
    write_files_in(storage, snapshot, options).map(|_| ())
}

/// Everything [`write_version_in`] writes; returns the manifest's path and bytes.
fn write_files_in(
    storage: &dyn StorageWrite,
    snapshot: &Snapshot,
    options: &WriteOptions,
) -> Result<(String, Vec<u8>), DatasetError> {
    let version = snapshot.version;
    if version == 0 || version & DETACHED_VERSION_MASK != 0 {
        return Err(DatasetError::Unwritable {
            what: format!("version {version}"),
            problem: "versions start at 1 and must not have bit 63 (detached) set".into(),
        });
    }
    let mixed = written_mixed_versions(snapshot, options);
    let snapshot = with_written_flags(snapshot, options.flags, mixed.is_some());
    let manifest_path = format!("{VERSIONS_DIR}/{}", manifest_name(version));
    check_written_flags(&snapshot).map_err(|error| DatasetError::Flags {
        file: manifest_path.clone(),
        error,
    })?;
    snapshot.validate().map_err(|error| DatasetError::Model {
        file: manifest_path.clone(),
        error: Box::new(error),
    })?;
    for dir in [DATA_DIR, VERSIONS_DIR] {
        storage
            .create_dir(dir)
            .map_err(|e| io_error(dir, "create directory", e))?;
    }
    let existing = list_versions_in(storage)?;
    if let Some(v1) = existing.iter().find(|e| e.scheme == NamingScheme::V1) {
        return Err(DatasetError::MixedNamingSchemes {
            dir: VERSIONS_DIR.into(),
            v1: v1.name.clone(),
            v2: manifest_name(version),
        });
    }
    let mut layout = Layout {
        manifest: manifest_path.clone(),
        ..Layout::default()
    };
    for (i, fragment) in snapshot.fragments.iter().enumerate() {
        let mut fl = FragmentLayout::default();
        for (j, file) in fragment.files.iter().enumerate() {
            let field = format!("fragments[{i}].files[{j}]");
            fl.files.push(put_data_file(
                storage,
                &snapshot.schema,
                file,
                None,
                options.version_of(&file.path),
                &field,
            )?);
        }
        for (k, overlay) in fragment.overlays.iter().enumerate() {
            let field = format!("fragments[{i}].overlays[{k}].data_file");
            fl.overlays.push(put_data_file(
                storage,
                &snapshot.schema,
                &overlay.file,
                Some(overlay),
                options.version_of(&overlay.file.path),
                &field,
            )?);
        }
        if !fragment.deletions.is_empty() {
            let count = fragment.deletions.len();
            let form = options
                .deletion_forms
                .get(&fragment.id)
                .copied()
                .or(options.deletion_form)
                .unwrap_or_else(|| lance_file_type(count));
            let bytes = write_deletion_file(&fragment.deletions, form);
            let deletion = deletion_layout(fragment.id, form, content_id(&bytes), count)?;
            write_new_or_same(storage, &deletion.path, &bytes)?;
            fl.deletion = Some(deletion);
        }
        layout.fragments.push(fl);
    }
    for (n, index) in snapshot.indices.iter().enumerate() {
        layout
            .indices
            .push(put_index(storage, &snapshot, index, n)?);
    }
    if !options.data_file_version.struct_has_column() {
        layout.data_format = Some(DataFormat {
            file_format: FILE_FORMAT.into(),
            version: options.data_file_version.name().into(),
        });
    }
    let leaf_only = |path: &str| !options.version_of(path).struct_has_column();
    let (manifest, section) =
        encode_manifest(&leaf_positions_only(&snapshot, &leaf_only), &layout)?;
    let bytes = encode_manifest_file(&manifest, section.as_ref())?;
    write_new_or_same(storage, &manifest_path, &bytes)?;
    if options.version_hint {
        let newest = existing
            .iter()
            .filter(|e| !e.detached)
            .map(|e| e.version)
            .chain([version])
            .max();
        let hint = version_hint(newest.unwrap_or(version));
        let rel = format!("{VERSIONS_DIR}/{VERSION_HINT_FILE}");
        storage
            .write(&rel, hint.as_bytes())
            .map_err(|e| io_error(&rel, "write", e))?;
    }
    Ok((manifest_path, bytes))
}
