//! Query reconciliation: answering a query from a possibly stale index and still being right.
//!
//! Invariant: **a reconciled query returns exactly what a flat scan of the resolved table
//! returns.** For scalar predicates `reconcile(..).final_rows == flat_filter(..)`; for vector
//! top-k `reconcile_vector(..).final_rows == flat_top_k(..)`. It holds because an index entry is
//! trusted only when its row is outside the exclusion set ([`crate::exclusion`]), where the
//! index's value still equals the current one, and every other row that could match (the whole
//! exclusion set, plus every row of a fragment the index does not cover) is evaluated on its
//! current, resolved value.
//!
//! # Scalar reconciliation ([`reconcile`])
//!
//! - `candidates`: the rows whose *indexed* value (as of the index's `dataset_version`) makes the
//!   predicate TRUE, for fragments the index covers that still exist, minus rows deleted now
//!   (current deletion vectors apply to index results).
//! - `excluded`: the candidates inside the exclusion set; they are removed, their indexed value
//!   may be stale.
//! - `reevaluated`: the **whole** exclusion set, not just the excluded candidates (a row whose
//!   new value matches would otherwise never be found), plus every live row of every fragment
//!   the index does not cover (the flat path). Deleted rows are never evaluated: they do not
//!   exist. `rematched` lists those that match on their current value.
//! - `final_rows`: `(candidates − excluded) ∪ rematched`, sorted by (fragment, offset).
//!
//! The index answers only predicates whose every leaf is on its first field (its key). A
//! predicate touching any other field is [`QueryError::NotIndexable`]; [`flat_filter`] still
//! answers it. (A real engine would split the predicate and refine; the reference keeps the
//! four sets above meaningful instead.)
//!
//! # Predicate semantics
//!
//! SQL three-valued logic: each leaf is TRUE, FALSE or UNKNOWN, `And`/`Or` combine them as
//! Kleene logic, and a row matches only when the whole predicate is TRUE.
//!
//! - A comparison with a NULL cell or a NULL literal is UNKNOWN (so `x = NULL` and `x != 1` on a
//!   NULL `x` never match). `IsNull`/`IsNotNull` are never UNKNOWN.
//! - `In(x, items)` is the `Or` of `x = item`: TRUE when one item equals, else UNKNOWN when `x` or
//!   an item is NULL, else FALSE. An empty list is FALSE. `And([])` is TRUE, `Or([])` FALSE.
//! - Comparisons only between values of the field's own type: a literal of another type is a
//!   [`QueryError::TypeMismatch`] (no implicit casts, not even int32 to int64). Vector and
//!   struct fields take only `IsNull`/`IsNotNull` ([`QueryError::NotComparable`]).
//! - Order: numbers numerically, `false < true`, strings by bytes (code points).
//! - Floats follow IEEE 754 comparison: `-0.0 = 0.0`; NaN is not equal to anything, itself
//!   included, and neither less nor greater, so `Eq`/`Lt`/`Le`/`Gt`/`Ge` with a NaN are FALSE
//!   and `Ne` is TRUE. (Engines differ here; conformance cases should not depend on NaN.)
//!
//! # Vector reconciliation ([`reconcile_vector`])
//!
//! Squared L2 distance over `fixed_size_list<float32, N>`, summed in item order in `f32`. The
//! index search is exact over its entries, with the exclusion set and deletions applied as a
//! **prefilter**: an excluded or deleted row never reaches the index's top k (otherwise a stale
//! near vector could push a true neighbour out). `candidates` is the index's top k after the
//! prefilter; `excluded` the entries the exclusion set kept out; `reevaluated` the live rows of
//! the exclusion sets and of uncovered fragments, re-scored on their current vectors
//! (`rescored`); `final_rows` the k best of `candidates ∪ rescored`. Ranking is by distance,
//! ties by ascending row address `(fragment << 32) | offset`, which is the (fragment, offset)
//! order of [`RowRef`], on both paths. That tie order is the reference's choice, one answer of
//! several: [OVL-QRY-5] lets a reader order tied rows as it likes and keep any of the rows tied
//! at the k-th distance ([`flat_tied_past_k`] lists the ones this order leaves out). A NULL vector, a vector with a NULL item, or a NaN
//! distance has no distance and never ranks. The query itself must have the field's dimension
//! and finite items, and `k = 0` is refused ([`QueryError::ZeroK`]) rather than answered with
//! nothing, since it is almost always a caller's mistake.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use roaring::RoaringBitmap;

use crate::error::Result;
use crate::exclusion::exclusion_set;
use crate::model::{DataType, FieldId, Fragment, Index, IndexKind, Schema, Snapshot, Value};
use crate::resolve::resolve_column;

pub mod error;
pub use error::QueryError;

/// The deepest `And`/`Or` nesting a predicate may have (bounds recursion on untrusted input).
pub const MAX_PREDICATE_DEPTH: usize = 64;

/// A physical row: fragment id and offset. Orders by fragment, then offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowRef {
    /// Fragment id.
    pub fragment: u64,
    /// Physical offset within the fragment.
    pub offset: u64,
}

/// A scalar predicate (see the module docs for its exact semantics).
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// `field = value`
    Eq(FieldId, Value),
    /// `field != value`
    Ne(FieldId, Value),
    /// `field < value`
    Lt(FieldId, Value),
    /// `field <= value`
    Le(FieldId, Value),
    /// `field > value`
    Gt(FieldId, Value),
    /// `field >= value`
    Ge(FieldId, Value),
    /// `field IN (values)`
    In(FieldId, Vec<Value>),
    /// `field IS NULL`
    IsNull(FieldId),
    /// `field IS NOT NULL`
    IsNotNull(FieldId),
    /// Every part holds (TRUE when empty).
    And(Vec<Predicate>),
    /// Some part holds (FALSE when empty).
    Or(Vec<Predicate>),
}

/// A value of SQL's three-valued logic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truth {
    /// TRUE: the row matches.
    True,
    /// FALSE.
    False,
    /// UNKNOWN (a NULL took part); the row does not match.
    Unknown,
}

impl Truth {
    fn from_bool(b: bool) -> Truth {
        if b { Truth::True } else { Truth::False }
    }

    fn and(self, other: Truth) -> Truth {
        match (self, other) {
            (Truth::False, _) | (_, Truth::False) => Truth::False,
            (Truth::True, Truth::True) => Truth::True,
            _ => Truth::Unknown,
        }
    }

