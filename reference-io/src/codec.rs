//! `lance.table.Manifest` (+ `IndexSection`) <-> [`Snapshot`] + [`Layout`].
//!
//! Invariant: [`decode_manifest`] turns a manifest into a snapshot *skeleton* only after every
//! path in it is confined to the dataset root ([`super::paths`]), every required field is
//! present, every bitmap and inline lineage sequence decodes, and every fragment's
//! `physical_rows` is within the reader's limit (so no sequence is expanded beyond it). The
//! skeleton holds no bytes from other files: data-file columns are empty, deletion sets are
//! empty and index entries are empty; [`super::read`] fills them and the [`Layout`] says
//! where from. [`encode_manifest`] is its inverse for everything the model holds, writing
//! what Lance 14 writes where the model is silent.
//!
//! Decisions where the sources leave room:
//! - **writer_version** is always written, as `{library: "lance-conformance", version: <crate
//!   version>}`. Lance stops trusting `physical_rows` (and may auto-migrate) when the field is
//!   absent; a library other than `"lance"` is accepted and only skips workarounds for old
//!   Lance releases.
//! - **data_format** is written as `{file_format: "lance", version: "2.0"}`, the format of
//!   every data file this kit writes (`file_major_version` 2, `file_minor_version` 0). On read
//!   each data file's own version pair decides (spec DS-FILE-3): v2.0 (`(2,0)` or `(0,3)`),
//!   v2.1 and v2.2 are read, and every other pair is refused as `unsupported`, naming it.
//! - **timestamp** is never written (no clock); **transaction_file** is empty.
//! - **schema_metadata** is written as the [`Layout`] recorded it, so reading and writing a
//!   manifest keeps the table's schema metadata.
//! - **max_fragment_id** is written as the larger of the largest fragment id and the value
//!   the [`Layout`] recorded (absent when both are): a manifest read and written again keeps
//!   a stored value above every present id (its fragment was removed), so that id is never
//!   handed out again. On read, a stored value below a real fragment id is refused: a writer
//!   trusting it would reuse that id.
//! - **Fragment ids** are u64 in the protobuf but 32-bit everywhere else (row addresses,
//!   `max_fragment_id`, index fragment bitmaps), so a fragment id above `u32::MAX` is refused
//!   on read as `invalid_field` naming `fragments[i].id` (spec DS-FRAG-1), and is unwritable.
//! - **Schema fields** are written as Lance writes them: `type` 0, the v1 `encoding` hint
//!   (PLAIN for fixed-width types, VAR_BINARY for strings, none for structs; v2 data files
//!   never use it), `logical_type` in Lance's spelling
//!   ([`lance_reference::model::DataType::logical_type`]).
//! - **Indices**: `uuid` is derived from the index name and `dataset_version`
//!   ([`index_uuid`]); `index_details` is `/lance.table.BTreeIndexDetails` (empty value) for a
//!   BTree and `/lance.index.pb.VectorIndexDetails` (flat compression, L2:
//!   [`vector_details_value`]) for a vector index; `index_version` is 1; `fragment_bitmap` is
//!   the optimized roaring serialization, or empty for "unknown"; `files` lists the index
//!   directory's files with their sizes ([`super::index_file`], filled in by the writer);
//!   `covering_fields` are the fields after the key. No `created_at`. On read, a
//!   `covering_fields` that is not the suffix of `fields` after the key is unsupported, and a
//!   `files` path must be a plain file name. Index entries live in the index files: see
//!   [`super::read`].
//! - **stable_row_ids** is reader flag bit 2 (as Lance's `uses_stable_row_ids`).
//! - **max_allocated_field_id**, **base_paths** (unless a file uses a `base_id`),
//!   **table_metadata**, **branch**, **tag** and the transaction fields are not modelled and
//!   ignored on read.

use std::collections::BTreeMap;

use prost_types::Any;
use roaring::RoaringBitmap;
use sha2::{Digest, Sha256};

