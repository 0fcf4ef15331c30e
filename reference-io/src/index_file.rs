//! The files of an index (`_indices/<uuid>/`): a BTree scalar index and an IVF_FLAT vector
//! index, written as Lance 14.0.2 writes them (the kit's writer uses one partition) and read
//! back, with any partition count, with every check a reader needs before it answers a query
//! from them; and Lance's IVF_PQ vector index, read (never written): its row ids, partition
//! table, PQ parameters and codebook, not its codes ([`read_ivf_pq`] says why). Other vector
//! index types (IVF_SQ, HNSW variants: quantized or graph storage the kit does not read) are
//! refused by name as unsupported.
//!
//! Invariant: [`btree_files`] and [`ivf_files`] are deterministic (sorted metadata, no clock,
//! a fixed centroid) and write exactly the layouts below; [`read_btree`], [`read_ivf`] and
//! [`read_ivf_pq`] accept those layouts, and Lance 14's own files for the same content (whose
//! metadata comes in any order and may carry a training loss), and refuse anything else with an
//! [`IndexFileError`] naming the file. The readers return what the files store per id
//! ([`StoredEntries`]: the value, or nothing but the id for a PQ code); what an id means (row
//! address or row id) and whether the entries agree with the table is decided by
//! [`crate::read`], which knows the manifest and the version the index claims.
//!
//! The layouts (the kit writes BTree and IVF files as Lance v2.0 files ([`crate::data_file`]) and
//! only reads IVF_PQ files):
//!
//! ```text
//! BTree   page_data.lance    values: <key type>, nullable   ids: uint64 (row addresses)
//!                            rows sorted NULLs first, then by value, ties by id
//!         page_lookup.lance  min, max: <key type>, nullable   null_count, page_idx: uint32
//!                            one row per page of batch_size data rows;
//!                            metadata batch_size = "<B>", range_partitioned = "false"
//! IVF     index.idx          __flat_marker: uint64, no rows
//!                            global buffer 1: IVF {offsets [0], lengths [0],
//!                                                  centroids [1, N] FLOAT32 zeros}
//!                            metadata lance:flat = [""], lance:index =
//!                            {"type":"IVF_FLAT","distance_type":"l2"}, lance:ivf = "1"
//!         auxiliary.idx      _rowid: uint64 (row ids)   flat: fixed_size_list<float32, N>
//!                            rows in ascending row id order
//!                            global buffer 1: IVF {offsets [0], lengths [rows]}
//!         (Lance: P partitions, centroids [P, N], lance:flat lists P entries, and
//!          auxiliary.idx holds partition i at rows offsets[i] .. offsets[i] + lengths[i])
//!                            metadata distance_type = "l2", lance:ivf = "1",
//!                            storage_metadata = ["{\"dim\":N}"]
//! IVF_PQ  index.idx          as IVF_FLAT, lance:index = {"type":"IVF_PQ","distance_type":"l2"}
//!         auxiliary.idx      _rowid: uint64 (row ids)
//!                            __pq_code: fixed_size_list<uint8, B> (B = M, or M / 2 for
//!                            4-bit codes), partitions as IVF_FLAT
//!                            global buffer 1: IVF {offsets, lengths}
//!                            global buffer C: codebook Tensor FLOAT32 [2^nbits, N]
//!                            metadata distance_type = "l2", lance:ivf = "1",
//!                            storage_metadata = ["{\"codebook_position\":C,\"nbits\":4|8,
//!                              \"num_sub_vectors\":M,\"dimension\":N,
//!                              \"codebook_tensor\":[],\"transposed\":true}"]
//! ```
//!
//! Lance writes these files in the dataset's data file version (v2.0, or v2.2 by default); the
//! readers take any version [`crate::data_file`] reads.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use prost::Message;

use std::borrow::Cow;

use crate::data_file::container::{Extent, Region};
use crate::data_file::{
    ColumnData, DataFileContents, DataFileError, FileExtras, metadata_start, read_data_file,
    read_data_file_in, write_data_file_with,
};
use lance_reference::model::{Column as StoredColumn, DataType, Field, Value};
use lance_reference::proto::lance::index::pb as ipb;

/// The directory holding every index's files.
pub const INDICES_DIR: &str = "_indices";
/// A BTree's data file.
pub const BTREE_DATA: &str = "page_data.lance";
/// A BTree's page lookup file.
pub const BTREE_LOOKUP: &str = "page_lookup.lance";
/// An IVF index's partition file.
pub const IVF_INDEX: &str = "index.idx";
/// An IVF index's vector storage file.
pub const IVF_STORAGE: &str = "auxiliary.idx";
/// The rows per BTree page when a lookup file does not say (Lance's default).
pub const DEFAULT_BATCH_SIZE: u64 = 4096;
/// `lance:index` of the vector index the kit writes.
pub const IVF_FLAT_INDEX_META: &str = r#"{"type":"IVF_FLAT","distance_type":"l2"}"#;

/// What is wrong with an index's files.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexFileError {
    /// A file's size differs from the size the manifest's `files` list gives it.
    #[error("{file}: the manifest lists {listed} bytes, the file has {actual}")]
    SizeMismatch {
        /// The file.
        file: String,
        /// `IndexFile.size_bytes`.
        listed: u64,
        /// The bytes on disk.
        actual: u64,
    },
    /// A file is not a Lance file the reader can parse.
    #[error("{error}")]
    DataFile {
        /// The data-file reader's error (it names the file).
        error: DataFileError,
    },
    /// A file parses but is not laid out as its kind requires (columns, types, metadata,
    /// partition buffers).
    #[error("{file}: {problem}")]
    Layout {
        /// The file.
        file: String,
        /// What is wrong.
        problem: String,
    },
    /// A BTree lookup row does not describe its page of data rows.
    #[error("{file}: page {page}: {problem}")]
    LookupMismatch {
        /// The lookup file.
        file: String,
        /// The page (lookup row).
        page: u64,
        /// What differs.
        problem: String,
    },
    /// BTree data rows are out of order.
    #[error("{file}: row {row} sorts before row {previous}")]
    Unsorted {
        /// The data file.
        file: String,
        /// The first row out of order.
        row: u64,
        /// The row before it.
        previous: u64,
    },
    /// Two stored rows carry the same id.
    #[error("{file}: id {id} is stored twice")]
    DuplicateId {
        /// The file.
        file: String,
        /// The id.
        id: u64,
    },
    /// A stored id names no row the index may hold (no such fragment or offset at the
    /// index's `dataset_version`, or a row that was deleted then).
    #[error("index {index:?}: stored id {id}: {problem}")]
    UnknownRow {
        /// The index name.
        index: String,
        /// The stored id (row address or row id).
        id: u64,
        /// Why it names no row.
        problem: String,
    },
    /// A row of a fragment in `fragment_bitmap` has no entry in the files.
    #[error(
        "index {index:?}: fragment {fragment} offset {offset} is covered (fragment_bitmap) but the index files hold no entry for it"
    )]
    MissingEntry {
        /// The index name.
        index: String,
        /// Fragment id.
        fragment: u64,
        /// Physical offset.
        offset: u32,
        /// Whether the fragment is remapped (it did not exist at `dataset_version`, and the
        /// files hold entries for it): judged by [IDX-READ-9], else by [IDX-READ-3].
        remapped: bool,
    },
    /// `fragment_bitmap` names a fragment the table holds now that did not exist at the
    /// index's `dataset_version`: the index claims rows it never saw.
    #[error(
        "index {index:?}: fragment_bitmap covers fragment {fragment}, which did not exist at dataset_version {dataset_version}, so the index files hold nothing for its rows"
    )]
    CoverageWithoutEntries {
        /// The index name.
        index: String,
        /// Fragment id.
        fragment: u64,
        /// The version the index claims.
        dataset_version: u64,
    },
    /// A stored value differs from the row's value at the index's `dataset_version`.
    #[error(
        "index {index:?}: fragment {fragment} offset {offset} stores {stored}, but the row held {expected} at dataset_version {dataset_version}"
    )]
    StaleEntry {
        /// The index name.
        index: String,
        /// Fragment id.
        fragment: u64,
        /// Physical offset.
        offset: u32,
        /// The stored value.
        stored: String,
        /// The value at `dataset_version` (for a remapped fragment: its base value now).
        expected: String,
        /// The version the index claims.
        dataset_version: u64,
        /// Whether the fragment is remapped ([IDX-READ-9]; else [IDX-READ-3]).
        remapped: bool,
    },
    /// A part of an index file could not be read (the storage failed, or the file is shorter
    /// than it was when its size was taken).
    #[error("{file}: reading bytes {start}..{end}: {problem}")]
    Io {
        /// The file.
        file: String,
        /// The first byte asked for.
        start: u64,
        /// The byte after the last one asked for.
        end: u64,
        /// What the storage said.
        problem: String,
    },
    /// An index this reader does not read (`index_version`, a layout option, a key type).
    #[error("{file}: unsupported: {feature}")]
    Unsupported {
        /// The file or manifest field.
        file: String,
        /// What is not supported.
        feature: String,
    },
}

