//! The column form of a version's rows: how `expected/v<N>.json` stores more than
//! [`ROW_FORM_MAX`] rows, one list per column instead of one object per row, with stretches of
//! integers written as runs.
//!
//! Invariant: the column form is only a spelling. [`decode`] of [`encode`] gives back exactly
//! the rows it was made from (same tagged types, same JSON values, same order); [`encode`]
//! checks that itself and answers `None` when it would not hold, so the file then keeps the
//! row form. Decoding untrusted text never panics and never allocates from an unchecked
//! count: runs expand one at a time, their total must equal `count`, and `count` is at most
//! [`MAX_ROWS`].
//!
//! The shape, with `columns` (the version's top-level columns) giving each value list's type:
//!
//! ```json
//! "rows": {
//!   "count": 14647,
//!   "fragment": ["0*14647"],
//!   "offset": ["0..14647"],
//!   "_rowid": ["0..14647"],
//!   "_row_created_at_version": ["1*14647"],
//!   "_row_last_updated_at_version": ["1", "2", "1", ...],
//!   "values": [["0", "-1", "2", ...]]
//! }
//! ```
//!
//! `fragment`, `offset`, the three lineage columns and every `int32`, `int64` or `uint64`
//! column are **integer runs**: each item is `"v"` (one row), `"v*n"` (n rows of v),
//! `"a..b"` (the b - a rows a, a + 1, ..., b - 1: end exclusive, as in `case.toml`), `null`
//! (one NULL) or `"null*n"` (n NULLs). Every other column lists one item per row: the tagged
//! value's `value` (its type is the column's). A file diffs line by line: one run or one value
//! per line.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::rows::ExpectedCell;
use super::tagged::Tagged;
use super::{Column, Row};

/// The most rows a version keeps in the row form; more are written in the column form.
/// Up to here a reviewer reads the rows one by one; past it the row form's size (about 300
/// bytes a row) is what a run loads and hashes.
pub const ROW_FORM_MAX: usize = 100;

/// The most rows a column form may declare: a bound on what a file can make the runner
/// allocate, far above the largest case (65,540 rows).
pub const MAX_ROWS: u64 = 1 << 22;

/// The lineage columns' type.
const LINEAGE_TYPE: &str = "uint64";

/// `rows` in the column form, as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnForm {
    /// Number of rows.
    pub count: u64,
    /// Fragment ids (integer runs).
    pub fragment: Vec<Json>,
    /// Physical offsets (integer runs).
    pub offset: Vec<Json>,
    /// `_rowid` (integer runs).
    #[serde(rename = "_rowid")]
    pub row_id: Vec<Json>,
    /// `_row_created_at_version` (integer runs).
    #[serde(rename = "_row_created_at_version")]
    pub created_at: Vec<Json>,
    /// `_row_last_updated_at_version` (integer runs).
    #[serde(rename = "_row_last_updated_at_version")]
    pub last_updated_at: Vec<Json>,
    /// One list per column, in `columns` order: integer runs, or one value per row.
    pub values: Vec<Vec<Json>>,
}

/// Whether a column of this type is written as integer runs.
fn is_integer(data_type: &str) -> bool {
    matches!(data_type, "int32" | "int64" | "uint64")
}

