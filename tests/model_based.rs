//! Model-based property tests: random histories of commits, run on the reference through the
//! real on-disk dataset, checked after every version against an independent model.
//!
//! Invariant under test: **for every history the conformance vocabulary can express, every
//! version the reference writes and reads back is the version a plain table of rows predicts.**
//! Golden cases cover what someone thought of; these histories cover the combinations nobody
//! wrote down (a retried overlay racing an index build, a fold after a merge after a delete, a
//! rewrite that spills lineage and is then overlaid again, ...).
//!
//! How it works:
//!
//! ```text
//! proptest seeds ──concretize──▶ case::Step list ──scenario::execute──▶ versions
//!        │                                                            │ write_version
//!        └──────────── model (BTreeMap / Vec only) ◀── compare ── Dataset::read_all
//! ```
//!
//! - A history is a schema (always `id: int64`, plus a random subset of `int32`, `utf8`,
//!   `float64`, `fixed_size_list<float32,2>` and a `struct{int32, utf8}`), stable row ids on or
//!   off, a table config, initial rows and indices, and up to [`MAX_STEPS`] operation seeds.
//!   Each seed holds plain numbers that are resolved against the model's current state
//!   (`selector % choices`), so any sub-list of seeds is still a valid history: proptest shrinks
//!   a failure by dropping and simplifying seeds, and the result still runs.
//! - The seeds become steps of the conformance vocabulary ([`lance_conformance::case::Step`]):
//!   append; dense, sparse and auto overlays (one to three per commit, on live or deleted
//!   offsets, struct children and vectors included); deletes by offsets and by predicate;
//!   BTree and vector index builds, also from an older version (a racing build); overlay →
//!   overlay merges of ranges contiguous in precedence; folds with a `rebuild` or `drop` policy
//!   for every index; row rewrites of adjacent fragments (lineage carried over, spilled at small
//!   budgets); commit retries (an append or overlay losing to an append, overlay, delete, index
//!   build or config change); config changes (spill on / off / `TRUE`, budgets 0..64 bytes,
//!   unrelated keys); schema changes (add a field, drop one, add it again under a new id).
//!   Overlays sometimes tombstone positions or store their columns in reverse order.
//! - The model is a table of rows per fragment (`Vec<Option<Row>>`, `None` = deleted), each row
//!   keyed by its stable row id (or, with stable row ids off, by its row address), with its
//!   leaf values, struct validity, created-at and last-updated-at, plus per fragment the list of
//!   overlay `committed_version`s and where each lineage sequence must live. It knows nothing of
//!   bitmaps, ranks or encodings (the one exception: a sequence's encoded length, which the
//!   placement rule is stated in, comes from the reference's encoder).
//!
//! Checked at every version, on what [`Dataset::read_all`] returns:
//!
//! - the scan (values, `_rowid`, created-at, last-updated-at, fragment and offset) equals the
//!   model's rows;
//! - every index query after reconciliation equals the model's flat filter (scalar: a few
//!   random predicates on the key), or the model's top-k by squared L2 with row-address
//!   tie-break (vector);
//! - per fragment, the overlay `committed_version`s equal the model's list and never decrease;
//! - [`flags::check_consistency`] accepts the flags, and both words are exactly the bits the
//!   model says the content needs;
//! - the manifest re-encodes byte-identically, both from its decoded protobuf and from the
//!   decoded snapshot and layout;
//! - the placement rule: a lineage sequence is a column iff the table had spilling on at the
//!   rewrite that carried it over and its encoding was longer than the budget, and no later
//!   commit re-assigned it;
//! - inline and spilled twins read equal: the same history with spilling forced off, and forced
//!   on with a zero budget, scans like the model at every version.
//!
//! Running it:
//!
//! ```text
//! cargo test --release --test model_based                         # CI: 128 histories
//! PROPTEST_CASES=5000 cargo test --release --test model_based     # a long run
//! TMPDIR=/dev/shm PROPTEST_CASES=5000 cargo test ...             # the same, I/O in memory
//! LANCE_CONFORMANCE_EXPORT_CASE=/tmp/case.toml cargo test --release --test model_based
//! ```
//!
//! `LANCE_CONFORMANCE_EXPORT_CASE` names a `case.toml` path (or a directory, which gets a
//! `case.toml`): when a history fails, it is written there as a conformance case, overwritten at
//! every shrinking step, so it ends as the minimal failing history. Move it to
//! `conformance-cases/<area>/<id>/case.toml`, fix its id, title and description, and generate.
//! Failing seeds are persisted in `proptest-regressions/model_based.txt` (committed) and are
//! replayed first on every run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use lance_conformance::case::names::field_id;
use lance_conformance::case::step::{FoldPolicySpec, IndexSpec, Row};
use lance_conformance::case::{
    Case, Cell, FieldSpec, IndexKindSpec, Level, Op as SpecOp, OverlaySpec, PredicateSpec,
    QuerySpec, RequirementIndex, Shape, Step,
};
use lance_conformance::scenario;
use lance_reference::flags;
use lance_reference::lineage::{
    DEFAULT_INLINE_MAX_BYTES, INLINE_MAX_BYTES_KEY, RowDatasetVersionSequence, RowIdSequence,
    SPILL_KEY,
};
use lance_reference::model::{IndexKind, LineageSequence, Snapshot, Value};
use lance_reference::query::{reconcile, reconcile_vector};
use lance_reference::scan::{ScanRow, row_address, scan};
use lance_reference_io::codec::encode_manifest;
use lance_reference_io::manifest_file::{decode_manifest_file, encode_manifest_file};
use lance_reference_io::{Dataset, Layout, WriteOptions, write_version};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{FileFailurePersistence, TestRunner};

/// Histories per run unless `PROPTEST_CASES` says otherwise. The run is bound by file
/// creation and removal (every history writes about three datasets), not by the checks: 128
/// histories take about 30 s on a 2-core VM's disk and about 5 s with `TMPDIR` on tmpfs.
const DEFAULT_CASES: u32 = 128;
/// The most operation seeds in one history (a retry is one seed and two versions).
const MAX_STEPS: usize = 40;
/// The env var naming where a failing history is written as a `case.toml`.
const EXPORT_VAR: &str = "LANCE_CONFORMANCE_EXPORT_CASE";
/// An unrelated config key, to change the config without touching lineage placement.
const NOTE_KEY: &str = "model.note";

// ---------------------------------------------------------------------------------------------
// The schema: a fixed menu of fields, each history takes a subset.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    I64,
    I32,
    Utf8,
    F64,
    Vec2,
    Struct,
}

#[derive(Debug)]
struct FieldDef {
    /// Dotted name.
    name: &'static str,
    ty: Ty,
    /// Position in a row seed.
    slot: usize,
    /// Bit of the schema mask that includes it (`id` is always in).
    group: u8,
}

/// Pre-order, parents before children.
const MENU: [FieldDef; 8] = [
    FieldDef {
        name: "id",
        ty: Ty::I64,
        slot: 0,
        group: 0,
    },
    FieldDef {
        name: "n",
        ty: Ty::I32,
        slot: 1,
        group: 1,
    },
    FieldDef {
        name: "s",
        ty: Ty::Utf8,
        slot: 2,
        group: 2,
    },
    FieldDef {
        name: "f",
        ty: Ty::F64,
        slot: 3,
        group: 4,
    },
    FieldDef {
        name: "v",
        ty: Ty::Vec2,
        slot: 4,
        group: 8,
    },
    FieldDef {
        name: "st",
        ty: Ty::Struct,
        slot: 5,
        group: 16,
    },
    FieldDef {
        name: "st.a",
        ty: Ty::I32,
        slot: 6,
        group: 16,
    },
    FieldDef {
        name: "st.b",
        ty: Ty::Utf8,
        slot: 7,
        group: 16,
    },
];

fn is_top(f: &FieldDef) -> bool {
    !f.name.contains('.')
}

fn type_name(ty: Ty) -> &'static str {
    match ty {
        Ty::I64 => "int64",
        Ty::I32 => "int32",
        Ty::Utf8 => "utf8",
        Ty::F64 => "float64",
        Ty::Vec2 => "fixed_size_list<float32,2>",
        Ty::Struct => "struct",
    }
}

const STRINGS: [&str; 4] = ["", "a", "b", "ab"];
const FLOATS: [f64; 5] = [-1.5, -0.0, 0.0, 0.5, 2.0];
const ITEMS: [f32; 4] = [0.0, 1.0, -1.0, 0.5];

/// The value a seed byte stands for in a field of type `ty`: a small domain, so predicates,
/// ties and repeated values are common. One seed in eight is NULL.
fn value_of(ty: Ty, seed: u8) -> Value {
    if seed % 8 == 0 {
        return Value::Null;
    }
    let k = usize::from(seed / 8);
    match ty {
        Ty::I64 => Value::Int64(k as i64 % 6 - 2),
        Ty::I32 => Value::Int32(k as i32 % 6 - 2),
        Ty::Utf8 => Value::Utf8(STRINGS[k % STRINGS.len()].to_string()),
        Ty::F64 => Value::Float64(FLOATS[k % FLOATS.len()]),
        Ty::Vec2 => {
            let item = |j: usize| {
                if (k >> (4 + j)) % 8 == 7 {
                    None
                } else {
                    Some(ITEMS[(k >> (2 * j)) % ITEMS.len()])
                }
            };
            Value::Vector(vec![item(0), item(1)])
        }
        Ty::Struct => Value::Null,
    }
}

