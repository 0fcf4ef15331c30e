//! The wire form of a step: what `write` and `prepare` send a writer.
//!
//! Invariant: a step crosses the pipe as the JSON of its `case.toml` form (the same members,
//! the same `op` names, [`crate::case::step`]), except that every cell and every predicate
//! literal is a tagged value of its field's type (`{"type": "int32", "value": 26}`, as in
//! `expected/`). So a writer never guesses a type, and floats such as NaN, which JSON cannot
//! spell as numbers, cross exactly. [`to_wire`] and [`from_wire`] are inverse: a step sent and
//! read back is the same step, which the tests check for every step of the corpus's writer
//! cases. Composite steps (`commit_retry`, `expect_refusal`) are never sent whole: the runner
//! sends their parts ([`super::writer`]).

use std::collections::BTreeMap;

use lance_reference::model::{Schema, Value};
use serde_json::{Map, Value as Json};

use super::execute::typed_predicate;
use super::protocol::{Literal, Predicate};
use crate::case::names::field_id;
use crate::case::step::{Cells, Row};
use crate::case::{Cell, PredicateSpec, Step};
use crate::expected::tagged::{Tagged, tag, untag};

/// The wire form of `step`, its cells typed by `schema` (the schema of the version the step
/// commits; for `create`, the one it creates).
pub fn to_wire(step: &Step, schema: &Schema) -> Result<Json, String> {
    let mut bare = step.clone();
    let mut typed: Vec<(&str, Json)> = Vec::new();
    let mut overlay_cells: Vec<Json> = Vec::new();
    match &mut bare {
        Step::Create { rows, .. } | Step::Append { rows, .. } => {
            typed.push(("rows", Json::Array(rows_json(schema, rows)?)));
            rows.clear();
        }
        Step::Overlay {
            cells, overlays, ..
        } => {
            if let Some(c) = cells.take() {
                typed.push(("cells", cells_json(schema, &c)?));
            }
            for o in overlays.iter_mut() {
                overlay_cells.push(cells_json(schema, &o.cells)?);
                o.cells.clear();
            }
        }
        Step::Delete { predicate, .. } => {
            if let Some(p) = predicate.take() {
                let p = typed_predicate(schema, &p)?;
                typed.push(("where", serde_json::to_value(p).map_err(|e| e.to_string())?));
            }
        }
        Step::UpdateRows { set, .. } | Step::RewriteColumns { set, .. } => {
            typed.push(("set", row_json(schema, set)?));
            set.clear();
        }
        Step::Update { predicate, set } => {
            let p = typed_predicate(schema, predicate)?;
            typed.push(("where", serde_json::to_value(p).map_err(|e| e.to_string())?));
            typed.push(("set", row_json(schema, set)?));
            set.clear();
        }
        Step::MergeInsert { rows, .. } => {
            typed.push(("rows", Json::Array(rows_json(schema, rows)?)));
            rows.clear();
        }
        Step::AddFields { fill, .. } if !fill.is_empty() => {
            typed.push(("fill", row_json(schema, fill)?));
            fill.clear();
        }
        Step::CommitRetry { .. } | Step::ExpectRefusal { .. } => {
            return Err(format!("`{}` is sent as its parts, not whole", step.op()));
        }
        _ => {}
    }
    let mut json = serde_json::to_value(&bare).map_err(|e| e.to_string())?;
    let object = json
        .as_object_mut()
        .ok_or_else(|| "a step serializes to an object".to_string())?;
    for (key, value) in typed {
        object.insert(key.to_string(), value);
    }
    if let Some(Json::Array(list)) = object.get_mut("overlays") {
        for (entry, cells) in list.iter_mut().zip(overlay_cells) {
            if let Some(e) = entry.as_object_mut() {
                e.insert("cells".into(), cells);
            }
        }
    }
    Ok(json)
}

