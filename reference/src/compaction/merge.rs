//! Overlay → overlay merge: several overlays of one fragment become one.
//!
//! Invariant: the merged fragment resolves every cell exactly as the original did. Two facts
//! make that true:
//!
//! - the inputs are **contiguous** in precedence order (no other overlay ranks between the
//!   oldest and the newest input), so taking the newest input's `committed_version` for the
//!   result promotes no input above an overlay it used to lose to;
//! - per (offset, field) the merged value is the **post-image** of the inputs: walking them
//!   newest first, the first input covering the cell supplies it (a covered NULL stays NULL).
//!
//! The merged overlay's coverage for a field is the union of the inputs' coverage for it, so an
//! index's exclusion set can only grow: an index that excluded a cell still excludes it, and
//! every cell an input covered is covered by an overlay at least as new as that input.
//!
//! The result is placed at the newest input's list position, so its order relative to every
//! other overlay is the newest input's order; a list that was non-decreasing in
//! `committed_version` stays so. Only live value fields are carried: tombstoned (`-2`), other
//! negative, dropped and struct ids are left behind, and inputs carrying none of those produce
//! no overlay at all. Values of deleted offsets are carried too: coverage is physical and
//! outlives the deletion vector, and deletions still beat the merged overlay on read.

use std::collections::{BTreeMap, BTreeSet};

use roaring::RoaringBitmap;

use super::{CompactionError, carried_value_fields, path_in_use};
use crate::error::Result;
use crate::model::{Column, Coverage, DataFile, FieldId, Fragment, Overlay, Schema, Value};

/// Merges the overlays at `positions` (indices into `fragment.overlays`, any order) into one
/// overlay whose data file is `path`, and returns the fragment with it in their place.
///
/// Refused ([`CompactionError`]): fewer than two positions, a repeated or missing position, a
/// path already used by the fragment, or inputs that are not contiguous in
/// [`crate::resolve::precedence`] (the error names the overlay in between). An input value column
/// whose length differs from its coverage is [`crate::Error::ValueCountMismatch`].
pub fn merge_overlays(
    schema: &Schema,
    fragment: &Fragment,
    positions: &[usize],
    path: &str,
) -> Result<Fragment> {
    let inputs = check_inputs(fragment, positions)?;
    check_contiguous(fragment, &inputs)?;
    merged_in_place(schema, fragment, &inputs, path)
}

/// The fragment a caller states when it merges the overlays at `positions` into one overlay
/// at `path`, whether or not they are contiguous: the inputs' post-image, with their maximum
/// committed_version, at the newest input's list position. [`merge_overlays`] is this once the
/// inputs are known to be contiguous; without that check it is the list a caller-built commit
/// hands a committer, which the committer must then judge ([`mod@super::stated_merge`]).
///
/// Refused as [`merge_overlays`] is, except for contiguity.
pub fn stated_merge(
    schema: &Schema,
    fragment: &Fragment,
    positions: &[usize],
    path: &str,
) -> Result<Fragment> {
    let inputs = check_inputs(fragment, positions)?;
    merged_in_place(schema, fragment, &inputs, path)
}

/// The fragment with the post-image of `inputs` at the newest input's list position and the
/// other inputs removed.
fn merged_in_place(
    schema: &Schema,
    fragment: &Fragment,
    inputs: &BTreeSet<usize>,
    path: &str,
) -> Result<Fragment> {
    if path_in_use(std::iter::once(fragment), path) {
        return Err(CompactionError::PathInUse {
            path: path.to_string(),
        }
        .into());
    }
    let order = newest_first(fragment, inputs);
    let Some(&newest) = order.first() else {
        // check_inputs guarantees at least two inputs.
        return Err(CompactionError::TooFewInputs {
            fragment: fragment.id,
            count: 0,
        }
        .into());
    };
    let merged = post_image(schema, fragment, &order, path)?;
    let mut result = fragment.clone();
    result.overlays = Vec::with_capacity(fragment.overlays.len());
    for (position, overlay) in fragment.overlays.iter().enumerate() {
        if position == newest {
            result.overlays.extend(merged.clone());
        } else if !inputs.contains(&position) {
            result.overlays.push(overlay.clone());
        }
    }
    Ok(result)
}

