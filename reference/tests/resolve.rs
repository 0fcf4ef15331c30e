//! Cell resolution: precedence, rank addressing, NULL-cover versus fall-through, deletions,
//! tombstones, structs, and a differential check against a naive dense-grid oracle.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lance_conformance_test_support::dataset_scenarios::columns as cols;
use lance_reference::model::{
    Coverage, DataFile, DataType, Field, FieldId, Fragment, Overlay, Schema, Value,
};
use lance_reference::resolve::{OverlayStep, Source, explain, resolve_column};
use proptest::prelude::*;
use roaring::RoaringBitmap;

const A: FieldId = 0;
const B: FieldId = 1;

fn schema() -> Schema {
    Schema::new(vec![
        Field::new(A, "a", DataType::Int64),
        Field::new(B, "b", DataType::Utf8),
    ])
    .unwrap()
}

fn ints(v: &[i64]) -> Vec<Value> {
    v.iter().copied().map(Value::Int64).collect()
}

fn bitmap(offsets: &[u32]) -> RoaringBitmap {
    offsets.iter().copied().collect()
}

/// Six rows, a = 0..6, b = "r0".."r5".
fn base() -> Fragment {
    Fragment::new(
        7,
        "base.lance",
        vec![A, B],
        cols(vec![
            ints(&[0, 1, 2, 3, 4, 5]),
            (0..6).map(|i| Value::Utf8(format!("r{i}"))).collect(),
        ]),
    )
}

fn dense(
    path: &str,
    fields: Vec<FieldId>,
    offsets: &[u32],
    columns: Vec<Vec<Value>>,
    v: u64,
) -> Overlay {
    Overlay {
        file: DataFile {
            path: path.into(),
            fields,
            columns: cols(columns),
        },
        coverage: Coverage::Dense(bitmap(offsets)),
        committed_version: v,
    }
}

fn column(f: &Fragment, field: FieldId) -> Vec<Option<Value>> {
    resolve_column(&schema(), f, field).unwrap()
}

#[test]
fn higher_committed_version_wins_regardless_of_list_order() {
    // covers: OVL-PREC-1, OVL-PREC-2, OVL-PREC-4
    let mut f = base();
    f.overlays
        .push(dense("new.lance", vec![A], &[2], vec![ints(&[200])], 5));
    f.overlays
        .push(dense("old.lance", vec![A], &[2], vec![ints(&[100])], 3));
    assert_eq!(column(&f, A)[2], Some(Value::Int64(200)));
    let e = explain(&schema(), &f, 2, A).unwrap();
    assert_eq!(
        e.source,
        Source::Overlay {
            position: 0,
            committed_version: 5,
            rank: 0
        }
    );
}

#[test]
fn later_position_breaks_a_committed_version_tie() {
    // covers: OVL-PREC-3
    let mut f = base();
    f.overlays
        .push(dense("first.lance", vec![A], &[2], vec![ints(&[100])], 4));
    f.overlays
        .push(dense("second.lance", vec![A], &[2], vec![ints(&[200])], 4));
    assert_eq!(column(&f, A)[2], Some(Value::Int64(200)));
}

#[test]
fn value_is_fetched_at_the_rank_of_the_offset() {
    // covers: OVL-LAYOUT-1, OVL-LAYOUT-3
    let mut f = base();
    f.overlays.push(dense(
        "o.lance",
        vec![A],
        &[1, 3, 4],
        vec![ints(&[10, 30, 40])],
        2,
    ));
    assert_eq!(
        column(&f, A),
        ints(&[0, 10, 2, 30, 40, 5])
            .into_iter()
            .map(Some)
            .collect::<Vec<_>>()
    );
    let e = explain(&schema(), &f, 4, A).unwrap();
    assert_eq!(e.considered[0].step, OverlayStep::Covers { rank: 2 });
}

