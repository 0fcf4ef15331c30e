//! Stored columns: the values one data file holds for one field, as one Arrow array.
//!
//! Invariant: a [`Column`] holds an array of the stored Arrow type of some field type
//! ([`stored_type`]), or of Arrow's `Null` type, which stands for a column of NULLs only (it
//! admits every field type, as a NULL [`Value`] does). [`value_at`] reads any element back as
//! the [`Value`] the same cell has anywhere else, and building a column from those values
//! ([`Column::of`], [`Column::infer`]) gives the same column again. A column knows no schema:
//! whether it fits its field is [`Column::fits`], which `Fragment::validate` asks once per column.
//!
//! A struct field stores only its validity, so its stored type is a struct with no children
//! and a present element reads as `Value::Struct(vec![])`; a resolved struct column (with its
//! children) reads as the children's values in schema order. That is format v2.0, where a
//! struct has a column of its own. From v2.1 on a struct has none: each leaf's column carries
//! the validity of every struct above it ([`StructLayer`], outermost first, one bit per value),
//! and a leaf value under a NULL layer is NULL (spec DS-LEAF-1, DS-LEAF-4).

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, FixedSizeListBuilder, Float32Builder, Float64Builder, Int32Builder,
    Int64Builder, StringBuilder, UInt64Builder,
};
use arrow_array::{Array, ArrayRef, NullArray, StructArray, UInt64Array};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType as ArrowType, Field as ArrowField, Fields};

use super::schema::{DataType, FieldId, Schema};
use super::value::Value;
use crate::error::Error;

/// The Arrow type a data file's column of `data_type` has in memory: a struct with no children
/// for a struct (its validity only), nullable `Float32` items for a vector. `None` for a vector
/// dimension past Arrow's `i32`.
pub fn stored_type(data_type: &DataType) -> Option<ArrowType> {
    Some(match data_type {
        DataType::Bool => ArrowType::Boolean,
        DataType::Int32 => ArrowType::Int32,
        DataType::Int64 => ArrowType::Int64,
        DataType::UInt64 => ArrowType::UInt64,
        DataType::Float32 => ArrowType::Float32,
        DataType::Float64 => ArrowType::Float64,
        DataType::Utf8 => ArrowType::Utf8,
        DataType::FixedSizeList { dimension } => {
            ArrowType::FixedSizeList(vector_item(), i32::try_from(*dimension).ok()?)
        }
        DataType::Struct => ArrowType::Struct(Fields::empty()),
    })
}

/// The item field of a vector's Arrow type.
pub fn vector_item() -> Arc<ArrowField> {
    Arc::new(ArrowField::new("item", ArrowType::Float32, true))
}

/// A value that cannot go into a column: where it is and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misfit {
    /// Its index in the values.
    pub index: usize,
    /// Its kind ([`Value::kind`]).
    pub found: &'static str,
}

impl Misfit {
    /// The [`Error::TypeMismatch`] this misfit is in field `field` (of `data_type`) of `file`
    /// in fragment `fragment`.
    pub fn error(&self, fragment: u64, file: &str, field: FieldId, data_type: &DataType) -> Error {
        Error::TypeMismatch {
            fragment,
            file: file.to_string(),
            field,
            index: self.index as u64,
            expected: data_type.logical_type(),
            found: self.found.to_string(),
        }
    }
}

/// One field's values in one data file (see the module docs).
#[derive(Clone)]
pub struct Column {
    array: ArrayRef,
    struct_layers: Vec<StructLayer>,
}

/// The validity of one struct above a leaf, as a data file of format v2.1 or later stores it
/// in the leaf's column (a layer of its definition levels): one bit per value of the column.
/// Format v2.0 stores a struct's validity in a column of the struct's own, so its columns
/// carry no layers.
#[derive(Clone, PartialEq)]
pub struct StructLayer {
    /// The struct field whose validity this is.
    pub field: FieldId,
    /// Where it is present; `None` when it is present at every position.
    pub validity: Option<NullBuffer>,
}

