//! The table schema: fields in pre-order, nested through structs.
//!
//! Invariant: a [`Schema`] is validated on construction: field ids are non-negative and unique,
//! every parent appears before its children and is a struct, and a `fixed_size_list` is one
//! field (its float32 item has no field of its own, as in Lance). Ancestry questions (is one
//! field inside another?) are answered here and nowhere else, because both overlay resolution
//! of struct cells and index exclusion depend on them.

use crate::error::{Error, Result};

/// A field id. Non-negative ids are user fields; every negative id is reserved for the system
/// (see [`crate::model::TOMBSTONE_FIELD_ID`] and the lineage ids).
pub type FieldId = i32;

/// The logical type of a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataType {
    /// `bool`
    Bool,
    /// `int32`
    Int32,
    /// `int64`
    Int64,
    /// `uint64`
    UInt64,
    /// `float32`
    Float32,
    /// `float64`
    Float64,
    /// `utf8`
    Utf8,
    /// `fixed_size_list<float32, dimension>`: one field, no child entry.
    FixedSizeList {
        /// Items per row (at least 1).
        dimension: u32,
    },
    /// `struct`: a container; its children are the fields whose `parent_id` is this field.
    Struct,
}

impl DataType {
    /// Lance's `logical_type` spelling of this type.
    pub fn logical_type(&self) -> String {
        match self {
            DataType::Bool => "bool".into(),
            DataType::Int32 => "int32".into(),
            DataType::Int64 => "int64".into(),
            DataType::UInt64 => "uint64".into(),
            DataType::Float32 => "float".into(),
            DataType::Float64 => "double".into(),
            DataType::Utf8 => "string".into(),
            DataType::FixedSizeList { dimension } => format!("fixed_size_list:float:{dimension}"),
            DataType::Struct => "struct".into(),
        }
    }

    /// Parses Lance's `logical_type` spelling.
    pub fn from_logical_type(s: &str) -> Option<DataType> {
        Some(match s {
            "bool" => DataType::Bool,
            "int32" => DataType::Int32,
            "int64" => DataType::Int64,
            "uint64" => DataType::UInt64,
            "float" => DataType::Float32,
            "double" => DataType::Float64,
            "string" => DataType::Utf8,
            "struct" => DataType::Struct,
            other => {
                let dim = other.strip_prefix("fixed_size_list:float:")?;
                let dimension: u32 = dim.parse().ok()?;
                if dimension == 0 {
                    return None;
                }
                DataType::FixedSizeList { dimension }
            }
        })
    }
}

/// One schema field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Field id (non-negative).
    pub id: FieldId,
    /// Parent field id, or `-1` for a top-level field.
    pub parent_id: FieldId,
    /// Column name.
    pub name: String,
    /// Logical type.
    pub data_type: DataType,
    /// Whether NULL is allowed.
    pub nullable: bool,
}

impl Field {
    /// A top-level field.
    pub fn new(id: FieldId, name: &str, data_type: DataType) -> Field {
        Field {
            id,
            parent_id: -1,
            name: name.to_string(),
            data_type,
            nullable: true,
        }
    }

    /// A child of the struct field `parent_id`.
    pub fn child(id: FieldId, parent_id: FieldId, name: &str, data_type: DataType) -> Field {
        Field {
            id,
            parent_id,
            name: name.to_string(),
            data_type,
            nullable: true,
        }
    }
}

/// A validated schema: fields in pre-order (every parent before its children).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Schema {
    fields: Vec<Field>,
}

impl Schema {
    /// Validates and builds a schema.
    pub fn new(fields: Vec<Field>) -> Result<Schema> {
        let mut seen: Vec<&Field> = Vec::with_capacity(fields.len());
        for f in &fields {
            let bad = |problem: &str| Error::InvalidSchema {
                field: f.id,
                problem: problem.into(),
            };
            if f.id < 0 {
                return Err(bad("negative field ids are reserved for the system"));
            }
            if seen.iter().any(|s| s.id == f.id) {
                return Err(bad("duplicate field id"));
            }
            if f.parent_id != -1 {
                match seen.iter().find(|s| s.id == f.parent_id) {
                    None => return Err(bad("parent does not appear before the field")),
                    Some(p) if p.data_type != DataType::Struct => {
                        return Err(bad("parent is not a struct"));
                    }
                    Some(_) => {}
                }
            }
            if let DataType::FixedSizeList { dimension: 0 } = f.data_type {
                return Err(bad("fixed_size_list dimension must be at least 1"));
            }
            seen.push(f);
        }
        Ok(Schema { fields })
    }

    /// All fields, in pre-order.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// The field with `id`, if any.
    pub fn field(&self, id: FieldId) -> Option<&Field> {
        self.fields.iter().find(|f| f.id == id)
    }

    /// The top-level fields, in order.
    pub fn top_level(&self) -> impl Iterator<Item = &Field> {
        self.fields.iter().filter(|f| f.parent_id == -1)
    }

    /// The direct children of `id`, in order.
    pub fn children(&self, id: FieldId) -> impl Iterator<Item = &Field> {
        self.fields.iter().filter(move |f| f.parent_id == id)
    }

    /// The chain of ids from the top-level field down to `id` (inclusive); empty when `id` is
    /// not in the schema.
    pub fn ancestry(&self, id: FieldId) -> Vec<FieldId> {
        let mut chain = Vec::new();
        let mut cur = self.field(id);
        while let Some(f) = cur {
            chain.push(f.id);
            // Bounded: parents appear strictly earlier, so the walk cannot cycle.
            if chain.len() > self.fields.len() {
                break;
            }
            cur = if f.parent_id == -1 {
                None
            } else {
                self.field(f.parent_id)
            };
        }
        chain.reverse();
        chain
    }

    /// True when `a` and `b` are the same field, or one contains the other.
    pub fn related(&self, a: FieldId, b: FieldId) -> bool {
        self.ancestry(a).contains(&b) || self.ancestry(b).contains(&a)
    }
}