#[test]
fn covered_null_overrides_while_uncovered_falls_through() {
    // covers: OVL-NULL-1, OVL-NULL-2
    let mut f = base();
    f.overlays
        .push(dense("o.lance", vec![A], &[1], vec![vec![Value::Null]], 2));
    let a = column(&f, A);
    assert_eq!(a[1], Some(Value::Null));
    assert_eq!(a[2], Some(Value::Int64(2)));
}

#[test]
fn older_overlay_applies_where_the_newer_one_does_not_cover() {
    // covers: OVL-PREC-1
    let mut f = base();
    f.overlays.push(dense(
        "old.lance",
        vec![A],
        &[1, 2],
        vec![ints(&[11, 12])],
        2,
    ));
    f.overlays
        .push(dense("new.lance", vec![A], &[2], vec![ints(&[22])], 3));
    let a = column(&f, A);
    assert_eq!(a[1], Some(Value::Int64(11)));
    assert_eq!(a[2], Some(Value::Int64(22)));
}

#[test]
fn field_without_base_is_null_unless_covered() {
    // covers: OVL-NULL-3, OVL-NULL-4
    let schema = Schema::new(vec![
        Field::new(A, "a", DataType::Int64),
        Field::new(B, "b", DataType::Utf8),
        Field::new(2, "c", DataType::Float64),
    ])
    .unwrap();
    let mut f = base();
    f.overlays.push(dense(
        "o.lance",
        vec![2],
        &[4],
        vec![vec![Value::Float64(0.5)]],
        2,
    ));
    let c = resolve_column(&schema, &f, 2).unwrap();
    assert_eq!(c[4], Some(Value::Float64(0.5)));
    assert_eq!(c[0], Some(Value::Null));
    assert_eq!(explain(&schema, &f, 0, 2).unwrap().source, Source::NoBase);
}

#[test]
fn deletion_beats_every_overlay() {
    // covers: OVL-DEL-1, OVL-DEL-2
    let mut f = base();
    f.overlays
        .push(dense("o.lance", vec![A], &[3], vec![ints(&[33])], 9));
    f.deletions.insert(3);
    assert_eq!(column(&f, A)[3], None);
    let e = explain(&schema(), &f, 3, A).unwrap();
    assert_eq!(e.source, Source::Deleted);
    assert_eq!(e.value, None);
    assert_eq!(
        e.considered.len(),
        1,
        "the dead overlay value is still shown"
    );
}

#[test]
fn sparse_overlay_columns_of_different_lengths_resolve_per_field() {
    // covers: OVL-SHAPE-2
    let mut f = base();
    f.overlays.push(Overlay {
        file: DataFile {
            path: "sparse.lance".into(),
            fields: vec![A, B],
            columns: cols(vec![ints(&[10, 50]), vec![Value::Utf8("x".into())]]),
        },
        coverage: Coverage::Sparse(vec![bitmap(&[1, 5]), bitmap(&[2])]),
        committed_version: 2,
    });
    assert_eq!(column(&f, A)[5], Some(Value::Int64(50)));
    assert_eq!(column(&f, A)[2], Some(Value::Int64(2)));
    assert_eq!(column(&f, B)[2], Some(Value::Utf8("x".into())));
    assert_eq!(column(&f, B)[1], Some(Value::Utf8("r1".into())));
}

#[test]
fn tombstoned_overlay_field_is_never_read() {
    // covers: OVL-TOMB-1
    let mut f = base();
    f.overlays.push(Overlay {
        file: DataFile {
            path: "t.lance".into(),
            fields: vec![-2, B],
            columns: cols(vec![ints(&[99]), vec![Value::Utf8("y".into())]]),
        },
        coverage: Coverage::Sparse(vec![bitmap(&[0]), bitmap(&[0])]),
        committed_version: 2,
    });
    assert_eq!(column(&f, A)[0], Some(Value::Int64(0)));
    assert_eq!(column(&f, B)[0], Some(Value::Utf8("y".into())));
    f.validate(&schema(), 2).unwrap();
}

#[test]
fn tombstoned_base_column_is_never_read() {
    let mut f = base();
    f.files[0].fields[0] = -2;
    f.files.push(DataFile {
        path: "new.lance".into(),
        fields: vec![A],
        columns: cols(vec![ints(&[9; 6])]),
    });
    assert_eq!(column(&f, A)[0], Some(Value::Int64(9)));
}

