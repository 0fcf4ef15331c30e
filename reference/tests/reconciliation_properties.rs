//! Property: reconciling a stale index with overlays gives exactly the flat answer.
//!
//! Each case builds 1–3 small fragments (up to 20 rows) with columns `a`, `b` (int32) and `v`
//! (`fixed_size_list<float32, 2>`), random NULLs, random deletions, and 0–4 overlays (dense or
//! sparse, random coverage and values, committed at versions 2..=6 in any stored order). Two
//! indices (a BTree on `a`, sometimes with `b` as a covering field, and a vector index on `v`)
//! are built at random earlier versions over random fragment coverage: their entries are the
//! values resolved with only the overlays committed at or before the index's version, and the
//! deletions of that time (a subset of today's). Tombstones are put only on overlays newer than
//! both indices, which is the only place a real writer could leave them without touching the
//! index (older ones would be a column rewrite, which must update the index itself).
//!
//! The cases are fixed (256, fixed seed), so the test is deterministic.
#![allow(clippy::unwrap_used)]

use lance_reference::exclusion::ExclusionSets;
use lance_reference::model::{
    Coverage, DataFile, DataType, Field, FieldId, Fragment, Index, IndexEntry, IndexKind, Overlay,
    Schema, Snapshot, TOMBSTONE_FIELD_ID, Value,
};
use lance_reference::query::{
    Predicate, RowRef, flat_filter, flat_top_k, reconcile, reconcile_vector,
};
use lance_reference::resolve::resolve_column;
use proptest::array::{uniform2, uniform3};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use roaring::RoaringBitmap;

const A: FieldId = 1;
const B: FieldId = 2;
const V: FieldId = 3;
const FIELDS: [FieldId; 3] = [A, B, V];
const LAST_VERSION: u64 = 6;
const SCALAR_INDEX: &str = "a_idx";
const VECTOR_INDEX: &str = "v_idx";

fn config() -> Config {
    let mut config = Config::with_cases(256);
    config.rng_seed = RngSeed::Fixed(0x6f76_6572_6c61_7973);
    config.failure_persistence = None;
    config
}

fn int_cell() -> impl Strategy<Value = Value> {
    prop_oneof![1 => Just(Value::Null), 5 => (0i32..4).prop_map(Value::Int32)]
}

fn vector_cell() -> impl Strategy<Value = Value> {
    let item = prop_oneof![1 => Just(None), 8 => (0i32..4).prop_map(|x| Some(x as f32))];
    prop_oneof![1 => Just(Value::Null), 6 => vec(item, 2).prop_map(Value::Vector)]
}

/// One value per row for `a`, `b` and `v`, in that order.
fn columns(rows: usize) -> impl Strategy<Value = [Vec<Value>; 3]> {
    (
        vec(int_cell(), rows),
        vec(int_cell(), rows),
        vec(vector_cell(), rows),
    )
        .prop_map(|(a, b, v)| [a, b, v])
}

#[derive(Debug, Clone)]
struct OverlayPlan {
    /// Which of `a`, `b`, `v` the overlay carries.
    carries: [bool; 3],
    /// Dense: `coverage[0]` is shared by every field.
    dense: bool,
    coverage: [Vec<bool>; 3],
    /// A candidate value per row; the overlay stores those at covered rows.
    values: [Vec<Value>; 3],
    committed_version: u64,
    tombstone: [bool; 3],
}

fn overlay_plan(rows: usize) -> impl Strategy<Value = OverlayPlan> {
    (
        uniform3(any::<bool>()),
        any::<bool>(),
        uniform3(vec(proptest::bool::weighted(0.3), rows)),
        columns(rows),
        2..=LAST_VERSION,
        uniform3(proptest::bool::weighted(0.2)),
    )
        .prop_map(
            |(carries, dense, coverage, values, committed_version, tombstone)| OverlayPlan {
                carries,
                dense,
                coverage,
                values,
                committed_version,
                tombstone,
            },
        )
}

#[derive(Debug, Clone)]
struct FragmentPlan {
    base: [Vec<Value>; 3],
    deleted: Vec<bool>,
    /// Of the deleted rows, those already deleted when the indices were built.
    deleted_at_build: Vec<bool>,
    overlays: Vec<OverlayPlan>,
}

fn fragment_plan() -> impl Strategy<Value = FragmentPlan> {
    (1usize..=20).prop_flat_map(|rows| {
        (
            columns(rows),
            vec(proptest::bool::weighted(0.2), rows),
            vec(any::<bool>(), rows),
            vec(overlay_plan(rows), 0..=4),
        )
            .prop_map(|(base, deleted, deleted_at_build, overlays)| FragmentPlan {
                base,
                deleted,
                deleted_at_build,
                overlays,
            })
    })
}