lance_reference::error_codes! {IndexFileError {
    IndexFileError::SizeMismatch { .. } => code("index_file_size_mismatch", Malformed, "An index file's size differs from its `IndexMetadata.files` entry"),
    IndexFileError::DataFile { error } => wraps(error: DataFileError),
    IndexFileError::Layout { .. } => code("index_file_layout", Malformed, "An index file is not laid out as its kind requires (columns, types, metadata, partition buffers)"),
    IndexFileError::LookupMismatch { .. } => code("btree_lookup_mismatch", Invalid, "A BTree lookup row does not describe its page (first value, last value, NULL count, page number)"),
    IndexFileError::Unsorted { .. } => code("btree_unsorted", Invalid, "BTree data rows are not sorted NULLs first, then by value"),
    IndexFileError::DuplicateId { .. } => code("index_duplicate_id", Invalid, "An index file stores one row id or address twice"),
    IndexFileError::UnknownRow { .. } => code("index_entry_unknown_row", Invalid, "An index entry names no row the index may hold at its `dataset_version`"),
    IndexFileError::MissingEntry { .. } => code("index_entry_missing", Invalid, "A row of a fragment in `fragment_bitmap` has no entry in the index files"),
    IndexFileError::CoverageWithoutEntries { .. } => code("index_coverage_without_entries", Invalid, "`fragment_bitmap` names a fragment of the table that did not exist at the index's `dataset_version`"),
    IndexFileError::StaleEntry { .. } => code("index_entry_mismatch", Invalid, "An index entry's value differs from the row's value at the index's `dataset_version`"),
    IndexFileError::Io { .. } => code("index_file_io", Malformed, "A part of an index file could not be read from the storage"),
    IndexFileError::Unsupported { .. } => code("index_unsupported", UnsupportedFeature, "An index version, layout option or key type this reader does not read"),
}}

/// The hyphenated lowercase text form of a uuid (the index's directory name).
pub fn uuid_string(uuid: &[u8; 16]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    // Built in one allocation: every read and write of a version names each index's
    // directory, and the `history` fuzz target does that thousands of times a second.
    let mut out = String::with_capacity(36);
    for (i, b) in uuid.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    out
}

/// `_indices/<uuid>`: the directory of an index's files, relative to the dataset root.
pub fn index_dir(uuid: &[u8; 16]) -> String {
    format!("{INDICES_DIR}/{}", uuid_string(uuid))
}

/// The order of BTree data rows: NULL first, then numbers numerically (floats by IEEE total
/// order), `false < true`, strings by bytes.
pub fn key_order(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Int32(x), Value::Int32(y)) => x.cmp(y),
        (Value::Int64(x), Value::Int64(y)) => x.cmp(y),
        (Value::UInt64(x), Value::UInt64(y)) => x.cmp(y),
        (Value::Float32(x), Value::Float32(y)) => x.total_cmp(y),
        (Value::Float64(x), Value::Float64(y)) => x.total_cmp(y),
        (Value::Utf8(x), Value::Utf8(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => Ordering::Equal,
    }
}

/// Whether a BTree can be keyed on `data_type`.
pub fn btree_key_type(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Bool
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt64
            | DataType::Float32
            | DataType::Float64
            | DataType::Utf8
    )
}

fn field(id: i32, name: &str, data_type: DataType, nullable: bool) -> Field {
    Field {
        id,
        parent_id: -1,
        name: name.to_string(),
        data_type,
        nullable,
    }
}

fn layout_error(file: &str, problem: impl Into<String>) -> IndexFileError {
    IndexFileError::Layout {
        file: file.to_string(),
        problem: problem.into(),
    }
}

fn written(file: &str, r: Result<Vec<u8>, DataFileError>) -> Result<Vec<u8>, IndexFileError> {
    r.map_err(|error| match error {
        DataFileError::ValueTypeMismatch { .. } | DataFileError::NullInNonNullable { .. } => {
            layout_error(file, error.to_string())
        }
        error => IndexFileError::DataFile { error },
    })
}

/// The two files of a BTree over `entries` (`(row address, key value)`, any order), keyed on
/// `key_type`, with pages of `batch_size` rows. Returned as `(name, bytes)`, sorted by name.
pub fn btree_files(
    key_type: &DataType,
    entries: &[(u64, Value)],
    batch_size: u64,
) -> Result<Vec<(String, Vec<u8>)>, IndexFileError> {
    btree_files_stating(key_type, entries, batch_size, batch_size)
}

/// [`btree_files`] with pages of `batch_size` rows but `stated` written as the lookup's
/// `batch_size` metadata. Only a damaged index states another size than it uses (negative
/// cases make one this way).
pub fn btree_files_stating(
    key_type: &DataType,
    entries: &[(u64, Value)],
    batch_size: u64,
    stated: u64,
) -> Result<Vec<(String, Vec<u8>)>, IndexFileError> {
    if !btree_key_type(key_type) {
        return Err(IndexFileError::Unsupported {
            file: BTREE_DATA.into(),
            feature: format!("a BTree keyed on {}", key_type.logical_type()),
        });
    }
    if batch_size == 0 {
        return Err(layout_error(BTREE_LOOKUP, "batch_size must be at least 1"));
    }
    let mut rows: Vec<&(u64, Value)> = entries.iter().collect();
    rows.sort_by(|a, b| key_order(&a.1, &b.1).then(a.0.cmp(&b.0)));
    let data = write_data_file_with(
        &[
            ColumnData::new(
                field(0, "values", key_type.clone(), true),
                rows.iter().map(|r| r.1.clone()).collect(),
            ),
            ColumnData::new(
                field(1, "ids", DataType::UInt64, false),
                rows.iter().map(|r| Value::UInt64(r.0)).collect(),
            ),
        ],
        &FileExtras::default(),
    );
    let data = written(BTREE_DATA, data)?;
    let chunk = usize::try_from(batch_size).unwrap_or(usize::MAX);
    let (mut mins, mut maxs, mut nulls, mut pages) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (p, page) in rows.chunks(chunk).enumerate() {
        mins.push(page.first().map_or(Value::Null, |r| r.1.clone()));
        maxs.push(page.last().map_or(Value::Null, |r| r.1.clone()));
        nulls
            .push(u32::try_from(page.iter().filter(|r| r.1.is_null()).count()).unwrap_or(u32::MAX));
        pages.push(u32::try_from(p).unwrap_or(u32::MAX));
    }
    let extras = FileExtras {
        metadata: BTreeMap::from([
            ("batch_size".to_string(), stated.to_string().into_bytes()),
            ("range_partitioned".to_string(), b"false".to_vec()),
        ]),
        global_buffers: Vec::new(),
    };
    let lookup = write_data_file_with(
        &[
            ColumnData::new(field(0, "min", key_type.clone(), true), mins),
            ColumnData::new(field(1, "max", key_type.clone(), true), maxs),
            ColumnData::uint32(2, "null_count", &nulls),
            ColumnData::uint32(3, "page_idx", &pages),
        ],
        &extras,
    );
    let lookup = written(BTREE_LOOKUP, lookup)?;
    Ok(vec![
        (BTREE_DATA.to_string(), data),
        (BTREE_LOOKUP.to_string(), lookup),
    ])
}

