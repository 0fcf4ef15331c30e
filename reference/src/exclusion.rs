//! Exclusion sets: which rows of a fragment an index must not trust.
//!
//! Invariant: **every cell changed after an index was built is in that index's exclusion set.**
//! An index is frozen at its `dataset_version`. After it, a writer changes a cell of an existing
//! fragment only by adding an overlay, and that overlay's `committed_version` is the version of
//! the commit adding it, so it is strictly greater than the `dataset_version` of every index that
//! already existed. The exclusion set of index `I` in fragment `F` is therefore the union, over
//! `F`'s overlays with `committed_version > I.dataset_version`, of the coverage bitmaps of every
//! overlay field position whose live id is *related* to one of `I.fields`: the same field, a
//! descendant of one (an overlay on `address.zip` for an index on `address`), or an ancestor of
//! one. The set may hold more rows than strictly changed (the query re-evaluates them, which is
//! harmless); it never holds fewer.
//!
//! Decisions, and why:
//!
//! - **Strictly greater.** An overlay with `committed_version <= dataset_version` was visible to
//!   the index build, so its values are already in the index; excluding it would only cost work.
//!   `committed_version` is the version at which the overlay became *effective*, never the
//!   version its writer read: an overlay that read version 5 and committed at 6, racing an index
//!   that read 5 and committed at 7 with `dataset_version = 5`, must be excluded, and only the
//!   effective version (`6 > 5`) says so. A stamped read version (`5 > 5`) would let the index
//!   serve a stale value.
//! - **Field-aware.** Only positions whose id relates to an indexed field count; an overlay that
//!   touches only unrelated columns excludes nothing. All of `Index::fields` count (covering
//!   fields too), not just the key. Tombstones (`-2`), other negative ids, and ids no longer in
//!   the schema (dropped fields) never match: their positions carry no readable values.
//! - **Struct positions never match.** A struct id in an overlay is a container: it supplies no
//!   cell value and its coverage is ignored, for resolution and for exclusion alike (the kit's
//!   spec, OVL-SHAPE-5). A struct's cells change only through its leaf children, and those are
//!   related both to an index on the struct (as descendants) and to an index on themselves. In
//!   this type system every ancestor is a struct, so the ancestor clause never fires; it is kept
//!   for container types that carry whole-value cells. (Lance counts a struct ancestor's
//!   coverage too; that only adds rows that re-evaluate to the same answer.)
//! - **Deleted offsets stay in the set.** Coverage includes deleted rows and is stable as the
//!   deletion vector changes, so the set is computed from overlays alone. Deleted rows are
//!   removed separately by the query (deletions apply to index results and to re-evaluation
//!   alike), so keeping them here changes no result and keeps the set independent of the
//!   deletion file.
//! - **Uncovered fragments get an empty set.** A fragment outside the index's
//!   `fragment_bitmap` is not answered by the index at all: every live row goes to the flat
//!   path, so there is nothing to exclude. A missing `fragment_bitmap` covers no fragment
//!   (OVL-IDX-6): read as "every fragment", it would hide the rows of a fragment appended after
//!   the build, which has no index entries and no overlay to exclude.

use std::collections::BTreeMap;

use roaring::RoaringBitmap;

use crate::model::{DataType, FieldId, Fragment, Index, Overlay, Schema, Snapshot};

/// Whether `overlay` is newer than `index`: it became effective strictly after the version the
/// index was built from, so the index never saw its values.
pub fn is_newer_than_index(overlay: &Overlay, index: &Index) -> bool {
    overlay.committed_version > index.dataset_version
}

/// Whether an overlay position carrying `field` can change a value `index` holds: `field` is a
/// live, non-struct schema field equal to, a descendant of, or an ancestor of one of the
/// indexed fields.
pub fn affects_index(schema: &Schema, index: &Index, field: FieldId) -> bool {
    let carries_cells = match schema.field(field) {
        Some(f) => f.data_type != DataType::Struct,
        None => false, // a dropped field, a tombstone or another reserved id
    };
    field >= 0
        && carries_cells
        && index
            .fields
            .iter()
            .any(|&indexed| schema.related(indexed, field))
}

/// The rows of `fragment` whose indexed values `index` may hold stale (see the module docs).
/// Empty when the index does not cover the fragment. Deleted offsets are kept.
pub fn exclusion_set(schema: &Schema, index: &Index, fragment: &Fragment) -> RoaringBitmap {
    let mut set = RoaringBitmap::new();
    if !index.covers(fragment.id) {
        return set;
    }
    for overlay in fragment
        .overlays
        .iter()
        .filter(|o| is_newer_than_index(o, index))
    {
        for (position, &field) in overlay.file.fields.iter().enumerate() {
            if !affects_index(schema, index, field) {
                continue;
            }
            if let Some(bitmap) = overlay.coverage.at(position) {
                set |= bitmap;
            }
        }
    }
    set
}

