//! Overlay → base fold: a commit that materializes a fragment's overlays into a new base file.
//!
//! Invariant: the folded snapshot resolves every cell as the snapshot it came from, and no
//! index covering the fragment is left trusting a value it did not see.
//!
//! The fold is a **column rewrite**: for every live value field carried by any of the
//! fragment's overlays it writes the post-image into ONE new base data file (fields in schema
//! order), tombstones (`-2`) that field in place in the old base files (positions kept, so the
//! other columns stay where they were), and clears the overlay list. Row addresses do not move,
//! so deletions and lineage are untouched. Deleted rows still exist physically and need a value
//! in the new column: they keep their old base value, or NULL when no base file held the field;
//! an overlay's value for a deleted row was dead and is dropped. Overlays that carry no live
//! value field (only tombstones, dropped or struct ids) are cleared without writing a file.
//!
//! Removing an overlay removes the exclusion signal an index relied on. So for every index
//! that covers the fragment, one of whose fields is related ([`crate::model::Schema::related`]: equal,
//! ancestor or descendant) to a folded field that some folded overlay committed after the
//! index's `dataset_version`, the [`FoldPlan`] must say what happens to the index in the same
//! commit: [`IndexPolicy::Rebuild`] or [`IndexPolicy::DropFragment`]. A plan that forgets one
//! is refused (`stale_index`), as is a plan naming an index that does not exist. A plan entry
//! for an index that is not stale is honoured anyway: rebuilding or uncovering an index is
//! always safe, and a scheduler may want it.
//!
//! The commit's feature flags are recomputed from content ([`crate::flags::set_commit_flags`]),
//! so a fold that clears a fragment's last overlays also clears the overlay bit.

use std::collections::BTreeMap;

use super::{CompactionError, carried_value_fields, check_newer, path_in_use, uncover};
use crate::error::Result;
use crate::exclusion::{affects_index, is_newer_than_index};
use crate::model::{Column, DataFile, FieldId, Fragment, Snapshot, TOMBSTONE_FIELD_ID, Value};
use crate::resolve::resolve_column;

/// What a fold commit does to one index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexPolicy {
    /// Rebuild the index at the new version: `dataset_version` becomes the fold's version and
    /// its entries are recomputed from the folded snapshot, for every fragment it covers.
    Rebuild,
    /// Remove the folded fragment from the index's coverage, so its rows fall to the flat path.
    /// An absent `fragment_bitmap` covers no fragment, so it stays absent. The index's entries
    /// for the fragment are dropped with it.
    DropFragment,
}

/// Index name → what the fold does to it. Ordered, so a plan is applied deterministically.
pub type FoldPlan = BTreeMap<String, IndexPolicy>;

/// Folds every overlay of fragment `fragment_id` into a new base file `new_file_path`, as the
/// commit of version `new_version`, applying `plan` to the indices.
///
/// Refused ([`CompactionError`]): `new_version` not newer than the snapshot, a fragment with no
/// overlays, a path already in use, a plan naming an unknown index, and a plan missing an index
/// the fold would leave stale. An invalid snapshot or an unknown fragment is the
/// corresponding [`Error`](crate::Error).
pub fn fold(
    snapshot: &Snapshot,
    fragment_id: u64,
    plan: &FoldPlan,
    new_version: u64,
    new_file_path: &str,
) -> Result<Snapshot> {
    check_newer(snapshot, new_version)?;
    snapshot.validate()?;
    let fragment = snapshot.fragment(fragment_id)?;
    if fragment.overlays.is_empty() {
        return Err(CompactionError::NothingToFold {
            fragment: fragment_id,
        }
        .into());
    }
    if let Some(name) = plan.keys().find(|name| snapshot.index(name).is_none()) {
        return Err(CompactionError::UnknownIndex {
            index: name.clone(),
        }
        .into());
    }
    if path_in_use(snapshot.fragments.iter(), new_file_path) {
        return Err(CompactionError::PathInUse {
            path: new_file_path.to_string(),
        }
        .into());
    }
    let newest = newest_version_per_field(snapshot, fragment);
    if let Some(stale) = first_stale_index(snapshot, fragment, plan) {
        return Err(stale.into());
    }

    let folded = folded_fragment(snapshot, fragment, &newest, new_file_path)?;
    let mut next = snapshot.clone();
    next.version = new_version;
    for f in &mut next.fragments {
        if f.id == fragment_id {
            *f = folded.clone();
        }
    }
    for (name, policy) in plan {
        let Some(position) = next.indices.iter().position(|i| &i.name == name) else {
            continue;
        };
        match policy {
            IndexPolicy::DropFragment => {
                if let Some(index) = next.indices.get_mut(position) {
                    uncover(index, &[fragment_id]);
                }
            }
            IndexPolicy::Rebuild => {
                let entries = match next.indices.get(position) {
                    Some(index) => crate::index_build::entries(&next, index)?,
                    None => continue,
                };
                if let Some(index) = next.indices.get_mut(position) {
                    index.entries = entries;
                    index.dataset_version = new_version;
                }
            }
        }
    }
    crate::flags::set_commit_flags(&mut next);
    Ok(next)
}