fn ivf_message(lengths: Vec<u32>, centroids: Option<(u32, u32)>) -> Vec<u8> {
    let partitions = lengths.len();
    let mut offsets = Vec::with_capacity(partitions);
    let mut at = 0u64;
    for l in &lengths {
        offsets.push(at);
        at += u64::from(*l);
    }
    ipb::Ivf {
        centroids: Vec::new(),
        offsets,
        lengths,
        centroids_tensor: centroids.map(|(p, dimension)| ipb::Tensor {
            data_type: ipb::tensor::DataType::Float32 as i32,
            shape: vec![p, dimension],
            data: vec![0u8; 4 * p as usize * dimension as usize],
        }),
        loss: None,
    }
    .encode_to_vec()
}

/// The two files of an IVF_FLAT index with one partition (centroid zero) over `entries`
/// (`(row id, vector)`, any order; every vector has `dimension` non-NULL items). Returned as
/// `(name, bytes)`, sorted by name.
pub fn ivf_files(
    dimension: u32,
    entries: &[(u64, Value)],
) -> Result<Vec<(String, Vec<u8>)>, IndexFileError> {
    ivf_partitioned_files(dimension, &[entries])
}

/// The two files of an IVF_FLAT index whose partition *i* holds `partitions[i]` (each sorted
/// by row id in the file; every centroid zero, so every partition is as near as any other).
/// The kit's writer uses one partition ([`ivf_files`]); Lance builds many, and a reader reads
/// any count.
pub fn ivf_partitioned_files(
    dimension: u32,
    partitions: &[&[(u64, Value)]],
) -> Result<Vec<(String, Vec<u8>)>, IndexFileError> {
    let mut rows: Vec<&(u64, Value)> = Vec::new();
    let mut lengths = Vec::with_capacity(partitions.len());
    for entries in partitions {
        let mut part: Vec<&(u64, Value)> = entries.iter().collect();
        part.sort_by_key(|r| r.0);
        let count = u32::try_from(part.len()).map_err(|_| {
            layout_error(IVF_STORAGE, "more rows than a partition length can count")
        })?;
        lengths.push(count);
        rows.extend(part);
    }
    for r in &rows {
        let ok = matches!(&r.1, Value::Vector(v) if v.len() == dimension as usize && v.iter().all(Option::is_some));
        if !ok {
            return Err(layout_error(
                IVF_STORAGE,
                format!(
                    "row id {}: {} is not a vector of {dimension} items",
                    r.0, r.1
                ),
            ));
        }
    }
    let count = u32::try_from(lengths.len())
        .map_err(|_| layout_error(IVF_INDEX, "more partitions than a shape can count"))?;
    let flat_marker = serde_json::to_vec(&vec![""; lengths.len()])
        .map_err(|e| layout_error(IVF_INDEX, e.to_string()))?;
    let index = write_data_file_with(
        &[ColumnData::new(
            field(0, "__flat_marker", DataType::UInt64, false),
            Vec::new(),
        )],
        &FileExtras {
            metadata: BTreeMap::from([
                ("lance:flat".to_string(), flat_marker),
                (
                    "lance:index".to_string(),
                    IVF_FLAT_INDEX_META.as_bytes().to_vec(),
                ),
                ("lance:ivf".to_string(), b"1".to_vec()),
            ]),
            global_buffers: vec![ivf_message(
                vec![0; lengths.len()],
                Some((count, dimension)),
            )],
        },
    );
    let index = written(IVF_INDEX, index)?;
    let storage = write_data_file_with(
        &[
            ColumnData::new(
                field(0, "_rowid", DataType::UInt64, true),
                rows.iter().map(|r| Value::UInt64(r.0)).collect(),
            ),
            ColumnData::new(
                field(1, "flat", DataType::FixedSizeList { dimension }, false),
                rows.iter().map(|r| r.1.clone()).collect(),
            ),
        ],
        &FileExtras {
            metadata: BTreeMap::from([
                ("distance_type".to_string(), b"l2".to_vec()),
                ("lance:ivf".to_string(), b"1".to_vec()),
                (
                    "storage_metadata".to_string(),
                    format!(r#"["{{\"dim\":{dimension}}}"]"#).into_bytes(),
                ),
            ]),
            global_buffers: vec![ivf_message(lengths, None)],
        },
    );
    let storage = written(IVF_STORAGE, storage)?;
    Ok(vec![
        (IVF_STORAGE.to_string(), storage),
        (IVF_INDEX.to_string(), index),
    ])
}

/// Parses one index file.
fn parse<'a>(name: &str, bytes: &'a [u8]) -> Result<DataFileContents<'a>, IndexFileError> {
    read_data_file(bytes, name).map_err(|error| IndexFileError::DataFile { error })
}

/// Checks that the file's columns are exactly `expected` (name, logical type), in order.
fn check_columns(
    name: &str,
    contents: &DataFileContents<'_>,
    expected: &[(&str, String)],
) -> Result<(), IndexFileError> {
    let found: Vec<(String, String)> = contents
        .schema()
        .iter()
        .map(|f| (f.name.clone(), f.logical_type.clone()))
        .collect();
    let wanted: Vec<(String, String)> = expected
        .iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect();
    if found != wanted || contents.num_columns() != expected.len() {
        return Err(layout_error(
            name,
            format!("columns {found:?}, expected {wanted:?}"),
        ));
    }
    Ok(())
}

fn column(
    name: &str,
    contents: &DataFileContents<'_>,
    index: usize,
    data_type: &DataType,
) -> Result<Vec<Value>, IndexFileError> {
    let values = contents
        .column(index, data_type)
        .map_err(|error| IndexFileError::DataFile { error })?;
    if values.len() as u64 != contents.num_rows() {
        return Err(layout_error(
            name,
            format!(
                "column {index} holds {} rows, the file {}",
                values.len(),
                contents.num_rows()
            ),
        ));
    }
    Ok(values)
}

fn ids(name: &str, values: Vec<Value>) -> Result<Vec<u64>, IndexFileError> {
    let mut seen = BTreeSet::new();
    values
        .into_iter()
        .enumerate()
        .map(|(row, v)| match v {
            Value::UInt64(id) if seen.insert(id) => Ok(id),
            Value::UInt64(id) => Err(IndexFileError::DuplicateId {
                file: name.to_string(),
                id,
            }),
            other => Err(layout_error(name, format!("row {row}: id {other}"))),
        })
        .collect()
}

fn uint32s(
    name: &str,
    contents: &DataFileContents<'_>,
    index: usize,
) -> Result<Vec<u32>, IndexFileError> {
    as_uint32s(
        name,
        index,
        column(name, contents, index, &DataType::Int32)?,
    )
}

fn metadata<'a>(
    name: &str,
    contents: &'a DataFileContents<'_>,
    key: &str,
) -> Result<&'a str, IndexFileError> {
    let raw = contents
        .schema_metadata()
        .get(key)
        .ok_or_else(|| layout_error(name, format!("schema metadata {key:?} is missing")))?;
    std::str::from_utf8(raw)
        .map_err(|_| layout_error(name, format!("schema metadata {key:?} is not UTF-8")))
}

fn file<'a>(files: &'a BTreeMap<String, Vec<u8>>, name: &str) -> Result<&'a [u8], IndexFileError> {
    files
        .get(name)
        .map(Vec::as_slice)
        .ok_or_else(|| layout_error(name, "not given to the reader"))
}

