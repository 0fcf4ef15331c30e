//! The live rows of an expected version, as the runner holds them: listed row by row (a file
//! in the row form, or rows just computed) or column by column (a file in the
//! [`column_form`](super::column_form)), read cell by cell without turning one into the other.
//!
//! Invariant: both forms answer the same questions with the same meaning: row `i`'s position,
//! its three lineage cells and its value in column `p`, each an [`ExpectedCell`] whose
//! [`ExpectedCell::to_tagged`] is the tagged value the row form would hold. Two [`Rows`] are
//! equal when they list the same rows, whichever form each is in.

use serde_json::Value as Json;

use super::Row;
use super::column_form::RowColumns;
use super::tagged::Tagged;

/// One expected cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ExpectedCell<'a> {
    /// A tagged value, as listed.
    Tagged(&'a Tagged),
    /// An integer of `data_type` (`int32`, `int64` or `uint64`; `None`: NULL), in range.
    Integer {
        /// The type.
        data_type: &'a str,
        /// The value.
        value: Option<i128>,
    },
    /// A tagged value given as its type and its `value`.
    Value {
        /// The type.
        data_type: &'a str,
        /// The value.
        value: &'a Json,
    },
}

impl ExpectedCell<'_> {
    /// The cell's type.
    pub fn data_type(&self) -> &str {
        match self {
            ExpectedCell::Tagged(t) => &t.data_type,
            ExpectedCell::Integer { data_type, .. } | ExpectedCell::Value { data_type, .. } => {
                data_type
            }
        }
    }

    /// The cell as a tagged value, spelled as the row form spells it.
    pub fn to_tagged(&self) -> Tagged {
        match *self {
            ExpectedCell::Tagged(t) => t.clone(),
            ExpectedCell::Integer { data_type, value } => Tagged {
                data_type: data_type.to_string(),
                value: match value {
                    None => Json::Null,
                    Some(v) if data_type == "int32" => {
                        i64::try_from(v).map_or(Json::Null, Json::from)
                    }
                    Some(v) => Json::String(v.to_string()),
                },
            },
            ExpectedCell::Value { data_type, value } => Tagged {
                data_type: data_type.to_string(),
                value: value.clone(),
            },
        }
    }
}

/// The live rows of a version: fragments in manifest order, rows in physical order.
#[derive(Debug, Clone)]
pub enum Rows {
    /// Row by row.
    Listed(Vec<Row>),
    /// Column by column.
    Columns(RowColumns),
}

impl Rows {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Rows::Listed(rows) => rows.len(),
            Rows::Columns(c) => c.len(),
        }
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row `i`'s fragment and offset.
    pub fn position(&self, i: usize) -> Option<(u64, u64)> {
        match self {
            Rows::Listed(rows) => rows.get(i).map(|r| (r.fragment, r.offset)),
            Rows::Columns(c) => c.position(i),
        }
    }

    /// Row `i`'s `_rowid`, `_row_created_at_version` and `_row_last_updated_at_version`.
    pub fn lineage(&self, i: usize) -> Option<[ExpectedCell<'_>; 3]> {
        match self {
            Rows::Listed(rows) => rows.get(i).map(|r| {
                [
                    ExpectedCell::Tagged(&r.row_id),
                    ExpectedCell::Tagged(&r.created_at),
                    ExpectedCell::Tagged(&r.last_updated_at),
                ]
            }),
            Rows::Columns(c) => c.lineage(i),
        }
    }

    /// Row `i`'s value in column `p`.
    pub fn value(&self, i: usize, p: usize) -> Option<ExpectedCell<'_>> {
        match self {
            Rows::Listed(rows) => rows
                .get(i)
                .and_then(|r| r.values.get(p))
                .map(ExpectedCell::Tagged),
            Rows::Columns(c) => c.value(i, p),
        }
    }

    /// Every row, row by row.
    pub fn to_vec(&self) -> Vec<Row> {
        match self {
            Rows::Listed(rows) => rows.clone(),
            Rows::Columns(c) => c.to_rows(),
        }
    }
}

impl From<Vec<Row>> for Rows {
    fn from(rows: Vec<Row>) -> Rows {
        Rows::Listed(rows)
    }
}

impl PartialEq for Rows {
    fn eq(&self, other: &Rows) -> bool {
        match (self, other) {
            (Rows::Listed(a), Rows::Listed(b)) => a == b,
            _ => self.len() == other.len() && self.to_vec() == other.to_vec(),
        }
    }
}