/// The exclusion sets of a whole snapshot, keyed by (index name, fragment id).
///
/// Every fragment an index covers has an entry, empty sets included, so "nothing to exclude"
/// is stated rather than implied. Fragments an index does not cover have no entry: their rows
/// take the flat path. When two indices share a name, the first one (the one
/// [`Snapshot::index`] returns) is used.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExclusionSets {
    /// The sets, ordered by index name then fragment id.
    pub sets: BTreeMap<(String, u64), RoaringBitmap>,
}

impl ExclusionSets {
    /// Computes the exclusion set of every (index, covered fragment) pair of `snapshot`.
    pub fn of_snapshot(snapshot: &Snapshot) -> ExclusionSets {
        let mut sets = BTreeMap::new();
        for (i, index) in snapshot.indices.iter().enumerate() {
            if snapshot.indices[..i]
                .iter()
                .any(|earlier| earlier.name == index.name)
            {
                continue;
            }
            for fragment in snapshot.fragments.iter().filter(|f| index.covers(f.id)) {
                let set = exclusion_set(&snapshot.schema, index, fragment);
                sets.insert((index.name.clone(), fragment.id), set);
            }
        }
        ExclusionSets { sets }
    }

    /// The set of `index` in `fragment`; `None` when the index does not cover the fragment (or
    /// does not exist).
    pub fn get(&self, index: &str, fragment: u64) -> Option<&RoaringBitmap> {
        self.sets.get(&(index.to_string(), fragment))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Column, cols};
    use crate::model::{
        Coverage, DataFile, Field, IndexKind, ROW_ID_FIELD_ID, TOMBSTONE_FIELD_ID, Value,
    };
    use crate::worked_example::{self, AGE, AGE_INDEX, NAME};

    fn bitmap(offsets: &[u32]) -> RoaringBitmap {
        offsets.iter().copied().collect()
    }

    /// The worked example after step 1: the age overlay committed at version 2.
    fn version_2() -> Snapshot {
        let mut snapshot = worked_example::version_1();
        let mut overlay = worked_example::step_1_overlay();
        overlay.committed_version = 2;
        snapshot.fragments[0].overlays.push(overlay);
        snapshot.version = 2;
        snapshot.validate().unwrap();
        snapshot
    }

    fn age_index(snapshot: &Snapshot) -> &Index {
        snapshot.index(AGE_INDEX).unwrap()
    }

    /// An overlay carrying `fields` densely over `offsets`, every value NULL.
    fn null_overlay(fields: Vec<FieldId>, offsets: &[u32], committed_version: u64) -> Overlay {
        let columns = cols(
            fields
                .iter()
                .map(|_| vec![Value::Null; offsets.len()])
                .collect(),
        );
        Overlay {
            file: DataFile {
                path: "overlay.lance".into(),
                fields,
                columns,
            },
            coverage: Coverage::Dense(bitmap(offsets)),
            committed_version,
        }
    }

    #[test]
    fn worked_example_step_3_excludes_the_age_overlay() {
        // covers: OVL-IDX-1
        let snapshot = version_2();
        let set = exclusion_set(
            &snapshot.schema,
            age_index(&snapshot),
            &snapshot.fragments[0],
        );
        assert_eq!(set, bitmap(&[1, 3]));
    }

    #[test]
    fn an_index_built_at_the_overlay_version_excludes_nothing() {
        // covers: OVL-IDX-1, OVL-IDX-2
        let mut snapshot = version_2();
        snapshot.indices[0].dataset_version = 2; // committed_version == dataset_version
        let set = exclusion_set(
            &snapshot.schema,
            age_index(&snapshot),
            &snapshot.fragments[0],
        );
        assert!(set.is_empty());
        snapshot.indices[0].dataset_version = 1;
        let set = exclusion_set(
            &snapshot.schema,
            age_index(&snapshot),
            &snapshot.fragments[0],
        );
        assert_eq!(set, bitmap(&[1, 3]));
    }

    #[test]
    fn the_read_version_race_is_excluded_by_the_effective_version() {
        // covers: OVL-IDX-1
        // The spec's note: the overlay read version 5 and became effective at 6; the index read
        // version 5 and so records dataset_version 5.
        let mut snapshot = version_2();
        snapshot.version = 7;
        snapshot.fragments[0].overlays[0].committed_version = 6;
        snapshot.indices[0].dataset_version = 5;
        let set = exclusion_set(
            &snapshot.schema,
            age_index(&snapshot),
            &snapshot.fragments[0],
        );
        assert_eq!(set, bitmap(&[1, 3]));
    }

