//! Turning a step's case-level data (names, cells, offsets) into the model values a commit
//! writes: schema fields, appended fragments, overlays.
//!
//! Invariant: everything built here is what a writer stages *before* its commit: fragments
//! without lineage and overlays with `committed_version` 0. Assigning ids, versions and
//! last-updated-at is the commit's job ([`lance_reference::lineage::stamping`]), so a
//! `commit_retry` can re-stamp the very same staged data.

use std::collections::BTreeMap;

use lance_reference::lineage::{AppendedFragment, PendingCommit};
use lance_reference::model::{
    Column, Coverage, DataFile, DataType, Field, FieldId, Fragment, Overlay, Schema, Snapshot,
    Value,
};
use lance_reference::overlay_write::{
    CellUpdates, Shape as WriteShape, build_overlay, tombstone_fields,
};
use roaring::RoaringBitmap;

use super::{Failure, Outcome};
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
            return Err(format!(
                "field name {:?} must be non-empty and without dots",
                spec.name
            )
            .into());
        }
        let sibling_taken = existing
            .iter()
            .chain(out.iter())
            .any(|f| f.parent_id == parent && f.name == spec.name);
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
        out.push(Field {
            id,
            parent_id: parent,
            name: spec.name.clone(),
            data_type,
            nullable: spec.nullable,
        });
        let mut seen: Vec<Field> = existing.to_vec();
        seen.extend(out.iter().cloned());
        let children = schema_fields(&spec.children, id, next_id, &seen)?;
        out.extend(children);
    }
    Ok(out)
}

/// A staged fragment `id` with one base file `path` holding `rows` in every schema field
/// (pre-order; a struct stores its validity, each child its own column).
pub(super) fn appended(
    schema: &Schema,
    id: u64,
    path: &str,
    rows: &[Row],
) -> Outcome<AppendedFragment> {
    let mut columns: BTreeMap<FieldId, Vec<Value>> = BTreeMap::new();
    for (r, row) in rows.iter().enumerate() {
        if let Some(unknown) = row
            .keys()
            .find(|k| !schema.top_level().any(|f| &f.name == *k))
        {
            return Err(format!("row {r}: no top-level field {unknown:?}").into());
        }
        for field in schema.top_level() {
            let value = match row.get(&field.name) {
                Some(cell) => cell
                    .to_value(schema, field.id)
                    .map_err(|e| format!("row {r}: {e}"))?,
                None => Value::Null,
            };
            store(schema, field.id, value, &mut columns).map_err(|e| format!("row {r}: {e}"))?;
        }
    }
    let fields: Vec<FieldId> = schema.fields().iter().map(|f| f.id).collect();
    let cols = stored_columns(schema, &fields, columns)?;
    let mut fragment = Fragment::new(id, path, fields, cols);
    fragment.physical_rows = rows.len() as u64;
    Ok(AppendedFragment {
        fragment,
        carried: None,
    })
}

/// Why the values [`store`] collected make no base column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ColumnError {
    /// A field id the schema does not have.
    #[error("no field {0}")]
    NoField(FieldId),
    /// A value of another type than its field's.
    #[error("field {field:?}: value {index} is {found}, not {expected}")]
    Misfit {
        /// The field, named dotted.
        field: String,
        /// The value's index in the column.
        index: usize,
        /// Its kind ([`Value::kind`]).
        found: &'static str,
        /// The field's logical type.
        expected: String,
    },
}

impl From<ColumnError> for Failure {
    fn from(e: ColumnError) -> Failure {
        Failure::Problem(e.to_string())
    }
}

/// The base columns of `fields`, in order, from the values [`store`] collected (a field with
/// none is an empty column).
fn stored_columns(
    schema: &Schema,
    fields: &[FieldId],
    mut columns: BTreeMap<FieldId, Vec<Value>>,
) -> Result<Vec<Column>, ColumnError> {
    fields
        .iter()
        .map(|f| {
            let values = columns.remove(f).unwrap_or_default();
            let data_type = schema
                .field(*f)
                .map(|x| x.data_type.clone())
                .ok_or(ColumnError::NoField(*f))?;
            Column::of(&data_type, &values).map_err(|m| ColumnError::Misfit {
                field: dotted_name(schema, *f),
                index: m.index,
                found: m.found,
                expected: data_type.logical_type(),
            })
        })
        .collect()
}

