//! Target `history`: an `Arbitrary` history of commits (append, overlay, delete, fold with
//! either index policy, overlay merge, row rewrite, index build at an older read version,
//! commit retry, spill-config change) applied to the reference's in-memory operations, with
//! the stable-row-id flag on or off.
//!
//! After every commit that succeeds: the version advances by one; the snapshot validates; its
//! flags are consistent with its content; its scan equals an independent replay (a table of
//! rows keyed by stable row id, holding values, created-at and last-updated-at, updated from
//! each commit's *inputs*: appended rows, the cells an overlay writes, deleted rows, rows a
//! rewrite moves); every scalar index query, reconciled
//! with the overlays, equals the flat filter. A refused commit must leave nothing behind and
//! not panic. At the end (when the input asks for it), every version is written as a dataset (in memory,
//! through the same storage seam a directory is written through) and read back, and
//! each read version validates and scans equal to the in-memory one.

use std::collections::BTreeMap;
use std::sync::Arc;

use arbitrary::Arbitrary;
use lance_reference::compaction::{FoldPlan, IndexPolicy, fold, merge_overlays, rewrite_rows};
use lance_reference::delete::delete_rows;
use lance_reference::flags::{check_consistency, set_commit_flags};
use lance_reference::index_build::build_index;
use lance_reference::lineage::{
    AppendedFragment, INLINE_MAX_BYTES_KEY, PendingCommit, SPILL_KEY, restamp,
};
use lance_reference::model::{
    Column, DataType, Field, FieldId, Fragment, IndexKind, Overlay, Schema, Snapshot, Value,
};
use lance_reference::overlay_write::{Shape, build_overlay};
use lance_reference::query::{Predicate, flat_filter, reconcile};
use lance_reference::scan::{ScanRow, row_address, scan};
use lance_reference_io::{
    Dataset, MemoryStorage, ReadOptions, WriteOptions, write_version_files_in,
};
use roaring::RoaringBitmap;

use super::structured;

const A: FieldId = 1; // int32, indexed by BTree indices
const B: FieldId = 2; // utf8
const V: FieldId = 3; // fixed_size_list<float32, 2>, indexed by vector indices
const FIELDS: [FieldId; 3] = [A, B, V];
const MAX_OPS: usize = 24;
const MAX_ROWS: u8 = 8;

#[derive(Debug, Clone, Copy, Arbitrary)]
enum Cell {
    Null,
    Small(u8),
}

#[derive(Debug, Clone, Copy, Arbitrary)]
enum ShapeChoice {
    Auto,
    Sparse,
    Dense,
}

#[derive(Debug, Arbitrary)]
enum Op {
    Append {
        rows: u8,
        cells: Vec<Cell>,
    },
    Overlay {
        fragment: u8,
        shape: ShapeChoice,
        cells: Vec<(u8, u8, Cell)>,
    },
    Delete {
        fragment: u8,
        offsets: Vec<u8>,
    },
    Fold {
        fragment: u8,
        rebuild: bool,
    },
    Merge {
        fragment: u8,
        first: u8,
        count: u8,
    },
    Rewrite {
        fragments: Vec<u8>,
    },
    BuildIndex {
        vector: bool,
        read_back: u8,
    },
    /// An overlay staged against an older version, landed on the newest by `restamp`.
    RetryOverlay {
        read_back: u8,
        fragment: u8,
        shape: ShapeChoice,
        cells: Vec<(u8, u8, Cell)>,
    },
    /// Spilling on with this inline budget (bytes), or off.
    Spill {
        budget: Option<u8>,
    },
}

#[derive(Debug, Arbitrary)]
struct Input {
    stable_row_ids: bool,
    /// Also write every version to disk and read it back (slower; half the inputs).
    on_disk: bool,
    ops: Vec<Op>,
}

fn schema() -> Schema {
    Schema::new(vec![
        Field::new(A, "a", DataType::Int32),
        Field::new(B, "b", DataType::Utf8),
        Field::new(V, "v", DataType::FixedSizeList { dimension: 2 }),
    ])
    .expect("the fixed schema is valid")
}

fn value(field: FieldId, cell: Cell) -> Value {
    let Cell::Small(x) = cell else {
        return Value::Null;
    };
    let x = x % 4; // few distinct values, so predicates match often
    match field {
        A => Value::Int32(i32::from(x)),
        B => Value::Utf8(format!("s{x}")),
        _ => Value::Vector(vec![Some(f32::from(x)), (x != 2).then_some(1.0)]),
    }
}

