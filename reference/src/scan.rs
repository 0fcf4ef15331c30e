//! The resolved table of one dataset version: what a reader returns for a full scan.
//!
//! Invariant: a scan lists every live (non-deleted) row exactly once, fragments in manifest
//! order and rows in physical order, with each projected top-level column resolved by
//! [`crate::resolve::resolve_column`], plus the row's `_rowid` and its two lineage versions.
//! Without stable row ids `_rowid` is the row address `(fragment_id << 32) | offset`; a version
//! sequence that is absent reads as version 1 for every row. [`scan`] returns rows of
//! `Value`s, [`scan_batches`] the same rows as Arrow record batches; both take every rule
//! from [`crate::resolve`] and one lineage helper.

use crate::columnar::{arrow_type, resolve_array};
use crate::error::{Error, Result};
use crate::model::{
    CREATED_AT_FIELD_ID, FieldId, Fragment, LAST_UPDATED_AT_FIELD_ID, ROW_ID_FIELD_ID, Snapshot,
    Value,
};
use crate::resolve::resolve_column;

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt64Array};
use arrow_schema::{DataType as ArrowType, Field as ArrowField, Schema as ArrowSchema, SchemaRef};

/// The version a row reports when its fragment records no version sequence.
pub const DEFAULT_ROW_VERSION: u64 = 1;

/// One live row of a scan.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanRow {
    /// Fragment id.
    pub fragment: u64,
    /// Physical offset within the fragment.
    pub offset: u64,
    /// `_rowid`: the stable row id, or the row address without stable row ids.
    pub row_id: u64,
    /// `_row_created_at_version`.
    pub created_at: u64,
    /// `_row_last_updated_at_version`.
    pub last_updated_at: u64,
    /// Projected column values, in projection order.
    pub values: Vec<Value>,
}

/// The row address of a physical row: fragment id in the high 32 bits, offset in the low.
pub fn row_address(fragment: u64, offset: u64) -> u64 {
    (fragment << 32) | (offset & 0xffff_ffff)
}

/// Scans every fragment of `snapshot`. `projection` lists top-level field ids; `None` means all
/// top-level fields in schema order.
pub fn scan(snapshot: &Snapshot, projection: Option<&[FieldId]>) -> Result<Vec<ScanRow>> {
    let fields: Vec<FieldId> = match projection {
        Some(p) => p.to_vec(),
        None => snapshot.schema.top_level().map(|f| f.id).collect(),
    };
    let mut rows = Vec::new();
    for fragment in &snapshot.fragments {
        scan_fragment(snapshot, fragment, &fields, &mut rows)?;
    }
    Ok(rows)
}

/// Scans one fragment, appending its live rows to `out`.
pub fn scan_fragment(
    snapshot: &Snapshot,
    fragment: &Fragment,
    fields: &[FieldId],
    out: &mut Vec<ScanRow>,
) -> Result<()> {
    let columns: Vec<Vec<Option<Value>>> = fields
        .iter()
        .map(|&f| resolve_column(&snapshot.schema, fragment, f))
        .collect::<Result<_>>()?;
    let lineage = RowLineage::of(snapshot, fragment)?;
    for offset in fragment.live_offsets()?.map(|o| o as usize) {
        // Every resolved column holds a value at a live offset.
        let Some(values) = columns
            .iter()
            .map(|c| c.get(offset).cloned().flatten())
            .collect::<Option<Vec<Value>>>()
        else {
            continue;
        };
        out.push(ScanRow {
            fragment: fragment.id,
            offset: offset as u64,
            row_id: lineage.row_id(offset),
            created_at: lineage.version(CREATED_AT_FIELD_ID, offset),
            last_updated_at: lineage.version(LAST_UPDATED_AT_FIELD_ID, offset),
            values,
        });
    }
    Ok(())
}

/// What a scan reports of a fragment's lineage, per offset: `_rowid` (the stable row id, or
/// the row address without stable row ids) and the two versions (version 1 where the
/// fragment records no sequence).
struct RowLineage<'f> {
    fragment: &'f Fragment,
    row_ids: Option<&'f [u64]>,
    created: Option<&'f [u64]>,
    updated: Option<&'f [u64]>,
}

