//! Writing an overlay: turning a set of changed cells into a staged [`Overlay`].
//!
//! Invariant: an overlay built here is valid for its fragment by construction: every field is
//! a live, non-struct user field of the schema (a `fixed_size_list` is one leaf), every offset
//! is below `physical_rows`, values are stored in rank order (ascending offset) with exactly one
//! value per covered offset, and no overlay is produced when nothing is covered. It is staged
//! with `committed_version` 0: the commit stamps the version it lands at
//! ([`crate::lineage::PendingCommit`]).
//!
//! Shape: [`Shape::Auto`] writes a dense overlay when every field changes the same offsets and a
//! sparse one otherwise; [`Shape::Dense`] widens a non-rectangular update to the rectangle
//! (union of offsets x fields), filling each cell that did not change with its current
//! resolved value (its post-image), never a placeholder.
//!
//! [`tombstone_fields`] removes fields from an existing overlay the only allowed way: by
//! replacing their ids with `-2` in place, so positions and per-field bitmaps stay aligned.

use std::collections::BTreeMap;

use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::model::{
    Column, Coverage, DataFile, DataType, FieldId, Fragment, Overlay, Schema, TOMBSTONE_FIELD_ID,
    Value,
};
use crate::resolve::resolve_column;

/// Changed cells: per field id, per physical offset, the new value (NULL allowed).
pub type CellUpdates = BTreeMap<FieldId, BTreeMap<u32, Value>>;

/// Which physical shape to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    /// Dense when every field covers the same offsets, sparse otherwise.
    #[default]
    Auto,
    /// Always one bitmap per field.
    Sparse,
    /// Always one shared bitmap, widening to the rectangle with post-images.
    Dense,
}

/// Builds the staged overlay that writes `updates` to `fragment`, or `None` when `updates`
/// covers no cell. `path` names the overlay's data file.
pub fn build_overlay(
    schema: &Schema,
    fragment: &Fragment,
    updates: &CellUpdates,
    shape: Shape,
    path: &str,
) -> Result<Option<Overlay>> {
    let mut fields: Vec<FieldId> = Vec::new();
    for (&field, cells) in updates {
        check_field(schema, field, path)?;
        let data_type = &schema
            .field(field)
            .map(|f| f.data_type.clone())
            .unwrap_or(DataType::Struct);
        for (&offset, value) in cells {
            if u64::from(offset) >= fragment.physical_rows {
                return Err(Error::OffsetOutOfRange {
                    fragment: fragment.id,
                    file: path.into(),
                    what: format!("update of field {field}"),
                    offset: u64::from(offset),
                    physical_rows: fragment.physical_rows,
                });
            }
            if !value.fits(data_type) {
                return Err(Error::TypeMismatch {
                    fragment: fragment.id,
                    file: path.into(),
                    field,
                    index: u64::from(offset),
                    expected: data_type.logical_type(),
                    found: value.kind().into(),
                });
            }
        }
        if !cells.is_empty() {
            fields.push(field);
        }
    }
    if fields.is_empty() {
        return Ok(None);
    }
    let bitmaps: Vec<RoaringBitmap> = fields
        .iter()
        .map(|f| updates[f].keys().copied().collect())
        .collect();
    let rectangular = bitmaps.windows(2).all(|w| w[0] == w[1]);
    let dense = match shape {
        Shape::Auto => rectangular,
        Shape::Sparse => false,
        Shape::Dense => true,
    };
    let (coverage, columns) = if dense {
        let union: RoaringBitmap = bitmaps.iter().fold(RoaringBitmap::new(), |acc, b| acc | b);
        let mut columns = Vec::with_capacity(fields.len());
        for field in &fields {
            let changed = &updates[field];
            // Post-images of the cells the update leaves alone, read only when needed.
            let current = if changed.len() as u64 == union.len() {
                None
            } else {
                Some(resolve_column(schema, fragment, *field)?)
            };
            let values: Vec<Value> = union
                .iter()
                .map(|offset| match changed.get(&offset) {
                    Some(v) => v.clone(),
                    None => current
                        .as_ref()
                        .and_then(|c| c.get(offset as usize).cloned().flatten())
                        .unwrap_or(Value::Null),
                })
                .collect();
            columns.push(Column::for_field(
                schema,
                *field,
                &values,
                fragment.id,
                path,
            )?);
        }
        (Coverage::Dense(union), columns)
    } else {
        let columns = fields
            .iter()
            .map(|f| {
                let values: Vec<Value> = updates[f].values().cloned().collect();
                Column::for_field(schema, *f, &values, fragment.id, path)
            })
            .collect::<Result<_>>()?;
        (Coverage::Sparse(bitmaps), columns)
    };
    Ok(Some(Overlay {
        file: DataFile {
            path: path.into(),
            fields,
            columns,
        },
        coverage,
        committed_version: 0,
    }))
}

fn check_field(schema: &Schema, field: FieldId, path: &str) -> Result<()> {
    match schema.field(field) {
        Some(f) if f.data_type != DataType::Struct => Ok(()),
        Some(_) => Err(Error::UnknownField {
            field,
            context: format!("{path}: a struct is a container; overlays address its leaf fields"),
        }),
        None => Err(Error::UnknownField {
            field,
            context: format!("{path}: overlays only write live user fields of the schema"),
        }),
    }
}