/// A layer prints as its struct and, when some position is NULL, one flag per position
/// (`true` where present): two equal layers print alike, wherever their buffers live.
impl std::fmt::Debug for StructLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("StructLayer");
        d.field("field", &self.field);
        match &self.validity {
            Some(v) => d.field("present", &v.iter().collect::<Vec<bool>>()),
            None => d.field("present", &"everywhere"),
        };
        d.finish()
    }
}

impl StructLayer {
    /// The layer of struct `field` with `validity`, an all-valid buffer held as `None`, so that
    /// two layers saying the same thing compare equal.
    pub fn new(field: FieldId, validity: Option<NullBuffer>) -> StructLayer {
        StructLayer {
            field,
            validity: validity.filter(|v| v.null_count() > 0),
        }
    }

    /// Whether the struct is present at position `index`.
    pub fn is_present(&self, index: usize) -> bool {
        self.validity.as_ref().is_none_or(|v| v.is_valid(index))
    }
}

/// A column prints as its values, the way a list of [`Value`]s prints: two columns that are
/// equal print alike whatever their Arrow types. Struct layers, when it has any, follow.
impl std::fmt::Debug for Column {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.struct_layers.is_empty() {
            return f.debug_list().entries(self.values()).finish();
        }
        f.debug_struct("Column")
            .field("values", &self.values())
            .field("struct_layers", &self.struct_layers)
            .finish()
    }
}

/// Two columns are equal when they hold the same values ([`value_at`], floats bit for bit)
/// and the same struct layers: columns of different types are equal only when both hold NULLs
/// alone, as many.
impl PartialEq for Column {
    fn eq(&self, other: &Column) -> bool {
        if self.struct_layers != other.struct_layers {
            return false;
        }
        if self.array.data_type() == other.array.data_type() {
            return self.array.as_ref() == other.array.as_ref();
        }
        self.len() == other.len() && self.only_nulls() && other.only_nulls()
    }
}

impl Column {
    /// The column holding `array`.
    pub fn new(array: ArrayRef) -> Column {
        Column {
            array,
            struct_layers: Vec::new(),
        }
    }

    /// The same column carrying `layers`: the validity of the structs above its field, outermost
    /// first, as a v2.1+ data file stores them with a leaf ([`StructLayer`]). Each layer has one
    /// bit per value.
    pub fn with_struct_layers(mut self, layers: Vec<StructLayer>) -> Column {
        self.struct_layers = layers;
        self
    }

    /// The struct layers this column carries, outermost first (none for a v2.0 column).
    pub fn struct_layers(&self) -> &[StructLayer] {
        &self.struct_layers
    }

    /// The layer of struct `field`, when this column carries one.
    pub fn struct_layer(&self, field: FieldId) -> Option<&StructLayer> {
        self.struct_layers.iter().find(|l| l.field == field)
    }

    /// A column with no values (a position nobody reads: a tombstone, a dropped field).
    pub fn empty() -> Column {
        Column::new(Arc::new(NullArray::new(0)))
    }

    /// A column of `rows` NULLs, of no stored type.
    pub fn nulls(rows: usize) -> Column {
        Column::new(Arc::new(NullArray::new(rows)))
    }

    /// A `uint64` column with no NULLs (a hidden lineage column).
    pub fn uint64(values: Vec<u64>) -> Column {
        Column::new(Arc::new(UInt64Array::from(values)))
    }

    /// The column of `data_type` holding `values`; a value of another type is a [`Misfit`].
    /// A vector dimension past `i32` cannot be stored: its first value is the misfit.
    pub fn of(data_type: &DataType, values: &[Value]) -> Result<Column, Misfit> {
        match stored_type(data_type) {
            Some(arrow) => build(&arrow, values).map(Column::new),
            None => Err(Misfit {
                index: 0,
                found: values.first().map_or("fixed_size_list", Value::kind),
            }),
        }
    }