/// The `case.toml` cell of a (non-struct) model value.
fn cell_of(value: &Value) -> Cell {
    match value {
        Value::Null => Cell::null(),
        Value::Int64(i) => Cell::Int(*i),
        Value::Int32(i) => Cell::Int(i64::from(*i)),
        Value::Utf8(s) => Cell::Text(s.clone()),
        Value::Float64(x) => Cell::Float(*x),
        Value::Vector(items) => Cell::List(
            items
                .iter()
                .map(|x| x.map_or_else(Cell::null, |x| Cell::Float(f64::from(x))))
                .collect(),
        ),
        other => panic!("the model has no {other:?} leaves"),
    }
}

// ---------------------------------------------------------------------------------------------
// The model.
// ---------------------------------------------------------------------------------------------

/// Where a lineage sequence must live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arm {
    Absent,
    Inline,
    Column,
}

#[derive(Debug, Clone)]
struct MRow {
    /// The stable row id (unused with stable row ids off: the key is then the address).
    id: u64,
    created: u64,
    updated: u64,
    /// Leaf values by dotted name.
    cells: BTreeMap<&'static str, Value>,
    /// Validity of the struct `st`.
    st_valid: bool,
}

#[derive(Debug, Clone)]
struct MFrag {
    id: u64,
    /// By physical offset; `None` once deleted.
    rows: Vec<Option<MRow>>,
    /// The overlays, in stored order.
    overlays: Vec<MOverlay>,
    /// Row ids, created-at, last-updated-at.
    arms: [Arm; 3],
}

impl MFrag {
    fn live(&self) -> usize {
        self.rows.iter().flatten().count()
    }
}

/// What the model knows of an overlay: when it became effective and which fields it carries
/// (by name and generation, so a field dropped and added again is a different field).
#[derive(Debug, Clone)]
struct MOverlay {
    cv: u64,
    fields: BTreeSet<(&'static str, u32)>,
}

#[derive(Debug, Clone)]
struct MIndex {
    name: String,
    field: &'static str,
    vector: bool,
}

#[derive(Debug, Clone)]
struct MState {
    version: u64,
    fields: Vec<&'static FieldDef>,
    frags: Vec<MFrag>,
    next_row_id: u64,
    next_frag: u64,
    config: BTreeMap<String, String>,
    stable: bool,
    indices: Vec<MIndex>,
    /// Generation of every field in the schema (bumped each time a field is added).
    gens: BTreeMap<&'static str, u32>,
}

impl MState {
    fn leaves(&self) -> Vec<&'static FieldDef> {
        self.fields
            .iter()
            .copied()
            .filter(|f| f.ty != Ty::Struct)
            .collect()
    }

    /// Whether an overlay position for `field` of generation `generation` is still live.
    fn live(&self, (field, generation): (&'static str, u32)) -> bool {
        self.gens.get(field) == Some(&generation)
    }

    fn frag(&self, id: u64) -> Option<&MFrag> {
        self.frags.iter().find(|f| f.id == id)
    }

    fn frag_mut(&mut self, id: u64) -> &mut MFrag {
        self.frags.iter_mut().find(|f| f.id == id).unwrap()
    }

    /// The value a predicate or a query sees for `field` (a leaf, or the struct itself).
    fn value(&self, row: &MRow, field: &str) -> Value {
        if field == "st" {
            if !row.st_valid {
                return Value::Null;
            }
            let children = self
                .fields
                .iter()
                .filter(|f| f.name.starts_with("st."))
                .map(|f| row.cells[f.name].clone())
                .collect();
            return Value::Struct(children);
        }
        row.cells[field].clone()
    }

    /// The scan a reader must return: live rows, fragments in order, rows by offset.
    fn expected_scan(&self) -> Vec<ScanRow> {
        let mut out = Vec::new();
        for frag in &self.frags {
            for (offset, row) in frag.rows.iter().enumerate() {
                let Some(row) = row else { continue };
                out.push(ScanRow {
                    fragment: frag.id,
                    offset: offset as u64,
                    row_id: if self.stable {
                        row.id
                    } else {
                        row_address(frag.id, offset as u64)
                    },
                    created_at: row.created,
                    last_updated_at: row.updated,
                    values: self
                        .fields
                        .iter()
                        .filter(|f| is_top(f))
                        .map(|f| self.value(row, f.name))
                        .collect(),
                });
            }
        }
        out
    }

    /// The `(reader, writer)` flag words the content needs.
    fn expected_flags(&self) -> (u64, u64) {
        let mut reader = 0;
        if self.frags.iter().any(|f| f.live() < f.rows.len()) {
            reader |= flags::FLAG_DELETION_FILES;
        }
        if self.stable {
            reader |= flags::FLAG_STABLE_ROW_IDS;
        }
        if self.frags.iter().any(|f| !f.overlays.is_empty()) {
            reader |= flags::FLAG_UNSTABLE_DATA_OVERLAY_FILES;
        }
        if self.frags.iter().any(|f| f.arms.contains(&Arm::Column)) {
            reader |= flags::FLAG_SPILLED_ROW_LINEAGE;
        }
        let config = if self.config.is_empty() {
            0
        } else {
            flags::FLAG_TABLE_CONFIG
        };
        (reader, reader | config)
    }

    /// Spilling on, and the budget: the table config as the placement rule reads it.
    fn spill(&self) -> (bool, usize) {
        let on = self
            .config
            .get(SPILL_KEY)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let budget = self
            .config
            .get(INLINE_MAX_BYTES_KEY)
            .map_or(DEFAULT_INLINE_MAX_BYTES, |v| v.parse().unwrap());
        (on, budget)
    }
}

/// A model predicate (SQL three-valued logic, no casts: literals have the field's type).
#[derive(Debug, Clone)]
enum MPred {
    Cmp(&'static str, SpecOp, Value),
    In(&'static str, Vec<Value>),
    IsNull(&'static str),
    IsNotNull(&'static str),
    And(Vec<MPred>),
}

fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::Int64(x), Value::Int64(y)) => x.partial_cmp(y),
        (Value::Int32(x), Value::Int32(y)) => x.partial_cmp(y),
        (Value::Float64(x), Value::Float64(y)) => x.partial_cmp(y),
        (Value::Utf8(x), Value::Utf8(y)) => x.as_bytes().partial_cmp(y.as_bytes()),
        _ => panic!("model compares only scalars of one type: {a:?} vs {b:?}"),
    }
}

impl MPred {
    /// `Some(true)` TRUE, `Some(false)` FALSE, `None` UNKNOWN.
    fn eval(&self, state: &MState, row: &MRow) -> Option<bool> {
        use std::cmp::Ordering::*;
        match self {
            MPred::IsNull(f) => Some(state.value(row, f).is_null()),
            MPred::IsNotNull(f) => Some(!state.value(row, f).is_null()),
            MPred::Cmp(f, op, lit) => {
                let v = state.value(row, f);
                if v.is_null() {
                    return None;
                }
                let ord = compare(&v, lit);
                Some(match op {
                    SpecOp::Eq => ord == Some(Equal),
                    SpecOp::Ne => ord != Some(Equal),
                    SpecOp::Lt => ord == Some(Less),
                    SpecOp::Le => matches!(ord, Some(Less | Equal)),
                    SpecOp::Gt => ord == Some(Greater),
                    SpecOp::Ge => matches!(ord, Some(Greater | Equal)),
                    other => panic!("not a comparison: {other:?}"),
                })
            }
            MPred::In(f, items) => {
                let v = state.value(row, f);
                if v.is_null() {
                    return if items.is_empty() { Some(false) } else { None };
                }
                Some(items.iter().any(|i| compare(&v, i) == Some(Equal)))
            }
            MPred::And(parts) => {
                let mut out = Some(true);
                for p in parts {
                    match p.eval(state, row) {
                        Some(false) => return Some(false),
                        None => out = None,
                        Some(true) => {}
                    }
                }
                out
            }
        }
    }

    /// The model's flat filter: live rows where the predicate is TRUE, as (fragment, offset).
    fn filter(&self, state: &MState) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for frag in &state.frags {
            for (offset, row) in frag.rows.iter().enumerate() {
                if let Some(row) = row {
                    if self.eval(state, row) == Some(true) {
                        out.push((frag.id, offset as u64));
                    }
                }
            }
        }
        out.sort();
        out
    }

