//! Target `resolve_differential`: an `Arbitrary` fragment (rows, base columns with NULLs,
//! overlays with random coverage, committed_versions with ties and in any stored order,
//! dense and sparse coverage, tombstoned and dropped field ids, deletions) resolved by
//! `resolve_column`, `explain` and the Arrow gather `resolve_array` (live rows only), against
//! a naive oracle.
//!
//! The oracle never looks at the built `Overlay`s, bitmaps or ranks, and shares no code with
//! the reference's precedence order: it starts from a dense grid of base values and replays
//! the *plan* of each overlay (row `r` covered with value `x`), sorted oldest to newest by
//! `(committed_version, stored position)`, each write overwriting the last; deleted rows are
//! blanked at the end. A struct cell is present unless its base validity says NULL, and holds
//! its child's replayed value.
//!
//! Some inputs carry one corruption (a short value column, coverage past the last row, a bad
//! `committed_version`, a field listed twice, a short base column): then `Fragment::validate`
//! must refuse the fragment, and resolving it must still not panic.

use arbitrary::Arbitrary;
use lance_reference::columnar::resolve_array;

use crate::dataset_scenarios::column as stored;
use lance_reference::model::{
    Column, Coverage, DataFile, DataType, Field, FieldId, Fragment, Lineage, Overlay, Schema,
    TOMBSTONE_FIELD_ID, Value,
};
use lance_reference::resolve::{explain, resolve_column};
use roaring::RoaringBitmap;

use super::structured;

const A: FieldId = 1; // int32
const B: FieldId = 2; // utf8
const S: FieldId = 3; // struct
const X: FieldId = 4; // s.x: int64
const V: FieldId = 5; // fixed_size_list<float32, 2>
const DROPPED: FieldId = 9; // not in the schema
const LEAVES: [FieldId; 4] = [A, B, X, V];
const MAX_ROWS: u8 = 40;
const MAX_OVERLAYS: usize = 6;

fn schema() -> Schema {
    Schema::new(vec![
        Field::new(A, "a", DataType::Int32),
        Field::new(B, "b", DataType::Utf8),
        Field::new(S, "s", DataType::Struct),
        Field::child(X, S, "x", DataType::Int64),
        Field::new(V, "v", DataType::FixedSizeList { dimension: 2 }),
    ])
    .expect("the fixed schema is valid")
}

#[derive(Debug, Clone, Copy, Arbitrary)]
enum Cell {
    Null,
    Small(u8),
}

#[derive(Debug, Clone, Copy, Arbitrary)]
enum FieldChoice {
    A,
    B,
    S,
    X,
    V,
    Dropped,
    Tombstone,
}

impl FieldChoice {
    fn id(self) -> FieldId {
        match self {
            FieldChoice::A => A,
            FieldChoice::B => B,
            FieldChoice::S => S,
            FieldChoice::X => X,
            FieldChoice::V => V,
            FieldChoice::Dropped => DROPPED,
            FieldChoice::Tombstone => TOMBSTONE_FIELD_ID,
        }
    }
}

#[derive(Debug, Arbitrary)]
struct OverlayPlan {
    committed_version: u8,
    dense: bool,
    fields: Vec<FieldChoice>,
    /// Bit `r` of entry `k`: row `r` covered for the `k`-th field (entry 0 when dense).
    coverage: Vec<u64>,
    cells: Vec<Cell>,
}

#[derive(Debug, Clone, Copy, Arbitrary)]
enum Corruption {
    ShortValueColumn,
    CoveragePastEnd,
    ZeroCommittedVersion,
    FutureCommittedVersion,
    FieldTwice,
    ShortBaseColumn,
}

#[derive(Debug, Arbitrary)]
struct Input {
    rows: u8,
    /// Which of `a`, `b`, `s` (validity), `x`, `v` have a base column.
    base_present: [bool; 5],
    /// Put the later base columns in a second file.
    split_base: bool,
    base_tombstone: bool,
    base_cells: Vec<Cell>,
    deleted: Vec<u8>,
    overlays: Vec<OverlayPlan>,
    /// Snapshot version above the newest committed_version.
    version_slack: u8,
    corruption: Option<Corruption>,
}