/// A NULL given for a field that is not nullable (named dotted).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field {0:?} is not nullable")]
pub(super) struct NotNullable(String);

/// Appends `value` of `field` (and, for a struct, its children) to the stored columns.
fn store(
    schema: &Schema,
    field: FieldId,
    value: Value,
    columns: &mut BTreeMap<FieldId, Vec<Value>>,
) -> Result<(), NotNullable> {
    let nullable = schema.field(field).is_none_or(|f| f.nullable);
    if value.is_null() && !nullable {
        return Err(NotNullable(dotted_name(schema, field)));
    }
    match value {
        Value::Struct(children) => {
            columns
                .entry(field)
                .or_default()
                .push(Value::Struct(Vec::new()));
            let ids: Vec<FieldId> = schema.children(field).map(|c| c.id).collect();
            for (id, child) in ids.into_iter().zip(children) {
                store(schema, id, child, columns)?;
            }
        }
        Value::Null
            if schema
                .field(field)
                .is_some_and(|f| f.data_type == DataType::Struct) =>
        {
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
pub(super) fn overlay_commit(
    snapshot: &Snapshot,
    step: &Step,
    prefix: &str,
) -> Outcome<PendingCommit> {
    let Step::Overlay {
        fragment,
        shape,
        cells,
        fields,
        tombstone,
        relabel,
        struct_coverage,
        list_ancestors,
        overlays,
    } = step
    else {
        return Err("not an overlay step".to_string().into());
    };
    let mut specs: Vec<OverlaySpec> = Vec::new();
    match (shape, cells) {
        (Some(shape), Some(cells)) => specs.push(OverlaySpec {
            fragment: *fragment,
            shape: *shape,
            cells: cells.clone(),
            fields: fields.clone(),
            tombstone: tombstone.clone(),
            relabel: relabel.clone(),
            struct_coverage: struct_coverage.clone(),
            list_ancestors: *list_ancestors,
        }),
        (None, None)
            if fields.is_none()
                && tombstone.is_empty()
                && relabel.is_empty()
                && struct_coverage.is_empty()
                && *list_ancestors => {}
        _ => {
            return Err("an inline overlay needs both `shape` and `cells`"
                .to_string()
                .into());
        }
    }
    if !specs.is_empty() && !overlays.is_empty() {
        return Err("give one inline overlay or an `overlays` list, not both"
            .to_string()
            .into());
    }
    specs.extend(overlays.iter().cloned());
    if specs.is_empty() {
        return Err("an overlay step adds at least one overlay"
            .to_string()
            .into());
    }
    let mut pending = PendingCommit::default();
    for (k, spec) in specs.iter().enumerate() {
        let target = spec
            .fragment
            .or(*fragment)
            .ok_or_else(|| format!("overlay {k}: which fragment?"))?;
        let frag = snapshot.fragment(target)?;
        let path = format!("f{target}-{prefix}-ovl{k}.lance");
        let overlay = overlay(&snapshot.schema, frag, spec, &path).map_err(|f| match f {
            Failure::Problem(p) => Failure::Problem(format!("overlay {k}: {p}")),
            other => other,
        })?;
        match pending.overlays.iter_mut().find(|(f, _)| *f == target) {
            Some((_, list)) => list.push(overlay),
            None => pending.overlays.push((target, vec![overlay])),
        }
    }
    Ok(pending)
}

/// One staged overlay (committed_version 0), written by the reference's overlay writer, then
/// given the requested column order, empty fields and tombstones.
fn overlay(
    schema: &Schema,
    fragment: &Fragment,
    spec: &OverlaySpec,
    path: &str,
) -> Outcome<Overlay> {
    let id_of = |name: &str| field_id(schema, name).ok_or_else(|| format!("no field {name:?}"));
    let mut updates: CellUpdates = BTreeMap::new();
    for (name, cells) in &spec.cells {
        let id = id_of(name)?;
        let mut by_offset = BTreeMap::new();
        for (key, cell) in cells {
            let value = cell.to_value(schema, id).map_err(|e| e.to_string())?;
            for offset in offset_key(key).map_err(|p| format!("{name}: {p}"))? {
                if by_offset.insert(offset, value.clone()).is_some() {
                    return Err(format!("{name}: offset {offset} given twice").into());
                }
            }
        }
        updates.insert(id, by_offset);
    }
    let shape = match spec.shape {
        Shape::Dense => WriteShape::Dense,
        Shape::Sparse => WriteShape::Sparse,
        Shape::Auto => WriteShape::Auto,
    };
    let mut overlay =
        build_overlay(schema, fragment, &updates, shape, path)?.unwrap_or_else(|| Overlay {
            file: DataFile {
                path: path.to_string(),
                fields: Vec::new(),
                columns: Vec::new(),
            },
            coverage: match spec.shape {
                Shape::Dense => Coverage::Dense(RoaringBitmap::new()),
                _ => Coverage::Sparse(Vec::new()),
            },
            committed_version: 0,
        });
    if let Some(order) = &spec.fields {
        let mut ids = Vec::new();
        for name in order {
            ids.push(id_of(name)?);
        }
        reorder(&mut overlay, &ids, schema)?;
    }
    let added = if spec.list_ancestors {
        add_ancestors(&mut overlay, schema)
    } else {
        Vec::new()
    };
    let dead: Vec<FieldId> = spec
        .tombstone
        .iter()
        .map(|n| id_of(n))
        .collect::<Result<_, _>>()?;
    if !dead.is_empty() {
        tombstone_fields(&mut overlay, &dead);
    }
    relabel(&mut overlay, schema, &spec.relabel)?;
    settle_ancestors(&mut overlay, schema, &added);
    for (name, offsets) in &spec.struct_coverage {
        let id = id_of(name)?;
        if schema
            .field(id)
            .is_none_or(|f| f.data_type != DataType::Struct)
        {
            return Err(format!("struct_coverage: {name:?} is not a struct").into());
        }
        let pos = overlay
            .file
            .fields
            .iter()
            .position(|f| *f == id)
            .ok_or_else(|| format!("struct_coverage: list {name:?} in `fields`"))?;
        match &mut overlay.coverage {
            Coverage::Sparse(bitmaps) => {
                if let Some(b) = bitmaps.get_mut(pos) {
                    *b = offsets.iter().copied().collect();
                }
            }
            Coverage::Dense(_) => {
                return Err(
                    "struct_coverage needs a sparse overlay (a dense one shares its bitmap)"
                        .to_string()
                        .into(),
                );
            }
        }
    }
    Ok(overlay)
}

/// An overlay `cells` key that names no offsets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("offset key {0:?} is not an offset, `a..b` or `a..b/k`")]
struct BadOffsetKey(String);

/// The offsets an overlay `cells` key names: one offset (`"7"`), every offset of a range
/// (`"0..10"`, end exclusive), or every `k`-th offset of a range from its start (`"1..10/2"`).
fn offset_key(key: &str) -> Result<Vec<u32>, BadOffsetKey> {
    let bad = || BadOffsetKey(key.to_string());
    let number = |t: &str| t.trim().parse::<u32>().map_err(|_| bad());
    let Some((start, rest)) = key.split_once("..") else {
        return Ok(vec![number(key)?]);
    };
    let (end, step) = match rest.split_once('/') {
        Some((end, step)) => (end, number(step)?),
        None => (rest, 1),
    };
    let (start, end) = (number(start)?, number(end)?);
    if step == 0 || start >= end {
        return Err(bad());
    }
    Ok((start..end).step_by(step as usize).collect())
}

/// Lists every struct ancestor of a field the overlay carries, outermost first, right before
/// the first position of its descendants, as Lance's writer lays out an overlay on struct
/// children (a struct position is a container: readers take no values from it). The struct's
/// column stays empty (the file writer stores one present struct per covered offset); in a
/// sparse overlay its bitmap is the union of its listed descendants' bitmaps.
fn add_ancestors(overlay: &mut Overlay, schema: &Schema) -> Vec<FieldId> {
    let mut added = Vec::new();
    let mut pos = 0;
    while pos < overlay.file.fields.len() {
        let id = overlay.file.fields[pos];
        let chain = schema.ancestry(id);
        let missing: Vec<FieldId> = chain
            .iter()
            .take(chain.len().saturating_sub(1))
            .copied()
            .filter(|a| !overlay.file.fields.contains(a))
            .collect();
        for (k, ancestor) in missing.iter().enumerate() {
            let union = match &overlay.coverage {
                Coverage::Sparse(bitmaps) => Some(
                    overlay
                        .file
                        .fields
                        .iter()
                        .zip(bitmaps)
                        .filter(|(f, _)| schema.ancestry(**f).contains(ancestor))
                        .fold(RoaringBitmap::new(), |acc, (_, b)| acc | b),
                ),
                Coverage::Dense(_) => None,
            };
            overlay.file.fields.insert(pos + k, *ancestor);
            overlay.file.columns.insert(pos + k, Column::empty());
            if let (Coverage::Sparse(bitmaps), Some(b)) = (&mut overlay.coverage, union) {
                bitmaps.insert(pos + k, b);
            }
        }
        pos += missing.len() + 1;
        added.extend(missing);
    }
    added
}

/// Settles the struct positions [`add_ancestors`] listed once tombstones and relabels are
/// applied: a struct that no longer contains a live field of the overlay is tombstoned, and in
/// a sparse overlay a struct's bitmap is the union of its live descendants' bitmaps. A
/// container's coverage would otherwise still count for lineage stamping ([OVL-LIN-1]), where
/// a struct id is a live field like any other.
fn settle_ancestors(overlay: &mut Overlay, schema: &Schema, added: &[FieldId]) {
    let fields = overlay.file.fields.clone();
    for (pos, id) in fields.iter().enumerate() {
        if !added.contains(id) {
            continue;
        }
        let live: Vec<usize> = fields
            .iter()
            .enumerate()
            .filter(|(_, f)| **f >= 0 && *f != id && schema.ancestry(**f).contains(id))
            .map(|(p, _)| p)
            .collect();
        if live.is_empty() {
            if let Some(slot) = overlay.file.fields.get_mut(pos) {
                *slot = -2;
            }
            continue;
        }
        if let Coverage::Sparse(bitmaps) = &mut overlay.coverage {
            let union = live
                .iter()
                .filter_map(|p| bitmaps.get(*p))
                .fold(RoaringBitmap::new(), |acc, b| acc | b);
            if let Some(slot) = bitmaps.get_mut(pos) {
                *slot = union;
            }
        }
    }
}

/// Why an overlay step's `fields` order or `relabel` does not fit the overlay written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum OverlayShapeError {
    /// `relabel` to an id that is not a reserved negative one.
    #[error("relabel {name:?}: {id} is not a negative id")]
    NotNegative {
        /// The field's name.
        name: String,
        /// The id given.
        id: i32,
    },
    /// `relabel` of a name the schema does not have.
    #[error("no field {0:?}")]
    NoField(String),
    /// `relabel` of a field the overlay does not list.
    #[error("relabel {0:?}: the overlay does not carry it")]
    NotCarried(String),
    /// `fields` leaves out a field the overlay has cells for.
    #[error("`fields` leaves out field {0}, which has cells")]
    LeavesOut(FieldId),
    /// `fields` lists a field twice.
    #[error("`fields` lists field {0} twice")]
    Twice(FieldId),
    /// `fields` adds a non-struct field without cells to a dense overlay.
    #[error("a dense overlay cannot have a (non-struct) field without cells")]
    DenseWithoutCells,
}

impl From<OverlayShapeError> for Failure {
    fn from(e: OverlayShapeError) -> Failure {
        Failure::Problem(e.to_string())
    }
}

/// Writes the positions of the fields named in `relabel` with the given reserved negative ids
/// (what a non-conforming writer might store; a reader ignores such positions).
fn relabel(
    overlay: &mut Overlay,
    schema: &Schema,
    relabel: &BTreeMap<String, i32>,
) -> Result<(), OverlayShapeError> {
    for (name, &new_id) in relabel {
        if new_id >= 0 {
            return Err(OverlayShapeError::NotNegative {
                name: name.clone(),
                id: new_id,
            });
        }
        let id = field_id(schema, name).ok_or_else(|| OverlayShapeError::NoField(name.clone()))?;
        let pos = overlay
            .file
            .fields
            .iter()
            .position(|f| *f == id)
            .ok_or_else(|| OverlayShapeError::NotCarried(name.clone()))?;
        if let Some(slot) = overlay.file.fields.get_mut(pos) {
            *slot = new_id;
        }
    }
    Ok(())
}

/// Puts the overlay's positions in the order `ids`; an id without a position is added with an
/// empty column and (sparse) an empty bitmap. A dense overlay can only gain struct ids this way
/// (containers: the shared bitmap is their coverage, which readers ignore).
fn reorder(
    overlay: &mut Overlay,
    ids: &[FieldId],
    schema: &Schema,
) -> Result<(), OverlayShapeError> {
    let carried = overlay.file.fields.clone();
    if let Some(missing) = carried.iter().find(|f| !ids.contains(f)) {
        return Err(OverlayShapeError::LeavesOut(*missing));
    }
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    let mut bitmaps = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        if ids[..i].contains(id) {
            return Err(OverlayShapeError::Twice(*id));
        }
        let pos = carried.iter().position(|f| f == id);
        fields.push(*id);
        columns.push(
            pos.and_then(|p| overlay.file.columns.get(p).cloned())
                .unwrap_or_else(Column::empty),
        );
        bitmaps.push(
            pos.and_then(|p| overlay.coverage.at(p).cloned())
                .unwrap_or_default(),
        );
    }
    overlay.coverage = match &overlay.coverage {
        Coverage::Sparse(_) => Coverage::Sparse(bitmaps),
        Coverage::Dense(b)
            if b.is_empty()
                || fields.iter().all(|f| {
                    carried.contains(f)
                        || schema
                            .field(*f)
                            .is_some_and(|x| x.data_type == DataType::Struct)
                }) =>
        {
            Coverage::Dense(b.clone())
        }
        Coverage::Dense(_) => {
            return Err(OverlayShapeError::DenseWithoutCells);
        }
    };
    overlay.file.fields = fields;
    overlay.file.columns = columns;
    Ok(())
}

/// A staged fragment `id` with one base file `path` holding `rows`, each given as resolved
/// top-level values in schema order (a row-moving update writes the rows it moves this way).
pub(super) fn moved(
    schema: &Schema,
    id: u64,
    path: &str,
    rows: &[Vec<Value>],
) -> Outcome<Fragment> {
    let mut columns: BTreeMap<FieldId, Vec<Value>> = BTreeMap::new();
    let top: Vec<FieldId> = schema.top_level().map(|f| f.id).collect();
    for (r, row) in rows.iter().enumerate() {
        if row.len() != top.len() {
            return Err(format!("row {r}: {} values for {} fields", row.len(), top.len()).into());
        }
        for (&field, value) in top.iter().zip(row) {
            store(schema, field, value.clone(), &mut columns)
                .map_err(|e| format!("row {r}: {e}"))?;
        }
    }
    let fields: Vec<FieldId> = schema.fields().iter().map(|f| f.id).collect();
    let cols = stored_columns(schema, &fields, columns)?;
    let mut fragment = Fragment::new(id, path, fields, cols);
    fragment.physical_rows = rows.len() as u64;
    Ok(fragment)
}
