//! A delete commit: marking physical rows deleted.
//!
//! Invariant: a delete changes only the fragment's deletion set. Overlays are addressed by
//! physical offset and stay exactly as they were (their values for deleted rows are simply
//! dead); lineage is untouched. A fragment whose every row is deleted is removed from the
//! manifest, overlays and all, as Lance 14 does.

use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::model::Snapshot;
use crate::query::{Predicate, flat_filter};

/// Deletes `offsets` of fragment `fragment_id`, committed as `version`.
pub fn delete_rows(
    snapshot: &Snapshot,
    fragment_id: u64,
    offsets: &RoaringBitmap,
    version: u64,
) -> Result<Snapshot> {
    let mut next = snapshot.clone();
    next.version = version;
    let position = next
        .fragments
        .iter()
        .position(|f| f.id == fragment_id)
        .ok_or_else(|| Error::UnknownFragment {
            fragment: fragment_id,
            context: "delete".into(),
        })?;
    let fragment = &mut next.fragments[position];
    if let Some(max) = offsets.max() {
        if u64::from(max) >= fragment.physical_rows {
            return Err(Error::OffsetOutOfRange {
                fragment: fragment_id,
                file: "(delete request)".into(),
                what: "deletion".into(),
                offset: u64::from(max),
                physical_rows: fragment.physical_rows,
            });
        }
    }
    fragment.deletions |= offsets;
    if fragment.deletions.len() == fragment.physical_rows {
        next.fragments.remove(position);
    }
    crate::flags::set_commit_flags(&mut next);
    Ok(next)
}

/// Deletes every live row matching `predicate` (evaluated on current, overlay-resolved values),
/// committed as `version`.
pub fn delete_where(snapshot: &Snapshot, predicate: &Predicate, version: u64) -> Result<Snapshot> {
    let mut next = snapshot.clone();
    next.version = version;
    let matches = flat_filter(snapshot, predicate)?;
    for fragment_id in snapshot.fragments.iter().map(|f| f.id) {
        let offsets: RoaringBitmap = matches
            .iter()
            .filter(|r| r.fragment == fragment_id)
            .filter_map(|r| u32::try_from(r.offset).ok())
            .collect();
        if !offsets.is_empty() {
            next = delete_rows(&next, fragment_id, &offsets, version)?;
        }
    }
    crate::flags::set_commit_flags(&mut next);
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lineage::PendingCommit;
    use crate::model::Value;
    use crate::scan::scan;
    use crate::worked_example::{self, AGE};

    fn v2() -> Snapshot {
        PendingCommit {
            overlays: vec![(0, vec![worked_example::step_1_overlay()])],
            appended: vec![],
        }
        .apply(&worked_example::version_1(), 2)
        .unwrap()
    }

    #[test]
    fn a_delete_leaves_overlays_and_lineage_untouched() {
        // covers: OVL-COV-2, OVL-DEL-1
        let before = v2();
        let after = delete_rows(&before, 0, &[1u32].into_iter().collect(), 3).unwrap();
        assert_eq!(after.fragments[0].overlays, before.fragments[0].overlays);
        assert_eq!(after.fragments[0].lineage, before.fragments[0].lineage);
        let rows = scan(&after, None).unwrap();
        assert_eq!(
            rows.iter().map(|r| r.offset).collect::<Vec<_>>(),
            vec![0, 2, 3]
        );
        assert_eq!(
            rows[2].values[2],
            Value::Int32(23),
            "the other overlay value still applies"
        );
        assert_ne!(after.reader_flags & 1, 0, "deletions set flag 1");
        after.validate().unwrap();
    }

    #[test]
    fn a_delete_by_predicate_sees_overlay_values() {
        let after = delete_where(&v2(), &Predicate::Eq(AGE, Value::Int32(26)), 3).unwrap();
        assert_eq!(
            after.fragments[0].deletions.iter().collect::<Vec<_>>(),
            vec![1]
        );
        let none = delete_where(&v2(), &Predicate::Eq(AGE, Value::Int32(25)), 3).unwrap();
        assert!(
            none.fragments[0].deletions.is_empty(),
            "25 is Bob's stale base value"
        );
    }

    #[test]
    fn deleting_every_row_removes_the_fragment() {
        let all: RoaringBitmap = (0..4).collect();
        let after = delete_rows(&v2(), 0, &all, 3).unwrap();
        assert!(after.fragments.is_empty());
        let err = delete_rows(&v2(), 0, &[4u32].into_iter().collect(), 3).unwrap_err();
        assert_eq!(err.code(), "offset_out_of_range");
    }
}
