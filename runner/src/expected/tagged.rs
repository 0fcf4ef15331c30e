//! Tagged values: how a cell is written in expected results, independent of any physical type.
//!
//! Invariant: [`tag`] and [`untag_field`] are inverse on every value the model can hold, bit
//! for bit (NaN is the canonical NaN; its payload is not kept): `untag_field(s, f, &tag(s, f, v))
//! ≡ v` under [`Value::identical`]. [`untag`] needs no schema and returns struct children in
//! name order. Spelling, per type:
//!
//! | type | `value` |
//! |---|---|
//! | `bool` | JSON `true` / `false` |
//! | `int32` | JSON number |
//! | `int64`, `uint64` | decimal string (`"-3"`): JSON numbers lose precision past 2^53 |
//! | `float32`, `float64` | string, shortest round-trip decimal (`"0.1"`, `"1e-7"`, `"-0.0"`), or `"NaN"`, `"inf"`, `"-inf"` |
//! | `utf8` | JSON string |
//! | `fixed_size_list<float32,N>` | array of N float32 strings (as above) or `null` items |
//! | `struct` | object: child name → tagged child |
//! | any NULL | `null` |

use lance_reference::model::{DataType, FieldId, Schema, Value};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::case::cell::{parse_type_name, type_name};

/// A value with its type: `{"type": "int64", "value": "-3"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tagged {
    /// The type, spelled as in `case.toml` (`int32`, `fixed_size_list<float32,3>`, ...).
    #[serde(rename = "type")]
    pub data_type: String,
    /// The value (see the module docs).
    pub value: Json,
}

/// Why a tagged value does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tagged value of type {data_type:?}: {problem}")]
pub struct TaggedError {
    /// The declared type.
    pub data_type: String,
    /// What is wrong.
    pub problem: String,
}

/// Shortest round-trip spelling of an `f32`.
pub fn f32_text(x: f32) -> String {
    format!("{x:?}")
}

/// Shortest round-trip spelling of an `f64`.
pub fn f64_text(x: f64) -> String {
    format!("{x:?}")
}

/// Tags `value` of schema field `field`. A value that does not fit the field is tagged by its
/// own kind (the reference never produces one for a validated snapshot).
pub fn tag(schema: &Schema, field: FieldId, value: &Value) -> Tagged {
    let data_type = schema
        .field(field)
        .map_or(DataType::Struct, |f| f.data_type.clone());
    let t = type_name(&data_type);
    let json = match (value, &data_type) {
        (Value::Null, _) => Json::Null,
        (Value::Struct(children), DataType::Struct) => {
            let mut map = serde_json::Map::new();
            for (child, v) in schema.children(field).zip(children) {
                let tagged = tag(schema, child.id, v);
                map.insert(
                    child.name.clone(),
                    serde_json::to_value(tagged).unwrap_or(Json::Null),
                );
            }
            Json::Object(map)
        }
        _ => return tag_scalar(value),
    };
    Tagged {
        data_type: t,
        value: json,
    }
}

/// Tags a non-struct value by its own kind.
pub fn tag_scalar(value: &Value) -> Tagged {
    let (t, json): (String, Json) = match value {
        Value::Null => ("null".into(), Json::Null),
        Value::Bool(b) => ("bool".into(), Json::Bool(*b)),
        Value::Int32(i) => ("int32".into(), Json::from(*i)),
        Value::Int64(i) => ("int64".into(), Json::String(i.to_string())),
        Value::UInt64(u) => ("uint64".into(), Json::String(u.to_string())),
        Value::Float32(x) => ("float32".into(), Json::String(f32_text(*x))),
        Value::Float64(x) => ("float64".into(), Json::String(f64_text(*x))),
        Value::Utf8(s) => ("utf8".into(), Json::String(s.clone())),
        Value::Vector(items) => (
            format!("fixed_size_list<float32,{}>", items.len()),
            Json::Array(
                items
                    .iter()
                    .map(|x| x.map_or(Json::Null, |x| Json::String(f32_text(x))))
                    .collect(),
            ),
        ),
        Value::Struct(_) => ("struct".into(), Json::Object(serde_json::Map::new())),
    };
    Tagged {
        data_type: t,
        value: json,
    }
}