    fn or(self, other: Truth) -> Truth {
        match (self, other) {
            (Truth::True, _) | (_, Truth::True) => Truth::True,
            (Truth::False, Truth::False) => Truth::False,
            _ => Truth::Unknown,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Predicate {
    /// The field ids the predicate references.
    pub fn fields(&self) -> BTreeSet<FieldId> {
        let mut fields = BTreeSet::new();
        let mut stack = vec![self];
        while let Some(p) = stack.pop() {
            match p {
                Predicate::And(parts) | Predicate::Or(parts) => stack.extend(parts),
                leaf => {
                    if let Some(field) = leaf.leaf_field() {
                        fields.insert(field);
                    }
                }
            }
        }
        fields
    }

    fn leaf_field(&self) -> Option<FieldId> {
        match self {
            Predicate::Eq(f, _)
            | Predicate::Ne(f, _)
            | Predicate::Lt(f, _)
            | Predicate::Le(f, _)
            | Predicate::Gt(f, _)
            | Predicate::Ge(f, _)
            | Predicate::In(f, _)
            | Predicate::IsNull(f)
            | Predicate::IsNotNull(f) => Some(*f),
            Predicate::And(_) | Predicate::Or(_) => None,
        }
    }

    fn literals(&self) -> &[Value] {
        match self {
            Predicate::Eq(_, v)
            | Predicate::Ne(_, v)
            | Predicate::Lt(_, v)
            | Predicate::Le(_, v)
            | Predicate::Gt(_, v)
            | Predicate::Ge(_, v) => std::slice::from_ref(v),
            Predicate::In(_, vs) => vs,
            _ => &[],
        }
    }

    /// Checks the predicate against `schema`: nesting depth, known fields, comparable field
    /// types, and literals of the field's own type (NULL fits every type).
    pub fn check(&self, schema: &Schema) -> Result<(), QueryError> {
        let mut stack = vec![(self, 1usize)];
        while let Some((p, depth)) = stack.pop() {
            if depth > MAX_PREDICATE_DEPTH {
                return Err(QueryError::PredicateTooDeep {
                    limit: MAX_PREDICATE_DEPTH,
                });
            }
            if let Predicate::And(parts) | Predicate::Or(parts) = p {
                stack.extend(parts.iter().map(|part| (part, depth + 1)));
                continue;
            }
            let Some(field) = p.leaf_field() else {
                continue;
            };
            let data_type = &schema
                .field(field)
                .ok_or(QueryError::UnknownField { field })?
                .data_type;
            if matches!(p, Predicate::IsNull(_) | Predicate::IsNotNull(_)) {
                continue;
            }
            if matches!(data_type, DataType::Struct | DataType::FixedSizeList { .. }) {
                return Err(QueryError::NotComparable {
                    field,
                    data_type: data_type.logical_type(),
                });
            }
            if let Some(bad) = p.literals().iter().find(|v| !v.fits(data_type)) {
                return Err(QueryError::TypeMismatch {
                    field,
                    context: "literal".into(),
                    expected: data_type.logical_type(),
                    found: bad.kind().into(),
                });
            }
        }
        Ok(())
    }

    /// Evaluates the predicate on one row; `value_of` gives the row's value of a field.
    ///
    /// Fails on a type mismatch between a value and a literal, a field `value_of` does not
    /// know, or nesting deeper than [`MAX_PREDICATE_DEPTH`].
    pub fn eval<'a>(
        &self,
        value_of: &dyn Fn(FieldId) -> Option<&'a Value>,
    ) -> Result<Truth, QueryError> {
        self.eval_at(value_of, 1)
    }

    fn eval_at<'a>(
        &self,
        value_of: &dyn Fn(FieldId) -> Option<&'a Value>,
        depth: usize,
    ) -> Result<Truth, QueryError> {
        if depth > MAX_PREDICATE_DEPTH {
            return Err(QueryError::PredicateTooDeep {
                limit: MAX_PREDICATE_DEPTH,
            });
        }
        let cell = |field: FieldId| value_of(field).ok_or(QueryError::UnknownField { field });
        Ok(match self {
            Predicate::Eq(f, v) => compare(Op::Eq, *f, cell(*f)?, v)?,
            Predicate::Ne(f, v) => compare(Op::Ne, *f, cell(*f)?, v)?,
            Predicate::Lt(f, v) => compare(Op::Lt, *f, cell(*f)?, v)?,
            Predicate::Le(f, v) => compare(Op::Le, *f, cell(*f)?, v)?,
            Predicate::Gt(f, v) => compare(Op::Gt, *f, cell(*f)?, v)?,
            Predicate::Ge(f, v) => compare(Op::Ge, *f, cell(*f)?, v)?,
            Predicate::In(f, items) => {
                let x = cell(*f)?;
                let mut truth = Truth::False;
                for item in items {
                    truth = truth.or(compare(Op::Eq, *f, x, item)?);
                }
                truth
            }
            Predicate::IsNull(f) => Truth::from_bool(cell(*f)?.is_null()),
            Predicate::IsNotNull(f) => Truth::from_bool(!cell(*f)?.is_null()),
            Predicate::And(parts) => {
                let mut truth = Truth::True;
                for part in parts {
                    truth = truth.and(part.eval_at(value_of, depth + 1)?);
                }
                truth
            }
            Predicate::Or(parts) => {
                let mut truth = Truth::False;
                for part in parts {
                    truth = truth.or(part.eval_at(value_of, depth + 1)?);
                }
                truth
            }
        })
    }
}

/// One comparison `cell op literal`.
fn compare(op: Op, field: FieldId, cell: &Value, literal: &Value) -> Result<Truth, QueryError> {
    let ordering = match (cell, literal) {
        (Value::Null, _) | (_, Value::Null) => return Ok(Truth::Unknown),
        (Value::Bool(a), Value::Bool(b)) => a.partial_cmp(b),
        (Value::Int32(a), Value::Int32(b)) => a.partial_cmp(b),
        (Value::Int64(a), Value::Int64(b)) => a.partial_cmp(b),
        (Value::UInt64(a), Value::UInt64(b)) => a.partial_cmp(b),
        (Value::Float32(a), Value::Float32(b)) => a.partial_cmp(b),
        (Value::Float64(a), Value::Float64(b)) => a.partial_cmp(b),
        (Value::Utf8(a), Value::Utf8(b)) => a.partial_cmp(b),
        _ => {
            return Err(QueryError::TypeMismatch {
                field,
                context: "comparison".into(),
                expected: literal.kind().into(),
                found: cell.kind().into(),
            });
        }
    };
    // `None` only for a NaN operand: unordered, so only `Ne` holds.
    Ok(Truth::from_bool(match op {
        Op::Eq => ordering == Some(Ordering::Equal),
        Op::Ne => ordering != Some(Ordering::Equal),
        Op::Lt => ordering == Some(Ordering::Less),
        Op::Le => matches!(ordering, Some(Ordering::Less | Ordering::Equal)),
        Op::Gt => ordering == Some(Ordering::Greater),
        Op::Ge => matches!(ordering, Some(Ordering::Greater | Ordering::Equal)),
    }))
}

/// The four sets of a reconciled scalar query (see the module docs). Every list is sorted by
/// (fragment, offset) and free of duplicates.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reconciliation {
    /// Rows the index returns: indexed value matches, fragment covered, row not deleted.
    pub candidates: Vec<RowRef>,
    /// Candidates in the exclusion set, removed because their indexed value may be stale.
    pub excluded: Vec<RowRef>,
    /// Every live row evaluated on its current value: the whole exclusion set plus all rows of
    /// fragments the index does not cover.
    pub reevaluated: Vec<RowRef>,
    /// The re-evaluated rows that match.
    pub rematched: Vec<RowRef>,
    /// `(candidates − excluded) ∪ rematched`.
    pub final_rows: Vec<RowRef>,
}