    fn to_spec(&self) -> PredicateSpec {
        let leaf = |field: &str, op: SpecOp, value: Option<Cell>| PredicateSpec::Leaf {
            field: field.to_string(),
            op,
            value,
        };
        match self {
            MPred::Cmp(f, op, v) => leaf(f, *op, Some(cell_of(v))),
            MPred::In(f, items) => leaf(
                f,
                SpecOp::In,
                Some(Cell::List(items.iter().map(cell_of).collect())),
            ),
            MPred::IsNull(f) => leaf(f, SpecOp::IsNull, None),
            MPred::IsNotNull(f) => leaf(f, SpecOp::IsNotNull, None),
            MPred::And(parts) => PredicateSpec::And {
                and: parts.iter().map(MPred::to_spec).collect(),
            },
        }
    }
}

/// A predicate over `field` (of type `ty`) drawn from `seed`, with literals from the value
/// domain. Vectors and structs only take the null tests.
fn predicate(field: &'static str, ty: Ty, seed: u64) -> MPred {
    if matches!(ty, Ty::Vec2 | Ty::Struct) {
        return if seed % 2 == 0 {
            MPred::IsNull(field)
        } else {
            MPred::IsNotNull(field)
        };
    }
    // Never NULL (seed % 8 != 0): a NULL literal makes every comparison UNKNOWN, which is dull.
    let lit = |s: u64| value_of(ty, (s % 30) as u8 * 8 + 1);
    match seed % 11 {
        0 => MPred::Cmp(field, SpecOp::Eq, lit(seed / 11)),
        1 => MPred::Cmp(field, SpecOp::Ne, lit(seed / 11)),
        2 => MPred::Cmp(field, SpecOp::Lt, lit(seed / 11)),
        3 => MPred::Cmp(field, SpecOp::Le, lit(seed / 11)),
        4 => MPred::Cmp(field, SpecOp::Gt, lit(seed / 11)),
        5 => MPred::Cmp(field, SpecOp::Ge, lit(seed / 11)),
        6 => MPred::In(field, vec![lit(seed / 11), lit(seed / 121)]),
        7 => MPred::IsNull(field),
        8 => MPred::IsNotNull(field),
        9 => MPred::And(vec![
            MPred::Cmp(field, SpecOp::Ge, lit(seed / 11)),
            MPred::Cmp(field, SpecOp::Le, lit(seed / 121)),
        ]),
        _ => MPred::Cmp(field, SpecOp::Eq, lit(seed / 7)),
    }
}

// ---------------------------------------------------------------------------------------------
// Seeds: what proptest generates and shrinks.
// ---------------------------------------------------------------------------------------------

/// One byte per menu slot: a row's values (and, in slot 5, the struct's validity).
type RowSeed = [u8; 8];

#[derive(Debug, Clone)]
struct OverlaySeed {
    frag: u16,
    /// 0 dense, 1 sparse, 2 auto.
    shape: u8,
    /// (field selector, offset selector, value seed).
    cells: Vec<(u16, u16, u8)>,
    /// Bit `i` (of the low 7) kills the overlay's `i`-th field (in name order): a tombstone, or
    /// with the high bit a reserved id.
    tombstone: u8,
    /// Store the value columns in reverse name order.
    reverse: bool,
}

#[derive(Debug, Clone)]
struct ConfigSeed {
    /// 0 leave, 1 `true`, 2 `TRUE`, 3 `false`, 4 unset.
    spill: u8,
    /// 0 leave, 1 unset, otherwise a budget from [`BUDGETS`].
    budget: u8,
    /// 0 leave, 1 set, 2 unset the unrelated key.
    note: u8,
}

const BUDGETS: [&str; 6] = ["0", "1", "4", "8", "16", "64"];

#[derive(Debug, Clone)]
enum OpSeed {
    Append(Vec<RowSeed>),
    Overlay(Vec<OverlaySeed>),
    Delete {
        frag: u16,
        offsets: Vec<u16>,
    },
    DeleteWhere {
        field: u16,
        pred: u64,
    },
    BuildIndex {
        field: u16,
        vector: bool,
        back: u16,
    },
    Merge {
        frag: u16,
        start: u16,
        len: u16,
    },
    Fold {
        frag: u16,
        policies: u32,
    },
    Rewrite {
        frag: u16,
        len: u16,
    },
    Retry {
        write: Box<OpSeed>,
        conflict: Box<OpSeed>,
    },
    Config(ConfigSeed),
    /// Add a menu field the schema lacks (again, if it was dropped).
    AddField(u16),
    /// Drop a top-level field other than `id`.
    DropField(u16),
}

#[derive(Debug, Clone)]
struct History {
    /// Which optional fields the schema has (see [`FieldDef::group`]).
    schema: u8,
    stable: bool,
    config: ConfigSeed,
    rows: Vec<RowSeed>,
    /// (field selector, vector) per index built in the `create` commit.
    indices: Vec<(u16, bool)>,
    ops: Vec<OpSeed>,
    /// Drives the query predicates and vectors.
    query_seed: u64,
}

fn row_seed() -> impl Strategy<Value = RowSeed> {
    any::<[u8; 8]>()
}

fn config_seed() -> impl Strategy<Value = ConfigSeed> {
    (0u8..5, 0u8..8, 0u8..3).prop_map(|(spill, budget, note)| ConfigSeed {
        spill,
        budget,
        note,
    })
}

fn overlay_seed() -> impl Strategy<Value = OverlaySeed> {
    (
        any::<u16>(),
        0u8..3,
        proptest::collection::vec((any::<u16>(), any::<u16>(), any::<u8>()), 1..6),
        prop_oneof![3 => Just(0u8), 1 => any::<u8>()],
        any::<bool>(),
    )
        .prop_map(|(frag, shape, cells, tombstone, reverse)| OverlaySeed {
            frag,
            shape,
            cells,
            tombstone,
            reverse,
        })
}

fn append_seed() -> impl Strategy<Value = OpSeed> {
    proptest::collection::vec(row_seed(), 1..5).prop_map(OpSeed::Append)
}

fn overlay_op_seed() -> impl Strategy<Value = OpSeed> {
    proptest::collection::vec(overlay_seed(), 1..4).prop_map(OpSeed::Overlay)
}

fn delete_seed() -> impl Strategy<Value = OpSeed> {
    (any::<u16>(), proptest::collection::vec(any::<u16>(), 1..4))
        .prop_map(|(frag, offsets)| OpSeed::Delete { frag, offsets })
}

fn build_index_seed() -> impl Strategy<Value = OpSeed> {
    (any::<u16>(), any::<bool>(), 0u16..4).prop_map(|(field, vector, back)| OpSeed::BuildIndex {
        field,
        vector,
        back,
    })
}

fn op_seed() -> impl Strategy<Value = OpSeed> {
    let retry = (
        prop_oneof![append_seed(), overlay_op_seed()],
        prop_oneof![
            append_seed(),
            overlay_op_seed(),
            delete_seed(),
            build_index_seed(),
            config_seed().prop_map(OpSeed::Config),
        ],
    )
        .prop_map(|(w, c)| OpSeed::Retry {
            write: Box::new(w),
            conflict: Box::new(c),
        });
    prop_oneof![
        3 => append_seed(),
        6 => overlay_op_seed(),
        2 => delete_seed(),
        1 => (any::<u16>(), any::<u64>()).prop_map(|(field, pred)| OpSeed::DeleteWhere { field, pred }),
        2 => build_index_seed(),
        2 => (any::<u16>(), any::<u16>(), any::<u16>())
            .prop_map(|(frag, start, len)| OpSeed::Merge { frag, start, len }),
        2 => (any::<u16>(), any::<u32>()).prop_map(|(frag, policies)| OpSeed::Fold { frag, policies }),
        2 => (any::<u16>(), any::<u16>()).prop_map(|(frag, len)| OpSeed::Rewrite { frag, len }),
        2 => retry,
        1 => config_seed().prop_map(OpSeed::Config),
        1 => any::<u16>().prop_map(OpSeed::AddField),
        1 => any::<u16>().prop_map(OpSeed::DropField),
    ]
}

fn history() -> impl Strategy<Value = History> {
    (
        any::<u8>(),
        any::<bool>(),
        config_seed(),
        proptest::collection::vec(row_seed(), 0..6),
        proptest::collection::vec((any::<u16>(), any::<bool>()), 0..3),
        proptest::collection::vec(op_seed(), 0..MAX_STEPS),
        any::<u64>(),
    )
        .prop_map(
            |(schema, stable, config, rows, indices, ops, query_seed)| History {
                schema,
                stable,
                config,
                rows,
                indices,
                ops,
                query_seed,
            },
        )
}

// ---------------------------------------------------------------------------------------------
// Concretizing: seeds → steps, applied to the model as they are chosen.
// ---------------------------------------------------------------------------------------------

/// A history made concrete: the steps, the model after every version, and the query seed.
#[derive(Debug, Clone)]
struct Built {
    steps: Vec<Step>,
    /// `versions[n - 1]` is the model of version `n`.
    versions: Vec<MState>,
    query_seed: u64,
}

/// An overlay as the model applies it: every covered cell with the value it ends up holding
/// (dense widening already resolved against the version the writer read).
#[derive(Debug, Clone)]
struct Prepared {
    frag: u64,
    /// Cells of live (not tombstoned) positions.
    cells: Vec<(&'static str, u32, Value)>,
    /// The live positions' fields, with their generation.
    fields: BTreeSet<(&'static str, u32)>,
}

struct Builder {
    s: MState,
    versions: Vec<MState>,
    steps: Vec<Step>,
    next_index: usize,
}

fn pick<T: Copy>(choices: &[T], selector: u64) -> Option<T> {
    if choices.is_empty() {
        None
    } else {
        Some(choices[(selector % choices.len() as u64) as usize])
    }
}

/// Applies a config seed to a config map; returns what was set and unset.
fn config_change(
    config: &BTreeMap<String, String>,
    seed: &ConfigSeed,
    version: u64,
) -> (BTreeMap<String, String>, Vec<String>) {
    let mut set = BTreeMap::new();
    let mut unset = Vec::new();
    match seed.spill {
        1 => drop(set.insert(SPILL_KEY.to_string(), "true".to_string())),
        2 => drop(set.insert(SPILL_KEY.to_string(), "TRUE".to_string())),
        3 => drop(set.insert(SPILL_KEY.to_string(), "false".to_string())),
        4 if config.contains_key(SPILL_KEY) => unset.push(SPILL_KEY.to_string()),
        _ => {}
    }
    match seed.budget {
        0 => {}
        1 if config.contains_key(INLINE_MAX_BYTES_KEY) => {
            unset.push(INLINE_MAX_BYTES_KEY.to_string())
        }
        1 => {}
        b => drop(set.insert(
            INLINE_MAX_BYTES_KEY.to_string(),
            BUDGETS[usize::from(b - 2) % BUDGETS.len()].to_string(),
        )),
    }
    match seed.note {
        1 => drop(set.insert(NOTE_KEY.to_string(), version.to_string())),
        2 if config.contains_key(NOTE_KEY) => unset.push(NOTE_KEY.to_string()),
        _ => {}
    }
    (set, unset)
}

impl Builder {
    fn new(h: &History) -> Builder {
        let fields: Vec<&'static FieldDef> = MENU
            .iter()
            .filter(|f| f.group == 0 || h.schema & f.group != 0)
            .collect();
        let (config, _) = config_change(&BTreeMap::new(), &h.config, 1);
        let gens = fields.iter().map(|f| (f.name, 0)).collect();
        let mut b = Builder {
            s: MState {
                version: 0,
                fields,
                frags: Vec::new(),
                next_row_id: 0,
                next_frag: 0,
                config,
                stable: h.stable,
                indices: Vec::new(),
                gens,
            },
            versions: Vec::new(),
            steps: Vec::new(),
            next_index: 0,
        };
        let schema = b.schema_specs();
        let rows: Vec<Row> = h.rows.iter().map(|r| b.row_cells(r)).collect();
        if !h.rows.is_empty() {
            b.append_rows(&h.rows, 1);
        }
        let mut indices = Vec::new();
        for &(field, vector) in &h.indices {
            if let Some(ix) = b.new_index(u64::from(field), vector) {
                indices.push(IndexSpec {
                    name: ix.name.clone(),
                    fields: vec![ix.field.to_string()],
                    kind: if ix.vector {
                        IndexKindSpec::Vector
                    } else {
                        IndexKindSpec::Btree
                    },
                });
                b.s.indices.push(ix);
            }
        }
        b.steps.push(Step::Create {
            schema,
            rows,
            stable_row_ids: h.stable,
            config: b.s.config.clone(),
            indices,
        });
        b.commit();
        b
    }

    fn commit(&mut self) {
        self.s.version += 1;
        self.versions.push(self.s.clone());
    }

    fn schema_specs(&self) -> Vec<FieldSpec> {
        self.field_specs(&self.s.fields)
    }

    /// `case.toml` field specs of the top-level fields in `fields` (children nested).
    fn field_specs(&self, fields: &[&'static FieldDef]) -> Vec<FieldSpec> {
        let spec = |f: &FieldDef, children: Vec<FieldSpec>| FieldSpec {
            name: f.name.rsplit('.').next().unwrap().to_string(),
            data_type: type_name(f.ty).to_string(),
            id: None,
            nullable: true,
            children,
        };
        fields
            .iter()
            .filter(|f| is_top(f))
            .map(|f| {
                let children = fields
                    .iter()
                    .filter(|c| c.name.starts_with(&format!("{}.", f.name)))
                    .map(|c| spec(c, Vec::new()))
                    .collect();
                spec(f, children)
            })
            .collect()
    }

    fn row_values(&self, seed: &RowSeed) -> (BTreeMap<&'static str, Value>, bool) {
        // Always present: format v2.0 stores no struct validity, so the writer refuses a NULL
        // struct (as Lance 14 does).
        let _ = seed[5];
        let st_valid = true;
        let cells = self
            .s
            .leaves()
            .iter()
            .map(|f| {
                let v = if f.name.starts_with("st.") && !st_valid {
                    Value::Null
                } else {
                    value_of(f.ty, seed[f.slot])
                };
                (f.name, v)
            })
            .collect();
        (cells, st_valid)
    }

    fn row_cells(&self, seed: &RowSeed) -> Row {
        let (cells, st_valid) = self.row_values(seed);
        let mut row = Row::new();
        for f in self.s.fields.iter().filter(|f| is_top(f)) {
            let cell = if f.ty == Ty::Struct {
                if st_valid {
                    Cell::Struct(
                        cells
                            .iter()
                            .filter_map(|(name, v)| {
                                name.strip_prefix("st.")
                                    .map(|c| (c.to_string(), cell_of(v)))
                            })
                            .collect(),
                    )
                } else {
                    Cell::null()
                }
            } else {
                cell_of(&cells[f.name])
            };
            row.insert(f.name.to_string(), cell);
        }
        row
    }

    /// A fragment of freshly inserted rows, committed at `version`.
    fn append_rows(&mut self, seeds: &[RowSeed], version: u64) {
        let rows = seeds
            .iter()
            .enumerate()
            .map(|(i, seed)| {
                let (cells, st_valid) = self.row_values(seed);
                Some(MRow {
                    id: self.s.next_row_id + i as u64,
                    created: if self.s.stable { version } else { 1 },
                    updated: if self.s.stable { version } else { 1 },
                    cells,
                    st_valid,
                })
            })
            .collect();
        if self.s.stable {
            self.s.next_row_id += seeds.len() as u64;
        }
        let arm = if self.s.stable {
            Arm::Inline
        } else {
            Arm::Absent
        };
        self.s.frags.push(MFrag {
            id: self.s.next_frag,
            rows,
            overlays: Vec::new(),
            arms: [arm; 3],
        });
        self.s.next_frag += 1;
    }

    fn new_index(&mut self, field: u64, vector: bool) -> Option<MIndex> {
        let choices: Vec<&'static str> = self
            .s
            .leaves()
            .iter()
            .filter(|f| (f.ty == Ty::Vec2) == vector)
            .map(|f| f.name)
            .collect();
        let field = pick(&choices, field)?;
        let name = format!("idx{}", self.next_index);
        self.next_index += 1;
        Some(MIndex {
            name,
            field,
            vector,
        })
    }

    /// The overlays of an overlay seed list, prepared against the current state, as a step.
    fn prepare_overlays(&self, seeds: &[OverlaySeed]) -> Option<(Step, Vec<Prepared>)> {
        let frag_ids: Vec<u64> = self.s.frags.iter().map(|f| f.id).collect();
        let leaves = self.s.leaves();
        let mut specs = Vec::new();
        let mut prepared = Vec::new();
        for seed in seeds {
            let frag_id = pick(&frag_ids, u64::from(seed.frag))?;
            let frag = self.s.frag(frag_id)?;
            let rows = frag.rows.len() as u64;
            let mut given: BTreeMap<&'static str, BTreeMap<u32, Value>> = BTreeMap::new();
            for &(field, offset, value) in &seed.cells {
                let f = pick(&leaves, u64::from(field))?;
                given
                    .entry(f.name)
                    .or_default()
                    .insert((u64::from(offset) % rows) as u32, value_of(f.ty, value));
            }
            let shape = match seed.shape {
                0 => Shape::Dense,
                1 => Shape::Sparse,
                _ => Shape::Auto,
            };
            let dead: Vec<&'static str> = given
                .keys()
                .enumerate()
                .filter(|(i, _)| seed.tombstone >> (i % 7) & 1 == 1)
                .map(|(_, f)| *f)
                .collect();
            let mut cells = Vec::new();
            let union: BTreeSet<u32> = given.values().flat_map(|m| m.keys().copied()).collect();
            for (&field, by_offset) in given.iter().filter(|(f, _)| !dead.contains(f)) {
                let covered: Vec<u32> = if shape == Shape::Dense {
                    union.iter().copied().collect()
                } else {
                    by_offset.keys().copied().collect()
                };
                for offset in covered {
                    let value = match by_offset.get(&offset) {
                        Some(v) => v.clone(),
                        // Dense widening: the post-image as of the version the writer read.
                        None => frag.rows[offset as usize]
                            .as_ref()
                            .map_or(Value::Null, |r| r.cells[field].clone()),
                    };
                    cells.push((field, offset, value));
                }
            }
            prepared.push(Prepared {
                frag: frag_id,
                cells,
                fields: given
                    .keys()
                    .filter(|f| !dead.contains(f))
                    .map(|f| (*f, self.s.gens[f]))
                    .collect(),
            });
            let order: Option<Vec<String>> = seed
                .reverse
                .then(|| given.keys().rev().map(|f| f.to_string()).collect());
            specs.push(OverlaySpec {
                fragment: Some(frag_id),
                shape,
                cells: given
                    .iter()
                    .map(|(f, m)| {
                        (
                            f.to_string(),
                            m.iter().map(|(o, v)| (o.to_string(), cell_of(v))).collect(),
                        )
                    })
                    .collect(),
                fields: order,
                // Dead positions are tombstones (-2), or with the seed's high bit, relabelled to
                // another reserved id (-9) as a non-conforming writer might: readers ignore both.
                // (Not -3..-5: the writer stores those as non-null uint64 lineage columns.)
                tombstone: if seed.tombstone & 0x80 == 0 {
                    dead.iter().map(|f| f.to_string()).collect()
                } else {
                    Vec::new()
                },
                relabel: if seed.tombstone & 0x80 == 0 {
                    BTreeMap::new()
                } else {
                    dead.iter().map(|f| (f.to_string(), -9)).collect()
                },
                list_ancestors: true,
            });
        }
        let step = if specs.len() == 1 {
            let spec = specs.remove(0);
            Step::Overlay {
                fragment: spec.fragment,
                shape: Some(spec.shape),
                cells: Some(spec.cells),
                fields: spec.fields,
                tombstone: spec.tombstone,
                relabel: spec.relabel,
                list_ancestors: spec.list_ancestors,
                overlays: Vec::new(),
            }
        } else {
            Step::Overlay {
                fragment: None,
                shape: None,
                cells: None,
                fields: None,
                tombstone: Vec::new(),
                relabel: BTreeMap::new(),
                list_ancestors: true,
                overlays: specs,
            }
        };
        Some((step, prepared))
    }

    /// Lands prepared overlays at `version`: values (later overlays win), last-updated-at
    /// stamped for every covered offset with stable row ids, committed_version recorded.
    fn land_overlays(&mut self, prepared: &[Prepared], version: u64) {
        let stable = self.s.stable;
        let mut stamped: BTreeMap<u64, BTreeSet<u32>> = BTreeMap::new();
        for p in prepared {
            let frag = self.s.frag_mut(p.frag);
            for (field, offset, value) in &p.cells {
                if let Some(row) = frag.rows[*offset as usize].as_mut() {
                    row.cells.insert(field, value.clone());
                }
                stamped.entry(p.frag).or_default().insert(*offset);
            }
            frag.overlays.push(MOverlay {
                cv: version,
                fields: p.fields.clone(),
            });
        }
        if stable {
            for (id, offsets) in stamped {
                let frag = self.s.frag_mut(id);
                for o in offsets {
                    if let Some(row) = frag.rows[o as usize].as_mut() {
                        row.updated = version;
                    }
                }
                frag.arms[2] = Arm::Inline;
            }
        }
    }

    fn delete(&mut self, frag_id: u64, offsets: &BTreeSet<u32>) {
        let frag = self.s.frag_mut(frag_id);
        for &o in offsets {
            frag.rows[o as usize] = None;
        }
        self.s.frags.retain(|f| f.live() > 0);
    }

    /// One seed as zero or one step (a retry is one step of two versions). `protected`
    /// fragments must survive (the target of a retried overlay, when this is its conflict).
    fn op(&mut self, seed: &OpSeed, protected: &[u64]) -> bool {
        let v = self.s.version + 1;
        match seed {
            OpSeed::Append(rows) => {
                let cells = rows.iter().map(|r| self.row_cells(r)).collect();
                self.append_rows(rows, v);
                self.steps.push(Step::Append { rows: cells });
            }
            OpSeed::Overlay(seeds) => {
                let Some((step, prepared)) = self.prepare_overlays(seeds) else {
                    return false;
                };
                self.land_overlays(&prepared, v);
                self.steps.push(step);
            }
            OpSeed::Delete { frag, offsets } => {
                let ids: Vec<u64> = self.s.frags.iter().map(|f| f.id).collect();
                let Some(id) = pick(&ids, u64::from(*frag)) else {
                    return false;
                };
                let f = self.s.frag(id).unwrap();
                let set: BTreeSet<u32> = offsets
                    .iter()
                    .map(|o| (u64::from(*o) % f.rows.len() as u64) as u32)
                    .collect();
                let left = f
                    .rows
                    .iter()
                    .enumerate()
                    .filter(|(o, r)| r.is_some() && !set.contains(&(*o as u32)))
                    .count();
                if left == 0 && protected.contains(&id) {
                    return false;
                }
                self.delete(id, &set);
                self.steps.push(Step::Delete {
                    fragment: Some(id),
                    offsets: set.into_iter().collect(),
                    predicate: None,
                });
            }
            OpSeed::DeleteWhere { field, pred } => {
                let fields: Vec<&'static FieldDef> = self.s.fields.clone();
                let f = pick(&fields, u64::from(*field)).unwrap();
                let p = predicate(f.name, f.ty, *pred);
                let hits = p.filter(&self.s);
                let mut by_frag: BTreeMap<u64, BTreeSet<u32>> = BTreeMap::new();
                for (fr, o) in hits {
                    by_frag.entry(fr).or_default().insert(o as u32);
                }
                for (fr, set) in by_frag {
                    self.delete(fr, &set);
                }
                self.steps.push(Step::Delete {
                    fragment: None,
                    offsets: Vec::new(),
                    predicate: Some(p.to_spec()),
                });
            }
            OpSeed::BuildIndex {
                field,
                vector,
                back,
            } => {
                let Some(ix) = self.new_index(u64::from(*field), *vector) else {
                    return false;
                };
                let mut from = self.s.version - u64::from(*back) % self.s.version;
                // The build reads an older version only if the field already existed there.
                let generation = self.s.gens.get(ix.field).copied();
                while self.versions[from as usize - 1].gens.get(ix.field).copied() != generation {
                    from += 1;
                }
                self.steps.push(Step::BuildIndex {
                    name: ix.name.clone(),
                    fields: vec![ix.field.to_string()],
                    kind: if ix.vector {
                        IndexKindSpec::Vector
                    } else {
                        IndexKindSpec::Btree
                    },
                    built_from: (from != self.s.version).then_some(from),
                });
                self.s.indices.push(ix);
            }
            OpSeed::Merge { frag, start, len } => {
                let ids: Vec<u64> = self
                    .s
                    .frags
                    .iter()
                    .filter(|f| f.overlays.len() >= 2)
                    .map(|f| f.id)
                    .collect();
                let Some(id) = pick(&ids, u64::from(*frag)) else {
                    return false;
                };
                let f = self.s.frag_mut(id);
                let n = f.overlays.len();
                // Precedence, newest first: higher committed_version, then later position.
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by(|&a, &b| f.overlays[b].cv.cmp(&f.overlays[a].cv).then(b.cmp(&a)));
                let len = 2 + usize::from(*len) % (n - 1);
                let start = usize::from(*start) % (n - len + 1);
                let window: BTreeSet<usize> = order[start..start + len].iter().copied().collect();
                let newest = order[start];
                // The merged overlay carries the inputs' live fields; with none it vanishes.
                let state = self.s.clone();
                let f = self.s.frag_mut(id);
                let merged = MOverlay {
                    cv: f.overlays[newest].cv,
                    fields: window
                        .iter()
                        .flat_map(|&p| f.overlays[p].fields.iter().copied())
                        .filter(|&fg| state.live(fg))
                        .collect(),
                };
                let mut kept = Vec::new();
                for (p, o) in f.overlays.iter().enumerate() {
                    if p == newest && !merged.fields.is_empty() {
                        kept.push(merged.clone());
                    } else if !window.contains(&p) {
                        kept.push(o.clone());
                    }
                }
                f.overlays = kept;
                self.steps.push(Step::CompactOverlays {
                    fragment: id,
                    positions: window.into_iter().collect(),
                });
            }
            OpSeed::Fold { frag, policies } => {
                let ids: Vec<u64> = self
                    .s
                    .frags
                    .iter()
                    .filter(|f| !f.overlays.is_empty())
                    .map(|f| f.id)
                    .collect();
                let Some(id) = pick(&ids, u64::from(*frag)) else {
                    return false;
                };
                self.s.frag_mut(id).overlays.clear();
                let indices = self
                    .s
                    .indices
                    .iter()
                    .enumerate()
                    .map(|(i, ix)| {
                        let policy = if (policies >> (i % 32)) & 1 == 1 {
                            FoldPolicySpec::Rebuild
                        } else {
                            FoldPolicySpec::Drop
                        };
                        (ix.name.clone(), policy)
                    })
                    .collect();
                self.steps.push(Step::Fold {
                    fragment: id,
                    indices,
                });
            }
            OpSeed::Rewrite { frag, len } => {
                let n = self.s.frags.len();
                if n == 0 {
                    return false;
                }
                let len = 1 + usize::from(*len) % n.min(3);
                let start = usize::from(*frag) % (n - len + 1);
                let inputs: Vec<MFrag> = self.s.frags[start..start + len].to_vec();
                let rows: Vec<Option<MRow>> = inputs
                    .iter()
                    .flat_map(|f| f.rows.iter().flatten().cloned())
                    .map(Some)
                    .collect();
                let (spill, budget) = self.s.spill();
                let place = |len: usize| {
                    if spill && len > budget {
                        Arm::Column
                    } else {
                        Arm::Inline
                    }
                };
                let live: Vec<&MRow> = rows.iter().flatten().collect();
                let ids: Vec<u64> = live.iter().map(|r| r.id).collect();
                let created: Vec<u64> = live.iter().map(|r| r.created).collect();
                let updated: Vec<u64> = live.iter().map(|r| r.updated).collect();
                let arms = [
                    if self.s.stable {
                        place(RowIdSequence::from_values(&ids).encode().len())
                    } else {
                        Arm::Absent
                    },
                    place(
                        RowDatasetVersionSequence::from_versions(&created)
                            .encode()
                            .len(),
                    ),
                    place(
                        RowDatasetVersionSequence::from_versions(&updated)
                            .encode()
                            .len(),
                    ),
                ];
                let new = MFrag {
                    id: self.s.next_frag,
                    rows,
                    overlays: Vec::new(),
                    arms,
                };
                self.s.next_frag += 1;
                self.s
                    .frags
                    .splice(start..start + len, std::iter::once(new));
                self.steps.push(Step::RewriteRows {
                    fragments: inputs.iter().map(|f| f.id).collect(),
                    rows_per_fragment: None,
                });
            }
            OpSeed::Config(seed) => {
                let (set, unset) = config_change(&self.s.config, seed, v);
                for k in &unset {
                    self.s.config.remove(k);
                }
                self.s.config.extend(set.clone());
                self.steps.push(Step::SetConfig { set, unset });
            }
            OpSeed::Retry { write, conflict } => return self.retry(write, conflict),
            OpSeed::AddField(field) => {
                let absent: Vec<&'static FieldDef> = MENU
                    .iter()
                    .filter(|f| is_top(f) && !self.s.gens.contains_key(f.name))
                    .collect();
                let Some(top) = pick(&absent, u64::from(*field)) else {
                    return false;
                };
                let added: Vec<&'static FieldDef> = MENU
                    .iter()
                    .filter(|f| f.name == top.name || f.name.starts_with(&format!("{}.", top.name)))
                    .collect();
                let generation = self.versions.len() as u32;
                for f in &added {
                    self.s.fields.push(f);
                    self.s.gens.insert(f.name, generation);
                    for frag in &mut self.s.frags {
                        for row in frag.rows.iter_mut().flatten() {
                            if f.ty != Ty::Struct {
                                row.cells.insert(f.name, Value::Null);
                            }
                        }
                    }
                }
                let schema = self.field_specs(&added);
                self.steps.push(Step::AddFields { schema });
            }
            OpSeed::DropField(field) => {
                let droppable: Vec<&'static str> = self
                    .s
                    .fields
                    .iter()
                    .filter(|f| is_top(f) && f.name != "id")
                    .map(|f| f.name)
                    .collect();
                let Some(top) = pick(&droppable, u64::from(*field)) else {
                    return false;
                };
                let gone = |name: &str| name == top || name.starts_with(&format!("{top}."));
                self.s.fields.retain(|f| !gone(f.name));
                self.s.gens.retain(|name, _| !gone(name));
                self.s.indices.retain(|ix| !gone(ix.field));
                for frag in &mut self.s.frags {
                    for row in frag.rows.iter_mut().flatten() {
                        row.cells.retain(|name, _| !gone(name));
                    }
                }
                self.steps.push(Step::DropFields {
                    fields: vec![top.to_string()],
                });
            }
        }
        self.commit();
        true
    }

    /// `write` prepared against the current version, `conflict` committed first, `write`
    /// re-stamped at the version after it.
    fn retry(&mut self, write: &OpSeed, conflict: &OpSeed) -> bool {
        let (write_step, prepared, rows) = match write {
            OpSeed::Append(rows) => {
                let cells = rows.iter().map(|r| self.row_cells(r)).collect();
                (Step::Append { rows: cells }, Vec::new(), rows.clone())
            }
            OpSeed::Overlay(seeds) => match self.prepare_overlays(seeds) {
                Some((step, prepared)) => (step, prepared, Vec::new()),
                None => return false,
            },
            _ => return false,
        };
        let protected: Vec<u64> = prepared.iter().map(|p| p.frag).collect();
        let before = self.steps.len();
        if !self.op(conflict, &protected) {
            // Nothing to race with: an unrelated config change wins the race instead.
            let seed = ConfigSeed {
                spill: 0,
                budget: 0,
                note: 1,
            };
            assert!(self.op(&OpSeed::Config(seed), &protected));
        }
        let conflict_step = self.steps.pop().unwrap();
        assert_eq!(self.steps.len(), before);
        let v = self.s.version + 1;
        if rows.is_empty() {
            self.land_overlays(&prepared, v);
        } else {
            self.append_rows(&rows, v);
        }
        self.steps.push(Step::CommitRetry {
            write: Box::new(write_step),
            conflict: Box::new(conflict_step),
        });
        self.commit();
        true
    }
}

fn concretize(h: &History) -> Built {
    let mut b = Builder::new(h);
    for op in &h.ops {
        b.op(op, &[]);
    }
    Built {
        steps: b.steps,
        versions: b.versions,
        query_seed: h.query_seed,
    }
}

// ---------------------------------------------------------------------------------------------
// Running and checking.
// ---------------------------------------------------------------------------------------------

/// splitmix64: the query predicates and vectors, from the history's seed.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Executes `steps`, writes every version with the reference's writer into a fresh
/// directory, and reads all of them back with its reader.
fn run_on_disk(steps: &[Step]) -> Result<OnDisk, String> {
    let execution = scenario::execute(steps).map_err(|e| format!("execute: {e}"))?;
    let dir = tempfile::tempdir().unwrap();
    for snapshot in &execution.versions {
        write_version(dir.path(), snapshot, &WriteOptions::default())
            .map_err(|e| format!("write version {}: {e}", snapshot.version))?;
    }
    let dataset = Dataset::open(dir.path()).map_err(|e| format!("open: {e}"))?;
    let read = dataset.read_all().map_err(|e| format!("read back: {e}"))?;
    Ok(OnDisk {
        dir,
        read,
        executed: execution.versions.len(),
    })
}

/// A history written to disk and read back.
struct OnDisk {
    /// The dataset directory (removed on drop).
    dir: tempfile::TempDir,
    /// Every version as the reader returns it, oldest first.
    read: Vec<(Snapshot, Layout)>,
    /// How many versions the scenario committed.
    executed: usize,
}

fn same_scan(version: u64, got: &[ScanRow], want: &[ScanRow]) -> Result<(), String> {
    let key = |r: &ScanRow| {
        (
            r.fragment,
            r.offset,
            r.row_id,
            r.created_at,
            r.last_updated_at,
        )
    };
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let values_equal = g.values.len() == w.values.len()
            && g.values.iter().zip(&w.values).all(|(a, b)| a.identical(b));
        if key(g) != key(w) || !values_equal {
            return Err(format!(
                "v{version}: scan row {i} differs\n  read  {g:?}\n  model {w:?}"
            ));
        }
    }
    if got.len() != want.len() {
        return Err(format!(
            "v{version}: scan has {} rows, the model {}",
            got.len(),
            want.len()
        ));
    }
    Ok(())
}

fn arm_of(seq: &LineageSequence) -> Arm {
    match seq {
        LineageSequence::Absent => Arm::Absent,
        LineageSequence::Inline(_) => Arm::Inline,
        LineageSequence::Column => Arm::Column,
    }
}

/// Every invariant of one version (see the module docs).
fn check_version(
    root: &Path,
    (read, layout): &(Snapshot, Layout),
    model: &MState,
    seed: u64,
) -> Result<(), String> {
    let v = model.version;
    if read.version != v {
        return Err(format!(
            "read version {} where {v} was expected",
            read.version
        ));
    }
    // Scan.
    let got = scan(read, None).map_err(|e| format!("v{v}: scan: {e}"))?;
    same_scan(v, &got, &model.expected_scan())?;
    // Fragments: ids, overlay versions in order, lineage placement.
    let ids: Vec<u64> = read.fragments.iter().map(|f| f.id).collect();
    let want: Vec<u64> = model.frags.iter().map(|f| f.id).collect();
    if ids != want {
        return Err(format!("v{v}: fragments {ids:?}, the model {want:?}"));
    }
    for (f, m) in read.fragments.iter().zip(&model.frags) {
        let cvs: Vec<u64> = f.overlays.iter().map(|o| o.committed_version).collect();
        let want: Vec<u64> = m.overlays.iter().map(|o| o.cv).collect();
        if cvs != want || cvs.windows(2).any(|w| w[0] > w[1]) {
            return Err(format!(
                "v{v}: fragment {} overlay committed_versions {cvs:?}, the model {want:?}",
                f.id
            ));
        }
        let arms = [
            arm_of(&f.lineage.row_ids),
            arm_of(&f.lineage.created_at),
            arm_of(&f.lineage.last_updated_at),
        ];
        if arms != m.arms {
            return Err(format!(
                "v{v}: fragment {} lineage placed {arms:?}, the placement rule says {:?}",
                f.id, m.arms
            ));
        }
    }
    // Flags.
    flags::check_consistency(read).map_err(|e| format!("v{v}: flags: {e}"))?;
    let (reader, writer) = model.expected_flags();
    if (read.reader_flags, read.writer_flags) != (reader, writer) {
        return Err(format!(
            "v{v}: flags reader {} writer {}, the model says reader {reader} writer {writer}",
            read.reader_flags, read.writer_flags
        ));
    }
    // Manifest round trip.
    let bytes = std::fs::read(root.join(&layout.manifest)).unwrap();
    let decoded = decode_manifest_file(&bytes, &layout.manifest).map_err(|e| e.to_string())?;
    let again = encode_manifest_file(&decoded.manifest, decoded.index_section.as_ref())
        .map_err(|e| e.to_string())?;
    if again != bytes {
        return Err(format!(
            "v{v}: the decoded manifest re-encodes to other bytes"
        ));
    }
    let (manifest, section) = encode_manifest(read, layout).map_err(|e| e.to_string())?;
    let again = encode_manifest_file(&manifest, section.as_ref()).map_err(|e| e.to_string())?;
    if again != bytes {
        return Err(format!(
            "v{v}: the decoded snapshot and layout re-encode to other bytes"
        ));
    }
    // Index queries.
    let names: BTreeSet<&str> = read.indices.iter().map(|i| i.name.as_str()).collect();
    let want: BTreeSet<&str> = model.indices.iter().map(|i| i.name.as_str()).collect();
    if names != want {
        return Err(format!("v{v}: indices {names:?}, the model {want:?}"));
    }
    for (n, ix) in model.indices.iter().enumerate() {
        let id = field_id(&read.schema, ix.field).unwrap();
        let index = read.index(&ix.name).unwrap();
        let kind = if ix.vector {
            IndexKind::Vector
        } else {
            IndexKind::BTree
        };
        if index.fields != [id] || index.kind != kind {
            return Err(format!(
                "v{v}: index {} is {:?} on {:?}",
                ix.name, index.kind, index.fields
            ));
        }
        for q in 0..3u64 {
            let r = mix(seed ^ mix(v.wrapping_mul(131) + n as u64 * 7 + q));
            if ix.vector {
                check_vector_query(read, model, ix, r)?;
            } else {
                let ty = MENU.iter().find(|f| f.name == ix.field).unwrap().ty;
                let p = predicate(ix.field, ty, r);
                let spec = p.to_spec();
                let pred = spec
                    .to_predicate(&read.schema, &|name| field_id(&read.schema, name))
                    .map_err(|e| e.to_string())?;
                let got = reconcile(read, &ix.name, &pred)
                    .map_err(|e| format!("v{v}: reconcile {}: {e}", ix.name))?;
                let got: Vec<(u64, u64)> = got
                    .final_rows
                    .iter()
                    .map(|r| (r.fragment, r.offset))
                    .collect();
                let want = p.filter(model);
                if got != want {
                    return Err(format!(
                        "v{v}: index {} answers {p:?} with {got:?}, the model's flat filter {want:?}",
                        ix.name
                    ));
                }
            }
        }
    }
    Ok(())
}

fn check_vector_query(read: &Snapshot, model: &MState, ix: &MIndex, r: u64) -> Result<(), String> {
    let v = model.version;
    let query: Vec<f32> = (0..2)
        .map(|j| ITEMS[((r >> (8 * j)) % 4) as usize])
        .collect();
    let k = 1 + (r >> 24) as usize % 4;
    let got = reconcile_vector(read, &ix.name, &query, k)
        .map_err(|e| format!("v{v}: vector query {}: {e}", ix.name))?;
    let got: Vec<(u64, u64, u32)> = got
        .final_rows
        .iter()
        .map(|s| (s.row.fragment, s.row.offset, s.distance.to_bits()))
        .collect();
    let mut scored = Vec::new();
    for frag in &model.frags {
        for (offset, row) in frag.rows.iter().enumerate() {
            let Some(row) = row else { continue };
            let Value::Vector(items) = &row.cells[ix.field] else {
                continue;
            };
            let mut sum = 0.0f32;
            let mut ok = true;
            for (q, x) in query.iter().zip(items) {
                match x {
                    Some(x) => sum += (x - q) * (x - q),
                    None => ok = false,
                }
            }
            if ok {
                scored.push((
                    sum,
                    row_address(frag.id, offset as u64),
                    frag.id,
                    offset as u64,
                ));
            }
        }
    }
    scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let want: Vec<(u64, u64, u32)> = scored
        .iter()
        .take(k)
        .map(|s| (s.2, s.3, s.0.to_bits()))
        .collect();
    if got != want {
        return Err(format!(
            "v{v}: vector index {} top-{k} of {query:?} is {got:?}, the model's {want:?}",
            ix.name
        ));
    }
    Ok(())
}

/// The same steps with the spill config forced: `Some(budget)` spills at that budget, `None`
/// never spills. Other config keys are kept.
fn twin(steps: &[Step], spill: Option<&str>) -> Vec<Step> {
    let strip = |m: &mut BTreeMap<String, String>| {
        m.remove(SPILL_KEY);
        m.remove(INLINE_MAX_BYTES_KEY);
    };
    let mut out = steps.to_vec();
    for step in &mut out {
        let targets: Vec<&mut Step> = match step {
            Step::CommitRetry { conflict, .. } => vec![conflict.as_mut()],
            other => vec![other],
        };
        for t in targets {
            match t {
                Step::Create { config, .. } => {
                    strip(config);
                    if let Some(budget) = spill {
                        config.insert(SPILL_KEY.into(), "true".into());
                        config.insert(INLINE_MAX_BYTES_KEY.into(), budget.into());
                    }
                }
                Step::SetConfig { set, unset } => {
                    strip(set);
                    unset.retain(|k| k != SPILL_KEY && k != INLINE_MAX_BYTES_KEY);
                }
                _ => {}
            }
        }
    }
    out
}

/// Runs a built history and checks every version; `Err` describes the first broken invariant.
fn check_history(built: &Built) -> Result<(), String> {
    let OnDisk {
        dir,
        read,
        executed,
    } = run_on_disk(&built.steps)?;
    if executed != built.versions.len() || read.len() != built.versions.len() {
        return Err(format!(
            "{} versions executed, {} read back, the model has {}",
            executed,
            read.len(),
            built.versions.len()
        ));
    }
    for (snapshot, model) in read.iter().zip(&built.versions) {
        check_version(dir.path(), snapshot, model, built.query_seed)?;
    }
    // Twins differ from the history only where a rewrite places lineage; without one they
    // would repeat the same run.
    let rewritten = built
        .steps
        .iter()
        .any(|s| matches!(s, Step::RewriteRows { .. }));
    if !rewritten {
        return Ok(());
    }
    // When nothing spilled, the history itself is its inline twin.
    let spilled_here = built
        .versions
        .iter()
        .flat_map(|m| &m.frags)
        .any(|f| f.arms.contains(&Arm::Column));
    let twins: &[(&str, Option<&str>)] = if spilled_here {
        &[("inline twin", None), ("spilled twin", Some("0"))]
    } else {
        &[("spilled twin", Some("0"))]
    };
    for &(label, spill) in twins {
        let twin_run =
            run_on_disk(&twin(&built.steps, spill)).map_err(|e| format!("{label}: {e}"))?;
        let twin_read = &twin_run.read;
        if twin_read.len() != built.versions.len() {
            return Err(format!("{label}: {} versions read back", twin_read.len()));
        }
        for ((snapshot, _), model) in twin_read.iter().zip(&built.versions) {
            let got = scan(snapshot, None).map_err(|e| format!("{label}: scan: {e}"))?;
            same_scan(model.version, &got, &model.expected_scan())
                .map_err(|e| format!("{label}: {e}"))?;
        }
        let spilled = twin_read
            .iter()
            .flat_map(|(s, _)| &s.fragments)
            .any(|f| f.lineage.created_at == LineageSequence::Column);
        if spill.is_some() && !spilled {
            return Err(format!(
                "{label}: a rewrite at budget 0 must spill created-at"
            ));
        }
        if spill.is_none() && spilled {
            return Err(format!("{label}: spilled with spilling off"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Export: a history as a conformance case.
// ---------------------------------------------------------------------------------------------

fn requirement_index() -> RequirementIndex {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    RequirementIndex::load(&root.join("spec/requirements.toml")).unwrap()
}

/// `built` as a `case.toml` case: its steps, a query per index at every version it exists, and
/// requirement ids picked by the operations it uses.
fn export_case(built: &Built, why: &str) -> Case {
    let index = requirement_index();
    let mut wanted = vec!["OVL-PREC-1", "OVL-COV-1"];
    let mut requires = BTreeSet::new();
    let visit = |step: &Step, wanted: &mut Vec<&'static str>| match step {
        Step::Overlay { .. } => wanted.extend(["OVL-LIN-1", "OVL-SHAPE-1", "OVL-SHAPE-2"]),
        Step::Delete { .. } => wanted.extend(["OVL-DEL-1"]),
        Step::BuildIndex { .. } => wanted.extend(["OVL-IDX-2", "OVL-QRY-1"]),
        Step::CompactOverlays { .. } => wanted.extend(["OVL-MERGE-1"]),
        Step::Fold { .. } => wanted.extend(["OVL-FOLD-1"]),
        Step::RewriteRows { .. } => wanted.extend(["OVL-RWR-1", "LIN-PLACE-2"]),
        Step::CommitRetry { .. } => wanted.extend(["OVL-VER-2"]),
        _ => {}
    };
    for step in &built.steps {
        visit(step, &mut wanted);
        if let Step::CommitRetry { write, conflict } = step {
            visit(write, &mut wanted);
            visit(conflict, &mut wanted);
        }
    }
    let mut requirements: Vec<String> = Vec::new();
    for id in wanted {
        if index.levels.contains_key(id) && !requirements.iter().any(|r| r == id) {
            requirements.push(id.to_string());
        }
    }
    let last = built.versions.last().unwrap();
    if last.stable {
        requires.insert(lance_conformance::case::Capability::StableRowIds);
    }
    requires.insert(lance_conformance::case::Capability::Overlays);
    let mut queries = Vec::new();
    let mut names: Vec<(String, &'static str, bool)> = Vec::new();
    for m in &built.versions {
        for ix in &m.indices {
            if !names.iter().any(|(n, _, _)| n == &ix.name) {
                names.push((ix.name.clone(), ix.field, ix.vector));
            }
        }
    }
    for (name, field, vector) in names {
        let at: Vec<u64> = built
            .versions
            .iter()
            .filter(|m| m.indices.iter().any(|i| i.name == name))
            .map(|m| m.version)
            .collect();
        queries.push(QuerySpec {
            name: format!("{name}: {field}"),
            index: name,
            predicate: (!vector).then(|| PredicateSpec::Leaf {
                field: field.to_string(),
                op: SpecOp::IsNotNull,
                value: None,
            }),
            vector: vector.then(|| vec![0.0, 1.0]),
            k: vector.then_some(3),
            at,
        });
    }
    let binding = requirements
        .iter()
        .any(|r| index.levels.get(r).is_some_and(|l| l.starts_with("MUST")));
    Case {
        id: "model-based-history".into(),
        title: "A history found by the model-based property test".into(),
        requirements,
        level: if binding { Level::Must } else { Level::Should },
        tags: vec!["model-based".into()],
        requires: requires.into_iter().collect(),
        description: format!(
            "Exported by tests/model_based.rs. The reference broke this invariant:\n{why}\n"
        ),
        expect_error: None,
        queries,
        steps: built.steps.clone(),
    }
}

/// Writes `case` to `path` (a file, or `case.toml` inside a directory).
fn write_case(case: &Case, path: &Path) -> PathBuf {
    let file = if path.is_dir() {
        path.join("case.toml")
    } else {
        path.to_path_buf()
    };
    std::fs::write(&file, toml::to_string(case).unwrap()).unwrap();
    file
}

fn export_if_asked(built: &Built, why: &str) {
    if let Some(path) = std::env::var_os(EXPORT_VAR) {
        let file = write_case(&export_case(built, why), Path::new(&path));
        eprintln!("model_based: failing history written to {}", file.display());
    }
}

// ---------------------------------------------------------------------------------------------
// The tests.
// ---------------------------------------------------------------------------------------------

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/model_based.txt"
        )))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_histories_read_back_as_the_model_predicts(h in history()) {
        // covers: OVL-PREC-1, OVL-COV-2, OVL-DEL-1, OVL-LIN-1, OVL-IDX-2, OVL-QRY-1, OVL-MERGE-1, OVL-FOLD-1, OVL-RWR-1, OVL-VER-2, LIN-PLACE-2
        let built = concretize(&h);
        if let Err(why) = check_history(&built) {
            export_if_asked(&built, &why);
            prop_assert!(false, "{}\nsteps:\n{}", why, toml::to_string(&export_case(&built, &why)).unwrap());
        }
    }
}

/// Some generated histories, deterministically.
fn sample_histories(n: usize) -> Vec<Built> {
    let mut runner = TestRunner::deterministic();
    let strategy = history();
    (0..n)
        .map(|_| concretize(&strategy.new_tree(&mut runner).unwrap().current()))
        .collect()
}

#[test]
fn exported_histories_load_as_cases_and_replay_identically() {
    let dir = tempfile::tempdir().unwrap();
    let index = requirement_index();
    for (i, built) in sample_histories(24).iter().enumerate() {
        let case = export_case(built, "(exporter test)");
        let file = write_case(&case, &dir.path().join(format!("case{i}.toml")));
        let loaded = Case::load(&file).unwrap();
        loaded.validate(&index).unwrap();
        assert_eq!(loaded.steps, built.steps, "history {i}: steps survive TOML");
        let a = scenario::execute(&built.steps).unwrap();
        let b = scenario::execute(&loaded.steps).unwrap();
        assert_eq!(a.versions.len(), b.versions.len());
        for (x, y) in a.versions.iter().zip(&b.versions) {
            assert_eq!(format!("{x:?}"), format!("{y:?}"), "history {i}");
        }
    }
    let dir_target = tempfile::tempdir().unwrap();
    let written = write_case(
        &export_case(&sample_histories(1)[0], "x"),
        dir_target.path(),
    );
    assert_eq!(written, dir_target.path().join("case.toml"));
}

#[test]
fn generated_histories_exercise_every_operation() {
    let mut seen = BTreeSet::new();
    for built in sample_histories(64) {
        for step in &built.steps {
            seen.insert(step.op());
            match step {
                Step::Overlay { overlays, .. } if overlays.len() > 1 => {
                    seen.insert("overlay (several in one commit)");
                }
                Step::Delete {
                    predicate: Some(_), ..
                } => {
                    seen.insert("delete (where)");
                }
                Step::BuildIndex {
                    built_from: Some(_),
                    ..
                } => {
                    seen.insert("build_index (racing)");
                }
                Step::Overlay {
                    tombstone,
                    relabel,
                    overlays,
                    ..
                } => {
                    if !tombstone.is_empty() || overlays.iter().any(|o| !o.tombstone.is_empty()) {
                        seen.insert("overlay (tombstoned position)");
                    }
                    if !relabel.is_empty() || overlays.iter().any(|o| !o.relabel.is_empty()) {
                        seen.insert("overlay (relabelled position)");
                    }
                }
                _ => {}
            }
        }
        if built
            .versions
            .iter()
            .flat_map(|m| &m.frags)
            .any(|f| f.arms.contains(&Arm::Column))
        {
            seen.insert("spilled lineage");
        }
        if built.versions.iter().any(|m| !m.stable) {
            seen.insert("stable row ids off");
        }
    }
    for op in [
        "create",
        "append",
        "overlay",
        "overlay (several in one commit)",
        "delete",
        "delete (where)",
        "build_index",
        "build_index (racing)",
        "compact_overlays",
        "fold",
        "rewrite_rows",
        "commit_retry",
        "set_config",
        "add_fields",
        "drop_fields",
        "overlay (tombstoned position)",
        "overlay (relabelled position)",
        "spilled lineage",
        "stable row ids off",
    ] {
        assert!(
            seen.contains(op),
            "64 generated histories never {op}: {seen:?}"
        );
    }
}

#[test]
fn r_index_build_racing_a_fold_is_not_stale() {
    // covers: OVL-QRY-4, OVL-FOLD-5
    // Found by this test (fixed in index_build): an index reads version 2, an overlay commits
    // at 3 and a fold at 4 removes it; the index commits at 5 and must not serve the vector it
    // read for the folded fragment.
    let h = History {
        schema: 8,
        stable: false,
        config: ConfigSeed {
            spill: 0,
            budget: 0,
            note: 0,
        },
        rows: Vec::new(),
        indices: Vec::new(),
        ops: vec![
            OpSeed::Append(vec![[0; 8]]),
            OpSeed::Overlay(vec![OverlaySeed {
                frag: 0,
                shape: 1,
                cells: vec![(1, 0, 197)],
                tombstone: 0,
                reverse: false,
            }]),
            OpSeed::Fold {
                frag: 0,
                policies: 0,
            },
            OpSeed::BuildIndex {
                field: 0,
                vector: true,
                back: 2,
            },
        ],
        query_seed: 11019143431354837550,
    };
    let built = concretize(&h);
    assert!(matches!(
        built.steps.last(),
        Some(Step::BuildIndex {
            built_from: Some(2),
            ..
        })
    ));
    check_history(&built).unwrap();
}
