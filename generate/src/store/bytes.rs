//! Byte-level damage for the dataset-level and lineage negative cases: edits of the newest
//! manifest's protobuf or framing, and damaged copies of files it references.
//!
//! Invariant: only the newest version's manifest is rewritten, and a damaged file is always
//! written under a new name (`<name>-damaged.lance`, or a deletion file with a new id), never
//! over a file an earlier version reads, so every earlier version stays readable and the
//! refusal is attributable to the one thing the corruption names.

use std::path::Path;

use lance_reference::model::{DataType, Field, FieldId, Value};
use lance_reference::proto::lance::encodings21::page_layout::Layout;
use lance_reference::proto::lance::table as pb;
use lance_reference_io::data_file::structural_encode::{
    Grammar, StructuralPage, encode_dictionary_page_in, encode_structural_page_in,
};
use lance_reference_io::data_file::{
    ColumnData, DataFileVersion, FileExtras, PageEdit, keep_page, read_data_file,
    write_data_file_edited,
};
use lance_reference_io::deletion::{DeletionFile, write_arrow_int32_offsets, write_arrow_offsets};
use lance_reference_io::manifest_file::{ManifestFile, decode_manifest_file, encode_manifest_file};
use lance_reference_io::version_names::{VERSIONS_DIR, manifest_name};
use lance_reference_io::{Dataset, DatasetError};
use pb::data_fragment::{
    CreatedAtVersionSequence, LastUpdatedAtVersionSequence, RowIdSequence as RowIdArm,
};
use pb::encoded_u64_array::{Array as PbArray, U16Array};
use pb::u64_segment::{Range, RangeWithBitmap, RangeWithHoles, Segment};
use prost::Message;
use sha2::{Digest, Sha256};

use super::{StoreError, write};
#[cfg(test)]
use crate::case::Corruption;
use crate::case::corruption::{LineageColumnDamage, LineageProblem, PageDamage};
use crate::case::step::SequenceSpec;
use crate::case::{FileBytesCorruption, ManifestBytesCorruption};
use crate::scenario::corrupt::CorruptError;

/// The reserved field id of a sequence's hidden column.
fn reserved_id(sequence: SequenceSpec) -> FieldId {
    match sequence {
        SequenceSpec::RowIds => -3,
        SequenceSpec::CreatedAt => -4,
        SequenceSpec::LastUpdatedAt => -5,
    }
}