/// The step a wire form stands for (the writer's side of [`to_wire`]).
pub fn from_wire(json: &Json) -> Result<Step, String> {
    let mut bare = json
        .as_object()
        .ok_or_else(|| "a step is a JSON object".to_string())?
        .clone();
    // Only the members that carry cells in this op are typed: `set` of `set_config` is
    // plain text, `set` of `update_rows`, `update` and `rewrite_columns` holds cells.
    let op = bare
        .get("op")
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_string();
    let mut take = |key: &str, ops: &[&str]| {
        if ops.contains(&op.as_str()) {
            bare.remove(key)
        } else {
            None
        }
    };
    let rows = take("rows", &["create", "append", "merge_insert"]);
    let cells = take("cells", &["overlay"]);
    let predicate = take("where", &["delete", "update"]);
    let set = take("set", &["update_rows", "update", "rewrite_columns"]);
    let fill = take("fill", &["add_fields"]);
    let mut overlay_cells = Vec::new();
    if let Some(Json::Array(list)) = bare.get_mut("overlays") {
        for entry in list.iter_mut() {
            let e = entry
                .as_object_mut()
                .ok_or_else(|| "`overlays` entries are objects".to_string())?;
            overlay_cells.push(e.remove("cells").unwrap_or(Json::Null));
            e.insert("cells".into(), Json::Object(Map::new()));
        }
    }
    // Required members taken out above get placeholders until the typed ones are read.
    if op == "update" {
        bare.insert(
            "where".into(),
            serde_json::json!({"field": "", "op": "is_null"}),
        );
    }
    if matches!(op.as_str(), "update" | "rewrite_columns") {
        bare.insert("set".into(), Json::Object(Map::new()));
    }
    if op == "merge_insert" {
        bare.insert("rows".into(), Json::Array(Vec::new()));
    }
    let mut step: Step =
        serde_json::from_value(Json::Object(bare)).map_err(|e| format!("step: {e}"))?;
    match &mut step {
        Step::Create { rows: r, .. } | Step::Append { rows: r, .. } => {
            if let Some(rows) = rows {
                *r = rows_of(&rows)?;
            }
        }
        Step::Overlay {
            cells: c, overlays, ..
        } => {
            if let Some(cells) = cells {
                *c = Some(cells_of(&cells)?);
            }
            for (o, cells) in overlays.iter_mut().zip(overlay_cells) {
                o.cells = cells_of(&cells)?;
            }
        }
        Step::Delete { predicate: p, .. } => {
            if let Some(predicate) = predicate {
                let typed: Predicate =
                    serde_json::from_value(predicate).map_err(|e| format!("where: {e}"))?;
                *p = Some(predicate_of(&typed)?);
            }
        }
        Step::UpdateRows { set: s, .. } | Step::RewriteColumns { set: s, .. } => {
            if let Some(set) = set {
                *s = row_of(&set)?;
            }
        }
        Step::Update {
            predicate: p,
            set: s,
        } => {
            let typed: Predicate = serde_json::from_value(
                predicate.ok_or_else(|| "an `update` needs `where`".to_string())?,
            )
            .map_err(|e| format!("where: {e}"))?;
            *p = predicate_of(&typed)?;
            if let Some(set) = set {
                *s = row_of(&set)?;
            }
        }
        Step::MergeInsert { rows: r, .. } => {
            if let Some(rows) = rows {
                *r = rows_of(&rows)?;
            }
        }
        Step::AddFields { fill: f, .. } => {
            if let Some(fill) = fill {
                *f = row_of(&fill)?;
            }
        }
        _ => {}
    }
    Ok(step)
}

fn tagged_cell(schema: &Schema, name: &str, cell: &Cell) -> Result<Json, String> {
    let id = field_id(schema, name).ok_or_else(|| format!("no field {name:?}"))?;
    let value = cell.to_value(schema, id).map_err(|e| e.to_string())?;
    serde_json::to_value(tag(schema, id, &value)).map_err(|e| e.to_string())
}

fn row_json(schema: &Schema, row: &Row) -> Result<Json, String> {
    let mut out = Map::new();
    for (name, cell) in row {
        out.insert(name.clone(), tagged_cell(schema, name, cell)?);
    }
    Ok(Json::Object(out))
}