/// Reads a BTree's files (by name) keyed on `key_type`: the stored `(id, value)` pairs, in
/// data-file order, after checking both files' layouts, the order of the data rows, the
/// uniqueness of ids and every lookup row against its page.
pub fn read_btree(
    files: &BTreeMap<String, Vec<u8>>,
    key_type: &DataType,
) -> Result<Vec<(u64, Value)>, IndexFileError> {
    let key = key_type.logical_type();
    let data = parse(BTREE_DATA, file(files, BTREE_DATA)?)?;
    check_columns(
        BTREE_DATA,
        &data,
        &[("values", key.clone()), ("ids", "uint64".into())],
    )?;
    let values = column(BTREE_DATA, &data, 0, key_type)?;
    let stored_ids = ids(BTREE_DATA, column(BTREE_DATA, &data, 1, &DataType::UInt64)?)?;
    for row in 1..values.len() {
        if key_order(&values[row - 1], &values[row]) == Ordering::Greater {
            return Err(IndexFileError::Unsorted {
                file: BTREE_DATA.into(),
                row: row as u64,
                previous: row as u64 - 1,
            });
        }
    }
    let lookup = parse(BTREE_LOOKUP, file(files, BTREE_LOOKUP)?)?;
    let batch_size = lookup_header(&lookup, &key)?;
    let mins = column(BTREE_LOOKUP, &lookup, 0, key_type)?;
    let maxs = column(BTREE_LOOKUP, &lookup, 1, key_type)?;
    let nulls = uint32s(BTREE_LOOKUP, &lookup, 2)?;
    let page_idx = uint32s(BTREE_LOOKUP, &lookup, 3)?;
    let chunk = usize::try_from(batch_size).unwrap_or(usize::MAX);
    let pages: Vec<&[Value]> = values.chunks(chunk).collect();
    check_lookup(
        &LookupRows {
            mins: &mins,
            maxs: &maxs,
            nulls: &nulls,
            page_idx: &page_idx,
            batch_size,
        },
        values.len(),
        pages.len(),
        |p| {
            let page = pages[p];
            let first = page.first().cloned().unwrap_or(Value::Null);
            let last = page.last().cloned().unwrap_or(Value::Null);
            (
                first,
                last,
                page.iter().filter(|v| v.is_null()).count() as u64,
            )
        },
    )?;
    Ok(stored_ids.into_iter().zip(values).collect())
}

impl From<DataFileError> for IndexFileError {
    fn from(error: DataFileError) -> IndexFileError {
        IndexFileError::DataFile { error }
    }
}

/// An index's files as a by-parts reader sees them: each file's length, and ranged reads of
/// its bytes (through the dataset's storage, or from bytes already held).
pub trait IndexFileParts {
    /// The length of file `name`; `None` when the reader was not given it.
    fn size(&self, name: &str) -> Option<u64>;
    /// The bytes `range` of file `name` (within its length); a failure is
    /// [`IndexFileError::Io`].
    fn read(&self, name: &str, range: std::ops::Range<u64>) -> Result<Vec<u8>, IndexFileError>;
}

/// Whole files held by name, read by parts (what [`read_btree`] is given).
impl IndexFileParts for BTreeMap<String, Vec<u8>> {
    fn size(&self, name: &str) -> Option<u64> {
        self.get(name).map(|b| b.len() as u64)
    }

    fn read(&self, name: &str, range: std::ops::Range<u64>) -> Result<Vec<u8>, IndexFileError> {
        let bytes = self.get(name).map(Vec::as_slice).unwrap_or_default();
        let (start, end) = (range.start, range.end);
        usize::try_from(start)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(s, e)| bytes.get(s..e))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| IndexFileError::Io {
                file: name.to_string(),
                start,
                end,
                problem: format!("past the end of its {} bytes", bytes.len()),
            })
    }
}

/// The metadata region of file `name` (of `size` bytes) and where it starts: the last 64 KiB,
/// extended back as far as [`metadata_start`] asks, as the data-file reader reads a data file
/// by parts.
fn metadata_region(
    files: &dyn IndexFileParts,
    name: &str,
    size: u64,
) -> Result<(u64, Vec<u8>), IndexFileError> {
    let mut start = size.saturating_sub(METADATA_TAIL);
    let mut bytes = files.read(name, start..size)?;
    loop {
        let from = metadata_start(
            Region {
                start,
                bytes: &bytes,
            },
            size,
            name,
        );
        if from >= start {
            return Ok((start, bytes));
        }
        let mut joined = files.read(name, from..start)?;
        joined.extend_from_slice(&bytes);
        bytes = joined;
        start = from;
    }
}

/// How many bytes at a file's end [`metadata_region`] reads first.
const METADATA_TAIL: u64 = 64 * 1024;

/// A BTree's stored entries as [`read_btree_by_parts`] holds them: the ids in data-file order,
/// and the keys in the pages they were decoded in (Arrow arrays, a few bytes per entry rather
/// than a [`Value`] each).
#[derive(Debug, Clone)]
pub struct StoredKeys {
    ids: Vec<u64>,
    /// Each page of keys with the row it starts at.
    pages: Vec<(usize, StoredColumn)>,
}

impl StoredKeys {
    /// The number of entries.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The ids, in data-file order.
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// The key of entry `row` (NULL past the end).
    pub fn value(&self, row: usize) -> Value {
        let p = self.pages.partition_point(|(start, _)| *start <= row);
        p.checked_sub(1)
            .and_then(|p| self.pages.get(p))
            .and_then(|(start, column)| column.value(row - start))
            .unwrap_or(Value::Null)
    }

    /// The keys alone: the ids are dropped (once every entry is placed on its row, an entry is
    /// named by its position).
    pub fn without_ids(mut self) -> StoredKeys {
        self.ids = Vec::new();
        self
    }

    /// Each entry as [`read_btree`] returns it.
    pub fn into_pairs(self) -> Vec<(u64, Value)> {
        let values: Vec<Value> = (0..self.ids.len()).map(|r| self.value(r)).collect();
        self.ids.into_iter().zip(values).collect()
    }
}