impl<'f> RowLineage<'f> {
    fn of(snapshot: &Snapshot, fragment: &'f Fragment) -> Result<RowLineage<'f>> {
        let row_ids =
            if snapshot.stable_row_ids {
                Some(fragment.lineage_slice(ROW_ID_FIELD_ID)?.ok_or_else(|| {
                    Error::UnknownField {
                        field: ROW_ID_FIELD_ID,
                        context: format!(
                            "fragment {} has no row id sequence but stable row ids are on",
                            fragment.id
                        ),
                    }
                })?)
            } else {
                None
            };
        let lineage = RowLineage {
            fragment,
            row_ids,
            created: fragment.lineage_slice(CREATED_AT_FIELD_ID)?,
            updated: fragment.lineage_slice(LAST_UPDATED_AT_FIELD_ID)?,
        };
        // `Fragment::validate` checked the lengths; a short sequence is still an error here,
        // once, so that every lookup below is in bounds.
        for (field, values) in [
            (ROW_ID_FIELD_ID, &lineage.row_ids),
            (CREATED_AT_FIELD_ID, &lineage.created),
            (LAST_UPDATED_AT_FIELD_ID, &lineage.updated),
        ] {
            if let Some(values) = values
                .as_ref()
                .filter(|v| v.len() as u64 != fragment.physical_rows)
            {
                return Err(Error::BaseLengthMismatch {
                    fragment: fragment.id,
                    file: "(lineage)".into(),
                    field,
                    values: values.len() as u64,
                    physical_rows: fragment.physical_rows,
                });
            }
        }
        Ok(lineage)
    }

    /// `_rowid` at `offset`, a physical offset of the fragment.
    fn row_id(&self, offset: usize) -> u64 {
        match &self.row_ids {
            Some(ids) => ids[offset],
            None => row_address(self.fragment.id, offset as u64),
        }
    }

    /// The created-at (`CREATED_AT_FIELD_ID`) or last-updated-at version at `offset`, a
    /// physical offset of the fragment.
    fn version(&self, field: FieldId, offset: usize) -> u64 {
        let seq = if field == CREATED_AT_FIELD_ID {
            &self.created
        } else {
            &self.updated
        };
        seq.as_ref()
            .map_or(DEFAULT_ROW_VERSION, |values| values[offset])
    }
}

/// The names of a scan batch's first five columns, before the projected ones.
pub const BATCH_PREFIX: [&str; 5] = [
    "fragment",
    "offset",
    "_rowid",
    "_row_created_at_version",
    "_row_last_updated_at_version",
];

/// Scans every fragment of `snapshot` as record batches, one per fragment (one empty batch
/// when there is none), holding the same
/// rows as [`scan`]: `fragment`, `offset`, `_rowid`, `_row_created_at_version` and
/// `_row_last_updated_at_version` (`UInt64`, never NULL), then each projected top-level
/// column ([`crate::columnar::resolve_array`]) under its field's name.
pub fn scan_batches(
    snapshot: &Snapshot,
    projection: Option<&[FieldId]>,
) -> Result<Vec<RecordBatch>> {
    let fields: Vec<FieldId> = match projection {
        Some(p) => p.to_vec(),
        None => snapshot.schema.top_level().map(|f| f.id).collect(),
    };
    let mut schema_fields: Vec<ArrowField> = BATCH_PREFIX
        .iter()
        .map(|name| ArrowField::new(*name, ArrowType::UInt64, false))
        .collect();
    for &field in &fields {
        let f = snapshot
            .schema
            .field(field)
            .ok_or_else(|| Error::UnknownField {
                field,
                context: "scan projection".into(),
            })?;
        schema_fields.push(ArrowField::new(
            f.name.clone(),
            arrow_type(&snapshot.schema, field)?,
            true,
        ));
    }
    let schema = Arc::new(ArrowSchema::new(schema_fields));
    let mut batches: Vec<RecordBatch> = snapshot
        .fragments
        .iter()
        .map(|fragment| scan_fragment_batch(snapshot, fragment, &fields, &schema))
        .collect::<Result<_>>()?;
    if batches.is_empty() {
        // The columns travel with a batch: a version without fragments answers one empty one.
        batches.push(RecordBatch::new_empty(schema));
    }
    Ok(batches)
}

fn scan_fragment_batch(
    snapshot: &Snapshot,
    fragment: &Fragment,
    fields: &[FieldId],
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    let resolved: Vec<ArrayRef> = fields
        .iter()
        .map(|&f| resolve_array(&snapshot.schema, fragment, f))
        .collect::<Result<_>>()?;
    let lineage = RowLineage::of(snapshot, fragment)?;
    let live: Vec<usize> = fragment.live_offsets()?.map(|o| o as usize).collect();
    let per_row = |value: &dyn Fn(usize) -> u64| -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(
            live.iter().map(|&o| value(o)),
        ))
    };
    columns.push(per_row(&|_| fragment.id));
    columns.push(per_row(&|o| o as u64));
    columns.push(per_row(&|o| lineage.row_id(o)));
    columns.push(per_row(&|o| lineage.version(CREATED_AT_FIELD_ID, o)));
    columns.push(per_row(&|o| lineage.version(LAST_UPDATED_AT_FIELD_ID, o)));
    columns.extend(resolved);
    RecordBatch::try_new(schema.clone(), columns).map_err(|e| Error::TypeMismatch {
        fragment: fragment.id,
        file: "(scan batch)".into(),
        field: fields.first().copied().unwrap_or(ROW_ID_FIELD_ID),
        index: 0,
        expected: "one batch of equal-length columns".into(),
        found: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::value_at;
    use crate::worked_example;

    /// Every version of the worked example: the batches hold the row scan's rows, cell for
    /// cell, with the same positions and lineage.
    #[test]
    fn batches_hold_the_row_scan() {
        for snapshot in worked_example::versions().unwrap() {
            let rows = scan(&snapshot, None).unwrap();
            let batches = scan_batches(&snapshot, None).unwrap();
            assert_eq!(batches.len(), snapshot.fragments.len());
            let mut i = 0;
            for batch in &batches {
                let names: Vec<String> = batch
                    .schema()
                    .fields()
                    .iter()
                    .map(|f| f.name().clone())
                    .collect();
                assert_eq!(names[..5], BATCH_PREFIX.map(String::from));
                for r in 0..batch.num_rows() {
                    let row = &rows[i];
                    let fixed: Vec<Option<Value>> = (0..5)
                        .map(|c| value_at(batch.column(c).as_ref(), r))
                        .collect();
                    assert_eq!(
                        fixed,
                        [
                            row.fragment,
                            row.offset,
                            row.row_id,
                            row.created_at,
                            row.last_updated_at
                        ]
                        .map(|x| Some(Value::UInt64(x)))
                    );
                    for (c, v) in row.values.iter().enumerate() {
                        let got = value_at(batch.column(5 + c).as_ref(), r).unwrap();
                        assert!(
                            got.identical(v),
                            "version {} row {i}: {got} vs {v}",
                            snapshot.version
                        );
                    }
                    i += 1;
                }
            }
            assert_eq!(i, rows.len(), "version {}", snapshot.version);
        }
    }
}