#[test]
fn struct_cell_keeps_base_validity_and_resolves_children() {
    // covers: OVL-SHAPE-5
    let schema = Schema::new(vec![
        Field::new(0, "s", DataType::Struct),
        Field::child(1, 0, "x", DataType::Int32),
        Field::child(2, 0, "y", DataType::Int32),
    ])
    .unwrap();
    let present = Value::Struct(vec![]);
    let mut f = Fragment::new(
        0,
        "b.lance",
        vec![0, 1, 2],
        cols(vec![
            vec![present.clone(), Value::Null, present],
            vec![Value::Int32(1), Value::Int32(2), Value::Int32(3)],
            vec![Value::Int32(4), Value::Int32(5), Value::Int32(6)],
        ]),
    );
    f.overlays.push(Overlay {
        file: DataFile {
            path: "o.lance".into(),
            fields: vec![0, 2],
            columns: cols(vec![vec![], vec![Value::Int32(60), Value::Int32(50)]]),
        },
        coverage: Coverage::Dense(bitmap(&[1, 2])),
        committed_version: 2,
    });
    f.overlays[0].coverage = Coverage::Sparse(vec![RoaringBitmap::new(), bitmap(&[1, 2])]);
    f.validate(&schema, 2).unwrap();
    let s = resolve_column(&schema, &f, 0).unwrap();
    assert_eq!(
        s[0],
        Some(Value::Struct(vec![Value::Int32(1), Value::Int32(4)]))
    );
    assert_eq!(
        s[1],
        Some(Value::Null),
        "struct validity comes from the base"
    );
    assert_eq!(
        s[2],
        Some(Value::Struct(vec![Value::Int32(3), Value::Int32(50)]))
    );
}

#[test]
fn struct_without_base_is_present_with_children_resolved_one_by_one() {
    // covers: OVL-NULL-6
    // The struct s (2) and its children x (3) and y (4) were added after the fragment was
    // written: no base file holds any of them. An overlay lists s and s.x, covering {1}.
    let schema = Schema::new(vec![
        Field::new(A, "a", DataType::Int64),
        Field::new(B, "b", DataType::Utf8),
        Field::new(2, "s", DataType::Struct),
        Field::child(3, 2, "x", DataType::Int32),
        Field::child(4, 2, "y", DataType::Utf8),
    ])
    .unwrap();
    let mut f = base();
    f.overlays.push(dense(
        "o.lance",
        vec![2, 3],
        &[1],
        vec![vec![Value::Struct(vec![])], vec![Value::Int32(7)]],
        2,
    ));
    f.deletions.insert(5);
    f.validate(&schema, 2).unwrap();
    let s = resolve_column(&schema, &f, 2).unwrap();
    let nulls = Some(Value::Struct(vec![Value::Null, Value::Null]));
    assert_eq!(s[0], nulls, "present, never NULL, with NULL children");
    assert_eq!(
        s[1],
        Some(Value::Struct(vec![Value::Int32(7), Value::Null])),
        "the covered child takes the overlay's value"
    );
    assert_eq!(s[4], nulls);
    assert_eq!(s[5], None, "a deleted row is not returned");
}

#[test]
fn value_count_differing_from_coverage_is_rejected() {
    // covers: OVL-LAYOUT-4
    let mut f = base();
    f.overlays
        .push(dense("short.lance", vec![A], &[1, 2], vec![ints(&[1])], 2));
    let err = resolve_column(&schema(), &f, A).unwrap_err();
    assert_eq!(err.code(), "value_count_mismatch");
    assert_eq!(
        f.validate(&schema(), 2).unwrap_err().code(),
        "value_count_mismatch"
    );
}

