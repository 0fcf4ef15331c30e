//! Resolved columns in Arrow form: the gather that turns a [`crate::resolve::ColumnPlan`] into an array.
//!
//! Invariant: this module decides nothing about a cell. Every winner comes from
//! [`crate::resolve::plan_column`] (struct validity from the base column, as
//! [`crate::resolve::resolve_column`] takes it); here the plan's runs of winners are only
//! copied, in offset order, into an array of the field's Arrow type ([`arrow_type`]) holding the
//! live (non-deleted) rows. Every type is copied by runs, never row by row: a primitive column
//! copies each run as one slice of its source's values and validity (`copy_runs`), any other
//! type (text, boolean, vector) each run as one range of its source's rows, offsets, values and
//! validity together (`extend_runs`). The sources are the stored columns themselves; one
//! whose type is not the field's is an error ([`Error::TypeMismatch`]), never a silently
//! different value. When every winner is the base ([`crate::resolve::base_everywhere`]: no
//! overlay carries the field and no row is deleted) the gather is the identity, and its output
//! is the base column itself.

use std::sync::Arc;

use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, PrimitiveArray, StringArray, StructArray, make_array,
    new_empty_array, new_null_array,
};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, ScalarBuffer};
use arrow_data::ArrayData;
use arrow_data::transform::MutableArrayData;
use arrow_schema::{DataType as ArrowType, Field as ArrowField, Fields};

use crate::error::{Error, Result};
use crate::model::{Column, DataType, FieldId, Fragment, Schema, stored_type};
// A base column's length is checked by the fragment's own rule (`Fragment::check_base_length`),
// the one validation applies too.
use crate::resolve::{ColumnPlan, Winner, base_everywhere, plan_column, struct_presence};

/// The Arrow type of schema field `field`: a struct's children are its schema children, in
/// schema order, named and nullable as there; any other type is its stored type
/// ([`stored_type`]).
pub fn arrow_type(schema: &Schema, field: FieldId) -> Result<ArrowType> {
    let f = schema.field(field).ok_or_else(|| Error::UnknownField {
        field,
        context: "arrow type".into(),
    })?;
    match &f.data_type {
        DataType::Struct => Ok(ArrowType::Struct(struct_fields(schema, field)?)),
        other => stored_type(other).ok_or_else(|| Error::InvalidSchema {
            field,
            problem: format!("{} has a dimension past i32", other.logical_type()),
        }),
    }
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

/// Resolves field `field` of `fragment` for its live rows, in offset order, as one array of
/// [`arrow_type`]: the plan's runs of winners copied in order, each from its source (a
/// struct: its children so, with the base's validity).
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
    let at = |column, file: &str| source(column, data_type, &arrow, fragment, file, field);
    if let Some((file, base)) = base_everywhere(fragment, field) {
        fragment.check_base_length(file, field, base)?;
        return at(base, &fragment.files[file].path);
    }
    let plan = plan_column(fragment, field)?;
    // Source 0 is the base column (a single NULL when no base file holds the field); source
    // `1 + p` is the value column of the overlay at position `p`.
    let mut sources: Vec<ArrayRef> = Vec::with_capacity(1 + plan.overlays.len());
    sources.push(match plan.base {
        Some((file, column)) => at(column, &fragment.files[file].path)?,
        None => new_null_array(&arrow, 1),
    });
    for (position, values) in plan.overlays.iter().enumerate() {
        sources.push(match values {
            Some(values) => at(values, &fragment.overlays[position].file.path)?,
            None => new_empty_array(&arrow),
        });
    }
    let copied = match &arrow {
        ArrowType::Int32 => copy_runs::<Int32Type>(&plan, &sources),
        ArrowType::Int64 => copy_runs::<Int64Type>(&plan, &sources),
        ArrowType::UInt64 => copy_runs::<UInt64Type>(&plan, &sources),
        ArrowType::Float32 => copy_runs::<Float32Type>(&plan, &sources),
        ArrowType::Float64 => copy_runs::<Float64Type>(&plan, &sources),
        _ => extend_runs(&plan, &sources),
    };
    copied.map_err(|problem| arrow_failure(fragment, field, &arrow, problem.into()))
}

/// A run whose rows its source does not hold (or a source not of the field's type): the
/// plan's bounds and [`source`] rule it out.
const RUN_OUTSIDE_SOURCE: &str = "a run outside its source";
/// A text column past what the 32-bit offsets of a `Utf8` array address.
const TEXT_PAST_OFFSETS: &str = "more than 2 GiB of text in one column";