/// One model row: the user-visible values, created-at and last-updated-at.
#[derive(Debug, Clone, PartialEq)]
struct ModelRow {
    values: Vec<Value>,
    created_at: u64,
    last_updated_at: u64,
}

/// The independent replay: live rows by stable row id, or by row address without stable row
/// ids (addresses move only in a rewrite, which the replay renumbers itself).
#[derive(Debug, Clone, Default)]
struct Model {
    rows: BTreeMap<u64, ModelRow>,
}

struct State {
    versions: Vec<Snapshot>,
    model: Model,
    /// Fresh names for files and indices.
    counter: u64,
}

impl State {
    fn newest(&self) -> &Snapshot {
        self.versions
            .last()
            .expect("a history has at least one version")
    }

    /// One past every fragment id any version used: ids are never reused (an index built
    /// before a fragment was removed still names it in its fragment bitmap).
    fn next_fragment_id(&self) -> u64 {
        self.versions
            .iter()
            .flat_map(|v| v.fragments.iter().map(|f| f.id + 1))
            .max()
            .unwrap_or(0)
    }

    fn fresh(&mut self, what: &str) -> String {
        self.counter += 1;
        format!("{what}{}.lance", self.counter)
    }
}

/// `(fragment, offset)` -> row id (the model's key) of every live row of `snapshot`.
fn row_keys(snapshot: &Snapshot) -> BTreeMap<(u64, u64), u64> {
    scan(snapshot, Some(&[]))
        .expect("a validated snapshot scans")
        .into_iter()
        .map(|r| ((r.fragment, r.offset), r.row_id))
        .collect()
}

fn pick(snapshot: &Snapshot, choice: u8) -> Option<&Fragment> {
    let n = snapshot.fragments.len();
    (n > 0).then(|| &snapshot.fragments[usize::from(choice) % n])
}

fn updates(
    fragment: &Fragment,
    cells: &[(u8, u8, Cell)],
) -> BTreeMap<FieldId, BTreeMap<u32, Value>> {
    let mut out: BTreeMap<FieldId, BTreeMap<u32, Value>> = BTreeMap::new();
    if fragment.physical_rows == 0 {
        return out;
    }
    for &(field, offset, cell) in cells.iter().take(12) {
        let field = FIELDS[usize::from(field) % FIELDS.len()];
        let offset = (u64::from(offset) % fragment.physical_rows) as u32;
        out.entry(field)
            .or_default()
            .insert(offset, value(field, cell));
    }
    out
}

fn shape(choice: ShapeChoice) -> Shape {
    match choice {
        ShapeChoice::Auto => Shape::Auto,
        ShapeChoice::Sparse => Shape::Sparse,
        ShapeChoice::Dense => Shape::Dense,
    }
}

/// Applies the cells a landed overlay writes to the model: each covered offset of each field,
/// with the value at its position among the covered offsets; and, with stable row ids,
/// last-updated-at for every covered offset.
fn apply_overlay(
    model: &mut Model,
    keys: &BTreeMap<(u64, u64), u64>,
    fragment: u64,
    overlay: &Overlay,
    version: u64,
    stable: bool,
) {
    let mut touched = RoaringBitmap::new();
    for (pos, &field) in overlay.file.fields.iter().enumerate() {
        let Some(slot) = FIELDS.iter().position(|&f| f == field) else {
            continue;
        };
        let Some(bitmap) = overlay.coverage.at(pos) else {
            continue;
        };
        for (k, offset) in bitmap.iter().enumerate() {
            touched.insert(offset);
            let Some(key) = keys.get(&(fragment, u64::from(offset))) else {
                continue; // a deleted row: its new value is dead
            };
            let row = model
                .rows
                .get_mut(key)
                .expect("every live row is in the model");
            row.values[slot] = overlay.file.columns[pos]
                .value(k)
                .expect("a value per rank");
        }
    }
    if stable {
        for offset in touched {
            if let Some(row) = keys
                .get(&(fragment, u64::from(offset)))
                .and_then(|k| model.rows.get_mut(k))
            {
                row.last_updated_at = version;
            }
        }
    }
}