#[test]
fn a_value_column_longer_than_its_coverage_is_rejected() {
    // covers: OVL-LAYOUT-8
    let mut f = base();
    f.overlays
        .push(dense("long.lance", vec![A], &[1], vec![ints(&[1, 2])], 2));
    assert_eq!(
        resolve_column(&schema(), &f, A).unwrap_err().code(),
        "value_count_mismatch"
    );
    assert_eq!(
        f.validate(&schema(), 2).unwrap_err().code(),
        "value_count_mismatch"
    );
}

#[test]
fn coverage_offset_past_physical_rows_is_rejected() {
    // covers: OVL-COV-3
    let mut f = base();
    f.overlays
        .push(dense("far.lance", vec![A], &[6], vec![ints(&[1])], 2));
    assert_eq!(
        resolve_column(&schema(), &f, A).unwrap_err().code(),
        "offset_out_of_range"
    );
    let err = f.validate(&schema(), 2).unwrap_err();
    assert_eq!(err.code(), "offset_out_of_range");
    assert!(err.to_string().contains("far.lance"), "{err}");
}

#[test]
fn bitmap_count_differing_from_field_count_is_malformed() {
    // covers: OVL-SHAPE-3
    let mut f = base();
    f.overlays.push(Overlay {
        file: DataFile {
            path: "o.lance".into(),
            fields: vec![A, B],
            columns: cols(vec![ints(&[1]), vec![]]),
        },
        coverage: Coverage::Sparse(vec![bitmap(&[0])]),
        committed_version: 2,
    });
    let err = f.validate(&schema(), 2).unwrap_err();
    assert_eq!(err.code(), "field_coverage_count_mismatch");
    assert_eq!(err.class(), lance_reference::ErrorClass::Malformed);
}

#[test]
fn committed_version_zero_or_in_the_future_is_rejected() {
    // covers: OVL-VER-5
    let mut f = base();
    f.overlays
        .push(dense("o.lance", vec![A], &[0], vec![ints(&[1])], 0));
    assert_eq!(
        f.validate(&schema(), 3).unwrap_err().code(),
        "bad_committed_version"
    );
    f.overlays[0].committed_version = 4;
    assert_eq!(
        f.validate(&schema(), 3).unwrap_err().code(),
        "bad_committed_version"
    );
    f.overlays[0].committed_version = 3;
    f.validate(&schema(), 3).unwrap();
}

#[test]
fn duplicate_dropped_field_in_one_overlay_is_accepted() {
    // covers: OVL-TOMB-4
    let mut f = base();
    f.overlays.push(dense(
        "o.lance",
        vec![42, 42, A],
        &[0],
        vec![ints(&[1]), ints(&[2]), ints(&[3])],
        2,
    ));
    f.validate(&schema(), 2).unwrap();
    assert_eq!(column(&f, A)[0], Some(Value::Int64(3)));
}

#[test]
fn duplicate_live_field_in_one_overlay_is_rejected() {
    // covers: OVL-LAYOUT-5
    let mut f = base();
    f.overlays.push(dense(
        "o.lance",
        vec![A, A],
        &[0],
        vec![ints(&[1]), ints(&[2])],
        2,
    ));
    assert_eq!(
        f.validate(&schema(), 2).unwrap_err().code(),
        "duplicate_field"
    );
}

#[test]
fn dense_bitmap_is_the_coverage_of_every_field() {
    // covers: OVL-SHAPE-1
    let mut f = base();
    f.overlays.push(dense(
        "d.lance",
        vec![A, B],
        &[0, 4],
        vec![
            ints(&[7, 8]),
            vec![Value::Utf8("p".into()), Value::Utf8("q".into())],
        ],
        2,
    ));
    assert_eq!(column(&f, A)[4], Some(Value::Int64(8)));
    assert_eq!(column(&f, B)[4], Some(Value::Utf8("q".into())));
    assert_eq!(column(&f, B)[1], Some(Value::Utf8("r1".into())));
}

#[test]
fn field_live_in_two_base_files_is_rejected() {
    // covers: OVL-NULL-5
    let mut f = base();
    f.files.push(DataFile {
        path: "again.lance".into(),
        fields: vec![A],
        columns: cols(vec![ints(&[0; 6])]),
    });
    let err = f.validate(&schema(), 1).unwrap_err();
    assert_eq!(err.code(), "duplicate_field");
    assert!(err.to_string().contains("again.lance"), "{err}");
}