use super::deletion::{DeletionFile, DeletionFileType};
use super::error::DatasetError;
use super::layout::{
    DataFormat, DeletionLayout, FileLayout, FragmentLayout, IndexLayout, Layout, WriterVersion,
};
use super::manifest_file::ManifestFile;
use super::paths::{checked_relative, data_file_path, refuse_base_id};
use super::roaring_format::{read_bitmap, write_bitmap};
use lance_reference::flags::{FLAG_STABLE_ROW_IDS, FileFormatVersion};
use lance_reference::lineage::{RowDatasetVersionSequence, RowIdSequence};
use lance_reference::model::{
    Coverage, DataFile, DataType, Field, Fragment, Index, IndexKind, Lineage, LineageSequence,
    Overlay, Schema, Snapshot,
};
use lance_reference::proto::lance::file as pbf;
use lance_reference::proto::lance::table as pb;
use pb::data_fragment::{
    CreatedAtVersionSequence, LastUpdatedAtVersionSequence, RowIdSequence as RowIdArm,
};
use pb::data_overlay_file::Coverage as CoverageArm;

/// `writer_version.library` of manifests this kit writes.
pub const WRITER_LIBRARY: &str = "lance-conformance";
/// `data_format.file_format` written.
pub const FILE_FORMAT: &str = "lance";
/// `data_format.version` written.
pub const DATA_FORMAT_VERSION: &str = "2.0";
/// `index_details.type_url` of a BTree index.
pub const BTREE_DETAILS_URL: &str = "/lance.table.BTreeIndexDetails";
/// `index_details.type_url` of a vector index.
pub const VECTOR_DETAILS_URL: &str = "/lance.index.pb.VectorIndexDetails";
/// `index_version` written.
pub const INDEX_VERSION: i32 = 1;
/// The data file version pair written (`file_major_version`, `file_minor_version`).
pub const DATA_FILE_VERSION: (u32, u32) = (2, 0);
/// The data file versions read (spec DS-FILE-3): v2.0 (also stored as (0, 3)), v2.1, v2.2.
pub const READ_DATA_FILE_VERSIONS: [FileFormatVersion; 3] = [
    FileFormatVersion { major: 2, minor: 0 },
    FileFormatVersion { major: 2, minor: 1 },
    FileFormatVersion { major: 2, minor: 2 },
];

/// The uuid of an index: the first 16 bytes of SHA-256 over a fixed tag, the name and the
/// `dataset_version`, with the RFC 9562 version nibble set to 8 (custom) and the variant bits
/// to `10`. Deterministic, so rewriting a version gives the same bytes, and the same index
/// keeps its uuid in every version that carries it.
pub fn index_uuid(name: &str, dataset_version: u64) -> [u8; 16] {
    let mut hasher = Sha256::new();
    hasher.update(b"lance-conformance index\0");
    hasher.update(name.as_bytes());
    hasher.update([0]);
    hasher.update(dataset_version.to_le_bytes());
    let digest = hasher.finalize();
    let mut uuid = [0u8; 16];
    uuid.copy_from_slice(&digest[..16]);
    uuid[6] = (uuid[6] & 0x0f) | 0x80;
    uuid[8] = (uuid[8] & 0x3f) | 0x80;
    uuid
}

/// The model schema as Lance schema entries (pre-order).
pub fn schema_to_proto(schema: &Schema) -> Vec<pbf::Field> {
    schema
        .fields()
        .iter()
        .map(|f| pbf::Field {
            name: f.name.clone(),
            id: f.id,
            parent_id: f.parent_id,
            logical_type: f.data_type.logical_type(),
            nullable: f.nullable,
            encoding: match f.data_type {
                DataType::Struct => pbf::Encoding::None,
                DataType::Utf8 => pbf::Encoding::VarBinary,
                _ => pbf::Encoding::Plain,
            } as i32,
            ..Default::default()
        })
        .collect()
}

/// Lance schema entries as a validated model schema.
pub fn schema_from_proto(fields: &[pbf::Field], file: &str) -> Result<Schema, DatasetError> {
    let mut out = Vec::with_capacity(fields.len());
    for (i, f) in fields.iter().enumerate() {
        let data_type = DataType::from_logical_type(&f.logical_type).ok_or_else(|| {
            DatasetError::Unsupported {
                file: file.to_string(),
                field: format!("fields[{i}].logical_type"),
                feature: format!("logical type {:?}", f.logical_type),
            }
        })?;
        out.push(Field {
            id: f.id,
            parent_id: f.parent_id,
            name: f.name.clone(),
            data_type,
            nullable: f.nullable,
        });
    }
    Schema::new(out).map_err(|error| DatasetError::Model {
        file: file.to_string(),
        error: Box::new(error),
    })
}