/// Decodes a tagged value.
pub fn untag(tagged: &Tagged) -> Result<Value, TaggedError> {
    let bad = |problem: String| TaggedError {
        data_type: tagged.data_type.clone(),
        problem,
    };
    let data_type = parse_type_name(&tagged.data_type).ok_or_else(|| bad("unknown type".into()))?;
    let v = &tagged.value;
    if v.is_null() {
        return Ok(Value::Null);
    }
    let text = || {
        v.as_str()
            .ok_or_else(|| bad(format!("expected a string, found {v}")))
    };
    Ok(match data_type {
        DataType::Bool => Value::Bool(
            v.as_bool()
                .ok_or_else(|| bad(format!("expected a boolean, found {v}")))?,
        ),
        DataType::Int32 => Value::Int32(
            v.as_i64()
                .and_then(|i| i32::try_from(i).ok())
                .ok_or_else(|| bad(format!("expected an int32 number, found {v}")))?,
        ),
        DataType::Int64 => Value::Int64(
            text()?
                .parse()
                .map_err(|_| bad(format!("{v} is not an int64")))?,
        ),
        DataType::UInt64 => Value::UInt64(
            text()?
                .parse()
                .map_err(|_| bad(format!("{v} is not a uint64")))?,
        ),
        DataType::Float32 => {
            Value::Float32(parse_f32(text()?).ok_or_else(|| bad(format!("{v} is not a float32")))?)
        }
        DataType::Float64 => Value::Float64(
            text()?
                .parse()
                .map_err(|_| bad(format!("{v} is not a float64")))?,
        ),
        DataType::Utf8 => Value::Utf8(text()?.to_string()),
        DataType::FixedSizeList { dimension } => {
            let items = v
                .as_array()
                .ok_or_else(|| bad(format!("expected an array, found {v}")))?;
            if items.len() as u64 != u64::from(dimension) {
                return Err(bad(format!(
                    "{} items for dimension {dimension}",
                    items.len()
                )));
            }
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                out.push(match item {
                    Json::Null => None,
                    Json::String(s) => Some(
                        parse_f32(s).ok_or_else(|| bad(format!("item {s:?} is not a float32")))?,
                    ),
                    other => return Err(bad(format!("item {other} is not a float32 string"))),
                });
            }
            Value::Vector(out)
        }
        DataType::Struct => {
            let map = v
                .as_object()
                .ok_or_else(|| bad(format!("expected an object, found {v}")))?;
            let mut children = Vec::with_capacity(map.len());
            for (name, child) in map {
                let child: Tagged = serde_json::from_value(child.clone())
                    .map_err(|e| bad(format!("child {name:?}: {e}")))?;
                children.push(untag(&child)?);
            }
            Value::Struct(children)
        }
    })
}

/// Decodes a tagged value of schema field `field`, putting struct children in schema order
/// (children missing from the object are NULL; unknown children are an error).
pub fn untag_field(schema: &Schema, field: FieldId, tagged: &Tagged) -> Result<Value, TaggedError> {
    let is_struct = schema
        .field(field)
        .is_some_and(|f| f.data_type == DataType::Struct);
    if !is_struct || tagged.value.is_null() {
        return untag(tagged);
    }
    let bad = |problem: String| TaggedError {
        data_type: tagged.data_type.clone(),
        problem,
    };
    let map = tagged
        .value
        .as_object()
        .ok_or_else(|| bad("expected an object".into()))?;
    let names: Vec<&str> = schema.children(field).map(|c| c.name.as_str()).collect();
    if let Some(unknown) = map.keys().find(|k| !names.contains(&k.as_str())) {
        return Err(bad(format!("no child {unknown:?}")));
    }
    let mut children = Vec::new();
    for child in schema.children(field) {
        children.push(match map.get(&child.name) {
            None => Value::Null,
            Some(json) => {
                let t: Tagged = serde_json::from_value(json.clone())
                    .map_err(|e| bad(format!("child {:?}: {e}", child.name)))?;
                untag_field(schema, child.id, &t)?
            }
        });
    }
    Ok(Value::Struct(children))
}