/// The corruptions of the newest manifest file (see [`ManifestBytesCorruption`]): framing
/// edits on its bytes, and edits of its decoded protobuf written back in place, with any file
/// such an edit points the manifest at.
pub(super) fn edit_manifest(
    root: &Path,
    version: u64,
    c: &ManifestBytesCorruption,
) -> Result<(), StoreError> {
    let what = c.name();
    let missing = |problem: String| {
        StoreError::Corrupt(CorruptError::Target {
            what: what.clone(),
            problem,
        })
    };
    let rel = format!("{VERSIONS_DIR}/{}", manifest_name(version));
    let bytes = std::fs::read(root.join(&rel)).map_err(|e| missing(e.to_string()))?;
    let fragment_position = |m: &pb::Manifest, id: u64| {
        m.fragments
            .iter()
            .position(|f| f.id == id)
            .ok_or_else(|| missing(format!("no fragment {id}")))
    };
    match c {
        ManifestBytesCorruption::TruncateManifest { keep } => {
            write(root, &rel, bytes.get(..*keep).unwrap_or(&bytes))
        }
        ManifestBytesCorruption::EmptyManifestMessage => {
            let mut out = 0u32.to_le_bytes().to_vec();
            out.extend_from_slice(&0i64.to_le_bytes());
            out.extend_from_slice(bytes.get(bytes.len().saturating_sub(8)..).unwrap_or(&[]));
            write(root, &rel, &out)
        }
        ManifestBytesCorruption::BadManifestLength => {
            let mut bytes = bytes;
            let n = bytes.len();
            let position = bytes
                .get(n.saturating_sub(16)..n.saturating_sub(8))
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(i64::from_le_bytes)
                .and_then(|p| usize::try_from(p).ok())
                .ok_or_else(|| missing("no footer".into()))?;
            let prefix = bytes
                .get_mut(position..position + 4)
                .ok_or_else(|| missing("no length prefix".into()))?;
            let declared = u32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
            prefix.copy_from_slice(&declared.wrapping_add(1).to_le_bytes());
            write(root, &rel, &bytes)
        }
        ManifestBytesCorruption::SetCoveringFields { index, fields } => {
            rewrite_manifest(root, &rel, &bytes, |file| {
                file.index_section
                    .as_mut()
                    .and_then(|s| s.indices.iter_mut().find(|i| i.name == *index))
                    .ok_or_else(|| missing(format!("no index {index:?}")))?
                    .covering_fields = fields.clone();
                Ok(())
            })
        }
        ManifestBytesCorruption::BadIndexSectionLength => {
            let file = decode_manifest_file(&bytes, &rel)?;
            let at = file
                .manifest
                .index_section
                .filter(|_| file.index_section.is_some())
                .and_then(|p| usize::try_from(p).ok())
                .ok_or_else(|| missing("the manifest has no index section".into()))?;
            let mut bytes = bytes;
            bytes
                .get_mut(at..at + 4)
                .ok_or_else(|| missing("no section length prefix".into()))?
                .copy_from_slice(&u32::MAX.to_le_bytes());
            write(root, &rel, &bytes)
        }
        ManifestBytesCorruption::MalformedRoaring { fragment, overlay } => {
            rewrite_manifest(root, &rel, &bytes, |file| {
                let o = overlay_entry(&mut file.manifest, *fragment, *overlay, &missing)?;
                // A portable-format cookie promising one container, and nothing after it.
                replace_first_bitmap(o, vec![0x3a, 0x30, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00]);
                Ok(())
            })
        }
        ManifestBytesCorruption::PathEscapesRoot { fragment, overlay } => {
            rewrite_manifest(root, &rel, &bytes, |file| {
                overlay_entry(&mut file.manifest, *fragment, *overlay, &missing)?
                    .data_file
                    .as_mut()
                    .ok_or_else(|| missing("the overlay has no data_file".into()))?
                    .path = "../outside-the-dataset.lance".into();
                Ok(())
            })
        }
        ManifestBytesCorruption::DropOverlayDataFile { fragment, overlay } => {
            rewrite_manifest(root, &rel, &bytes, |file| {
                overlay_entry(&mut file.manifest, *fragment, *overlay, &missing)?.data_file = None;
                Ok(())
            })
        }
        ManifestBytesCorruption::DropOverlayCoverage { fragment, overlay } => {
            rewrite_manifest(root, &rel, &bytes, |file| {
                overlay_entry(&mut file.manifest, *fragment, *overlay, &missing)?.coverage = None;
                Ok(())
            })
        }
        ManifestBytesCorruption::CoverageBytes {
            fragment,
            overlay,
            hex,
        } => rewrite_manifest(root, &rel, &bytes, |file| {
            let o = overlay_entry(&mut file.manifest, *fragment, *overlay, &missing)?;
            replace_first_bitmap(o, parse_hex(hex).map_err(|e| missing(e.to_string()))?);
            Ok(())
        }),
        ManifestBytesCorruption::SetManifestVersion { version } => {
            rewrite_manifest(root, &rel, &bytes, |mf| {
                let m = &mut mf.manifest;
                m.version = *version;
                Ok(())
            })
        }
        ManifestBytesCorruption::SetFragmentId { fragment, id } => {
            rewrite_manifest(root, &rel, &bytes, |mf| {
                let m = &mut mf.manifest;
                let position = fragment_position(m, *fragment)?;
                m.fragments[position].id = *id;
                // A stored high-water mark below the new id would be refused on its own.
                m.max_fragment_id = None;
                Ok(())
            })
        }
        ManifestBytesCorruption::SetMaxFragmentId { max_fragment_id } => {
            rewrite_manifest(root, &rel, &bytes, |mf| {
                let m = &mut mf.manifest;
                m.max_fragment_id = Some(*max_fragment_id);
                Ok(())
            })
        }
        ManifestBytesCorruption::SetColumnIndices {
            fragment,
            file,
            column_indices,
        } => rewrite_manifest(root, &rel, &bytes, |mf| {
            let m = &mut mf.manifest;
            data_file(m, fragment_position(m, *fragment)?, *file, &missing)?.column_indices =
                column_indices.clone();
            Ok(())
        }),
        ManifestBytesCorruption::SetFileSizeBytes {
            fragment,
            file,
            add,
        } => rewrite_manifest(root, &rel, &bytes, |mf| {
            let m = &mut mf.manifest;
            let df = data_file(m, fragment_position(m, *fragment)?, *file, &missing)?;
            df.file_size_bytes = df.file_size_bytes.saturating_add(*add);
            Ok(())
        }),
        ManifestBytesCorruption::SetDataFilePath {
            fragment,
            file,
            path,
        } => rewrite_manifest(root, &rel, &bytes, |mf| {
            let m = &mut mf.manifest;
            data_file(m, fragment_position(m, *fragment)?, *file, &missing)?.path = path.clone();
            Ok(())
        }),
        ManifestBytesCorruption::SetBaseId {
            fragment,
            file,
            base_id,
        } => rewrite_manifest(root, &rel, &bytes, |mf| {
            let m = &mut mf.manifest;
            data_file(m, fragment_position(m, *fragment)?, *file, &missing)?.base_id =
                Some(*base_id);
            Ok(())
        }),
        ManifestBytesCorruption::DeclareBasePath { id, path } => {
            rewrite_manifest(root, &rel, &bytes, |mf| {
                let m = &mut mf.manifest;
                m.base_paths.push(pb::BasePath {
                    id: *id,
                    name: None,
                    is_dataset_root: true,
                    path: path.clone(),
                });
                Ok(())
            })
        }
        ManifestBytesCorruption::SetDataFileVersion {
            fragment,
            file,
            major,
            minor,
        } => rewrite_manifest(root, &rel, &bytes, |mf| {
            let m = &mut mf.manifest;
            let df = data_file(m, fragment_position(m, *fragment)?, *file, &missing)?;
            df.file_major_version = *major;
            df.file_minor_version = *minor;
            Ok(())
        }),
        ManifestBytesCorruption::SetDeletionFileType {
            fragment,
            file_type,
        } => rewrite_manifest(root, &rel, &bytes, |mf| {
            let m = &mut mf.manifest;
            deletion(m, fragment_position(m, *fragment)?, &missing)?.file_type = *file_type;
            Ok(())
        }),
        ManifestBytesCorruption::SetNumDeletedRows { fragment, count } => {
            rewrite_manifest(root, &rel, &bytes, |mf| {
                let m = &mut mf.manifest;
                deletion(m, fragment_position(m, *fragment)?, &missing)?.num_deleted_rows = *count;
                Ok(())
            })
        }
        ManifestBytesCorruption::DuplicateDeletionOffset { fragment }
        | ManifestBytesCorruption::SignedDeletionOffsets { fragment } => {
            rewrite_manifest(root, &rel, &bytes, |mf| {
                let m = &mut mf.manifest;
                let (snapshot, _) = Dataset::open(root)?.read_version(version)?;
                let mut offsets: Vec<u32> = snapshot
                    .fragment(*fragment)
                    .map_err(|e| missing(e.to_string()))?
                    .deletions
                    .iter()
                    .collect();
                let first = *offsets
                    .first()
                    .ok_or_else(|| missing("the fragment has no deleted rows".into()))?;
                let bytes = if matches!(c, ManifestBytesCorruption::SignedDeletionOffsets { .. }) {
                    write_arrow_int32_offsets(&offsets)
                } else {
                    offsets.push(first);
                    write_arrow_offsets(&offsets)
                };
                let d = deletion(m, fragment_position(m, *fragment)?, &missing)?;
                let path = replace_deletion_file(d, *fragment, &bytes, offsets.len() as u64)
                    .map_err(|e| missing(e.to_string()))?;
                write(root, &path, &bytes)?;
                Ok(())
            })
        }
        ManifestBytesCorruption::DuplicateLineageColumn { fragment, sequence } => {
            rewrite_manifest(root, &rel, &bytes, |mf| {
                let m = &mut mf.manifest;
                let id = reserved_id(*sequence);
                let position = fragment_position(m, *fragment)?;
                let f = &mut m.fragments[position];
                let holder = f
                    .files
                    .iter()
                    .find(|df| df.fields.contains(&id))
                    .ok_or_else(|| missing(format!("no file holds field {id}")))?;
                let mut copy = holder.clone();
                for field in &mut copy.fields {
                    if *field != id {
                        *field = -2;
                    }
                }
                f.files.push(copy);
                Ok(())
            })
        }
        ManifestBytesCorruption::MalformedLineage {
            fragment,
            sequence,
            problem,
        } => rewrite_manifest(root, &rel, &bytes, |mf| {
            let m = &mut mf.manifest;
            let position = fragment_position(m, *fragment)?;
            let f = &mut m.fragments[position];
            let bytes = malformed_sequence(*sequence, *problem, f.physical_rows)
                .map_err(|p| missing(p.into()))?;
            if inline_bytes(f, *sequence).is_none() {
                return Err(missing("that sequence is not stored inline".into()));
            }
            set_inline(f, *sequence, bytes);
            Ok(())
        }),
        ManifestBytesCorruption::SetExternalLineage { fragment, sequence } => {
            rewrite_manifest(root, &rel, &bytes, |mf| {
                let m = &mut mf.manifest;
                let position = fragment_position(m, *fragment)?;
                let f = &mut m.fragments[position];
                let bytes = inline_bytes(f, *sequence)
                    .ok_or_else(|| missing("that sequence is not stored inline".into()))?;
                let name = crate::scenario::edits::sequence_name(*sequence);
                let path = format!("data/f{fragment}-{name}.external");
                write(root, &path, &bytes)?;
                let external = pb::ExternalFile {
                    path,
                    offset: 0,
                    size: bytes.len() as u64,
                };
                match sequence {
                    SequenceSpec::RowIds => {
                        f.row_id_sequence = Some(RowIdArm::ExternalRowIds(external));
                    }
                    SequenceSpec::CreatedAt => {
                        f.created_at_version_sequence = Some(
                            CreatedAtVersionSequence::ExternalCreatedAtVersions(external),
                        );
                    }
                    SequenceSpec::LastUpdatedAt => {
                        f.last_updated_at_version_sequence = Some(
                            LastUpdatedAtVersionSequence::ExternalLastUpdatedAtVersions(external),
                        );
                    }
                };
                Ok(())
            })
        }
        ManifestBytesCorruption::MissingOverlayFile { fragment, overlay } => {
            rewrite_manifest(root, &rel, &bytes, |mf| {
                let m = &mut mf.manifest;
                let position = fragment_position(m, *fragment)?;
                let df = m.fragments[position]
                    .overlays
                    .get_mut(*overlay)
                    .and_then(|o| o.data_file.as_mut())
                    .ok_or_else(|| {
                        missing(format!("no overlay data file at position {overlay}"))
                    })?;
                let stem = df
                    .path
                    .strip_suffix(".lance")
                    .unwrap_or(&df.path)
                    .to_string();
                df.path = format!("{stem}-missing.lance");
                Ok(())
            })
        }
        ManifestBytesCorruption::WrongColumnType {
            fragment,
            field,
            overlay,
        } => rewrite_manifest(root, &rel, &bytes, |mf| {
            let m = &mut mf.manifest;
            damaged_copy(
                root,
                version,
                m,
                *fragment,
                field,
                *overlay,
                &|good, path, id| {
                    rewrite_column(
                        good,
                        path,
                        id,
                        &|data_type, values, _| {
                            retype(data_type, values);
                        },
                        &keep_page,
                    )
                },
            )?;
            Ok(())
        }),
        ManifestBytesCorruption::DamagePage {
            fragment,
            field,
            overlay,
            damage,
        } => rewrite_manifest(root, &rel, &bytes, |mf| {
            let m = &mut mf.manifest;
            damaged_copy(
                root,
                version,
                m,
                *fragment,
                field,
                *overlay,
                &|good, path, id| {
                    let applied = std::cell::Cell::new(false);
                    let edit = |grammar: Grammar,
                                _: usize,
                                c: &ColumnData,
                                depth: usize,
                                page: StructuralPage| {
                        if c.field.id != id {
                            return Ok(Some(page));
                        }
                        applied.set(true);
                        damage_page(*damage, grammar, c, depth, page).map(Some)
                    };
                    let bytes = rewrite_column(good, path, id, &|_, _, _| {}, &edit)?;
                    if !applied.get() {
                        return Err(StoreError::Corrupt(CorruptError::Target {
                            what: "damage_page".to_string(),
                            problem: format!(
                                "{path} is not a v2.1+ file with a page of that field"
                            ),
                        }));
                    }
                    Ok(bytes)
                },
            )?;
            Ok(())
        }),
        ManifestBytesCorruption::ListStructInOverlay {
            fragment,
            overlay,
            field,
        } => rewrite_manifest(root, &rel, &bytes, |mf| {
            let m = &mut mf.manifest;
            use pb::data_overlay_file::Coverage;
            let (snapshot, _) = Dataset::open(root)?.read_version(version)?;
            let schema = &snapshot.schema;
            let id = crate::case::names::field_id(schema, field)
                .filter(|id| {
                    schema
                        .field(*id)
                        .is_some_and(|f| f.data_type == DataType::Struct)
                })
                .ok_or_else(|| missing(format!("no struct field {field:?}")))?;
            let position = fragment_position(m, *fragment)?;
            let o = m.fragments[position]
                .overlays
                .get_mut(*overlay)
                .ok_or_else(|| missing(format!("no overlay at position {overlay}")))?;
            let df = o
                .data_file
                .as_mut()
                .ok_or_else(|| missing(format!("no overlay data file at position {overlay}")))?;
            if (df.file_major_version, df.file_minor_version) < (2, 1) {
                return Err(missing(
                    "the overlay's value file is not v2.1 or later".into(),
                ));
            }
            let p = df
                .fields
                .iter()
                .position(|f| *f != id && schema.ancestry(*f).contains(&id))
                .ok_or_else(|| missing(format!("the overlay lists no field inside {field:?}")))?;
            let column = df
                .column_indices
                .get(p)
                .copied()
                .ok_or_else(|| missing(format!("no column index for fields[{p}]")))?;
            df.fields.insert(p, id);
            df.column_indices.insert(p, column);
            if let Some(Coverage::FieldCoverage(c)) = &mut o.coverage {
                let first = c
                    .offset_bitmaps
                    .get(p)
                    .cloned()
                    .ok_or_else(|| missing(format!("no bitmap for fields[{p}]")))?;
                c.offset_bitmaps.insert(p, first);
            };
            Ok(())
        }),
        ManifestBytesCorruption::DamageLineageColumn {
            fragment,
            sequence,
            damage,
        } => rewrite_manifest(root, &rel, &bytes, |mf| {
            let m = &mut mf.manifest;
            let position = fragment_position(m, *fragment)?;
            let id = reserved_id(*sequence);
            let df = m.fragments[position]
                .files
                .iter_mut()
                .find(|df| df.fields.contains(&id))
                .ok_or_else(|| missing(format!("no file holds field {id}")))?;
            let old = format!("data/{}", df.path);
            let good = std::fs::read(root.join(&old)).map_err(|e| missing(e.to_string()))?;
            let bytes = rewrite_column(
                &good,
                &old,
                id,
                &|data_type, values, nullable| {
                    damage_lineage(*damage, data_type, values, nullable);
                },
                &keep_page,
            )?;
            let stem = df
                .path
                .strip_suffix(".lance")
                .unwrap_or(&df.path)
                .to_string();
            df.path = format!("{stem}-damaged.lance");
            df.file_size_bytes = bytes.len() as u64;
            write(root, &format!("data/{}", df.path), &bytes)?;
            Ok(())
        }),
    }
}