/// Decodes a manifest file into a snapshot skeleton and its layout (see the module docs).
/// `file` is the manifest's root-relative path; `max_fragment_rows` bounds `physical_rows`.
pub fn decode_manifest(
    manifest_file: &ManifestFile,
    file: &str,
    max_fragment_rows: u64,
) -> Result<(Snapshot, Layout), DatasetError> {
    decode_manifest_with(manifest_file, file, max_fragment_rows, true)
}

/// [`decode_manifest`], but without `lineage` every inline lineage sequence is left empty (its
/// kind kept) once its fragment is decoded: the same checks in the same order, and the same
/// errors, with at most one fragment's lineage expanded at a time. For a reader that holds a
/// version at its manifest level and decodes a fragment again ([`decode_fragment_at`]) when it
/// needs the fragment's lineage.
pub fn decode_manifest_with(
    manifest_file: &ManifestFile,
    file: &str,
    max_fragment_rows: u64,
    lineage: bool,
) -> Result<(Snapshot, Layout), DatasetError> {
    let m = &manifest_file.manifest;
    let schema = schema_from_proto(&m.fields, file)?;
    let base_ids: Vec<u32> = m.base_paths.iter().map(|b| b.id).collect();
    let mut fragments = Vec::with_capacity(m.fragments.len());
    let mut fragment_layouts = Vec::with_capacity(m.fragments.len());
    for (i, f) in m.fragments.iter().enumerate() {
        let (fragment, layout) = decode_fragment(
            f,
            &format!("fragments[{i}]"),
            file,
            &base_ids,
            max_fragment_rows,
        )?;
        let mut fragment = fragment;
        if !lineage {
            drop_lineage_values(&mut fragment);
        }
        fragments.push(fragment);
        fragment_layouts.push(layout);
    }
    if let (Some(stored), Some(real)) = (m.max_fragment_id, fragments.iter().map(|f| f.id).max()) {
        if u64::from(stored) < real {
            return Err(DatasetError::InvalidField {
                file: file.to_string(),
                field: "max_fragment_id".into(),
                problem: format!("{stored} is below fragment id {real}"),
            });
        }
    }
    let (indices, index_layouts) = match &manifest_file.index_section {
        None => (Vec::new(), Vec::new()),
        Some(section) => decode_indices(section, file, &base_ids)?,
    };
    let snapshot = Snapshot {
        version: m.version,
        schema,
        fragments,
        indices,
        config: m
            .config
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        stable_row_ids: m.reader_feature_flags & FLAG_STABLE_ROW_IDS != 0,
        next_row_id: m.next_row_id,
        reader_flags: m.reader_feature_flags,
        writer_flags: m.writer_feature_flags,
    };
    let layout = Layout {
        manifest: file.to_string(),
        writer_version: m.writer_version.as_ref().map(|w| WriterVersion {
            library: w.library.clone(),
            version: w.version.clone(),
        }),
        data_format: m.data_format.as_ref().map(|d| DataFormat {
            file_format: d.file_format.clone(),
            version: d.version.clone(),
        }),
        timestamp: m.timestamp.as_ref().map(|t| (t.seconds, t.nanos)),
        max_fragment_id: m.max_fragment_id,
        schema_metadata: m
            .schema_metadata
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        fragments: fragment_layouts,
        indices: index_layouts,
    };
    Ok((snapshot, layout))
}

/// Empties every inline lineage sequence of `fragment` (its kind stays): 8 bytes per row and
/// sequence that a holder of a version's manifest level does not need.
pub fn drop_lineage_values(fragment: &mut Fragment) {
    for seq in [
        &mut fragment.lineage.row_ids,
        &mut fragment.lineage.created_at,
        &mut fragment.lineage.last_updated_at,
    ] {
        if let LineageSequence::Inline(values) = seq {
            *values = Vec::new();
        }
    }
}

/// Decodes fragment `i` of a manifest file alone, as [`decode_manifest`] decodes it (the
/// rest of the manifest is not checked here): for a reader that holds a version's manifest
/// without its fragments' lineage and decodes one fragment again when it needs it. `None` when
/// the manifest has no fragment `i`.
pub fn decode_fragment_at(
    manifest_file: &ManifestFile,
    i: usize,
    file: &str,
    max_fragment_rows: u64,
) -> Option<Result<(Fragment, FragmentLayout), DatasetError>> {
    let m = &manifest_file.manifest;
    let base_ids: Vec<u32> = m.base_paths.iter().map(|b| b.id).collect();
    let f = m.fragments.get(i)?;
    Some(decode_fragment(
        f,
        &format!("fragments[{i}]"),
        file,
        &base_ids,
        max_fragment_rows,
    ))
}

