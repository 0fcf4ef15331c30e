//! Cell values as a case author writes them: natural TOML (`26`, `"Bob"`, `[0.5, 0.5, 0.5]`,
//! `{ city = "Oslo" }`), with NULL spelled `{ null = true }` because TOML has no null.
//!
//! Invariant: a [`Cell`] carries no type of its own; it becomes a model [`Value`] only through
//! [`Cell::to_value`] against the field's declared [`DataType`], which rejects anything that
//! does not fit (a float for an `int32`, a vector of the wrong dimension, an unknown struct
//! child). So the same case text always means the same typed values, and a typo is an error,
//! never a silently different cell.

use std::collections::BTreeMap;

use lance_reference::model::{DataType, FieldId, Schema, Value};
use serde::{Deserialize, Serialize};

/// The explicit NULL marker `{ null = true }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NullMarker {
    /// Must be `true`.
    pub null: bool,
}

/// One untyped cell value, as written in `case.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Cell {
    /// `{ null = true }`: SQL NULL, for any type.
    Null(NullMarker),
    /// `true` / `false`.
    Bool(bool),
    /// An integer literal (also accepted for float fields).
    Int(i64),
    /// A float literal (`nan`, `inf`, `-inf` and `-0.0` are TOML floats too).
    Float(f64),
    /// A string; also the spelling of a `uint64` above `i64::MAX`.
    Text(String),
    /// A vector (`fixed_size_list<float32, N>`).
    List(Vec<Cell>),
    /// A struct: child name → value; a missing child is NULL.
    Struct(BTreeMap<String, Cell>),
}

/// Why a cell does not fit its field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field {field:?}: {problem}")]
pub struct CellError {
    /// The field's name (dotted for nested fields).
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

impl Cell {
    /// The NULL cell.
    pub fn null() -> Cell {
        Cell::Null(NullMarker { null: true })
    }

    /// A short description of the cell's kind, for errors.
    fn kind(&self) -> &'static str {
        match self {
            Cell::Null(_) => "null",
            Cell::Bool(_) => "a boolean",
            Cell::Int(_) => "an integer",
            Cell::Float(_) => "a float",
            Cell::Text(_) => "a string",
            Cell::List(_) => "an array",
            Cell::Struct(_) => "a table",
        }
    }

    /// The model value of this cell for field `field` of `schema`. A struct cell becomes a
    /// resolved-row struct (children in schema order); see `Cell::to_stored` for the form a
    /// base column stores.
    pub fn to_value(&self, schema: &Schema, field: FieldId) -> Result<Value, CellError> {
        let (name, data_type) = field_name_and_type(schema, field);
        let bad = |problem: String| CellError {
            field: name.clone(),
            problem,
        };
        if let Cell::Null(marker) = self {
            return if marker.null {
                Ok(Value::Null)
            } else {
                Err(bad(
                    "write NULL as { null = true }; { null = false } means nothing".into(),
                ))
            };
        }
        let mismatch = || {
            bad(format!(
                "{} does not fit type {}",
                self.kind(),
                type_name(&data_type)
            ))
        };
        Ok(match (&data_type, self) {
            (DataType::Bool, Cell::Bool(b)) => Value::Bool(*b),
            (DataType::Int32, Cell::Int(i)) => Value::Int32(
                i32::try_from(*i).map_err(|_| bad(format!("{i} is out of int32 range")))?,
            ),
            (DataType::Int64, Cell::Int(i)) => Value::Int64(*i),
            (DataType::UInt64, Cell::Int(i)) => {
                Value::UInt64(u64::try_from(*i).map_err(|_| bad(format!("{i} is negative")))?)
            }
            (DataType::UInt64, Cell::Text(s)) => Value::UInt64(
                s.parse()
                    .map_err(|_| bad(format!("{s:?} is not a uint64 written as a string")))?,
            ),
            (DataType::Float32, Cell::Float(x)) => Value::Float32(*x as f32),
            (DataType::Float32, Cell::Int(i)) => Value::Float32(*i as f32),
            (DataType::Float64, Cell::Float(x)) => Value::Float64(*x),
            (DataType::Float64, Cell::Int(i)) => Value::Float64(*i as f64),
            (DataType::Utf8, Cell::Text(s)) => Value::Utf8(s.clone()),
            (DataType::FixedSizeList { dimension }, Cell::List(items)) => {
                if items.len() as u64 != u64::from(*dimension) {
                    return Err(bad(format!(
                        "a vector of {} items for dimension {dimension}",
                        items.len()
                    )));
                }
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(match item {
                        Cell::Null(m) if m.null => None,
                        Cell::Float(x) => Some(*x as f32),
                        Cell::Int(i) => Some(*i as f32),
                        other => {
                            return Err(bad(format!(
                                "vector item {} is not a float32",
                                other.kind()
                            )));
                        }
                    });
                }
                Value::Vector(out)
            }
            (DataType::Struct, Cell::Struct(children)) => {
                let known: Vec<&str> = schema.children(field).map(|c| c.name.as_str()).collect();
                if let Some(unknown) = children.keys().find(|k| !known.contains(&k.as_str())) {
                    return Err(bad(format!(
                        "struct has no child {unknown:?} (children: {known:?})"
                    )));
                }
                let mut values = Vec::new();
                for child in schema.children(field) {
                    values.push(match children.get(&child.name) {
                        Some(cell) => cell.to_value(schema, child.id)?,
                        None => Value::Null,
                    });
                }
                Value::Struct(values)
            }
            _ => return Err(mismatch()),
        })
    }
}

