//! Commits that no reference operation makes but that other writers leave behind (a fragment
//! without a version sequence, an index without coverage, a system column), and the
//! equivalent re-encodings of a written version ([`crate::case::step::Reencoding`]).
//!
//! Invariant: each edit step is one commit that changes exactly what it names, and the result
//! passes the same validation as every other version (`Run::commit`). A re-encoding changes
//! no decoded value: [`plan`] turns it into the bytes or the column order the store writes,
//! and the store's read-back check proves the version still reads as committed.

use lance_reference::lineage::{
    EncodedU64Array, RowDatasetVersionSequence, RowIdSequence, U64Segment,
};
use lance_reference::model::{
    Column, DataFile, FieldId, LAST_UPDATED_AT_FIELD_ID, LineageSequence, Snapshot,
    TOMBSTONE_FIELD_ID,
};

use super::{Outcome, Run};
use crate::case::step::{Reencoding, SegmentForm, SequenceSpec};

/// What the store does to a written version for one [`Reencoding`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReencodePlan {
    /// Rewrite `files[file]` of `fragment` (or, with `overlay`, the value file of the overlay at
    /// that position of its list) with its columns stored in `order`.
    Columns {
        /// Fragment id.
        fragment: u64,
        /// Position in the fragment's files.
        file: usize,
        /// Position in the fragment's overlay list, when an overlay's value file is rewritten.
        overlay: Option<usize>,
        /// `order[c]`: the `fields` position stored as column `c`.
        order: Vec<usize>,
    },
    /// Store these bytes as the inline arm of `sequence` of `fragment`.
    InlineLineage {
        /// Fragment id.
        fragment: u64,
        /// Which sequence.
        sequence: SequenceSpec,
        /// The encoded `RowIdSequence` or `RowDatasetVersionSequence`.
        bytes: Vec<u8>,
    },
    /// Set these bits in both flag words of the manifest.
    Flags {
        /// The bits.
        bits: u64,
    },
    /// Set these bits in the writer word of the manifest only (`set_writer_flag`: a newer
    /// writer's commit, stored as it wrote it).
    WriterFlags {
        /// The bits.
        bits: u64,
    },
    /// Store an `IndexSection` with no indices.
    EmptyIndexSection,
    /// Store a copy of the manifest as the detached version `2^63 + version`.
    DetachedCopy,
    /// Write an empty inline transaction section before the Manifest.
    TransactionSection,
    /// Rename every manifest to its V1 name.
    V1ManifestNames,
}

/// The name a sequence has in `case.toml`.
pub fn sequence_name(sequence: SequenceSpec) -> &'static str {
    match sequence {
        SequenceSpec::RowIds => "row_ids",
        SequenceSpec::CreatedAt => "created_at",
        SequenceSpec::LastUpdatedAt => "last_updated_at",
    }
}

fn segment_label(s: &U64Segment) -> String {
    match s {
        U64Segment::Range { start, end } => format!("range {start}..{end}"),
        U64Segment::RangeWithHoles { start, end, holes } => {
            format!("range_with_holes {start}..{end} holes {:?}", holes.values())
        }
        U64Segment::RangeWithBitmap { start, end, .. } => {
            format!("range_with_bitmap {start}..{end}")
        }
        U64Segment::SortedArray(a) => {
            format!("sorted_array {:?} base {}", a.width(), a.base())
        }
        U64Segment::Array(a) => format!("array {:?} base {}", a.width(), a.base()),
    }
}