fn decode_data_file(
    df: &pb::DataFile,
    field: &str,
    file: &str,
    base_ids: &[u32],
) -> Result<(DataFile, FileLayout), DatasetError> {
    refuse_base_id(df.base_id, base_ids, file, &format!("{field}.base_id"))?;
    let path = data_file_path(&df.path, file, &format!("{field}.path"))?;
    let version = FileFormatVersion::from_pair(df.file_major_version, df.file_minor_version);
    if !READ_DATA_FILE_VERSIONS.contains(&version) {
        let unstable = if version == FileFormatVersion::from_pair(2, 3) {
            ", and 2.3 is unstable in Lance 14"
        } else {
            ""
        };
        return Err(DatasetError::Unsupported {
            file: file.to_string(),
            field: format!("{field}.file_major_version"),
            feature: format!(
                "data file version {}.{} (2.0, 2.1 and 2.2 are read{unstable})",
                df.file_major_version, df.file_minor_version
            ),
        });
    }
    if df.column_indices.len() < df.fields.len() {
        return Err(DatasetError::InvalidField {
            file: file.to_string(),
            field: format!("{field}.column_indices"),
            problem: format!(
                "{} column indices for {} fields (a v2 file needs one per field)",
                df.column_indices.len(),
                df.fields.len()
            ),
        });
    }
    let model = DataFile {
        path: df.path.clone(),
        fields: df.fields.clone(),
        columns: Vec::new(),
    };
    let layout = FileLayout {
        path,
        column_indices: df.column_indices.clone(),
        file_major_version: df.file_major_version,
        file_minor_version: df.file_minor_version,
        file_size_bytes: df.file_size_bytes,
    };
    Ok((model, layout))
}