/// Decodes the manifest file `bytes` (at `rel`), applies `edit` and writes the result back.
fn rewrite_manifest(
    root: &Path,
    rel: &str,
    bytes: &[u8],
    edit: impl FnOnce(&mut ManifestFile) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let mut file = decode_manifest_file(bytes, rel)?;
    edit(&mut file)?;
    write(
        root,
        rel,
        &encode_manifest_file(&file.manifest, file.index_section.as_ref())?,
    )
}

/// Points `d` at a new Arrow deletion file holding `bytes` (its id derived from them, as the
/// writer derives it) that lists `count` offsets; returns the file's root-relative path.
fn replace_deletion_file(
    d: &mut pb::DeletionFile,
    fragment: u64,
    bytes: &[u8],
    count: u64,
) -> Result<String, lance_reference_io::DatasetIoError> {
    let digest = Sha256::digest(bytes);
    let mut id = [0u8; 8];
    id.copy_from_slice(&digest[..8]);
    *d = pb::DeletionFile {
        file_type: 0,
        read_version: d.read_version,
        id: u64::from_le_bytes(id),
        num_deleted_rows: count,
        base_id: None,
    };
    DeletionFile {
        file_type: 0,
        read_version: d.read_version,
        id: d.id,
        num_deleted_rows: count,
        base_id: None,
    }
    .relative_path(fragment)
}