/// The rows in the column form, or `None` when they do not round-trip through it exactly
/// (a value whose type is not its column's, an integer not in its canonical spelling).
pub fn encode(columns: &[Column], rows: &[Row]) -> Option<ColumnForm> {
    let plain = |get: fn(&Row) -> u64| -> Vec<Option<i128>> {
        rows.iter().map(|r| Some(i128::from(get(r)))).collect()
    };
    let lineage = |get: fn(&Row) -> &Tagged| -> Option<Vec<Json>> {
        let items: Option<Vec<Option<i128>>> = rows
            .iter()
            .map(|r| integer_of(LINEAGE_TYPE, get(r)))
            .collect();
        Some(runs(&items?))
    };
    let mut values = Vec::with_capacity(columns.len());
    for (p, column) in columns.iter().enumerate() {
        let cells: Option<Vec<&Tagged>> = rows.iter().map(|r| r.values.get(p)).collect();
        let cells = cells?;
        if cells.iter().any(|t| t.data_type != column.data_type) {
            return None;
        }
        values.push(if is_integer(&column.data_type) {
            let items: Option<Vec<Option<i128>>> = cells
                .iter()
                .map(|t| integer_of(&column.data_type, t))
                .collect();
            runs(&items?)
        } else {
            cells.iter().map(|t| t.value.clone()).collect()
        });
    }
    if rows.iter().any(|r| r.values.len() != columns.len()) {
        return None;
    }
    let form = ColumnForm {
        count: rows.len() as u64,
        fragment: runs(&plain(|r| r.fragment)),
        offset: runs(&plain(|r| r.offset)),
        row_id: lineage(|r| &r.row_id)?,
        created_at: lineage(|r| &r.created_at)?,
        last_updated_at: lineage(|r| &r.last_updated_at)?,
        values,
    };
    // The form is only a spelling: keep it only when it gives these rows back.
    (decode(columns, &form).ok()?.to_rows() == rows).then_some(form)
}

/// The integer a tagged value of `data_type` holds (`Some(None)` for NULL), or `None` when
/// it is not that type's canonical spelling.
fn integer_of(data_type: &str, t: &Tagged) -> Option<Option<i128>> {
    if t.data_type != data_type {
        return None;
    }
    match &t.value {
        Json::Null => Some(None),
        Json::Number(n) if data_type == "int32" => n.as_i64().map(|i| Some(i128::from(i))),
        Json::String(s) if data_type != "int32" => s.parse().ok().map(Some),
        _ => None,
    }
}

/// The greedy run list of `items`: at each position a stretch of one value when it has two
/// rows or more, else a stretch counting up by one when it has three or more (two are
/// clearer as two items: `"1", "2"`, not `"1..3"`), else one item.
fn runs(items: &[Option<i128>]) -> Vec<Json> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&first) = items.get(i) {
        let same = items[i..].iter().take_while(|v| **v == first).count();
        let Some(start) = first else {
            out.push(if same == 1 {
                Json::Null
            } else {
                Json::String(format!("null*{same}"))
            });
            i += same;
            continue;
        };
        let counting = items[i..]
            .iter()
            .zip(start..)
            .take_while(|(v, want)| **v == Some(*want))
            .count();
        let (text, taken) = if same >= 2 {
            (format!("{start}*{same}"), same)
        } else if counting >= 3 {
            (format!("{start}..{}", start + counting as i128), counting)
        } else {
            (start.to_string(), 1)
        };
        out.push(Json::String(text));
        i += taken;
    }
    out
}

/// Why a column form does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rows (column form): {0}")]
pub struct ColumnFormError(pub String);

/// Why one value of an integer run is not a value of its column (the column's name is added
/// by [`ColumnFormError`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunValueError {
    /// The integer does not fit the column's type.
    #[error("{value} is out of {data_type} range")]
    OutOfRange {
        /// The value.
        value: i128,
        /// The column's type (`int32`, `int64`, `uint64`).
        data_type: String,
    },
    /// A position (a row's fragment or offset) is NULL or not a uint64.
    #[error("a position must be a uint64")]
    NotAPosition,
}

/// One integer run: its first value (`None`: NULLs), its length, and whether it counts up.
struct Run {
    start: Option<i128>,
    len: u64,
    counting: bool,
}