/// Runs one operation; `Ok(None)` when the reference refused it (a legal outcome).
fn step(state: &mut State, op: &Op) -> Option<Snapshot> {
    let cur = state.newest().clone();
    let version = cur.version + 1;
    let stable = cur.stable_row_ids;
    match op {
        Op::Append { rows, cells } => {
            let rows = usize::from(rows % (MAX_ROWS + 1));
            let id = state.next_fragment_id();
            let columns: Vec<Vec<Value>> = FIELDS
                .iter()
                .enumerate()
                .map(|(k, &f)| {
                    (0..rows)
                        .map(|r| value(f, cells.get(k * rows + r).copied().unwrap_or(Cell::Null)))
                        .collect()
                })
                .collect();
            let path = state.fresh("base");
            let stored = columns
                .iter()
                .map(|c| Column::infer(c).expect("a field's cells have its type"))
                .collect();
            let mut fragment = Fragment::new(id, &path, FIELDS.to_vec(), stored);
            fragment.physical_rows = rows as u64;
            let pending = PendingCommit {
                overlays: Vec::new(),
                appended: vec![AppendedFragment {
                    fragment,
                    carried: None,
                }],
            };
            let next = pending.apply(&cur, version).ok()?;
            for r in 0..rows {
                let key = if stable {
                    cur.next_row_id + r as u64
                } else {
                    row_address(id, r as u64)
                };
                state.model.rows.insert(
                    key,
                    ModelRow {
                        values: columns.iter().map(|c| c[r].clone()).collect(),
                        created_at: version,
                        last_updated_at: version,
                    },
                );
            }
            Some(next)
        }
        Op::Overlay {
            fragment,
            shape: s,
            cells,
        } => {
            let path = state.fresh("overlay");
            let fragment = pick(&cur, *fragment)?;
            let overlay = build_overlay(
                &cur.schema,
                fragment,
                &updates(fragment, cells),
                shape(*s),
                &path,
            )
            .ok()??;
            let id = fragment.id;
            let pending = PendingCommit {
                overlays: vec![(id, vec![overlay])],
                appended: Vec::new(),
            };
            let next = pending.apply(&cur, version).ok()?;
            let landed = next.fragment(id).ok()?.overlays.last()?.clone();
            apply_overlay(
                &mut state.model,
                &row_keys(&cur),
                id,
                &landed,
                version,
                stable,
            );
            Some(next)
        }
        Op::RetryOverlay {
            read_back,
            fragment,
            shape: s,
            cells,
        } => {
            let path = state.fresh("retry");
            let read = &state.versions[usize::from(*read_back) % state.versions.len()];
            let fragment = pick(read, *fragment)?;
            let overlay = build_overlay(
                &read.schema,
                fragment,
                &updates(fragment, cells),
                shape(*s),
                &path,
            )
            .ok()??;
            let id = fragment.id;
            let pending = PendingCommit {
                overlays: vec![(id, vec![overlay])],
                appended: Vec::new(),
            };
            let next = restamp(&pending, &cur).ok()?;
            let landed = next.fragment(id).ok()?.overlays.last()?.clone();
            apply_overlay(
                &mut state.model,
                &row_keys(&cur),
                id,
                &landed,
                version,
                stable,
            );
            Some(next)
        }
        Op::Delete { fragment, offsets } => {
            let fragment = pick(&cur, *fragment)?;
            if fragment.physical_rows == 0 {
                return None;
            }
            let offsets: RoaringBitmap = offsets
                .iter()
                .take(6)
                .map(|&o| (u64::from(o) % fragment.physical_rows) as u32)
                .collect();
            let next = delete_rows(&cur, fragment.id, &offsets, version).ok()?;
            let keys = row_keys(&cur);
            for offset in &offsets {
                if let Some(key) = keys.get(&(fragment.id, u64::from(offset))) {
                    state.model.rows.remove(key);
                }
            }
            Some(next)
        }
        Op::Fold { fragment, rebuild } => {
            let id = pick(&cur, *fragment)?.id;
            let policy = if *rebuild {
                IndexPolicy::Rebuild
            } else {
                IndexPolicy::DropFragment
            };
            let plan: FoldPlan = cur
                .indices
                .iter()
                .map(|i| (i.name.clone(), policy))
                .collect();
            let path = state.fresh("folded");
            fold(&cur, id, &plan, version, &path).ok()
        }
        Op::Merge {
            fragment,
            first,
            count,
        } => {
            let fragment = pick(&cur, *fragment)?;
            let order = lance_reference::resolve::precedence(fragment);
            let count = usize::from(count % 4) + 2;
            if order.len() < count {
                return None;
            }
            let first = usize::from(*first) % (order.len() - count + 1);
            let path = state.fresh("merged");
            let merged =
                merge_overlays(&cur.schema, fragment, &order[first..first + count], &path).ok()?;
            let mut next = cur.clone();
            next.version = version;
            let slot = next.fragments.iter_mut().find(|f| f.id == merged.id)?;
            *slot = merged;
            set_commit_flags(&mut next);
            Some(next)
        }
        Op::Rewrite { fragments } => {
            let mut ids: Vec<u64> = fragments
                .iter()
                .take(3)
                .filter_map(|&c| pick(&cur, c).map(|f| f.id))
                .collect();
            ids.sort_unstable();
            ids.dedup();
            let new_id = state.next_fragment_id();
            let path = state.fresh("rewritten");
            let next = rewrite_rows(&cur, &ids, new_id, version, &path).ok()?;
            if !stable {
                // Row addresses move: the live rows of the inputs become offsets 0.. of the
                // new fragment, in scan order: fragments as the fragment list orders them (not
                // by id: an earlier rewrite's output sits where its inputs were, before
                // fragments with lower ids), then by offset.
                let moved: Vec<u64> = cur
                    .fragments
                    .iter()
                    .map(|f| f.id)
                    .filter(|id| ids.contains(id))
                    .flat_map(|id| {
                        state
                            .model
                            .rows
                            .range(row_address(id, 0)..row_address(id + 1, 0))
                            .map(|(&k, _)| k)
                    })
                    .collect();
                for (offset, key) in moved.into_iter().enumerate() {
                    let row = state.model.rows.remove(&key).expect("listed above");
                    state
                        .model
                        .rows
                        .insert(row_address(new_id, offset as u64), row);
                }
            }
            Some(next)
        }
        Op::BuildIndex { vector, read_back } => {
            // Version 0 (the empty start) is not a dataset version: an index reads a real one.
            let real = &state.versions[1..];
            if real.is_empty() {
                return None;
            }
            let read = real[usize::from(*read_back) % real.len()].clone();
            let (field, kind) = if *vector {
                (V, IndexKind::Vector)
            } else {
                (A, IndexKind::BTree)
            };
            state.counter += 1;
            let name = format!("idx{}", state.counter);
            build_index(&read, &cur, &name, &[field], kind, version).ok()
        }
        Op::Spill { budget } => {
            let mut next = cur.clone();
            next.version = version;
            match budget {
                Some(bytes) => {
                    next.config.insert(SPILL_KEY.into(), "true".into());
                    next.config
                        .insert(INLINE_MAX_BYTES_KEY.into(), bytes.to_string());
                }
                None => {
                    next.config.remove(SPILL_KEY);
                    next.config.remove(INLINE_MAX_BYTES_KEY);
                }
            }
            set_commit_flags(&mut next);
            Some(next)
        }
    }
}

