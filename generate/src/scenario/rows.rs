//! The steps that move rows or row ids between fragments: row rewrites into one or several
//! fragments, row-moving updates, and reserving row ids.
//!
//! Invariant: each step is one commit produced by the reference's own operations (row rewrite,
//! delete, append with carried lineage), so the lineage a reader sees is what the reference's
//! writer carries over or assigns; only `reserve_row_ids` edits the manifest directly, and it
//! changes nothing but `next_row_id`.

use std::collections::BTreeMap;

use lance_reference::compaction::{self, RewriteOutput};
use lance_reference::delete;
use lance_reference::lineage::{AppendedFragment, CarriedLineage, PendingCommit};
use lance_reference::model::LineageSequence;
use lance_reference::scan::scan;
use roaring::RoaringBitmap;

use super::{Outcome, Run, build};
use crate::case::Cell;

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
        let version = self.next_version();
        let schema = current.schema.clone();
        let mut moved = RoaringBitmap::new();
        for &o in offsets {
            if !moved.insert(o) {
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
        let deleted = delete::delete_rows(&current, fragment, &moved, version)?;
        let pending = PendingCommit {
            overlays: Vec::new(),
            appended: vec![AppendedFragment {
                fragment: staged,
                carried,
            }],
        };
        self.commit(pending.apply(&deleted, version)?)?;
        Ok(format!(
            "moved {} row(s) of fragment {fragment} to fragment {id}",
            offsets.len()
        ))
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
