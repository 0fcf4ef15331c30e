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

use super::execute::{LiteralError, typed_predicate};
use super::protocol::{Literal, Predicate};
use crate::case::cell::CellError;
use crate::case::names::field_id;
use crate::case::step::{Cells, Row};
use crate::case::{Cell, PredicateSpec, Step};
use crate::expected::tagged::{Tagged, TaggedError, tag, untag};

/// Why a step could not be put in its wire form, or a wire form read back as a step.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// A composite step, whose parts are sent instead.
    #[error("`{0}` is sent as its parts, not whole")]
    Composite(&'static str),
    /// A member of the wrong JSON shape (the text says which and what it must be).
    #[error("{0}")]
    Shape(&'static str),
    /// A value that does not convert to or from JSON.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// The step, its placeholders put back, does not read as a step.
    #[error("step: {0}")]
    Step(serde_json::Error),
    /// `where` does not read as a predicate.
    #[error("where: {0}")]
    Where(serde_json::Error),
    /// An `update` without `where`.
    #[error("an `update` needs `where`")]
    NoWhere,
    /// A cell names a field the schema does not have.
    #[error("no field {0:?}")]
    NoField(String),
    /// A cell or literal does not fit its field.
    #[error(transparent)]
    Cell(#[from] CellError),
    /// A predicate literal does not fit its field.
    #[error(transparent)]
    Literal(#[from] LiteralError),
    /// A tagged value that does not read as its type.
    #[error(transparent)]
    Tagged(#[from] TaggedError),
    /// A struct value that is not an object of tagged children.
    #[error("a struct value is an object, not {0}")]
    StructNotObject(Json),
    /// A row that is not an object.
    #[error("a row is an object, not {0}")]
    RowNotObject(Json),
    /// A problem inside the named child, cell or field (`<name>: <problem>`).
    #[error("{name}: {error}")]
    In {
        /// The member's name.
        name: String,
        /// The problem.
        error: Box<WireError>,
    },
    /// A problem in a column of `cells` (`<name>.<problem>`).
    #[error("{name}.{error}")]
    Column {
        /// The column's field name.
        name: String,
        /// The problem.
        error: Box<WireError>,
    },
}

impl WireError {
    fn within(name: &str) -> impl FnOnce(WireError) -> WireError + '_ {
        move |error| WireError::In {
            name: name.to_string(),
            error: Box::new(error),
        }
    }
}

/// The wire form of `step`, its cells typed by `schema` (the schema of the version the step
/// commits; for `create`, the one it creates).
pub fn to_wire(step: &Step, schema: &Schema) -> Result<Json, WireError> {
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
                typed.push(("where", serde_json::to_value(p)?));
            }
        }
        Step::UpdateRows { set, .. } | Step::RewriteColumns { set, .. } => {
            typed.push(("set", row_json(schema, set)?));
            set.clear();
        }
        Step::Update { predicate, set } => {
            let p = typed_predicate(schema, predicate)?;
            typed.push(("where", serde_json::to_value(p)?));
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
            return Err(WireError::Composite(step.op()));
        }
        _ => {}
    }
    let mut json = serde_json::to_value(&bare)?;
    let object = json
        .as_object_mut()
        .ok_or(WireError::Shape("a step serializes to an object"))?;
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
pub fn from_wire(json: &Json) -> Result<Step, WireError> {
    let mut bare = json
        .as_object()
        .ok_or(WireError::Shape("a step is a JSON object"))?
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
                .ok_or(WireError::Shape("`overlays` entries are objects"))?;
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
        serde_json::from_value(Json::Object(bare)).map_err(WireError::Step)?;
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
                    serde_json::from_value(predicate).map_err(WireError::Where)?;
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
            let typed: Predicate =
                serde_json::from_value(predicate.ok_or(WireError::NoWhere)?)
                    .map_err(WireError::Where)?;
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

fn tagged_cell(schema: &Schema, name: &str, cell: &Cell) -> Result<Json, WireError> {
    let id = field_id(schema, name).ok_or_else(|| WireError::NoField(name.to_string()))?;
    let value = cell.to_value(schema, id)?;
    Ok(serde_json::to_value(tag(schema, id, &value))?)
}

fn row_json(schema: &Schema, row: &Row) -> Result<Json, WireError> {
    let mut out = Map::new();
    for (name, cell) in row {
        out.insert(name.clone(), tagged_cell(schema, name, cell)?);
    }
    Ok(Json::Object(out))
}

fn rows_json(schema: &Schema, rows: &[Row]) -> Result<Vec<Json>, WireError> {
    rows.iter().map(|r| row_json(schema, r)).collect()
}

fn cells_json(schema: &Schema, cells: &Cells) -> Result<Json, WireError> {
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
pub fn cell_of_tagged(tagged: &Tagged) -> Result<Cell, WireError> {
    if tagged.data_type == "struct" && !tagged.value.is_null() {
        let children = tagged
            .value
            .as_object()
            .ok_or_else(|| WireError::StructNotObject(tagged.value.clone()))?;
        let mut out = BTreeMap::new();
        for (name, child) in children {
            let child: Tagged = serde_json::from_value(child.clone())
                .map_err(|e| WireError::within(name)(e.into()))?;
            out.insert(name.clone(), cell_of_tagged(&child)?);
        }
        return Ok(Cell::Struct(out));
    }
    let value = untag(tagged)?;
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
        Value::Struct(_) => {
            return Err(WireError::Shape(
                "a struct value is an object of tagged children",
            ));
        }
    })
}

fn cell_of(json: &Json) -> Result<Cell, WireError> {
    let tagged: Tagged = serde_json::from_value(json.clone())?;
    cell_of_tagged(&tagged)
}

fn row_of(json: &Json) -> Result<Row, WireError> {
    let object = json
        .as_object()
        .ok_or_else(|| WireError::RowNotObject(json.clone()))?;
    object
        .iter()
        .map(|(name, v)| Ok((name.clone(), cell_of(v).map_err(WireError::within(name))?)))
        .collect()
}

fn rows_of(json: &Json) -> Result<Vec<Row>, WireError> {
    json.as_array()
        .ok_or(WireError::Shape("`rows` is an array"))?
        .iter()
        .map(row_of)
        .collect()
}

fn cells_of(json: &Json) -> Result<Cells, WireError> {
    let object = json
        .as_object()
        .ok_or(WireError::Shape("`cells` is an object"))?;
    let mut out = Cells::new();
    for (name, column) in object {
        out.insert(
            name.clone(),
            row_of(column).map_err(|error| WireError::Column {
                name: name.clone(),
                error: Box::new(error),
            })?,
        );
    }
    Ok(out)
}

fn predicate_of(p: &Predicate) -> Result<PredicateSpec, WireError> {
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