/// Why a re-encoding does not apply to the version it names.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReencodeError {
    /// No fragment has the id.
    #[error("no fragment {0}")]
    NoFragment(u64),
    /// `empty_index_section` on a version that has indices.
    #[error("the version has indices; an empty section would drop them")]
    HasIndices,
    /// The fragment has no base file at the position.
    #[error("fragment {fragment} has no file {file}")]
    NoFile {
        /// Fragment id.
        fragment: u64,
        /// Position in its files.
        file: usize,
    },
    /// The fragment has no overlay at the position.
    #[error("fragment {fragment} has no overlay {overlay}")]
    NoOverlay {
        /// Fragment id.
        fragment: u64,
        /// Position in its overlays.
        overlay: usize,
    },
    /// The fragment's row ids are not stored inline.
    #[error("fragment {0} has no inline row ids")]
    NoInlineRowIds(u64),
    /// Segment lengths that are not positive or do not add up to the fragment's rows.
    #[error("segment lengths {lengths:?} must be positive and add up to {rows}")]
    SegmentLengths {
        /// The lengths given.
        lengths: Vec<u64>,
        /// The fragment's row count.
        rows: usize,
    },
    /// A segment as given breaks a decoding rule.
    #[error("{0}")]
    Segment(#[from] lance_reference::lineage::LineageError),
    /// The segments hold other row ids than the fragment's.
    #[error("the segments hold the row ids {stored:?}, not the fragment's {ids:?}")]
    OtherRowIds {
        /// The row ids the segments hold.
        stored: Vec<u64>,
        /// The fragment's.
        ids: Vec<u64>,
    },
    /// Spans asked of the row-id sequence, which has none.
    #[error("row ids have no spans")]
    RowIdsHaveNoSpans,
    /// The fragment's version sequence is not stored inline.
    #[error("fragment {fragment} has no inline {sequence}")]
    NoInlineVersions {
        /// Fragment id.
        fragment: u64,
        /// The sequence's name.
        sequence: &'static str,
    },
    /// Not one span value per row.
    #[error("{values} span values for {rows} rows")]
    SpanCount {
        /// Values given.
        values: usize,
        /// Rows of the fragment.
        rows: usize,
    },
    /// A column order that is not a permutation of the file's positions.
    #[error("order {order:?} is not a permutation of the {positions} position(s) of {path}")]
    NotAPermutation {
        /// The order given.
        order: Vec<usize>,
        /// The file's position count.
        positions: usize,
        /// The file's path.
        path: String,
    },
    /// The identity order.
    #[error("the order changes nothing")]
    ChangesNothing,
    /// A file with struct fields, whose columns are not reordered.
    #[error("only files without struct fields can be reordered")]
    StructFields,
}

