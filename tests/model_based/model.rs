//! The model: a fixed menu of schema fields and a table of rows per fragment, with no bitmaps,
//! ranks or encodings (see the binary's docs for what it knows).

use super::*;

// ---------------------------------------------------------------------------------------------
// The schema: a fixed menu of fields, each history takes a subset.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    I64,
    I32,
    Utf8,
    F64,
    Vec2,
    Struct,
}

#[derive(Debug)]
pub(crate) struct FieldDef {
    /// Dotted name.
    pub(crate) name: &'static str,
    pub(crate) ty: Ty,
    /// Position in a row seed.
    pub(crate) slot: usize,
    /// Bit of the schema mask that includes it (`id` is always in).
    pub(crate) group: u8,
}

/// Pre-order, parents before children.
pub(crate) const MENU: [FieldDef; 8] = [
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

pub(crate) fn is_top(f: &FieldDef) -> bool {
    !f.name.contains('.')
}

pub(crate) fn type_name(ty: Ty) -> &'static str {
    match ty {
        Ty::I64 => "int64",
        Ty::I32 => "int32",
        Ty::Utf8 => "utf8",
        Ty::F64 => "float64",
        Ty::Vec2 => "fixed_size_list<float32,2>",
        Ty::Struct => "struct",
    }
}

pub(crate) const STRINGS: [&str; 4] = ["", "a", "b", "ab"];
pub(crate) const FLOATS: [f64; 5] = [-1.5, -0.0, 0.0, 0.5, 2.0];
pub(crate) const ITEMS: [f32; 4] = [0.0, 1.0, -1.0, 0.5];

/// The value a seed byte stands for in a field of type `ty`: a small domain, so predicates,
/// ties and repeated values are common. One seed in eight is NULL.
pub(crate) fn value_of(ty: Ty, seed: u8) -> Value {
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
pub(crate) fn cell_of(value: &Value) -> Cell {
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
pub(crate) enum Arm {
    Absent,
    Inline,
    Column,
}

#[derive(Debug, Clone)]
pub(crate) struct MRow {
    /// The stable row id (unused with stable row ids off: the key is then the address).
    pub(crate) id: u64,
    pub(crate) created: u64,
    pub(crate) updated: u64,
    /// Leaf values by dotted name.
    pub(crate) cells: BTreeMap<&'static str, Value>,
    /// Validity of the struct `st`.
    pub(crate) st_valid: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct MFrag {
    pub(crate) id: u64,
    /// By physical offset; `None` once deleted.
    pub(crate) rows: Vec<Option<MRow>>,
    /// The overlays, in stored order.
    pub(crate) overlays: Vec<MOverlay>,
    /// Row ids, created-at, last-updated-at.
    pub(crate) arms: [Arm; 3],
}

impl MFrag {
    pub(crate) fn live(&self) -> usize {
        self.rows.iter().flatten().count()
    }
}

/// What the model knows of an overlay: when it became effective and which fields it carries
/// (by name and generation, so a field dropped and added again is a different field).
#[derive(Debug, Clone)]
pub(crate) struct MOverlay {
    pub(crate) cv: u64,
    pub(crate) fields: BTreeSet<(&'static str, u32)>,
}

#[derive(Debug, Clone)]
pub(crate) struct MIndex {
    pub(crate) name: String,
    pub(crate) field: &'static str,
    pub(crate) vector: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct MState {
    pub(crate) version: u64,
    pub(crate) fields: Vec<&'static FieldDef>,
    pub(crate) frags: Vec<MFrag>,
    pub(crate) next_row_id: u64,
    pub(crate) next_frag: u64,
    pub(crate) config: BTreeMap<String, String>,
    pub(crate) stable: bool,
    pub(crate) indices: Vec<MIndex>,
    /// Generation of every field in the schema (bumped each time a field is added).
    pub(crate) gens: BTreeMap<&'static str, u32>,
}

impl MState {
    pub(crate) fn leaves(&self) -> Vec<&'static FieldDef> {
        self.fields
            .iter()
            .copied()
            .filter(|f| f.ty != Ty::Struct)
            .collect()
    }

    /// Whether an overlay position for `field` of generation `generation` is still live.
    pub(crate) fn live(&self, (field, generation): (&'static str, u32)) -> bool {
        self.gens.get(field) == Some(&generation)
    }

    pub(crate) fn frag(&self, id: u64) -> Option<&MFrag> {
        self.frags.iter().find(|f| f.id == id)
    }

    pub(crate) fn frag_mut(&mut self, id: u64) -> &mut MFrag {
        self.frags.iter_mut().find(|f| f.id == id).unwrap()
    }

    /// The value a predicate or a query sees for `field` (a leaf, or the struct itself).
    pub(crate) fn value(&self, row: &MRow, field: &str) -> Value {
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
    pub(crate) fn expected_scan(&self) -> Vec<ScanRow> {
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
    pub(crate) fn expected_flags(&self) -> (u64, u64) {
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
    pub(crate) fn spill(&self) -> (bool, usize) {
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
pub(crate) enum MPred {
    Cmp(&'static str, SpecOp, Value),
    In(&'static str, Vec<Value>),
    IsNull(&'static str),
    IsNotNull(&'static str),
    And(Vec<MPred>),
}

pub(crate) fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
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
    pub(crate) fn eval(&self, state: &MState, row: &MRow) -> Option<bool> {
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
    pub(crate) fn filter(&self, state: &MState) -> Vec<(u64, u64)> {
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

    pub(crate) fn to_spec(&self) -> PredicateSpec {
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
pub(crate) fn predicate(field: &'static str, ty: Ty, seed: u64) -> MPred {
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
