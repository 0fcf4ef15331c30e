//! The steps that move rows or row ids between fragments, or rewrite rows' values: row rewrites
//! into one or several fragments, row-moving updates (by offsets or by predicate), merge
//! inserts, column rewrites in place, the backfill of added fields, restores, and reserving row
//! ids.
//!
//! Invariant: each step is one commit produced by the reference's own operations (row rewrite,
//! delete, append with carried lineage, [`stamp_rows`]), so the lineage a reader sees is what
//! the reference's writer carries over or assigns: a moved row keeps its row id and created-at
//! and is stamped with the commit's version ([LIN-STAMP-4]), an inserted row gets a fresh row id
//! from `next_row_id` ([LIN-STAMP-1]), a row rewritten in place keeps its row id and created-at
//! and only the rewritten rows are stamped ([LIN-STAMP-6]). `next_row_id` never goes down, a
//! restore included ([LIN-STAMP-8]). Only `reserve_row_ids` edits the manifest directly, and it
//! changes nothing but `next_row_id`.

use std::collections::BTreeMap;

use lance_reference::compaction::{self, RewriteOutput};
use lance_reference::delete;
use lance_reference::lineage::{AppendedFragment, CarriedLineage, PendingCommit, stamp_rows};
use lance_reference::model::{
    Column, DataFile, DataType, FieldId, LineageSequence, TOMBSTONE_FIELD_ID, Value,
};
use lance_reference::query::flat_filter;
use lance_reference::resolve::resolve_column;
use lance_reference::scan::{ScanRow, scan};
use roaring::RoaringBitmap;

use super::{Outcome, Run, build};
use crate::case::names::field_id;
use crate::case::step::Row;
use crate::case::{Cell, PredicateSpec};
use lance_reference::model::Snapshot;

impl Run {
    /// `rewrite_rows`: the live rows of `fragments` into one new fragment, or into fragments of
    /// at most `rows_per_fragment` rows (the last one takes the rest).
    pub(super) fn rewrite(
        &mut self,
        i: usize,
        fragments: &[u64],
        rows_per_fragment: Option<u64>,
    ) -> Outcome<String> {
        let current = self.current()?.clone();
        let live: u64 = current
            .fragments
            .iter()
            .filter(|f| fragments.contains(&f.id))
            .map(|f| f.physical_rows - f.deletions.len())
            .sum();
        let sizes: Vec<u64> = match rows_per_fragment {
            None => vec![live],
            Some(0) => return Err("rows_per_fragment must be at least 1".to_string().into()),
            Some(k) => (0..live.div_ceil(k)).map(|c| k.min(live - c * k)).collect(),
        };
        let outputs: Vec<RewriteOutput> = sizes
            .into_iter()
            .map(|rows| {
                let id = self.alloc_fragment();
                RewriteOutput {
                    fragment_id: id,
                    path: format!("f{id}-s{i}.lance"),
                    rows,
                }
            })
            .collect();
        let next =
            compaction::rewrite_rows_into(&current, fragments, &outputs, self.next_version())?;
        self.commit(next)?;
        let ids: Vec<u64> = outputs.iter().map(|o| o.fragment_id).collect();
        Ok(match ids.as_slice() {
            [one] => format!("rewrote fragments {fragments:?} into fragment {one}"),
            many => format!("rewrote fragments {fragments:?} into fragments {many:?}"),
        })
    }

    /// `update_rows`: a row-moving update of `offsets` of `fragment` (see [`crate::case::Step`]).
    pub(super) fn update_rows(
        &mut self,
        i: usize,
        fragment: u64,
        offsets: &[u32],
        set: &BTreeMap<String, Cell>,
    ) -> Outcome<String> {
        let current = self.current()?.clone();
        let mut seen = RoaringBitmap::new();
        for &o in offsets {
            if !seen.insert(o) {
                return Err(format!("offset {o} is listed twice").into());
            }
        }
        let rows = scan(&current, None)?;
        let mut picked = Vec::with_capacity(offsets.len());
        for &o in offsets {
            let row = rows
                .iter()
                .find(|r| r.fragment == fragment && r.offset == u64::from(o))
                .ok_or_else(|| format!("fragment {fragment} has no live row at offset {o}"))?;
            picked.push(row.clone());
        }
        self.move_rows(i, picked, set)
    }

