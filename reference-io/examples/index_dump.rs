//! Prints the index entries of one version of a dataset directory, as the reference reader
//! reads them from the index files (after every check of `lance_reference_io::read`), as JSON
//! lines: one entry per line, indices in manifest order, entries in (fragment, offset) order.
//!
//! ```text
//! cargo run -p lance-reference-io --example index_dump -- <dataset dir> [version]
//! {"index":"age_idx","kind":"btree","dataset_version":1,"fragment":0,"offset":1,"value":25}
//! ```
//!
//! Values: NULL → `null`, numbers → numbers (float32 widened exactly to f64), strings →
//! strings, vectors → arrays. Without a version the newest is read. Errors go to stderr with
//! their class and code, exit status 1.

use std::path::PathBuf;
use std::process::ExitCode;

use lance_reference::model::{IndexKind, Value};
use lance_reference_io::Dataset;
use serde_json::{Value as Json, json};

fn to_json(value: &Value) -> Json {
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
        Value::Struct(_) => Json::Null,
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(root) = args.first().map(PathBuf::from) else {
        eprintln!("usage: index_dump <dataset dir> [version]");
        return ExitCode::from(2);
    };
    let run = || -> Result<Vec<Json>, lance_reference_io::DatasetError> {
        let dataset = Dataset::open(&root)?;
        let version = match args.get(1).and_then(|v| v.parse().ok()) {
            Some(v) => v,
            None => dataset.latest_version().unwrap_or(1),
        };
        let (snapshot, _) = dataset.read_version(version)?;
        let mut out = Vec::new();
        for index in &snapshot.indices {
            let mut entries: Vec<_> = index.entries.iter().collect();
            entries.sort_by_key(|e| (e.fragment, e.offset));
            for e in entries {
                out.push(json!({
                    "index": index.name,
                    "kind": match index.kind { IndexKind::BTree => "btree", IndexKind::Vector => "vector" },
                    "dataset_version": index.dataset_version,
                    "fragment": e.fragment,
                    "offset": e.offset,
                    "value": to_json(&e.value),
                }));
            }
        }
        Ok(out)
    };
    match run() {
        Ok(lines) => {
            for l in lines {
                println!("{l}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}/{}: {e}", e.class().as_str(), e.code());
            ExitCode::from(1)
        }
    }
}
