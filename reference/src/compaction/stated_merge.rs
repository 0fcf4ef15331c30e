//! A merge stated by a caller: the committer's judgement of an overlay list handed to it as the
//! result of merging some of a fragment's overlays ([OVL-MERGE-6]).
//!
//! Invariant: [`check_stated_merge`] accepts a stated list only when it is a list
//! [`super::merge::merge_overlays`] could have produced from the fragment's list: at least two
//! overlays (the inputs) left out, contiguous in precedence by the merge's own rule
//! (`merge::check_contiguous`, not restated here), every other overlay carried in its
//! order, and at most one new overlay, at the newest input's position, carrying the newest
//! input's `committed_version` ([OVL-MERGE-3]); no new overlay only when no input carries a
//! live value field. Everything it decides is in the manifest (which overlays, their order, their
//! versions), so a committer can judge a merge without reading a value file; whether the merged
//! values are the inputs' post-image ([OVL-MERGE-2]) is the value files' business, judged by
//! `validate` on the commit.

use std::collections::BTreeSet;

use super::merge::check_contiguous;
use super::{CompactionError, carried_value_fields};
use crate::model::{Fragment, Schema};

/// Judges `after`, the fragment with the overlay list a caller states, as a merge of the
/// overlays of `before`, the same fragment as the committer's newest version holds it (module
/// docs). An overlay of `after` equal to one of `before` is carried; the overlays of `before`
/// that are not carried are the inputs, and those of `after` that are not are new.
///
/// Refused ([`CompactionError`]): `not_a_merge` when fewer than two overlays are merged, more
/// than one new overlay is stated, the list is not the old one with the merged overlay in the
/// newest input's place, or inputs carrying live values leave no overlay;
/// `non_contiguous_merge` when an overlay left in the list ranks between the inputs;
/// `merged_version_mismatch` when the merged overlay's `committed_version` is not the newest
/// input's.
pub fn check_stated_merge(
    schema: &Schema,
    before: &Fragment,
    after: &Fragment,
) -> Result<(), CompactionError> {
    let fragment = before.id;
    let not_a_merge = |problem: String| CompactionError::NotAMerge { fragment, problem };
    // Each stated overlay is carried from the first unmatched equal overlay of `before`.
    let mut matched = vec![false; before.overlays.len()];
    let mut new = Vec::new();
    for (k, overlay) in after.overlays.iter().enumerate() {
        let carried =
            (0..before.overlays.len()).find(|&p| !matched[p] && before.overlays[p] == *overlay);
        match carried {
            Some(p) => matched[p] = true,
            None => new.push(k),
        }
    }
    let inputs: BTreeSet<usize> = (0..before.overlays.len())
        .filter(|&p| !matched[p])
        .collect();
    if inputs.len() < 2 {
        return Err(not_a_merge(format!(
            "the stated list leaves out {} of the fragment's overlays; a merge replaces at least two",
            inputs.len()
        )));
    }
    if new.len() > 1 {
        return Err(not_a_merge(format!(
            "the stated list holds {} overlays the fragment does not have; a merge makes one",
            new.len()
        )));
    }
    check_contiguous(before, &inputs)?;
    // The merge's own placement: the carried overlays in their order, the merged one where the
    // newest input was ([OVL-MERGE-4]).
    let newest = crate::resolve::precedence(before)
        .into_iter()
        .find(|p| inputs.contains(p));
    let merged = new.first().and_then(|&k| after.overlays.get(k));
    let mut expected = Vec::with_capacity(after.overlays.len());
    for (p, overlay) in before.overlays.iter().enumerate() {
        if Some(p) == newest {
            expected.extend(merged);
        } else if !inputs.contains(&p) {
            expected.push(overlay);
        }
    }
    if !expected.iter().copied().eq(after.overlays.iter()) {
        return Err(not_a_merge(
            "the stated list is not the fragment's list with the merged overlay in place of its newest input".into(),
        ));
    }
    let newest_version = inputs
        .iter()
        .filter_map(|&p| before.overlays.get(p))
        .map(|o| o.committed_version)
        .max()
        .unwrap_or(0);
    match merged {
        Some(m) if m.committed_version != newest_version => {
            Err(CompactionError::MergedVersionMismatch {
                fragment,
                path: m.file.path.clone(),
                stated: m.committed_version,
                newest: newest_version,
            })
        }
        Some(_) => Ok(()),
        None => {
            let live = inputs
                .iter()
                .filter_map(|&p| before.overlays.get(p))
                .any(|o| carried_value_fields(schema, o).next().is_some());
            if live {
                Err(not_a_merge(
                    "the merged inputs carry live values, but the stated list holds no merged overlay".into(),
                ))
            } else {
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use roaring::RoaringBitmap;

    use super::*;
    use crate::ErrorClass;
    use crate::compaction::merge::{merge_overlays, stated_merge};
    use crate::error::Error;
    use crate::model::{Coverage, DataFile, DataType, Field, Overlay, Value, cols};

    fn schema() -> Schema {
        Schema::new(vec![Field::new(0, "v", DataType::Int32)]).unwrap()
    }

    fn overlay(path: &str, version: u64, offsets: &[u32], values: &[i32]) -> Overlay {
        Overlay {
            file: DataFile {
                path: path.into(),
                fields: vec![0],
                columns: cols(vec![values.iter().map(|&v| Value::Int32(v)).collect()]),
            },
            coverage: Coverage::Dense(offsets.iter().copied().collect::<RoaringBitmap>()),
            committed_version: version,
        }
    }

    /// Three rows; v2 covers {0, 1}, v3 covers {1}, v4 covers {2}.
    fn fragment() -> Fragment {
        let base = vec![(0..3).map(Value::Int32).collect()];
        let mut f = Fragment::new(0, "base.lance", vec![0], cols(base));
        f.overlays = vec![
            overlay("v2.lance", 2, &[0, 1], &[20, 21]),
            overlay("v3.lance", 3, &[1], &[31]),
            overlay("v4.lance", 4, &[2], &[42]),
        ];
        f
    }

    fn code(after: &Fragment) -> &'static str {
        let err: Error = check_stated_merge(&schema(), &fragment(), after)
            .unwrap_err()
            .into();
        assert_eq!(err.class(), ErrorClass::Refused);
        err.code()
    }

    #[test]
    fn every_merge_the_compactor_makes_is_accepted() {
        // covers: OVL-MERGE-6
        let (s, f) = (schema(), fragment());
        for positions in [[0, 1], [1, 2]] {
            let after = merge_overlays(&s, &f, &positions, "m.lance").unwrap();
            assert_eq!(check_stated_merge(&s, &f, &after), Ok(()));
        }
        let all = merge_overlays(&s, &f, &[0, 1, 2], "m.lance").unwrap();
        assert_eq!(check_stated_merge(&s, &f, &all), Ok(()));
    }

    #[test]
    fn v2_and_v4_merged_around_v3_is_refused_as_non_contiguous() {
        // covers: OVL-MERGE-6, OVL-MERGE-1
        let after = stated_merge(&schema(), &fragment(), &[0, 2], "m.lance").unwrap();
        // v2's stale value at offset 1 would now rank above v3's.
        assert_eq!(after.overlays.len(), 2);
        assert_eq!(code(&after), "non_contiguous_merge");
    }

    #[test]
    fn a_merged_overlay_stamped_below_its_newest_input_is_refused() {
        // covers: OVL-MERGE-6, OVL-MERGE-3
        let mut after = merge_overlays(&schema(), &fragment(), &[1, 2], "m.lance").unwrap();
        after.overlays[1].committed_version = 1;
        assert_eq!(code(&after), "merged_version_mismatch");
        after.overlays[1].committed_version = 5;
        assert_eq!(code(&after), "merged_version_mismatch");
    }

    #[test]
    fn a_list_that_merges_nothing_or_moves_what_it_carries_is_refused() {
        // covers: OVL-MERGE-6
        let f = fragment();
        // Nothing left out.
        assert_eq!(code(&f), "not_a_merge");
        // One overlay replaced by another: a rewrite of it, not a merge.
        let mut one = f.clone();
        one.overlays[2] = overlay("x.lance", 4, &[2], &[99]);
        assert_eq!(code(&one), "not_a_merge");
        // Two new overlays for two inputs.
        let mut two = f.clone();
        two.overlays[1] = overlay("x.lance", 3, &[1], &[31]);
        two.overlays[2] = overlay("y.lance", 4, &[2], &[42]);
        assert_eq!(code(&two), "not_a_merge");
        // The merged overlay put before a carried one it ranks above.
        let mut moved = merge_overlays(&schema(), &f, &[1, 2], "m.lance").unwrap();
        moved.overlays.swap(0, 1);
        assert_eq!(code(&moved), "not_a_merge");
        // Inputs with live values dropped without a merged overlay.
        let mut dropped = f.clone();
        dropped.overlays.truncate(1);
        assert_eq!(code(&dropped), "not_a_merge");
    }
}