/// The overlay at `overlay` of fragment `fragment`'s list in the manifest.
fn overlay_entry<'a>(
    m: &'a mut pb::Manifest,
    fragment: u64,
    overlay: usize,
    missing: &dyn Fn(String) -> StoreError,
) -> Result<&'a mut pb::DataOverlayFile, StoreError> {
    m.fragments
        .iter_mut()
        .find(|f| f.id == fragment)
        .ok_or_else(|| missing(format!("no fragment {fragment}")))?
        .overlays
        .get_mut(overlay)
        .ok_or_else(|| missing(format!("no overlay {overlay}")))
}

fn data_file<'a>(
    m: &'a mut pb::Manifest,
    fragment: usize,
    file: usize,
    missing: &dyn Fn(String) -> StoreError,
) -> Result<&'a mut pb::DataFile, StoreError> {
    m.fragments
        .get_mut(fragment)
        .and_then(|f| f.files.get_mut(file))
        .ok_or_else(|| missing(format!("no data file at position {file}")))
}

fn deletion<'a>(
    m: &'a mut pb::Manifest,
    fragment: usize,
    missing: &dyn Fn(String) -> StoreError,
) -> Result<&'a mut pb::DeletionFile, StoreError> {
    m.fragments
        .get_mut(fragment)
        .and_then(|f| f.deletion_file.as_mut())
        .ok_or_else(|| missing("the fragment has no deletion file".into()))
}