    /// `update`: every live row matching `predicate`, moved as `update_rows` moves rows.
    pub(super) fn update_where(
        &mut self,
        i: usize,
        predicate: &PredicateSpec,
        set: &BTreeMap<String, Cell>,
    ) -> Outcome<String> {
        let current = self.current()?.clone();
        let schema = &current.schema;
        let predicate = predicate
            .to_predicate(schema, &|n| field_id(schema, n))
            .map_err(|e| e.to_string())?;
        let matched = flat_filter(&current, &predicate)?;
        if matched.is_empty() {
            return Err("the predicate matches no live row: an update of nothing"
                .to_string()
                .into());
        }
        let rows = scan(&current, None)?;
        let picked: Vec<ScanRow> = rows
            .into_iter()
            .filter(|r| {
                matched
                    .iter()
                    .any(|m| m.fragment == r.fragment && m.offset == r.offset)
            })
            .collect();
        self.move_rows(i, picked, set)
    }

    /// Moves `picked` (live rows, in the order they are written) with `set` applied to one new
    /// fragment carrying their row ids and created-at, deleting them where they were.
    fn move_rows(
        &mut self,
        i: usize,
        picked: Vec<ScanRow>,
        set: &BTreeMap<String, Cell>,
    ) -> Outcome<String> {
        let current = self.current()?.clone();
        let version = self.next_version();
        let schema = current.schema.clone();
        let top: Vec<(String, i32)> = schema.top_level().map(|f| (f.name.clone(), f.id)).collect();
        if let Some(unknown) = set.keys().find(|k| !top.iter().any(|(n, _)| n == *k)) {
            return Err(format!("no top-level field {unknown:?}").into());
        }
        let mut values = Vec::with_capacity(picked.len());
        for row in &picked {
            let mut v = row.values.clone();
            for (slot, (name, id)) in v.iter_mut().zip(&top) {
                if let Some(cell) = set.get(name) {
                    *slot = cell.to_value(&schema, *id).map_err(|e| e.to_string())?;
                }
            }
            values.push(v);
        }
        let id = self.alloc_fragment();
        let staged = build::moved(&schema, id, &format!("f{id}-s{i}.lance"), &values)?;
        let carried = current.stable_row_ids.then(|| CarriedLineage {
            row_ids: LineageSequence::Inline(picked.iter().map(|r| r.row_id).collect()),
            created_at: LineageSequence::Inline(picked.iter().map(|r| r.created_at).collect()),
        });
        let mut deleted = current.clone();
        for (fragment, offsets) in by_fragment(&picked) {
            deleted = delete::delete_rows(&deleted, fragment, &offsets, version)?;
        }
        let pending = PendingCommit {
            overlays: Vec::new(),
            appended: vec![AppendedFragment {
                fragment: staged,
                carried,
            }],
        };
        self.commit(pending.apply(&deleted, version)?)?;
        let from: Vec<u64> = by_fragment(&picked).keys().copied().collect();
        Ok(format!(
            "moved {} row(s) of fragment(s) {from:?} to fragment {id}",
            picked.len()
        ))
    }