/// Checks count, range and uniqueness of the requested positions.
fn check_inputs(fragment: &Fragment, positions: &[usize]) -> Result<BTreeSet<usize>> {
    let id = fragment.id;
    if positions.len() < 2 {
        return Err(CompactionError::TooFewInputs {
            fragment: id,
            count: positions.len(),
        }
        .into());
    }
    let mut inputs = BTreeSet::new();
    for &position in positions {
        if position >= fragment.overlays.len() {
            let overlays = fragment.overlays.len();
            return Err(CompactionError::InputOutOfRange {
                fragment: id,
                position,
                overlays,
            }
            .into());
        }
        if !inputs.insert(position) {
            return Err(CompactionError::DuplicateInput {
                fragment: id,
                position,
            }
            .into());
        }
    }
    Ok(inputs)
}

/// The inputs in precedence order, newest first.
fn newest_first(fragment: &Fragment, inputs: &BTreeSet<usize>) -> Vec<usize> {
    crate::resolve::precedence(fragment)
        .into_iter()
        .filter(|p| inputs.contains(p))
        .collect()
}

/// The contiguity rule of a merge ([OVL-MERGE-1]): no overlay outside `inputs` ranks, in
/// [`crate::resolve::precedence`], between the newest and the oldest of them. The refusal names
/// the overlay in between. The kit's history judge (`validate`) recognises a written merge by
/// another rule on purpose: the output replaces a run contiguous in the list's *stored* order
/// ([OVL-MERGE-4]), and then judges the cells.
pub(super) fn check_contiguous(
    fragment: &Fragment,
    inputs: &BTreeSet<usize>,
) -> std::result::Result<(), CompactionError> {
    let order = crate::resolve::precedence(fragment);
    let ranks: Vec<usize> = order
        .iter()
        .enumerate()
        .filter(|(_, p)| inputs.contains(p))
        .map(|(r, _)| r)
        .collect();
    let (Some(&first), Some(&last)) = (ranks.first(), ranks.last()) else {
        return Err(CompactionError::TooFewInputs {
            fragment: fragment.id,
            count: 0,
        });
    };
    let span = order.get(first..=last).unwrap_or(&[]);
    if let Some(&between) = span.iter().find(|p| !inputs.contains(p)) {
        let version = |p: usize| fragment.overlays.get(p).map_or(0, |o| o.committed_version);
        let other = fragment.overlays.get(between);
        return Err(CompactionError::NonContiguous {
            fragment: fragment.id,
            oldest_version: order.get(last).map_or(0, |&p| version(p)),
            newest_version: order.get(first).map_or(0, |&p| version(p)),
            intervening_position: between,
            intervening_version: version(between),
            intervening_path: other.map_or_else(String::new, |o| o.file.path.clone()),
        });
    }
    Ok(())
}

/// The merged overlay of the inputs listed newest first; `None` when they carry no live value
/// field.
fn post_image(
    schema: &Schema,
    fragment: &Fragment,
    newest_first: &[usize],
    path: &str,
) -> Result<Option<Overlay>> {
    let inputs: Vec<&Overlay> = newest_first
        .iter()
        .filter_map(|&p| fragment.overlays.get(p))
        .collect();
    let carried: BTreeSet<FieldId> = inputs
        .iter()
        .flat_map(|o| carried_value_fields(schema, o))
        .collect();
    // Schema order, so the merged file lists its fields the way a writer would.
    let fields: Vec<FieldId> = schema
        .fields()
        .iter()
        .map(|f| f.id)
        .filter(|id| carried.contains(id))
        .collect();
    if fields.is_empty() {
        return Ok(None);
    }
    let mut columns = Vec::with_capacity(fields.len());
    let mut bitmaps = Vec::with_capacity(fields.len());
    for &field in &fields {
        // offset -> value; the first (newest) input to cover an offset claims it.
        let mut cells: BTreeMap<u32, Value> = BTreeMap::new();
        for overlay in &inputs {
            let Some((bitmap, values)) =
                crate::resolve::covered_values(overlay, fragment.id, field)?
            else {
                continue;
            };
            for (rank, offset) in bitmap.iter().enumerate() {
                cells
                    .entry(offset)
                    .or_insert_with(|| values.value(rank).unwrap_or(Value::Null));
            }
        }
        // BTreeMap iteration is ascending by offset: exactly rank order.
        bitmaps.push(cells.keys().copied().collect::<RoaringBitmap>());
        let values: Vec<Value> = cells.into_values().collect();
        columns.push(Column::for_field(
            schema,
            field,
            &values,
            fragment.id,
            path,
        )?);
    }
    let coverage = match bitmaps.split_first() {
        Some((first, rest)) if rest.iter().all(|b| b == first) => Coverage::Dense(first.clone()),
        _ => Coverage::Sparse(bitmaps),
    };
    let committed_version = inputs
        .iter()
        .map(|o| o.committed_version)
        .max()
        .unwrap_or(0);
    Ok(Some(Overlay {
        file: DataFile {
            path: path.to_string(),
            fields,
            columns,
        },
        coverage,
        committed_version,
    }))
}