/// Answers `predicate` through the scalar index `index_name` of `snapshot`, reconciling it with
/// the overlays committed after the index was built.
pub fn reconcile(
    snapshot: &Snapshot,
    index_name: &str,
    predicate: &Predicate,
) -> Result<Reconciliation> {
    let (index, key) = find_index(snapshot, index_name, IndexKind::BTree)?;
    predicate.check(&snapshot.schema)?;
    if let Some(&field) = predicate.fields().iter().find(|&&f| f != key) {
        return Err(QueryError::NotIndexable {
            index: index.name.clone(),
            key,
            field,
        }
        .into());
    }
    let exclusions = exclusion_sets(snapshot, index);
    let mut candidates = Vec::new();
    for (row, value) in live_entries(snapshot, index)? {
        if predicate.eval(&|_| Some(value))? == Truth::True {
            candidates.push(row);
        }
    }
    candidates.sort();
    let excluded: Vec<RowRef> = candidates
        .iter()
        .copied()
        .filter(|row| is_excluded(&exclusions, row))
        .collect();
    let mut reevaluated = Vec::new();
    let mut rematched = Vec::new();
    for (row, value) in flat_path_rows(snapshot, key, &exclusions)? {
        reevaluated.push(row);
        if predicate.eval(&|_| Some(&value))? == Truth::True {
            rematched.push(row);
        }
    }
    let final_rows: BTreeSet<RowRef> = candidates
        .iter()
        .copied()
        .filter(|row| !is_excluded(&exclusions, row))
        .chain(rematched.iter().copied())
        .collect();
    Ok(Reconciliation {
        candidates,
        excluded,
        reevaluated,
        rematched,
        final_rows: final_rows.into_iter().collect(),
    })
}

/// The ground truth: every live row of `snapshot` whose resolved values make `predicate` TRUE,
/// sorted by (fragment, offset). Any predicate, over any fields.
pub fn flat_filter(snapshot: &Snapshot, predicate: &Predicate) -> Result<Vec<RowRef>> {
    predicate.check(&snapshot.schema)?;
    let fields = predicate.fields();
    let mut rows = Vec::new();
    for fragment in &snapshot.fragments {
        let mut columns = BTreeMap::new();
        for &field in &fields {
            columns.insert(field, resolve_column(&snapshot.schema, fragment, field)?);
        }
        for offset in fragment.live_offsets()?.map(u64::from) {
            let value_of = |field: FieldId| -> Option<&Value> {
                columns.get(&field)?.get(offset as usize)?.as_ref()
            };
            if predicate.eval(&value_of)? == Truth::True {
                rows.push(RowRef {
                    fragment: fragment.id,
                    offset,
                });
            }
        }
    }
    rows.sort();
    Ok(rows)
}

/// A row and its squared L2 distance to the query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// The row.
    pub row: RowRef,
    /// Squared L2 distance (never NaN).
    pub distance: f32,
}

/// What a reconciled vector query did (see the module docs). Lists of [`Scored`] are in rank
/// order (distance, then row); lists of [`RowRef`] are sorted by row.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VectorReconciliation {
    /// The index's top k after the prefilter (exclusion set and deletions).
    pub candidates: Vec<Scored>,
    /// Live index entries the prefilter kept out because they are in the exclusion set.
    pub excluded: Vec<RowRef>,
    /// Every live row re-scored on its current vector: the exclusion sets plus all rows of
    /// fragments the index does not cover.
    pub reevaluated: Vec<RowRef>,
    /// The re-scored rows that have a distance (non-NULL vector without NULL items).
    pub rescored: Vec<Scored>,
    /// The k best of `candidates ∪ rescored`.
    pub final_rows: Vec<Scored>,
}

/// Answers an L2 top-`k` query through the vector index `index_name`, reconciling it with the
/// overlays committed after the index was built.
pub fn reconcile_vector(
    snapshot: &Snapshot,
    index_name: &str,
    query: &[f32],
    k: usize,
) -> Result<VectorReconciliation> {
    let (index, key) = find_index(snapshot, index_name, IndexKind::Vector)?;
    check_vector_query(&snapshot.schema, key, query, k)?;
    let exclusions = exclusion_sets(snapshot, index);
    let mut excluded = Vec::new();
    let mut pool = Vec::new();
    for (row, value) in live_entries(snapshot, index)? {
        if is_excluded(&exclusions, &row) {
            excluded.push(row);
        } else if let Some(distance) = squared_l2(query, key, value, "index entry")? {
            pool.push(Scored { row, distance });
        }
    }
    excluded.sort();
    let candidates = top_k(pool, k);
    let mut reevaluated = Vec::new();
    let mut rescored = Vec::new();
    for (row, value) in flat_path_rows(snapshot, key, &exclusions)? {
        reevaluated.push(row);
        if let Some(distance) = squared_l2(query, key, &value, "resolved value")? {
            rescored.push(Scored { row, distance });
        }
    }
    rescored.sort_by(rank);
    let merged = candidates.iter().chain(&rescored).copied().collect();
    Ok(VectorReconciliation {
        final_rows: top_k(merged, k),
        candidates,
        excluded,
        reevaluated,
        rescored,
    })
}