/// The serialized sequence of `rows` values breaking `problem`'s rule: a `RowIdSequence` of one
/// segment, or a `RowDatasetVersionSequence` of one run (version 1) spanning that segment.
fn malformed_sequence(
    sequence: SequenceSpec,
    problem: LineageProblem,
    rows: u64,
) -> Result<Vec<u8>, &'static str> {
    let u16_array = |base: u64, offsets: Vec<u8>| pb::EncodedU64Array {
        array: Some(PbArray::U16Array(U16Array { base, offsets })),
    };
    problem.fits(rows)?;
    let segment = match problem {
        LineageProblem::BitmapPadding => Segment::RangeWithBitmap(RangeWithBitmap {
            start: 0,
            end: rows,
            bitmap: vec![0xff; rows.div_ceil(8) as usize],
        }),
        LineageProblem::UnsortedHoles => Segment::RangeWithHoles(RangeWithHoles {
            start: 0,
            end: rows + 2,
            holes: Some(u16_array(rows, vec![1, 0, 0, 0])),
        }),
        LineageProblem::HoleOutsideRange => Segment::RangeWithHoles(RangeWithHoles {
            start: 0,
            end: rows + 1,
            holes: Some(u16_array(rows + 1, vec![0, 0])),
        }),
        LineageProblem::HoleBelowStart => Segment::RangeWithHoles(RangeWithHoles {
            start: 1,
            end: rows + 2,
            holes: Some(u16_array(0, vec![0, 0])),
        }),
        LineageProblem::BadArrayWidth => {
            Segment::Array(u16_array(0, vec![0; 2 * rows as usize + 1]))
        }
        LineageProblem::OffsetOverflow => {
            let offsets = (0..rows).flat_map(|i| (i as u16).to_le_bytes()).collect();
            Segment::Array(u16_array(u64::MAX, offsets))
        }
        LineageProblem::LengthMismatch => Segment::Range(Range {
            start: 0,
            end: rows + 1,
        }),
        LineageProblem::ReversedRange => Segment::Range(Range {
            start: rows + 1,
            end: 1,
        }),
        LineageProblem::HugeRange => Segment::Range(Range {
            start: 0,
            end: 1 << 60,
        }),
        LineageProblem::MissingKind => {
            return Ok(encode_one(sequence, pb::U64Segment { segment: None }));
        }
    };
    Ok(encode_one(
        sequence,
        pb::U64Segment {
            segment: Some(segment),
        },
    ))
}

/// A `RowIdSequence` of the one `segment`, or a `RowDatasetVersionSequence` of one run
/// (version 1) spanning it.
fn encode_one(sequence: SequenceSpec, segment: pb::U64Segment) -> Vec<u8> {
    match sequence {
        SequenceSpec::RowIds => pb::RowIdSequence {
            segments: vec![segment],
        }
        .encode_to_vec(),
        SequenceSpec::CreatedAt | SequenceSpec::LastUpdatedAt => pb::RowDatasetVersionSequence {
            runs: vec![pb::RowDatasetVersionRun {
                span: Some(segment),
                version: 1,
            }],
        }
        .encode_to_vec(),
    }
}

/// The inline bytes of `sequence` of `f`, when it is stored inline.
pub(super) fn inline_bytes(f: &pb::DataFragment, sequence: SequenceSpec) -> Option<Vec<u8>> {
    match sequence {
        SequenceSpec::RowIds => match &f.row_id_sequence {
            Some(RowIdArm::InlineRowIds(b)) => Some(b.clone()),
            _ => None,
        },
        SequenceSpec::CreatedAt => match &f.created_at_version_sequence {
            Some(CreatedAtVersionSequence::InlineCreatedAtVersions(b)) => Some(b.clone()),
            _ => None,
        },
        SequenceSpec::LastUpdatedAt => match &f.last_updated_at_version_sequence {
            Some(LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions(b)) => Some(b.clone()),
            _ => None,
        },
    }
}

/// Stores `bytes` as the inline arm of `sequence` of `f`.
pub(super) fn set_inline(f: &mut pb::DataFragment, sequence: SequenceSpec, bytes: Vec<u8>) {
    match sequence {
        SequenceSpec::RowIds => f.row_id_sequence = Some(RowIdArm::InlineRowIds(bytes)),
        SequenceSpec::CreatedAt => {
            f.created_at_version_sequence =
                Some(CreatedAtVersionSequence::InlineCreatedAtVersions(bytes));
        }
        SequenceSpec::LastUpdatedAt => {
            f.last_updated_at_version_sequence = Some(
                LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions(bytes),
            );
        }
    }
}

/// What [`LineageColumnDamage`] does to a hidden column (its type, values and nullability).
fn damage_lineage(
    damage: LineageColumnDamage,
    data_type: &mut DataType,
    values: &mut Vec<Value>,
    nullable: &mut bool,
) {
    match damage {
        LineageColumnDamage::Null => {
            *nullable = true;
            if let Some(first) = values.first_mut() {
                *first = Value::Null;
            }
        }
        LineageColumnDamage::WrongType => {
            *data_type = DataType::Int64;
            for v in values.iter_mut() {
                if let Value::UInt64(x) = v {
                    *v = Value::Int64(*x as i64);
                }
            }
        }
        LineageColumnDamage::Short => {
            values.pop();
        }
    }
}