/// The gather of a primitive column by runs: each run's values are one slice of its source,
/// copied as a whole (and its validity bits likewise), in offset order; deleted runs are
/// skipped. `sources` are as [`resolve_array`] lists them, all of type `T`; an error when a
/// run lies outside its source, which the plan's bounds rule out.
fn copy_runs<T: ArrowPrimitiveType>(
    plan: &ColumnPlan,
    sources: &[ArrayRef],
) -> Result<ArrayRef, &'static str> {
    let sources: Vec<&PrimitiveArray<T>> = sources
        .iter()
        .map(|s| s.as_any().downcast_ref::<PrimitiveArray<T>>())
        .collect::<Option<_>>()
        .ok_or(RUN_OUTSIDE_SOURCE)?;
    let slices: Vec<&[T::Native]> = sources.iter().map(|s| s.values().as_ref()).collect();
    let rows = plan.live_rows();
    let mut values: Vec<T::Native> = Vec::with_capacity(rows);
    // Validity is built only when some cell can be NULL.
    let nullable = plan.base.is_none() || sources.iter().any(|s| s.null_count() > 0);
    let mut validity = nullable.then(|| BooleanBufferBuilder::new(rows));
    let mut inside = true;
    plan.for_each_run(|run| {
        let len = run.len as usize;
        let (source, first) = match run.winner {
            Winner::Deleted => return,
            Winner::Null => {
                values.extend(std::iter::repeat_n(T::Native::default(), len));
                if let Some(v) = validity.as_mut() {
                    v.append_n(len, false);
                }
                return;
            }
            Winner::Base => (0, run.start as usize),
            Winner::Overlay { position, rank } => (1 + position as usize, rank as usize),
        };
        let Some(slice) = slices.get(source).and_then(|s| s.get(first..first + len)) else {
            inside = false;
            return;
        };
        if let [one] = slice {
            values.push(*one);
        } else {
            values.extend_from_slice(slice);
        }
        if let Some(v) = validity.as_mut() {
            match sources[source].nulls() {
                Some(nulls) => {
                    let offset = nulls.offset();
                    v.append_packed_range(offset + first..offset + first + len, nulls.validity());
                }
                None => v.append_n(len, true),
            }
        }
    });
    let nulls = validity
        .map(|mut v| NullBuffer::new(v.finish()))
        .filter(|n| n.null_count() > 0);
    if !inside {
        return Err(RUN_OUTSIDE_SOURCE);
    }
    Ok(Arc::new(PrimitiveArray::<T>::new(
        ScalarBuffer::from(values),
        nulls,
    )))
}

/// The gather of any other type by runs: each run is one range of its source's rows, copied
/// as a whole (offsets, values, child values and validity bits), a NULL run as that many
/// NULLs, in offset order; deleted runs are skipped. `sources` are as [`resolve_array`] lists
/// them, all of one type. An error names what would not fit before anything is copied past it:
/// a run outside its source, or text past what `Utf8` offsets address.
fn extend_runs(plan: &ColumnPlan, sources: &[ArrayRef]) -> Result<ArrayRef, &'static str> {
    let data: Vec<ArrayData> = sources.iter().map(|s| s.to_data()).collect();
    let one_type = data.first().map(ArrayData::data_type);
    if one_type.is_none() || data.iter().any(|d| Some(d.data_type()) != one_type) {
        return Err(RUN_OUTSIDE_SOURCE);
    }
    let texts: Vec<Option<&StringArray>> = sources
        .iter()
        .map(|s| s.as_any().downcast_ref::<StringArray>())
        .collect();
    // Only a field no base file holds has NULL runs (its fall-through is NULL); the copy keeps
    // validity for them then, and otherwise only when a source has a NULL.
    let null_runs = plan.fall_through == Winner::Null;
    let mut out = MutableArrayData::new(data.iter().collect(), null_runs, plan.live_rows());
    let mut text_bytes = 0usize;
    let mut problem = None;
    plan.for_each_run(|run| {
        if problem.is_some() {
            return;
        }
        let len = run.len as usize;
        let (source, first) = match run.winner {
            Winner::Deleted => return,
            Winner::Null if null_runs => {
                out.extend_nulls(len);
                return;
            }
            Winner::Null => {
                problem = Some(RUN_OUTSIDE_SOURCE);
                return;
            }
            Winner::Base => (0, run.start as usize),
            Winner::Overlay { position, rank } => (1 + position as usize, rank as usize),
        };
        if data.get(source).is_none_or(|d| first + len > d.len()) {
            problem = Some(RUN_OUTSIDE_SOURCE);
            return;
        }
        if let Some(Some(text)) = texts.get(source) {
            let offsets = text.value_offsets();
            text_bytes += (offsets[first + len] - offsets[first]) as usize;
            if text_bytes > i32::MAX as usize {
                problem = Some(TEXT_PAST_OFFSETS);
                return;
            }
        }
        out.extend(source, first, first + len);
    });
    match problem {
        Some(problem) => Err(problem),
        None => Ok(make_array(out.freeze())),
    }
}

/// A stored column as a gather source of the field's Arrow type `arrow`: the column's own
/// array, or NULLs of that type for a column of NULLs only. A column of another type is the
/// [`Error::TypeMismatch`] [`Column::check_fits`] names.
fn source(
    column: &Column,
    data_type: &DataType,
    arrow: &ArrowType,
    fragment: &Fragment,
    file: &str,
    field: FieldId,
) -> Result<ArrayRef> {
    column
        .check_fits(data_type)
        .map_err(|m| m.error(fragment.id, file, field, data_type))?;
    let array = column.array();
    Ok(if array.data_type() == arrow {
        array.clone()
    } else {
        new_null_array(arrow, array.len())
    })
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
    let nulls = struct_presence(fragment, field)?
        .map(|present| NullBuffer::from_iter(live.iter().map(|&o| present.is_valid(o as usize))));
    let length = live.len();
    let arrow = ArrowType::Struct(fields.clone());
    StructArray::try_new_with_length(fields, children, nulls, length)
        .map(|a| Arc::new(a) as ArrayRef)
        .map_err(|e| arrow_failure(fragment, field, &arrow, e.to_string()))
}

/// A column that could not be assembled (a run that would not fit, or an Arrow error). The
/// plan's bounds and the sources' types leave none possible but text past 2 GiB; should one
/// occur it is reported as the type mismatch it would be.
fn arrow_failure(fragment: &Fragment, field: FieldId, arrow: &ArrowType, e: String) -> Error {
    Error::TypeMismatch {
        fragment: fragment.id,
        file: "(resolved column)".into(),
        field,
        index: 0,
        expected: arrow.to_string(),
        found: e,
    }
}
