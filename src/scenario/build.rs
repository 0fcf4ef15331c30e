//! Turning a step's case-level data (names, cells, offsets) into the model values a commit
//! writes: schema fields, appended fragments, overlays.
//!
//! Invariant: everything built here is what a writer stages *before* its commit: fragments
//! without lineage and overlays with `committed_version` 0. Assigning ids, versions and
//! last-updated-at is the commit's job ([`lance_reference::lineage::stamping`]), so a
//! `commit_retry` can re-stamp the very same staged data.

use std::collections::BTreeMap;

use lance_reference::lineage::{
    AppendedFragment, CompactionPlacement, EncodedLengths, PendingCommit, RowDatasetVersionSequence,
    RowIdSequence, SequenceKind, SpillConfig, plan_compaction,
};
use lance_reference::model::{
    Coverage, DataFile, DataType, Field, FieldId, Fragment, LineageSequence, Overlay, Schema, Value,
};
use roaring::RoaringBitmap;

use super::Outcome;
use crate::case::cell::parse_type_name;
use crate::case::names::{dotted_name, field_id};
use crate::case::step::{FieldSpec, OverlaySpec, Row, Shape, Step};

/// Schema fields (pre-order) for `specs` under `parent`, assigning ids from `next_id` unless
/// given; `existing` are fields already in the schema (their ids and top-level names are taken).
pub(super) fn schema_fields(
    specs: &[FieldSpec],
    parent: FieldId,
    next_id: &mut i32,
    existing: &[Field],
) -> Outcome<Vec<Field>> {
    let mut out: Vec<Field> = Vec::new();
    for spec in specs {
        if spec.name.is_empty() || spec.name.contains('.') {
            return Err(format!("field name {:?} must be non-empty and without dots", spec.name).into());
        }
        let sibling_taken = existing.iter().chain(out.iter()).any(|f| f.parent_id == parent && f.name == spec.name);
        if sibling_taken {
            return Err(format!("field name {:?} is used twice", spec.name).into());
        }
        let data_type = parse_type_name(&spec.data_type)
            .ok_or_else(|| format!("field {:?}: unknown type {:?}", spec.name, spec.data_type))?;
        let id = match spec.id {
            Some(id) => id,
            None => *next_id,
        };
        if existing.iter().chain(out.iter()).any(|f| f.id == id) {
            return Err(format!("field {:?}: id {id} is taken", spec.name).into());
        }
        *next_id = (*next_id).max(id.saturating_add(1));
        if data_type == DataType::Struct && spec.children.is_empty() {
            return Err(format!("struct {:?} needs children", spec.name).into());
        }
        if data_type != DataType::Struct && !spec.children.is_empty() {
            return Err(format!("only a struct has children ({:?})", spec.name).into());
        }
        out.push(Field { id, parent_id: parent, name: spec.name.clone(), data_type, nullable: spec.nullable });
        let mut seen: Vec<Field> = existing.to_vec();
        seen.extend(out.iter().cloned());
        let children = schema_fields(&spec.children, id, next_id, &seen)?;
        out.extend(children);
    }
    Ok(out)
}

/// A staged fragment `id` with one base file `path` holding `rows` in every schema field
/// (pre-order; a struct stores its validity, each child its own column).
pub(super) fn appended(schema: &Schema, id: u64, path: &str, rows: &[Row]) -> Outcome<AppendedFragment> {
    let mut columns: BTreeMap<FieldId, Vec<Value>> = BTreeMap::new();
    for (r, row) in rows.iter().enumerate() {
        if let Some(unknown) = row.keys().find(|k| !schema.top_level().any(|f| &f.name == *k)) {
            return Err(format!("row {r}: no top-level field {unknown:?}").into());
        }
        for field in schema.top_level() {
            let value = match row.get(&field.name) {
                Some(cell) => cell.to_value(schema, field.id).map_err(|e| format!("row {r}: {e}"))?,
                None => Value::Null,
            };
            store(schema, field.id, value, &mut columns).map_err(|e| format!("row {r}: {e}"))?;
        }
    }
    let fields: Vec<FieldId> = schema.fields().iter().map(|f| f.id).collect();
    let cols = fields.iter().map(|f| columns.remove(f).unwrap_or_default()).collect();
    let mut fragment = Fragment::new(id, path, fields, cols);
    fragment.physical_rows = rows.len() as u64;
    Ok(AppendedFragment { fragment, carried: None })
}

