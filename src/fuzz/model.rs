//! The model: a fixed menu of schema fields and a table of rows per fragment, with no bitmaps,
//! ranks or encodings.
//!
//! Invariant: the model is plain rows keyed by stable row id (or address), their leaf values,
//! created-at and last-updated-at, per fragment the overlays' `committed_version`s and where
//! each lineage sequence must live; it knows nothing of bitmaps, ranks or encodings (the one
//! exception: a sequence's encoded length, which the placement rule is stated in). It is what
//! the generator ([`super::builder`]) resolves seeds against, and what the model-based test
//! checks the reference's read-back against.
// The model's own consistency is asserted: it is driven by the generator's seeds, never by
// testee output, so a panic here is a generator bug.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};

use lance_reference::flags;
use lance_reference::lineage::{DEFAULT_INLINE_MAX_BYTES, INLINE_MAX_BYTES_KEY, SPILL_KEY};
use lance_reference::model::Value;
use lance_reference::scan::{ScanRow, row_address};

use crate::case::{Cell, IndexKindSpec, Op as SpecOp, PredicateSpec};

// ---------------------------------------------------------------------------------------------
// The schema: a fixed menu of fields, each history takes a subset.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// A menu field's type.
pub enum Ty {
    /// `int64`.
    I64,
    /// `int32`.
    I32,
    /// `utf8`.
    Utf8,
    /// `float64`.
    F64,
    /// `fixed_size_list<float32,2>`.
    Vec2,
    /// `struct`.
    Struct,
}

#[derive(Debug)]
/// One field of the menu.
pub struct FieldDef {
    /// Dotted name.
    pub name: &'static str,
    /// Its type.
    pub ty: Ty,
    /// Position in a row seed.
    pub slot: usize,
    /// Bit of the schema mask that includes it (`id` is always in).
    pub group: u8,
}

/// Pre-order, parents before children.
pub const MENU: [FieldDef; 8] = [
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

/// Whether `f` is a top-level field.
pub fn is_top(f: &FieldDef) -> bool {
    !f.name.contains('.')
}

/// The `case.toml` type name.
pub fn type_name(ty: Ty) -> &'static str {
    match ty {
        Ty::I64 => "int64",
        Ty::I32 => "int32",
        Ty::Utf8 => "utf8",
        Ty::F64 => "float64",
        Ty::Vec2 => "fixed_size_list<float32,2>",
        Ty::Struct => "struct",
    }
}

/// The string domain.
pub const STRINGS: [&str; 4] = ["", "a", "b", "ab"];
/// The float domain.
pub const FLOATS: [f64; 5] = [-1.5, -0.0, 0.0, 0.5, 2.0];
/// The vector item domain.
pub const ITEMS: [f32; 4] = [0.0, 1.0, -1.0, 0.5];