/// A cell value for `field` (values for unknown ids are int32: never read).
fn value(field: FieldId, cell: Cell) -> Value {
    let Cell::Small(x) = cell else {
        return Value::Null;
    };
    match field {
        B => Value::Utf8(format!("s{x}")),
        S => Value::Struct(Vec::new()),
        X => Value::Int64(i64::from(x) - 100),
        V => Value::Vector(vec![
            Some(f32::from(x)),
            (x % 3 != 0).then_some(-f32::from(x)),
        ]),
        _ => Value::Int32(i32::from(x)),
    }
}

/// Cycles through `cells` (all NULL when empty), offset by `salt` so columns differ.
fn cell(cells: &[Cell], salt: usize, i: usize) -> Cell {
    if cells.is_empty() {
        Cell::Null
    } else {
        cells[(salt * 7 + i) % cells.len()]
    }
}

fn covered(mask: u64, row: usize) -> bool {
    row < 64 && mask & (1 << row) != 0
}

/// The rows an overlay's `k`-th field covers, by plan.
fn plan_coverage(plan: &OverlayPlan, k: usize, rows: usize) -> Vec<usize> {
    let entry = if plan.dense { 0 } else { k };
    let mask = plan.coverage.get(entry).copied().unwrap_or(0);
    (0..rows).filter(|&r| covered(mask, r)).collect()
}

/// The live field list of an overlay plan: at most 5 entries, live ids not repeated.
fn plan_fields(plan: &OverlayPlan) -> Vec<FieldId> {
    let mut fields: Vec<FieldId> = Vec::new();
    for choice in plan.fields.iter().take(5) {
        let id = choice.id();
        if id >= 0 && fields.contains(&id) {
            continue;
        }
        fields.push(id);
    }
    fields
}

/// The value plan of an overlay's `k`-th field at its `j`-th covered row.
fn plan_value(plan: &OverlayPlan, field: FieldId, k: usize, j: usize) -> Value {
    value(field, cell(&plan.cells, k + 1, j))
}

fn build(input: &Input, schema_version: u64) -> (Fragment, bool) {
    let rows = usize::from(input.rows % (MAX_ROWS + 1));
    let mut corrupted = false;
    let base_fields: Vec<FieldId> = [A, B, S, X, V]
        .into_iter()
        .zip(input.base_present)
        .filter(|&(_, present)| present)
        .map(|(f, _)| f)
        .collect();
    let column = |field: FieldId| -> Vec<Value> {
        (0..rows)
            .map(|r| value(field, cell(&input.base_cells, field as usize, r)))
            .collect()
    };
    let split = if input.split_base {
        base_fields.len() / 2
    } else {
        base_fields.len()
    };
    let mut files = Vec::new();
    for (i, part) in [&base_fields[..split], &base_fields[split..]]
        .into_iter()
        .enumerate()
    {
        if part.is_empty() {
            continue;
        }
        let mut fields = part.to_vec();
        let mut columns: Vec<Vec<Value>> = part.iter().map(|&f| column(f)).collect();
        if input.base_tombstone && i == 0 {
            fields.insert(0, TOMBSTONE_FIELD_ID);
            columns.insert(0, vec![Value::Int32(7); rows]);
        }
        files.push(DataFile {
            path: format!("base{i}.lance"),
            fields,
            columns: columns.iter().map(|c| stored(c)).collect(),
        });
    }
    let mut overlays = Vec::new();
    for (position, plan) in input.overlays.iter().take(MAX_OVERLAYS).enumerate() {
        let fields = plan_fields(plan);
        let mut columns = Vec::new();
        let mut bitmaps = Vec::new();
        for (k, &field) in fields.iter().enumerate() {
            let rows_covered = plan_coverage(plan, k, rows);
            columns.push(stored(
                &(0..rows_covered.len())
                    .map(|j| plan_value(plan, field, k, j))
                    .collect::<Vec<_>>(),
            ));
            bitmaps.push(
                rows_covered
                    .iter()
                    .map(|&r| r as u32)
                    .collect::<RoaringBitmap>(),
            );
        }
        let coverage = if plan.dense {
            Coverage::Dense(
                plan_coverage(plan, 0, rows)
                    .iter()
                    .map(|&r| r as u32)
                    .collect(),
            )
        } else {
            Coverage::Sparse(bitmaps)
        };
        overlays.push(Overlay {
            file: DataFile {
                path: format!("overlay{position}.lance"),
                fields,
                columns,
            },
            coverage,
            committed_version: committed_version(plan),
        });
    }
    let mut fragment = Fragment {
        id: 0,
        physical_rows: rows as u64,
        files,
        deletions: input
            .deleted
            .iter()
            .filter(|_| rows > 0)
            .map(|&d| u32::from(d) % rows as u32)
            .collect(),
        overlays,
        lineage: Lineage::default(),
    };
    if let Some(corruption) = input.corruption {
        corrupted = corrupt(&mut fragment, corruption, schema_version);
    }
    (fragment, corrupted)
}

