//! Declared damage to a written version, for negative cases.
//!
//! Invariant: each [`ContentCorruption`] changes exactly the one thing it names and nothing
//! else, so the error a reader must raise is attributable to it. These corruptions of the
//! manifest's *content* are applied here to the decoded snapshot, which the store then
//! re-encodes over the written manifest; the byte-level stages have no decoded form and are
//! applied by `store::bytes`.

use lance_reference::model::{
    Column, Coverage, DataFile, FieldId, Fragment, LineageSequence, Overlay, Snapshot, Value,
};

use crate::case::ContentCorruption;
use crate::case::names::field_id;
use crate::case::step::{FlagWordSpec, SequenceSpec};

/// Why a corruption could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorruptError {
    /// The corruption names something the version does not have.
    #[error("corruption {what}: {problem}")]
    Target {
        /// The corruption's name.
        what: String,
        /// What is missing.
        problem: String,
    },
}

/// A part of the version a content corruption names that the version does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Absent {
    /// No fragment has the id.
    #[error("no fragment {0}")]
    Fragment(u64),
    /// The fragment's overlay list has no such position.
    #[error("fragment {fragment} has no overlay at position {position}")]
    Overlay {
        /// Fragment id.
        fragment: u64,
        /// The position asked for.
        position: usize,
    },
    /// The overlay does not list the field.
    #[error("the overlay does not carry field {0}")]
    OverlayField(FieldId),
    /// The overlay lists the field but stores no column for it.
    #[error("no column")]
    OverlayColumn,
    /// No base file of the fragment holds the field.
    #[error("no base column for field {0}")]
    BaseColumn(FieldId),
}

