//! Resolution by runs ([`plan_column`]'s `runs`, copied by `resolve_column` and the Arrow
//! gather) against the rule applied one row at a time: every small case exhaustively (every
//! coverage of two overlays, every deletion set, every version order, with and without a base
//! column, NULL values among the overlays'), and random fragments of up to 300 rows with up to
//! six overlays (so runs cross the plan's 64-offset blocks). Fields of every kind of copy the
//! gather makes: int64 (a slice of values), text, boolean and vector (ranges of rows).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use arrow_array::types::Float32Type;
use arrow_array::{Array, BooleanArray, FixedSizeListArray, Int64Array, StringArray};
use lance_reference::columnar::resolve_array;
use lance_reference::model::{
    Column, Coverage, DataFile, DataType, Field, FieldId, Fragment, Overlay, Schema, Value,
    value_at,
};
use lance_reference::resolve::{Winner, plan_column, precedence, resolve_column};
use proptest::prelude::*;
use roaring::RoaringBitmap;

const A: FieldId = 0;
const B: FieldId = 1;
/// A field no base file holds: uncovered cells are NULL.
const C: FieldId = 2;
const D: FieldId = 3;
const E: FieldId = 4;
/// Every field, each resolved and checked.
const FIELDS: [FieldId; 5] = [A, B, C, D, E];

fn schema() -> Schema {
    Schema::new(vec![
        Field::new(A, "a", DataType::Int64),
        Field::new(B, "b", DataType::Utf8),
        Field::new(C, "c", DataType::Int64),
        Field::new(D, "d", DataType::Bool),
        Field::new(E, "e", DataType::FixedSizeList { dimension: 2 }),
    ])
    .unwrap()
}

/// The winner of `offset` by the rule, one row at a time: deleted; else the first overlay in
/// precedence order that covers it, at its rank; else the base, or NULL with no base.
fn winner_by_row(f: &Fragment, field: FieldId, offset: u32) -> Winner {
    if f.deletions.contains(offset) {
        return Winner::Deleted;
    }
    for position in precedence(f) {
        let overlay = &f.overlays[position];
        let Some(at) = overlay.file.fields.iter().position(|&x| x == field) else {
            continue;
        };
        let bitmap = overlay.coverage.at(at).unwrap();
        if bitmap.contains(offset) {
            return Winner::Overlay {
                position: position as u32,
                rank: (bitmap.rank(offset) - 1) as u32,
            };
        }
    }
    if lance_reference::resolve::base_column(f, field).is_some() {
        Winner::Base
    } else {
        Winner::Null
    }
}

/// The value of `offset` by the rule, one row at a time.
fn value_by_row(f: &Fragment, field: FieldId, offset: u32) -> Option<Value> {
    match winner_by_row(f, field, offset) {
        Winner::Deleted => None,
        Winner::Null => Some(Value::Null),
        Winner::Base => {
            let (_, column) = lance_reference::resolve::base_column(f, field).unwrap();
            Some(column.value(offset as usize).unwrap())
        }
        Winner::Overlay { position, rank } => {
            let overlay = &f.overlays[position as usize];
            let at = overlay
                .file
                .fields
                .iter()
                .position(|&x| x == field)
                .unwrap();
            Some(overlay.file.columns[at].value(rank as usize).unwrap())
        }
    }
}

/// Checks every field of `f`: the runs are maximal, in order and cover every offset once;
/// expanded, they are the per-row winners; `resolve_column` and the Arrow gather give the
/// per-row values.
fn check(f: &Fragment) -> Result<(), TestCaseError> {
    let schema = schema();
    let rows = f.physical_rows as u32;
    for field in FIELDS {
        let plan = plan_column(f, field).unwrap();
        let runs = plan.runs();
        let mut next = 0u32;
        for pair in runs.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let continues = match (a.winner, b.winner) {
                (
                    Winner::Overlay { position, rank },
                    Winner::Overlay {
                        position: p,
                        rank: r,
                    },
                ) => p == position && r == rank + a.len,
                (x, y) => x == y,
            };
            prop_assert!(!continues, "runs {a:?} and {b:?} should be one");
        }
        for run in &runs {
            prop_assert_eq!(run.start, next);
            prop_assert!(run.len > 0);
            next += run.len;
        }
        prop_assert_eq!(next, rows);
        let by_row: Vec<Winner> = (0..rows).map(|o| winner_by_row(f, field, o)).collect();
        prop_assert_eq!(plan.winners(), by_row);
        let values: Vec<Option<Value>> = (0..rows).map(|o| value_by_row(f, field, o)).collect();
        prop_assert_eq!(&resolve_column(&schema, f, field).unwrap(), &values);
        let array = resolve_array(&schema, f, field).unwrap();
        let live: Vec<Value> = values.into_iter().flatten().collect();
        prop_assert_eq!(array.len(), live.len());
        for (row, want) in live.iter().enumerate() {
            prop_assert_eq!(&value_at(array.as_ref(), row).unwrap(), want);
        }
    }
    Ok(())
}

/// The vectors `[x, -x]` for each `x` (NULL for `None`).
fn vectors(xs: impl IntoIterator<Item = Option<f32>>) -> Column {
    Column::new(Arc::new(FixedSizeListArray::from_iter_primitive::<
        Float32Type,
        _,
        _,
    >(
        xs.into_iter().map(|x| x.map(|x| vec![Some(x), Some(-x)])),
        2,
    )))
}