/// Appends one NULL to `column`, keeping its type.
fn push_null(column: &mut Column) {
    let mut values = column.values();
    values.push(Value::Null);
    *column = column.with_values(&values).expect("NULL fits every column");
}

fn committed_version(plan: &OverlayPlan) -> u64 {
    u64::from(plan.committed_version % 4) + 1
}

/// Applies `corruption` where the fragment has something to corrupt; says whether it did.
fn corrupt(fragment: &mut Fragment, corruption: Corruption, version: u64) -> bool {
    // The first overlay with a live, non-struct schema field (the ones validation reads).
    let target = fragment
        .overlays
        .iter()
        .enumerate()
        .find_map(|(o, overlay)| {
            let pos = overlay
                .file
                .fields
                .iter()
                .position(|f| LEAVES.contains(f))?;
            Some((o, pos))
        });
    match corruption {
        Corruption::ShortValueColumn => match target {
            Some((o, pos)) => {
                let column = &mut fragment.overlays[o].file.columns[pos];
                *column = if column.is_empty() {
                    stored(&[Value::Null]) // empty coverage: one value too many instead
                } else {
                    column.truncated(column.len() - 1)
                };
                true
            }
            None => false,
        },
        Corruption::CoveragePastEnd => match target {
            Some((o, pos)) => {
                let overlay = &mut fragment.overlays[o];
                let past = fragment.physical_rows as u32;
                match &mut overlay.coverage {
                    Coverage::Dense(b) => {
                        b.insert(past);
                        for p in 0..overlay.file.fields.len() {
                            push_null(&mut overlay.file.columns[p]);
                        }
                    }
                    Coverage::Sparse(bs) => {
                        bs[pos].insert(past);
                        push_null(&mut overlay.file.columns[pos]);
                    }
                }
                true
            }
            None => false,
        },
        Corruption::ZeroCommittedVersion | Corruption::FutureCommittedVersion => {
            match fragment.overlays.first_mut() {
                Some(overlay) => {
                    overlay.committed_version = match corruption {
                        Corruption::ZeroCommittedVersion => 0,
                        _ => version + 1,
                    };
                    true
                }
                None => false,
            }
        }
        Corruption::FieldTwice => match target {
            Some((o, pos)) => {
                let overlay = &mut fragment.overlays[o];
                if let Coverage::Sparse(bs) = &mut overlay.coverage {
                    let b = bs[pos].clone();
                    bs.push(b);
                }
                let field = overlay.file.fields[pos];
                let column = overlay.file.columns[pos].clone();
                overlay.file.fields.push(field);
                overlay.file.columns.push(column);
                true
            }
            None => false,
        },
        Corruption::ShortBaseColumn => {
            let found = fragment.files.iter_mut().find_map(|file| {
                let pos = file.fields.iter().position(|f| *f >= 0)?;
                Some(&mut file.columns[pos])
            });
            match found {
                Some(column) => {
                    *column = if column.is_empty() {
                        stored(&[Value::Null])
                    } else {
                        column.truncated(column.len() - 1)
                    };
                    true
                }
                None => false,
            }
        }
    }
}