/// The ground truth: the `k` live rows of `snapshot` nearest to `query` by their resolved
/// `field` vector, in rank order.
pub fn flat_top_k(
    snapshot: &Snapshot,
    field: FieldId,
    query: &[f32],
    k: usize,
) -> Result<Vec<Scored>> {
    check_vector_query(&snapshot.schema, field, query, k)?;
    Ok(top_k(flat_ranked(snapshot, field, query)?, k))
}

/// The rows that tie with the k-th row of [`flat_top_k`] but fall past place `k` (in row
/// order): the other rows a reader may return at the last places ([OVL-QRY-5] fixes no tie
/// order). Empty when fewer than `k` rows have a distance.
pub fn flat_tied_past_k(
    snapshot: &Snapshot,
    field: FieldId,
    query: &[f32],
    k: usize,
) -> Result<Vec<Scored>> {
    check_vector_query(&snapshot.schema, field, query, k)?;
    let ranked = flat_ranked(snapshot, field, query)?;
    let Some(kth) = ranked.get(k - 1).map(|s| s.distance) else {
        return Ok(Vec::new());
    };
    Ok(ranked[k..]
        .iter()
        .take_while(|s| s.distance == kth)
        .copied()
        .collect())
}

/// Every live row of `snapshot` with a distance to `query`, in rank order.
fn flat_ranked(snapshot: &Snapshot, field: FieldId, query: &[f32]) -> Result<Vec<Scored>> {
    let mut scored = Vec::new();
    for fragment in &snapshot.fragments {
        let column = resolve_column(&snapshot.schema, fragment, field)?;
        for (offset, value) in column.iter().enumerate() {
            let Some(value) = value else { continue }; // deleted
            if let Some(distance) = squared_l2(query, field, value, "resolved value")? {
                scored.push(Scored {
                    row: RowRef {
                        fragment: fragment.id,
                        offset: offset as u64,
                    },
                    distance,
                });
            }
        }
    }
    scored.sort_by(rank);
    Ok(scored)
}

/// The index `name` of the wanted kind, and its key field.
fn find_index<'a>(
    snapshot: &'a Snapshot,
    name: &str,
    kind: IndexKind,
) -> Result<(&'a Index, FieldId), QueryError> {
    let index = snapshot
        .index(name)
        .ok_or_else(|| QueryError::UnknownIndex {
            index: name.to_string(),
        })?;
    if index.kind != kind {
        return Err(QueryError::IndexKindMismatch {
            index: index.name.clone(),
            expected: kind,
            found: index.kind,
        });
    }
    let key = *index
        .fields
        .first()
        .ok_or_else(|| QueryError::IndexWithoutFields {
            index: index.name.clone(),
        })?;
    Ok((index, key))
}

/// The exclusion set of every fragment `index` covers, by fragment id.
fn exclusion_sets(snapshot: &Snapshot, index: &Index) -> BTreeMap<u64, RoaringBitmap> {
    snapshot
        .fragments
        .iter()
        .filter(|f| index.covers(f.id))
        .map(|f| (f.id, exclusion_set(&snapshot.schema, index, f)))
        .collect()
}

fn is_excluded(exclusions: &BTreeMap<u64, RoaringBitmap>, row: &RowRef) -> bool {
    match (exclusions.get(&row.fragment), u32::try_from(row.offset)) {
        (Some(set), Ok(offset)) => set.contains(offset),
        _ => false,
    }
}

/// The index's entries for rows that exist now: covered fragments still in the snapshot,
/// offsets not deleted. Entries for vanished fragments are dropped (their rows are gone);
/// an offset past the fragment's end or a second entry for a row is an error.
fn live_entries<'a>(
    snapshot: &Snapshot,
    index: &'a Index,
) -> Result<Vec<(RowRef, &'a Value)>, QueryError> {
    let fragments: BTreeMap<u64, &Fragment> =
        snapshot.fragments.iter().map(|f| (f.id, f)).collect();
    let mut seen = BTreeSet::new();
    let mut live = Vec::new();
    for entry in &index.entries {
        let Some(fragment) = fragments.get(&entry.fragment) else {
            continue;
        };
        if !index.covers(entry.fragment) {
            continue;
        }
        let row = RowRef {
            fragment: entry.fragment,
            offset: u64::from(entry.offset),
        };
        if row.offset >= fragment.physical_rows {
            return Err(QueryError::EntryOutOfRange {
                index: index.name.clone(),
                fragment: row.fragment,
                offset: row.offset,
                physical_rows: fragment.physical_rows,
            });
        }
        if !seen.insert(row) {
            return Err(QueryError::DuplicateEntry {
                index: index.name.clone(),
                fragment: row.fragment,
                offset: row.offset,
            });
        }
        if !fragment.deletions.contains(entry.offset) {
            live.push((row, &entry.value));
        }
    }
    Ok(live)
}

/// The live rows the flat path evaluates, with their current `key` value, sorted: the exclusion
/// set of each covered fragment (the keys of `exclusions`), and every row of each other fragment.
/// Exclusion offsets that are deleted or past the fragment's end name no row and are skipped.
fn flat_path_rows(
    snapshot: &Snapshot,
    key: FieldId,
    exclusions: &BTreeMap<u64, RoaringBitmap>,
) -> Result<Vec<(RowRef, Value)>> {
    let mut rows = Vec::new();
    for fragment in &snapshot.fragments {
        let wanted = exclusions.get(&fragment.id);
        if wanted.is_some_and(RoaringBitmap::is_empty) {
            continue; // covered, nothing excluded: the index answers for every row
        }
        let column = resolve_column(&snapshot.schema, fragment, key)?;
        for (offset, value) in column.into_iter().enumerate() {
            let row = RowRef {
                fragment: fragment.id,
                offset: offset as u64,
            };
            let Some(value) = value else { continue }; // deleted
            if wanted.is_none() || is_excluded(exclusions, &row) {
                rows.push((row, value));
            }
        }
    }
    rows.sort_by_key(|(row, _)| *row);
    Ok(rows)
}