/// Every live value field carried by an overlay of `fragment`, with the newest
/// `committed_version` among the overlays carrying it.
fn newest_version_per_field(snapshot: &Snapshot, fragment: &Fragment) -> BTreeMap<FieldId, u64> {
    let mut newest = BTreeMap::new();
    for overlay in &fragment.overlays {
        for field in carried_value_fields(&snapshot.schema, overlay) {
            let v = newest.entry(field).or_insert(0);
            *v = overlay.committed_version.max(*v);
        }
    }
    newest
}

/// The first index (in manifest order) the fold would leave stale without a plan entry: one
/// for which an overlay of the fragment contributes to the exclusion set today
/// ([`is_newer_than_index`] and [`affects_index`], the rule of [`crate::exclusion`]), since
/// removing that overlay removes the signal.
fn first_stale_index(
    snapshot: &Snapshot,
    fragment: &Fragment,
    plan: &FoldPlan,
) -> Option<CompactionError> {
    let indices = snapshot.indices.iter().filter(|i| i.covers(fragment.id));
    for index in indices.filter(|i| !plan.contains_key(&i.name)) {
        for overlay in fragment
            .overlays
            .iter()
            .filter(|o| is_newer_than_index(o, index))
        {
            let affected = overlay.file.fields.iter().copied();
            if let Some(field) = affected
                .into_iter()
                .find(|&f| affects_index(&snapshot.schema, index, f))
            {
                return Some(CompactionError::StaleIndex {
                    index: index.name.clone(),
                    fragment: fragment.id,
                    field,
                    committed_version: overlay.committed_version,
                    dataset_version: index.dataset_version,
                });
            }
        }
    }
    None
}

