//! Comparing a reader's answer with `expected/`: the first difference, in words.
//!
//! Invariant: two answers are equal here exactly when they hold the same typed values in the
//! same order, where "same value" is the tagged spelling's meaning, not its text: floats are
//! compared by bit pattern after parsing (so `"0.10000000149011612"` is the float32 `0.1`,
//! and NaN equals NaN), a struct child left out reads as NULL, and 64-bit integers are
//! compared as integers. Sets (exclusion sets) are compared after sorting; lists whose order
//! the spec fixes (rows, scalar answers, reconciliation lists) are compared in order. A vector
//! top k is compared by its groups of tied rows, which the spec lets a reader order as it likes
//! and cut at place k anywhere in the last one ([OVL-QRY-5]). Vector distances are the one
//! tolerance: a relative 1e-5, because the order of a float sum is not normative. A scan is
//! the same answer whether it comes as the protocol's rows or as Arrow batches checked for
//! conversion ([`ScanRows`]): a cell of the batches compares as its tagged value would, an
//! integer as an integer without spelling it.

use serde_json::Value as Json;

use super::arrow_reader::{ArrowCell, CheckedScan};
use super::protocol::{QueryAnswer, ScanResult};
use crate::expected::tagged::{Tagged, untag};
use crate::expected::{
    Column, ExclusionSet, ExpectedCell, FragmentLineage, Hit, QueryKind, QueryResult, Rows,
};

/// The first difference between what `expected/` holds and what a reader answered, in words:
/// where it is (row, column, list, fragment) and both sides, as a check's detail shows it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Difference(String);

impl Difference {
    /// The same difference, found in the answer to the declared query `name`.
    pub fn in_query(self, name: &str) -> Difference {
        Difference(format!("query {name:?}: {}", self.0))
    }
}

/// A [`Difference`] spelled as `format!` spells its text.
macro_rules! difference {
    ($($text:tt)*) => {
        Difference(format!($($text)*))
    };
}

/// The relative tolerance on vector distances.
pub const DISTANCE_TOLERANCE: f32 = 1e-5;

fn show(t: &Tagged) -> String {
    format!("{} {}", t.data_type, t.value)
}

/// Whether two tagged values mean the same value (see the module docs).
pub fn same_value(expected: &Tagged, got: &Tagged) -> bool {
    if !same_type_spelling(&expected.data_type, &got.data_type) {
        return false;
    }
    match (&expected.value, &got.value) {
        (Json::Null, Json::Null) => true,
        (Json::Null, _) | (_, Json::Null) => false,
        (Json::Object(a), Json::Object(b)) => {
            let child = |m: &serde_json::Map<String, Json>, k: &str| -> Option<Tagged> {
                m.get(k)
                    .and_then(|v| serde_json::from_value(v.clone()).ok())
            };
            a.keys()
                .chain(b.keys())
                .all(|k| match (child(a, k), child(b, k)) {
                    (Some(x), Some(y)) => same_value(&x, &y),
                    (Some(x), None) | (None, Some(x)) => x.value.is_null(),
                    (None, None) => false,
                })
        }
        _ => match (untag(expected), untag(got)) {
            (Ok(a), Ok(b)) => a.identical(&b),
            _ => false,
        },
    }
}

/// Whether two type spellings are the same once spaces are left out (`fixed_size_list<float32,
/// 3>` is `fixed_size_list<float32,3>`).
fn same_type_spelling(a: &str, b: &str) -> bool {
    a == b
        || a.bytes()
            .filter(|c| *c != b' ')
            .eq(b.bytes().filter(|c| *c != b' '))
}