fn parse_run(column: &str, item: &Json) -> Result<Run, ColumnFormError> {
    let bad = || ColumnFormError(format!("{column}: {item} is not a run"));
    let text = match item {
        Json::Null => {
            return Ok(Run {
                start: None,
                len: 1,
                counting: false,
            });
        }
        Json::String(s) => s.as_str(),
        _ => return Err(bad()),
    };
    let value = |s: &str| -> Result<Option<i128>, ColumnFormError> {
        if s == "null" {
            Ok(None)
        } else {
            s.parse().map(Some).map_err(|_| bad())
        }
    };
    if let Some((a, b)) = text.split_once("..") {
        let (Some(a), Some(b)) = (value(a)?, value(b)?) else {
            return Err(bad());
        };
        let len = u64::try_from(b - a)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(bad)?;
        return Ok(Run {
            start: Some(a),
            len,
            counting: true,
        });
    }
    if let Some((v, n)) = text.split_once('*') {
        let len: u64 = n.parse().ok().filter(|n| *n > 0).ok_or_else(bad)?;
        return Ok(Run {
            start: value(v)?,
            len,
            counting: false,
        });
    }
    Ok(Run {
        start: value(text)?,
        len: 1,
        counting: false,
    })
}

/// Expands the integer runs of `column` into `count` items, each made by `make`.
fn expand<T>(
    column: &str,
    items: &[Json],
    count: u64,
    make: impl Fn(Option<i128>) -> Result<T, RunValueError>,
) -> Result<Vec<T>, ColumnFormError> {
    let mut out = Vec::new();
    let mut total: u64 = 0;
    for item in items {
        let run = parse_run(column, item)?;
        total = total
            .checked_add(run.len)
            .filter(|t| *t <= count)
            .ok_or_else(|| {
                ColumnFormError(format!("{column}: runs cover more than {count} rows"))
            })?;
        for k in 0..run.len {
            let v = match run.start {
                Some(s) if run.counting => Some(s + i128::from(k)),
                other => other,
            };
            out.push(make(v).map_err(|e| ColumnFormError(format!("{column}: {e}")))?);
        }
    }
    if total != count {
        return Err(ColumnFormError(format!(
            "{column}: runs cover {total} rows, not {count}"
        )));
    }
    Ok(out)
}

/// The values of one column of [`RowColumns`].
#[derive(Debug, Clone, PartialEq)]
enum Cells {
    /// Integers (`None`: NULL), of the column's type.
    Integers(Vec<Option<i128>>),
    /// Each row's tagged `value`, of the column's type.
    Values(Vec<Json>),
}

/// A decoded column form: the rows column by column, integers as integers, so loading a
/// large version allocates a few vectors rather than a few objects per row.
#[derive(Debug, Clone, PartialEq)]
pub struct RowColumns {
    fragment: Vec<u64>,
    offset: Vec<u64>,
    /// `_rowid`, `_row_created_at_version`, `_row_last_updated_at_version` (`uint64`).
    lineage: [Vec<Option<i128>>; 3],
    /// Each column's type and values, in `columns` order.
    values: Vec<(String, Cells)>,
}

impl RowColumns {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.fragment.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.fragment.is_empty()
    }

    /// Row `i`'s fragment and offset.
    pub fn position(&self, i: usize) -> Option<(u64, u64)> {
        Some((*self.fragment.get(i)?, *self.offset.get(i)?))
    }

    /// Row `i`'s lineage: `_rowid`, `_row_created_at_version`, `_row_last_updated_at_version`.
    pub fn lineage(&self, i: usize) -> Option<[ExpectedCell<'_>; 3]> {
        let cell = |k: usize| -> Option<ExpectedCell<'_>> {
            Some(ExpectedCell::Integer {
                data_type: LINEAGE_TYPE,
                value: *self.lineage[k].get(i)?,
            })
        };
        Some([cell(0)?, cell(1)?, cell(2)?])
    }

    /// Row `i`'s value of column `p`.
    pub fn value(&self, i: usize, p: usize) -> Option<ExpectedCell<'_>> {
        let (data_type, cells) = self.values.get(p)?;
        Some(match cells {
            Cells::Integers(v) => ExpectedCell::Integer {
                data_type,
                value: *v.get(i)?,
            },
            Cells::Values(v) => ExpectedCell::Value {
                data_type,
                value: v.get(i)?,
            },
        })
    }

    /// Row `i` in the row form.
    pub fn row(&self, i: usize) -> Option<Row> {
        let (fragment, offset) = self.position(i)?;
        let [row_id, created_at, last_updated_at] = self.lineage(i)?.map(|c| c.to_tagged());
        let values = (0..self.values.len())
            .map(|p| self.value(i, p).map(|c| c.to_tagged()))
            .collect::<Option<Vec<_>>>()?;
        Some(Row {
            fragment,
            offset,
            row_id,
            created_at,
            last_updated_at,
            values,
        })
    }

    /// Every row in the row form.
    pub fn to_rows(&self) -> Vec<Row> {
        (0..self.len()).filter_map(|i| self.row(i)).collect()
    }
}