fn decode_fragment(
    f: &pb::DataFragment,
    at: &str,
    file: &str,
    base_ids: &[u32],
    max_rows: u64,
) -> Result<(Fragment, FragmentLayout), DatasetError> {
    if u32::try_from(f.id).is_err() {
        return Err(DatasetError::InvalidField {
            file: file.to_string(),
            field: format!("{at}.id"),
            problem: format!(
                "fragment id {} is above 2^32 - 1: row addresses, max_fragment_id and index \
                 fragment bitmaps hold 32-bit fragment ids",
                f.id
            ),
        });
    }
    if f.physical_rows > max_rows {
        return Err(DatasetError::Unsupported {
            file: file.to_string(),
            field: format!("{at}.physical_rows"),
            feature: format!(
                "{} rows (this reader's limit is {max_rows})",
                f.physical_rows
            ),
        });
    }
    let mut files = Vec::with_capacity(f.files.len());
    let mut file_layouts = Vec::with_capacity(f.files.len());
    for (j, df) in f.files.iter().enumerate() {
        let (model, layout) = decode_data_file(df, &format!("{at}.files[{j}]"), file, base_ids)?;
        files.push(model);
        file_layouts.push(layout);
    }
    let mut overlays = Vec::with_capacity(f.overlays.len());
    let mut overlay_layouts = Vec::with_capacity(f.overlays.len());
    for (k, o) in f.overlays.iter().enumerate() {
        let here = format!("{at}.overlays[{k}]");
        let df = o
            .data_file
            .as_ref()
            .ok_or_else(|| DatasetError::MissingField {
                file: file.to_string(),
                field: format!("{here}.data_file"),
            })?;
        let (model, layout) = decode_data_file(df, &format!("{here}.data_file"), file, base_ids)?;
        let bitmap = |bytes: &[u8], field: String| {
            read_bitmap(bytes, file, &field).map_err(|error| DatasetError::FileFormat {
                field,
                error: Box::new(error),
            })
        };
        let coverage = match &o.coverage {
            None => {
                return Err(DatasetError::MissingField {
                    file: file.to_string(),
                    field: format!("{here}.coverage"),
                });
            }
            Some(CoverageArm::SharedOffsetBitmap(bytes)) => {
                Coverage::Dense(bitmap(bytes, format!("{here}.shared_offset_bitmap"))?)
            }
            Some(CoverageArm::FieldCoverage(fc)) => Coverage::Sparse(
                fc.offset_bitmaps
                    .iter()
                    .enumerate()
                    .map(|(n, b)| bitmap(b, format!("{here}.field_coverage.offset_bitmaps[{n}]")))
                    .collect::<Result<_, _>>()?,
            ),
        };
        overlays.push(Overlay {
            file: model,
            coverage,
            committed_version: o.committed_version,
        });
        overlay_layouts.push(layout);
    }
    let deletion = match &f.deletion_file {
        None => None,
        Some(d) => Some(decode_deletion(
            d,
            f.id,
            &format!("{at}.deletion_file"),
            file,
            base_ids,
        )?),
    };
    let lineage_err = |field: String| {
        move |error| DatasetError::Lineage {
            file: file.to_string(),
            field,
            error: Box::new(error),
        }
    };
    let rows = f.physical_rows;
    // [LIN-EXT-1]: an external arm names a byte range no rule locates; it is refused, never
    // read as an absent sequence.
    let external = |arm: &str| DatasetError::Unsupported {
        file: file.to_string(),
        field: format!("{at}.{arm}"),
        feature: "an external lineage arm (a byte range of another file)".into(),
    };
    let row_ids = match &f.row_id_sequence {
        None => LineageSequence::Absent,
        Some(RowIdArm::ExternalRowIds(_)) => return Err(external("external_row_ids")),
        Some(RowIdArm::ColumnRowIds(_)) => LineageSequence::Column,
        Some(RowIdArm::InlineRowIds(bytes)) => {
            let field = format!("{at}.inline_row_ids");
            let seq = RowIdSequence::decode(bytes).map_err(lineage_err(field.clone()))?;
            LineageSequence::Inline(seq.values(rows).map_err(lineage_err(field))?)
        }
    };
    let versions = |bytes: &[u8], field: String| -> Result<LineageSequence, DatasetError> {
        let seq = RowDatasetVersionSequence::decode(bytes).map_err(lineage_err(field.clone()))?;
        Ok(LineageSequence::Inline(
            seq.versions(rows).map_err(lineage_err(field))?,
        ))
    };
    let created_at = match &f.created_at_version_sequence {
        None => LineageSequence::Absent,
        Some(CreatedAtVersionSequence::ExternalCreatedAtVersions(_)) => {
            return Err(external("external_created_at_versions"));
        }
        Some(CreatedAtVersionSequence::ColumnCreatedAtVersions(_)) => LineageSequence::Column,
        Some(CreatedAtVersionSequence::InlineCreatedAtVersions(bytes)) => {
            versions(bytes, format!("{at}.inline_created_at_versions"))?
        }
    };
    let last_updated_at = match &f.last_updated_at_version_sequence {
        None => LineageSequence::Absent,
        Some(LastUpdatedAtVersionSequence::ExternalLastUpdatedAtVersions(_)) => {
            return Err(external("external_last_updated_at_versions"));
        }
        Some(LastUpdatedAtVersionSequence::ColumnLastUpdatedAtVersions(_)) => {
            LineageSequence::Column
        }
        Some(LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions(bytes)) => {
            versions(bytes, format!("{at}.inline_last_updated_at_versions"))?
        }
    };
    let fragment = Fragment {
        id: f.id,
        physical_rows: rows,
        files,
        deletions: RoaringBitmap::new(),
        overlays,
        lineage: Lineage {
            row_ids,
            created_at,
            last_updated_at,
        },
    };
    Ok((
        fragment,
        FragmentLayout {
            files: file_layouts,
            overlays: overlay_layouts,
            deletion,
        },
    ))
}

fn decode_deletion(
    d: &pb::DeletionFile,
    fragment: u64,
    field: &str,
    file: &str,
    base_ids: &[u32],
) -> Result<DeletionLayout, DatasetError> {
    refuse_base_id(d.base_id, base_ids, file, &format!("{field}.base_id"))?;
    let stored = DeletionFile {
        file_type: d.file_type,
        read_version: d.read_version,
        id: d.id,
        num_deleted_rows: d.num_deleted_rows,
        base_id: d.base_id,
    };
    let io = |error| DatasetError::FileFormat {
        field: format!("{field}.file_type"),
        error: Box::new(error),
    };
    let form = stored.file_type(fragment).map_err(io)?;
    let path = stored.relative_path(fragment).map_err(io)?;
    let path = checked_relative(&path, file, field)?;
    Ok(DeletionLayout {
        path,
        form,
        read_version: d.read_version,
        id: d.id,
        num_deleted_rows: d.num_deleted_rows,
    })
}