/// Whether an expected cell and a returned value mean the same value (see the module docs).
/// An integer cell is compared as an integer, without spelling it first.
pub fn same_cell(expected: &ExpectedCell, got: &Tagged) -> bool {
    match *expected {
        ExpectedCell::Tagged(t) => same_value(t, got),
        ExpectedCell::Integer { data_type, value } => {
            if !same_type_spelling(data_type, &got.data_type) {
                return false;
            }
            let Some(want) = value else {
                return got.value.is_null();
            };
            // As `untag` reads each type, so the verdict is `same_value`'s.
            let got_value: Option<i128> = match data_type {
                "int32" => got
                    .value
                    .as_i64()
                    .and_then(|i| i32::try_from(i).ok())
                    .map(i128::from),
                "int64" => got
                    .value
                    .as_str()
                    .and_then(|s| s.parse::<i64>().ok())
                    .map(i128::from),
                "uint64" => got
                    .value
                    .as_str()
                    .and_then(|s| s.parse::<u64>().ok())
                    .map(i128::from),
                _ => return same_value(&expected.to_tagged(), got),
            };
            got_value == Some(want)
        }
        ExpectedCell::Value { .. } => same_value(&expected.to_tagged(), got),
    }
}

fn show_cell(c: &ExpectedCell) -> String {
    show(&c.to_tagged())
}

/// A cell of a reader's scan as it is compared: a tagged value of the protocol's rows, or a
/// cell of Arrow batches checked for conversion ([`CheckedScan`]).
#[derive(Debug, Clone, Copy)]
pub enum GotCell<'a> {
    /// A tagged value, as answered.
    Tagged(&'a Tagged),
    /// An Arrow cell, not converted.
    Arrow(ArrowCell<'a>),
}

impl GotCell<'_> {
    /// Whether `expected` and this cell mean the same value: [`same_cell`] with the cell's
    /// tagged value. An integer is compared as an integer, without converting it.
    fn matches(&self, expected: &ExpectedCell) -> bool {
        match self {
            GotCell::Tagged(t) => same_cell(expected, t),
            GotCell::Arrow(cell) => match (expected, cell.integer()) {
                // As `same_cell` compares an integer cell with the cell's tagged spelling.
                (ExpectedCell::Integer { data_type, value }, Some(got)) => {
                    same_type_spelling(data_type, cell.data_type()) && got == *value
                }
                _ => cell.to_tagged().is_ok_and(|t| same_cell(expected, &t)),
            },
        }
    }

    /// The cell as a difference shows it.
    fn shown(&self) -> String {
        match self {
            GotCell::Tagged(t) => show(t),
            GotCell::Arrow(cell) => match cell.to_tagged() {
                Ok(t) => show(&t),
                Err(r) => format!("{} (not converted: {r:?})", cell.data_type()),
            },
        }
    }
}

/// A reader's scan as [`scan`] reads it, row by row: the protocol's rows, or checked Arrow
/// batches read in place.
pub trait ScanRows {
    /// The columns answered, in answer order.
    fn columns(&self) -> &[Column];
    /// Number of rows.
    fn len(&self) -> usize;
    /// Whether there are no rows.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Row `i`'s fragment and offset.
    fn position(&self, i: usize) -> Option<(u64, u64)>;
    /// Row `i`'s `_rowid`, `_row_created_at_version` and `_row_last_updated_at_version`.
    fn lineage(&self, i: usize) -> Option<[GotCell<'_>; 3]>;
    /// How many values row `i` has.
    fn width(&self, i: usize) -> usize;
    /// Row `i`'s `k`-th value.
    fn value(&self, i: usize, k: usize) -> Option<GotCell<'_>>;
}

impl ScanRows for ScanResult {
    fn columns(&self) -> &[Column] {
        &self.columns
    }

    fn len(&self) -> usize {
        self.rows.len()
    }

    fn position(&self, i: usize) -> Option<(u64, u64)> {
        self.rows.get(i).map(|r| (r.fragment, r.offset))
    }

    fn lineage(&self, i: usize) -> Option<[GotCell<'_>; 3]> {
        self.rows.get(i).map(|r| {
            [&r.row_id, &r.created_at, &r.last_updated_at].map(GotCell::Tagged)
        })
    }