/// `rows` rows: a = 100 + offset, b = "b<offset>", d = offset is odd, e = [offset, -offset];
/// no base for c.
fn base(rows: u32) -> Fragment {
    Fragment::new(
        3,
        "base.lance",
        vec![A, B, D, E],
        vec![
            Column::new(Arc::new(Int64Array::from_iter_values(
                (0..i64::from(rows)).map(|i| 100 + i),
            ))),
            Column::new(Arc::new(StringArray::from_iter_values(
                (0..rows).map(|i| format!("b{i}")),
            ))),
            Column::new(Arc::new(BooleanArray::from_iter(
                (0..rows).map(|i| Some(i % 2 == 1)),
            ))),
            vectors((0..rows).map(|i| Some(i as f32))),
        ],
    )
}

/// A dense overlay over `covered` carrying every field; the value at rank `k` is NULL when
/// `k % null_every == null_every - 1`, otherwise distinct per overlay and rank (a boolean:
/// alternating with the rank).
fn overlay(tag: i64, covered: RoaringBitmap, version: u64, null_every: u64) -> Overlay {
    let n = covered.len();
    let ints = || {
        Column::new(Arc::new(Int64Array::from_iter((0..n).map(|k| {
            (k % null_every != null_every - 1).then_some(tag * 1000 + k as i64)
        }))))
    };
    let texts =
        Column::new(Arc::new(StringArray::from_iter((0..n).map(|k| {
            (k % null_every != null_every - 1).then(|| format!("o{tag}r{k}"))
        }))));
    let bools = Column::new(Arc::new(BooleanArray::from_iter(
        (0..n).map(|k| (k % null_every != null_every - 1).then_some(k % 2 == 0)),
    )));
    let vecs = vectors(
        (0..n)
            .map(|k| (k % null_every != null_every - 1).then_some((tag * 1000 + k as i64) as f32)),
    );
    Overlay {
        file: DataFile {
            path: format!("o{tag}.lance"),
            fields: vec![A, B, C, D, E],
            columns: vec![ints(), texts, ints(), bools, vecs],
        },
        coverage: Coverage::Dense(covered),
        committed_version: version,
    }
}

fn subset(mask: u32, rows: u32) -> RoaringBitmap {
    (0..rows).filter(|o| mask & (1 << o) != 0).collect()
}

#[test]
fn runs_equal_the_per_row_rule_on_every_small_case() {
    // Every coverage of two overlays and every deletion set over up to 4 rows, in each version
    // order (older first, tie, newer first), with and without the base file.
    let mut cases = 0u32;
    for rows in 0..=4u32 {
        let all = 1u32 << rows;
        for (v0, v1) in [(2, 3), (2, 2), (3, 2)] {
            for m0 in 0..all {
                for m1 in 0..all {
                    for deleted in 0..all {
                        for with_base in [true, false] {
                            let mut f = base(rows);
                            if !with_base {
                                f.files[0].fields = vec![-2; 4];
                            }
                            f.overlays = vec![
                                overlay(1, subset(m0, rows), v0, 2),
                                overlay(2, subset(m1, rows), v1, 3),
                            ];
                            f.deletions = subset(deleted, rows);
                            check(&f)
                                .map_err(|e| {
                                    TestCaseError::fail(format!(
                                        "rows {rows}, versions {v0},{v1}, coverage {m0:b} {m1:b}, \
                                     deleted {deleted:b}, base {with_base}: {e}"
                                    ))
                                })
                                .unwrap();
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(cases, 3 * 2 * (1 + 8 + 64 + 512 + 4096));
}

/// Rows, and per overlay (version, density in percent, seed), deletion density, seed.
fn spec() -> impl Strategy<Value = (u32, Vec<(u64, u32, u64)>, u32, u64)> {
    (
        0u32..300,
        proptest::collection::vec((1u64..4, 0u32..=100, any::<u64>()), 0..7),
        0u32..30,
        any::<u64>(),
    )
}

/// Offsets below `rows` chosen with probability `percent`%, as runs and scattered cells.
fn random_bitmap(rows: u32, percent: u32, seed: u64) -> RoaringBitmap {
    let mut state = seed | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = RoaringBitmap::new();
    let mut offset = 0;
    while offset < rows {
        // Stretches of 1 to 80 offsets, each all in or all out.
        let len = (next() % 80) as u32 + 1;
        let chosen = (next() % 100) < u64::from(percent);
        let scattered = next() % 2 == 0;
        for o in offset..(offset + len).min(rows) {
            if (chosen && !scattered) || (scattered && (next() % 100) < u64::from(percent)) {
                out.insert(o);
            }
        }
        offset += len;
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn runs_equal_the_per_row_rule_on_random_fragments(
        (rows, overlays, deleted, seed) in spec()
    ) {
        let mut f = base(rows);
        f.overlays = overlays
            .iter()
            .enumerate()
            .map(|(i, &(version, percent, s))| {
                overlay(i as i64 + 1, random_bitmap(rows, percent, s), version, 1 + s % 5)
            })
            .collect();
        f.deletions = random_bitmap(rows, deleted, seed);
        check(&f)?;
    }
}
