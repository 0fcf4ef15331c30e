//! The resolved table of one dataset version: what a reader returns for a full scan.
//!
//! Invariant: a scan lists every live (non-deleted) row exactly once, fragments in manifest
//! order and rows in physical order, with each projected top-level column resolved by
//! [`crate::resolve::resolve_column`], plus the row's `_rowid` and its two lineage versions.
//! Without stable row ids `_rowid` is the row address `(fragment_id << 32) | offset`; a version
//! sequence that is absent reads as version 1 for every row.

use crate::error::{Error, Result};
use crate::model::{
    CREATED_AT_FIELD_ID, FieldId, Fragment, LAST_UPDATED_AT_FIELD_ID, ROW_ID_FIELD_ID, Snapshot,
    Value,
};
use crate::resolve::resolve_column;

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
    let row_ids = if snapshot.stable_row_ids {
        Some(
            fragment
                .lineage_values(ROW_ID_FIELD_ID)?
                .ok_or_else(|| Error::UnknownField {
                    field: ROW_ID_FIELD_ID,
                    context: format!(
                        "fragment {} has no row id sequence but stable row ids are on",
                        fragment.id
                    ),
                })?,
        )
    } else {
        None
    };
    let created = fragment.lineage_values(CREATED_AT_FIELD_ID)?;
    let updated = fragment.lineage_values(LAST_UPDATED_AT_FIELD_ID)?;
    // Sequence lengths were checked by `Fragment::validate`; a short one is still an error here.
    let at = |seq: Option<&Vec<u64>>, field: FieldId, i: usize| -> Result<u64> {
        match seq {
            None => Ok(DEFAULT_ROW_VERSION),
            Some(v) => v.get(i).copied().ok_or_else(|| Error::BaseLengthMismatch {
                fragment: fragment.id,
                file: "(lineage)".into(),
                field,
                values: v.len() as u64,
                physical_rows: fragment.physical_rows,
            }),
        }
    };
    for offset in 0..fragment.physical_rows as usize {
        let mut values = Vec::with_capacity(columns.len());
        for column in &columns {
            match column.get(offset) {
                Some(Some(v)) => values.push(v.clone()),
                _ => break, // deleted
            }
        }
        if values.len() != columns.len() || fragment.deletions.contains(offset as u32) {
            continue;
        }
        let row_id = match &row_ids {
            Some(ids) => at(Some(ids), ROW_ID_FIELD_ID, offset)?,
            None => row_address(fragment.id, offset as u64),
        };
        out.push(ScanRow {
            fragment: fragment.id,
            offset: offset as u64,
            row_id,
            created_at: at(created.as_ref(), CREATED_AT_FIELD_ID, offset)?,
            last_updated_at: at(updated.as_ref(), LAST_UPDATED_AT_FIELD_ID, offset)?,
            values,
        });
    }
    Ok(())
}