    fn width(&self, i: usize) -> usize {
        self.rows.get(i).map_or(0, |r| r.values.len())
    }

    fn value(&self, i: usize, k: usize) -> Option<GotCell<'_>> {
        self.rows.get(i)?.values.get(k).map(GotCell::Tagged)
    }
}

impl ScanRows for CheckedScan<'_> {
    fn columns(&self) -> &[Column] {
        CheckedScan::columns(self)
    }

    fn len(&self) -> usize {
        CheckedScan::len(self)
    }

    fn position(&self, i: usize) -> Option<(u64, u64)> {
        CheckedScan::position(self, i)
    }

    fn lineage(&self, i: usize) -> Option<[GotCell<'_>; 3]> {
        CheckedScan::lineage(self, i).map(|cells| cells.map(GotCell::Arrow))
    }

    fn width(&self, i: usize) -> usize {
        if i < CheckedScan::len(self) {
            CheckedScan::columns(self).len()
        } else {
            0
        }
    }

    fn value(&self, i: usize, k: usize) -> Option<GotCell<'_>> {
        CheckedScan::value(self, i, k).map(GotCell::Arrow)
    }
}

/// The first difference between the expected rows (values projected to `projection`, indices
/// into the expected columns) and a scan.
pub fn scan(
    expected_columns: &[Column],
    expected_rows: &Rows,
    projection: &[usize],
    got: &dyn ScanRows,
) -> Result<(), Difference> {
    let want_columns: Vec<_> = projection
        .iter()
        .filter_map(|i| expected_columns.get(*i))
        .collect();
    let got_columns: Vec<_> = got.columns().iter().collect();
    if want_columns != got_columns {
        return Err(difference!(
            "columns: expected {}, got {}",
            columns_text(&want_columns),
            columns_text(&got_columns)
        ));
    }
    if expected_rows.len() != got.len() {
        let want: Vec<String> = (0..expected_rows.len())
            .filter_map(|i| expected_rows.position(i))
            .map(|(f, o)| format!("{f}:{o}"))
            .collect();
        let have: Vec<String> = (0..got.len())
            .filter_map(|i| got.position(i))
            .map(|(f, o)| format!("{f}:{o}"))
            .collect();
        return Err(difference!(
            "{} rows expected, {} returned (fragment:offset expected [{}], got [{}])",
            expected_rows.len(),
            got.len(),
            want.join(", "),
            have.join(", ")
        ));
    }
    for i in 0..got.len() {
        let (Some((fragment, offset)), Some(lineage)) =
            (expected_rows.position(i), expected_rows.lineage(i))
        else {
            return Err(difference!("row {i}: the expected rows end early"));
        };
        let (Some(position), Some(got_lineage)) = (got.position(i), got.lineage(i)) else {
            return Err(difference!("row {i}: the answer's rows end early"));
        };
        // The row's label is spelled only for a difference.
        let at = || format!("row {i} (fragment {fragment}, offset {offset})");
        if (fragment, offset) != position {
            return Err(difference!(
                "{}: got fragment {}, offset {}",
                at(),
                position.0,
                position.1
            ));
        }
        for ((name, w), g) in [
            "_rowid",
            "_row_created_at_version",
            "_row_last_updated_at_version",
        ]
        .into_iter()
        .zip(&lineage)
        .zip(got_lineage)
        {
            if !g.matches(w) {
                return Err(difference!(
                    "{}: {name}: expected {}, got {}",
                    at(),
                    show_cell(w),
                    g.shown()
                ));
            }
        }
        let width = got.width(i);
        if width != projection.len() {
            return Err(difference!(
                "{}: {} values for {} columns",
                at(),
                width,
                projection.len()
            ));
        }
        for (k, p) in projection.iter().enumerate() {
            let Some(w) = expected_rows.value(i, *p) else {
                return Err(difference!("{}: the expected row has no column {p}", at()));
            };
            let Some(g) = got.value(i, k) else {
                return Err(difference!("{}: the answer's row has no value {k}", at()));
            };
            if !g.matches(&w) {
                let name = expected_columns.get(*p).map_or("?", |c| c.name.as_str());
                return Err(difference!(
                    "{}: {name}: expected {}, got {}",
                    at(),
                    show_cell(&w),
                    g.shown()
                ));
            }
        }
    }
    Ok(())
}

