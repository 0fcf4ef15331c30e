//! The resolved table of one dataset version: what a reader returns for a full scan.
//!
//! Invariant: a scan lists every live (non-deleted) row exactly once, fragments in manifest
//! order and rows in physical order, with each projected top-level column resolved by
//! [`crate::resolve::resolve_column`], plus the row's `_rowid` and its two lineage versions.
//! Without stable row ids `_rowid` is the row address `(fragment_id << 32) | offset`; a version
//! sequence that is absent reads as version 1 for every row. [`scan`] returns rows of
//! `Value`s, [`scan_batches`] the same rows as Arrow record batches; both take every rule
//! from [`crate::resolve`] and one lineage helper. [`FragmentScan`] is one fragment of
//! [`scan_batches`] resolved once and read row by row, for a caller that walks a large
//! fragment's rows without holding a batch's per-row columns for all of them.

use crate::columnar::{arrow_type, resolve_array};
use crate::error::{Error, Result};
use crate::model::{
    CREATED_AT_FIELD_ID, FieldId, Fragment, LAST_UPDATED_AT_FIELD_ID, ROW_ID_FIELD_ID, Snapshot,
    Value, value_at,
};
use crate::resolve::resolve_column;

use std::borrow::Cow;
use std::ops::Range;
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
    let lineage = RowLineage::of(snapshot.stable_row_ids, fragment)?;
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
    fn of(stable_row_ids: bool, fragment: &'f Fragment) -> Result<RowLineage<'f>> {
        let row_ids =
            if stable_row_ids {
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
    FragmentScan::new(snapshot, Cow::Borrowed(fragment), fields)?.batch(schema)
}

/// One fragment's scan, resolved once: the rows [`scan_batches`] gives for the fragment (the
/// same order, values and lineage), read by position among its live rows. It holds the
/// fragment, each projected column resolved ([`crate::columnar::resolve_array`]) and, when
/// the fragment has deletions, the offset of each live row: never the batch's five per-row
/// columns, which a caller reading rows one by one asks for a row at a time.
#[derive(Debug, Clone)]
pub struct FragmentScan<'f> {
    fragment: Cow<'f, Fragment>,
    stable_row_ids: bool,
    fields: Vec<FieldId>,
    resolved: Vec<ArrayRef>,
    /// The physical offset of each live row, ascending; `None` when every row is live (the
    /// offset is the position).
    live: Option<Vec<u32>>,
}

impl<'f> FragmentScan<'f> {
    /// Resolves `fragment` of `snapshot` for the top-level `fields`, refusing what
    /// [`scan_batches`] refuses of it, in the same order.
    pub fn new(
        snapshot: &Snapshot,
        fragment: Cow<'f, Fragment>,
        fields: &[FieldId],
    ) -> Result<FragmentScan<'f>> {
        let resolved: Vec<ArrayRef> = fields
            .iter()
            .map(|&f| resolve_array(&snapshot.schema, &fragment, f))
            .collect::<Result<_>>()?;
        RowLineage::of(snapshot.stable_row_ids, &fragment)?;
        let live = if fragment.deletions.is_empty() {
            // Still the check `live_offsets` makes: every offset fits in `u32`.
            fragment.offset_count()?;
            None
        } else {
            Some(fragment.live_offsets()?.collect())
        };
        let scan = FragmentScan {
            fragment,
            stable_row_ids: snapshot.stable_row_ids,
            fields: fields.to_vec(),
            resolved,
            live,
        };
        // What a batch of the rows would refuse (every column one value per live row).
        if let Some(c) = scan.resolved.iter().find(|c| c.len() != scan.len()) {
            return Err(Error::TypeMismatch {
                fragment: scan.fragment.id,
                file: "(scan batch)".into(),
                field: fields.first().copied().unwrap_or(ROW_ID_FIELD_ID),
                index: 0,
                expected: "one batch of equal-length columns".into(),
                found: format!(
                    "a resolved column of {} rows for {} live rows",
                    c.len(),
                    scan.len()
                ),
            });
        }
        Ok(scan)
    }

    /// The number of live rows.
    pub fn len(&self) -> usize {
        match &self.live {
            Some(live) => live.len(),
            // `new` checked that the offsets fit in `u32`.
            None => usize::try_from(self.fragment.physical_rows).unwrap_or(0),
        }
    }

    /// Whether the fragment has no live row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The fragment scanned.
    pub fn fragment(&self) -> &Fragment {
        &self.fragment
    }

    /// The physical offset of the live row at `position`.
    fn offset(&self, position: usize) -> Option<usize> {
        match &self.live {
            Some(live) => live.get(position).map(|&o| o as usize),
            None => (position < self.len()).then_some(position),
        }
    }

    /// The position among the live rows of the row at physical `offset`, if it is live.
    pub fn position(&self, offset: u64) -> Option<usize> {
        match &self.live {
            Some(live) => live.binary_search(&u32::try_from(offset).ok()?).ok(),
            None => usize::try_from(offset).ok().filter(|&p| p < self.len()),
        }
    }

    /// The live rows at `positions` (clamped to the live rows), each as [`scan`] returns it:
    /// `None` for a row whose values the model cannot hold.
    pub fn rows(&self, positions: Range<usize>) -> impl Iterator<Item = Option<ScanRow>> + '_ {
        // `new` checked the lineage, so this cannot fail here.
        let lineage = RowLineage::of(self.stable_row_ids, &self.fragment).ok();
        let end = positions.end.min(self.len());
        lineage.into_iter().flat_map(move |lineage| {
            (positions.start..end).map(move |k| {
                let offset = self.offset(k)?;
                let values = self
                    .resolved
                    .iter()
                    .map(|c| value_at(c.as_ref(), k))
                    .collect::<Option<Vec<Value>>>()?;
                Some(ScanRow {
                    fragment: self.fragment.id,
                    offset: offset as u64,
                    row_id: lineage.row_id(offset),
                    created_at: lineage.version(CREATED_AT_FIELD_ID, offset),
                    last_updated_at: lineage.version(LAST_UPDATED_AT_FIELD_ID, offset),
                    values,
                })
            })
        })
    }

    /// The physical offset and `_rowid` of every live row, in order.
    pub fn row_ids(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let lineage = RowLineage::of(self.stable_row_ids, &self.fragment).ok();
        lineage.into_iter().flat_map(move |lineage| {
            (0..self.len())
                .filter_map(move |k| self.offset(k))
                .map(move |o| (o as u64, lineage.row_id(o)))
        })
    }

    /// Every live row as one record batch of `schema` ([`scan_batches`]' columns).
    fn batch(&self, schema: &SchemaRef) -> Result<RecordBatch> {
        let fragment = self.fragment.as_ref();
        let lineage = RowLineage::of(self.stable_row_ids, fragment)?;
        // Exact-size iterators: each column is allocated once, at its length.
        let per_row = |value: &dyn Fn(usize) -> u64| -> ArrayRef {
            Arc::new(match &self.live {
                Some(live) => {
                    UInt64Array::from_iter_values(live.iter().map(|&o| value(o as usize)))
                }
                None => UInt64Array::from_iter_values((0..self.len()).map(value)),
            })
        };
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
        columns.push(per_row(&|_| fragment.id));
        columns.push(per_row(&|o| o as u64));
        columns.push(per_row(&|o| lineage.row_id(o)));
        columns.push(per_row(&|o| lineage.version(CREATED_AT_FIELD_ID, o)));
        columns.push(per_row(&|o| lineage.version(LAST_UPDATED_AT_FIELD_ID, o)));
        columns.extend(self.resolved.iter().cloned());
        RecordBatch::try_new(schema.clone(), columns).map_err(|e| Error::TypeMismatch {
            fragment: fragment.id,
            file: "(scan batch)".into(),
            field: self.fields.first().copied().unwrap_or(ROW_ID_FIELD_ID),
            index: 0,
            expected: "one batch of equal-length columns".into(),
            found: e.to_string(),
        })
    }
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