#[cfg(test)]
mod tests {
    use crate::model::cols;
    use proptest::prelude::*;

    use super::*;
    use crate::ErrorClass;
    use crate::error::Error;
    use crate::model::{DataType, Field, TOMBSTONE_FIELD_ID};
    use crate::resolve::resolve_column;

    fn bitmap(offsets: &[u32]) -> RoaringBitmap {
        offsets.iter().copied().collect()
    }

    fn ints(values: &[i32]) -> Vec<Value> {
        values.iter().map(|&v| Value::Int32(v)).collect()
    }

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new(0, "a", DataType::Int32),
            Field::new(1, "b", DataType::Int32),
            Field::new(2, "s", DataType::Struct),
            Field::child(3, 2, "x", DataType::Int32),
        ])
        .unwrap()
    }

    fn overlay(
        path: &str,
        version: u64,
        field: FieldId,
        offsets: &[u32],
        values: &[i32],
    ) -> Overlay {
        Overlay {
            file: DataFile {
                path: path.into(),
                fields: vec![field],
                columns: cols(vec![ints(values)]),
            },
            coverage: Coverage::Dense(bitmap(offsets)),
            committed_version: version,
        }
    }

    /// Four rows, fields a, b and s.x in the base; overlays at v10, v30, v50 on field a.
    fn fragment() -> Fragment {
        let mut f = Fragment::new(
            7,
            "base.lance",
            vec![0, 1, 2, 3],
            cols(vec![
                ints(&[1, 2, 3, 4]),
                ints(&[5, 6, 7, 8]),
                vec![Value::Struct(vec![]); 4],
                ints(&[9, 9, 9, 9]),
            ]),
        );
        f.overlays = vec![
            overlay("v10.lance", 10, 0, &[0, 1], &[100, 101]),
            overlay("v30.lance", 30, 0, &[1, 2], &[300, 302]),
            overlay("v50.lance", 50, 0, &[2, 3], &[500, 503]),
        ];
        f
    }

    fn resolved(schema: &Schema, f: &Fragment) -> Vec<Vec<Option<Value>>> {
        schema
            .fields()
            .iter()
            .map(|sf| resolve_column(schema, f, sf.id).unwrap())
            .collect()
    }

    #[test]
    fn merging_v10_and_v50_around_v30_is_refused_naming_v30() {
        // covers: OVL-MERGE-1
        let err = merge_overlays(&schema(), &fragment(), &[0, 2], "m.lance").unwrap_err();
        assert_eq!(err.class(), ErrorClass::Refused);
        assert_eq!(err.code(), "non_contiguous_merge");
        match err {
            Error::Compaction(CompactionError::NonContiguous {
                intervening_position,
                intervening_version,
                oldest_version,
                newest_version,
                ..
            }) => {
                assert_eq!((intervening_position, intervening_version), (1, 30));
                assert_eq!((oldest_version, newest_version), (10, 50));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn merging_v30_and_v50_takes_the_newest_value_per_offset() {
        // covers: OVL-MERGE-2, OVL-MERGE-3, OVL-MERGE-4
        let s = schema();
        let before = fragment();
        let after = merge_overlays(&s, &before, &[2, 1], "m.lance").unwrap();
        assert_eq!(after.overlays.len(), 2);
        let merged = &after.overlays[1];
        assert_eq!(merged.committed_version, 50);
        assert_eq!(merged.coverage, Coverage::Dense(bitmap(&[1, 2, 3])));
        // Offset 2 is covered by both: v50's 500 wins over v30's 302.
        assert_eq!(merged.file.columns, cols(vec![ints(&[300, 500, 503])]));
        assert_eq!(after.overlays[0].file.path, "v10.lance");
        assert_eq!(resolved(&s, &before), resolved(&s, &after));
    }

    #[test]
    fn bad_positions_are_refused_with_their_own_codes() {
        let (s, f) = (schema(), fragment());
        let code = |p: &[usize]| merge_overlays(&s, &f, p, "m.lance").unwrap_err().code();
        assert_eq!(code(&[1]), "too_few_inputs");
        assert_eq!(code(&[]), "too_few_inputs");
        assert_eq!(code(&[1, 1]), "duplicate_input");
        assert_eq!(code(&[1, 3]), "input_out_of_range");
        let err = merge_overlays(&s, &f, &[0, 1], "v50.lance").unwrap_err();
        assert_eq!(err.code(), "path_in_use");
    }

    #[test]
    fn fields_covering_different_offsets_give_a_per_field_overlay() {
        // covers: OVL-MERGE-2, OVL-SHAPE-1, OVL-SHAPE-2
        let s = schema();
        let mut f = fragment();
        f.overlays = vec![
            overlay("a.lance", 2, 0, &[0], &[10]),
            overlay("b.lance", 3, 1, &[1, 2], &[20, 21]),
        ];
        let after = merge_overlays(&s, &f, &[0, 1], "m.lance").unwrap();
        let merged = &after.overlays[0];
        assert_eq!(merged.file.fields, vec![0, 1]);
        assert_eq!(
            merged.coverage,
            Coverage::Sparse(vec![bitmap(&[0]), bitmap(&[1, 2])])
        );
        assert_eq!(resolved(&s, &f), resolved(&s, &after));
    }

    #[test]
    fn a_covered_null_stays_null_and_dead_ids_are_not_carried() {
        // covers: OVL-MERGE-2, OVL-NULL-1, OVL-TOMB-1, OVL-TOMB-4, OVL-SHAPE-5
        let s = schema();
        let mut f = fragment();
        let mut older = overlay("old.lance", 2, 1, &[0, 1], &[1, 1]);
        older.file.fields = vec![TOMBSTONE_FIELD_ID];
        let newer = Overlay {
            file: DataFile {
                path: "new.lance".into(),
                fields: vec![0, 42, 2],
                columns: cols(vec![vec![Value::Null], ints(&[1]), vec![Value::Null]]),
            },
            coverage: Coverage::Dense(bitmap(&[3])),
            committed_version: 3,
        };
        f.overlays = vec![overlay("a.lance", 1, 0, &[3], &[77]), older, newer];
        let after = merge_overlays(&s, &f, &[0, 1, 2], "m.lance").unwrap();
        assert_eq!(after.overlays.len(), 1);
        let merged = &after.overlays[0];
        assert_eq!(merged.file.fields, vec![0]);
        assert_eq!(merged.file.columns[0].values(), vec![Value::Null]);
        assert_eq!(merged.file.columns.len(), 1);
        assert_eq!(merged.committed_version, 3);
        assert_eq!(resolved(&s, &f), resolved(&s, &after));
    }

    #[test]
    fn inputs_with_no_live_field_leave_no_overlay() {
        // covers: OVL-TOMB-3, OVL-MERGE-4
        let s = schema();
        let mut f = fragment();
        f.overlays[0].file.fields = vec![TOMBSTONE_FIELD_ID];
        f.overlays[1].file.fields = vec![99];
        let after = merge_overlays(&s, &f, &[0, 1], "m.lance").unwrap();
        assert_eq!(after.overlays.len(), 1);
        assert_eq!(after.overlays[0].file.path, "v50.lance");
        assert_eq!(resolved(&s, &f), resolved(&s, &after));
    }

    #[test]
    fn the_merged_overlay_takes_the_newest_inputs_list_position() {
        // covers: OVL-MERGE-4
        let s = schema();
        let mut f = fragment();
        // Stored out of order: precedence is v50(#2), v30(#0), v10(#1).
        f.overlays = vec![
            overlay("v30.lance", 30, 0, &[1, 2], &[300, 302]),
            overlay("v10.lance", 10, 0, &[0, 1], &[100, 101]),
            overlay("v50.lance", 50, 0, &[2, 3], &[500, 503]),
        ];
        let after = merge_overlays(&s, &f, &[0, 2], "m.lance").unwrap();
        let paths: Vec<&str> = after
            .overlays
            .iter()
            .map(|o| o.file.path.as_str())
            .collect();
        assert_eq!(paths, ["v10.lance", "m.lance"]);
        assert_eq!(resolved(&s, &f), resolved(&s, &after));
    }

    // ---- property test -------------------------------------------------------------------

    /// One generated overlay: committed_version, then per field (a, b, s.x) a coverage mask
    /// over 8 rows (None: field not carried) and values (None: NULL).
    type GenOverlay = (u64, Vec<Option<Vec<(bool, Option<i32>)>>>);

    const ROWS: usize = 8;
    const VALUE_FIELDS: [FieldId; 3] = [0, 1, 3];

    fn gen_overlay() -> impl Strategy<Value = GenOverlay> {
        let cell = (any::<bool>(), proptest::option::of(-50i32..50));
        let field = proptest::option::of(proptest::collection::vec(cell, ROWS));
        (
            1u64..6,
            proptest::collection::vec(field, VALUE_FIELDS.len()),
        )
    }

    fn build(overlays: &[GenOverlay], deleted: &[bool], rotate: usize) -> Fragment {
        let mut f = Fragment::new(
            1,
            "base.lance",
            vec![0, 1, 2, 3],
            cols(vec![
                ints(&[1, 2, 3, 4, 5, 6, 7, 8]),
                ints(&[11, 12, 13, 14, 15, 16, 17, 18]),
                vec![Value::Struct(vec![]); ROWS],
                ints(&[21, 22, 23, 24, 25, 26, 27, 28]),
            ]),
        );
        f.deletions = deleted
            .iter()
            .enumerate()
            .filter(|(_, d)| **d)
            .map(|(i, _)| i as u32)
            .collect();
        for (i, (version, per_field)) in overlays.iter().enumerate() {
            let mut file = DataFile {
                path: format!("o{i}.lance"),
                fields: vec![],
                columns: cols(vec![]),
            };
            let mut bitmaps = vec![];
            for (field, cells) in VALUE_FIELDS.iter().zip(per_field) {
                let Some(cells) = cells else { continue };
                let covered: Vec<(u32, Value)> = cells
                    .iter()
                    .enumerate()
                    .filter(|(_, (c, _))| *c)
                    .map(|(o, (_, v))| (o as u32, v.map_or(Value::Null, Value::Int32)))
                    .collect();
                file.fields.push(*field);
                bitmaps.push(covered.iter().map(|(o, _)| *o).collect::<RoaringBitmap>());
                let values: Vec<Value> = covered.into_iter().map(|(_, v)| v).collect();
                file.columns.extend(cols(vec![values]));
            }
            f.overlays.push(Overlay {
                file,
                coverage: Coverage::Sparse(bitmaps),
                committed_version: *version,
            });
        }
        // Commits keep stored lists non-decreasing in committed_version; a reader still has to
        // cope with any stored order, so `rotate` stirs it.
        f.overlays.sort_by_key(|o| o.committed_version);
        let n = f.overlays.len().max(1);
        f.overlays.rotate_left(rotate % n);
        f
    }

    fn covered_cells(f: &Fragment, positions: &[usize]) -> BTreeSet<(FieldId, u32)> {
        let mut out = BTreeSet::new();
        for &p in positions {
            for field in VALUE_FIELDS {
                if let Some((_, b)) = crate::resolve::coverage_of(&f.overlays[p], field) {
                    out.extend(b.iter().map(|o| (field, o)));
                }
            }
        }
        out
    }

    proptest! {
        #[test]
        fn merging_a_contiguous_range_resolves_identically(
            overlays in proptest::collection::vec(gen_overlay(), 2..6),
            deleted in proptest::collection::vec(any::<bool>(), ROWS),
            start in 0usize..6,
            len in 2usize..6,
            rotate in proptest::sample::select(vec![0usize, 0, 1, 2]),
        ) {
            // covers: OVL-MERGE-2, OVL-MERGE-3, OVL-MERGE-4, OVL-MERGE-5, OVL-DEL-2
            let s = schema();
            let f = build(&overlays, &deleted, rotate);
            let sorted = f.overlays.windows(2).all(|w| w[0].committed_version <= w[1].committed_version);
            prop_assert!(f.validate(&s, 10).is_ok());
            let order = crate::resolve::precedence(&f);
            let start = start % (order.len() - 1);
            let end = (start + len).min(order.len());
            let positions: Vec<usize> = order[start..end].to_vec();
            let after = merge_overlays(&s, &f, &positions, "merged.lance").unwrap();
            prop_assert!(after.validate(&s, 10).is_ok());
            prop_assert_eq!(resolved(&s, &f), resolved(&s, &after));
            prop_assert!(after.overlays.len() < f.overlays.len());
            // A committer handed the merge as a caller states it accepts it (OVL-MERGE-6).
            prop_assert_eq!(super::super::check_stated_merge(&s, &f, &after), Ok(()));
            // Nothing but the overlay list changes.
            prop_assert_eq!((&after.files, &after.deletions, &after.lineage), (&f.files, &f.deletions, &f.lineage));
            prop_assert_eq!(after.physical_rows, f.physical_rows);
            // A non-decreasing list stays non-decreasing.
            if sorted {
                prop_assert!(after.overlays.windows(2).all(|w| w[0].committed_version <= w[1].committed_version));
            }
            // Exclusion can only grow: the merged overlay covers every cell an input covered,
            // at the newest input's version.
            let newest = f.overlays[order[start]].committed_version;
            if let Some(merged) = after.overlays.iter().find(|o| o.file.path == "merged.lance") {
                prop_assert_eq!(merged.committed_version, newest);
                let all: Vec<usize> = (0..after.overlays.len())
                    .filter(|&p| after.overlays[p].file.path == "merged.lance")
                    .collect();
                prop_assert_eq!(covered_cells(&after, &all), covered_cells(&f, &positions));
            } else {
                prop_assert!(covered_cells(&f, &positions).is_empty());
            }
        }

        #[test]
        fn a_range_with_a_gap_is_always_refused(
            overlays in proptest::collection::vec(gen_overlay(), 3..6),
            start in 0usize..6,
            gap in 1usize..5,
            rotate in 0usize..3,
        ) {
            // covers: OVL-MERGE-1
            let s = schema();
            let f = build(&overlays, &[false; ROWS], rotate);
            let order = crate::resolve::precedence(&f);
            let n = order.len();
            let first = start % (n - 2);
            let last = first + 2 + gap % (n - first - 2);
            // Keep both ends, drop one overlay strictly between them.
            let dropped = first + 1 + gap % (last - first - 1);
            let positions: Vec<usize> =
                (first..=last).filter(|&r| r != dropped).map(|r| order[r]).collect();
            let err = merge_overlays(&s, &f, &positions, "merged.lance").unwrap_err();
            prop_assert_eq!(err.code(), "non_contiguous_merge");
            match err {
                Error::Compaction(CompactionError::NonContiguous { intervening_position, .. }) => {
                    prop_assert_eq!(intervening_position, order[dropped]);
                }
                other => prop_assert!(false, "unexpected {:?}", other),
            }
            // Stated by a caller all the same, the committer refuses it (OVL-MERGE-6).
            let stated = stated_merge(&s, &f, &positions, "merged.lance").unwrap();
            let err = super::super::check_stated_merge(&s, &f, &stated).unwrap_err();
            prop_assert_eq!(Error::from(err).code(), "non_contiguous_merge");
        }
    }
}