/// Rows by key (stable row id, or row address without stable row ids). Without stable row
/// ids every row reports the default version, so versions are not compared.
fn model_view(model: &Model, stable: bool) -> Vec<(u64, ModelRow)> {
    model
        .rows
        .iter()
        .map(|(&k, r)| {
            (
                k,
                if stable {
                    r.clone()
                } else {
                    ModelRow {
                        created_at: 0,
                        last_updated_at: 0,
                        ..r.clone()
                    }
                },
            )
        })
        .collect()
}

fn scan_view(rows: &[ScanRow], stable: bool) -> Vec<(u64, ModelRow)> {
    let mut out: Vec<(u64, ModelRow)> = rows
        .iter()
        .map(|r| {
            let row = ModelRow {
                values: r.values.clone(),
                created_at: if stable { r.created_at } else { 0 },
                last_updated_at: if stable { r.last_updated_at } else { 0 },
            };
            (r.row_id, row)
        })
        .collect();
    out.sort_by_key(|(k, _)| *k);
    out
}

/// Checks one committed version and returns its scan.
fn check_version(snapshot: &Snapshot, model: &Model, op: &Op) -> Vec<ScanRow> {
    snapshot
        .validate()
        .unwrap_or_else(|e| panic!("after {op:?}: version {} invalid: {e}", snapshot.version));
    check_consistency(snapshot).unwrap_or_else(|e| panic!("after {op:?}: flags inconsistent: {e}"));
    let rows = scan(snapshot, None).unwrap_or_else(|e| panic!("after {op:?}: scan failed: {e}"));
    let stable = snapshot.stable_row_ids;
    assert_eq!(
        scan_view(&rows, stable),
        model_view(model, stable),
        "after {op:?}: scan differs from the replay"
    );
    for index in snapshot
        .indices
        .iter()
        .filter(|i| i.kind == IndexKind::BTree)
    {
        let mut predicates = vec![Predicate::IsNull(A), Predicate::Ge(A, Value::Int32(2))];
        predicates.extend((0..4).map(|k| Predicate::Eq(A, Value::Int32(k))));
        for predicate in predicates {
            let reconciled = reconcile(snapshot, &index.name, &predicate)
                .unwrap_or_else(|e| panic!("after {op:?}: reconcile {} failed: {e}", index.name));
            let flat = flat_filter(snapshot, &predicate).expect("flat filter");
            assert_eq!(
                reconciled.final_rows, flat,
                "after {op:?}: index {} disagrees on {predicate:?}",
                index.name
            );
        }
    }
    rows
}

