//! Cell values.
//!
//! Invariant: a [`Value`] never depends on a physical encoding: the same logical cell has the
//! same `Value` whether it came from a base file, an overlay or an expected-results file.

use super::schema::DataType;

/// One cell's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// `bool`.
    Bool(bool),
    /// `int32`.
    Int32(i32),
    /// `int64`.
    Int64(i64),
    /// `uint64`.
    UInt64(u64),
    /// `float32`.
    Float32(f32),
    /// `float64`.
    Float64(f64),
    /// `utf8`.
    Utf8(String),
    /// `fixed_size_list<float32, N>`; items may themselves be null.
    Vector(Vec<Option<f32>>),
    /// A struct. In a resolved row it holds the children's values in schema order. In a stored
    /// column a struct field carries only its validity, so a present struct is `Struct(vec![])`.
    Struct(Vec<Value>),
}

impl Value {
    /// True for [`Value::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Whether this value may be stored in a column of `data_type` (NULL fits every type).
    pub fn fits(&self, data_type: &DataType) -> bool {
        match (self, data_type) {
            (Value::Null, _) => true,
            (Value::Bool(_), DataType::Bool)
            | (Value::Int32(_), DataType::Int32)
            | (Value::Int64(_), DataType::Int64)
            | (Value::UInt64(_), DataType::UInt64)
            | (Value::Float32(_), DataType::Float32)
            | (Value::Float64(_), DataType::Float64)
            | (Value::Utf8(_), DataType::Utf8)
            | (Value::Struct(_), DataType::Struct) => true,
            (Value::Vector(v), DataType::FixedSizeList { dimension }) => {
                v.len() as u64 == u64::from(*dimension)
            }
            _ => false,
        }
    }

    /// A short name of the value's kind, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int32(_) => "int32",
            Value::Int64(_) => "int64",
            Value::UInt64(_) => "uint64",
            Value::Float32(_) => "float32",
            Value::Float64(_) => "float64",
            Value::Utf8(_) => "utf8",
            Value::Vector(_) => "fixed_size_list",
            Value::Struct(_) => "struct",
        }
    }

    /// Equality that treats floats bit for bit, so NaN equals the same NaN and `-0.0` differs
    /// from `0.0`. This is the equality conformance checks use.
    pub fn identical(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Float32(a), Value::Float32(b)) => a.to_bits() == b.to_bits(),
            (Value::Float64(a), Value::Float64(b)) => a.to_bits() == b.to_bits(),
            (Value::Vector(a), Value::Vector(b)) => {
                a.len() == b.len()
                    && a.iter().zip(b).all(|(x, y)| match (x, y) {
                        (Some(x), Some(y)) => x.to_bits() == y.to_bits(),
                        (None, None) => true,
                        _ => false,
                    })
            }
            (Value::Struct(a), Value::Struct(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.identical(y))
            }
            _ => self == other,
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Null => write!(f, "NULL"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Int32(v) => write!(f, "{v}"),
            Value::Int64(v) => write!(f, "{v}"),
            Value::UInt64(v) => write!(f, "{v}"),
            Value::Float32(v) => write!(f, "{v:?}"),
            Value::Float64(v) => write!(f, "{v:?}"),
            Value::Utf8(v) => write!(f, "{v:?}"),
            Value::Vector(v) => {
                write!(f, "[")?;
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    match x {
                        Some(x) => write!(f, "{x:?}")?,
                        None => write!(f, "NULL")?,
                    }
                }
                write!(f, "]")
            }
            Value::Struct(v) => {
                write!(f, "{{")?;
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{x}")?;
                }
                write!(f, "}}")
            }
        }
    }
}
