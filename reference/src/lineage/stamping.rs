//! Commit stamping: the lineage values a commit assigns, and re-assigning them when the same
//! write is retried at a later version.
//!
//! Invariant: a commit touches only the values it assigns: the `committed_version` of the
//! overlays it adds, the last-updated-at of every row those overlays cover, and for each
//! fragment it appends of freshly inserted rows the row ids (from `next_row_id`), created-at
//! and last-updated-at. Everything else (values carried over from existing rows, the lineage of
//! untouched fragments) is copied unchanged. Commit-assigned values are always written inline
//! (see [`super::placement`](mod@super::placement)), so a retry can rewrite them.
//!
//! API: a [`PendingCommit`] describes a write *independent of the version it lands at*:
//! overlays per fragment id (without their version) and appended fragments (without their
//! row ids or versions unless carried over). [`PendingCommit::apply`] lands it on a snapshot at
//! a version, producing the next snapshot; [`restamp`] is the retry: the same pending commit
//! applied to the newest snapshot at the next version, so every assigned value is assigned
//! afresh (new version, new row ids from the newer `next_row_id`) and every carried value is
//! whatever the newest snapshot holds. The two building blocks are public too:
//! [`stamp_overlays`] (one fragment) and [`append_fragment`].
//!
//! Stamping rules (with lineage on, i.e. stable row ids):
//!
//! - last-updated-at := version for every offset in the union of the new overlays' coverage
//!   bitmaps over their live leaf fields: non-negative ids of the schema that are not structs.
//!   A struct position's coverage changes no cell, so it stamps no row ([OVL-LIN-7]).
//!   Deleted offsets are stamped too: coverage does not look at deletions. An offset at or
//!   past `physical_rows`, in any non-negative position, is an error.
//! - Rows without a recorded last-updated-at read as version 1, so an absent sequence is first
//!   filled with 1. A spilled (`Column`) sequence is read from its hidden column and the result
//!   is `Inline`; the lineage file is left as it is (its column is no longer read).
//! - created-at is never changed by an overlay.
//! - A commit that rewrites some rows' values in place (a column rewrite, a backfill of added
//!   fields) stamps last-updated-at of exactly those rows the same way ([`stamp_rows`],
//!   [LIN-STAMP-6], [LIN-STAMP-7]); row ids and created-at stay.

use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::model::{
    DataType, Fragment, LAST_UPDATED_AT_FIELD_ID, LineageSequence, Overlay, Schema, Snapshot,
};

use super::LineageError;
use super::row_ids::RowIdSequence;

/// Lineage carried over into an appended fragment from existing rows (a row-moving update):
/// fixed before the commit, so a retry leaves it alone.
#[derive(Debug, Clone, PartialEq)]
pub struct CarriedLineage {
    /// The moved rows' row ids (inline or spilled by the writer).
    pub row_ids: LineageSequence,
    /// The moved rows' created-at versions (inline or spilled by the writer).
    pub created_at: LineageSequence,
}

/// A fragment a commit appends.
#[derive(Debug, Clone, PartialEq)]
pub struct AppendedFragment {
    /// The fragment as written (id, files, `physical_rows`); its lineage is set by the commit.
    pub fragment: Fragment,
    /// `None` for freshly inserted rows: the commit assigns row ids and created-at.
    pub carried: Option<CarriedLineage>,
}

/// A write, described independently of the version it lands at.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PendingCommit {
    /// New overlays per existing fragment id, in the order they are appended.
    pub overlays: Vec<(u64, Vec<Overlay>)>,
    /// Fragments appended, in order.
    pub appended: Vec<AppendedFragment>,
}

impl PendingCommit {
    /// Lands the commit on `base` as dataset version `version`: the resulting snapshot.
    pub fn apply(&self, base: &Snapshot, version: u64) -> Result<Snapshot> {
        let mut next = base.clone();
        next.version = version;
        for (fragment_id, overlays) in &self.overlays {
            let stable = next.stable_row_ids;
            let fragment = next
                .fragments
                .iter_mut()
                .find(|f| f.id == *fragment_id)
                .ok_or(LineageError::UnknownFragment {
                    fragment: *fragment_id,
                    context: "pending overlay",
                })?;
            stamp_overlays(fragment, overlays.clone(), version, stable, &base.schema)?;
        }
        for appended in &self.appended {
            append_fragment(&mut next, appended.clone(), version);
        }
        crate::flags::set_commit_flags(&mut next);
        Ok(next)
    }
}

/// A commit retry: `pending` lands on the newest snapshot at the next version, re-assigning
/// every value the commit assigns (see the module docs).
pub fn restamp(pending: &PendingCommit, newest: &Snapshot) -> Result<Snapshot> {
    pending.apply(newest, newest.version.saturating_add(1))
}