/// A column stored as another type ([`Corruption::WrongColumnType`]): int32 as int64, int64 as
/// int32 (values that do not fit become NULL), utf8 as int64 (each string's length), anything
/// else as utf8 (each value's text).
fn retype(data_type: &mut DataType, values: &mut [Value]) {
    let (to, convert): (DataType, fn(&Value) -> Value) = match data_type {
        DataType::Int32 => (DataType::Int64, |v| match v {
            Value::Int32(x) => Value::Int64(i64::from(*x)),
            _ => Value::Null,
        }),
        DataType::Int64 => (DataType::Int32, |v| match v {
            Value::Int64(x) => i32::try_from(*x).map_or(Value::Null, Value::Int32),
            _ => Value::Null,
        }),
        DataType::Utf8 => (DataType::Int64, |v| match v {
            Value::Utf8(s) => Value::Int64(s.len() as i64),
            _ => Value::Null,
        }),
        _ => (DataType::Utf8, |v| {
            if v.is_null() {
                Value::Null
            } else {
                Value::Utf8(v.to_string())
            }
        }),
    };
    *data_type = to;
    for v in values.iter_mut() {
        *v = convert(v);
    }
}

/// Why a page could not be damaged as [`PageDamage`] asks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum PageDamageError {
    /// `struct_layer` on a field that no struct contains.
    #[error("field {0} is not below a struct, so its page has no struct layer")]
    NotBelowStruct(FieldId),
    /// The rewritten page needs a chunk larger than a mini-block chunk holds.
    #[error("a chunk of {0} bytes")]
    ChunkTooLarge(usize),
    /// The column has no values, so no page.
    #[error("the column is empty")]
    EmptyColumn,
    /// The column's type or values take no dictionary encoding.
    #[error("no dictionary page for a {0} column with these values")]
    NoDictionary(String),
    /// The page is not a mini-block page.
    #[error("the page is not a mini-block page (a column of NULLs only?)")]
    NotMiniBlock,
    /// A dictionary of one item cannot lose one and still index the rows.
    #[error("a dictionary needs two distinct values")]
    DictionaryTooSmall,
}

/// `page`, the v2.1+ page of column `c` (inside `depth` structs, in `grammar`), damaged as
/// `damage` says.
fn damage_page(
    damage: PageDamage,
    grammar: Grammar,
    c: &ColumnData,
    depth: usize,
    page: StructuralPage,
) -> Result<StructuralPage, PageDamageError> {
    let mut page = match damage {
        PageDamage::ItemCount => page,
        PageDamage::StructLayer => {
            if depth == 0 {
                return Err(PageDamageError::NotBelowStruct(c.field.id));
            }
            // Outermost first: every struct present, the parent NULL at row 0 only.
            let mut structs: Vec<Option<Vec<bool>>> = vec![None; depth];
            structs[depth - 1] = Some(vec![false]);
            return encode_structural_page_in(grammar, &c.field.data_type, &c.values, &structs)
                .map_err(|e| PageDamageError::ChunkTooLarge(e.bytes))?
                .ok_or(PageDamageError::EmptyColumn);
        }
        PageDamage::DictionaryIndex => {
            encode_dictionary_page_in(grammar, &c.field.data_type, &c.values, depth)
                .map_err(|e| PageDamageError::ChunkTooLarge(e.bytes))?
                .ok_or_else(|| PageDamageError::NoDictionary(c.field.data_type.logical_type()))?
        }
    };
    let Some(Layout::MiniBlockLayout(layout)) = &mut page.layout.layout else {
        return Err(PageDamageError::NotMiniBlock);
    };
    match damage {
        PageDamage::ItemCount => layout.num_items += 1,
        PageDamage::StructLayer => {}
        PageDamage::DictionaryIndex => {
            let items = layout.num_dictionary_items;
            let dictionary = page
                .buffers
                .get_mut(2)
                .filter(|_| items >= 2)
                .ok_or(PageDamageError::DictionaryTooSmall)?;
            let width = dictionary.len() / items as usize;
            dictionary.truncate(dictionary.len() - width);
            layout.num_dictionary_items = items - 1;
        }
    }
    Ok(page)
}

/// Makes a damaged file from the good bytes, the file's path and the field's id.
type Rewrite<'a> = dyn Fn(&[u8], &str, FieldId) -> Result<Vec<u8>, StoreError> + 'a;

/// Writes a damaged copy of the file holding `field` in fragment `fragment` (the base file, or
/// the value file of overlay `overlay`) as `<name>-damaged.lance`, made by `rewrite` from the
/// good bytes, its path and the field's id, and points the manifest `m` at it.
#[allow(clippy::too_many_arguments)]
fn damaged_copy(
    root: &Path,
    version: u64,
    m: &mut pb::Manifest,
    fragment: u64,
    field: &str,
    overlay: Option<usize>,
    rewrite: &Rewrite<'_>,
) -> Result<(), StoreError> {
    let missing = |problem: String| {
        StoreError::Corrupt(CorruptError::Target {
            what: "a damaged copy of a data file".to_string(),
            problem,
        })
    };
    let (snapshot, _) = Dataset::open(root)?.read_version(version)?;
    let id = crate::case::names::field_id(&snapshot.schema, field)
        .ok_or_else(|| missing(format!("no field {field:?}")))?;
    let f = m
        .fragments
        .iter_mut()
        .find(|f| f.id == fragment)
        .ok_or_else(|| missing(format!("no fragment {fragment}")))?;
    let df = match overlay {
        Some(k) => f
            .overlays
            .get_mut(k)
            .and_then(|o| o.data_file.as_mut())
            .ok_or_else(|| missing(format!("no overlay data file at position {k}")))?,
        None => f
            .files
            .iter_mut()
            .find(|df| df.fields.contains(&id))
            .ok_or_else(|| missing(format!("no base file holds {field:?}")))?,
    };
    let old = format!("data/{}", df.path);
    let good = std::fs::read(root.join(&old)).map_err(|e| missing(e.to_string()))?;
    let bytes = rewrite(&good, &old, id)?;
    let stem = df
        .path
        .strip_suffix(".lance")
        .unwrap_or(&df.path)
        .to_string();
    df.path = format!("{stem}-damaged.lance");
    df.file_size_bytes = bytes.len() as u64;
    write(root, &format!("data/{}", df.path), &bytes)
}