fn decode_indices(
    section: &pb::IndexSection,
    file: &str,
    base_ids: &[u32],
) -> Result<(Vec<Index>, Vec<IndexLayout>), DatasetError> {
    let mut indices = Vec::with_capacity(section.indices.len());
    let mut layouts = Vec::with_capacity(section.indices.len());
    for (n, meta) in section.indices.iter().enumerate() {
        let at = format!("indices[{n}]");
        refuse_base_id(meta.base_id, base_ids, file, &format!("{at}.base_id"))?;
        let uuid_bytes = meta
            .uuid
            .as_ref()
            .ok_or_else(|| DatasetError::MissingField {
                file: file.to_string(),
                field: format!("{at}.uuid"),
            })?;
        let uuid: [u8; 16] =
            uuid_bytes
                .uuid
                .as_slice()
                .try_into()
                .map_err(|_| DatasetError::InvalidField {
                    file: file.to_string(),
                    field: format!("{at}.uuid.uuid"),
                    problem: format!("{} bytes, a uuid has 16", uuid_bytes.uuid.len()),
                })?;
        let details = meta
            .index_details
            .as_ref()
            .ok_or_else(|| DatasetError::Unsupported {
                file: file.to_string(),
                field: format!("{at}.index_details"),
                feature: "an index without index_details (its kind is unknown)".into(),
            })?;
        let kind = index_kind(&details.type_url).ok_or_else(|| DatasetError::Unsupported {
            file: file.to_string(),
            field: format!("{at}.index_details.type_url"),
            feature: format!("index kind {:?}", details.type_url),
        })?;
        let fragment_bitmap = if meta.fragment_bitmap.is_empty() {
            None
        } else {
            let field = format!("{at}.fragment_bitmap");
            Some(
                read_bitmap(&meta.fragment_bitmap, file, &field).map_err(|error| {
                    DatasetError::FileFormat {
                        field,
                        error: Box::new(error),
                    }
                })?,
            )
        };
        indices.push(Index {
            name: meta.name.clone(),
            fields: meta.fields.clone(),
            dataset_version: meta.dataset_version,
            fragment_bitmap,
            kind,
            entries: Vec::new(),
        });
        if let Some(stranger) = meta
            .covering_fields
            .iter()
            .find(|f| !meta.fields.contains(f))
        {
            return Err(DatasetError::InvalidField {
                file: file.to_string(),
                field: format!("{at}.covering_fields"),
                problem: format!(
                    "covering field {stranger} is not among the index's fields {:?}",
                    meta.fields
                ),
            });
        }
        if !meta.covering_fields.is_empty()
            && meta.fields.get(1..) != Some(&meta.covering_fields[..])
        {
            return Err(DatasetError::Unsupported {
                file: file.to_string(),
                field: format!("{at}.covering_fields"),
                feature: format!(
                    "covering fields {:?} that are not the fields after the key in {:?}",
                    meta.covering_fields, meta.fields
                ),
            });
        }
        let mut files = Vec::with_capacity(meta.files.len());
        for (k, f) in meta.files.iter().enumerate() {
            let name_ok = !f.path.is_empty()
                && !f.path.contains('/')
                && !f.path.contains('\\')
                && f.path != "."
                && f.path != "..";
            if !name_ok {
                return Err(DatasetError::PathEscape {
                    file: file.to_string(),
                    field: format!("{at}.files[{k}].path"),
                    path: f.path.clone(),
                    problem: "an index file is named by a plain file name inside its directory",
                });
            }
            files.push((f.path.clone(), f.size_bytes));
        }
        layouts.push(IndexLayout {
            uuid,
            details_type_url: details.type_url.clone(),
            index_version: meta.index_version,
            created_at: meta.created_at,
            details_value: details.value.clone(),
            files,
            covering_fields: meta.covering_fields.clone(),
        });
    }
    Ok((indices, layouts))
}

/// The index kind a details type URL names; matching is on the message name after the last
/// `/`, as Lance matches it.
pub fn index_kind(type_url: &str) -> Option<IndexKind> {
    let name = type_url.rsplit('/').next().unwrap_or(type_url);
    match name {
        "lance.table.BTreeIndexDetails" | "BTreeIndexDetails" => Some(IndexKind::BTree),
        "lance.index.pb.VectorIndexDetails" | "VectorIndexDetails" => Some(IndexKind::Vector),
        _ => None,
    }
}