/// Turns `r` into what the store writes for `snapshot` (the version it applies to), and a
/// one-line account of the stored form.
pub fn plan(snapshot: &Snapshot, r: &Reencoding) -> Result<(ReencodePlan, String), ReencodeError> {
    let fragment_of = |id: u64| {
        snapshot
            .fragments
            .iter()
            .find(|f| f.id == id)
            .ok_or(ReencodeError::NoFragment(id))
    };
    match r {
        Reencoding::DeprecatedV2Flag => Ok((
            ReencodePlan::Flags {
                bits: lance_reference::flags::FLAG_USE_V2_FORMAT_DEPRECATED,
            },
            "stored bit 4 (the deprecated v2-format marker) in both flag words".into(),
        )),
        Reencoding::V1ManifestNames => Ok((
            ReencodePlan::V1ManifestNames,
            "renamed every manifest to its V1 name {N}.manifest".into(),
        )),
        Reencoding::TransactionSection => Ok((
            ReencodePlan::TransactionSection,
            "stored an empty Transaction between the IndexSection and the Manifest".into(),
        )),
        Reencoding::DetachedCopy => Ok((
            ReencodePlan::DetachedCopy,
            format!(
                "stored a copy of the manifest as the detached version 2^63 + {}",
                snapshot.version
            ),
        )),
        Reencoding::EmptyIndexSection => {
            if !snapshot.indices.is_empty() {
                return Err(ReencodeError::HasIndices);
            }
            Ok((
                ReencodePlan::EmptyIndexSection,
                "stored an IndexSection of zero bytes directly before the Manifest".into(),
            ))
        }
        Reencoding::PermuteColumns {
            fragment,
            file,
            order,
        } => {
            let f = fragment_of(*fragment)?;
            let df = f.files.get(*file).ok_or(ReencodeError::NoFile {
                fragment: *fragment,
                file: *file,
            })?;
            permute_plan(snapshot, *fragment, *file, None, df, order)
        }
        Reencoding::PermuteOverlayColumns {
            fragment,
            overlay,
            order,
        } => {
            let f = fragment_of(*fragment)?;
            let df = &f
                .overlays
                .get(*overlay)
                .ok_or(ReencodeError::NoOverlay {
                    fragment: *fragment,
                    overlay: *overlay,
                })?
                .file;
            permute_plan(snapshot, *fragment, 0, Some(*overlay), df, order)
        }
        Reencoding::SplitRowIds { fragment, lengths } => {
            let f = fragment_of(*fragment)?;
            let LineageSequence::Inline(ids) = &f.lineage.row_ids else {
                return Err(ReencodeError::NoInlineRowIds(*fragment));
            };
            if lengths.iter().sum::<u64>() != ids.len() as u64 || lengths.contains(&0) {
                return Err(ReencodeError::SegmentLengths {
                    lengths: lengths.clone(),
                    rows: ids.len(),
                });
            }
            let mut segments = Vec::new();
            let mut at = 0usize;
            for &n in lengths {
                let n = n as usize;
                segments.push(U64Segment::from_values(&ids[at..at + n]));
                at += n;
            }
            let labels: Vec<String> = segments.iter().map(segment_label).collect();
            let bytes = RowIdSequence { segments }.encode();
            Ok((
                ReencodePlan::InlineLineage {
                    fragment: *fragment,
                    sequence: SequenceSpec::RowIds,
                    bytes,
                },
                format!(
                    "stored the row ids of fragment {fragment} as {} segments: {}",
                    labels.len(),
                    labels.join(" | ")
                ),
            ))
        }
        Reencoding::RowIdSegments { fragment, segments } => {
            let f = fragment_of(*fragment)?;
            let LineageSequence::Inline(ids) = &f.lineage.row_ids else {
                return Err(ReencodeError::NoInlineRowIds(*fragment));
            };
            let segments: Vec<U64Segment> = segments
                .iter()
                .enumerate()
                .map(|(i, form)| {
                    let segment = match form {
                        SegmentForm::Range { start, end } => U64Segment::Range {
                            start: *start,
                            end: *end,
                        },
                        SegmentForm::RangeWithHoles { start, end, holes } => {
                            U64Segment::RangeWithHoles {
                                start: *start,
                                end: *end,
                                holes: EncodedU64Array::from_values(holes),
                            }
                        }
                        SegmentForm::SortedArray { values } => {
                            U64Segment::SortedArray(EncodedU64Array::from_values(values))
                        }
                    };
                    segment
                        .validate(&format!("segments[{i}]"))
                        .map(|()| segment)
                })
                .collect::<Result<_, _>>()?;
            let sequence = RowIdSequence { segments };
            let stored: Vec<u64> = sequence.iter().collect();
            if stored != *ids {
                return Err(ReencodeError::OtherRowIds {
                    stored,
                    ids: ids.clone(),
                });
            }
            let labels: Vec<String> = sequence.segments.iter().map(segment_label).collect();
            Ok((
                ReencodePlan::InlineLineage {
                    fragment: *fragment,
                    sequence: SequenceSpec::RowIds,
                    bytes: sequence.encode(),
                },
                format!(
                    "stored the row ids of fragment {fragment} as the segments {}",
                    labels.join(" | ")
                ),
            ))
        }
        Reencoding::VersionSpans {
            fragment,
            sequence,
            values,
        } => {
            let f = fragment_of(*fragment)?;
            let seq = match sequence {
                SequenceSpec::RowIds => return Err(ReencodeError::RowIdsHaveNoSpans),
                SequenceSpec::CreatedAt => &f.lineage.created_at,
                SequenceSpec::LastUpdatedAt => &f.lineage.last_updated_at,
            };
            let LineageSequence::Inline(versions) = seq else {
                return Err(ReencodeError::NoInlineVersions {
                    fragment: *fragment,
                    sequence: sequence_name(*sequence),
                });
            };
            if values.len() != versions.len() {
                return Err(ReencodeError::SpanCount {
                    values: values.len(),
                    rows: versions.len(),
                });
            }
            let mut runs = RowDatasetVersionSequence::from_versions(versions).runs;
            let mut at = 0usize;
            let mut labels = Vec::new();
            for run in &mut runs {
                let n = run.span.len() as usize;
                run.span = U64Segment::from_values(&values[at..at + n]);
                labels.push(format!("{} x v{}", segment_label(&run.span), run.version));
                at += n;
            }
            let bytes = RowDatasetVersionSequence { runs }.encode();
            Ok((
                ReencodePlan::InlineLineage {
                    fragment: *fragment,
                    sequence: *sequence,
                    bytes,
                },
                format!(
                    "stored {} of fragment {fragment} with spans {}",
                    sequence_name(*sequence),
                    labels.join(" | ")
                ),
            ))
        }
    }
}

