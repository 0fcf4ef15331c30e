//! What readers decoded from a storage's files, remembered by path and size for as long as the
//! storage lives (one fuzz execution, one model-based history).
//!
//! Invariant: an entry is exactly what decoding the file's current bytes again would return.
//! It holds only a decode that succeeded; it is keyed by the file's path and size and by
//! everything else the decode read (the [`ColumnRequest`] of a data file: the schema's types
//! and struct ancestry of its fields, the manifest's column indices and version pair, whether it
//! is an overlay; the [`IndexRequest`] of an index: its kind, key type and file names), so a
//! hit never answers another question than the one asked; and the storage that owns it calls
//! [`DecodedFiles::forget`] whenever it writes a path, so no entry outlives its bytes. Checks
//! that depend on what the manifest says of a file (its listed size, the read limit) are not
//! part of an entry: the reader makes them on every read, hit or miss ([`crate::read`]).
//!
//! Only a storage that sees every write may own one ([`crate::storage::MemoryStorage`]); the
//! rules that decide what a version means never see it.

use std::collections::BTreeMap;
use std::sync::Mutex;

use lance_reference::model::{Column, DataType, FieldId, IndexKind};

use crate::index_file::StoredEntries;
use crate::storage::lock;

/// Each index file's name and size in bytes, in name order.
pub type FileSizes = Vec<(String, u64)>;

/// What a data file's decode reads besides its bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnRequest {
    /// Whether the file is an overlay's value file.
    pub overlay: bool,
    /// `DataFile.fields`, each with its type in the schema (`None`: not in the schema) and its
    /// struct ancestry.
    pub fields: Vec<(i32, Option<DataType>, Vec<FieldId>)>,
    /// `DataFile.column_indices`.
    pub column_indices: Vec<i32>,
    /// `file_major_version`, `file_minor_version`.
    pub version: (u32, u32),
}

/// What an index's decode reads besides its files' bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexRequest {
    /// The index kind.
    pub kind: IndexKind,
    /// The key field's type.
    pub key_type: DataType,
}

type ColumnEntries = Vec<(ColumnRequest, Vec<Column>)>;
type IndexEntries = Vec<(IndexRequest, FileSizes, StoredEntries)>;

/// Decoded data files and index directories (see the module docs).
#[derive(Debug, Default)]
pub struct DecodedFiles {
    /// By (path, size): the columns each request decoded.
    columns: Mutex<BTreeMap<(String, u64), ColumnEntries>>,
    /// By index directory: the stored pairs each request decoded from files of these sizes.
    indices: Mutex<BTreeMap<String, IndexEntries>>,
}

impl DecodedFiles {
    /// The columns `request` decoded from the `size` bytes at `path`, if remembered.
    pub fn columns(&self, path: &str, size: u64, request: &ColumnRequest) -> Option<Vec<Column>> {
        let columns = lock(&self.columns);
        let entries = columns.get(&(path.to_string(), size))?;
        entries
            .iter()
            .find(|(r, _)| r == request)
            .map(|(_, c)| c.clone())
    }

    /// Remembers what `request` decoded from the `size` bytes at `path`.
    pub fn keep_columns(
        &self,
        path: &str,
        size: u64,
        request: ColumnRequest,
        decoded: Vec<Column>,
    ) {
        let mut columns = lock(&self.columns);
        let entries = columns.entry((path.to_string(), size)).or_default();
        if !entries.iter().any(|(r, _)| *r == request) {
            entries.push((request, decoded));
        }
    }

    /// The stored pairs `request` decoded from the index files under `dir` when they had
    /// `sizes` (name and size of each file read), if remembered.
    pub fn index(
        &self,
        dir: &str,
        sizes: &FileSizes,
        request: &IndexRequest,
    ) -> Option<StoredEntries> {
        let indices = lock(&self.indices);
        indices
            .get(dir)?
            .iter()
            .find(|(r, s, _)| r == request && s == sizes)
            .map(|(_, _, stored)| stored.clone())
    }

    /// Remembers what `request` decoded from the index files under `dir` of `sizes`.
    pub fn keep_index(
        &self,
        dir: &str,
        sizes: FileSizes,
        request: IndexRequest,
        stored: StoredEntries,
    ) {
        let mut indices = lock(&self.indices);
        let entries = indices.entry(dir.to_string()).or_default();
        if !entries.iter().any(|(r, s, _)| *r == request && *s == sizes) {
            entries.push((request, sizes, stored));
        }
    }

    /// Forgets everything decoded from `path`: the data file there, and the index directory
    /// holding it.
    pub fn forget(&self, path: &str) {
        lock(&self.columns).retain(|(p, _), _| p != path);
        lock(&self.indices).retain(|dir, _| {
            !path
                .strip_prefix(dir.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
        });
    }

    /// How many decodes are remembered (data file requests, index requests).
    pub fn len(&self) -> (usize, usize) {
        (
            lock(&self.columns).values().map(Vec::len).sum(),
            lock(&self.indices).values().map(Vec::len).sum(),
        )
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == (0, 0)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use lance_reference::worked_example;

    use crate::storage::{LocalStorage, MemoryStorage, Storage, StorageWrite};
    use crate::{Dataset, ReadOptions, WriteOptions, write_version, write_version_in};

    #[test]
    fn a_remembered_decode_reads_as_a_fresh_one_and_a_write_forgets_it() {
        let versions = worked_example::versions().unwrap();
        let store = MemoryStorage::new();
        let dir = tempfile::tempdir().unwrap();
        for v in &versions {
            write_version_in(&store, v, &WriteOptions::default()).unwrap();
            write_version(dir.path(), v, &WriteOptions::default()).unwrap();
        }
        // The same files in memory as on disk, byte for byte.
        let local = LocalStorage::new(dir.path());
        for path in store.paths() {
            let size = store.size(&path).unwrap();
            assert_eq!(
                store.read_range(&path, 0..size).unwrap(),
                local.read_range(&path, 0..size).unwrap(),
                "{path}"
            );
        }
        let on_disk = Dataset::open(dir.path()).unwrap().read_all().unwrap();
        let in_memory = Dataset::open_in(Arc::new(store.clone()), ReadOptions::default()).unwrap();
        // Writing checked the files already there by decoding them: some decodes are kept.
        let kept = store.decoded().unwrap().len();
        assert!(
            kept.0 > 0,
            "the writer's checks decoded no data file: {kept:?}"
        );
        // Read twice: the second read is answered from what the first decoded, and both are
        // what a directory of the same files reads.
        let first = in_memory.read_all().unwrap();
        let remembered = store.decoded().unwrap().len();
        assert!(remembered.1 > 0, "no index decode was kept: {remembered:?}");
        let second = in_memory.read_all().unwrap();
        assert_eq!(
            store.decoded().unwrap().len(),
            remembered,
            "a hit decoded anew"
        );
        for ((a, _), ((b, _), (c, _))) in on_disk.iter().zip(first.iter().zip(&second)) {
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
            assert_eq!(format!("{a:?}"), format!("{c:?}"));
        }
        // A file written again is decoded again: damage of the same size is seen.
        let data = store
            .paths()
            .into_iter()
            .find(|p| p.starts_with("data/"))
            .unwrap();
        let size = store.size(&data).unwrap();
        store.write(&data, &vec![0u8; size as usize]).unwrap();
        assert!(
            in_memory.read_all().is_err(),
            "a zeroed data file read from memory as before"
        );
    }
}