    /// `merge_insert`: the rows of `source` whose key `on` matches a live row replace it (moved,
    /// with their row id and created-at), the others are inserted; one new fragment holds the
    /// replacing rows and then the inserted ones, each group in `source` order.
    pub(super) fn merge_insert(&mut self, i: usize, on: &str, source: &[Row]) -> Outcome<String> {
        let current = self.current()?.clone();
        let version = self.next_version();
        let schema = current.schema.clone();
        let key = field_id(&schema, on).ok_or_else(|| format!("no field {on:?}"))?;
        if schema
            .field(key)
            .is_none_or(|f| f.parent_id != -1 || f.data_type == DataType::Struct)
        {
            return Err(format!("the key {on:?} is not a top-level, non-struct field").into());
        }
        let source = super::rows_of(&schema, source, None)?;
        if source.is_empty() {
            return Err("a merge insert of no rows".to_string().into());
        }
        let live = scan(&current, Some(&[key]))?;
        let mut keys = Vec::with_capacity(source.len());
        for (r, row) in source.iter().enumerate() {
            let value = match row.get(on) {
                Some(cell) => cell.to_value(&schema, key).map_err(|e| e.to_string())?,
                None => Value::Null,
            };
            if value.is_null() {
                return Err(format!("source row {r}: the key {on:?} is NULL").into());
            }
            if keys.contains(&value) {
                return Err(
                    format!("source row {r}: the key {on:?} repeats an earlier row").into(),
                );
            }
            keys.push(value);
        }
        let mut matched: Vec<(usize, ScanRow)> = Vec::new();
        let mut inserted: Vec<usize> = Vec::new();
        for (r, k) in keys.iter().enumerate() {
            let hits: Vec<&ScanRow> = live.iter().filter(|l| l.values[0] == *k).collect();
            match hits.as_slice() {
                [] => inserted.push(r),
                [one] => matched.push((r, (*one).clone())),
                _ => {
                    return Err(format!(
                        "source row {r}: its key matches {} live rows",
                        hits.len()
                    )
                    .into());
                }
            }
        }
        let ordered: Vec<Row> = matched
            .iter()
            .map(|(r, _)| source[*r].clone())
            .chain(inserted.iter().map(|r| source[*r].clone()))
            .collect();
        let id = self.alloc_fragment();
        let appended = build::appended(&schema, id, &format!("f{id}-s{i}.lance"), &ordered)?;
        let mut deleted = current.clone();
        let moved: Vec<ScanRow> = matched.iter().map(|(_, row)| row.clone()).collect();
        for (fragment, offsets) in by_fragment(&moved) {
            deleted = delete::delete_rows(&deleted, fragment, &offsets, version)?;
        }
        let fresh = inserted.len() as u64;
        let carried = (current.stable_row_ids && !moved.is_empty()).then(|| {
            let first = current.next_row_id;
            CarriedLineage {
                row_ids: LineageSequence::Inline(
                    moved
                        .iter()
                        .map(|r| r.row_id)
                        .chain(first..first + fresh)
                        .collect(),
                ),
                created_at: LineageSequence::Inline(
                    moved
                        .iter()
                        .map(|r| r.created_at)
                        .chain(std::iter::repeat_n(version, inserted.len()))
                        .collect(),
                ),
            }
        });
        let carrying = carried.is_some();
        let pending = PendingCommit {
            overlays: Vec::new(),
            appended: vec![AppendedFragment {
                fragment: appended.fragment,
                carried,
            }],
        };
        let mut next = pending.apply(&deleted, version)?;
        if carrying {
            // The inserted rows' ids were given with the carried ones: use them up.
            next.next_row_id = current
                .next_row_id
                .checked_add(fresh)
                .ok_or_else(|| "next_row_id would overflow".to_string())?;
        }
        self.commit(next)?;
        Ok(format!(
            "merge insert into fragment {id}: {} row(s) replaced, {fresh} inserted",
            moved.len()
        ))
    }