fn encode_data_file(file: &DataFile, layout: &FileLayout) -> pb::DataFile {
    pb::DataFile {
        path: file.path.clone(),
        fields: file.fields.clone(),
        column_indices: layout.column_indices.clone(),
        file_major_version: layout.file_major_version,
        file_minor_version: layout.file_minor_version,
        file_size_bytes: layout.file_size_bytes,
        base_id: None,
    }
}

fn misaligned(what: String) -> DatasetError {
    DatasetError::Unwritable {
        what,
        problem: "the layout is not aligned with the snapshot".into(),
    }
}

/// Encodes a snapshot and its layout as a Manifest and (when it has indices) an IndexSection.
/// The snapshot's stored flag words are written as they are; the caller decides them.
pub fn encode_manifest(
    snapshot: &Snapshot,
    layout: &Layout,
) -> Result<(pb::Manifest, Option<pb::IndexSection>), DatasetError> {
    let mut fragments = Vec::with_capacity(snapshot.fragments.len());
    for (i, f) in snapshot.fragments.iter().enumerate() {
        let fl = layout
            .fragments
            .get(i)
            .ok_or_else(|| misaligned(format!("fragments[{i}]")))?;
        if fl.files.len() != f.files.len() || fl.overlays.len() != f.overlays.len() {
            return Err(misaligned(format!("fragments[{i}]")));
        }
        let files = f
            .files
            .iter()
            .zip(&fl.files)
            .map(|(m, l)| encode_data_file(m, l))
            .collect();
        let overlays = f
            .overlays
            .iter()
            .zip(&fl.overlays)
            .map(|(o, l)| pb::DataOverlayFile {
                data_file: Some(encode_data_file(&o.file, l)),
                coverage: Some(match &o.coverage {
                    Coverage::Dense(b) => CoverageArm::SharedOffsetBitmap(write_bitmap(b)),
                    Coverage::Sparse(bs) => CoverageArm::FieldCoverage(pb::FieldCoverage {
                        offset_bitmaps: bs.iter().map(write_bitmap).collect(),
                    }),
                }),
                committed_version: o.committed_version,
            })
            .collect();
        let deletion_file = fl.deletion.as_ref().map(|d| pb::DeletionFile {
            file_type: d.form.proto_value(),
            read_version: d.read_version,
            id: d.id,
            num_deleted_rows: d.num_deleted_rows,
            base_id: None,
        });
        let row_id_sequence = match &f.lineage.row_ids {
            LineageSequence::Absent => None,
            LineageSequence::Column => Some(RowIdArm::ColumnRowIds(pb::RowLineageColumn {})),
            LineageSequence::Inline(v) => Some(RowIdArm::InlineRowIds(
                RowIdSequence::from_values(v).encode(),
            )),
        };
        let created_at_version_sequence = match &f.lineage.created_at {
            LineageSequence::Absent => None,
            LineageSequence::Column => Some(CreatedAtVersionSequence::ColumnCreatedAtVersions(
                pb::RowLineageColumn {},
            )),
            LineageSequence::Inline(v) => Some(CreatedAtVersionSequence::InlineCreatedAtVersions(
                RowDatasetVersionSequence::from_versions(v).encode(),
            )),
        };
        let last_updated_at_version_sequence = match &f.lineage.last_updated_at {
            LineageSequence::Absent => None,
            LineageSequence::Column => Some(
                LastUpdatedAtVersionSequence::ColumnLastUpdatedAtVersions(pb::RowLineageColumn {}),
            ),
            LineageSequence::Inline(v) => {
                Some(LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions(
                    RowDatasetVersionSequence::from_versions(v).encode(),
                ))
            }
        };
        fragments.push(pb::DataFragment {
            id: f.id,
            files,
            deletion_file,
            physical_rows: f.physical_rows,
            row_id_sequence,
            last_updated_at_version_sequence,
            created_at_version_sequence,
            overlays,
            ..Default::default()
        });
    }
    let largest = match snapshot.fragments.iter().map(|f| f.id).max() {
        None => None,
        Some(id) => Some(u32::try_from(id).map_err(|_| DatasetError::Unwritable {
            what: format!("fragment {id}"),
            problem: "fragment ids are 32-bit in max_fragment_id".into(),
        })?),
    };
    // A recorded value above every present id (the highest fragment was removed) is kept, so
    // a writer reading this manifest never hands that id out again.
    let max_fragment_id = largest.max(layout.max_fragment_id);
    let manifest = pb::Manifest {
        fields: schema_to_proto(&snapshot.schema),
        fragments,
        version: snapshot.version,
        reader_feature_flags: snapshot.reader_flags,
        writer_feature_flags: snapshot.writer_flags,
        max_fragment_id,
        schema_metadata: layout.schema_metadata.clone(),
        writer_version: Some(pb::manifest::WriterVersion {
            library: WRITER_LIBRARY.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            prerelease: None,
            build_metadata: None,
        }),
        next_row_id: snapshot.next_row_id,
        data_format: Some(match &layout.data_format {
            Some(d) => pb::manifest::DataStorageFormat {
                file_format: d.file_format.clone(),
                version: d.version.clone(),
            },
            None => pb::manifest::DataStorageFormat {
                file_format: FILE_FORMAT.into(),
                version: DATA_FORMAT_VERSION.into(),
            },
        }),
        config: snapshot
            .config
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<BTreeMap<_, _>>(),
        ..Default::default()
    };
    let section = if snapshot.indices.is_empty() {
        None
    } else {
        let mut indices = Vec::with_capacity(snapshot.indices.len());
        for (n, index) in snapshot.indices.iter().enumerate() {
            let il = layout
                .indices
                .get(n)
                .ok_or_else(|| misaligned(format!("indices[{n}]")))?;
            indices.push(pb::IndexMetadata {
                uuid: Some(pb::Uuid {
                    uuid: il.uuid.to_vec(),
                }),
                fields: index.fields.clone(),
                name: index.name.clone(),
                dataset_version: index.dataset_version,
                fragment_bitmap: index
                    .fragment_bitmap
                    .as_ref()
                    .map(write_bitmap)
                    .unwrap_or_default(),
                index_details: Some(Any {
                    type_url: il.details_type_url.clone(),
                    value: il.details_value.clone(),
                }),
                index_version: il.index_version,
                created_at: il.created_at,
                files: il
                    .files
                    .iter()
                    .map(|(path, size_bytes)| pb::IndexFile {
                        path: path.clone(),
                        size_bytes: *size_bytes,
                    })
                    .collect(),
                covering_fields: il.covering_fields.clone(),
                ..Default::default()
            });
        }
        Some(pb::IndexSection { indices })
    };
    Ok((manifest, section))
}