/// Appends `value` of `field` (and, for a struct, its children) to the stored columns.
fn store(schema: &Schema, field: FieldId, value: Value, columns: &mut BTreeMap<FieldId, Vec<Value>>) -> Result<(), String> {
    let nullable = schema.field(field).is_none_or(|f| f.nullable);
    if value.is_null() && !nullable {
        return Err(format!("field {:?} is not nullable", dotted_name(schema, field)));
    }
    match value {
        Value::Struct(children) => {
            columns.entry(field).or_default().push(Value::Struct(Vec::new()));
            let ids: Vec<FieldId> = schema.children(field).map(|c| c.id).collect();
            for (id, child) in ids.into_iter().zip(children) {
                store(schema, id, child, columns)?;
            }
        }
        Value::Null if schema.field(field).is_some_and(|f| f.data_type == DataType::Struct) => {
            columns.entry(field).or_default().push(Value::Null);
            let ids: Vec<FieldId> = schema.children(field).map(|c| c.id).collect();
            for id in ids {
                store(schema, id, Value::Null, columns)?;
            }
        }
        other => columns.entry(field).or_default().push(other),
    }
    Ok(())
}

/// The overlays of an `overlay` step as a pending commit (grouped by fragment, in order).
pub(super) fn overlay_commit(schema: &Schema, step: &Step, prefix: &str) -> Outcome<PendingCommit> {
    let Step::Overlay { fragment, shape, cells, fields, overlays } = step else {
        return Err("not an overlay step".to_string().into());
    };
    let mut specs: Vec<OverlaySpec> = Vec::new();
    match (shape, cells) {
        (Some(shape), Some(cells)) => {
            specs.push(OverlaySpec { fragment: *fragment, shape: *shape, cells: cells.clone(), fields: fields.clone() })
        }
        (None, None) if fields.is_none() => {}
        _ => return Err("an inline overlay needs both `shape` and `cells`".to_string().into()),
    }
    if !specs.is_empty() && !overlays.is_empty() {
        return Err("give one inline overlay or an `overlays` list, not both".to_string().into());
    }
    specs.extend(overlays.iter().cloned());
    if specs.is_empty() {
        return Err("an overlay step adds at least one overlay".to_string().into());
    }
    let mut pending = PendingCommit::default();
    for (k, spec) in specs.iter().enumerate() {
        let target = spec.fragment.or(*fragment).ok_or_else(|| format!("overlay {k}: which fragment?"))?;
        let path = format!("f{target}-{prefix}-ovl{k}.lance");
        let overlay = overlay(schema, spec, &path).map_err(|e| format!("overlay {k}: {e}"))?;
        match pending.overlays.iter_mut().find(|(f, _)| *f == target) {
            Some((_, list)) => list.push(overlay),
            None => pending.overlays.push((target, vec![overlay])),
        }
    }
    Ok(pending)
}