fn columns_text(columns: &[&Column]) -> String {
    let parts: Vec<String> = columns
        .iter()
        .map(|c| format!("{} {}", c.name, c.data_type))
        .collect();
    format!("[{}]", parts.join(", "))
}

/// The first difference in a fragment's lineage placement.
pub fn lineage(expected: &FragmentLineage, got: &FragmentLineage) -> Result<(), Difference> {
    if expected == got {
        return Ok(());
    }
    let text = |f: &FragmentLineage| serde_json::to_string(f).unwrap_or_default();
    Err(difference!(
        "fragment {}: expected {}, got {}",
        expected.fragment,
        text(expected),
        text(got)
    ))
}

/// The first difference between exclusion sets (compared as sets of (index, fragment,
/// offsets)).
pub fn exclusion(expected: &[ExclusionSet], got: &[ExclusionSet]) -> Result<(), Difference> {
    let norm = |sets: &[ExclusionSet]| {
        let mut v: Vec<(String, u64, Vec<u32>)> = sets
            .iter()
            .map(|s| {
                let mut o = s.offsets.clone();
                o.sort_unstable();
                (s.index.clone(), s.fragment, o)
            })
            .collect();
        v.sort();
        v
    };
    let (want, have) = (norm(expected), norm(got));
    if want == have {
        return Ok(());
    }
    let text = |v: &[(String, u64, Vec<u32>)]| {
        let parts: Vec<String> = v.iter().map(|(i, f, o)| format!("{i}@{f}:{o:?}")).collect();
        format!("[{}]", parts.join(", "))
    };
    Err(difference!("expected {}, got {}", text(&want), text(&have)))
}

fn hits(list: &str, expected: &[Hit], got: &[Hit]) -> Result<(), Difference> {
    let rows = |v: &[Hit]| v.iter().map(|h| (h.fragment, h.offset)).collect::<Vec<_>>();
    if rows(expected) != rows(got) {
        return Err(difference!(
            "{list}: expected {}, got {}",
            text(expected),
            text(got)
        ));
    }
    for (w, g) in expected.iter().zip(got) {
        distance(list, w, g)?;
    }
    Ok(())
}

/// `g`'s distance against `w`'s (none expected: nothing to check).
fn distance(list: &str, w: &Hit, g: &Hit) -> Result<(), Difference> {
    match (&w.distance, &g.distance) {
        (None, _) => Ok(()),
        (Some(_), None) => Err(difference!(
            "{list}: {}:{} has no distance",
            g.fragment, g.offset
        )),
        (Some(a), Some(b)) => {
            let close = match (float(a), float(b)) {
                (Some(x), Some(y)) => (x - y).abs() <= DISTANCE_TOLERANCE * x.abs().max(1.0),
                _ => false,
            };
            if close {
                Ok(())
            } else {
                Err(difference!(
                    "{list}: {}:{} distance: expected {}, got {}",
                    g.fragment, g.offset, a.value, b.value
                ))
            }
        }
    }
}