/// Appends `new_overlays` to `fragment` with `committed_version = version`, and with lineage on
/// stamps last-updated-at of the rows their leaf fields of `schema` cover (see the module docs).
pub fn stamp_overlays(
    fragment: &mut Fragment,
    new_overlays: Vec<Overlay>,
    version: u64,
    stable_row_ids: bool,
    schema: &Schema,
) -> Result<()> {
    let leaf = |field| {
        schema
            .field(field)
            .is_some_and(|f| f.data_type != DataType::Struct)
    };
    let mut covered = RoaringBitmap::new();
    for (k, overlay) in new_overlays.iter().enumerate() {
        for (pos, &field) in overlay.file.fields.iter().enumerate() {
            if field < 0 {
                continue;
            }
            if let Some(bitmap) = overlay.coverage.at(pos) {
                if let Some(max) = bitmap.max() {
                    if u64::from(max) >= fragment.physical_rows {
                        return Err(LineageError::OffsetOutOfRange {
                            what: format!(
                                "fragment {}: coverage of new overlay {k} ({})",
                                fragment.id, overlay.file.path
                            ),
                            offset: u64::from(max),
                            physical_rows: fragment.physical_rows,
                        }
                        .into());
                    }
                }
                if leaf(field) {
                    covered |= bitmap;
                }
            }
        }
    }
    if stable_row_ids {
        stamp_rows(fragment, &covered, version)?;
    }
    fragment
        .overlays
        .extend(new_overlays.into_iter().map(|mut o| {
            o.committed_version = version;
            o
        }));
    Ok(())
}

/// Sets the last-updated-at of the rows at `offsets` of `fragment` to `version`, keeping every
/// other row's ([LIN-STAMP-6], and the overlay stamping of [`stamp_overlays`]): an absent
/// sequence is first filled with 1, a spilled one read from its column, and the result is
/// inline. Nothing changes when `offsets` is empty. An offset at or past `physical_rows` is an
/// error.
pub fn stamp_rows(fragment: &mut Fragment, offsets: &RoaringBitmap, version: u64) -> Result<()> {
    if offsets.is_empty() {
        return Ok(());
    }
    let rows = fragment.physical_rows;
    if let Some(max) = offsets.max().filter(|m| u64::from(*m) >= rows) {
        return Err(LineageError::OffsetOutOfRange {
            what: format!("fragment {}: rows to stamp", fragment.id),
            offset: u64::from(max),
            physical_rows: rows,
        }
        .into());
    }
    let mut values = match fragment.lineage_values(LAST_UPDATED_AT_FIELD_ID)? {
        None => vec![1; rows as usize],
        Some(v) => v,
    };
    if values.len() as u64 != rows {
        return Err(Error::Lineage(LineageError::LengthMismatch {
            sequence: "last-updated-at",
            len: values.len() as u64,
            expected: rows,
        }));
    }
    for offset in offsets {
        if let Some(v) = values.get_mut(offset as usize) {
            *v = version;
        }
    }
    fragment.lineage.last_updated_at = LineageSequence::Inline(values);
    Ok(())
}

/// Adds `appended` to `snapshot` as written at `version`. With lineage on, inserted rows get
/// row ids `next_row_id..+n` (and `next_row_id` advances) and created-at = version; carried
/// lineage is kept as given; last-updated-at is `version` for every row either way.
pub fn append_fragment(snapshot: &mut Snapshot, appended: AppendedFragment, version: u64) {
    let mut fragment = appended.fragment;
    if snapshot.stable_row_ids {
        let rows = fragment.physical_rows;
        let all = |v: u64| LineageSequence::Inline(vec![v; rows as usize]);
        match appended.carried {
            Some(carried) => {
                fragment.lineage.row_ids = carried.row_ids;
                fragment.lineage.created_at = carried.created_at;
            }
            None => {
                let ids = RowIdSequence::new_fragment(snapshot.next_row_id, rows);
                fragment.lineage.row_ids = LineageSequence::Inline(ids.iter().collect());
                fragment.lineage.created_at = all(version);
                snapshot.next_row_id = snapshot.next_row_id.saturating_add(rows);
            }
        }
        fragment.lineage.last_updated_at = all(version);
    }
    snapshot.fragments.push(fragment);
}

#[cfg(test)]
mod tests {
    use crate::model::{Column, cols};
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::{Coverage, DataFile, DataType, Field, Lineage, Schema, Value};

    fn bitmap(offsets: &[u32]) -> RoaringBitmap {
        offsets.iter().copied().collect()
    }