    /// The column holding `values`, typed by its first non-NULL value (a vector's dimension is
    /// that value's length); only NULLs make a column of no stored type.
    pub fn infer(values: &[Value]) -> Result<Column, Misfit> {
        let Some(first) = values.iter().find(|v| !v.is_null()) else {
            return Ok(Column::nulls(values.len()));
        };
        let data_type = match first {
            Value::Null | Value::Bool(_) => DataType::Bool,
            Value::Int32(_) => DataType::Int32,
            Value::Int64(_) => DataType::Int64,
            Value::UInt64(_) => DataType::UInt64,
            Value::Float32(_) => DataType::Float32,
            Value::Float64(_) => DataType::Float64,
            Value::Utf8(_) => DataType::Utf8,
            Value::Vector(v) => DataType::FixedSizeList {
                dimension: u32::try_from(v.len()).unwrap_or(u32::MAX),
            },
            Value::Struct(_) => DataType::Struct,
        };
        Column::of(&data_type, values)
    }

    /// The column a writer stores for schema field `field` in `file` of fragment `fragment`:
    /// `values` in the field's type. An unknown field or a value of another type is an error.
    pub fn for_field(
        schema: &Schema,
        field: FieldId,
        values: &[Value],
        fragment: u64,
        file: &str,
    ) -> Result<Column, Error> {
        let data_type = &schema
            .field(field)
            .ok_or_else(|| Error::UnknownField {
                field,
                context: file.to_string(),
            })?
            .data_type;
        Column::of(data_type, values).map_err(|m| m.error(fragment, file, field, data_type))
    }

    /// A column of this column's type holding `values` (typed by them when this one holds
    /// only NULLs).
    pub fn with_values(&self, values: &[Value]) -> Result<Column, Misfit> {
        let column = match self.array.data_type() {
            ArrowType::Null => Column::infer(values),
            arrow => build(arrow, values).map(Column::new),
        }?;
        // The structs above the field keep their validity when the values keep their count.
        Ok(if values.len() == self.len() {
            column.with_struct_layers(self.struct_layers.clone())
        } else {
            column
        })
    }

    /// The array.
    pub fn array(&self) -> &ArrayRef {
        &self.array
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.array.len()
    }

    /// True when the column holds no value.
    pub fn is_empty(&self) -> bool {
        self.array.is_empty()
    }

    /// Whether every value may be stored in a field of `data_type` (a column of NULLs only
    /// fits every type).
    pub fn fits(&self, data_type: &DataType) -> bool {
        let arrow = self.array.data_type();
        *arrow == ArrowType::Null || stored_type(data_type).as_ref() == Some(arrow)
    }

    /// The column fits a field of `data_type` ([`Column::fits`]), or the [`Misfit`] is its
    /// first value that is not NULL.
    pub fn check_fits(&self, data_type: &DataType) -> Result<(), Misfit> {
        if self.fits(data_type) {
            return Ok(());
        }
        let first_value = match self.array.logical_nulls() {
            Some(nulls) => nulls.valid_indices().next().unwrap_or(0),
            None => 0,
        };
        Err(Misfit {
            index: first_value,
            found: self.kind(),
        })
    }

    /// True when every value is NULL (an empty column included).
    pub fn only_nulls(&self) -> bool {
        self.array.logical_null_count() == self.array.len()
    }

    /// The index of the first NULL, if any.
    pub fn first_null(&self) -> Option<usize> {
        let nulls = self.array.logical_nulls().filter(|n| n.null_count() > 0)?;
        (0..nulls.len()).find(|&i| nulls.is_null(i))
    }