#[derive(Debug, Clone)]
struct IndexPlan {
    dataset_version: u64,
    /// `None`: no fragment bitmap (covers no fragment, OVL-IDX-6); else which fragment ids it
    /// covers.
    covers: Option<[bool; 3]>,
    /// The scalar index also lists `b` as a covering field.
    covering_b: bool,
}

fn index_plan() -> impl Strategy<Value = IndexPlan> {
    (
        1..=LAST_VERSION,
        proptest::option::of(uniform3(any::<bool>())),
        any::<bool>(),
    )
        .prop_map(|(dataset_version, covers, covering_b)| IndexPlan {
            dataset_version,
            covers,
            covering_b,
        })
}

#[derive(Debug, Clone)]
struct Scenario {
    fragments: Vec<FragmentPlan>,
    scalar: IndexPlan,
    vector: IndexPlan,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (vec(fragment_plan(), 1..=3), index_plan(), index_plan()).prop_map(
        |(fragments, scalar, vector)| Scenario {
            fragments,
            scalar,
            vector,
        },
    )
}

fn bitmap_of(flags: &[bool]) -> RoaringBitmap {
    (0u32..)
        .zip(flags)
        .filter(|(_, set)| **set)
        .map(|(o, _)| o)
        .collect()
}

fn schema() -> Schema {
    Schema::new(vec![
        Field::new(A, "a", DataType::Int32),
        Field::new(B, "b", DataType::Int32),
        Field::new(V, "v", DataType::FixedSizeList { dimension: 2 }),
    ])
    .unwrap()
}

fn build_overlay(plan: &OverlayPlan, tombstone_above: u64) -> Overlay {
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    let mut bitmaps = Vec::new();
    for i in (0..3).filter(|&i| plan.carries[i]) {
        let covered = if plan.dense {
            &plan.coverage[0]
        } else {
            &plan.coverage[i]
        };
        let bitmap = bitmap_of(covered);
        let values = lance_reference::model::Column::infer(
            &bitmap
                .iter()
                .map(|o| plan.values[i][o as usize].clone())
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let tombstoned = plan.tombstone[i] && plan.committed_version > tombstone_above;
        fields.push(if tombstoned {
            TOMBSTONE_FIELD_ID
        } else {
            FIELDS[i]
        });
        columns.push(values);
        bitmaps.push(bitmap);
    }
    let coverage = if plan.dense {
        Coverage::Dense(bitmap_of(&plan.coverage[0]))
    } else {
        Coverage::Sparse(bitmaps)
    };
    Overlay {
        file: DataFile {
            path: "overlay.lance".into(),
            fields,
            columns,
        },
        coverage,
        committed_version: plan.committed_version,
    }
}

/// An index as it was built at `plan.dataset_version`.
fn build_index(
    schema: &Schema,
    name: &str,
    kind: IndexKind,
    fields: Vec<FieldId>,
    plan: &IndexPlan,
    fragments: &[(Fragment, &FragmentPlan)],
) -> Index {
    let fragment_bitmap = plan.covers.map(|c| bitmap_of(&c));
    let mut index = Index {
        name: name.into(),
        fields,
        dataset_version: plan.dataset_version,
        fragment_bitmap,
        kind,
        entries: Vec::new(),
    };
    for (fragment, fragment_plan) in fragments {
        if !index.covers(fragment.id) {
            continue;
        }
        let mut then = fragment.clone();
        then.overlays
            .retain(|o| o.committed_version <= plan.dataset_version);
        let deleted_then: Vec<bool> = (fragment_plan.deleted.iter())
            .zip(&fragment_plan.deleted_at_build)
            .map(|(now, then)| *now && *then)
            .collect();
        then.deletions = bitmap_of(&deleted_then);
        let column = resolve_column(schema, &then, index.fields[0]).unwrap();
        for (offset, value) in column.into_iter().enumerate() {
            if let Some(value) = value {
                index.entries.push(IndexEntry {
                    fragment: then.id,
                    offset: offset as u32,
                    value,
                });
            }
        }
    }
    index
}

fn build(scenario: &Scenario) -> Snapshot {
    let schema = schema();
    let tombstone_above = scenario
        .scalar
        .dataset_version
        .max(scenario.vector.dataset_version);
    let fragments: Vec<(Fragment, &FragmentPlan)> = (0u64..)
        .zip(&scenario.fragments)
        .map(|(id, plan)| {
            let mut fragment = Fragment::new(
                id,
                "base.lance",
                FIELDS.to_vec(),
                plan.base
                    .iter()
                    .map(|c| lance_reference::model::Column::infer(c).unwrap())
                    .collect(),
            );
            fragment.deletions = bitmap_of(&plan.deleted);
            fragment.overlays = plan
                .overlays
                .iter()
                .map(|o| build_overlay(o, tombstone_above))
                .collect();
            (fragment, plan)
        })
        .collect();
    let scalar_fields = if scenario.scalar.covering_b {
        vec![A, B]
    } else {
        vec![A]
    };
    let indices = vec![
        build_index(
            &schema,
            SCALAR_INDEX,
            IndexKind::BTree,
            scalar_fields,
            &scenario.scalar,
            &fragments,
        ),
        build_index(
            &schema,
            VECTOR_INDEX,
            IndexKind::Vector,
            vec![V],
            &scenario.vector,
            &fragments,
        ),
    ];
    let snapshot = Snapshot {
        version: LAST_VERSION,
        schema,
        fragments: fragments.into_iter().map(|(f, _)| f).collect(),
        indices,
        config: Default::default(),
        stable_row_ids: false,
        next_row_id: 0,
        reader_flags: 0,
        writer_flags: 0,
    };
    snapshot.validate().unwrap();
    snapshot
}

fn literal() -> impl Strategy<Value = Value> {
    prop_oneof![1 => Just(Value::Null), 6 => (0i32..4).prop_map(Value::Int32)]
}

/// Predicates on `a` only (the scalar index's key), nested up to three levels.
fn predicate() -> impl Strategy<Value = Predicate> {
    let leaf = prop_oneof![
        literal().prop_map(|v| Predicate::Eq(A, v)),
        literal().prop_map(|v| Predicate::Ne(A, v)),
        literal().prop_map(|v| Predicate::Lt(A, v)),
        literal().prop_map(|v| Predicate::Le(A, v)),
        literal().prop_map(|v| Predicate::Gt(A, v)),
        literal().prop_map(|v| Predicate::Ge(A, v)),
        vec(literal(), 0..3).prop_map(|vs| Predicate::In(A, vs)),
        Just(Predicate::IsNull(A)),
        Just(Predicate::IsNotNull(A)),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..3).prop_map(Predicate::And),
            vec(inner, 0..3).prop_map(Predicate::Or),
        ]
    })
}