    fn overlay(fields: Vec<i32>, coverage: Coverage) -> Overlay {
        let columns = fields.iter().map(|_| Column::empty()).collect();
        Overlay {
            file: DataFile {
                path: "ovl.lance".into(),
                fields,
                columns,
            },
            coverage,
            committed_version: 0,
        }
    }

    /// Leaf fields 1 and 2, and a struct 3 with a leaf child 4.
    fn schema() -> Schema {
        Schema::new(vec![
            Field::new(1, "a", DataType::Int64),
            Field::new(2, "b", DataType::Int64),
            Field::new(3, "s", DataType::Struct),
            Field::child(4, 3, "x", DataType::Int64),
        ])
        .unwrap()
    }

    #[test]
    fn a_struct_position_stamps_no_row() {
        // covers: OVL-LIN-7
        let mut f = fragment(0, 4);
        f.lineage.last_updated_at = LineageSequence::Inline(vec![1; 4]);
        let sparse = overlay(
            vec![3, 4],
            Coverage::Sparse(vec![bitmap(&[0, 1, 2, 3]), bitmap(&[2])]),
        );
        stamp_overlays(&mut f, vec![sparse], 6, true, &schema()).unwrap();
        assert_eq!(
            f.lineage.last_updated_at,
            LineageSequence::Inline(vec![1, 1, 6, 1])
        );
    }

    fn fragment(id: u64, rows: u64) -> Fragment {
        let col = (0..rows).map(|i| Value::Int64(i as i64)).collect();
        Fragment::new(id, "base.lance", vec![1], vec![col])
    }

    fn snapshot() -> Snapshot {
        let mut f = fragment(0, 4);
        f.lineage = Lineage {
            row_ids: LineageSequence::Inline(vec![0, 1, 2, 3]),
            created_at: LineageSequence::Inline(vec![1; 4]),
            last_updated_at: LineageSequence::Inline(vec![1; 4]),
        };
        Snapshot {
            version: 1,
            schema: Schema::new(vec![
                Field::new(1, "a", DataType::Int64),
                Field::new(2, "b", DataType::Int64),
            ])
            .unwrap(),
            fragments: vec![f],
            indices: Vec::new(),
            config: BTreeMap::new(),
            stable_row_ids: true,
            next_row_id: 4,
            reader_flags: 2,
            writer_flags: 2,
        }
    }

    #[test]
    fn overlay_stamps_union_of_live_coverage_including_deleted_rows() {
        // covers: OVL-LIN-1, OVL-LIN-2, OVL-LIN-3, OVL-LIN-4
        let mut f = fragment(0, 6);
        f.deletions = bitmap(&[4]);
        f.lineage.last_updated_at = LineageSequence::Inline(vec![1, 2, 2, 2, 2, 2]);
        let sparse = overlay(
            vec![1, -2, 2],
            Coverage::Sparse(vec![bitmap(&[1]), bitmap(&[5]), bitmap(&[4])]),
        );
        stamp_overlays(&mut f, vec![sparse], 7, true, &schema()).unwrap();
        // offset 5 is covered only by a tombstoned position: not stamped; 4 is deleted: stamped.
        assert_eq!(
            f.lineage.last_updated_at,
            LineageSequence::Inline(vec![1, 7, 2, 2, 7, 2])
        );
        assert_eq!(f.overlays[0].committed_version, 7);
        assert_eq!(f.lineage.created_at, LineageSequence::Absent);
    }

    #[test]
    fn absent_last_updated_fills_with_one_and_lineage_off_stamps_nothing() {
        // covers: OVL-LIN-2, OVL-LIN-5, OVL-LIN-6
        let mut f = fragment(0, 3);
        stamp_overlays(
            &mut f,
            vec![overlay(vec![1], Coverage::Dense(bitmap(&[2])))],
            5,
            true,
            &schema(),
        )
        .unwrap();
        assert_eq!(
            f.lineage.last_updated_at,
            LineageSequence::Inline(vec![1, 1, 5])
        );
        let mut g = fragment(0, 3);
        stamp_overlays(
            &mut g,
            vec![overlay(vec![1], Coverage::Dense(bitmap(&[2])))],
            5,
            false,
            &schema(),
        )
        .unwrap();
        assert_eq!(g.lineage.last_updated_at, LineageSequence::Absent);
        assert_eq!(g.overlays[0].committed_version, 5);
    }