/// The value a seed byte stands for in a field of type `ty`: a small domain, so predicates,
/// ties and repeated values are common. One seed in eight is NULL.
pub fn value_of(ty: Ty, seed: u8) -> Value {
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
pub fn cell_of(value: &Value) -> Cell {
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
pub enum Arm {
    /// No sequence (row ids with stable row ids off).
    Absent,
    /// Inline in the manifest.
    Inline,
    /// A hidden column of a data file.
    Column,
}

#[derive(Debug, Clone)]
/// A live row.
pub struct MRow {
    /// The stable row id (unused with stable row ids off: the key is then the address).
    pub id: u64,
    /// Created-at version.
    pub created: u64,
    /// Last-updated-at version.
    pub updated: u64,
    /// Leaf values by dotted name.
    pub cells: BTreeMap<&'static str, Value>,
    /// Validity of the struct `st`.
    pub st_valid: bool,
}

#[derive(Debug, Clone)]
/// A fragment.
pub struct MFrag {
    /// Fragment id.
    pub id: u64,
    /// By physical offset; `None` once deleted.
    pub rows: Vec<Option<MRow>>,
    /// The overlays, in stored order.
    pub overlays: Vec<MOverlay>,
    /// Row ids, created-at, last-updated-at.
    pub arms: [Arm; 3],
}

impl MFrag {
    /// Live rows.
    pub fn live(&self) -> usize {
        self.rows.iter().flatten().count()
    }
}

/// What the model knows of an overlay: when it became effective and which fields it carries
/// (by name and generation, so a field dropped and added again is a different field).
#[derive(Debug, Clone)]
pub struct MOverlay {
    /// Its `committed_version`.
    pub cv: u64,
    /// Its live fields (name, generation).
    pub fields: BTreeSet<(&'static str, u32)>,
}

#[derive(Debug, Clone)]
/// An index.
pub struct MIndex {
    /// Name.
    pub name: String,
    /// The key field.
    pub field: &'static str,
    /// A vector index.
    pub vector: bool,
}

impl MIndex {
    /// The case step's index kind.
    pub fn kind(&self) -> IndexKindSpec {
        if self.vector {
            IndexKindSpec::Vector
        } else {
            IndexKindSpec::Btree
        }
    }
}

#[derive(Debug, Clone)]
/// The table at one version.
pub struct MState {
    /// The version.
    pub version: u64,
    /// The schema's fields, pre-order.
    pub fields: Vec<&'static FieldDef>,
    /// Fragments in manifest order.
    pub frags: Vec<MFrag>,
    /// The next stable row id.
    pub next_row_id: u64,
    /// The next fragment id.
    pub next_frag: u64,
    /// The table config.
    pub config: BTreeMap<String, String>,
    /// Stable row ids on.
    pub stable: bool,
    /// The indices.
    pub indices: Vec<MIndex>,
    /// Generation of every field in the schema (bumped each time a field is added).
    pub gens: BTreeMap<&'static str, u32>,
}

impl MState {
    /// The non-struct fields.
    pub fn leaves(&self) -> Vec<&'static FieldDef> {
        self.fields
            .iter()
            .copied()
            .filter(|f| f.ty != Ty::Struct)
            .collect()
    }

    /// Whether an overlay position for `field` of generation `generation` is still live.
    pub fn live(&self, (field, generation): (&'static str, u32)) -> bool {
        self.gens.get(field) == Some(&generation)
    }

    /// Fragment `id`.
    pub fn frag(&self, id: u64) -> Option<&MFrag> {
        self.frags.iter().find(|f| f.id == id)
    }

    /// Fragment `id`, mutably (it must exist).
    pub fn frag_mut(&mut self, id: u64) -> &mut MFrag {
        self.frags.iter_mut().find(|f| f.id == id).unwrap()
    }

    /// The value a predicate or a query sees for `field` (a leaf, or the struct itself).
    pub fn value(&self, row: &MRow, field: &str) -> Value {
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
    pub fn expected_scan(&self) -> Vec<ScanRow> {
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
    pub fn expected_flags(&self) -> (u64, u64) {
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
    pub fn spill(&self) -> (bool, usize) {
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
pub enum MPred {
    /// `field op literal`.
    Cmp(&'static str, SpecOp, Value),
    /// `field IN (..)`.
    In(&'static str, Vec<Value>),
    /// `field IS NULL`.
    IsNull(&'static str),
    /// `field IS NOT NULL`.
    IsNotNull(&'static str),
    /// Every part TRUE.
    And(Vec<MPred>),
}

/// Orders two scalars of one type.
pub fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
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
    pub fn eval(&self, state: &MState, row: &MRow) -> Option<bool> {
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
    pub fn filter(&self, state: &MState) -> Vec<(u64, u64)> {
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

    /// The predicate in `case.toml` form.
    pub fn to_spec(&self) -> PredicateSpec {
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
pub fn predicate(field: &'static str, ty: Ty, seed: u64) -> MPred {
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