/// Applies `c` to the decoded `snapshot` (see the module docs).
pub fn apply_to_snapshot(
    snapshot: &mut Snapshot,
    c: &ContentCorruption,
) -> Result<(), CorruptError> {
    let what = c.name();
    let missing = |problem: String| CorruptError::Target {
        what: what.clone(),
        problem,
    };
    let absent = |target: Absent| missing(target.to_string());
    let schema = snapshot.schema.clone();
    let field = |n: &str| field_id(&schema, n).ok_or_else(|| missing(format!("no field {n:?}")));
    match c {
        ContentCorruption::ClearFlag { word, bit } => *flag_word(snapshot, *word) &= !bit,
        ContentCorruption::SetFlag { word, bit } => *flag_word(snapshot, *word) |= bit,
        ContentCorruption::CoveragePastEnd {
            fragment,
            overlay,
            field: name,
            offset,
        } => {
            let id = field(name)?;
            let o = overlay_mut(snapshot, *fragment, *overlay).map_err(absent)?;
            let pos = position(o, id).map_err(absent)?;
            // The offset is the bitmap's largest, so its value goes last: every column it
            // applies to gets one (a NULL), and the value counts still match the coverage.
            let positions: Vec<usize> = match &mut o.coverage {
                Coverage::Dense(b) => {
                    b.insert(*offset);
                    (0..o.file.fields.len()).collect()
                }
                Coverage::Sparse(bs) => {
                    bs.get_mut(pos)
                        .ok_or_else(|| missing("no bitmap".into()))?
                        .insert(*offset);
                    vec![pos]
                }
            };
            for p in positions {
                if let Some(col) = o.file.columns.get_mut(p).filter(|c| !c.is_empty()) {
                    let mut values = col.values();
                    values.push(Value::Null);
                    *col = col
                        .with_values(&values)
                        .map_err(|m| missing(format!("{m:?}")))?;
                }
            }
        }
        ContentCorruption::DropCoverageBitmap { fragment, overlay } => {
            let o = overlay_mut(snapshot, *fragment, *overlay).map_err(absent)?;
            match &mut o.coverage {
                Coverage::Sparse(bs) if !bs.is_empty() => {
                    bs.pop();
                }
                _ => return Err(missing("the overlay is not sparse".into())),
            }
        }
        ContentCorruption::DropOverlayValue {
            fragment,
            overlay,
            field: name,
        } => {
            let id = field(name)?;
            let o = overlay_mut(snapshot, *fragment, *overlay).map_err(absent)?;
            let col = value_column_mut(o, id).map_err(absent)?;
            if col.is_empty() {
                return Err(missing("the column is already empty".into()));
            }
            *col = col.truncated(col.len() - 1);
        }
        ContentCorruption::ExtraOverlayValue {
            fragment,
            overlay,
            field: name,
        } => {
            let id = field(name)?;
            let o = overlay_mut(snapshot, *fragment, *overlay).map_err(absent)?;
            let col = value_column_mut(o, id).map_err(absent)?;
            let mut values = col.values();
            values.push(values.last().cloned().unwrap_or(Value::Null));
            *col = col
                .with_values(&values)
                .map_err(|m| missing(format!("{m:?}")))?;
        }
        ContentCorruption::DuplicateOverlayField { fragment, overlay } => {
            let o = overlay_mut(snapshot, *fragment, *overlay).map_err(absent)?;
            let f = *o
                .file
                .fields
                .first()
                .ok_or_else(|| missing("the overlay has no field".into()))?;
            let col = o
                .file
                .columns
                .first()
                .cloned()
                .unwrap_or_else(Column::empty);
            o.file.fields.push(f);
            o.file.columns.push(col);
            if let Coverage::Sparse(bs) = &mut o.coverage {
                let first = bs.first().cloned().unwrap_or_default();
                bs.push(first);
            }
        }
        ContentCorruption::SetCommittedVersion {
            fragment,
            overlay,
            committed_version,
        } => {
            overlay_mut(snapshot, *fragment, *overlay)
                .map_err(absent)?
                .committed_version = *committed_version;
        }
        ContentCorruption::TruncateBaseColumn {
            fragment,
            field: name,
        } => {
            let id = field(name)?;
            let f = fragment_mut(snapshot, *fragment).map_err(absent)?;
            let (file, col) = base_position(f, id)
                .ok_or_else(|| missing(format!("no base column for {name:?}")))?;
            let column = &mut f.files[file].columns[col];
            *column = column.truncated(column.len().saturating_sub(1));
        }
        ContentCorruption::DropLineageColumn { fragment, sequence } => {
            let id: FieldId = match sequence {
                SequenceSpec::RowIds => -3,
                SequenceSpec::CreatedAt => -4,
                SequenceSpec::LastUpdatedAt => -5,
            };
            let f = fragment_mut(snapshot, *fragment).map_err(absent)?;
            let arm = match sequence {
                SequenceSpec::RowIds => &f.lineage.row_ids,
                SequenceSpec::CreatedAt => &f.lineage.created_at,
                SequenceSpec::LastUpdatedAt => &f.lineage.last_updated_at,
            };
            if *arm != LineageSequence::Column {
                return Err(missing("that sequence is not spilled".into()));
            }
            for file in &mut f.files {
                while let Some(pos) = file.fields.iter().position(|x| *x == id) {
                    file.fields.remove(pos);
                    if pos < file.columns.len() {
                        file.columns.remove(pos);
                    }
                }
            }
        }
        ContentCorruption::DeletionPastEnd { fragment, offset } => {
            fragment_mut(snapshot, *fragment)
                .map_err(absent)?
                .deletions
                .insert(*offset);
        }
        ContentCorruption::DuplicateBaseField {
            fragment,
            field: name,
        } => {
            let id = field(name)?;
            duplicate_base_field(snapshot, *fragment, id).map_err(absent)?;
        }
        ContentCorruption::SetIndexCoverage { index, fragments } => {
            snapshot
                .indices
                .iter_mut()
                .find(|i| i.name == *index)
                .ok_or_else(|| missing(format!("no index {index:?}")))?
                .fragment_bitmap = Some(fragments.iter().copied().collect());
        }
    }
    Ok(())
}