fn parse_f32(s: &str) -> Option<f32> {
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lance_reference::model::Field;

    #[test]
    fn spelling_is_lossless_and_exact() {
        assert_eq!(
            tag_scalar(&Value::Int64(-3)).value,
            Json::String("-3".into())
        );
        assert_eq!(
            tag_scalar(&Value::UInt64(u64::MAX)).value,
            Json::String("18446744073709551615".into())
        );
        assert_eq!(tag_scalar(&Value::Int32(26)).value, Json::from(26));
        assert_eq!(
            tag_scalar(&Value::Float32(0.1)).value,
            Json::String("0.1".into())
        );
        assert_eq!(
            tag_scalar(&Value::Float32(-0.0)).value,
            Json::String("-0.0".into())
        );
        assert_eq!(
            tag_scalar(&Value::Float64(f64::NAN)).value,
            Json::String("NaN".into())
        );
        assert_eq!(
            tag_scalar(&Value::Float64(f64::NEG_INFINITY)).value,
            Json::String("-inf".into())
        );
        let values = [
            Value::Bool(true),
            Value::Int32(i32::MIN),
            Value::Int64(i64::MIN),
            Value::UInt64(u64::MAX),
            Value::Float32(f32::MIN_POSITIVE),
            Value::Float32(1e-7),
            Value::Float32(-0.0),
            Value::Float32(f32::NAN),
            Value::Float32(f32::INFINITY),
            Value::Float64(0.1 + 0.2),
            Value::Float64(-0.0),
            Value::Utf8("Ünïcode \"q\"".into()),
            Value::Vector(vec![Some(0.5), None, Some(-0.0)]),
        ];
        for v in values {
            let t = tag_scalar(&v);
            let back = untag(&t).unwrap();
            assert!(back.identical(&v), "{v:?} -> {t:?} -> {back:?}");
            let json = serde_json::to_string(&t).unwrap();
            let reparsed: Tagged = serde_json::from_str(&json).unwrap();
            assert!(untag(&reparsed).unwrap().identical(&v));
        }
    }

    #[test]
    fn structs_and_nulls_are_tagged_by_the_schema() {
        let schema = Schema::new(vec![
            Field::new(0, "addr", DataType::Struct),
            Field::child(1, 0, "zip", DataType::Int64),
            Field::child(2, 0, "city", DataType::Utf8),
        ])
        .unwrap();
        let v = Value::Struct(vec![Value::Int64(7), Value::Null]);
        let t = tag(&schema, 0, &v);
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            r#"{"type":"struct","value":{"city":{"type":"utf8","value":null},"zip":{"type":"int64","value":"7"}}}"#
        );
        assert!(untag_field(&schema, 0, &t).unwrap().identical(&v));
        let null = tag(&schema, 1, &Value::Null);
        assert_eq!(null.data_type, "int64");
        assert_eq!(untag(&null).unwrap(), Value::Null);
    }

    #[test]
    fn malformed_tags_are_errors() {
        for (t, v) in [
            ("int64", Json::from(3)),
            ("int32", Json::from(3_000_000_000i64)),
            ("float32", Json::String("fast".into())),
            (
                "fixed_size_list<float32,2>",
                Json::Array(vec![Json::String("1.0".into())]),
            ),
            ("decimal", Json::from(1)),
        ] {
            assert!(
                untag(&Tagged {
                    data_type: t.into(),
                    value: v
                })
                .is_err(),
                "{t}"
            );
        }
    }
}