/// `good` (the data file `path`) rewritten in its own format version (v2.0 or v2.2) with the
/// column of field `id` changed by `change` (its type, values and nullability) and each v2.2
/// page passed through `edit`; every other column is re-encoded with the values it holds. In a
/// v2.1+ file a struct has no column, only its schema entry; it is rewritten present in every
/// row (the kit writes no NULL struct), so its leaves carry the same all-valid layers as before.
fn rewrite_column<E: std::fmt::Display>(
    good: &[u8],
    path: &str,
    id: FieldId,
    change: &dyn Fn(&mut DataType, &mut Vec<Value>, &mut bool),
    edit: &PageEdit<'_, E>,
) -> Result<Vec<u8>, StoreError> {
    let data_err = |error| {
        StoreError::from(DatasetError::DataFile {
            field: path.to_string(),
            error: Box::new(error),
        })
    };
    let unwritable = |problem: String| {
        StoreError::Corrupt(CorruptError::Target {
            what: "rewrite a column".to_string(),
            problem: format!("{path}: {problem}"),
        })
    };
    let contents = read_data_file(good, path).map_err(data_err)?;
    let footer = contents.version();
    let version = if footer.is_v2_0() {
        DataFileVersion::V2_0
    } else {
        DataFileVersion::ALL
            .into_iter()
            .find(|v| v.footer() == footer)
            .ok_or_else(|| {
                unwritable(format!(
                    "the store writes no data file version {}.{}",
                    footer.major, footer.minor
                ))
            })?
    };
    let rows = usize::try_from(contents.num_rows())
        .map_err(|_| unwritable(format!("{} rows", contents.num_rows())))?;
    let mut columns = Vec::new();
    for ff in contents.schema() {
        let mut data_type = DataType::from_logical_type(&ff.logical_type)
            .ok_or_else(|| unwritable(format!("unknown file type {:?}", ff.logical_type)))?;
        let mut values = match contents.field_column(ff.id) {
            Some(k) => contents.column(k, &data_type).map_err(data_err)?,
            None if data_type == DataType::Struct && !version.struct_has_column() => {
                vec![Value::Struct(Vec::new()); rows]
            }
            None => return Err(unwritable(format!("field {} has no column", ff.id))),
        };
        let mut nullable = ff.nullable;
        if ff.id == id {
            change(&mut data_type, &mut values, &mut nullable);
        }
        let field = Field {
            id: ff.id,
            parent_id: ff.parent_id,
            name: ff.name.clone(),
            data_type,
            nullable,
        };
        columns.push(ColumnData::new(field, values));
    }
    write_data_file_edited(version, &columns, &FileExtras::default(), edit).map_err(data_err)
}

/// Applies one corruption of files or names beside the manifest (see
/// [`FileBytesCorruption`]) to version `version` under `root`.
pub(super) fn damage_files(
    root: &Path,
    version: u64,
    c: &FileBytesCorruption,
) -> Result<(), StoreError> {
    let what = c.name();
    let missing = |problem: String| {
        StoreError::Corrupt(CorruptError::Target {
            what: what.clone(),
            problem,
        })
    };
    let manifest_rel = format!("{VERSIONS_DIR}/{}", manifest_name(version));
    match c {
        FileBytesCorruption::TruncateOverlayFile { fragment, overlay } => {
            let (_, layout) = Dataset::open(root)?.read_version(version)?;
            let bytes =
                std::fs::read(root.join(&manifest_rel)).map_err(|e| missing(e.to_string()))?;
            let file = decode_manifest_file(&bytes, &manifest_rel)?;
            let position = file
                .manifest
                .fragments
                .iter()
                .position(|f| f.id == *fragment)
                .ok_or_else(|| missing(format!("no fragment {fragment}")))?;
            let rel = layout
                .fragments
                .get(position)
                .and_then(|f| f.overlays.get(*overlay))
                .map(|l| l.path.clone())
                .ok_or_else(|| missing(format!("no overlay {overlay}")))?;
            let bytes = std::fs::read(root.join(&rel)).map_err(|e| missing(e.to_string()))?;
            write(root, &rel, &bytes[..bytes.len() / 2])
        }
        FileBytesCorruption::MixedManifestNames => {
            let bytes =
                std::fs::read(root.join(&manifest_rel)).map_err(|e| missing(e.to_string()))?;
            write(root, &format!("{VERSIONS_DIR}/{version}.manifest"), &bytes)
        }
        FileBytesCorruption::ExtraManifestName { name } => {
            if name.contains('/') || name.contains('\\') || name.starts_with('.') {
                return Err(missing(format!("{name:?} is not a plain file name")));
            }
            let bytes =
                std::fs::read(root.join(&manifest_rel)).map_err(|e| missing(e.to_string()))?;
            write(root, &format!("{VERSIONS_DIR}/{name}"), &bytes)
        }
        FileBytesCorruption::DamageIndexFiles { index, damage } => {
            super::index_damage::damage(root, version, index, damage)
                .map_err(|e| missing(e.to_string()))
        }
    }
}

/// Why a `coverage_bytes` corruption's `hex` is not bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum HexError {
    /// The digits do not pair up.
    #[error("hex {0:?} has an odd number of digits")]
    OddDigits(String),
    /// A pair of characters that is not a hex byte.
    #[error("{0:?} is not a hex byte")]
    NotAByte(String),
}