/// The fragment after the fold: new base file appended, folded fields tombstoned in the old
/// files, overlays cleared.
fn folded_fragment(
    snapshot: &Snapshot,
    fragment: &Fragment,
    newest: &BTreeMap<FieldId, u64>,
    path: &str,
) -> Result<Fragment> {
    let fields: Vec<FieldId> = snapshot
        .schema
        .fields()
        .iter()
        .map(|f| f.id)
        .filter(|id| newest.contains_key(id))
        .collect();
    let mut columns = Vec::with_capacity(fields.len());
    for &field in &fields {
        let base = crate::resolve::base_column(fragment, field).map(|(_, c)| c);
        let resolved = resolve_column(&snapshot.schema, fragment, field)?;
        let values: Vec<Value> = resolved
            .into_iter()
            .enumerate()
            .map(|(offset, value)| match value {
                Some(v) => v,
                // A deleted row: its overlay values are dead; keep what the base held.
                None => base.and_then(|c| c.value(offset)).unwrap_or(Value::Null),
            })
            .collect();
        columns.push(Column::for_field(
            &snapshot.schema,
            field,
            &values,
            fragment.id,
            path,
        )?);
    }
    let mut folded = fragment.clone();
    for file in &mut folded.files {
        for id in &mut file.fields {
            if newest.contains_key(id) {
                *id = TOMBSTONE_FIELD_ID;
            }
        }
    }
    if !fields.is_empty() {
        folded.files.push(DataFile {
            path: path.to_string(),
            fields,
            columns,
        });
    }
    folded.overlays.clear();
    Ok(folded)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::ErrorClass;
    use crate::compaction::generated;
    use crate::error::Error;
    use crate::model::{Coverage, IndexKind, LineageSequence, Overlay};
    use crate::scan::scan;
    use crate::worked_example::{
        AGE, AGE_INDEX, EMBEDDING, ID, NAME, step_1_overlay, step_4_overlay, version_1,
    };

    /// Commits `overlay` as the next version: stamps `committed_version`, appends it, and sets
    /// `last_updated_at` of every covered row to the new version.
    fn commit_overlay(snapshot: &Snapshot, mut overlay: Overlay) -> Snapshot {
        let mut next = snapshot.clone();
        next.version += 1;
        overlay.committed_version = next.version;
        let fragment = &mut next.fragments[0];
        let covered: roaring::RoaringBitmap = match &overlay.coverage {
            Coverage::Dense(b) => b.clone(),
            Coverage::Sparse(bs) => bs.iter().fold(Default::default(), |acc, b| acc | b),
        };
        if let LineageSequence::Inline(v) = &mut fragment.lineage.last_updated_at {
            for o in &covered {
                v[o as usize] = next.version;
            }
        }
        fragment.overlays.push(overlay);
        next.validate().unwrap();
        next
    }

    fn version_3() -> Snapshot {
        commit_overlay(
            &commit_overlay(&version_1(), step_1_overlay()),
            step_4_overlay(),
        )
    }

    #[test]
    fn worked_example_step_6_folds_both_overlays_and_drops_fragment_0_from_age_idx() {
        // covers: OVL-FOLD-1, OVL-FOLD-2, OVL-FOLD-3, OVL-FOLD-4, OVL-FOLD-5
        let v3 = version_3();
        let plan: FoldPlan = [(AGE_INDEX.to_string(), IndexPolicy::DropFragment)].into();
        let v4 = fold(&v3, 0, &plan, 4, "file1.lance").unwrap();
        v4.validate().unwrap();
        assert_eq!(v4.version, 4);
        let f = &v4.fragments[0];
        assert_eq!(f.files.len(), 2);
        assert_eq!(f.files[0].path, "file0.lance");
        assert_eq!(f.files[0].fields, vec![ID, -2, -2, -2]);
        assert_eq!(f.files[1].path, "file1.lance");
        assert_eq!(f.files[1].fields, vec![NAME, AGE, EMBEDDING]);
        assert_eq!(
            f.files[1].columns[1].values(),
            [30, 26, 40, 23].map(Value::Int32).to_vec()
        );
        assert!(f.overlays.is_empty());
        assert_eq!(f.lineage, v3.fragments[0].lineage);
        assert_eq!(f.deletions, v3.fragments[0].deletions);
        let idx = v4.index(AGE_INDEX).unwrap();
        assert!(!idx.covers(0));
        assert_eq!(idx.dataset_version, 1);
        assert_eq!(scan(&v4, None).unwrap(), scan(&v3, None).unwrap());
    }

    #[test]
    fn worked_example_step_6_with_an_empty_plan_is_refused_naming_age_idx() {
        // covers: OVL-FOLD-6
        let err = fold(&version_3(), 0, &FoldPlan::new(), 4, "file1.lance").unwrap_err();
        assert_eq!(err.class(), ErrorClass::Refused);
        assert_eq!(err.code(), "stale_index");
        match err {
            Error::Compaction(CompactionError::StaleIndex {
                index,
                fragment,
                field,
                committed_version,
                dataset_version,
            }) => {
                assert_eq!((index.as_str(), fragment, field), (AGE_INDEX, 0, AGE));
                assert_eq!((committed_version, dataset_version), (2, 1));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn worked_example_step_6_with_a_rebuild_indexes_the_folded_ages() {
        // covers: OVL-FOLD-5
        let v3 = version_3();
        let plan: FoldPlan = [(AGE_INDEX.to_string(), IndexPolicy::Rebuild)].into();
        let v4 = fold(&v3, 0, &plan, 4, "file1.lance").unwrap();
        let idx = v4.index(AGE_INDEX).unwrap();
        assert_eq!(idx.dataset_version, 4);
        assert!(idx.covers(0));
        let ages: Vec<Value> = idx.entries.iter().map(|e| e.value.clone()).collect();
        assert_eq!(ages, [30, 26, 40, 23].map(Value::Int32).to_vec());
    }

    #[test]
    fn an_index_built_after_the_overlays_needs_no_plan_entry() {
        // covers: OVL-FOLD-5, OVL-IDX-2
        let mut v3 = version_3();
        let entries = crate::index_build::entries(&v3, &v3.indices[0]).unwrap();
        v3.indices[0].dataset_version = 3;
        v3.indices[0].entries = entries;
        let v4 = fold(&v3, 0, &FoldPlan::new(), 4, "file1.lance").unwrap();
        assert_eq!(v4.indices, v3.indices);
    }

    #[test]
    fn an_overlay_on_unrelated_fields_only_needs_no_plan_entry() {
        // covers: OVL-FOLD-2, OVL-FOLD-5, OVL-IDX-4
        // Only step 4 (name, embedding): the age index is not stale.
        let v2 = commit_overlay(&version_1(), step_4_overlay());
        let v3 = fold(&v2, 0, &FoldPlan::new(), 3, "file1.lance").unwrap();
        assert_eq!(v3.fragments[0].files[0].fields, vec![ID, -2, AGE, -2]);
        assert_eq!(v3.indices, v2.indices);
        assert_eq!(scan(&v3, None).unwrap(), scan(&v2, None).unwrap());
    }

    #[test]
    fn a_plan_entry_for_a_fresh_index_is_honoured() {
        let v2 = commit_overlay(&version_1(), step_4_overlay());
        let plan: FoldPlan = [(AGE_INDEX.to_string(), IndexPolicy::DropFragment)].into();
        let v3 = fold(&v2, 0, &plan, 3, "file1.lance").unwrap();
        assert!(!v3.index(AGE_INDEX).unwrap().covers(0));
        assert!(v3.index(AGE_INDEX).unwrap().entries.is_empty());
    }

    #[test]
    fn requests_the_fold_cannot_honour_are_refused() {
        let v3 = version_3();
        let drop: FoldPlan = [(AGE_INDEX.to_string(), IndexPolicy::DropFragment)].into();
        let code = |s: &Snapshot, plan: &FoldPlan, version: u64, path: &str| {
            fold(s, 0, plan, version, path).unwrap_err().code()
        };
        let unknown: FoldPlan = [("nope".to_string(), IndexPolicy::Rebuild)].into();
        assert_eq!(
            code(&v3, &unknown, 4, "file1.lance"),
            "fold_plan_unknown_index"
        );
        assert_eq!(code(&v3, &drop, 3, "file1.lance"), "version_not_newer");
        assert_eq!(code(&v3, &drop, 4, "file0.lance"), "path_in_use");
        assert_eq!(
            code(&version_1(), &drop, 2, "file1.lance"),
            "nothing_to_fold"
        );
        assert_eq!(
            fold(&v3, 9, &drop, 4, "f.lance").unwrap_err().code(),
            "unknown_fragment"
        );
    }

    #[test]
    fn a_deleted_row_keeps_its_base_value_in_the_new_file() {
        // covers: OVL-FOLD-1, OVL-DEL-1
        let mut v3 = version_3();
        v3.fragments[0].deletions.insert(1); // Bob: overlays give age 26 and a new embedding
        let plan: FoldPlan = [(AGE_INDEX.to_string(), IndexPolicy::DropFragment)].into();
        let v4 = fold(&v3, 0, &plan, 4, "file1.lance").unwrap();
        let new_file = &v4.fragments[0].files[1];
        assert_eq!(
            new_file.columns[1].values(),
            [30, 25, 40, 23].map(Value::Int32).to_vec()
        );
        assert_eq!(scan(&v4, None).unwrap(), scan(&v3, None).unwrap());
    }

    #[test]
    fn overlays_without_live_fields_are_cleared_without_a_new_file() {
        let mut v2 = commit_overlay(&version_1(), step_1_overlay());
        v2.fragments[0].overlays[0].file.fields = vec![-2];
        let v3 = fold(&v2, 0, &FoldPlan::new(), 3, "file1.lance").unwrap();
        assert!(v3.fragments[0].overlays.is_empty());
        assert_eq!(v3.fragments[0].files, v2.fragments[0].files);
        assert_eq!(v3.indices, v2.indices);
    }

    /// A plan naming every stale index and, now and then, a fresh one too; the policy per
    /// index comes from the bits of `choice`.
    fn plan_for(s: &Snapshot, stale: &[String], choice: u64) -> FoldPlan {
        s.indices
            .iter()
            .enumerate()
            .filter(|(i, idx)| stale.contains(&idx.name) || choice >> (8 + i) & 1 == 1)
            .map(|(i, idx)| {
                let rebuild = choice >> i & 1 == 1;
                let policy = if rebuild {
                    IndexPolicy::Rebuild
                } else {
                    IndexPolicy::DropFragment
                };
                (idx.name.clone(), policy)
            })
            .collect()
    }

    proptest! {
        #[test]
        fn a_fold_is_invisible_and_leaves_no_index_trusting_an_unseen_value(
            seed in any::<u64>(),
            choice in any::<u64>(),
        ) {
            // covers: OVL-FOLD-1, OVL-FOLD-2, OVL-FOLD-3, OVL-FOLD-4, OVL-FOLD-5, OVL-FOLD-6, OVL-IDX-3
            let before = generated::snapshot(seed);
            let Some(target) = before.fragments.iter().find(|f| !f.overlays.is_empty()) else {
                return Ok(());
            };
            let id = target.id;
            let new_version = generated::VERSION + 1;

            // Staleness computed independently: an overlay field related to an indexed field,
            // committed after the index was built.
            let stale: Vec<String> = before
                .indices
                .iter()
                .filter(|i| i.covers(id))
                .filter(|i| {
                    target.overlays.iter().any(|o| {
                        o.committed_version > i.dataset_version
                            && o.file.fields.iter().any(|&f| {
                                f >= 0 && i.fields.iter().any(|&g| before.schema.related(f, g))
                            })
                    })
                })
                .map(|i| i.name.clone())
                .collect();
            let bare = fold(&before, id, &FoldPlan::new(), new_version, "folded.lance");
            prop_assert_eq!(bare.is_err(), !stale.is_empty());
            if let Err(e) = bare {
                prop_assert_eq!(e.code(), "stale_index");
            }

            let plan = plan_for(&before, &stale, choice);
            let after = fold(&before, id, &plan, new_version, "folded.lance").unwrap();
            prop_assert!(after.validate().is_ok());
            prop_assert_eq!(scan(&after, None).unwrap(), scan(&before, None).unwrap());
            let folded = after.fragment(id).unwrap();
            prop_assert!(folded.overlays.is_empty());
            prop_assert_eq!(&folded.lineage, &target.lineage);
            prop_assert_eq!(&folded.deletions, &target.deletions);
            for (old, new) in target.files.iter().zip(&folded.files) {
                prop_assert_eq!(old.fields.len(), new.fields.len());
            }

            for index in &after.indices {
                let old = before.index(&index.name).unwrap();
                match plan.get(&index.name) {
                    Some(IndexPolicy::Rebuild) => {
                        prop_assert_eq!(index.dataset_version, new_version);
                        prop_assert_eq!(&index.entries, &crate::index_build::entries(&after, index).unwrap());
                        let expected = generated::entries_as_of(
                            &after.schema, &after.fragments, index.fragment_bitmap.as_ref(),
                            index.fields[0], new_version);
                        prop_assert_eq!(&index.entries, &expected);
                        prop_assert_eq!(index.kind == IndexKind::Vector, index.name == "v_idx");
                    }
                    Some(IndexPolicy::DropFragment) => {
                        prop_assert!(!index.covers(id));
                        prop_assert_eq!(index.dataset_version, old.dataset_version);
                    }
                    None => prop_assert_eq!(index, old),
                }
                // No covering index trusts a value it did not see: the folded fragment has no
                // overlays left to exclude anything, so every entry must be current.
                if index.covers(id) {
                    let current = resolve_column(&after.schema, folded, index.fields[0]).unwrap();
                    for e in index.entries.iter().filter(|e| e.fragment == id) {
                        prop_assert_eq!(Some(&e.value), current[e.offset as usize].as_ref());
                    }
                }
            }
        }
    }
}
