//! Reading whole versions of a dataset directory.
//!
//! Invariant: [`Dataset::read_version`] returns a snapshot only after its manifest framing,
//! name/version agreement, reader flags, every path, every referenced file (data, overlay,
//! lineage, deletion) and the finished snapshot ([`Snapshot::validate`],
//! [`lance_reference::flags::check_for_read`]) have been checked; any failure is a [`DatasetError`]
//! naming the file and the manifest field. Files are read whole but only after their size is
//! checked against [`ReadOptions::max_file_bytes`], and nothing is expanded beyond
//! [`ReadOptions::max_fragment_rows`] rows per fragment. Every version listed stays readable
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
//! **Index entries (the kit's rule).** The manifest stores index metadata, not index
//! content. The reference defines an index's content as the resolved values at its
//! `dataset_version`: on read, entries are rebuilt by reading the snapshot at that version
//! (time travel) and resolving the index's first field for every live row of every covered
//! fragment that exists at that version ([`lance_reference::index_build::entries`]). An
//! index whose `dataset_version` has no manifest is an error.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::codec::decode_manifest;
use super::data_file::{MAX_DECODED_VALUES, read_data_file};
use super::deletion::{DeletionFile, read_deletion_file};
use super::error::DatasetError;
use super::layout::{FileLayout, Layout};
use super::manifest_file::decode_manifest_file;
use super::version_names::{VERSIONS_DIR, VersionEntry, list_versions};
use lance_reference::flags::check_reader_flags;
use lance_reference::index_build::entries as index_entries;
use lance_reference::model::{
    CREATED_AT_FIELD_ID, DataFile, DataType, LAST_UPDATED_AT_FIELD_ID, ROW_ID_FIELD_ID, Schema,
    Snapshot, TOMBSTONE_FIELD_ID, Value,
};
use lance_reference::readable::check_readable;

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

/// A dataset directory and the versions it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    root: PathBuf,
    entries: Vec<VersionEntry>,
    options: ReadOptions,
}