/// Checks a top-k query against the vector field `field`.
fn check_vector_query(
    schema: &Schema,
    field: FieldId,
    query: &[f32],
    k: usize,
) -> Result<(), QueryError> {
    let data_type = &schema
        .field(field)
        .ok_or(QueryError::UnknownField { field })?
        .data_type;
    let DataType::FixedSizeList { dimension } = data_type else {
        return Err(QueryError::TypeMismatch {
            field,
            context: "vector query".into(),
            expected: "fixed_size_list<float32, N>".into(),
            found: data_type.logical_type(),
        });
    };
    if query.len() as u64 != u64::from(*dimension) {
        return Err(QueryError::DimensionMismatch {
            context: "query".into(),
            expected: u64::from(*dimension),
            found: query.len() as u64,
        });
    }
    if let Some(position) = query.iter().position(|x| !x.is_finite()) {
        return Err(QueryError::NonFiniteQuery { position });
    }
    if k == 0 {
        return Err(QueryError::ZeroK);
    }
    Ok(())
}

/// Squared L2 distance, summed in item order; `None` for a NULL vector, a NULL item, or NaN.
fn squared_l2(
    query: &[f32],
    field: FieldId,
    value: &Value,
    context: &str,
) -> Result<Option<f32>, QueryError> {
    let items = match value {
        Value::Null => return Ok(None),
        Value::Vector(items) => items,
        other => {
            return Err(QueryError::TypeMismatch {
                field,
                context: context.into(),
                expected: "fixed_size_list".into(),
                found: other.kind().into(),
            });
        }
    };
    if items.len() != query.len() {
        return Err(QueryError::DimensionMismatch {
            context: context.into(),
            expected: query.len() as u64,
            found: items.len() as u64,
        });
    }
    let mut sum = 0.0f32;
    for (q, item) in query.iter().zip(items) {
        let Some(x) = item else { return Ok(None) };
        let d = x - q;
        sum += d * d;
    }
    Ok(if sum.is_nan() { None } else { Some(sum) })
}

fn rank(a: &Scored, b: &Scored) -> Ordering {
    a.distance.total_cmp(&b.distance).then(a.row.cmp(&b.row))
}