/// [`read_btree`] by parts: each file's metadata region first, then each page of a column
/// alone, so that no read holds a whole column ([`DataFileContents::page_array_with`]: the
/// value limit bounds a page). The same checks in the same order, and so the same first error,
/// as [`read_btree`] of the same bytes; what it returns holds the keys as Arrow arrays
/// ([`StoredKeys`]).
pub fn read_btree_by_parts(
    files: &dyn IndexFileParts,
    key_type: &DataType,
) -> Result<StoredKeys, IndexFileError> {
    let key = key_type.logical_type();
    let size = files
        .size(BTREE_DATA)
        .ok_or_else(|| layout_error(BTREE_DATA, "not given to the reader"))?;
    let (start, metadata) = metadata_region(files, BTREE_DATA, size)?;
    let held = Region {
        start,
        bytes: &metadata,
    };
    let data = read_data_file_in(held, size, BTREE_DATA)?;
    check_columns(
        BTREE_DATA,
        &data,
        &[("values", key.clone()), ("ids", "uint64".into())],
    )?;
    let fetch = |span: Extent| {
        files
            .read(
                BTREE_DATA,
                span.position..span.position.saturating_add(span.size),
            )
            .map(Cow::Owned)
    };
    // The keys, page by page; the first row out of order and every NULL noted as they come
    // (reported in `read_btree`'s order, after the ids).
    let mut pages = Vec::new();
    let mut rows = 0usize;
    let mut unsorted: Option<usize> = None;
    let mut nulls = roaring::RoaringTreemap::new();
    let mut previous: Option<Value> = None;
    for p in 0..data.column_pages(0).unwrap_or(0) {
        let page = StoredColumn::new(data.page_array_with(0, p, key_type, fetch)?);
        for r in 0..page.len() {
            let value = page.value(r).unwrap_or(Value::Null);
            if unsorted.is_none()
                && previous
                    .as_ref()
                    .is_some_and(|prev| key_order(prev, &value) == Ordering::Greater)
            {
                unsorted = Some(rows + r);
            }
            if value.is_null() {
                nulls.insert((rows + r) as u64);
            }
            previous = Some(value);
        }
        let len = page.len();
        pages.push((rows, page));
        rows += len;
    }
    held_rows(BTREE_DATA, &data, 0, rows as u64)?;
    // The ids, page by page: a decode error of any page comes before a problem of an id.
    let mut ids = Vec::with_capacity(rows);
    let mut seen = roaring::RoaringTreemap::new();
    let mut bad_id: Option<IndexFileError> = None;
    let mut id_rows = 0u64;
    for p in 0..data.column_pages(1).unwrap_or(0) {
        let page = StoredColumn::new(data.page_array_with(1, p, &DataType::UInt64, fetch)?);
        for r in 0..page.len() {
            if bad_id.is_some() {
                break;
            }
            match page.value(r).unwrap_or(Value::Null) {
                Value::UInt64(id) if seen.insert(id) => ids.push(id),
                Value::UInt64(id) => {
                    bad_id = Some(IndexFileError::DuplicateId {
                        file: BTREE_DATA.to_string(),
                        id,
                    });
                }
                other => {
                    let row = id_rows + r as u64;
                    bad_id = Some(layout_error(BTREE_DATA, format!("row {row}: id {other}")));
                }
            }
        }
        id_rows += page.len() as u64;
    }
    held_rows(BTREE_DATA, &data, 1, id_rows)?;
    if let Some(e) = bad_id {
        return Err(e);
    }
    if let Some(row) = unsorted {
        return Err(IndexFileError::Unsorted {
            file: BTREE_DATA.into(),
            row: row as u64,
            previous: row as u64 - 1,
        });
    }
    drop(seen);
    let stored = StoredKeys { ids, pages };
    let lookup_size = files
        .size(BTREE_LOOKUP)
        .ok_or_else(|| layout_error(BTREE_LOOKUP, "not given to the reader"))?;
    let (start, metadata) = metadata_region(files, BTREE_LOOKUP, lookup_size)?;
    let held = Region {
        start,
        bytes: &metadata,
    };
    let lookup = read_data_file_in(held, lookup_size, BTREE_LOOKUP)?;
    let lookup_fetch = |span: Extent| {
        files
            .read(
                BTREE_LOOKUP,
                span.position..span.position.saturating_add(span.size),
            )
            .map(Cow::Owned)
    };
    let batch_size = lookup_header(&lookup, &key)?;
    let column = |index: usize, data_type: &DataType| {
        let array = lookup.column_array_with(index, data_type, lookup_fetch)?;
        let values = StoredColumn::new(array).values();
        held_rows(BTREE_LOOKUP, &lookup, index, values.len() as u64)?;
        Ok::<_, IndexFileError>(values)
    };
    let mins = column(0, key_type)?;
    let maxs = column(1, key_type)?;
    let nulls_stated = as_uint32s(BTREE_LOOKUP, 2, column(2, &DataType::Int32)?)?;
    let page_idx = as_uint32s(BTREE_LOOKUP, 3, column(3, &DataType::Int32)?)?;
    let chunk = usize::try_from(batch_size).unwrap_or(usize::MAX);
    let page_count = rows.div_ceil(chunk);
    check_lookup(
        &LookupRows {
            mins: &mins,
            maxs: &maxs,
            nulls: &nulls_stated,
            page_idx: &page_idx,
            batch_size,
        },
        rows,
        page_count,
        |p| {
            let first = p * chunk;
            let end = first.saturating_add(chunk).min(rows);
            let null_count = nulls.range_cardinality(first as u64..end as u64);
            (stored.value(first), stored.value(end - 1), null_count)
        },
    )?;
    Ok(stored)
}

/// Checks that column `index` of `contents` held one value per row of the file.
fn held_rows(
    name: &str,
    contents: &DataFileContents<'_>,
    index: usize,
    held: u64,
) -> Result<(), IndexFileError> {
    if held != contents.num_rows() {
        return Err(layout_error(
            name,
            format!(
                "column {index} holds {held} rows, the file {}",
                contents.num_rows()
            ),
        ));
    }
    Ok(())
}

/// A lookup file's columns, the `batch_size` its metadata states (or the default) and whether
/// it is range-partitioned (refused), checked in [`read_btree`]'s order; the page size.
fn lookup_header(lookup: &DataFileContents<'_>, key: &str) -> Result<u64, IndexFileError> {
    check_columns(
        BTREE_LOOKUP,
        lookup,
        &[
            ("min", key.to_string()),
            ("max", key.to_string()),
            ("null_count", "uint32".into()),
            ("page_idx", "uint32".into()),
        ],
    )?;
    let batch_size = match lookup.schema_metadata().get("batch_size") {
        None => DEFAULT_BATCH_SIZE,
        Some(raw) => std::str::from_utf8(raw)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .filter(|b| *b >= 1)
            .ok_or_else(|| {
                layout_error(
                    BTREE_LOOKUP,
                    format!(
                        "batch_size {:?} is not a whole number of at least 1",
                        String::from_utf8_lossy(raw)
                    ),
                )
            })?,
    };
    if let Some(raw) = lookup.schema_metadata().get("range_partitioned") {
        if raw.as_slice() != b"false" {
            return Err(IndexFileError::Unsupported {
                file: BTREE_LOOKUP.into(),
                feature: format!("range_partitioned = {:?}", String::from_utf8_lossy(raw)),
            });
        }
    }
    Ok(batch_size)
}

/// The `uint32` column `index` of `name`, decoded as `int32` values, as unsigned numbers.
fn as_uint32s(name: &str, index: usize, values: Vec<Value>) -> Result<Vec<u32>, IndexFileError> {
    values
        .into_iter()
        .enumerate()
        .map(|(row, v)| match v {
            Value::Int32(x) => Ok(u32::from_ne_bytes(x.to_ne_bytes())),
            other => Err(layout_error(
                name,
                format!("column {index} row {row}: {other}"),
            )),
        })
        .collect()
}

/// The rows of a BTree's lookup file.
struct LookupRows<'a> {
    mins: &'a [Value],
    maxs: &'a [Value],
    nulls: &'a [u32],
    page_idx: &'a [u32],
    batch_size: u64,
}

/// Checks every lookup row against its page of data rows (`rows` rows in `page_count` pages
/// of `batch_size`); `page(p)` gives page `p`'s first value, last value and NULL count.
fn check_lookup(
    lookup: &LookupRows<'_>,
    rows: usize,
    page_count: usize,
    page: impl Fn(usize) -> (Value, Value, u64),
) -> Result<(), IndexFileError> {
    if page_count != lookup.mins.len() {
        return Err(layout_error(
            BTREE_LOOKUP,
            format!(
                "{} lookup rows for {rows} data rows in pages of {}",
                lookup.mins.len(),
                lookup.batch_size
            ),
        ));
    }
    for p in 0..page_count {
        let mismatch = |problem: String| IndexFileError::LookupMismatch {
            file: BTREE_LOOKUP.into(),
            page: p as u64,
            problem,
        };
        let (first, last, null_count) = page(p);
        let (min, max) = (&lookup.mins[p], &lookup.maxs[p]);
        if !min.identical(&first) {
            return Err(mismatch(format!(
                "min {min} but the page starts with {first}"
            )));
        }
        if !max.identical(&last) {
            return Err(mismatch(format!("max {max} but the page ends with {last}")));
        }
        let stated = lookup.nulls.get(p).copied().unwrap_or_default();
        if u64::from(stated) != null_count {
            return Err(mismatch(format!(
                "null_count {stated} but the page holds {null_count} NULLs"
            )));
        }
        let idx = lookup.page_idx.get(p).copied().unwrap_or_default();
        if idx as usize != p {
            return Err(mismatch(format!("page_idx {idx}")));
        }
    }
    Ok(())
}