    /// `rewrite_columns`: the `set` fields of `fragment` rewritten in place (see
    /// [`crate::case::Step::RewriteColumns`]); last-updated-at moves for `offsets` only, and an
    /// index on a rewritten field stops covering the fragment (its entries there are stale).
    pub(super) fn rewrite_columns(
        &mut self,
        i: usize,
        fragment: u64,
        offsets: &[u32],
        set: &BTreeMap<String, Cell>,
    ) -> Outcome<String> {
        let mut next = self.current()?.clone();
        let version = self.next_version();
        let schema = next.schema.clone();
        if set.is_empty() {
            return Err("a column rewrite that sets no field".to_string().into());
        }
        let mut targets: Vec<(FieldId, Value)> = Vec::new();
        for (name, cell) in set {
            let id = field_id(&schema, name).ok_or_else(|| format!("no field {name:?}"))?;
            if schema
                .field(id)
                .is_none_or(|f| f.parent_id != -1 || f.data_type == DataType::Struct)
            {
                return Err(format!("{name:?} is not a top-level, non-struct field").into());
            }
            targets.push((id, cell.to_value(&schema, id).map_err(|e| e.to_string())?));
        }
        targets.sort_by_key(|(id, _)| *id);
        let position = next
            .fragments
            .iter()
            .position(|f| f.id == fragment)
            .ok_or_else(|| format!("no fragment {fragment}"))?;
        let frag = &next.fragments[position];
        let mut changed = RoaringBitmap::new();
        for &o in offsets {
            if !changed.insert(o) {
                return Err(format!("offset {o} is listed twice").into());
            }
            if u64::from(o) >= frag.physical_rows || frag.deletions.contains(o) {
                return Err(format!("fragment {fragment} has no live row at offset {o}").into());
            }
        }
        if changed.is_empty() {
            return Err("a column rewrite of no rows".to_string().into());
        }
        if let Some(o) = frag.overlays.iter().find(|o| {
            o.file
                .fields
                .iter()
                .any(|f| targets.iter().any(|(t, _)| t == f))
        }) {
            return Err(format!(
                "overlay {} of fragment {fragment} holds a rewritten field: it would hide the new base values",
                o.file.path
            )
            .into());
        }
        let mut columns = Vec::with_capacity(targets.len());
        for (id, value) in &targets {
            let mut values: Vec<Value> = resolve_column(&schema, frag, *id)?
                .into_iter()
                .map(|v| v.unwrap_or(Value::Null))
                .collect();
            for o in &changed {
                values[o as usize] = value.clone();
            }
            let data_type = &schema
                .field(*id)
                .ok_or_else(|| format!("no field {id}"))?
                .data_type;
            columns.push(Column::of(data_type, &values).map_err(|m| {
                format!(
                    "value {} is {}, not {}",
                    m.index,
                    m.found,
                    data_type.logical_type()
                )
            })?);
        }
        let ids: Vec<FieldId> = targets.iter().map(|(id, _)| *id).collect();
        let frag = &mut next.fragments[position];
        for file in &mut frag.files {
            for f in &mut file.fields {
                if ids.contains(f) {
                    *f = TOMBSTONE_FIELD_ID;
                }
            }
        }
        frag.files.push(DataFile {
            path: format!("f{fragment}-s{i}-columns.lance"),
            fields: ids.clone(),
            columns,
        });
        if next.stable_row_ids {
            stamp_rows(frag, &changed, version)?;
        }
        for index in &mut next.indices {
            if index.fields.iter().any(|f| ids.contains(f)) {
                if let Some(b) = index.fragment_bitmap.as_mut() {
                    b.remove(u32::try_from(fragment).unwrap_or(u32::MAX));
                }
            }
        }
        self.commit(next)?;
        Ok(format!(
            "rewrote {} field(s) of fragment {fragment} in place, {} row(s) changed",
            ids.len(),
            changed.len()
        ))
    }

    /// `restore`: version `version` again, as the next version; `next_row_id` keeps the
    /// newest version's count when that is higher ([LIN-STAMP-8]).
    pub(super) fn restore(&mut self, version: u64) -> Outcome<String> {
        let newest = self.current()?.clone();
        if version == 0 || version >= newest.version {
            return Err(format!(
                "restore {version}: a version older than the newest ({}) is restored",
                newest.version
            )
            .into());
        }
        let mut next = self
            .versions
            .get(usize::try_from(version - 1).map_err(|e| e.to_string())?)
            .cloned()
            .ok_or_else(|| format!("no version {version}"))?;
        next.next_row_id = next.next_row_id.max(newest.next_row_id);
        self.commit(next)?;
        Ok(format!("restored version {version}"))
    }