/// Tombstones `fields` in `overlay` in place (their ids become `-2`; positions, bitmaps and
/// value columns stay). Returns whether the overlay still has a live field; an overlay left
/// with none may be dropped by the committer.
pub fn tombstone_fields(overlay: &mut Overlay, fields: &[FieldId]) -> bool {
    for id in overlay.file.fields.iter_mut() {
        if fields.contains(id) {
            *id = TOMBSTONE_FIELD_ID;
        }
    }
    overlay.file.fields.iter().any(|&f| f >= 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::cols;
    use crate::worked_example::{self, AGE, EMBEDDING, ID, NAME};

    fn updates(cells: &[(FieldId, u32, Value)]) -> CellUpdates {
        let mut u = CellUpdates::new();
        for (f, o, v) in cells {
            u.entry(*f).or_default().insert(*o, v.clone());
        }
        u
    }

    #[test]
    fn a_rectangular_update_is_written_dense_in_rank_order() {
        // covers: OVL-COV-1, OVL-LAYOUT-2
        let s = worked_example::version_1();
        let u = updates(&[(AGE, 3, Value::Int32(23)), (AGE, 1, Value::Int32(26))]);
        let o = build_overlay(&s.schema, &s.fragments[0], &u, Shape::Auto, "o.lance")
            .unwrap()
            .unwrap();
        assert_eq!(o, worked_example::step_1_overlay().with_path("o.lance"));
        assert_eq!(
            o.file.columns.len(),
            o.file.fields.len(),
            "no offset column is stored"
        );
    }

    #[test]
    fn a_non_rectangular_update_is_written_sparse() {
        let s = worked_example::version_1();
        let u = updates(&[
            (NAME, 2, Value::Utf8("Caroline".into())),
            (NAME, 3, Value::Utf8("David".into())),
            (EMBEDDING, 1, Value::Vector(vec![Some(0.5); 3])),
        ]);
        let o = build_overlay(&s.schema, &s.fragments[0], &u, Shape::Auto, "p.lance")
            .unwrap()
            .unwrap();
        assert_eq!(o, worked_example::step_4_overlay().with_path("p.lance"));
    }

    #[test]
    fn widening_to_dense_stores_post_images_not_placeholders() {
        // covers: OVL-SHAPE-4
        let s = worked_example::version_1();
        let u = updates(&[
            (NAME, 2, Value::Utf8("Caroline".into())),
            (AGE, 1, Value::Null),
        ]);
        let o = build_overlay(&s.schema, &s.fragments[0], &u, Shape::Dense, "w.lance")
            .unwrap()
            .unwrap();
        assert_eq!(o.coverage, Coverage::Dense([1u32, 2].into_iter().collect()));
        assert_eq!(o.file.fields, vec![NAME, AGE]);
        assert_eq!(
            o.file.columns,
            cols(vec![
                vec![Value::Utf8("Bob".into()), Value::Utf8("Caroline".into())],
                vec![Value::Null, Value::Int32(40)],
            ])
        );
        // Widening changes nothing a reader sees beyond the update itself.
        let mut narrow = s.fragments[0].clone();
        let mut wide = s.fragments[0].clone();
        let sparse = build_overlay(&s.schema, &narrow, &u, Shape::Sparse, "n.lance").unwrap();
        narrow.overlays.push(Overlay {
            committed_version: 2,
            ..sparse.unwrap()
        });
        wide.overlays.push(Overlay {
            committed_version: 2,
            ..o
        });
        for f in [ID, NAME, AGE, EMBEDDING] {
            assert_eq!(
                resolve_column(&s.schema, &narrow, f).unwrap(),
                resolve_column(&s.schema, &wide, f).unwrap()
            );
        }
    }

    #[test]
    fn nothing_to_cover_writes_no_overlay() {
        // covers: OVL-COV-5
        let s = worked_example::version_1();
        let mut u = CellUpdates::new();
        u.insert(AGE, BTreeMap::new());
        assert_eq!(
            build_overlay(&s.schema, &s.fragments[0], &u, Shape::Auto, "e.lance").unwrap(),
            None
        );
    }

    #[test]
    fn only_live_leaf_fields_of_the_schema_are_written() {
        // covers: OVL-SHAPE-6, OVL-TOMB-6
        let s = worked_example::version_1();
        for field in [-2, -3, 99] {
            let u = updates(&[(field, 0, Value::Int32(1))]);
            let err = build_overlay(&s.schema, &s.fragments[0], &u, Shape::Auto, "x.lance");
            assert_eq!(err.unwrap_err().code(), "unknown_field", "field {field}");
        }
        let u = updates(&[(AGE, 4, Value::Int32(1))]);
        let err = build_overlay(&s.schema, &s.fragments[0], &u, Shape::Auto, "x.lance");
        assert_eq!(err.unwrap_err().code(), "offset_out_of_range");
        let u = updates(&[(AGE, 0, Value::Utf8("thirty".into()))]);
        let err = build_overlay(&s.schema, &s.fragments[0], &u, Shape::Auto, "x.lance");
        assert_eq!(err.unwrap_err().code(), "type_mismatch");
    }

    #[test]
    fn tombstoning_keeps_positions_and_bitmaps_aligned() {
        // covers: OVL-TOMB-2, OVL-TOMB-3
        let mut o = worked_example::step_4_overlay();
        let before = o.clone();
        assert!(tombstone_fields(&mut o, &[NAME]));
        assert_eq!(o.file.fields, vec![-2, EMBEDDING]);
        assert_eq!(o.coverage, before.coverage);
        assert_eq!(o.file.columns, before.file.columns);
        assert!(
            !tombstone_fields(&mut o, &[EMBEDDING]),
            "no live field is left"
        );
    }
}