/// Every version written as a dataset and read back scans equal to the in-memory version.
/// `scans[k]` is the scan of `versions[k]`, taken by [`check_version`] (the empty start has
/// none).
fn check_on_disk(versions: &[Snapshot], scans: &BTreeMap<u64, Vec<ScanRow>>) {
    // In memory: the same writer and reader through the storage seam, so the bytes are those a
    // directory would hold, without a file system's cost; the store also remembers what the
    // reader decoded from each file for the rest of this execution (`lance_reference_io::decoded`).
    // The writer does not decode each manifest it wrote to report a layout: every version is
    // read back below, which decodes each manifest once.
    let store = MemoryStorage::new();
    let mut written = Vec::new();
    for snapshot in versions.iter().filter(|s| s.version > 0) {
        match write_version_files_in(&store, snapshot, &WriteOptions::default()) {
            Ok(_) => written.push(snapshot),
            Err(e) => panic!("version {} does not write: {e}", snapshot.version),
        }
    }
    if written.is_empty() {
        return;
    }
    let dataset = Dataset::open_in(Arc::new(store), ReadOptions::default())
        .unwrap_or_else(|e| panic!("written dataset does not open: {e}"));
    // One pass over every version: an index built at an older version reads that version once
    // for the whole pass, not once per later version that carries the index.
    let read_back = dataset
        .read_all()
        .unwrap_or_else(|e| panic!("a written version does not read back: {e}"));
    assert_eq!(
        read_back.iter().map(|(r, _)| r.version).collect::<Vec<_>>(),
        written.iter().map(|s| s.version).collect::<Vec<_>>(),
        "the dataset lists other versions than were written"
    );
    for (snapshot, (read, _)) in written.into_iter().zip(&read_back) {
        read.validate()
            .unwrap_or_else(|e| panic!("version {} read back invalid: {e}", snapshot.version));
        let a = scans
            .get(&snapshot.version)
            .expect("every committed version was scanned");
        let b = scan(read, None).expect("read-back scan");
        assert_eq!(
            *a, b,
            "version {} scans differently after a disk round trip",
            snapshot.version
        );
    }
}

pub fn check(data: &[u8]) {
    let Some(input) = structured::<Input>(data) else {
        return;
    };
    let mut empty = Snapshot {
        version: 0,
        schema: schema(),
        fragments: Vec::new(),
        indices: Vec::new(),
        config: BTreeMap::new(),
        stable_row_ids: input.stable_row_ids,
        next_row_id: 0,
        reader_flags: 0,
        writer_flags: 0,
    };
    set_commit_flags(&mut empty);
    let mut state = State {
        versions: vec![empty],
        model: Model::default(),
        counter: 0,
    };
    let mut scans = BTreeMap::new();
    for op in input.ops.iter().take(MAX_OPS) {
        let before = state.model.clone();
        match step(&mut state, op) {
            Some(next) => {
                assert_eq!(
                    next.version,
                    state.newest().version + 1,
                    "after {op:?}: version did not advance by one"
                );
                let rows = check_version(&next, &state.model, op);
                if input.on_disk {
                    scans.insert(next.version, rows);
                }
                state.versions.push(next);
            }
            None => state.model = before,
        }
    }
    if input.on_disk {
        check_on_disk(&state.versions, &scans);
    }
}

/// The history an input decodes to, for reading a crash (`None` when it decodes to none).
pub fn describe(data: &[u8]) -> Option<String> {
    structured::<Input>(data).map(|input| format!("{input:#?}"))
}