/// One staged overlay (committed_version 0).
fn overlay(schema: &Schema, spec: &OverlaySpec, path: &str) -> Result<Overlay, String> {
    let mut ids: Vec<FieldId> = Vec::new();
    for name in spec.cells.keys() {
        let id = field_id(schema, name).ok_or_else(|| format!("no field {name:?}"))?;
        if schema.field(id).is_some_and(|f| f.data_type == DataType::Struct) {
            return Err(format!("{name:?} is a struct: overlay its children by dotted name"));
        }
        ids.push(id);
    }
    let order: Vec<FieldId> = match &spec.fields {
        Some(names) => {
            let mut listed = Vec::new();
            for n in names {
                listed.push(field_id(schema, n).ok_or_else(|| format!("no field {n:?}"))?);
            }
            let mut a = listed.clone();
            let mut b = ids.clone();
            a.sort_unstable();
            b.sort_unstable();
            if a != b {
                return Err("`fields` must list exactly the fields of `cells`".into());
            }
            listed
        }
        None => schema.fields().iter().map(|f| f.id).filter(|id| ids.contains(id)).collect(),
    };
    let mut columns = Vec::new();
    let mut bitmaps = Vec::new();
    for &id in &order {
        let name = dotted_name(schema, id);
        let cells = spec.cells.get(&name).ok_or_else(|| format!("no cells for {name:?}"))?;
        let mut by_offset: BTreeMap<u32, Value> = BTreeMap::new();
        for (key, cell) in cells {
            let offset: u32 = key.parse().map_err(|_| format!("{name}: offset key {key:?} is not a number"))?;
            let value = cell.to_value(schema, id).map_err(|e| e.to_string())?;
            if by_offset.insert(offset, value).is_some() {
                return Err(format!("{name}: offset {offset} given twice"));
            }
        }
        bitmaps.push(by_offset.keys().copied().collect::<RoaringBitmap>());
        columns.push(by_offset.into_values().collect::<Vec<_>>());
    }
    let coverage = match spec.shape {
        Shape::Sparse => Coverage::PerField(bitmaps),
        Shape::Dense => {
            let first = bitmaps.first().cloned().ok_or("a dense overlay needs a field")?;
            if bitmaps.iter().any(|b| *b != first) {
                return Err("a dense overlay's fields must cover the same offsets (use shape = \"sparse\")".into());
            }
            Coverage::Dense(first)
        }
    };
    Ok(Overlay { file: DataFile { path: path.to_string(), fields: order, columns }, coverage, committed_version: 0 })
}

/// Applies the spill rule to the lineage a row rewrite carried into fragment `id`: with
/// spilling on, each sequence whose inline encoding exceeds the budget moves to a hidden
/// `uint64` column of the fragment's data file. Returns a note for the step record.
///
/// `lance_reference::compaction::place_carried_lineage` keeps everything inline for now; this
/// is the same rule ([`plan_compaction`]) applied after it, and goes away once the reference
/// wires it there.
pub(super) fn spill_carried_lineage(
    snapshot: &mut lance_reference::model::Snapshot,
    id: u64,
) -> Outcome<String> {
    let config = SpillConfig::from_table_config(&snapshot.config).map_err(lance_reference::Error::from)?;
    let Some(fragment) = snapshot.fragments.iter_mut().find(|f| f.id == id) else {
        return Ok(String::new());
    };
    let inline = |seq: &LineageSequence| match seq {
        LineageSequence::Inline(v) => Some(v.clone()),
        _ => None,
    };
    let row_ids = inline(&fragment.lineage.row_ids);
    let created = inline(&fragment.lineage.created_at);
    let updated = inline(&fragment.lineage.last_updated_at);
    let lengths = EncodedLengths {
        row_ids: row_ids.as_ref().map_or(0, |v| RowIdSequence::from_values(v).encode().len()),
        created_at: created.as_ref().map_or(0, |v| RowDatasetVersionSequence::from_versions(v).encode().len()),
        last_updated_at: updated.as_ref().map_or(0, |v| RowDatasetVersionSequence::from_versions(v).encode().len()),
    };
    let CompactionPlacement::InFile { spilled } = plan_compaction(&config, &[lengths]) else {
        return Err("one output fragment always has an in-file plan".to_string().into());
    };
    let Some(file) = fragment.files.first_mut() else {
        return Ok(String::new());
    };
    let mut names = Vec::new();
    for kind in spilled {
        let (values, slot) = match kind {
            SequenceKind::RowIds => (row_ids.clone(), &mut fragment.lineage.row_ids),
            SequenceKind::CreatedAt => (created.clone(), &mut fragment.lineage.created_at),
            SequenceKind::LastUpdatedAt => (updated.clone(), &mut fragment.lineage.last_updated_at),
        };
        let Some(values) = values else { continue };
        file.fields.push(kind.field_id());
        file.columns.push(values.into_iter().map(Value::UInt64).collect());
        *slot = LineageSequence::Column;
        names.push(kind.column_name());
    }
    Ok(if names.is_empty() { String::new() } else { format!("; spilled {}", names.join(", ")) })
}