fn ivf_buffer(name: &str, contents: &DataFileContents<'_>) -> Result<ipb::Ivf, IndexFileError> {
    let at = metadata(name, contents, "lance:ivf")?;
    let index: usize = at
        .trim()
        .parse()
        .map_err(|_| layout_error(name, format!("lance:ivf {at:?} is not a buffer number")))?;
    if index == 0 {
        return Err(layout_error(
            name,
            "lance:ivf names global buffer 0 (the schema)",
        ));
    }
    let bytes = contents.global_buffer(index).ok_or_else(|| {
        layout_error(
            name,
            format!("lance:ivf names global buffer {index}, which the file lacks"),
        )
    })?;
    let ivf = ipb::Ivf::decode(bytes).map_err(|e| {
        layout_error(
            name,
            format!("global buffer {index} is no IVF message: {e}"),
        )
    })?;
    if ivf.lengths.is_empty() {
        return Err(layout_error(name, "the IVF message has no partitions"));
    }
    if !ivf.offsets.is_empty() && ivf.offsets.len() != ivf.lengths.len() {
        return Err(layout_error(
            name,
            format!(
                "{} offsets for {} partitions",
                ivf.offsets.len(),
                ivf.lengths.len()
            ),
        ));
    }
    Ok(ivf)
}

fn json(name: &str, key: &str, text: &str) -> Result<serde_json::Value, IndexFileError> {
    serde_json::from_str(text).map_err(|e| layout_error(name, format!("{key} is not JSON: {e}")))
}

/// The vector index types whose files [`read_vector_index`] reads (`lance:index` `type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorIndexType {
    /// `IVF_FLAT`: `auxiliary.idx` stores each entry's vector.
    IvfFlat,
    /// `IVF_PQ`: `auxiliary.idx` stores each entry's product-quantized code.
    IvfPq,
}

/// What an index's files store for its entries.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredEntries {
    /// `(id, value)` pairs: a BTree's keys, an IVF_FLAT index's vectors.
    Values(Vec<(u64, Value)>),
    /// Ids only: an IVF_PQ index stores for each id a product-quantized code, which stands for
    /// the row's vector without being it (see [`read_ivf_pq`]).
    Quantized(Vec<u64>),
}

impl StoredEntries {
    /// Each stored id with its value, `None` for a quantized code, in storage order.
    pub fn into_pairs(self) -> Vec<(u64, Option<Value>)> {
        match self {
            StoredEntries::Values(pairs) => {
                pairs.into_iter().map(|(id, v)| (id, Some(v))).collect()
            }
            StoredEntries::Quantized(ids) => ids.into_iter().map(|id| (id, None)).collect(),
        }
    }
}

/// Reads `index.idx` of an IVF index over vectors of `dimension` items: the index type it
/// names and its partition count, after checking its column, `lance:index` (IVF_FLAT or IVF_PQ,
/// distance l2), the centroid table `[partitions, dimension]` FLOAT32 and `lance:flat` (one
/// entry per partition).
fn read_ivf_index_file(
    files: &BTreeMap<String, Vec<u8>>,
    dimension: u32,
) -> Result<(VectorIndexType, usize), IndexFileError> {
    let index = parse(IVF_INDEX, file(files, IVF_INDEX)?)?;
    check_columns(IVF_INDEX, &index, &[("__flat_marker", "uint64".into())])?;
    let meta = json(
        IVF_INDEX,
        "lance:index",
        metadata(IVF_INDEX, &index, "lance:index")?,
    )?;
    let kind = match meta.get("type").and_then(|t| t.as_str()) {
        Some("IVF_FLAT") => Some(VectorIndexType::IvfFlat),
        Some("IVF_PQ") => Some(VectorIndexType::IvfPq),
        _ => None,
    };
    let distance = meta.get("distance_type").and_then(|t| t.as_str());
    let kind = match kind {
        Some(kind) if distance.map(str::to_ascii_lowercase).as_deref() == Some("l2") => kind,
        _ => {
            return Err(IndexFileError::Unsupported {
                file: IVF_INDEX.into(),
                feature: format!("lance:index {meta} (only IVF_FLAT and IVF_PQ with l2 are read)"),
            });
        }
    };
    let centroids = ivf_buffer(IVF_INDEX, &index)?;
    let partitions = centroids.lengths.len();
    let tensor = centroids
        .centroids_tensor
        .as_ref()
        .ok_or_else(|| layout_error(IVF_INDEX, "the IVF message has no centroids"))?;
    let shape_ok = tensor.data_type == ipb::tensor::DataType::Float32 as i32
        && tensor.shape == [partitions as u32, dimension]
        && tensor.data.len() as u64 == 4 * partitions as u64 * u64::from(dimension);
    if !shape_ok {
        return Err(layout_error(
            IVF_INDEX,
            format!(
                "centroids of type {} and shape {:?} with {} bytes, expected FLOAT32 [{partitions}, {dimension}]",
                tensor.data_type,
                tensor.shape,
                tensor.data.len()
            ),
        ));
    }
    let flat = json(
        IVF_INDEX,
        "lance:flat",
        metadata(IVF_INDEX, &index, "lance:flat")?,
    )?;
    if flat.as_array().map(Vec::len) != Some(partitions) {
        return Err(layout_error(
            IVF_INDEX,
            format!("lance:flat {flat} does not list {partitions} partitions"),
        ));
    }
    Ok((kind, partitions))
}

/// The first `storage_metadata` entry of `auxiliary.idx`, parsed (a JSON list of JSON texts;
/// Lance writes one), after checking `distance_type` (l2).
fn storage_metadata(storage: &DataFileContents<'_>) -> Result<serde_json::Value, IndexFileError> {
    let distance = metadata(IVF_STORAGE, storage, "distance_type")?;
    if !distance.eq_ignore_ascii_case("l2") {
        return Err(IndexFileError::Unsupported {
            file: IVF_STORAGE.into(),
            feature: format!("distance_type {distance:?}"),
        });
    }
    let stored = json(
        IVF_STORAGE,
        "storage_metadata",
        metadata(IVF_STORAGE, storage, "storage_metadata")?,
    )?;
    match stored.as_array().map(Vec::as_slice) {
        Some([serde_json::Value::String(text), ..]) => {
            json(IVF_STORAGE, "storage_metadata[0]", text)
        }
        _ => Err(layout_error(
            IVF_STORAGE,
            format!("storage_metadata {stored} is not a list of JSON texts"),
        )),
    }
}

/// Checks that `auxiliary.idx`'s partition table has `partitions` partitions that follow one
/// another and cover its rows exactly.
fn check_storage_partitions(
    storage: &DataFileContents<'_>,
    partitions: usize,
) -> Result<(), IndexFileError> {
    let parts = ivf_buffer(IVF_STORAGE, storage)?;
    let rows = storage.num_rows();
    let mut at = 0u64;
    for (p, length) in parts.lengths.iter().enumerate() {
        if let Some(offset) = parts.offsets.get(p) {
            if *offset != at {
                return Err(layout_error(
                    IVF_STORAGE,
                    format!("partition {p} starts at row {offset}, expected {at}"),
                ));
            }
        }
        at += u64::from(*length);
    }
    if parts.lengths.len() != partitions || at != rows {
        return Err(layout_error(
            IVF_STORAGE,
            format!(
                "{} partitions holding {at} rows, the file stores {rows} rows in {partitions} partitions",
                parts.lengths.len()
            ),
        ));
    }
    Ok(())
}

/// Reads a vector index's files (by name) for vectors of `dimension` items, IVF_FLAT
/// ([`read_ivf`]) or IVF_PQ ([`read_ivf_pq`]) as `index.idx` says.
pub fn read_vector_index(
    files: &BTreeMap<String, Vec<u8>>,
    dimension: u32,
) -> Result<StoredEntries, IndexFileError> {
    match read_ivf_index_file(files, dimension)?.0 {
        VectorIndexType::IvfFlat => read_ivf(files, dimension).map(StoredEntries::Values),
        VectorIndexType::IvfPq => read_ivf_pq(files, dimension).map(StoredEntries::Quantized),
    }
}