    #[test]
    fn an_overlay_on_another_column_excludes_nothing() {
        // covers: OVL-IDX-4
        let mut snapshot = worked_example::version_1();
        snapshot.version = 2;
        let mut overlay = null_overlay(vec![NAME], &[0, 2], 2);
        overlay.file.columns = cols(vec![vec![Value::Utf8("A".into()), Value::Utf8("C".into())]]);
        snapshot.fragments[0].overlays.push(overlay);
        snapshot.validate().unwrap();
        let set = exclusion_set(
            &snapshot.schema,
            age_index(&snapshot),
            &snapshot.fragments[0],
        );
        assert!(set.is_empty());
    }

    #[test]
    fn a_sparse_overlay_excludes_only_the_indexed_fields_bitmap() {
        // covers: OVL-IDX-1, OVL-IDX-4
        let mut snapshot = worked_example::version_1();
        snapshot.version = 2;
        snapshot.fragments[0].overlays.push(Overlay {
            file: DataFile {
                path: "sparse.lance".into(),
                fields: vec![NAME, AGE],
                columns: cols(vec![vec![Value::Null; 2], vec![Value::Null]]),
            },
            coverage: Coverage::Sparse(vec![bitmap(&[0, 1]), bitmap(&[2])]),
            committed_version: 2,
        });
        snapshot.validate().unwrap();
        let set = exclusion_set(
            &snapshot.schema,
            age_index(&snapshot),
            &snapshot.fragments[0],
        );
        assert_eq!(set, bitmap(&[2]));
    }

    #[test]
    fn tombstoned_and_unknown_positions_never_exclude() {
        // covers: OVL-TOMB-1, OVL-TOMB-4, OVL-TOMB-5
        let mut snapshot = worked_example::version_1();
        snapshot.version = 3;
        // Position 0 once held age and is now a tombstone; position 1 is a dropped field (99);
        // position 2 is a reserved system id (-3, `_rowid`).
        snapshot.fragments[0].overlays.push(Overlay {
            file: DataFile {
                path: "old.lance".into(),
                fields: vec![TOMBSTONE_FIELD_ID, 99, ROW_ID_FIELD_ID],
                columns: cols(vec![vec![Value::Int32(1)], vec![Value::Int32(2)], vec![]]),
            },
            coverage: Coverage::Sparse(vec![bitmap(&[0]), bitmap(&[1]), bitmap(&[2])]),
            committed_version: 3,
        });
        snapshot.validate().unwrap();
        let mut index = age_index(&snapshot).clone();
        let set = exclusion_set(&snapshot.schema, &index, &snapshot.fragments[0]);
        assert!(set.is_empty());
        // Even an index that (wrongly) lists those ids matches nothing.
        index.fields = vec![TOMBSTONE_FIELD_ID, 99, ROW_ID_FIELD_ID];
        let set = exclusion_set(&snapshot.schema, &index, &snapshot.fragments[0]);
        assert!(set.is_empty());
    }

    #[test]
    fn the_set_is_the_union_of_every_newer_overlay() {
        // covers: OVL-IDX-1, OVL-IDX-2, OVL-IDX-5
        let mut snapshot = worked_example::version_1();
        snapshot.version = 4;
        snapshot.indices[0].dataset_version = 2;
        let fragment = &mut snapshot.fragments[0];
        fragment.overlays.push(null_overlay(vec![AGE], &[0], 2)); // seen by the index
        fragment.overlays.push(null_overlay(vec![AGE], &[1, 2], 3));
        fragment.overlays.push(null_overlay(vec![AGE], &[2, 3], 4)); // hides 2 on read
        snapshot.validate().unwrap();
        let set = exclusion_set(
            &snapshot.schema,
            age_index(&snapshot),
            &snapshot.fragments[0],
        );
        assert_eq!(set, bitmap(&[1, 2, 3]));
    }

    #[test]
    fn covering_fields_of_the_index_count_too() {
        // covers: OVL-IDX-3
        let mut snapshot = worked_example::version_1();
        snapshot.version = 2;
        snapshot.fragments[0]
            .overlays
            .push(null_overlay(vec![NAME], &[3], 2));
        snapshot.indices[0].fields = vec![AGE, NAME];
        let set = exclusion_set(
            &snapshot.schema,
            age_index(&snapshot),
            &snapshot.fragments[0],
        );
        assert_eq!(set, bitmap(&[3]));
    }