fn rows_json(schema: &Schema, rows: &[Row]) -> Result<Vec<Json>, String> {
    rows.iter().map(|r| row_json(schema, r)).collect()
}

fn cells_json(schema: &Schema, cells: &Cells) -> Result<Json, String> {
    let mut out = Map::new();
    for (name, by_offset) in cells {
        let mut column = Map::new();
        for (offset, cell) in by_offset {
            column.insert(offset.clone(), tagged_cell(schema, name, cell)?);
        }
        out.insert(name.clone(), Json::Object(column));
    }
    Ok(Json::Object(out))
}

/// The untyped cell of a tagged value.
pub fn cell_of_tagged(tagged: &Tagged) -> Result<Cell, String> {
    if tagged.data_type == "struct" && !tagged.value.is_null() {
        let children = tagged
            .value
            .as_object()
            .ok_or_else(|| format!("a struct value is an object, not {}", tagged.value))?;
        let mut out = BTreeMap::new();
        for (name, child) in children {
            let child: Tagged =
                serde_json::from_value(child.clone()).map_err(|e| format!("{name}: {e}"))?;
            out.insert(name.clone(), cell_of_tagged(&child)?);
        }
        return Ok(Cell::Struct(out));
    }
    let value = untag(tagged).map_err(|e| e.to_string())?;
    Ok(match value {
        Value::Null => Cell::null(),
        Value::Bool(b) => Cell::Bool(b),
        Value::Int32(i) => Cell::Int(i64::from(i)),
        Value::Int64(i) => Cell::Int(i),
        Value::UInt64(u) => i64::try_from(u).map_or_else(|_| Cell::Text(u.to_string()), Cell::Int),
        Value::Float32(x) => Cell::Float(f64::from(x)),
        Value::Float64(x) => Cell::Float(x),
        Value::Utf8(s) => Cell::Text(s),
        Value::Vector(items) => Cell::List(
            items
                .into_iter()
                .map(|x| x.map_or_else(Cell::null, |x| Cell::Float(f64::from(x))))
                .collect(),
        ),
        Value::Struct(_) => return Err("a struct value is an object of tagged children".into()),
    })
}

fn cell_of(json: &Json) -> Result<Cell, String> {
    let tagged: Tagged = serde_json::from_value(json.clone()).map_err(|e| e.to_string())?;
    cell_of_tagged(&tagged)
}

fn row_of(json: &Json) -> Result<Row, String> {
    let object = json
        .as_object()
        .ok_or_else(|| format!("a row is an object, not {json}"))?;
    object
        .iter()
        .map(|(name, v)| {
            Ok((
                name.clone(),
                cell_of(v).map_err(|e| format!("{name}: {e}"))?,
            ))
        })
        .collect()
}

fn rows_of(json: &Json) -> Result<Vec<Row>, String> {
    json.as_array()
        .ok_or_else(|| "`rows` is an array".to_string())?
        .iter()
        .map(row_of)
        .collect()
}

fn cells_of(json: &Json) -> Result<Cells, String> {
    let object = json
        .as_object()
        .ok_or_else(|| "`cells` is an object".to_string())?;
    let mut out = Cells::new();
    for (name, column) in object {
        out.insert(
            name.clone(),
            row_of(column).map_err(|e| format!("{name}.{e}"))?,
        );
    }
    Ok(out)
}

fn predicate_of(p: &Predicate) -> Result<PredicateSpec, String> {
    Ok(match p {
        Predicate::And { and } => PredicateSpec::And {
            and: and.iter().map(predicate_of).collect::<Result<_, _>>()?,
        },
        Predicate::Or { or } => PredicateSpec::Or {
            or: or.iter().map(predicate_of).collect::<Result<_, _>>()?,
        },
        Predicate::Leaf { field, op, value } => PredicateSpec::Leaf {
            field: field.clone(),
            op: *op,
            value: match value {
                None => None,
                Some(Literal::One(t)) => Some(cell_of_tagged(t)?),
                Some(Literal::List(items)) => Some(Cell::List(
                    items.iter().map(cell_of_tagged).collect::<Result<_, _>>()?,
                )),
            },
        },
    })
}