/// The oracle: resolved values of every leaf field, per row (`None` = deleted).
fn oracle(input: &Input) -> Vec<(FieldId, Vec<Option<Value>>)> {
    let rows = usize::from(input.rows % (MAX_ROWS + 1));
    let leaves_and_struct = [A, B, S, X, V];
    // grid[field index][row]
    let mut grid: Vec<Vec<Value>> = leaves_and_struct
        .iter()
        .zip(input.base_present)
        .map(|(&f, present)| {
            (0..rows)
                .map(|r| {
                    if present {
                        value(f, cell(&input.base_cells, f as usize, r))
                    } else {
                        Value::Null
                    }
                })
                .collect()
        })
        .collect();
    let plans: Vec<&OverlayPlan> = input.overlays.iter().take(MAX_OVERLAYS).collect();
    let mut replay: Vec<usize> = (0..plans.len()).collect();
    replay.sort_by_key(|&p| (committed_version(plans[p]), p));
    for p in replay {
        let plan = plans[p];
        for (k, field) in plan_fields(plan).into_iter().enumerate() {
            let Some(slot) = leaves_and_struct.iter().position(|&f| f == field) else {
                continue; // tombstone or dropped: never read
            };
            if field == S {
                continue; // a struct's validity comes from the base
            }
            for (j, row) in plan_coverage(plan, k, rows).into_iter().enumerate() {
                grid[slot][row] = plan_value(plan, field, k, j);
            }
        }
    }
    let deleted: Vec<bool> = (0..rows)
        .map(|r| input.deleted.iter().any(|&d| usize::from(d) % rows == r))
        .collect();
    let x_slot = 3;
    leaves_and_struct
        .iter()
        .enumerate()
        .map(|(slot, &field)| {
            let column = (0..rows)
                .map(|r| {
                    if deleted[r] {
                        None
                    } else if field == S {
                        Some(if grid[slot][r].is_null() && input.base_present[2] {
                            Value::Null
                        } else {
                            Value::Struct(vec![grid[x_slot][r].clone()])
                        })
                    } else {
                        Some(grid[slot][r].clone())
                    }
                })
                .collect();
            (field, column)
        })
        .collect()
}

pub fn check(data: &[u8]) {
    let Some(input) = structured::<Input>(data) else {
        return;
    };
    let schema = schema();
    let newest = input
        .overlays
        .iter()
        .take(MAX_OVERLAYS)
        .map(committed_version)
        .max();
    let version = newest.unwrap_or(1) + u64::from(input.version_slack % 2);
    let (fragment, corrupted) = build(&input, version);
    let valid = fragment.validate(&schema, version);
    if corrupted {
        assert!(
            valid.is_err(),
            "validate accepted a corrupted fragment ({:?})",
            input.corruption
        );
        for field in [A, B, S, X, V, DROPPED] {
            let _ = resolve_column(&schema, &fragment, field);
            let _ = resolve_array(&schema, &fragment, field);
            for offset in 0..=fragment.physical_rows {
                let _ = explain(&schema, &fragment, offset, field);
            }
        }
        return;
    }
    valid.unwrap_or_else(|e| panic!("validate refused a well-formed fragment: {e}"));
    for (field, expected) in oracle(&input) {
        let got = resolve_column(&schema, &fragment, field)
            .unwrap_or_else(|e| panic!("resolve_column({field}) failed: {e}"));
        assert_eq!(got.len(), expected.len());
        // The Arrow gather holds the live rows, in offset order.
        let array = resolve_array(&schema, &fragment, field)
            .unwrap_or_else(|e| panic!("resolve_array({field}) failed: {e}"));
        let live: Vec<&Value> = expected.iter().flatten().collect();
        assert_eq!(array.len(), live.len(), "field {field}: live rows");
        for (row, e) in live.iter().enumerate() {
            let g = lance_reference::model::value_at(array.as_ref(), row)
                .unwrap_or_else(|| panic!("field {field}: no value at row {row}"));
            assert!(
                g.identical(e),
                "field {field} live row {row}: resolve_array {g:?}, oracle {e:?}"
            );
        }
        for (offset, (g, e)) in got.iter().zip(&expected).enumerate() {
            let same = match (g, e) {
                (Some(g), Some(e)) => g.identical(e),
                (None, None) => true,
                _ => false,
            };
            assert!(
                same,
                "field {field} offset {offset}: reference {g:?}, oracle {e:?}"
            );
            let explained = explain(&schema, &fragment, offset as u64, field)
                .unwrap_or_else(|e| panic!("explain({offset}, {field}) failed: {e}"));
            if field != S {
                assert_eq!(
                    &explained.value, g,
                    "explain disagrees at field {field} offset {offset}"
                );
            }
        }
    }
    assert!(
        resolve_column(&schema, &fragment, DROPPED).is_err(),
        "a dropped field resolved"
    );
    assert!(
        resolve_array(&schema, &fragment, DROPPED).is_err(),
        "a dropped field resolved as an array"
    );
}