#[test]
fn deletion_offset_past_physical_rows_is_rejected() {
    // covers: OVL-DEL-3
    let mut f = base();
    f.deletions.insert(6);
    assert_eq!(
        f.validate(&schema(), 1).unwrap_err().code(),
        "offset_out_of_range"
    );
    assert_eq!(
        resolve_column(&schema(), &f, A).unwrap_err().code(),
        "offset_out_of_range"
    );
}

#[test]
fn base_column_of_the_wrong_length_is_rejected() {
    // covers: OVL-LAYOUT-7
    let mut f = base();
    f.files[0].columns[1] = f.files[0].columns[1].truncated(5);
    assert_eq!(
        f.validate(&schema(), 1).unwrap_err().code(),
        "base_length_mismatch"
    );
}

#[test]
fn dropped_and_system_field_ids_in_an_overlay_are_ignored() {
    // covers: OVL-TOMB-4, OVL-TOMB-5
    let mut f = base();
    f.overlays.push(Overlay {
        file: DataFile {
            path: "o.lance".into(),
            fields: vec![42, -3, A],
            columns: cols(vec![ints(&[1]), vec![Value::UInt64(9)], ints(&[5])]),
        },
        coverage: Coverage::Sparse(vec![bitmap(&[0]), bitmap(&[0]), bitmap(&[1])]),
        committed_version: 2,
    });
    f.validate(&schema(), 2).unwrap();
    assert_eq!(column(&f, A)[0], Some(Value::Int64(0)));
    assert_eq!(column(&f, A)[1], Some(Value::Int64(5)));
}

#[test]
fn empty_coverage_is_valid_and_covers_nothing() {
    // covers: OVL-COV-4
    let mut f = base();
    f.overlays
        .push(dense("empty.lance", vec![A], &[], vec![vec![]], 2));
    f.validate(&schema(), 2).unwrap();
    assert_eq!(column(&f, A), column(&base(), A));
}

// ---------------------------------------------------------------------------------------------
// Differential check: the resolver against a naive oracle that replays overlays oldest to
// newest into a dense grid (no ranks, no precedence sort, no claiming).

/// Cells an overlay covers for one field: (offset, value or NULL), offsets ascending.
type Cells = Vec<(u32, Option<i64>)>;

#[derive(Debug, Clone)]
struct Spec {
    rows: u32,
    overlays: Vec<(u64, Cells, Cells)>,
    deletions: Vec<u32>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (1u32..24).prop_flat_map(|rows| {
        let cells = proptest::collection::btree_map(0..rows, proptest::option::of(-5i64..5), 0..8)
            .prop_map(|m| m.into_iter().collect::<Vec<_>>());
        let overlay = (1u64..5, cells.clone(), cells);
        (
            Just(rows),
            proptest::collection::vec(overlay, 0..5),
            proptest::collection::vec(0..rows, 0..4),
        )
            .prop_map(|(rows, overlays, deletions)| Spec {
                rows,
                overlays,
                deletions,
            })
    })
}

fn build(spec: &Spec) -> Fragment {
    let base_a: Vec<Value> = (0..spec.rows)
        .map(|i| Value::Int64(1000 + i64::from(i)))
        .collect();
    let base_b: Vec<Value> = (0..spec.rows)
        .map(|i| Value::Utf8(format!("b{i}")))
        .collect();
    let mut f = Fragment::new(1, "base.lance", vec![A, B], cols(vec![base_a, base_b]));
    // Stored order is the generated order: versions are deliberately not sorted.
    for (i, (version, cells_a, cells_b)) in spec.overlays.iter().enumerate() {
        let to_value = |v: &Option<i64>| v.map_or(Value::Null, Value::Int64);
        let to_text = |v: &Option<i64>| v.map_or(Value::Null, |x| Value::Utf8(x.to_string()));
        f.overlays.push(Overlay {
            file: DataFile {
                path: format!("o{i}.lance"),
                fields: vec![A, B],
                columns: cols(vec![
                    cells_a.iter().map(|(_, v)| to_value(v)).collect(),
                    cells_b.iter().map(|(_, v)| to_text(v)).collect(),
                ]),
            },
            coverage: Coverage::Sparse(vec![
                cells_a.iter().map(|(o, _)| *o).collect(),
                cells_b.iter().map(|(o, _)| *o).collect(),
            ]),
            committed_version: *version,
        });
    }
    f.deletions = spec.deletions.iter().copied().collect();
    f
}