    /// The short name of the column's element kind, as [`Value::kind`] names values.
    pub fn kind(&self) -> &'static str {
        match self.array.data_type() {
            ArrowType::Null => "null",
            ArrowType::Boolean => "bool",
            ArrowType::Int32 => "int32",
            ArrowType::Int64 => "int64",
            ArrowType::UInt64 => "uint64",
            ArrowType::Float32 => "float32",
            ArrowType::Float64 => "float64",
            ArrowType::Utf8 => "utf8",
            ArrowType::FixedSizeList(..) => "fixed_size_list",
            ArrowType::Struct(_) => "struct",
            _ => "unknown",
        }
    }

    /// The value at `index`; `None` past the end.
    pub fn value(&self, index: usize) -> Option<Value> {
        value_at(self.array.as_ref(), index)
    }

    /// Every value, in order.
    pub fn values(&self) -> Vec<Value> {
        use arrow_array::cast::AsArray;
        use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt64Type};
        let a = self.array.as_ref();
        macro_rules! each {
            ($array:expr, $arm:expr) => {
                $array.iter().map(|v| v.map_or(Value::Null, $arm)).collect()
            };
        }
        // One downcast per column for the flat types; the rest element by element.
        match a.data_type() {
            ArrowType::Boolean => each!(a.as_boolean(), Value::Bool),
            ArrowType::Int32 => each!(a.as_primitive::<Int32Type>(), Value::Int32),
            ArrowType::Int64 => each!(a.as_primitive::<Int64Type>(), Value::Int64),
            ArrowType::UInt64 => each!(a.as_primitive::<UInt64Type>(), Value::UInt64),
            ArrowType::Float32 => each!(a.as_primitive::<Float32Type>(), Value::Float32),
            ArrowType::Float64 => each!(a.as_primitive::<Float64Type>(), Value::Float64),
            ArrowType::Utf8 => each!(a.as_string::<i32>(), |s: &str| Value::Utf8(s.to_string())),
            _ => (0..self.len())
                .map(|i| self.value(i).unwrap_or(Value::Null))
                .collect(),
        }
    }

    /// The same column with the value at `index` replaced by `value` (unchanged past the end).
    pub fn replaced(&self, index: usize, value: Value) -> Result<Column, Misfit> {
        let mut values = self.values();
        if let Some(slot) = values.get_mut(index) {
            *slot = value;
        }
        self.with_values(&values)
    }

    /// The first `len` values (all of them when the column is shorter).
    pub fn truncated(&self, len: usize) -> Column {
        let len = len.min(self.len());
        Column {
            array: self.array.slice(0, len),
            struct_layers: self
                .struct_layers
                .iter()
                .map(|l| StructLayer::new(l.field, l.validity.as_ref().map(|v| v.slice(0, len))))
                .collect(),
        }
    }
}

/// Builds an array of `arrow` (one of [`stored_type`]'s) from `values`.
fn build(arrow: &ArrowType, values: &[Value]) -> Result<ArrayRef, Misfit> {
    let misfit = |index: usize, v: &Value| Misfit {
        index,
        found: v.kind(),
    };
    macro_rules! primitive {
        ($builder:ty, $arm:path) => {{
            let mut b = <$builder>::with_capacity(values.len());
            for (i, v) in values.iter().enumerate() {
                match v {
                    Value::Null => b.append_null(),
                    $arm(x) => b.append_value(*x),
                    other => return Err(misfit(i, other)),
                }
            }
            Arc::new(b.finish()) as ArrayRef
        }};
    }
    Ok(match arrow {
        ArrowType::Boolean => primitive!(BooleanBuilder, Value::Bool),
        ArrowType::Int32 => primitive!(Int32Builder, Value::Int32),
        ArrowType::Int64 => primitive!(Int64Builder, Value::Int64),
        ArrowType::UInt64 => primitive!(UInt64Builder, Value::UInt64),
        ArrowType::Float32 => primitive!(Float32Builder, Value::Float32),
        ArrowType::Float64 => primitive!(Float64Builder, Value::Float64),
        ArrowType::Utf8 => {
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
                    other => return Err(misfit(i, other)),
                }
            }
            Arc::new(b.finish())
        }
        ArrowType::FixedSizeList(_, n) => {
            let n = *n;
            let width = usize::try_from(n).unwrap_or(0);
            let items = Float32Builder::with_capacity(values.len().saturating_mul(width));
            let mut b = FixedSizeListBuilder::with_capacity(items, n, values.len())
                .with_field(vector_item());
            for (i, v) in values.iter().enumerate() {
                match v {
                    Value::Null => {
                        for _ in 0..width {
                            b.values().append_null();
                        }
                        b.append(false);
                    }
                    Value::Vector(xs) if xs.len() == width => {
                        for x in xs {
                            b.values().append_option(*x);
                        }
                        b.append(true);
                    }
                    other => return Err(misfit(i, other)),
                }
            }
            Arc::new(b.finish())
        }
        ArrowType::Struct(fields) if fields.is_empty() => {
            let mut valid = Vec::with_capacity(values.len());
            for (i, v) in values.iter().enumerate() {
                match v {
                    Value::Null => valid.push(false),
                    Value::Struct(children) if children.is_empty() => valid.push(true),
                    other => return Err(misfit(i, other)),
                }
            }
            let nulls = valid.iter().any(|v| !v).then(|| NullBuffer::from(valid));
            Arc::new(StructArray::new_empty_fields(values.len(), nulls))
        }
        _ => {
            return Err(Misfit {
                index: 0,
                found: values.first().map_or("null", Value::kind),
            });
        }
    })
}