/// The plan storing data file `df` (`files[file]` of `fragment`, or the value file of its
/// overlay `overlay`) with its columns in `order`.
fn permute_plan(
    snapshot: &Snapshot,
    fragment: u64,
    file: usize,
    overlay: Option<usize>,
    df: &lance_reference::model::DataFile,
    order: &[usize],
) -> Result<(ReencodePlan, String), ReencodeError> {
    let mut sorted = order.to_vec();
    sorted.sort_unstable();
    if sorted != (0..df.fields.len()).collect::<Vec<_>>() {
        return Err(ReencodeError::NotAPermutation {
            order: order.to_vec(),
            positions: df.fields.len(),
            path: df.path.clone(),
        });
    }
    if order.iter().enumerate().all(|(c, &p)| c == p) {
        return Err(ReencodeError::ChangesNothing);
    }
    let nested = df.fields.iter().any(|&id| {
        snapshot
            .schema
            .field(id)
            .is_some_and(|x| x.parent_id != -1 || snapshot.schema.children(id).next().is_some())
    });
    if nested {
        return Err(ReencodeError::StructFields);
    }
    let indices: Vec<usize> = (0..order.len())
        .map(|p| order.iter().position(|&q| q == p).unwrap_or(p))
        .collect();
    Ok((
        ReencodePlan::Columns {
            fragment,
            file,
            overlay,
            order: order.to_vec(),
        },
        format!(
            "stored {} with its columns in the order {:?}: column_indices {:?}",
            df.path,
            order
                .iter()
                .map(|&p| df.fields[p])
                .collect::<Vec<FieldId>>(),
            indices
        ),
    ))
}

impl Run {
    /// `clear_lineage`: the sequences become absent.
    pub(super) fn clear_lineage(
        &mut self,
        fragment: u64,
        sequences: &[SequenceSpec],
    ) -> Outcome<String> {
        let mut next = self.current()?.clone();
        let f = next
            .fragments
            .iter_mut()
            .find(|f| f.id == fragment)
            .ok_or_else(|| format!("no fragment {fragment}"))?;
        for s in sequences {
            let seq = match s {
                SequenceSpec::RowIds => &mut f.lineage.row_ids,
                SequenceSpec::CreatedAt => &mut f.lineage.created_at,
                SequenceSpec::LastUpdatedAt => &mut f.lineage.last_updated_at,
            };
            if *seq == LineageSequence::Column {
                return Err(format!(
                    "{} of fragment {fragment} is spilled; clear only inline sequences",
                    sequence_name(*s)
                )
                .into());
            }
            *seq = LineageSequence::Absent;
        }
        self.commit(next)?;
        let names: Vec<&str> = sequences.iter().map(|s| sequence_name(*s)).collect();
        Ok(format!(
            "fragment {fragment} records no {}",
            names.join(", ")
        ))
    }

    /// `clear_index_coverage`: the index's `fragment_bitmap` becomes absent.
    pub(super) fn clear_index_coverage(&mut self, name: &str) -> Outcome<String> {
        let mut next = self.current()?.clone();
        let index = next
            .indices
            .iter_mut()
            .find(|x| x.name == name)
            .ok_or_else(|| format!("no index {name:?}"))?;
        index.fragment_bitmap = None;
        index.entries.clear();
        self.commit(next)?;
        Ok(format!("index {name} records no fragment coverage"))
    }

    /// `add_system_column`: a new data file holding one column under a reserved negative id.
    pub(super) fn add_system_column(
        &mut self,
        i: usize,
        fragment: u64,
        id: i32,
    ) -> Outcome<String> {
        if id >= 0 || (LAST_UPDATED_AT_FIELD_ID..=TOMBSTONE_FIELD_ID).contains(&id) {
            return Err(format!(
                "id {id}: a system column takes a negative id other than -2 to -5"
            )
            .into());
        }
        let mut next = self.current()?.clone();
        let f = next
            .fragments
            .iter_mut()
            .find(|f| f.id == fragment)
            .ok_or_else(|| format!("no fragment {fragment}"))?;
        let path = format!("f{fragment}-s{i}-system.lance");
        f.files.push(DataFile {
            path: path.clone(),
            fields: vec![id],
            columns: vec![Column::uint64((0..f.physical_rows).collect())],
        });
        self.commit(next)?;
        Ok(format!(
            "fragment {fragment} gained {path} holding field {id}"
        ))
    }
}
