//! Prints the scan of one version of a dataset directory, read by the reference reader, as
//! JSON lines: one live row per line, fragments in manifest order and rows in physical order.
//!
//! ```text
//! cargo run -p lance-reference --example dataset_dump -- <dataset dir> [version|all]
//! {"version":2,"fragment":0,"offset":1,"_rowid":1,"_rowaddr":1,
//!  "_row_created_at_version":1,"_row_last_updated_at_version":2,"values":{"id":1,...}}
//! ```
//!
//! Values: NULL → `null`, integers and floats → numbers (float32 widened exactly to f64),
//! strings → strings, vectors → arrays, structs → objects keyed by child name. Without a
//! version the newest is dumped. Errors go to stderr with their class and code, exit status 1.

use std::path::PathBuf;
use std::process::ExitCode;

use lance_reference::model::{FieldId, Schema, Snapshot, Value};
use lance_reference::scan::{row_address, scan};
use lance_reference_io::Dataset;
use serde_json::{Map, Value as Json, json};

fn to_json(schema: &Schema, field: FieldId, value: &Value) -> Json {
    match value {
        Value::Null => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Int32(v) => json!(v),
        Value::Int64(v) => json!(v),
        Value::UInt64(v) => json!(v),
        Value::Float32(v) => json!(f64::from(*v)),
        Value::Float64(v) => json!(v),
        Value::Utf8(s) => json!(s),
        Value::Vector(items) => Json::Array(
            items
                .iter()
                .map(|x| x.map_or(Json::Null, |x| json!(f64::from(x))))
                .collect(),
        ),
        Value::Struct(children) => {
            let mut object = Map::new();
            for (child, v) in schema.children(field).zip(children) {
                object.insert(child.name.clone(), to_json(schema, child.id, v));
            }
            Json::Object(object)
        }
    }
}

fn dump(snapshot: &Snapshot) -> Result<(), String> {
    let fields: Vec<_> = snapshot.schema.top_level().cloned().collect();
    let rows =
        scan(snapshot, None).map_err(|e| format!("{} ({}): {e}", e.class().as_str(), e.code()))?;
    for row in rows {
        let mut values = Map::new();
        for (f, v) in fields.iter().zip(&row.values) {
            values.insert(f.name.clone(), to_json(&snapshot.schema, f.id, v));
        }
        let line = json!({
            "version": snapshot.version,
            "fragment": row.fragment,
            "offset": row.offset,
            "_rowid": row.row_id,
            "_rowaddr": row_address(row.fragment, row.offset),
            "_row_created_at_version": row.created_at,
            "_row_last_updated_at_version": row.last_updated_at,
            "values": values,
        });
        println!("{line}");
    }
    Ok(())
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let root = PathBuf::from(
        args.next()
            .ok_or("usage: dataset_dump <dataset dir> [version|all]")?,
    );
    let which = args.next();
    let ds =
        Dataset::open(&root).map_err(|e| format!("{} ({}): {e}", e.class().as_str(), e.code()))?;
    let versions = match which.as_deref() {
        Some("all") => ds.versions(),
        Some(v) => vec![
            v.parse::<u64>()
                .map_err(|e| format!("bad version {v:?}: {e}"))?,
        ],
        None => ds.latest_version().into_iter().collect(),
    };
    for v in versions {
        let (snapshot, _) = ds
            .read_version(v)
            .map_err(|e| format!("{} ({}): {e}", e.class().as_str(), e.code()))?;
        dump(&snapshot)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