/// A vector answer against the expected top k, ties as [OVL-QRY-5] allows: the expected rows
/// fall into groups of equal distance; a reader's answer holds each group at the same places,
/// in any order within it, and at the last group's places any rows of that group or of
/// `tied_past_k`. Every distance is checked against its group's, with the usual tolerance.
fn top_k(expected: &QueryResult, got: &[Hit]) -> Result<(), Difference> {
    let want = &expected.final_rows;
    if want.len() != got.len() {
        return Err(difference!(
            "final: expected {} rows, got {} ({})",
            want.len(),
            got.len(),
            text(got)
        ));
    }
    let row = |h: &Hit| (h.fragment, h.offset);
    let same = |a: &Hit, b: &Hit| match (&a.distance, &b.distance) {
        (Some(x), Some(y)) => float(x).is_some() && float(x) == float(y),
        _ => false,
    };
    let mut start = 0;
    while start < want.len() {
        let end = start
            + want[start..]
                .iter()
                .take_while(|h| same(h, &want[start]))
                .count()
                .max(1);
        let last = end == want.len();
        let mut allowed: Vec<(u64, u64)> = want[start..end].iter().map(row).collect();
        if last {
            allowed.extend(expected.tied_past_k.iter().map(row));
        }
        let mut seen = Vec::new();
        for g in &got[start..end] {
            if !allowed.contains(&row(g)) || seen.contains(&row(g)) {
                return Err(difference!(
                    "final: expected {} (places {}..{} tie at one distance{}), got {}",
                    text(want),
                    start + 1,
                    end,
                    if last && !expected.tied_past_k.is_empty() {
                        format!("; also allowed there: {}", text(&expected.tied_past_k))
                    } else {
                        String::new()
                    },
                    text(got)
                ));
            }
            seen.push(row(g));
            distance("final", &want[start], g)?;
        }
        start = end;
    }
    Ok(())
}

fn text(v: &[Hit]) -> String {
    let parts: Vec<String> = v
        .iter()
        .map(|h| format!("{}:{}", h.fragment, h.offset))
        .collect();
    format!("[{}]", parts.join(", "))
}

fn float(t: &Tagged) -> Option<f32> {
    match untag(t).ok()? {
        lance_reference::model::Value::Float32(x) => Some(x),
        _ => None,
    }
}