/// The live rows the flat path must see: each covered fragment's exclusion set and every row
/// of an uncovered fragment, computed independently of `query`.
fn expected_reevaluated(snapshot: &Snapshot, index: &str) -> Vec<RowRef> {
    let sets = ExclusionSets::of_snapshot(snapshot);
    let mut rows = Vec::new();
    for fragment in &snapshot.fragments {
        for offset in 0..fragment.physical_rows as u32 {
            let flat = sets
                .get(index, fragment.id)
                .is_none_or(|set| set.contains(offset));
            if flat && !fragment.deletions.contains(offset) {
                rows.push(RowRef {
                    fragment: fragment.id,
                    offset: u64::from(offset),
                });
            }
        }
    }
    rows
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn scalar_reconciliation_equals_the_flat_filter(scenario in scenario(), predicate in predicate()) {
        // covers: OVL-IDX-1, OVL-IDX-5, OVL-QRY-1, OVL-QRY-2, OVL-QRY-3
        let snapshot = build(&scenario);
        let r = reconcile(&snapshot, SCALAR_INDEX, &predicate).unwrap();
        prop_assert_eq!(&r.final_rows, &flat_filter(&snapshot, &predicate).unwrap());
        prop_assert_eq!(&r.reevaluated, &expected_reevaluated(&snapshot, SCALAR_INDEX));
        prop_assert!(r.excluded.iter().all(|row| r.candidates.contains(row)));
        prop_assert!(r.rematched.iter().all(|row| r.reevaluated.contains(row)));
    }

    #[test]
    fn vector_reconciliation_equals_the_flat_top_k(
        scenario in scenario(),
        query in uniform2((0i32..4).prop_map(|x| x as f32)),
        k in 1usize..=8,
    ) {
        // covers: OVL-IDX-1, OVL-IDX-5, OVL-QRY-4, OVL-QRY-5
        let snapshot = build(&scenario);
        let r = reconcile_vector(&snapshot, VECTOR_INDEX, &query, k).unwrap();
        prop_assert_eq!(&r.final_rows, &flat_top_k(&snapshot, V, &query, k).unwrap());
        prop_assert_eq!(&r.reevaluated, &expected_reevaluated(&snapshot, VECTOR_INDEX));
        prop_assert!(r.candidates.len() <= k);
        prop_assert!(r.candidates.iter().all(|s| !r.excluded.contains(&s.row)));
    }
}