fn oracle(f: &Fragment, field: FieldId) -> Vec<Option<Value>> {
    let (_, base) = lance_reference::resolve::base_column(f, field).unwrap();
    let mut grid: Vec<Value> = base.values();
    // Oldest first: by version, then by stored position; later writes overwrite.
    let mut order: Vec<usize> = (0..f.overlays.len()).collect();
    order.sort_by_key(|&i| (f.overlays[i].committed_version, i));
    for i in order {
        let o = &f.overlays[i];
        let pos = o.file.fields.iter().position(|&x| x == field).unwrap();
        let offsets: Vec<u32> = o.coverage.at(pos).unwrap().iter().collect();
        for (k, off) in offsets.iter().enumerate() {
            grid[*off as usize] = o.file.columns[pos].value(k).unwrap();
        }
    }
    grid.into_iter()
        .enumerate()
        .map(|(i, v)| {
            if f.deletions.contains(i as u32) {
                None
            } else {
                Some(v)
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn resolver_agrees_with_a_dense_grid_replay(spec in spec()) {
        let f = build(&spec);
        let version = 5;
        prop_assert!(f.validate(&schema(), version).is_ok());
        for field in [A, B] {
            prop_assert_eq!(resolve_column(&schema(), &f, field).unwrap(), oracle(&f, field));
            for offset in 0..u64::from(spec.rows) {
                let e = explain(&schema(), &f, offset, field).unwrap();
                prop_assert_eq!(e.value, oracle(&f, field)[offset as usize].clone());
            }
        }
    }
}

/// The schema `a, st{x, y}` (ids 0, 1, 2, 3) and a four-row fragment whose v2.2 base file
/// lists the leaves only (`fields [0, 2, 3]`): the struct's validity lives in each leaf
/// column's layer, NULL at offset 1.
fn leaf_only_base() -> (Schema, Fragment) {
    use arrow_buffer::NullBuffer;
    use lance_reference::model::StructLayer;
    let schema = Schema::new(vec![
        Field::new(0, "a", DataType::Int64),
        Field::new(1, "st", DataType::Struct),
        Field::child(2, 1, "x", DataType::Int32),
        Field::child(3, 1, "y", DataType::Int32),
    ])
    .unwrap();
    let layer = || {
        vec![StructLayer::new(
            1,
            Some(NullBuffer::from(vec![true, false, true, true])),
        )]
    };
    let mut columns = cols(vec![
        ints(&[0, 1, 2, 3]),
        vec![
            Value::Int32(10),
            Value::Null,
            Value::Int32(12),
            Value::Int32(13),
        ],
        vec![
            Value::Int32(20),
            Value::Null,
            Value::Int32(22),
            Value::Int32(23),
        ],
    ]);
    columns[1] = columns[1].clone().with_struct_layers(layer());
    columns[2] = columns[2].clone().with_struct_layers(layer());
    (
        schema,
        Fragment::new(0, "base.lance", vec![0, 2, 3], columns),
    )
}

#[test]
fn a_struct_without_a_column_takes_its_validity_from_its_leaves_layer() {
    // covers: DS-LEAF-1, OVL-SHAPE-7, OVL-SHAPE-8, OVL-NULL-1
    use arrow_buffer::NullBuffer;
    use lance_reference::model::StructLayer;
    let (schema, mut f) = leaf_only_base();
    f.validate(&schema, 1).unwrap();
    let s = resolve_column(&schema, &f, 1).unwrap();
    assert_eq!(
        s,
        vec![
            Some(Value::Struct(vec![Value::Int32(10), Value::Int32(20)])),
            Some(Value::Null),
            Some(Value::Struct(vec![Value::Int32(12), Value::Int32(22)])),
            Some(Value::Struct(vec![Value::Int32(13), Value::Int32(23)])),
        ]
    );
    // A sparse v2.2 overlay over the children lists the leaves only, one bitmap each: x covers
    // {1, 2}, y covers {3}. Its x column's own struct layer says NULL at rank 1 (offset 2):
    // that leaf value is NULL, and the struct stays present (validity comes from the base).
    let mut x = cols(vec![vec![Value::Int32(61), Value::Null]]).remove(0);
    x = x.with_struct_layers(vec![StructLayer::new(
        1,
        Some(NullBuffer::from(vec![true, false])),
    )]);
    let y = cols(vec![vec![Value::Int32(73)]]).remove(0);
    f.overlays.push(Overlay {
        file: DataFile {
            path: "o.lance".into(),
            fields: vec![2, 3],
            columns: vec![x, y],
        },
        coverage: Coverage::Sparse(vec![bitmap(&[1, 2]), bitmap(&[3])]),
        committed_version: 2,
    });
    f.validate(&schema, 2).unwrap();
    let s = resolve_column(&schema, &f, 1).unwrap();
    assert_eq!(
        s,
        vec![
            Some(Value::Struct(vec![Value::Int32(10), Value::Int32(20)])),
            Some(Value::Null),
            Some(Value::Struct(vec![Value::Null, Value::Int32(22)])),
            Some(Value::Struct(vec![Value::Int32(13), Value::Int32(73)])),
        ],
        "the base's layer decides presence; an overlay's layer does not"
    );
    // The columnar path reads the same table.
    let array = lance_reference::columnar::resolve_array(&schema, &f, 1).unwrap();
    let values: Vec<Value> = (0..array.len())
        .map(|i| lance_reference::model::value_at(array.as_ref(), i).unwrap())
        .collect();
    assert_eq!(
        values,
        s.into_iter().map(Option::unwrap).collect::<Vec<_>>()
    );
}

#[test]
fn struct_sources_that_disagree_are_rejected() {
    // covers: DS-LEAF-3
    use arrow_buffer::NullBuffer;
    use lance_reference::model::StructLayer;
    // Two leaves of one v2.2 file whose layers disagree at offset 2.
    let (schema, mut f) = leaf_only_base();
    let other = StructLayer::new(1, Some(NullBuffer::from(vec![true, false, false, true])));
    let y = f.files[0].columns[2].clone();
    f.files[0].columns[2] = y.with_struct_layers(vec![other]);
    let err = f.validate(&schema, 1).unwrap_err();
    assert_eq!(err.code(), "struct_validity_mismatch");
    assert_eq!(
        err.to_string(),
        "fragment 0: struct field 1 is present at offset 2 in base.lance column of field 2 \
         but NULL in base.lance column of field 3"
    );
    // A v2.0 struct column in another base file that disagrees with the layer.
    let (schema, mut f) = leaf_only_base();
    let present = Value::Struct(vec![]);
    f.files.push(DataFile {
        path: "old.lance".into(),
        fields: vec![1],
        columns: cols(vec![vec![
            present.clone(),
            present.clone(),
            present.clone(),
            present,
        ]]),
    });
    let err = f.validate(&schema, 1).unwrap_err();
    assert_eq!(err.code(), "struct_validity_mismatch");
    // A layer with the wrong number of bits.
    let (schema, mut f) = leaf_only_base();
    let short = StructLayer::new(1, Some(NullBuffer::from(vec![true, false])));
    let x = f.files[0].columns[1].clone();
    f.files[0].columns[1] = x.with_struct_layers(vec![short]);
    assert_eq!(
        f.validate(&schema, 1).unwrap_err().code(),
        "base_length_mismatch"
    );
}
