//! Resolved columns in Arrow form: the gather that turns a [`crate::resolve::ColumnPlan`] into an array.
//!
//! Invariant: this module decides nothing about a cell. Every winner comes from
//! [`crate::resolve::plan_column`] (struct validity from the base column, as
//! [`crate::resolve::resolve_column`] takes it); here the winners are only gathered, with one
//! `interleave` per column, into an array of the field's Arrow type ([`arrow_type`]) holding the
//! live (non-deleted) rows in offset order. A stored value that does not fit its field's type
//! is an error ([`Error::TypeMismatch`]), never a silently different value.
//!
//! Stored columns are still `Value`s in the model; [`stored_array`] gives a column its Arrow
//! form once per gather, so the plan's sources are arrays.

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, FixedSizeListBuilder, Float32Builder, Float64Builder, Int32Builder,
    Int64Builder, StringBuilder, UInt64Builder,
};
use arrow_array::{Array, ArrayRef, StructArray, new_empty_array, new_null_array};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType as ArrowType, Field as ArrowField, Fields};

use crate::error::{Error, Result};
use crate::model::{DataType, FieldId, Fragment, Schema, Value};
use crate::resolve::{Winner, base_column, base_value, plan_column};

/// The Arrow type of schema field `field`: a struct's children are its schema children, in
/// schema order, named and nullable as there; a vector's items are nullable `Float32`.
pub fn arrow_type(schema: &Schema, field: FieldId) -> Result<ArrowType> {
    let f = schema.field(field).ok_or_else(|| Error::UnknownField {
        field,
        context: "arrow type".into(),
    })?;
    Ok(match &f.data_type {
        DataType::Bool => ArrowType::Boolean,
        DataType::Int32 => ArrowType::Int32,
        DataType::Int64 => ArrowType::Int64,
        DataType::UInt64 => ArrowType::UInt64,
        DataType::Float32 => ArrowType::Float32,
        DataType::Float64 => ArrowType::Float64,
        DataType::Utf8 => ArrowType::Utf8,
        DataType::FixedSizeList { dimension } => ArrowType::FixedSizeList(
            Arc::new(ArrowField::new("item", ArrowType::Float32, true)),
            i32::try_from(*dimension).map_err(|_| Error::InvalidSchema {
                field,
                problem: format!("dimension {dimension} is past i32"),
            })?,
        ),
        DataType::Struct => ArrowType::Struct(struct_fields(schema, field)?),
    })
}

/// The Arrow fields of a struct's children.
fn struct_fields(schema: &Schema, field: FieldId) -> Result<Fields> {
    schema
        .children(field)
        .map(|c| {
            Ok(ArrowField::new(
                c.name.clone(),
                arrow_type(schema, c.id)?,
                true,
            ))
        })
        .collect::<Result<Vec<_>>>()
        .map(Fields::from)
}

/// Where a stored column sits, for the error a misfit value gets.
#[derive(Debug, Clone, Copy)]
pub struct StoredAt<'a> {
    /// Fragment id.
    pub fragment: u64,
    /// Data file path.
    pub file: &'a str,
    /// Field id.
    pub field: FieldId,
}

impl StoredAt<'_> {
    fn misfit(&self, index: usize, expected: &DataType, found: &Value) -> Error {
        Error::TypeMismatch {
            fragment: self.fragment,
            file: self.file.to_string(),
            field: self.field,
            index: index as u64,
            expected: expected.logical_type(),
            found: found.kind().to_string(),
        }
    }
}

