//! Equivalent re-encodings of a written version ([`ReencodePlan`]): other bytes, the same
//! table.
//!
//! Invariant: only the manifest of the version the plan names is rewritten (a detached copy is
//! a new file beside it; V1 names rename every manifest, bytes unchanged), and a rewritten data file gets a new name (`<name>-reencoded.lance`),
//! so every other version keeps reading the files it was written with. Whether the version still reads as committed is not assumed
//! here: [`super::write_and_read_back`] checks it like every other version.

use std::path::Path;

use super::bytes::{inline_bytes, set_inline};
use super::{StoreError, write};
use crate::scenario::corrupt::CorruptError;
use crate::scenario::edits::ReencodePlan;
use lance_reference::model::{DataFile, DataType, Snapshot};
use lance_reference_io::data_file::DataFileVersion;
use lance_reference_io::manifest_file::{
    decode_manifest_file, encode_manifest_file, encode_manifest_file_with_transaction,
};
use lance_reference_io::version_names::{DETACHED_VERSION_MASK, VERSIONS_DIR, manifest_name};
use lance_reference_io::write::data_file_bytes_in;

/// Applies `plan` to version `snapshot.version` under `root` (`snapshot` is the version as
/// committed; a rewritten file's new name is written into it, so that it says what the version
/// must read back as).
pub(super) fn apply(
    root: &Path,
    snapshot: &mut Snapshot,
    plan: &ReencodePlan,
) -> Result<(), StoreError> {
    let missing = |problem: String| {
        StoreError::Corrupt(CorruptError::Target {
            what: "reencode".to_string(),
            problem,
        })
    };
    if let ReencodePlan::V1ManifestNames = plan {
        for v in 1..=snapshot.version {
            let from = root.join(VERSIONS_DIR).join(manifest_name(v));
            if from.exists() {
                std::fs::rename(&from, root.join(VERSIONS_DIR).join(format!("{v}.manifest")))
                    .map_err(|e| missing(format!("{}: {e}", from.display())))?;
            }
        }
        return Ok(());
    }
    let rel = format!("{VERSIONS_DIR}/{}", manifest_name(snapshot.version));
    let bytes = std::fs::read(root.join(&rel)).map_err(|e| missing(e.to_string()))?;
    let mut file = decode_manifest_file(&bytes, &rel)?;
    let fragment_id = match plan {
        ReencodePlan::Columns { fragment, .. } | ReencodePlan::InlineLineage { fragment, .. } => {
            *fragment
        }
        ReencodePlan::V1ManifestNames => return Ok(()), // applied above
        ReencodePlan::TransactionSection => {
            return write(
                root,
                &rel,
                &encode_manifest_file_with_transaction(
                    &file.manifest,
                    file.index_section.as_ref(),
                    Some(&[]),
                )?,
            );
        }
        ReencodePlan::DetachedCopy => {
            let detached = DETACHED_VERSION_MASK | snapshot.version;
            file.manifest.version = detached;
            return write(
                root,
                &format!("{VERSIONS_DIR}/d{detached}.manifest"),
                &encode_manifest_file(&file.manifest, file.index_section.as_ref())?,
            );
        }
        ReencodePlan::EmptyIndexSection => {
            if file.index_section.is_some() {
                return Err(missing("the version already has an index section".into()));
            }
            return write(
                root,
                &rel,
                &encode_manifest_file(&file.manifest, Some(&Default::default()))?,
            );
        }
        ReencodePlan::WriterFlags { bits } => {
            file.manifest.writer_feature_flags |= bits;
            snapshot.writer_flags |= bits;
            return write(
                root,
                &rel,
                &encode_manifest_file(&file.manifest, file.index_section.as_ref())?,
            );
        }
        ReencodePlan::Flags { bits } => {
            file.manifest.reader_feature_flags |= bits;
            file.manifest.writer_feature_flags |= bits;
            snapshot.reader_flags |= bits;
            snapshot.writer_flags |= bits;
            return write(
                root,
                &rel,
                &encode_manifest_file(&file.manifest, file.index_section.as_ref())?,
            );
        }
    };
    let f = file
        .manifest
        .fragments
        .iter_mut()
        .find(|f| f.id == fragment_id)
        .ok_or_else(|| missing(format!("no fragment {fragment_id}")))?;
    match plan {
        ReencodePlan::Columns {
            file: k,
            overlay,
            order,
            ..
        } => {
            let fragment = snapshot
                .fragment(fragment_id)
                .map_err(|e| missing(e.to_string()))?;
            let model = match overlay {
                None => fragment
                    .files
                    .get(*k)
                    .ok_or_else(|| missing(format!("no file {k}")))?,
                Some(o) => {
                    &fragment
                        .overlays
                        .get(*o)
                        .ok_or_else(|| missing(format!("no overlay {o}")))?
                        .file
                }
            };
            let stem = model.path.strip_suffix(".lance").unwrap_or(&model.path);
            let permuted = DataFile {
                path: format!("{stem}-reencoded.lance"),
                fields: order.iter().map(|&p| model.fields[p]).collect(),
                columns: order.iter().map(|&p| model.columns[p].clone()).collect(),
            };
            let df = match overlay {
                None => f
                    .files
                    .get_mut(*k)
                    .ok_or_else(|| missing(format!("no data file at position {k}")))?,
                Some(o) => f
                    .overlays
                    .get_mut(*o)
                    .and_then(|x| x.data_file.as_mut())
                    .ok_or_else(|| missing(format!("no overlay value file at position {o}")))?,
            };
            // The file keeps its own version (a re-encoding changes the column order only).
            let version = match (df.file_major_version, df.file_minor_version) {
                (2, 0) | (0, 3) => DataFileVersion::V2_0,
                (2, 1) => DataFileVersion::V2_1,
                (2, 2) => DataFileVersion::V2_2,
                (major, minor) => {
                    return Err(missing(format!(
                        "the store re-encodes no data file version {major}.{minor}"
                    )));
                }
            };
            if !version.struct_has_column()
                && permuted.fields.iter().any(|&id| {
                    snapshot
                        .schema
                        .field(id)
                        .is_some_and(|x| x.data_type == DataType::Struct)
                })
            {
                return Err(missing(
                    "a v2.1+ file holding a struct (its positions differ from the model's)".into(),
                ));
            }
            let bytes = data_file_bytes_in(version, &snapshot.schema, &permuted)?;
            df.path = permuted.path.clone();
            df.column_indices = (0..order.len())
                .map(|p| order.iter().position(|&q| q == p).unwrap_or(p) as i32)
                .collect();
            df.file_size_bytes = bytes.len() as u64;
            write(root, &format!("data/{}", permuted.path), &bytes)?;
            if let Some(x) = snapshot.fragments.iter_mut().find(|x| x.id == fragment_id) {
                let model = match overlay {
                    None => x.files.get_mut(*k),
                    Some(o) => x.overlays.get_mut(*o).map(|o| &mut o.file),
                };
                if let Some(model) = model {
                    model.path = permuted.path;
                }
            }
        }
        ReencodePlan::InlineLineage {
            sequence, bytes, ..
        } => {
            if inline_bytes(f, *sequence).is_none() {
                return Err(missing("that sequence is not stored inline".into()));
            }
            set_inline(f, *sequence, bytes.clone());
        }
        ReencodePlan::Flags { .. }
        | ReencodePlan::WriterFlags { .. }
        | ReencodePlan::EmptyIndexSection
        | ReencodePlan::DetachedCopy
        | ReencodePlan::TransactionSection
        | ReencodePlan::V1ManifestNames => {} // applied above
    }
    write(
        root,
        &rel,
        &encode_manifest_file(&file.manifest, file.index_section.as_ref())?,
    )
}