/// Appends a copy of field `id`'s live base column to another base file of the fragment (the
/// first one that does not hold it), so two base files hold the field live.
fn duplicate_base_field(snapshot: &mut Snapshot, fragment: u64, id: FieldId) -> Result<(), Absent> {
    let f = fragment_mut(snapshot, fragment)?;
    let (file, col) = base_position(f, id).ok_or(Absent::BaseColumn(id))?;
    let column = f.files[file].columns[col].clone();
    match f.files.iter_mut().enumerate().find(|(i, _)| *i != file) {
        Some((_, other)) => {
            other.fields.push(id);
            other.columns.push(column);
        }
        // One base file: a second one holding only the copy.
        None => f.files.push(DataFile {
            path: format!("f{fragment}-duplicate-{id}.lance"),
            fields: vec![id],
            columns: vec![column],
        }),
    }
    Ok(())
}

fn flag_word(snapshot: &mut Snapshot, word: FlagWordSpec) -> &mut u64 {
    match word {
        FlagWordSpec::Reader => &mut snapshot.reader_flags,
        FlagWordSpec::Writer => &mut snapshot.writer_flags,
    }
}

fn fragment_mut(snapshot: &mut Snapshot, id: u64) -> Result<&mut Fragment, Absent> {
    snapshot
        .fragments
        .iter_mut()
        .find(|f| f.id == id)
        .ok_or(Absent::Fragment(id))
}

fn overlay_mut(
    snapshot: &mut Snapshot,
    fragment: u64,
    position: usize,
) -> Result<&mut Overlay, Absent> {
    fragment_mut(snapshot, fragment)?
        .overlays
        .get_mut(position)
        .ok_or(Absent::Overlay { fragment, position })
}

fn position(o: &Overlay, id: FieldId) -> Result<usize, Absent> {
    o.file
        .fields
        .iter()
        .position(|f| *f == id)
        .ok_or(Absent::OverlayField(id))
}

/// The value column the overlay stores for field `id`.
fn value_column_mut(o: &mut Overlay, id: FieldId) -> Result<&mut Column, Absent> {
    let pos = position(o, id)?;
    o.file.columns.get_mut(pos).ok_or(Absent::OverlayColumn)
}

fn base_position(f: &Fragment, id: FieldId) -> Option<(usize, usize)> {
    f.files
        .iter()
        .enumerate()
        .find_map(|(i, file)| file.fields.iter().position(|x| *x == id).map(|p| (i, p)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lance_reference::model::Value;
    use lance_reference::worked_example;

    #[test]
    fn each_corruption_changes_only_its_target() {
        let clean = worked_example::version_1();
        let mut s = clean.clone();
        apply_to_snapshot(
            &mut s,
            &ContentCorruption::SetFlag {
                word: FlagWordSpec::Reader,
                bit: 1 << 20,
            },
        )
        .unwrap();
        assert_eq!(s.reader_flags, clean.reader_flags | 1 << 20);
        assert_eq!(s.fragments, clean.fragments);

        let mut s = clean.clone();
        apply_to_snapshot(
            &mut s,
            &ContentCorruption::TruncateBaseColumn {
                fragment: 0,
                field: "age".into(),
            },
        )
        .unwrap();
        assert_eq!(s.fragments[0].files[0].columns[2].len(), 3);
        assert_eq!(s.fragments[0].files[0].columns[1].len(), 4);
        assert!(matches!(
            s.fragments[0].files[0].columns[2].value(2),
            Some(Value::Int32(40))
        ));

        let mut s = clean.clone();
        let e = apply_to_snapshot(
            &mut s,
            &ContentCorruption::DropCoverageBitmap {
                fragment: 0,
                overlay: 0,
            },
        );
        assert!(matches!(e, Err(CorruptError::Target { .. })));
    }
}
