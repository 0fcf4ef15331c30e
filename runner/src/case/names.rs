//! Field names: how a case refers to a field (`age`, `address.city`) and back.
//!
//! Invariant: a dotted name resolves to at most one field, because sibling names are unique
//! (checked when a schema is built from a case); lookups walk the schema's own parent links, so
//! a name and [`dotted_name`] of the id it resolves to are always equal.

use lance_reference::model::{FieldId, Schema};

/// The id of the field named `name` (dots separate struct levels), if any.
pub fn field_id(schema: &Schema, name: &str) -> Option<FieldId> {
    let mut parent: FieldId = -1;
    let mut found = None;
    for part in name.split('.') {
        let field = schema
            .fields()
            .iter()
            .find(|f| f.parent_id == parent && f.name == part)?;
        parent = field.id;
        found = Some(field.id);
    }
    found
}

/// The dotted name of field `id` (its number when it is not in the schema).
pub fn dotted_name(schema: &Schema, id: FieldId) -> String {
    let parts: Vec<&str> = schema
        .ancestry(id)
        .iter()
        .filter_map(|a| schema.field(*a).map(|f| f.name.as_str()))
        .collect();
    if parts.is_empty() {
        id.to_string()
    } else {
        parts.join(".")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lance_reference::model::{DataType, Field};

    #[test]
    fn dotted_names_resolve_both_ways() {
        let schema = Schema::new(vec![
            Field::new(0, "a", DataType::Struct),
            Field::child(1, 0, "b", DataType::Int32),
            Field::new(2, "b", DataType::Utf8),
        ])
        .unwrap();
        assert_eq!(field_id(&schema, "a.b"), Some(1));
        assert_eq!(field_id(&schema, "b"), Some(2));
        assert_eq!(field_id(&schema, "a.c"), None);
        assert_eq!(field_id(&schema, "b.x"), None);
        assert_eq!(dotted_name(&schema, 1), "a.b");
        assert_eq!(dotted_name(&schema, 9), "9");
    }
}