/// The Arrow form of a stored (non-struct) column of `data_type`: one element per value, NULL
/// for [`Value::Null`].
pub fn stored_array(data_type: &DataType, values: &[Value], at: StoredAt<'_>) -> Result<ArrayRef> {
    macro_rules! primitive {
        ($builder:ty, $arm:path) => {{
            let mut b = <$builder>::with_capacity(values.len());
            for (i, v) in values.iter().enumerate() {
                match v {
                    Value::Null => b.append_null(),
                    $arm(x) => b.append_value(*x),
                    other => return Err(at.misfit(i, data_type, other)),
                }
            }
            Arc::new(b.finish()) as ArrayRef
        }};
    }
    Ok(match data_type {
        DataType::Bool => primitive!(BooleanBuilder, Value::Bool),
        DataType::Int32 => primitive!(Int32Builder, Value::Int32),
        DataType::Int64 => primitive!(Int64Builder, Value::Int64),
        DataType::UInt64 => primitive!(UInt64Builder, Value::UInt64),
        DataType::Float32 => primitive!(Float32Builder, Value::Float32),
        DataType::Float64 => primitive!(Float64Builder, Value::Float64),
        DataType::Utf8 => {
            let bytes = values
                .iter()
                .map(|v| match v {
                    Value::Utf8(s) => s.len(),
                    _ => 0,
                })
                .sum();
            let mut b = StringBuilder::with_capacity(values.len(), bytes);
            for (i, v) in values.iter().enumerate() {
                match v {
                    Value::Null => b.append_null(),
                    Value::Utf8(s) => b.append_value(s),
                    other => return Err(at.misfit(i, data_type, other)),
                }
            }
            Arc::new(b.finish())
        }
        DataType::FixedSizeList { dimension } => {
            let n = i32::try_from(*dimension).map_err(|_| Error::InvalidSchema {
                field: at.field,
                problem: format!("dimension {dimension} is past i32"),
            })?;
            let items = Float32Builder::with_capacity(values.len().saturating_mul(n as usize));
            let mut b = FixedSizeListBuilder::with_capacity(items, n, values.len())
                .with_field(Arc::new(ArrowField::new("item", ArrowType::Float32, true)));
            for (i, v) in values.iter().enumerate() {
                match v {
                    Value::Null => {
                        for _ in 0..n {
                            b.values().append_null();
                        }
                        b.append(false);
                    }
                    Value::Vector(xs) if xs.len() == n as usize => {
                        for x in xs {
                            b.values().append_option(*x);
                        }
                        b.append(true);
                    }
                    other => return Err(at.misfit(i, data_type, other)),
                }
            }
            Arc::new(b.finish())
        }
        DataType::Struct => {
            return Err(Error::UnknownField {
                field: at.field,
                context: "a struct column has no stored values, only validity".into(),
            });
        }
    })
}

/// Resolves field `field` of `fragment` for its live rows, in offset order, as one array of
/// [`arrow_type`]: the plan's winners gathered in one `interleave` (a struct: its children so,
/// with the base's validity).
pub fn resolve_array(schema: &Schema, fragment: &Fragment, field: FieldId) -> Result<ArrayRef> {
    let schema_field = schema.field(field).ok_or_else(|| Error::UnknownField {
        field,
        context: "resolve".into(),
    })?;
    if schema_field.data_type == DataType::Struct {
        return resolve_struct_array(schema, fragment, field);
    }
    let data_type = &schema_field.data_type;
    let arrow = arrow_type(schema, field)?;
    let plan = plan_column(fragment, field)?;
    // Source 0 is the base column (a single NULL when no base file holds the field); source
    // `1 + p` is the value column of the overlay at position `p`.
    let mut sources: Vec<ArrayRef> = Vec::with_capacity(1 + plan.overlays.len());
    sources.push(match plan.base {
        Some((file, column)) => stored_array(
            data_type,
            column,
            StoredAt {
                fragment: fragment.id,
                file: &fragment.files[file].path,
                field,
            },
        )?,
        None => new_null_array(&arrow, 1),
    });
    for (position, values) in plan.overlays.iter().enumerate() {
        sources.push(match values {
            Some(values) => stored_array(
                data_type,
                values,
                StoredAt {
                    fragment: fragment.id,
                    file: &fragment.overlays[position].file.path,
                    field,
                },
            )?,
            None => new_empty_array(&arrow),
        });
    }
    let indices: Vec<(usize, usize)> = plan
        .winners
        .iter()
        .enumerate()
        .filter_map(|(offset, winner)| match *winner {
            Winner::Deleted => None,
            Winner::Overlay { position, rank } => Some((1 + position as usize, rank as usize)),
            Winner::Base => Some((0, offset)),
            Winner::Null => Some((0, 0)),
        })
        .collect();
    let refs: Vec<&dyn Array> = sources.iter().map(|a| a.as_ref()).collect();
    arrow_select::interleave::interleave(&refs, &indices)
        .map_err(|e| arrow_failure(fragment, field, &arrow, e))
}

