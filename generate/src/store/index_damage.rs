//! Damage to an index's files, for the negative cases of the index family.
//!
//! Invariant: the intact directory `_indices/<uuid>/` is never touched. The damaged files are
//! a copy under a directory of their own (its uuid derived from the old one), and only the
//! newest manifest is pointed at it, with its `files` list giving the copy's sizes, so every
//! earlier version still reads the intact index and the refusal is attributable to the one
//! thing the damage names. The one file written outside a damaged copy's directory is the
//! decoy of [`IndexFileDamage::EscapingName`], directly under `_indices/`, which no uuid
//! directory contains.

use std::path::Path;

use lance_reference::proto::lance::table as pb;
use lance_reference_io::Dataset;
use lance_reference_io::index_file::index_dir;
use lance_reference_io::index_file::{DEFAULT_BATCH_SIZE, btree_files_stating};
use lance_reference_io::manifest_file::{decode_manifest_file, encode_manifest_file};
use lance_reference_io::read::index_file_names;
use lance_reference_io::version_names::{VERSIONS_DIR, manifest_name};
use lance_reference_io::write::{index_files_bytes, stored_entries};
use sha2::{Digest, Sha256};

use lance_reference_io::DatasetError;
use lance_reference_io::index_file::IndexFileError;

use super::StoreError;
use crate::case::cell::CellError;
use crate::case::corruption::IndexFileDamage;
use crate::case::names::field_id;

/// Why an index's files could not be damaged as asked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IndexDamageError {
    /// A file could not be read.
    #[error("{path}: {error}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// The dataset, its manifest or the index could not be read or encoded.
    #[error("{0}")]
    Dataset(Box<DatasetError>),
    /// A damaged file could not be written.
    #[error("{0}")]
    Store(Box<StoreError>),
    /// The index's files could not be rewritten stating another page size.
    #[error("{0}")]
    IndexFile(Box<IndexFileError>),
    /// The value given for an entry does not fit the index's key.
    #[error("{0}")]
    Cell(#[from] CellError),
    /// The version's manifest has no index section.
    #[error("the version has no indices")]
    NoIndices,
    /// The version has no index of that name.
    #[error("no index {0:?}")]
    NoIndex(String),
    /// The index's metadata has no 16-byte uuid.
    #[error("the index has no 16-byte uuid")]
    NoUuid,
    /// The index's directory holds no file of that name.
    #[error("index {index:?} has no file {file:?}")]
    NoFile {
        /// Index name.
        index: String,
        /// File name.
        file: String,
    },
    /// The manifest lists no file of that name for the index.
    #[error("index {index:?} lists no file {file:?}")]
    NotListed {
        /// Index name.
        index: String,
        /// File name.
        file: String,
    },
    /// The index names no key field.
    #[error("the index has no key")]
    NoKey,
    /// The index's key field is not in the schema.
    #[error("the key is not in the schema")]
    KeyNotInSchema,
    /// The key's name does not lead back to it.
    #[error("the key has no name")]
    KeyUnnamed,
    /// The index has no entry at that row.
    #[error("index {index:?} has no entry for {fragment}/{offset}")]
    NoEntry {
        /// Index name.
        index: String,
        /// Fragment id.
        fragment: u64,
        /// Physical offset.
        offset: u32,
    },
}

impl From<DatasetError> for IndexDamageError {
    fn from(e: DatasetError) -> IndexDamageError {
        IndexDamageError::Dataset(Box::new(e))
    }
}

impl From<StoreError> for IndexDamageError {
    fn from(e: StoreError) -> IndexDamageError {
        IndexDamageError::Store(Box::new(e))
    }
}

impl From<IndexFileError> for IndexDamageError {
    fn from(e: IndexFileError) -> IndexDamageError {
        IndexDamageError::IndexFile(Box::new(e))
    }
}