/// Reads an IVF_FLAT index's files (by name) for vectors of `dimension` items: the stored
/// `(row id, vector)` pairs, in storage order, after checking both files' layouts, the
/// partition table against the stored rows, the centroid table's shape, and the uniqueness of
/// row ids.
pub fn read_ivf(
    files: &BTreeMap<String, Vec<u8>>,
    dimension: u32,
) -> Result<Vec<(u64, Value)>, IndexFileError> {
    let (kind, partitions) = read_ivf_index_file(files, dimension)?;
    if kind != VectorIndexType::IvfFlat {
        return Err(layout_error(
            IVF_INDEX,
            format!("an {kind:?} index read as IVF_FLAT"),
        ));
    }
    let storage = parse(IVF_STORAGE, file(files, IVF_STORAGE)?)?;
    let vector_type = DataType::FixedSizeList { dimension };
    check_columns(
        IVF_STORAGE,
        &storage,
        &[
            ("_rowid", "uint64".into()),
            ("flat", vector_type.logical_type()),
        ],
    )?;
    let stored = storage_metadata(&storage)?;
    if stored.get("dim").and_then(|d| d.as_u64()) != Some(u64::from(dimension)) {
        return Err(layout_error(
            IVF_STORAGE,
            format!("storage_metadata {stored} does not give dim {dimension}"),
        ));
    }
    check_storage_partitions(&storage, partitions)?;
    let row_ids = ids(
        IVF_STORAGE,
        column(IVF_STORAGE, &storage, 0, &DataType::UInt64)?,
    )?;
    let vectors = column(IVF_STORAGE, &storage, 1, &vector_type)?;
    for (row, v) in vectors.iter().enumerate() {
        if !matches!(v, Value::Vector(items) if items.iter().all(Option::is_some)) {
            return Err(layout_error(IVF_STORAGE, format!("row {row} stores {v}")));
        }
    }
    Ok(row_ids.into_iter().zip(vectors).collect())
}

/// The PQ parameters of an IVF_PQ storage file's `storage_metadata`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PqParameters {
    /// Bits per sub-vector code: 4 or 8.
    nbits: u32,
    /// Sub-vectors per vector (a divisor of the dimension).
    num_sub_vectors: u32,
    /// The global buffer holding the codebook.
    codebook_position: usize,
}

impl PqParameters {
    /// Bytes of one entry's code: two 4-bit codes share a byte.
    fn code_bytes(self) -> u32 {
        if self.nbits == 4 {
            self.num_sub_vectors / 2
        } else {
            self.num_sub_vectors
        }
    }
}

/// Parses and checks the PQ parameters of `storage_metadata` for vectors of `dimension` items.
fn pq_parameters(
    stored: &serde_json::Value,
    dimension: u32,
) -> Result<PqParameters, IndexFileError> {
    let number = |key: &str| {
        stored
            .get(key)
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| {
                layout_error(
                    IVF_STORAGE,
                    format!("storage_metadata {stored} has no whole number {key:?}"),
                )
            })
    };
    let inline = stored.get("codebook_tensor").and_then(|t| t.as_array());
    if !inline.is_some_and(Vec::is_empty) {
        return Err(IndexFileError::Unsupported {
            file: IVF_STORAGE.into(),
            feature: "a PQ codebook inline in storage_metadata (codebook_tensor not [])".into(),
        });
    }
    if !stored
        .get("transposed")
        .is_some_and(serde_json::Value::is_boolean)
    {
        return Err(layout_error(
            IVF_STORAGE,
            format!("storage_metadata {stored} has no boolean \"transposed\""),
        ));
    }
    if number("dimension")? != u64::from(dimension) {
        return Err(layout_error(
            IVF_STORAGE,
            format!("storage_metadata {stored} does not give dimension {dimension}"),
        ));
    }
    let nbits = number("nbits")?;
    let num_sub_vectors = number("num_sub_vectors")?;
    if nbits != 4 && nbits != 8 {
        return Err(IndexFileError::Unsupported {
            file: IVF_STORAGE.into(),
            feature: format!("PQ codes of {nbits} bits (4 and 8 are read)"),
        });
    }
    let divides = num_sub_vectors >= 1
        && u64::from(dimension) % num_sub_vectors == 0
        && (nbits == 8 || num_sub_vectors % 2 == 0);
    if !divides {
        return Err(layout_error(
            IVF_STORAGE,
            format!(
                "num_sub_vectors {num_sub_vectors} does not split dimension {dimension} into sub-vectors of {nbits}-bit codes filling whole bytes"
            ),
        ));
    }
    let codebook_position = usize::try_from(number("codebook_position")?).unwrap_or(usize::MAX);
    if codebook_position == 0 {
        return Err(layout_error(
            IVF_STORAGE,
            "codebook_position names global buffer 0 (the schema)",
        ));
    }
    Ok(PqParameters {
        nbits: nbits as u32,
        num_sub_vectors: num_sub_vectors as u32,
        codebook_position,
    })
}