/// Reads `rel` (a root-relative path) whole, refusing files over `limit`. `field` names the
/// manifest field that referenced the file.
pub fn read_bounded(
    root: &Path,
    rel: &str,
    limit: u64,
    field: &str,
) -> Result<Vec<u8>, DatasetError> {
    let io = |operation, e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::NotFound {
            DatasetError::MissingFile {
                file: rel.to_string(),
                field: field.to_string(),
            }
        } else {
            DatasetError::Io {
                file: rel.to_string(),
                operation,
                problem: e.to_string(),
            }
        }
    };
    let file = std::fs::File::open(root.join(rel)).map_err(|e| io("open", e))?;
    let size = file.metadata().map_err(|e| io("stat", e))?.len();
    if size > limit {
        return Err(DatasetError::FileTooLarge {
            file: rel.to_string(),
            size,
            limit,
        });
    }
    let mut bytes = Vec::new();
    // `take` keeps the bound even if the file grows after the size check.
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| io("read", e))?;
    if bytes.len() as u64 > limit {
        return Err(DatasetError::FileTooLarge {
            file: rel.to_string(),
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
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

/// Decodes the columns of one data file as the model wants them (see the module docs).
pub fn read_file_columns(
    root: &Path,
    schema: &Schema,
    file: &DataFile,
    layout: &FileLayout,
    overlay: bool,
    field: &str,
    limit: u64,
) -> Result<Vec<Vec<Value>>, DatasetError> {
    let bytes = read_bounded(root, &layout.path, limit, &format!("{field}.path"))?;
    if layout.file_size_bytes != 0 && layout.file_size_bytes != bytes.len() as u64 {
        return Err(DatasetError::InvalidField {
            file: layout.path.clone(),
            field: format!("{field}.file_size_bytes"),
            problem: format!(
                "says {} bytes, the file has {}",
                layout.file_size_bytes,
                bytes.len()
            ),
        });
    }
    let data_err = |error| DatasetError::DataFile {
        field: field.to_string(),
        error,
    };
    let contents = read_data_file(&bytes, &layout.path).map_err(data_err)?;
    let mut columns = Vec::with_capacity(file.fields.len());
    for (p, &id) in file.fields.iter().enumerate() {
        let Some(data_type) = position_type(schema, id, overlay) else {
            columns.push(Vec::new());
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
                    .schema()
                    .get(index)
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
                    .schema()
                    .get(index)
                    .map(|f| f.logical_type.clone())
                    .unwrap_or_default();
                DataType::from_logical_type(&logical).ok_or_else(|| DatasetError::Unsupported {
                    file: layout.path.clone(),
                    field: format!("{field}.fields[{p}]"),
                    feature: format!("field {id} (not in the schema) has file type {logical:?}"),
                })?
            }
        };
        columns.push(contents.column(index, &data_type).map_err(data_err)?);
    }
    Ok(columns)
}

impl Dataset {
    /// Opens the dataset at `root` with default [`ReadOptions`], listing its versions.
    pub fn open(root: &Path) -> Result<Dataset, DatasetError> {
        Dataset::open_with(root, ReadOptions::default())
    }

    /// Opens the dataset at `root` with `options`.
    pub fn open_with(root: &Path, options: ReadOptions) -> Result<Dataset, DatasetError> {
        let entries = list_versions(root)?;
        Ok(Dataset {
            root: root.to_path_buf(),
            entries,
            options,
        })
    }

    /// The dataset root.
    pub fn root(&self) -> &Path {
        &self.root
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
        self.read_uncached(version, &mut BTreeMap::new())
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
        let read = self.read_uncached(version, cache)?;
        cache.insert(version, read.clone());
        Ok(read)
    }

    /// Reads `version` without caching it (older versions its indices need are cached), so a
    /// single read does not copy the whole table.
    fn read_uncached(
        &self,
        version: u64,
        cache: &mut BTreeMap<u64, (Snapshot, Layout)>,
    ) -> Result<(Snapshot, Layout), DatasetError> {
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
        let bytes = read_bounded(&self.root, &file, limit, "_versions listing")?;
        let manifest_file = decode_manifest_file(&bytes, &file)?;
        if manifest_file.manifest.version != version {
            return Err(DatasetError::VersionMismatch {
                file,
                named: version,
                inner: manifest_file.manifest.version,
            });
        }
        let (mut snapshot, layout) =
            decode_manifest(&manifest_file, &file, self.options.max_fragment_rows)?;
        let flags = |error| DatasetError::Flags {
            file: file.clone(),
            error,
        };
        check_reader_flags(snapshot.reader_flags).map_err(flags)?;
        for (i, (fragment, fl)) in snapshot
            .fragments
            .iter_mut()
            .zip(&layout.fragments)
            .enumerate()
        {
            for (j, (df, l)) in fragment.files.iter_mut().zip(&fl.files).enumerate() {
                let field = format!("{file}: fragments[{i}].files[{j}]");
                df.columns =
                    read_file_columns(&self.root, &snapshot.schema, df, l, false, &field, limit)?;
            }
            for (k, (o, l)) in fragment.overlays.iter_mut().zip(&fl.overlays).enumerate() {
                let field = format!("{file}: fragments[{i}].overlays[{k}].data_file");
                o.file.columns = read_file_columns(
                    &self.root,
                    &snapshot.schema,
                    &o.file,
                    l,
                    true,
                    &field,
                    limit,
                )?;
            }
            if let Some(d) = &fl.deletion {
                let field = format!("{file}: fragments[{i}].deletion_file");
                let bytes = read_bounded(&self.root, &d.path, limit, &field)?;
                let stored = DeletionFile {
                    file_type: d.form.proto_value(),
                    read_version: d.read_version,
                    id: d.id,
                    num_deleted_rows: d.num_deleted_rows,
                    base_id: None,
                };
                fragment.deletions =
                    read_deletion_file(fragment.id, &stored, &bytes, fragment.physical_rows)
                        .map_err(|error| DatasetError::FileFormat { field, error })?;
            }
        }
        check_readable(&snapshot).map_err(|error| DatasetError::Model {
            file: file.clone(),
            error: Box::new(error),
        })?;
        for n in 0..snapshot.indices.len() {
            let dataset_version = snapshot.indices[n].dataset_version;
            let entries = if dataset_version == version {
                index_entries(&snapshot, &snapshot.indices[n])
            } else if dataset_version < version {
                let (older, _) = self
                    .read_cached(dataset_version, cache)
                    .map_err(|e| match e {
                        DatasetError::VersionNotFound { version, .. } => {
                            DatasetError::VersionNotFound {
                                version,
                                context: format!("{file}: indices[{n}].dataset_version"),
                            }
                        }
                        other => other,
                    })?;
                index_entries(&older, &snapshot.indices[n])
            } else {
                continue; // from the future: `validate` above refused it
            };
            snapshot.indices[n].entries = entries.map_err(|error| DatasetError::Model {
                file: format!("{file}: indices[{n}]"),
                error: Box::new(error),
            })?;
        }
        Ok((snapshot, layout))
    }
}