/// The [`Value`] of element `row` of `array`, an array of a [`stored_type`] or of a resolved
/// column's type (a struct with children reads as its children's values in schema order).
/// `None` when `row` is past the end or the array's type is neither.
pub fn value_at(array: &dyn Array, row: usize) -> Option<Value> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt64Type};
    if row >= array.len() {
        return None;
    }
    if array.is_null(row) || *array.data_type() == ArrowType::Null {
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

/// Columns holding `values`, each typed by its values (tests only).
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn test_columns(values: Vec<Vec<Value>>) -> Vec<Column> {
    values.iter().map(|v| Column::infer(v).unwrap()).collect()
}

/// Tests only: collecting values makes the column they type ([`Column::infer`]).
#[cfg(test)]
#[allow(clippy::unwrap_used)]
impl FromIterator<Value> for Column {
    fn from_iter<I: IntoIterator<Item = Value>>(iter: I) -> Column {
        let values: Vec<Value> = iter.into_iter().collect();
        Column::infer(&values).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_type() -> Vec<(DataType, Vec<Value>)> {
        vec![
            (
                DataType::Bool,
                vec![Value::Bool(true), Value::Null, Value::Bool(false)],
            ),
            (DataType::Int32, vec![Value::Int32(-7), Value::Null]),
            (DataType::Int64, vec![Value::Null, Value::Int64(i64::MIN)]),
            (DataType::UInt64, vec![Value::UInt64(u64::MAX)]),
            (
                DataType::Float32,
                vec![Value::Float32(-0.0), Value::Float32(f32::NAN)],
            ),
            (DataType::Float64, vec![Value::Float64(1.5), Value::Null]),
            (
                DataType::Utf8,
                vec![
                    Value::Utf8("é".into()),
                    Value::Null,
                    Value::Utf8(String::new()),
                ],
            ),
            (
                DataType::FixedSizeList { dimension: 2 },
                vec![Value::Vector(vec![Some(1.0), None]), Value::Null],
            ),
            (DataType::Struct, vec![Value::Struct(vec![]), Value::Null]),
        ]
    }

    #[test]
    fn values_round_trip_through_every_stored_type() {
        for (data_type, values) in every_type() {
            let column = Column::of(&data_type, &values).unwrap();
            assert!(column.fits(&data_type), "{data_type:?}");
            let back = column.values();
            assert_eq!(back.len(), values.len());
            for (a, b) in back.iter().zip(&values) {
                assert!(a.identical(b), "{data_type:?}: {a} vs {b}");
            }
            assert_eq!(Column::infer(&values).unwrap(), column, "{data_type:?}");
            assert_eq!(column.with_values(&back).unwrap(), column);
        }
    }

    #[test]
    fn a_misfit_value_is_named_by_index_and_kind() {
        let err = Column::of(&DataType::Int32, &[Value::Int32(1), Value::Int64(2)]).unwrap_err();
        assert_eq!(
            err,
            Misfit {
                index: 1,
                found: "int64"
            }
        );
        let err = Column::of(
            &DataType::FixedSizeList { dimension: 3 },
            &[Value::Vector(vec![Some(1.0)])],
        )
        .unwrap_err();
        assert_eq!(err.index, 0);
        let err = Column::infer(&[Value::Null, Value::Utf8("a".into()), Value::Bool(true)]);
        assert_eq!(
            err.unwrap_err(),
            Misfit {
                index: 2,
                found: "bool"
            }
        );
    }

    #[test]
    fn a_column_of_nulls_fits_every_type_and_a_typed_one_only_its_own() {
        let nulls = Column::infer(&[Value::Null, Value::Null]).unwrap();
        assert_eq!(nulls.len(), 2);
        assert_eq!(nulls.value(1), Some(Value::Null));
        assert_eq!(nulls.value(2), None);
        assert_eq!(nulls.first_null(), Some(0));
        for (data_type, _) in every_type() {
            assert!(nulls.fits(&data_type));
        }
        let ints = Column::of(&DataType::Int64, &[Value::Int64(1)]).unwrap();
        assert!(ints.fits(&DataType::Int64));
        assert!(!ints.fits(&DataType::Int32));
        assert!(!ints.fits(&DataType::UInt64));
        let vectors = Column::of(
            &DataType::FixedSizeList { dimension: 2 },
            &[Value::Vector(vec![Some(1.0), Some(2.0)])],
        )
        .unwrap();
        assert!(!vectors.fits(&DataType::FixedSizeList { dimension: 3 }));
    }

    #[test]
    fn first_null_finds_the_first_null_wherever_it_is() {
        let at = |values: &[Value]| Column::of(&DataType::UInt64, values).unwrap().first_null();
        assert_eq!(at(&[Value::UInt64(1), Value::UInt64(2)]), None);
        assert_eq!(at(&[Value::Null, Value::UInt64(2)]), Some(0));
        assert_eq!(
            at(&[Value::UInt64(1), Value::UInt64(2), Value::Null]),
            Some(2)
        );
        assert_eq!(at(&[Value::UInt64(1), Value::Null, Value::Null]), Some(1));
        assert_eq!(at(&[]), None);
    }

    #[test]
    fn columns_are_equal_when_their_values_are() {
        let int = |v: &[Value]| Column::of(&DataType::Int64, v).unwrap();
        let text = |v: &[Value]| Column::of(&DataType::Utf8, v).unwrap();
        assert_eq!(int(&[]), text(&[]));
        assert_eq!(int(&[]), Column::empty());
        assert_eq!(int(&[Value::Null]), text(&[Value::Null]));
        assert_eq!(int(&[Value::Null, Value::Null]), Column::nulls(2));
        assert_ne!(int(&[Value::Null]), Column::nulls(2));
        assert_ne!(int(&[Value::Int64(1)]), Column::nulls(1));
        assert_ne!(
            int(&[Value::Int64(1), Value::Null]),
            text(&[Value::Null, Value::Null])
        );
        assert_eq!(
            int(&[Value::Int64(1), Value::Null]),
            int(&[Value::Int64(1), Value::Null])
        );
        assert_ne!(int(&[Value::Int64(1)]), int(&[Value::Int64(2)]));
        let int32 = Column::of(&DataType::Int32, &[Value::Int32(1)]).unwrap();
        assert_ne!(int32, int(&[Value::Int64(1)]));
        let f = |x: f64| Column::of(&DataType::Float64, &[Value::Float64(x)]).unwrap();
        assert_eq!(f(f64::NAN), f(f64::NAN));
        assert_ne!(f(0.0), f(-0.0));
    }

    #[test]
    fn truncated_keeps_the_first_values() {
        let c = Column::of(&DataType::Int32, &[Value::Int32(1), Value::Int32(2)]).unwrap();
        assert_eq!(c.truncated(1).values(), vec![Value::Int32(1)]);
        assert_eq!(c.truncated(5), c);
    }
}