fn top_k(mut scored: Vec<Scored>, k: usize) -> Vec<Scored> {
    scored.sort_by(rank);
    scored.truncate(k);
    scored
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorClass;
    use crate::model::cols;
    use crate::model::{Coverage, DataFile, Field, IndexEntry, Overlay, TOMBSTONE_FIELD_ID};
    use crate::worked_example::{self, AGE, AGE_INDEX, EMBEDDING, ID, NAME, NEW_BOB_EMBEDDING};

    fn rows(fragment: u64, offsets: &[u64]) -> Vec<RowRef> {
        offsets
            .iter()
            .map(|&offset| RowRef { fragment, offset })
            .collect()
    }

    fn age_eq(age: i32) -> Predicate {
        Predicate::Eq(AGE, Value::Int32(age))
    }

    /// The worked example after step 1: the age overlay ({1, 3} = [26, 23]) committed at v2.
    fn version_2() -> Snapshot {
        let mut snapshot = worked_example::version_1();
        let mut overlay = worked_example::step_1_overlay();
        overlay.committed_version = 2;
        snapshot.fragments[0].overlays.push(overlay);
        snapshot.version = 2;
        snapshot.validate().unwrap();
        snapshot
    }

    /// Checks the reconciliation against the flat ground truth, then returns it.
    fn reconciled(snapshot: &Snapshot, predicate: &Predicate) -> Reconciliation {
        let r = reconcile(snapshot, AGE_INDEX, predicate).unwrap();
        assert_eq!(
            r.final_rows,
            flat_filter(snapshot, predicate).unwrap(),
            "{predicate:?}"
        );
        r
    }

    #[test]
    fn worked_example_step_3_finds_bob_by_his_new_age() {
        // covers: OVL-QRY-1, OVL-QRY-2, OVL-QRY-3
        let r = reconciled(&version_2(), &age_eq(26));
        assert_eq!(r.candidates, vec![]); // the index still holds 25 for Bob
        assert_eq!(r.excluded, vec![]);
        assert_eq!(r.reevaluated, rows(0, &[1, 3])); // the whole exclusion set
        assert_eq!(r.rematched, rows(0, &[1]));
        assert_eq!(r.final_rows, rows(0, &[1]));
    }

    #[test]
    fn worked_example_step_3_mirror_drops_the_stale_hit() {
        // covers: OVL-QRY-1, OVL-QRY-3
        let r = reconciled(&version_2(), &age_eq(25));
        assert_eq!(r.candidates, rows(0, &[1])); // stale 25
        assert_eq!(r.excluded, rows(0, &[1]));
        assert_eq!(r.reevaluated, rows(0, &[1, 3]));
        assert_eq!(r.rematched, vec![]);
        assert_eq!(r.final_rows, vec![]);
    }

    #[test]
    fn an_index_that_already_saw_the_overlay_is_trusted() {
        // covers: OVL-IDX-2, OVL-QRY-3
        // committed_version == dataset_version: the index was built from version 2 and holds
        // the overlay's values, so nothing is excluded or re-evaluated.
        let mut snapshot = version_2();
        let index = &mut snapshot.indices[0];
        index.dataset_version = 2;
        for (entry, age) in index.entries.iter_mut().zip([30, 26, 40, 23]) {
            entry.value = Value::Int32(age);
        }
        let r = reconciled(&snapshot, &age_eq(26));
        assert_eq!(r.candidates, rows(0, &[1]));
        assert_eq!((r.excluded, r.reevaluated), (vec![], vec![]));
        assert_eq!(r.final_rows, rows(0, &[1]));
    }

    #[test]
    fn an_overlay_on_another_column_leaves_the_index_trusted() {
        // covers: OVL-IDX-4, OVL-QRY-3
        let mut snapshot = worked_example::version_1();
        snapshot.version = 2;
        let mut overlay = worked_example::step_4_overlay(); // name and embedding only
        overlay.committed_version = 2;
        snapshot.fragments[0].overlays.push(overlay);
        let r = reconciled(&snapshot, &age_eq(25));
        assert_eq!(r.candidates, rows(0, &[1]));
        assert_eq!((r.excluded, r.reevaluated), (vec![], vec![]));
        assert_eq!(r.final_rows, rows(0, &[1]));
    }

    #[test]
    fn a_tombstoned_age_position_excludes_nothing_and_is_not_read() {
        // covers: OVL-TOMB-1, OVL-QRY-3
        let mut snapshot = version_2();
        snapshot.fragments[0].overlays[0].file.fields = vec![TOMBSTONE_FIELD_ID];
        let r = reconciled(&snapshot, &age_eq(25));
        assert_eq!(r.reevaluated, vec![]);
        assert_eq!(r.final_rows, rows(0, &[1])); // the base value 25 is current again
    }

    #[test]
    fn deletions_apply_to_index_results_and_to_reevaluation() {
        // covers: OVL-DEL-1, OVL-QRY-2, OVL-QRY-6
        let mut snapshot = version_2();
        snapshot.fragments[0].deletions.insert(0); // Alice, age 30, not excluded
        snapshot.fragments[0].deletions.insert(1); // Bob, age 26 via the overlay, excluded
        let r = reconciled(&snapshot, &age_eq(30));
        assert_eq!(r.candidates, vec![]);
        assert_eq!(r.final_rows, vec![]);
        let r = reconciled(&snapshot, &age_eq(26));
        assert_eq!(r.reevaluated, rows(0, &[3])); // offset 1 is deleted: not a row any more
        assert_eq!(r.final_rows, vec![]);
    }

    #[test]
    fn entries_of_a_fragment_that_left_the_manifest_are_ignored() {
        // covers: IDX-READ-12
        // Every row of fragment 0 deleted: it leaves the manifest, while the index still
        // covers it and holds its entries (Alice's indexed age 30 among them).
        let mut snapshot = version_2();
        snapshot.fragments.clear();
        let index = snapshot.index(AGE_INDEX).unwrap();
        assert!(index.covers(0) && !index.entries.is_empty());
        let r = reconciled(&snapshot, &age_eq(30));
        assert_eq!(r.candidates, vec![]);
        assert_eq!(r.final_rows, vec![]);
    }

    #[test]
    fn uncovered_fragments_take_the_flat_path() {
        // covers: OVL-IDX-6, OVL-QRY-3
        let mut snapshot = version_2();
        let mut appended = worked_example::version_1().fragments[0].clone();
        appended.id = 1;
        appended.deletions.insert(2);
        snapshot.fragments.push(appended); // not in the index's fragment_bitmap {0}
        let r = reconciled(&snapshot, &age_eq(25));
        assert_eq!(r.candidates, rows(0, &[1]));
        let mut expected = rows(0, &[1, 3]);
        expected.extend(rows(1, &[0, 1, 3]));
        assert_eq!(r.reevaluated, expected);
        assert_eq!(r.final_rows, rows(1, &[1]));
    }

    #[test]
    fn entries_of_vanished_fragments_are_ignored() {
        let mut snapshot = version_2();
        snapshot.indices[0].fragment_bitmap = Some([0u32, 9].into_iter().collect());
        snapshot.indices[0].entries.push(IndexEntry {
            fragment: 9,
            offset: 0,
            value: Value::Int32(25),
        });
        let r = reconciled(&snapshot, &age_eq(25));
        assert_eq!(r.candidates, rows(0, &[1]));
    }

    #[test]
    fn a_malformed_index_is_a_typed_error() {
        let mut snapshot = version_2();
        snapshot.indices[0].entries.push(IndexEntry {
            fragment: 0,
            offset: 4,
            value: Value::Int32(1),
        });
        let err = reconcile(&snapshot, AGE_INDEX, &age_eq(1)).unwrap_err();
        assert_eq!(err.code(), "index_entry_out_of_range");
        snapshot.indices[0].entries.pop();
        snapshot.indices[0].entries.push(IndexEntry {
            fragment: 0,
            offset: 2,
            value: Value::Int32(1),
        });
        let err = reconcile(&snapshot, AGE_INDEX, &age_eq(1)).unwrap_err();
        assert_eq!(err.code(), "duplicate_index_entry");
        snapshot.indices[0].entries.pop();
        snapshot.indices[0].entries[0].value = Value::Int64(30);
        let err = reconcile(&snapshot, AGE_INDEX, &age_eq(1)).unwrap_err();
        assert_eq!(err.code(), "query_type_mismatch");
    }

    #[test]
    fn only_predicates_on_the_index_key_are_indexable() {
        let snapshot = version_2();
        let both = Predicate::And(vec![
            age_eq(26),
            Predicate::Eq(NAME, Value::Utf8("Bob".into())),
        ]);
        let err = reconcile(&snapshot, AGE_INDEX, &both).unwrap_err();
        assert_eq!(err.code(), "not_indexable");
        assert_eq!(err.class(), ErrorClass::UnsupportedFeature);
        assert_eq!(flat_filter(&snapshot, &both).unwrap(), rows(0, &[1]));
    }

    #[test]
    fn request_errors_are_typed() {
        let snapshot = version_2();
        let code = |r: Result<Reconciliation>| r.unwrap_err().code();
        assert_eq!(
            code(reconcile(&snapshot, "nope", &age_eq(1))),
            "unknown_index"
        );
        assert_eq!(
            code(reconcile(
                &snapshot,
                AGE_INDEX,
                &Predicate::Eq(AGE, Value::Int64(26))
            )),
            "query_type_mismatch"
        );
        assert_eq!(
            code(reconcile(&snapshot, AGE_INDEX, &Predicate::IsNull(77))),
            "query_unknown_field"
        );
        assert_eq!(
            flat_filter(&snapshot, &Predicate::Lt(EMBEDDING, Value::Null))
                .unwrap_err()
                .code(),
            "not_comparable"
        );
        let mut deep = age_eq(26);
        for _ in 0..MAX_PREDICATE_DEPTH {
            deep = Predicate::And(vec![deep]);
        }
        assert_eq!(
            code(reconcile(&snapshot, AGE_INDEX, &deep)),
            "predicate_too_deep"
        );
        let err = reconcile_vector(&snapshot, AGE_INDEX, &[0.0; 3], 1).unwrap_err();
        assert_eq!(err.code(), "index_kind_mismatch");
    }

    /// A one-fragment table `x` (field 1) of the given type and values, unindexed.
    fn one_column(data_type: DataType, values: Vec<Value>) -> Snapshot {
        let mut snapshot = worked_example::version_1();
        snapshot.schema = Schema::new(vec![Field::new(1, "x", data_type)]).unwrap();
        snapshot.fragments = vec![Fragment::new(0, "x.lance", vec![1], cols(vec![values]))];
        snapshot.indices.clear();
        snapshot.validate().unwrap();
        snapshot
    }

    fn matching(snapshot: &Snapshot, predicate: Predicate) -> Vec<u64> {
        flat_filter(snapshot, &predicate)
            .unwrap()
            .into_iter()
            .map(|r| r.offset)
            .collect()
    }

    #[test]
    fn null_comparisons_are_unknown_and_never_match() {
        use Predicate::*;
        let t = one_column(
            DataType::Int32,
            vec![Value::Int32(1), Value::Null, Value::Int32(2)],
        );
        let int = Value::Int32;
        assert_eq!(matching(&t, Eq(1, Value::Null)), Vec::<u64>::new());
        assert_eq!(matching(&t, Ne(1, Value::Null)), Vec::<u64>::new());
        assert_eq!(matching(&t, Ne(1, int(1))), vec![2]); // NULL != 1 is UNKNOWN
        assert_eq!(matching(&t, IsNull(1)), vec![1]);
        assert_eq!(matching(&t, IsNotNull(1)), vec![0, 2]);
        assert_eq!(matching(&t, In(1, vec![int(2), Value::Null])), vec![2]);
        assert_eq!(matching(&t, In(1, vec![])), Vec::<u64>::new());
        // Kleene logic: UNKNOWN OR TRUE is TRUE, UNKNOWN AND FALSE is FALSE.
        assert_eq!(matching(&t, Or(vec![Ge(1, int(2)), IsNull(1)])), vec![1, 2]);
        assert_eq!(
            matching(&t, Or(vec![Lt(1, int(2)), Gt(1, int(1))])),
            vec![0, 2]
        );
        assert_eq!(matching(&t, And(vec![])), vec![0, 1, 2]);
        assert_eq!(matching(&t, Or(vec![])), Vec::<u64>::new());
        assert_eq!(matching(&t, Le(1, int(1))), vec![0]);
    }

    #[test]
    fn floats_compare_as_ieee_754() {
        // covers: OVL-QRY-8
        use Predicate::*;
        let f = Value::Float64;
        let t = one_column(DataType::Float64, vec![f(f64::NAN), f(-0.0), f(1.5)]);
        assert_eq!(matching(&t, Eq(1, f(f64::NAN))), Vec::<u64>::new());
        assert_eq!(matching(&t, Ne(1, f(1.5))), vec![0, 1]); // NaN != 1.5 holds
        assert_eq!(matching(&t, Eq(1, f(0.0))), vec![1]); // -0.0 = 0.0
        // Signed zero is no order: -0.0 is neither below 0.0 nor 0.0 above -0.0.
        assert_eq!(matching(&t, Ge(1, f(0.0))), vec![1, 2]);
        assert_eq!(matching(&t, Lt(1, f(0.0))), Vec::<u64>::new());
        let z = one_column(DataType::Float64, vec![f(0.0)]);
        assert_eq!(matching(&z, Le(1, f(-0.0))), vec![0]);
        assert_eq!(matching(&z, Gt(1, f(-0.0))), Vec::<u64>::new());
        assert_eq!(matching(&t, Ge(1, f(-1.0))), vec![1, 2]); // NaN is unordered
        assert_eq!(matching(&t, Lt(1, f(9.0))), vec![1, 2]);
    }

    #[test]
    fn strings_order_by_bytes() {
        let s = |v: &str| Value::Utf8(v.into());
        let t = one_column(DataType::Utf8, vec![s("B"), s("a"), s("é")]);
        assert_eq!(matching(&t, Predicate::Lt(1, s("a"))), vec![0]);
        assert_eq!(matching(&t, Predicate::Gt(1, s("z"))), vec![2]);
    }

    /// `id`(1), struct `address`(5) with `zip`(6); indices built at v1 on `zip` (over zips
    /// 10, 11, 12, 13) and on `address`; a v2 overlay on `overlay_field` covering offset 2.
    fn nested(overlay_field: FieldId) -> Snapshot {
        let mut snapshot = worked_example::version_1();
        snapshot.schema = Schema::new(vec![
            Field::new(1, "id", DataType::Int64),
            Field::new(5, "address", DataType::Struct),
            Field::child(6, 5, "zip", DataType::Int32),
        ])
        .unwrap();
        let mut fragment = Fragment::new(
            0,
            "base.lance",
            vec![1, 5, 6],
            vec![
                (0..4).map(Value::Int64).collect(),
                vec![Value::Struct(vec![]); 4].into_iter().collect(),
                (10..14).map(Value::Int32).collect(),
            ],
        );
        let value = if overlay_field == 5 {
            Value::Struct(vec![])
        } else {
            Value::Int32(99)
        };
        fragment.overlays.push(Overlay {
            file: DataFile {
                path: "o.lance".into(),
                fields: vec![overlay_field],
                columns: cols(vec![vec![value]]),
            },
            coverage: Coverage::Dense([2u32].into_iter().collect()),
            committed_version: 2,
        });
        snapshot.fragments = vec![fragment];
        snapshot.version = 2;
        let index = |name: &str, field: FieldId, value: &dyn Fn(u32) -> Value| Index {
            name: name.into(),
            fields: vec![field],
            dataset_version: 1,
            fragment_bitmap: Some([0u32].into_iter().collect()),
            kind: IndexKind::BTree,
            entries: (0..4)
                .map(|o| IndexEntry {
                    fragment: 0,
                    offset: o,
                    value: value(o),
                })
                .collect(),
        };
        snapshot.indices = vec![
            index("zip", 6, &|o| Value::Int32(10 + o as i32)),
            index("address", 5, &|o| {
                Value::Struct(vec![Value::Int32(10 + o as i32)])
            }),
        ];
        snapshot.validate().unwrap();
        snapshot
    }

    #[test]
    fn a_leaf_overlay_excludes_for_its_own_and_its_structs_index() {
        // covers: OVL-IDX-3, OVL-QRY-1, OVL-QRY-2, OVL-QRY-3
        let zip = |v| Predicate::Eq(6, Value::Int32(v));
        let snapshot = nested(6);
        // The stale 12 is dropped and the new 99 found.
        let r = reconcile(&snapshot, "zip", &zip(12)).unwrap();
        assert_eq!((r.excluded, r.final_rows), (rows(0, &[2]), vec![]));
        let r = reconcile(&snapshot, "zip", &zip(99)).unwrap();
        assert_eq!(r.final_rows, rows(0, &[2]));
        assert_eq!(r.final_rows, flat_filter(&snapshot, &zip(99)).unwrap());
        // An index on the struct: its child changed, so the row is re-evaluated.
        let present = Predicate::IsNotNull(5);
        let r = reconcile(&snapshot, "address", &present).unwrap();
        assert_eq!((r.excluded, r.reevaluated), (rows(0, &[2]), rows(0, &[2])));
        assert_eq!(r.final_rows, rows(0, &[0, 1, 2, 3]));
        assert_eq!(r.final_rows, flat_filter(&snapshot, &present).unwrap());
    }

    #[test]
    fn a_struct_overlay_is_a_container_and_excludes_nothing() {
        // covers: OVL-SHAPE-5
        let snapshot = nested(5);
        for (index, predicate) in [
            ("zip", Predicate::Eq(6, Value::Int32(12))),
            ("address", Predicate::IsNotNull(5)),
        ] {
            let r = reconcile(&snapshot, index, &predicate).unwrap();
            assert_eq!(r.reevaluated, vec![], "{index}");
            assert_eq!(r.final_rows, flat_filter(&snapshot, &predicate).unwrap());
        }
    }

    /// The worked example with a vector index on `embedding` built at v1 and step 4's overlay
    /// (Bob's new embedding) committed at v3.
    fn version_3_with_vector_index() -> Snapshot {
        let mut snapshot = version_2();
        let mut overlay = worked_example::step_4_overlay();
        overlay.committed_version = 3;
        snapshot.fragments[0].overlays.push(overlay);
        snapshot.version = 3;
        let v1 = worked_example::version_1();
        let base = crate::resolve::base_column(&v1.fragments[0], EMBEDDING)
            .unwrap()
            .1;
        snapshot.indices.push(Index {
            name: "embedding_idx".into(),
            fields: vec![EMBEDDING],
            dataset_version: 1,
            fragment_bitmap: Some([0u32].into_iter().collect()),
            kind: IndexKind::Vector,
            entries: base
                .values()
                .into_iter()
                .enumerate()
                .map(|(o, v)| IndexEntry {
                    fragment: 0,
                    offset: o as u32,
                    value: v.clone(),
                })
                .collect(),
        });
        snapshot.validate().unwrap();
        snapshot
    }

    #[test]
    fn bobs_new_embedding_is_found_by_rescoring() {
        // covers: OVL-QRY-4, OVL-QRY-5
        let snapshot = version_3_with_vector_index();
        let r = reconcile_vector(&snapshot, "embedding_idx", &NEW_BOB_EMBEDDING, 1).unwrap();
        assert_eq!(r.excluded, rows(0, &[1])); // prefiltered: the stale [0, 1, 0] never ranks
        // Alice, Carol and Dave all lie at 0.75; the tie goes to the lowest offset.
        assert_eq!(
            r.candidates,
            vec![Scored {
                row: rows(0, &[0])[0],
                distance: 0.75
            }]
        );
        assert_eq!(r.reevaluated, rows(0, &[1]));
        assert_eq!(
            r.rescored,
            vec![Scored {
                row: rows(0, &[1])[0],
                distance: 0.0
            }]
        );
        assert_eq!(r.final_rows, r.rescored);
        assert_eq!(
            r.final_rows,
            flat_top_k(&snapshot, EMBEDDING, &NEW_BOB_EMBEDDING, 1).unwrap()
        );
    }

    #[test]
    fn a_stale_near_vector_cannot_push_out_a_true_neighbour() {
        // covers: OVL-QRY-4, OVL-QRY-7
        // Bob moves far away; the query is his OLD embedding, where the stale index ranks him
        // first at distance 0. Filtering the index's top 2 afterwards would leave only Dave;
        // the prefilter keeps Bob out of the search, so Alice (the true second) is found.
        let mut snapshot = version_3_with_vector_index();
        snapshot.fragments[0].overlays[1].file.columns[1] =
            snapshot.fragments[0].overlays[1].file.columns[1]
                .replaced(0, Value::Vector(vec![Some(9.0); 3]))
                .unwrap();
        let query = [0.0, 1.0, 0.0];
        let r = reconcile_vector(&snapshot, "embedding_idx", &query, 2).unwrap();
        let offsets = |scored: &[Scored]| scored.iter().map(|s| s.row.offset).collect::<Vec<_>>();
        assert_eq!(r.excluded, rows(0, &[1]));
        assert_eq!(offsets(&r.candidates), vec![3, 0]); // Dave at 1.0, Alice at 2.0
        assert_eq!(offsets(&r.final_rows), vec![3, 0]);
        assert_eq!(
            r.final_rows,
            flat_top_k(&snapshot, EMBEDDING, &query, 2).unwrap()
        );
    }

    #[test]
    fn null_vectors_and_null_items_never_rank() {
        // covers: OVL-QRY-4, OVL-QRY-9
        let mut snapshot = version_3_with_vector_index();
        let fragment = &mut snapshot.fragments[0];
        fragment.files[0].columns[3] = fragment.files[0].columns[3]
            .replaced(0, Value::Null)
            .unwrap(); // Alice
        fragment.files[0].columns[3] = fragment.files[0].columns[3]
            .replaced(2, Value::Vector(vec![Some(0.0), None, Some(1.0)]))
            .unwrap(); // Carol
        snapshot.indices[1].entries[0].value = Value::Null;
        snapshot.indices[1].entries[2].value = Value::Vector(vec![Some(0.0), None, Some(1.0)]);
        let r = reconcile_vector(&snapshot, "embedding_idx", &[0.0, 0.0, 0.0], 10).unwrap();
        let offsets: Vec<u64> = r.final_rows.iter().map(|s| s.row.offset).collect();
        assert_eq!(offsets, vec![1, 3]);
        assert_eq!(
            r.final_rows,
            flat_top_k(&snapshot, EMBEDDING, &[0.0; 3], 10).unwrap()
        );
    }

    #[test]
    fn vector_request_errors_are_typed() {
        let snapshot = version_3_with_vector_index();
        let code = |q: &[f32], k| {
            reconcile_vector(&snapshot, "embedding_idx", q, k)
                .unwrap_err()
                .code()
        };
        assert_eq!(code(&[0.0; 3], 0), "zero_k");
        assert_eq!(code(&[0.0; 2], 1), "dimension_mismatch");
        assert_eq!(code(&[0.0, f32::NAN, 0.0], 1), "non_finite_query");
        let err = reconcile(&snapshot, "embedding_idx", &Predicate::IsNull(EMBEDDING)).unwrap_err();
        assert_eq!(err.code(), "index_kind_mismatch");
        assert_eq!(
            flat_top_k(&snapshot, ID, &[0.0], 1).unwrap_err().code(),
            "query_type_mismatch"
        );
    }
}
