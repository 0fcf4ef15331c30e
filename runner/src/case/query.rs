//! Declared queries and predicates: what a case asks of an index, and at which versions.
//!
//! Invariant: a predicate names fields by (dotted) name and holds untyped [`Cell`] literals;
//! [`PredicateSpec::to_predicate`] types every literal by its field, so `age = 26` on an
//! `int32` field is exactly `Eq(age, Int32(26))` and a literal that does not fit is an error.

use lance_reference::model::{FieldId, Schema};
use lance_reference::query::Predicate;
use serde::{Deserialize, Serialize};

use super::cell::{Cell, CellError};

/// Comparison operators of a predicate leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// `=`
    #[serde(rename = "=")]
    Eq,
    /// `!=`
    #[serde(rename = "!=")]
    Ne,
    /// `<`
    #[serde(rename = "<")]
    Lt,
    /// `<=`
    #[serde(rename = "<=")]
    Le,
    /// `>`
    #[serde(rename = ">")]
    Gt,
    /// `>=`
    #[serde(rename = ">=")]
    Ge,
    /// `in` (value is an array)
    #[serde(rename = "in")]
    In,
    /// `is_null` (no value)
    #[serde(rename = "is_null")]
    IsNull,
    /// `is_not_null` (no value)
    #[serde(rename = "is_not_null")]
    IsNotNull,
}

/// A scalar predicate: `{ field = "age", op = "=", value = 26 }`, `{ and = [...] }` or
/// `{ or = [...] }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PredicateSpec {
    /// A comparison of one field.
    Leaf {
        /// Field name (dotted for nested fields).
        field: String,
        /// Operator.
        op: Op,
        /// Literal (absent for `is_null` / `is_not_null`; an array for `in`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<Cell>,
    },
    /// Every part holds.
    And {
        /// The parts.
        and: Vec<PredicateSpec>,
    },
    /// Some part holds.
    Or {
        /// The parts.
        or: Vec<PredicateSpec>,
    },
}

impl PredicateSpec {
    /// The typed predicate, resolving names with `lookup`.
    pub fn to_predicate(
        &self,
        schema: &Schema,
        lookup: &dyn Fn(&str) -> Option<FieldId>,
    ) -> Result<Predicate, CellError> {
        match self {
            PredicateSpec::And { and } => Ok(Predicate::And(
                and.iter()
                    .map(|p| p.to_predicate(schema, lookup))
                    .collect::<Result<_, _>>()?,
            )),
            PredicateSpec::Or { or } => Ok(Predicate::Or(
                or.iter()
                    .map(|p| p.to_predicate(schema, lookup))
                    .collect::<Result<_, _>>()?,
            )),
            PredicateSpec::Leaf { field, op, value } => {
                let bad = |problem: &str| CellError {
                    field: field.clone(),
                    problem: problem.into(),
                };
                let id = lookup(field).ok_or_else(|| bad("no such field"))?;
                let literal = |v: &Option<Cell>| -> Result<_, CellError> {
                    v.as_ref()
                        .ok_or_else(|| bad("this operator needs a value"))?
                        .to_value(schema, id)
                };
                Ok(match op {
                    Op::Eq => Predicate::Eq(id, literal(value)?),
                    Op::Ne => Predicate::Ne(id, literal(value)?),
                    Op::Lt => Predicate::Lt(id, literal(value)?),
                    Op::Le => Predicate::Le(id, literal(value)?),
                    Op::Gt => Predicate::Gt(id, literal(value)?),
                    Op::Ge => Predicate::Ge(id, literal(value)?),
                    Op::In => match value {
                        Some(Cell::List(items)) => Predicate::In(
                            id,
                            items
                                .iter()
                                .map(|c| c.to_value(schema, id))
                                .collect::<Result<_, _>>()?,
                        ),
                        _ => return Err(bad("`in` needs an array value")),
                    },
                    Op::IsNull | Op::IsNotNull if value.is_some() => {
                        return Err(bad("is_null / is_not_null take no value"));
                    }
                    Op::IsNull => Predicate::IsNull(id),
                    Op::IsNotNull => Predicate::IsNotNull(id),
                })
            }
        }
    }
}

/// A query whose reconciliation the expected results record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuerySpec {
    /// Name, unique within the case (free text, e.g. `"age = 26"`).
    pub name: String,
    /// The index answering it.
    pub index: String,
    /// A scalar predicate (for a BTree index).
    #[serde(default, rename = "where", skip_serializing_if = "Option::is_none")]
    pub predicate: Option<PredicateSpec>,
    /// A query vector (for a vector index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<Vec<f32>>,
    /// Top k (vector queries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<usize>,
    /// Versions at which the query is answered. A negative case may name its damaged version:
    /// there the query has no answer and only asks a reader that opened and scanned the
    /// damaged version to refuse it.
    pub at: Vec<u64>,
}