    #[test]
    fn spilled_last_updated_comes_back_inline() {
        // covers: LIN-PLACE-5
        let mut f = fragment(0, 3);
        f.files.push(DataFile {
            path: "lineage.lance".into(),
            fields: vec![LAST_UPDATED_AT_FIELD_ID],
            columns: cols(vec![vec![
                Value::UInt64(3),
                Value::UInt64(4),
                Value::UInt64(5),
            ]]),
        });
        f.lineage.last_updated_at = LineageSequence::Column;
        stamp_overlays(
            &mut f,
            vec![overlay(vec![1], Coverage::Dense(bitmap(&[0])))],
            9,
            true,
            &schema(),
        )
        .unwrap();
        assert_eq!(
            f.lineage.last_updated_at,
            LineageSequence::Inline(vec![9, 4, 5])
        );
    }

    #[test]
    fn coverage_past_physical_rows_is_an_error() {
        let mut f = fragment(3, 3);
        let e = stamp_overlays(
            &mut f,
            vec![overlay(vec![1], Coverage::Dense(bitmap(&[3])))],
            2,
            true,
            &schema(),
        )
        .unwrap_err();
        assert_eq!(e.code(), "lineage_offset_out_of_range");
        assert!(f.overlays.is_empty());
    }

    #[test]
    fn retry_reassigns_every_commit_assigned_value_and_nothing_else() {
        // covers: LIN-STAMP-1, LIN-STAMP-2, LIN-STAMP-3, LIN-PLACE-1, OVL-VER-2
        let mut update = overlay(vec![2], Coverage::Dense(bitmap(&[1, 3])));
        update.file.columns = cols(vec![vec![Value::Int64(10), Value::Int64(30)]]);
        let pending = PendingCommit {
            overlays: vec![(0, vec![update])],
            appended: vec![
                AppendedFragment {
                    fragment: fragment(1, 2),
                    carried: None,
                },
                AppendedFragment {
                    fragment: fragment(2, 2),
                    carried: Some(CarriedLineage {
                        row_ids: LineageSequence::Inline(vec![0, 2]),
                        created_at: LineageSequence::Inline(vec![1, 1]),
                    }),
                },
            ],
        };
        let base = snapshot();
        let first = pending.apply(&base, 2).unwrap();
        assert_eq!(
            first.fragments[0].lineage.last_updated_at,
            LineageSequence::Inline(vec![1, 2, 1, 2])
        );
        assert_eq!(
            first.fragments[1].lineage.row_ids,
            LineageSequence::Inline(vec![4, 5])
        );
        assert_eq!(first.next_row_id, 6);

        // A concurrent commit landed version 2: it appended 3 rows (ids 4..7) and touched offset 0.
        let mut newest = base.clone();
        newest.version = 2;
        newest.next_row_id = 7;
        newest.fragments[0].lineage.last_updated_at = LineageSequence::Inline(vec![2, 1, 1, 1]);
        let retried = restamp(&pending, &newest).unwrap();
        assert_eq!(retried.version, 3);
        let f0 = &retried.fragments[0];
        assert_eq!(f0.overlays[0].committed_version, 3);
        assert_eq!(
            f0.lineage.last_updated_at,
            LineageSequence::Inline(vec![2, 3, 1, 3])
        );
        assert_eq!(f0.lineage.created_at, LineageSequence::Inline(vec![1; 4]));
        let f1 = &retried.fragments[1];
        assert_eq!(f1.lineage.row_ids, LineageSequence::Inline(vec![7, 8]));
        assert_eq!(f1.lineage.created_at, LineageSequence::Inline(vec![3, 3]));
        assert_eq!(
            f1.lineage.last_updated_at,
            LineageSequence::Inline(vec![3, 3])
        );
        let f2 = &retried.fragments[2];
        assert_eq!(f2.lineage.row_ids, LineageSequence::Inline(vec![0, 2]));
        assert_eq!(f2.lineage.created_at, LineageSequence::Inline(vec![1, 1]));
        assert_eq!(
            f2.lineage.last_updated_at,
            LineageSequence::Inline(vec![3, 3])
        );
        assert_eq!(retried.next_row_id, 9);
        retried.validate().unwrap();
        // The appended fragment's inline row ids encode as Lance's one-Range sequence.
        let ids = RowIdSequence::new_fragment(7, 2);
        assert_eq!(
            RowIdSequence::decode(&ids.encode())
                .unwrap()
                .values(2)
                .unwrap(),
            vec![7, 8]
        );
    }

    #[test]
    fn unknown_fragment_in_pending_commit_is_an_error() {
        let pending = PendingCommit {
            overlays: vec![(9, vec![])],
            appended: vec![],
        };
        assert_eq!(
            pending.apply(&snapshot(), 2).unwrap_err().code(),
            "lineage_unknown_fragment"
        );
    }
}