/// The `index_details.value` this kit writes for a vector index: `VectorIndexDetails` with
/// metric L2 and flat (no) compression, no runtime hints.
pub fn vector_details_value() -> Vec<u8> {
    use lance_reference::proto::lance::index::pb as ipb;
    use prost::Message;
    ipb::VectorIndexDetails {
        metric_type: ipb::VectorMetricType::L2 as i32,
        target_partition_size: 0,
        compression: Some(ipb::vector_index_details::Compression::Flat(
            ipb::vector_index_details::FlatCompression {},
        )),
        runtime_hints: BTreeMap::new(),
    }
    .encode_to_vec()
}

/// The layout this kit writes for an index (see the module docs); `files` is filled in by the
/// writer once the index files exist.
pub fn index_layout(index: &Index) -> IndexLayout {
    IndexLayout {
        uuid: index_uuid(&index.name, index.dataset_version),
        details_type_url: match index.kind {
            IndexKind::BTree => BTREE_DETAILS_URL,
            IndexKind::Vector => VECTOR_DETAILS_URL,
        }
        .to_string(),
        index_version: Some(INDEX_VERSION),
        created_at: None,
        details_value: match index.kind {
            IndexKind::BTree => Vec::new(),
            IndexKind::Vector => vector_details_value(),
        },
        files: Vec::new(),
        covering_fields: index.fields.get(1..).unwrap_or_default().to_vec(),
    }
}

/// The deletion layout of `deleted` stored in `form` with bytes `bytes` (see [`super::write`]
/// for how `id` is derived).
pub fn deletion_layout(
    fragment: u64,
    form: DeletionFileType,
    id: u64,
    count: u64,
) -> Result<DeletionLayout, DatasetError> {
    let stored = DeletionFile {
        file_type: form.proto_value(),
        read_version: 0,
        id,
        num_deleted_rows: count,
        base_id: None,
    };
    let path = stored
        .relative_path(fragment)
        .map_err(|error| DatasetError::FileFormat {
            field: format!("fragment {fragment} deletion_file"),
            error: Box::new(error),
        })?;
    Ok(DeletionLayout {
        path,
        form,
        read_version: 0,
        id,
        num_deleted_rows: count,
    })
}