    /// `reserve_row_ids`: advances `next_row_id` by `count`.
    pub(super) fn reserve_row_ids(&mut self, count: u64) -> Outcome<String> {
        let mut next = self.current()?.clone();
        if !next.stable_row_ids {
            return Err("reserving row ids needs stable row ids".to_string().into());
        }
        next.next_row_id = next
            .next_row_id
            .checked_add(count)
            .ok_or_else(|| "next_row_id would overflow".to_string())?;
        let to = next.next_row_id;
        self.commit(next)?;
        Ok(format!("next_row_id advanced by {count} to {to}"))
    }
}

/// The offsets of `rows` per fragment, fragments in id order.
fn by_fragment(rows: &[ScanRow]) -> BTreeMap<u64, RoaringBitmap> {
    let mut out: BTreeMap<u64, RoaringBitmap> = BTreeMap::new();
    for r in rows {
        if let Ok(o) = u32::try_from(r.offset) {
            out.entry(r.fragment).or_default().insert(o);
        }
    }
    out
}

/// The backfill of an `add_fields` step with `fill`: every fragment of `snapshot` (whose schema
/// already holds the new fields `added`) gets a data file `f<id>-<label>-added.lance` holding
/// the filled fields, each with its fill value at every physical row, and with stable row ids
/// every row's last-updated-at becomes `version` ([LIN-STAMP-7]). `fill` names top-level,
/// non-struct fields among `added`.
pub(super) fn backfill(
    snapshot: &mut Snapshot,
    added: &[String],
    fill: &BTreeMap<String, Cell>,
    label: &str,
    version: u64,
) -> Outcome<()> {
    let schema = snapshot.schema.clone();
    let mut filled: Vec<(FieldId, Value)> = Vec::new();
    for (name, cell) in fill {
        if !added.contains(name) {
            return Err(format!("`fill` names {name:?}, which this step does not add").into());
        }
        let field = schema
            .top_level()
            .find(|f| &f.name == name)
            .ok_or_else(|| format!("no top-level field {name:?}"))?;
        if field.data_type == DataType::Struct {
            return Err(
                format!("`fill` of the struct {name:?}: fill its children's types only").into(),
            );
        }
        let value = cell
            .to_value(&schema, field.id)
            .map_err(|e| e.to_string())?;
        if value.is_null() && !field.nullable {
            return Err(format!("field {name:?} is not nullable").into());
        }
        filled.push((field.id, value));
    }
    filled.sort_by_key(|(id, _)| *id);
    let stable = snapshot.stable_row_ids;
    for fragment in &mut snapshot.fragments {
        let rows = usize::try_from(fragment.physical_rows).map_err(|e| e.to_string())?;
        let mut columns = Vec::with_capacity(filled.len());
        for (id, value) in &filled {
            let data_type = &schema
                .field(*id)
                .ok_or_else(|| format!("no field {id}"))?
                .data_type;
            columns.push(
                Column::of(data_type, &vec![value.clone(); rows]).map_err(|m| {
                    format!(
                        "value {} is {}, not {}",
                        m.index,
                        m.found,
                        data_type.logical_type()
                    )
                })?,
            );
        }
        fragment.files.push(DataFile {
            path: format!("f{}-{label}-added.lance", fragment.id),
            fields: filled.iter().map(|(id, _)| *id).collect(),
            columns,
        });
        if stable {
            let all: RoaringBitmap = (0..u32::try_from(rows).map_err(|e| e.to_string())?).collect();
            stamp_rows(fragment, &all, version)?;
        }
    }
    Ok(())
}