/// The (dotted) name and type of `field`; an unknown id yields its number and `struct` (never
/// reached: callers resolve names through the schema first).
pub fn field_name_and_type(schema: &Schema, field: FieldId) -> (String, DataType) {
    let name = schema
        .ancestry(field)
        .iter()
        .filter_map(|id| schema.field(*id).map(|f| f.name.clone()))
        .collect::<Vec<_>>()
        .join(".");
    let data_type = schema
        .field(field)
        .map_or(DataType::Struct, |f| f.data_type.clone());
    (
        if name.is_empty() {
            field.to_string()
        } else {
            name
        },
        data_type,
    )
}

/// The kit's spelling of a type: `int32`, `utf8`, `fixed_size_list<float32,3>`, `struct`, ...
/// (used in `case.toml`, expected results and renderings alike).
pub fn type_name(data_type: &DataType) -> String {
    match data_type {
        DataType::Bool => "bool".into(),
        DataType::Int32 => "int32".into(),
        DataType::Int64 => "int64".into(),
        DataType::UInt64 => "uint64".into(),
        DataType::Float32 => "float32".into(),
        DataType::Float64 => "float64".into(),
        DataType::Utf8 => "utf8".into(),
        DataType::FixedSizeList { dimension } => format!("fixed_size_list<float32,{dimension}>"),
        DataType::Struct => "struct".into(),
    }
}

/// Parses [`type_name`]'s spelling (spaces inside the angle brackets allowed).
pub fn parse_type_name(s: &str) -> Option<DataType> {
    if s.contains(char::is_whitespace) {
        let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        return compact_type_name(&compact);
    }
    compact_type_name(s)
}

/// [`parse_type_name`] of a spelling without whitespace.
fn compact_type_name(compact: &str) -> Option<DataType> {
    Some(match compact {
        "bool" => DataType::Bool,
        "int32" => DataType::Int32,
        "int64" => DataType::Int64,
        "uint64" => DataType::UInt64,
        "float32" => DataType::Float32,
        "float64" => DataType::Float64,
        "utf8" => DataType::Utf8,
        "struct" => DataType::Struct,
        other => {
            let dim = other
                .strip_prefix("fixed_size_list<float32,")?
                .strip_suffix('>')?;
            let dimension: u32 = dim.parse().ok()?;
            if dimension == 0 {
                return None;
            }
            DataType::FixedSizeList { dimension }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lance_reference::model::Field;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new(0, "age", DataType::Int32),
            Field::new(1, "v", DataType::FixedSizeList { dimension: 2 }),
            Field::new(2, "addr", DataType::Struct),
            Field::child(3, 2, "city", DataType::Utf8),
            Field::new(4, "big", DataType::UInt64),
        ])
        .unwrap()
    }

    fn cell(text: &str) -> Cell {
        #[derive(Deserialize)]
        struct W {
            c: Cell,
        }
        toml::from_str::<W>(&format!("c = {text}")).unwrap().c
    }

    #[test]
    fn natural_toml_becomes_typed_values() {
        let s = schema();
        assert_eq!(cell("26").to_value(&s, 0).unwrap(), Value::Int32(26));
        assert_eq!(
            cell("{ null = true }").to_value(&s, 0).unwrap(),
            Value::Null
        );
        assert_eq!(
            cell("[0.5, { null = true }]").to_value(&s, 1).unwrap(),
            Value::Vector(vec![Some(0.5), None])
        );
        assert_eq!(
            cell("{ city = \"Oslo\" }").to_value(&s, 2).unwrap(),
            Value::Struct(vec![Value::Utf8("Oslo".into())])
        );
        assert_eq!(
            cell("{}").to_value(&s, 2).unwrap(),
            Value::Struct(vec![Value::Null])
        );
        assert_eq!(
            cell("\"18446744073709551615\"").to_value(&s, 4).unwrap(),
            Value::UInt64(u64::MAX)
        );
    }

    #[test]
    fn misfits_are_errors_naming_the_field() {
        let s = schema();
        let e = cell("2.5").to_value(&s, 0).unwrap_err();
        assert_eq!(e.field, "age");
        assert!(cell("3000000000").to_value(&s, 0).is_err());
        assert!(cell("[1.0]").to_value(&s, 1).is_err());
        let e = cell("{ town = \"x\" }").to_value(&s, 2).unwrap_err();
        assert!(e.problem.contains("town"), "{e}");
        assert!(cell("{ null = false }").to_value(&s, 0).is_err());
        assert_eq!(
            cell("\"x\"").to_value(&s, 3).unwrap(),
            Value::Utf8("x".into())
        );
    }

    #[test]
    fn type_names_round_trip() {
        for t in [
            DataType::Bool,
            DataType::Int32,
            DataType::Int64,
            DataType::UInt64,
            DataType::Float32,
            DataType::Float64,
            DataType::Utf8,
            DataType::Struct,
            DataType::FixedSizeList { dimension: 3 },
        ] {
            assert_eq!(parse_type_name(&type_name(&t)), Some(t));
        }
        assert_eq!(
            parse_type_name("fixed_size_list<float32, 8>"),
            Some(DataType::FixedSizeList { dimension: 8 })
        );
        assert_eq!(parse_type_name("fixed_size_list<float32,0>"), None);
        assert_eq!(parse_type_name("int16"), None);
    }
}