/// Checks that an integer fits `data_type` (`int32`, `int64`, `uint64`).
fn in_range(data_type: &str, v: Option<i128>) -> Result<Option<i128>, RunValueError> {
    let Some(v) = v else { return Ok(None) };
    let fits = match data_type {
        "int32" => i32::try_from(v).is_ok(),
        "int64" => i64::try_from(v).is_ok(),
        _ => u64::try_from(v).is_ok(),
    };
    if fits {
        Ok(Some(v))
    } else {
        Err(RunValueError::OutOfRange {
            value: v,
            data_type: data_type.to_string(),
        })
    }
}

/// The rows a column form stands for; `columns` gives the value lists' types.
pub fn decode(columns: &[Column], form: &ColumnForm) -> Result<RowColumns, ColumnFormError> {
    let count = form.count;
    if count > MAX_ROWS {
        return Err(ColumnFormError(format!(
            "count {count} is over the kit's bound of {MAX_ROWS} rows"
        )));
    }
    if form.values.len() != columns.len() {
        return Err(ColumnFormError(format!(
            "{} value lists for {} columns",
            form.values.len(),
            columns.len()
        )));
    }
    let position = |v: Option<i128>| -> Result<u64, RunValueError> {
        v.and_then(|v| u64::try_from(v).ok())
            .ok_or(RunValueError::NotAPosition)
    };
    let lineage =
        |name: &str, items: &[Json]| expand(name, items, count, |v| in_range(LINEAGE_TYPE, v));
    let mut values = Vec::with_capacity(columns.len());
    for (column, items) in columns.iter().zip(&form.values) {
        let t = column.data_type.as_str();
        let cells = if is_integer(t) {
            Cells::Integers(expand(&column.name, items, count, |v| in_range(t, v))?)
        } else if items.len() as u64 != count {
            return Err(ColumnFormError(format!(
                "{}: {} values, not {count}",
                column.name,
                items.len()
            )));
        } else {
            Cells::Values(items.clone())
        };
        values.push((column.data_type.clone(), cells));
    }
    Ok(RowColumns {
        fragment: expand("fragment", &form.fragment, count, position)?,
        offset: expand("offset", &form.offset, count, position)?,
        lineage: [
            lineage("_rowid", &form.row_id)?,
            lineage("_row_created_at_version", &form.created_at)?,
            lineage("_row_last_updated_at_version", &form.last_updated_at)?,
        ],
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uint(v: u64) -> Tagged {
        Tagged {
            data_type: "uint64".into(),
            value: Json::String(v.to_string()),
        }
    }

    fn columns() -> Vec<Column> {
        [("id", "int64"), ("age", "int32"), ("name", "utf8")]
            .into_iter()
            .map(|(n, t)| Column {
                name: n.into(),
                data_type: t.into(),
            })
            .collect()
    }

    fn rows(n: u64) -> Vec<Row> {
        (0..n)
            .map(|i| Row {
                fragment: i / 150,
                offset: i % 150 + u64::from(i >= 200),
                row_id: uint(i),
                created_at: uint(1),
                last_updated_at: uint(1 + i % 2),
                values: vec![
                    Tagged {
                        data_type: "int64".into(),
                        value: if i % 7 == 3 {
                            Json::Null
                        } else {
                            Json::String(if i % 2 == 0 {
                                i.to_string()
                            } else {
                                "-1".into()
                            })
                        },
                    },
                    Tagged {
                        data_type: "int32".into(),
                        value: if (10..14).contains(&i) {
                            Json::Null
                        } else {
                            Json::from(30)
                        },
                    },
                    Tagged {
                        data_type: "utf8".into(),
                        value: Json::String(format!("n{}", i % 3)),
                    },
                ],
            })
            .collect()
    }

    #[test]
    fn runs_round_trip_and_read_as_written() {
        let rows = rows(400);
        let form = encode(&columns(), &rows).unwrap();
        assert_eq!(decode(&columns(), &form).unwrap().to_rows(), rows);
        let s = |v: &[Json]| serde_json::to_string(v).unwrap();
        assert_eq!(s(&form.fragment), r#"["0*150","1*150","2*100"]"#);
        assert_eq!(s(&form.offset), r#"["0..150","0..50","51..151","1..101"]"#);
        assert_eq!(s(&form.row_id), r#"["0..400"]"#);
        assert_eq!(s(&form.created_at), r#"["1*400"]"#);
        assert!(s(&form.last_updated_at).starts_with(r#"["1","2","1","2""#));
        assert!(s(&form.values[1]).starts_with(r#"["30*10","null*4","30*386"]"#));
        assert!(s(&form.values[0]).starts_with(r#"["0","-1","2",null,"4""#));
        assert_eq!(form.values[2].len(), 400);
    }

    #[test]
    fn rows_that_do_not_round_trip_keep_the_row_form() {
        let mut odd = rows(3);
        odd[1].values[0].value = Json::String("007".into());
        assert!(encode(&columns(), &odd).is_none());
        let mut mistyped = rows(3);
        mistyped[2].values[1].data_type = "int64".into();
        assert!(encode(&columns(), &mistyped).is_none());
        let mut short = rows(3);
        short[0].values.pop();
        assert!(encode(&columns(), &short).is_none());
    }

    /// A damage applied to a good column form, named by the error text it must produce.
    type Damage = (&'static str, Box<dyn Fn(&mut ColumnForm)>);

    #[test]
    fn malformed_column_forms_are_errors_not_panics() {
        let good = encode(&columns(), &rows(5)).unwrap();
        let cases: Vec<Damage> = vec![
            ("more than", Box::new(|f| f.offset = vec!["0..6".into()])),
            ("cover 4 rows", Box::new(|f| f.offset = vec!["0..4".into()])),
            ("not a run", Box::new(|f| f.offset = vec!["5..5".into()])),
            ("not a run", Box::new(|f| f.row_id = vec!["x".into()])),
            ("not a run", Box::new(|f| f.row_id = vec![Json::from(3)])),
            ("uint64", Box::new(|f| f.fragment = vec!["-1*5".into()])),
            (
                "out of int32",
                Box::new(|f| f.values[1] = vec!["3000000000*5".into()]),
            ),
            (
                "values, not",
                Box::new(|f| {
                    f.values[2].pop();
                }),
            ),
            (
                "value lists",
                Box::new(|f| {
                    f.values.pop();
                }),
            ),
            ("bound", Box::new(|f| f.count = u64::MAX)),
            (
                "more than",
                Box::new(|f| f.created_at = vec!["1*18446744073709551615".into(), "1".into()]),
            ),
        ];
        for (want, damage) in cases {
            let mut form = good.clone();
            damage(&mut form);
            let err = decode(&columns(), &form).unwrap_err().to_string();
            assert!(err.contains(want), "{want}: {err}");
        }
    }
}
