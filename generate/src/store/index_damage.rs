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

use crate::case::corruption::IndexFileDamage;
use crate::case::names::field_id;

/// Applies `damage` to index `name` of version `version` under `root`.
pub(super) fn damage(
    root: &Path,
    version: u64,
    name: &str,
    damage: &IndexFileDamage,
) -> Result<(), String> {
    let rel = format!("{VERSIONS_DIR}/{}", manifest_name(version));
    let bytes = std::fs::read(root.join(&rel)).map_err(|e| format!("{rel}: {e}"))?;
    let mut file = decode_manifest_file(&bytes, &rel).map_err(|e| e.to_string())?;
    let section = file
        .index_section
        .as_mut()
        .ok_or("the version has no indices")?;
    let meta = section
        .indices
        .iter_mut()
        .find(|i| i.name == name)
        .ok_or_else(|| format!("no index {name:?}"))?;
    let old: [u8; 16] = meta
        .uuid
        .as_ref()
        .and_then(|u| u.uuid.as_slice().try_into().ok())
        .ok_or("the index has no 16-byte uuid")?;
    let dataset = Dataset::open(root).map_err(|e| e.to_string())?;
    let (snapshot, _) = dataset.read_version(version).map_err(|e| e.to_string())?;
    let index = snapshot
        .index(name)
        .ok_or_else(|| format!("no index {name:?}"))?;
    let mut files: Vec<(String, Vec<u8>)> = index_file_names(index.kind)
        .iter()
        .map(|n| {
            let path = root.join(index_dir(&old)).join(n);
            std::fs::read(&path)
                .map(|b| ((*n).to_string(), b))
                .map_err(|e| format!("{}: {e}", path.display()))
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
                .ok_or_else(|| format!("index {name:?} has no file {target:?}"))?;
            let keep = f.1.len() / 2;
            f.1.truncate(keep);
        }
        IndexFileDamage::Remove { file: target } => {
            let before = files.len();
            files.retain(|(n, _)| n != target);
            if files.len() == before {
                return Err(format!("index {name:?} has no file {target:?}"));
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
                .ok_or_else(|| format!("index {name:?} has no file {target:?}"))?;
            let entry = listed
                .iter_mut()
                .find(|(n, _)| n == target)
                .ok_or_else(|| format!("index {name:?} lists no file {target:?}"))?;
            super::write(root, &format!("_indices/{target}"), bytes).map_err(|e| e.to_string())?;
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
                .ok_or("the key is not in the schema")?;
            let stored = stored_entries(&snapshot, index).map_err(|e| e.to_string())?;
            files = btree_files_stating(&key.data_type, &stored, DEFAULT_BATCH_SIZE, *stated)
                .map_err(|e| e.to_string())?;
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
        super::write(root, &format!("{dir}/{n}"), bytes).map_err(|e| e.to_string())?;
    }
    meta.uuid = Some(pb::Uuid {
        uuid: uuid.to_vec(),
    });
    meta.files = listed
        .into_iter()
        .map(|(path, size_bytes)| pb::IndexFile { path, size_bytes })
        .collect();
    let out = encode_manifest_file(&file.manifest, file.index_section.as_ref())
        .map_err(|e| e.to_string())?;
    super::write(root, &rel, &out).map_err(|e| e.to_string())
}

/// The files of `index` rewritten with the entry of `fragment`/`offset` holding `value`.
fn lying_files(
    snapshot: &lance_reference::model::Snapshot,
    index: &lance_reference::model::Index,
    name: &str,
    fragment: u64,
    offset: u32,
    value: &crate::case::cell::Cell,
) -> Result<Vec<(String, Vec<u8>)>, String> {
    let key = *index.fields.first().ok_or("the index has no key")?;
    let key_name = snapshot
        .schema
        .field(key)
        .map(|f| f.name.clone())
        .ok_or("the key is not in the schema")?;
    let id = field_id(&snapshot.schema, &key_name).ok_or("the key has no name")?;
    let value = value
        .to_value(&snapshot.schema, id)
        .map_err(|e| e.to_string())?;
    let mut lying = index.clone();
    let entry = lying
        .entries
        .iter_mut()
        .find(|e| e.fragment == fragment && e.offset == offset)
        .ok_or_else(|| format!("index {name:?} has no entry for {fragment}/{offset}"))?;
    entry.value = value;
    index_files_bytes(snapshot, &lying).map_err(|e| e.to_string())
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