    #[test]
    fn deleted_offsets_are_kept_in_the_set() {
        let mut snapshot = version_2();
        snapshot.fragments[0].deletions.insert(3);
        let set = exclusion_set(
            &snapshot.schema,
            age_index(&snapshot),
            &snapshot.fragments[0],
        );
        assert_eq!(set, bitmap(&[1, 3]));
    }

    #[test]
    fn a_fragment_outside_the_index_coverage_has_an_empty_set() {
        // covers: OVL-IDX-6
        let mut snapshot = version_2();
        snapshot.indices[0].fragment_bitmap = Some(bitmap(&[7]));
        let set = exclusion_set(
            &snapshot.schema,
            age_index(&snapshot),
            &snapshot.fragments[0],
        );
        assert!(set.is_empty());
        assert_eq!(
            ExclusionSets::of_snapshot(&snapshot).get(AGE_INDEX, 0),
            None
        );
        // A missing bitmap covers no fragment: nothing is excluded, every row is flat.
        snapshot.indices[0].fragment_bitmap = None;
        let set = exclusion_set(
            &snapshot.schema,
            age_index(&snapshot),
            &snapshot.fragments[0],
        );
        assert!(set.is_empty());
        assert_eq!(
            ExclusionSets::of_snapshot(&snapshot).get(AGE_INDEX, 0),
            None
        );
    }

    /// `id`(1), `address` struct(5) with `zip`(6) and `city`(7), one fragment of 4 rows.
    fn nested_snapshot(index_field: FieldId, overlay_field: FieldId) -> Snapshot {
        let schema = Schema::new(vec![
            Field::new(1, "id", DataType::Int64),
            Field::new(5, "address", DataType::Struct),
            Field::child(6, 5, "zip", DataType::Int32),
            Field::child(7, 5, "city", DataType::Utf8),
        ])
        .unwrap();
        let present: Column = vec![Value::Struct(vec![]); 4].into_iter().collect();
        let mut fragment = Fragment::new(
            0,
            "base.lance",
            vec![1, 5, 6, 7],
            vec![
                (0..4).map(Value::Int64).collect(),
                present,
                (0..4).map(Value::Int32).collect(),
                vec![Value::Utf8("x".into()); 4].into_iter().collect(),
            ],
        );
        fragment
            .overlays
            .push(null_overlay(vec![overlay_field], &[2], 2));
        let index = Index {
            name: "nested".into(),
            fields: vec![index_field],
            dataset_version: 1,
            fragment_bitmap: Some(bitmap(&[0])),
            kind: IndexKind::BTree,
            entries: vec![],
        };
        Snapshot {
            version: 2,
            schema,
            fragments: vec![fragment],
            indices: vec![index],
            config: Default::default(),
            stable_row_ids: false,
            next_row_id: 0,
            reader_flags: 0,
            writer_flags: 0,
        }
    }

    #[test]
    fn nested_fields_relate_through_ancestry_but_struct_coverage_is_ignored() {
        // covers: OVL-IDX-3, OVL-IDX-4, OVL-SHAPE-5
        for (index_field, overlay_field, excluded) in [
            (6, 5, false), // overlay on the struct parent (a container), index on its child
            (5, 6, true),  // overlay on a child, index on the struct
            (5, 5, false), // overlay on the struct, index on the struct
            (6, 6, true),  // the same leaf
            (6, 7, false), // a sibling leaf
            (1, 5, false), // unrelated top-level field
        ] {
            let snapshot = nested_snapshot(index_field, overlay_field);
            snapshot.validate().unwrap();
            let set = exclusion_set(
                &snapshot.schema,
                &snapshot.indices[0],
                &snapshot.fragments[0],
            );
            let expected = if excluded {
                bitmap(&[2])
            } else {
                RoaringBitmap::new()
            };
            assert_eq!(
                set, expected,
                "index on {index_field}, overlay on {overlay_field}"
            );
        }
    }

    #[test]
    fn snapshot_sets_cover_every_covered_fragment_and_only_the_first_of_a_name() {
        // covers: OVL-IDX-6
        let mut snapshot = version_2();
        let mut second = snapshot.fragments[0].clone();
        second.id = 1;
        second.overlays.clear();
        snapshot.fragments.push(second);
        snapshot.indices[0].fragment_bitmap = Some(bitmap(&[0, 1]));
        let mut shadowed = snapshot.indices[0].clone();
        shadowed.dataset_version = 2; // would exclude nothing
        snapshot.indices.push(shadowed);
        let sets = ExclusionSets::of_snapshot(&snapshot);
        assert_eq!(sets.sets.len(), 2);
        assert_eq!(sets.get(AGE_INDEX, 0), Some(&bitmap(&[1, 3])));
        assert_eq!(sets.get(AGE_INDEX, 1), Some(&RoaringBitmap::new()));
    }
}