/// Reads an IVF_PQ index's files (by name) for vectors of `dimension` items: the stored row
/// ids, in storage order, after checking both files' layouts (as for IVF_FLAT), the PQ
/// parameters (4- or 8-bit codes, sub-vectors dividing the dimension), the codebook
/// (`[2^nbits, dimension]` FLOAT32 in the global buffer `codebook_position` names), the code
/// column's width and row count, the partition table against the stored rows, and the
/// uniqueness of row ids.
///
/// The codes themselves are not decoded: every byte string of the code width is a valid code
/// (each 4- or 8-bit code names one of the codebook's `2^nbits` centroids), so no code can be
/// out of range, and no rule compares a code with the row's vector. Lance codes the residual
/// of the vector from its partition's centroid, choosing the nearest centroid and the nearest
/// codeword in float arithmetic; a reader repeating that choice differs from Lance at every
/// near tie, so a comparison would report sound indices. What the entries are judged by is
/// which rows they name ([`crate::read`]).
pub fn read_ivf_pq(
    files: &BTreeMap<String, Vec<u8>>,
    dimension: u32,
) -> Result<Vec<u64>, IndexFileError> {
    let (kind, partitions) = read_ivf_index_file(files, dimension)?;
    if kind != VectorIndexType::IvfPq {
        return Err(layout_error(
            IVF_INDEX,
            format!("an {kind:?} index read as IVF_PQ"),
        ));
    }
    let storage = parse(IVF_STORAGE, file(files, IVF_STORAGE)?)?;
    let pq = pq_parameters(&storage_metadata(&storage)?, dimension)?;
    check_columns(
        IVF_STORAGE,
        &storage,
        &[
            ("_rowid", "uint64".into()),
            (
                "__pq_code",
                format!("fixed_size_list:uint8:{}", pq.code_bytes()),
            ),
        ],
    )?;
    let codebook = storage.global_buffer(pq.codebook_position).ok_or_else(|| {
        layout_error(
            IVF_STORAGE,
            format!(
                "codebook_position names global buffer {}, which the file lacks",
                pq.codebook_position
            ),
        )
    })?;
    let codebook = ipb::Tensor::decode(codebook).map_err(|e| {
        layout_error(
            IVF_STORAGE,
            format!(
                "global buffer {} is no codebook tensor: {e}",
                pq.codebook_position
            ),
        )
    })?;
    let centroids = 1u32 << pq.nbits;
    let shape_ok = codebook.data_type == ipb::tensor::DataType::Float32 as i32
        && codebook.shape == [centroids, dimension]
        && codebook.data.len() as u64 == 4 * u64::from(centroids) * u64::from(dimension);
    if !shape_ok {
        return Err(layout_error(
            IVF_STORAGE,
            format!(
                "codebook of type {} and shape {:?} with {} bytes, expected FLOAT32 [{centroids}, {dimension}]",
                codebook.data_type,
                codebook.shape,
                codebook.data.len()
            ),
        ));
    }
    if storage.column_rows(1) != Some(storage.num_rows()) {
        return Err(layout_error(
            IVF_STORAGE,
            format!(
                "__pq_code holds {:?} rows, the file {}",
                storage.column_rows(1),
                storage.num_rows()
            ),
        ));
    }
    check_storage_partitions(&storage, partitions)?;
    ids(
        IVF_STORAGE,
        column(IVF_STORAGE, &storage, 0, &DataType::UInt64)?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_btree_reads_back_its_entries_in_key_order() {
        // covers: IDX-FILE-2, IDX-FILE-3
        let entries = vec![
            (0, Value::Int32(30)),
            (1, Value::Int32(25)),
            (2, Value::Null),
            (1 << 32, Value::Int32(25)),
        ];
        for batch_size in [1, 3, DEFAULT_BATCH_SIZE] {
            let files: BTreeMap<String, Vec<u8>> =
                btree_files(&DataType::Int32, &entries, batch_size)
                    .unwrap()
                    .into_iter()
                    .collect();
            let read = read_btree(&files, &DataType::Int32).unwrap();
            assert_eq!(
                read,
                vec![
                    (2, Value::Null),
                    (1, Value::Int32(25)),
                    (1 << 32, Value::Int32(25)),
                    (0, Value::Int32(30)),
                ]
            );
        }
    }

    #[test]
    fn a_lying_lookup_row_is_refused() {
        // covers: IDX-READ-2
        let entries = vec![(0, Value::Utf8("a".into())), (1, Value::Utf8("b".into()))];
        let mut files: BTreeMap<String, Vec<u8>> = btree_files(&DataType::Utf8, &entries, 4096)
            .unwrap()
            .into_iter()
            .collect();
        let other = btree_files(&DataType::Utf8, &entries[..1], 4096).unwrap();
        files.insert(BTREE_LOOKUP.into(), other[1].1.clone());
        let err = read_btree(&files, &DataType::Utf8).unwrap_err();
        assert_eq!(err.code(), "btree_lookup_mismatch");
        // A lookup stating another page size than its pages use.
        let mut files: BTreeMap<String, Vec<u8>> =
            btree_files_stating(&DataType::Utf8, &entries, 4096, 1)
                .unwrap()
                .into_iter()
                .collect();
        let err = read_btree(&files, &DataType::Utf8).unwrap_err();
        assert_eq!(err.code(), "index_file_layout");
        files.remove(BTREE_LOOKUP);
        assert_eq!(
            read_btree(&files, &DataType::Utf8).unwrap_err().code(),
            "index_file_layout"
        );
    }

    #[test]
    fn an_ivf_index_reads_back_its_vectors_by_row_id() {
        // covers: IDX-FILE-4
        let v = |x: f32| Value::Vector(vec![Some(x), Some(0.5)]);
        let entries = vec![(7, v(1.0)), (3, v(2.0))];
        let files: BTreeMap<String, Vec<u8>> =
            ivf_files(2, &entries).unwrap().into_iter().collect();
        assert_eq!(read_ivf(&files, 2).unwrap(), vec![(3, v(2.0)), (7, v(1.0))]);
        let err = read_ivf(&files, 3).unwrap_err();
        assert_eq!(err.code(), "index_file_layout");
    }

    #[test]
    fn an_ivf_index_of_many_partitions_reads_back_every_partition() {
        // covers: IDX-FILE-4, IDX-READ-2
        // Lance builds IVF_FLAT with many partitions (num_partitions); each partition's rows are
        // one run of auxiliary.idx.
        let v = |x: f32| Value::Vector(vec![Some(x), Some(0.5)]);
        let (a, b, c) = (vec![(9, v(1.0)), (2, v(2.0))], vec![], vec![(4, v(3.0))]);
        let files: BTreeMap<String, Vec<u8>> = ivf_partitioned_files(2, &[&a, &b, &c])
            .unwrap()
            .into_iter()
            .collect();
        assert_eq!(
            read_ivf(&files, 2).unwrap(),
            vec![(2, v(2.0)), (9, v(1.0)), (4, v(3.0))]
        );
        // Storage whose partitions are not the index's three is refused.
        let mut lying = files.clone();
        let two = ivf_partitioned_files(2, &[&a, &c]).unwrap();
        lying.insert(IVF_STORAGE.into(), two[0].1.clone());
        assert_eq!(read_ivf(&lying, 2).unwrap_err().code(), "index_file_layout");
    }

    /// [`read_btree_by_parts`] of `files` answers as [`read_btree`] does: the same entries, or
    /// the same first error.
    fn assert_by_parts_as_whole(files: &BTreeMap<String, Vec<u8>>, key_type: &DataType) {
        let whole = read_btree(files, key_type);
        let parts = read_btree_by_parts(files, key_type).map(StoredKeys::into_pairs);
        assert_eq!(parts, whole, "{key_type:?}");
    }

    fn key_strategy() -> impl Strategy<Value = (DataType, Vec<Value>)> {
        prop_oneof![
            proptest::collection::vec(proptest::option::of(-5i32..5), 0..300).prop_map(|v| (
                DataType::Int32,
                v.into_iter()
                    .map(|x| x.map_or(Value::Null, Value::Int32))
                    .collect()
            )),
            proptest::collection::vec(proptest::option::of("[a-c]{0,3}"), 0..300).prop_map(|v| (
                DataType::Utf8,
                v.into_iter()
                    .map(|x| x.map_or(Value::Null, Value::Utf8))
                    .collect()
            )),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn a_btree_read_by_parts_answers_as_a_whole_read(
            (key_type, keys) in key_strategy(),
            batch_size in 1u64..70,
            stated in 1u64..70,
            damaged in 0usize..2,
            flips in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 0..4),
            cut in any::<proptest::sample::Index>(),
            swap in any::<proptest::sample::Index>(),
        ) {
            let entries: Vec<(u64, Value)> = keys
                .into_iter()
                .enumerate()
                .map(|(i, v)| (((i as u64 % 3) << 32) | i as u64, v))
                .collect();
            let files: BTreeMap<String, Vec<u8>> =
                btree_files_stating(&key_type, &entries, batch_size, stated)
                    .unwrap()
                    .into_iter()
                    .collect();
            assert_by_parts_as_whole(&files, &key_type);
            let name = [BTREE_DATA, BTREE_LOOKUP][damaged];
            let bytes = &files[name];
            // Bytes flipped anywhere.
            let mut flipped = files.clone();
            let f = flipped.get_mut(name).unwrap();
            for (at, x) in &flips {
                let i = at.index(f.len());
                f[i] ^= x | 1;
            }
            assert_by_parts_as_whole(&flipped, &key_type);
            // The file cut short.
            let mut cut_files = files.clone();
            cut_files.insert(name.to_string(), bytes[..cut.index(bytes.len() + 1)].to_vec());
            assert_by_parts_as_whole(&cut_files, &key_type);
            // Another BTree's lookup (or data) file: pages that do not match, rows out of
            // order, ids twice.
            let mut other = entries.clone();
            if !other.is_empty() {
                let i = swap.index(other.len());
                other[i].1 = other[0].1.clone();
                let id = other[0].0;
                other[i].0 = id;
            }
            let mixed: Vec<(String, Vec<u8>)> = btree_files(&key_type, &other, batch_size)
                .map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            let mut mixed_files = files.clone();
            mixed_files.insert(name.to_string(), mixed[damaged].1.clone());
            assert_by_parts_as_whole(&mixed_files, &key_type);
            // A file missing.
            let mut missing = files.clone();
            missing.remove(name);
            assert_by_parts_as_whole(&missing, &key_type);
        }
    }

    #[test]
    fn uuids_are_spelled_hyphenated_and_lowercase() {
        // covers: IDX-FILE-1
        let uuid = [0xab; 16];
        assert_eq!(uuid_string(&uuid), "abababab-abab-abab-abab-abababababab");
        // Each byte in its place: groups of 4, 2, 2, 2 and 6 bytes, high nibble first.
        let uuid: [u8; 16] = std::array::from_fn(|i| (i as u8) * 0x11);
        assert_eq!(uuid_string(&uuid), "00112233-4455-6677-8899-aabbccddeeff");
    }
}