/// A struct column for the live rows: each child resolved on its own, present where the
/// base's struct column is (present everywhere when no base file holds the struct).
fn resolve_struct_array(schema: &Schema, fragment: &Fragment, field: FieldId) -> Result<ArrayRef> {
    let fields = struct_fields(schema, field)?;
    let children: Vec<ArrayRef> = schema
        .children(field)
        .map(|child| resolve_array(schema, fragment, child.id))
        .collect::<Result<_>>()?;
    let live: Vec<u32> = fragment.live_offsets()?.collect();
    let validity: Option<Vec<bool>> = match base_column(fragment, field) {
        Some((file, column)) => Some(
            live.iter()
                .map(|&o| {
                    base_value(fragment, file, field, column, u64::from(o)).map(|v| !v.is_null())
                })
                .collect::<Result<_>>()?,
        ),
        None => None,
    };
    let length = live.len();
    let nulls = validity.map(NullBuffer::from);
    let arrow = ArrowType::Struct(fields.clone());
    StructArray::try_new_with_length(fields, children, nulls, length)
        .map(|a| Arc::new(a) as ArrayRef)
        .map_err(|e| arrow_failure(fragment, field, &arrow, e))
}

/// An Arrow error while assembling a column. The plan's bounds and [`stored_array`]'s types
/// leave none possible; should one occur it is reported as the type mismatch it would be.
fn arrow_failure(
    fragment: &Fragment,
    field: FieldId,
    arrow: &ArrowType,
    e: arrow_schema::ArrowError,
) -> Error {
    Error::TypeMismatch {
        fragment: fragment.id,
        file: "(resolved column)".into(),
        field,
        index: 0,
        expected: arrow.to_string(),
        found: e.to_string(),
    }
}

/// The [`Value`] of element `row` of an array of an [`arrow_type`]: what the row scan holds
/// for the same cell (a struct: its children's values in schema order). `None` when `row` is
/// past the end or the array's type is none of [`arrow_type`]'s.
pub fn value_at(array: &dyn Array, row: usize) -> Option<Value> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt64Type};
    if row >= array.len() {
        return None;
    }
    if array.is_null(row) {
        return Some(Value::Null);
    }
    Some(match array.data_type() {
        ArrowType::Boolean => Value::Bool(array.as_boolean().value(row)),
        ArrowType::Int32 => Value::Int32(array.as_primitive::<Int32Type>().value(row)),
        ArrowType::Int64 => Value::Int64(array.as_primitive::<Int64Type>().value(row)),
        ArrowType::UInt64 => Value::UInt64(array.as_primitive::<UInt64Type>().value(row)),
        ArrowType::Float32 => Value::Float32(array.as_primitive::<Float32Type>().value(row)),
        ArrowType::Float64 => Value::Float64(array.as_primitive::<Float64Type>().value(row)),
        ArrowType::Utf8 => Value::Utf8(array.as_string::<i32>().value(row).to_string()),
        ArrowType::FixedSizeList(..) => {
            let items = array.as_fixed_size_list().value(row);
            let items = items.as_primitive_opt::<Float32Type>()?;
            Value::Vector(items.iter().collect())
        }
        ArrowType::Struct(_) => Value::Struct(
            array
                .as_struct()
                .columns()
                .iter()
                .map(|c| value_at(c.as_ref(), row))
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}