/// The first difference in a query answer: `final` always, the reconciliation lists when the
/// reader reports them (`with_lists`: it declared `exclusion`, so it must).
pub fn query(expected: &QueryResult, got: &QueryAnswer, with_lists: bool) -> Result<(), Difference> {
    if expected.kind != got.kind {
        return Err(difference!(
            "kind: expected {:?}, got {:?}",
            expected.kind, got.kind
        ));
    }
    match expected.kind {
        QueryKind::Scalar => hits("final", &expected.final_rows, &got.final_rows)?,
        QueryKind::Vector => top_k(expected, &got.final_rows)?,
    }
    match (&got.reconciliation, with_lists) {
        (None, true) => Err(difference!("no reconciliation lists (the reader declares `exclusion`)")),
        (None, false) => Ok(()),
        (Some(r), _) => {
            hits("candidates", &expected.candidates, &r.candidates)?;
            hits("excluded", &expected.excluded, &r.excluded)?;
            hits("reevaluated", &expected.reevaluated, &r.reevaluated)?;
            hits("rematched", &expected.rematched, &r.rematched)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t(ty: &str, v: Json) -> Tagged {
        Tagged {
            data_type: ty.into(),
            value: v,
        }
    }

    #[test]
    fn values_compare_by_meaning_not_spelling() {
        let f = |s: &str| t("float32", json!(s));
        assert!(same_value(&f("0.1"), &f("0.10000000149011612")));
        assert!(same_value(&f("NaN"), &f("nan")));
        assert!(!same_value(&f("0.0"), &f("-0.0")));
        assert!(!same_value(&f("0.1"), &f("0.2")));
        assert!(!same_value(&t("int64", json!("1")), &t("int32", json!(1))));
        assert!(!same_value(
            &t("int64", json!("1")),
            &t("uint64", json!("1"))
        ));
        let v = |ty: &str| t(ty, json!(["1.0", null]));
        assert!(same_value(
            &v("fixed_size_list<float32, 2>"),
            &v("fixed_size_list<float32,2>")
        ));
        assert!(!same_value(
            &v("fixed_size_list<float32,2>"),
            &v("fixed_size_list<float64,2>")
        ));
        assert!(!same_value(&t("utf8", json!("a")), &t("utf8", Json::Null)));
        let s = |v: Json| t("struct", v);
        let city = json!({"type": "utf8", "value": "Oslo"});
        let none = json!({"type": "int32", "value": null});
        assert!(same_value(
            &s(json!({"city": city, "zip": none})),
            &s(json!({"city": city}))
        ));
        assert!(!same_value(
            &s(json!({"city": city})),
            &s(json!({"zip": none}))
        ));
    }

    fn vector(final_rows: &[(u64, &str)], tied_past_k: &[(u64, &str)]) -> QueryResult {
        let hits = |v: &[(u64, &str)]| {
            v.iter()
                .map(|&(offset, d)| Hit {
                    fragment: 0,
                    offset,
                    distance: Some(t("float32", json!(d))),
                })
                .collect()
        };
        QueryResult {
            name: "q".into(),
            index: "v_idx".into(),
            kind: QueryKind::Vector,
            candidates: Vec::new(),
            excluded: Vec::new(),
            reevaluated: Vec::new(),
            rematched: Vec::new(),
            final_rows: hits(final_rows),
            tied_past_k: hits(tied_past_k),
        }
    }

    #[test]
    fn a_vector_top_k_is_judged_by_its_tie_groups() {
        // Expected: 2 at 0.5, then 0 and 1 tied at 4.25, and 3 tied with them past k = 3.
        let want = vector(&[(2, "0.5"), (0, "4.25"), (1, "4.25")], &[(3, "4.25")]);
        let got = |v: &[(u64, &str)]| vector(v, &[]).final_rows;
        let ok = |v: &[(u64, &str)]| top_k(&want, &got(v));
        assert!(ok(&[(2, "0.5"), (0, "4.25"), (1, "4.25")]).is_ok());
        assert!(
            ok(&[(2, "0.5"), (1, "4.25"), (0, "4.25")]).is_ok(),
            "any order within a tie"
        );
        assert!(
            ok(&[(2, "0.5"), (3, "4.25"), (1, "4.25")]).is_ok(),
            "any tied row at the last places"
        );
        assert!(
            ok(&[(0, "4.25"), (2, "0.5"), (1, "4.25")]).is_err(),
            "groups keep their places"
        );
        assert!(
            ok(&[(2, "0.5"), (0, "4.25"), (0, "4.25")]).is_err(),
            "a row twice"
        );
        assert!(
            ok(&[(2, "0.5"), (0, "4.25"), (4, "4.25")]).is_err(),
            "a row that is not tied"
        );
        assert!(
            ok(&[(2, "0.5"), (0, "4.25"), (1, "4.3")]).is_err(),
            "a wrong distance"
        );
        assert!(ok(&[(2, "0.5"), (0, "4.25")]).is_err(), "too few rows");
        // Past k only at the last group: an earlier tie cannot reach past k.
        let early = vector(&[(0, "1.0"), (1, "1.0"), (2, "2.0")], &[]);
        assert!(top_k(&early, &got(&[(1, "1.0"), (0, "1.0"), (2, "2.0")])).is_ok());
        assert!(top_k(&early, &got(&[(0, "1.0"), (3, "1.0"), (2, "2.0")])).is_err());
    }

    #[test]
    fn distances_tolerate_summation_order_only() {
        let hit = |d: &str| Hit {
            fragment: 0,
            offset: 1,
            distance: Some(t("float32", json!(d))),
        };
        assert!(hits("final", &[hit("2.0")], &[hit("2.0000002")]).is_ok());
        assert!(hits("final", &[hit("2.0")], &[hit("2.001")]).is_err());
    }
}