/// Applies `damage` to index `name` of version `version` under `root`.
pub(super) fn damage(
    root: &Path,
    version: u64,
    name: &str,
    damage: &IndexFileDamage,
) -> Result<(), IndexDamageError> {
    let rel = format!("{VERSIONS_DIR}/{}", manifest_name(version));
    let bytes = std::fs::read(root.join(&rel)).map_err(|error| IndexDamageError::Read {
        path: rel.clone(),
        error,
    })?;
    let mut file = decode_manifest_file(&bytes, &rel)?;
    let section = file
        .index_section
        .as_mut()
        .ok_or(IndexDamageError::NoIndices)?;
    let meta = section
        .indices
        .iter_mut()
        .find(|i| i.name == name)
        .ok_or_else(|| IndexDamageError::NoIndex(name.to_string()))?;
    let old: [u8; 16] = meta
        .uuid
        .as_ref()
        .and_then(|u| u.uuid.as_slice().try_into().ok())
        .ok_or(IndexDamageError::NoUuid)?;
    let dataset = Dataset::open(root)?;
    let (snapshot, _) = dataset.read_version(version)?;
    let index = snapshot
        .index(name)
        .ok_or_else(|| IndexDamageError::NoIndex(name.to_string()))?;
    let no_file = |file: &str| IndexDamageError::NoFile {
        index: name.to_string(),
        file: file.to_string(),
    };
    let mut files: Vec<(String, Vec<u8>)> = index_file_names(index.kind)
        .iter()
        .map(|n| {
            let path = root.join(index_dir(&old)).join(n);
            std::fs::read(&path)
                .map(|b| ((*n).to_string(), b))
                .map_err(|error| IndexDamageError::Read {
                    path: path.display().to_string(),
                    error,
                })
        })
        .collect::<Result<_, _>>()?;
    let mut listed: Vec<(String, u64)> = meta
        .files
        .iter()
        .map(|f| (f.path.clone(), f.size_bytes))
        .collect();
    match damage {
        IndexFileDamage::Truncate { file: target } => {
            let f = files
                .iter_mut()
                .find(|(n, _)| n == target)
                .ok_or_else(|| no_file(target))?;
            let keep = f.1.len() / 2;
            f.1.truncate(keep);
        }
        IndexFileDamage::Remove { file: target } => {
            let before = files.len();
            files.retain(|(n, _)| n != target);
            if files.len() == before {
                return Err(no_file(target));
            }
        }
        IndexFileDamage::EscapingName {
            file: target,
            decoy_entry,
        } => {
            let decoy_files = match decoy_entry {
                None => files.clone(),
                Some(e) => lying_files(&snapshot, index, name, e.fragment, e.offset, &e.value)?,
            };
            let (_, bytes) = decoy_files
                .iter()
                .find(|(n, _)| n == target)
                .ok_or_else(|| no_file(target))?;
            let entry = listed
                .iter_mut()
                .find(|(n, _)| n == target)
                .ok_or_else(|| IndexDamageError::NotListed {
                    index: name.to_string(),
                    file: target.to_string(),
                })?;
            super::write(root, &format!("_indices/{target}"), bytes)?;
            entry.0 = format!("../{target}");
        }
        IndexFileDamage::SetEntry {
            fragment,
            offset,
            value,
        } => {
            files = lying_files(&snapshot, index, name, *fragment, *offset, value)?;
        }
        IndexFileDamage::StateBatchSize { stated } => {
            let key = index
                .fields
                .first()
                .and_then(|k| snapshot.schema.field(*k))
                .ok_or(IndexDamageError::KeyNotInSchema)?;
            let stored = stored_entries(&snapshot, index)?;
            files = btree_files_stating(&key.data_type, &stored, DEFAULT_BATCH_SIZE, *stated)?;
        }
    }
    for (n, bytes) in &files {
        if let Some(l) = listed.iter_mut().find(|(x, _)| x == n) {
            l.1 = bytes.len() as u64;
        }
    }
    let uuid = damaged_uuid(&old);
    let dir = index_dir(&uuid);
    for (n, bytes) in &files {
        super::write(root, &format!("{dir}/{n}"), bytes)?;
    }
    meta.uuid = Some(pb::Uuid {
        uuid: uuid.to_vec(),
    });
    meta.files = listed
        .into_iter()
        .map(|(path, size_bytes)| pb::IndexFile { path, size_bytes })
        .collect();
    let out = encode_manifest_file(&file.manifest, file.index_section.as_ref())?;
    Ok(super::write(root, &rel, &out)?)
}

/// The files of `index` rewritten with the entry of `fragment`/`offset` holding `value`.
fn lying_files(
    snapshot: &lance_reference::model::Snapshot,
    index: &lance_reference::model::Index,
    name: &str,
    fragment: u64,
    offset: u32,
    value: &crate::case::cell::Cell,
) -> Result<Vec<(String, Vec<u8>)>, IndexDamageError> {
    let key = *index.fields.first().ok_or(IndexDamageError::NoKey)?;
    let key_name = snapshot
        .schema
        .field(key)
        .map(|f| f.name.clone())
        .ok_or(IndexDamageError::KeyNotInSchema)?;
    let id = field_id(&snapshot.schema, &key_name).ok_or(IndexDamageError::KeyUnnamed)?;
    let value = value.to_value(&snapshot.schema, id)?;
    let mut lying = index.clone();
    let entry = lying
        .entries
        .iter_mut()
        .find(|e| e.fragment == fragment && e.offset == offset)
        .ok_or_else(|| IndexDamageError::NoEntry {
            index: name.to_string(),
            fragment,
            offset,
        })?;
    entry.value = value;
    Ok(index_files_bytes(snapshot, &lying)?)
}

/// The uuid of a damaged copy: SHA-256 over a tag and the intact uuid, version nibble 8.
fn damaged_uuid(old: &[u8; 16]) -> [u8; 16] {
    let digest = Sha256::digest([b"lance-conformance damaged index\0".as_slice(), old].concat());
    let mut uuid = [0u8; 16];
    uuid.copy_from_slice(&digest[..16]);
    uuid[6] = (uuid[6] & 0x0f) | 0x80;
    uuid[8] = (uuid[8] & 0x3f) | 0x80;
    uuid
}