/// The bytes written as `hex` (pairs of hex digits; spaces ignored).
fn parse_hex(hex: &str) -> Result<Vec<u8>, HexError> {
    let digits: Vec<char> = hex.chars().filter(|c| !c.is_whitespace()).collect();
    if digits.len() % 2 != 0 {
        return Err(HexError::OddDigits(hex.to_string()));
    }
    digits
        .chunks(2)
        .map(|pair| {
            let text: String = pair.iter().collect();
            u8::from_str_radix(&text, 16).map_err(|_| HexError::NotAByte(text))
        })
        .collect()
}

/// Replaces the overlay's shared bitmap, or the first bitmap of its field coverage, by `bytes`.
fn replace_first_bitmap(o: &mut pb::DataOverlayFile, bytes: Vec<u8>) {
    o.coverage = Some(match o.coverage.take() {
        Some(pb::data_overlay_file::Coverage::FieldCoverage(mut fc)) => {
            if let Some(first) = fc.offset_bitmaps.first_mut() {
                *first = bytes;
            }
            pb::data_overlay_file::Coverage::FieldCoverage(fc)
        }
        _ => pb::data_overlay_file::Coverage::SharedOffsetBitmap(bytes),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::execute;
    use crate::store::write_and_read_back;

    const STEPS: &str = r#"
[[steps]]
op = "create"
schema = [{ name = "x", type = "int64" }]
rows = [{ x = 1 }, { x = 2 }, { x = 3 }, { x = 4 }, { x = 5 }]
config = { "lance.row_lineage.spill" = "true", "lance.row_lineage.inline_max_bytes" = "0" }
[[steps]]
op = "delete"
fragment = 0
offsets = [1, 3]
[[steps]]
op = "rewrite_rows"
fragments = [0]
[[steps]]
op = "delete"
fragment = 1
offsets = [0]
"#;

    #[derive(serde::Deserialize)]
    struct Steps {
        steps: Vec<crate::case::Step>,
    }

    /// Every corruption of this module damages version 4 only: versions 1 to 3 still read, from
    /// the very directory the damage was applied to, and version 4 does not.
    #[test]
    fn damage_stays_in_the_newest_version() {
        let corruptions = [
            "what = \"damage_lineage_column\"\nfragment = 1\nsequence = \"row_ids\"\ndamage = \"short\"",
            "what = \"duplicate_lineage_column\"\nfragment = 1\nsequence = \"created_at\"",
            "what = \"set_data_file_path\"\nfragment = 1\nfile = 0\npath = \"/x.lance\"",
            "what = \"set_base_id\"\nfragment = 1\nfile = 0\nbase_id = 1",
            "what = \"set_data_file_version\"\nfragment = 1\nfile = 0\nmajor = 2\nminor = 1",
            "what = \"set_manifest_version\"\nversion = 9",
            "what = \"set_fragment_id\"\nfragment = 1\nid = 4294967296",
            "what = \"truncate_manifest\"\nkeep = 20",
            "what = \"bad_manifest_length\"",
            "what = \"set_deletion_file_type\"\nfragment = 1\nfile_type = 5",
            "what = \"duplicate_deletion_offset\"\nfragment = 1",
            "what = \"signed_deletion_offsets\"\nfragment = 1",
            "what = \"set_num_deleted_rows\"\nfragment = 1\ncount = 4",
        ];
        for text in corruptions {
            let mut steps: Steps = toml::from_str(STEPS).unwrap();
            let c: Corruption = toml::from_str(text).unwrap();
            assert!(!matches!(c, Corruption::Content(_)), "{text}");
            steps.steps.push(crate::case::Step::Corrupt(c));
            let execution = execute(&steps.steps).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let read = write_and_read_back(Some(dir.path()), &execution).unwrap();
            assert!(read.corrupted.unwrap().read.is_err(), "{text}");
            let dataset = Dataset::open(dir.path()).unwrap();
            for v in 1..=3 {
                assert!(dataset.read_version(v).is_ok(), "{text}: version {v}");
            }
            assert!(dataset.read_version(4).is_err(), "{text}");
        }
    }

    #[test]
    fn malformed_sequences_hold_the_requested_flaw() {
        use lance_reference::lineage::{RowDatasetVersionSequence, RowIdSequence};
        let decode =
            |p| RowIdSequence::decode(&malformed_sequence(SequenceSpec::RowIds, p, 5).unwrap());
        for (problem, code) in [
            (LineageProblem::BitmapPadding, "lineage_bitmap_padding"),
            (LineageProblem::UnsortedHoles, "lineage_not_increasing"),
            (
                LineageProblem::HoleOutsideRange,
                "lineage_hole_outside_range",
            ),
            (LineageProblem::HoleBelowStart, "lineage_hole_outside_range"),
            (LineageProblem::OffsetOverflow, "lineage_offset_overflow"),
            (LineageProblem::BadArrayWidth, "lineage_byte_length"),
            (LineageProblem::MissingKind, "lineage_missing_field"),
        ] {
            assert_eq!(decode(problem).unwrap_err().code(), code, "{problem:?}");
        }
        assert_eq!(decode(LineageProblem::LengthMismatch).unwrap().len(), 6);
        assert_eq!(decode(LineageProblem::HugeRange).unwrap().len(), 1 << 60);
        let runs = RowDatasetVersionSequence::decode(
            &malformed_sequence(SequenceSpec::CreatedAt, LineageProblem::LengthMismatch, 5)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(runs.len(), 6);
        assert!(
            malformed_sequence(SequenceSpec::RowIds, LineageProblem::BitmapPadding, 8).is_err()
        );
    }
}
