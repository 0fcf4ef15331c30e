//! Interop helper for `tests/interop/datafile_roundtrip.py` and
//! `tests/interop/decode_agreement.py`: dumps a Lance data file as JSON, or writes the kit's
//! sample files for pylance to read.
//!
//! ```text
//! datafile_dump read FILE [TYPE,TYPE,...]   # types as Lance logical types; default: file schema
//! datafile_dump write-sample DIR [VERSION]  # writes DIR/sample.lance and DIR/ragged.lance
//!                                           # (and DIR/large.lance in 2.1 and 2.2);
//!                                           # VERSION 2.0, 2.1 or 2.2
//! ```
//!
//! Output is one JSON document on stdout: the footer version, `num_rows`, the file schema
//! (`fields`, pre-order), and per column its schema entry, page encodings and values. In v2.0
//! column `i` is schema field `i` (a struct has a header column); from v2.1 on only leaves
//! take columns, so column `i` is the `i`-th non-struct field. A refused file prints `error`
//! and `code` at the top level; a refused column prints them in place of its `values`; both
//! exit 2. Floats are printed as the exact decimal of their
//! value widened to f64 (so a float32 compares equal to pyarrow's Python float), and non-finite
//! floats as the strings `"NaN"`, `"inf"`, `"-inf"`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;

use lance_reference::model::{DataType, Field, Value};
use lance_reference_io::data_file::{
    ColumnData, DataFileContents, DataFileError, DataFileVersion, FileExtras, FileField,
    read_data_file, write_data_file_in,
};

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32).unwrap(),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_float(x: f64) -> String {
    if x.is_nan() {
        "\"NaN\"".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "\"inf\"".into()
        } else {
            "\"-inf\"".into()
        }
    } else {
        format!("{x:?}")
    }
}

fn json_value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int32(x) => x.to_string(),
        Value::Int64(x) => x.to_string(),
        Value::UInt64(x) => x.to_string(),
        Value::Float32(x) => json_float(f64::from(*x)),
        Value::Float64(x) => json_float(*x),
        Value::Utf8(s) => json_str(s),
        Value::Vector(xs) => {
            let items: Vec<String> = xs
                .iter()
                .map(|x| x.map_or("null".into(), |x| json_float(f64::from(x))))
                .collect();
            format!("[{}]", items.join(","))
        }
        Value::Struct(_) => "{}".into(),
    }
}

/// The schema entry column `index` stores. In v2.0 every field takes a column, in pre-order (a
/// struct takes a header column); from v2.1 on only leaves do, so struct parents are skipped.
fn column_schema<'f>(file: &'f DataFileContents<'_>, index: usize) -> Option<&'f FileField> {
    let v = file.version();
    if (v.major, v.minor) >= (2, 1) {
        file.schema()
            .iter()
            .filter(|f| f.logical_type != "struct")
            .nth(index)
    } else {
        file.schema().get(index)
    }
}

fn error_json(e: &DataFileError) -> String {
    format!(
        "\"error\": {}, \"code\": {}",
        json_str(&e.to_string()),
        json_str(e.code())
    )
}

/// One JSON document for the file; exits 2 when the file or any column was refused (a refused
/// column carries `error` and `code` in place of `values`).
fn dump(path: &str, types: Option<Vec<DataType>>) -> (String, bool) {
    let bytes = std::fs::read(path).unwrap();
    let file = match read_data_file(&bytes, path) {
        Ok(file) => file,
        Err(e) => {
            return (
                format!("{{\"path\": {}, {}}}", json_str(path), error_json(&e)),
                false,
            );
        }
    };
    let mut all_ok = true;
    let mut columns = Vec::new();
    for i in 0..file.num_columns() {
        let schema = column_schema(&file, i);
        let dt = match &types {
            Some(t) => t.get(i).cloned(),
            None => schema.and_then(|f| DataType::from_logical_type(&f.logical_type)),
        };
        let values = match dt.as_ref().map(|dt| file.column(i, dt)) {
            Some(Ok(values)) => format!(
                "\"values\":[{}]",
                values.iter().map(json_value).collect::<Vec<_>>().join(",")
            ),
            Some(Err(e)) => {
                all_ok = false;
                error_json(&e)
            }
            None => {
                all_ok = false;
                "\"error\": \"no type for this column (not in the file schema, none given)\", \"code\": \"no_type\"".into()
            }
        };
        let pages: Vec<String> = file
            .page_summaries(i)
            .unwrap()
            .iter()
            .map(|p| json_str(&p.encoding))
            .collect();
        let (id, parent_id, name) = schema.map_or((0, -1, String::new()), |f| {
            (f.id, f.parent_id, f.name.clone())
        });
        let logical_type = dt.map_or_else(String::new, |dt| dt.logical_type());
        columns.push(format!(
            "{{\"id\":{id},\"parent_id\":{parent_id},\"name\":{},\"logical_type\":{},\"pages\":[{}],{values}}}",
            json_str(&name),
            json_str(&logical_type),
            pages.join(",")
        ));
    }
    let v = file.version();
    let fields: Vec<String> = file
        .schema()
        .iter()
        .map(|f| {
            format!(
                "{{\"id\":{},\"parent_id\":{},\"name\":{},\"logical_type\":{}}}",
                f.id,
                f.parent_id,
                json_str(&f.name),
                json_str(&f.logical_type)
            )
        })
        .collect();
    let doc = format!(
        "{{\"path\":{},\"version\":[{},{}],\"num_rows\":{},\"fields\":[{}],\"columns\":[{}]}}",
        json_str(path),
        v.major,
        v.minor,
        file.num_rows(),
        fields.join(","),
        columns.join(",")
    );
    (doc, all_ok)
}

fn sample_columns() -> Vec<ColumnData> {
    let f = |id, name: &str, dt| Field::new(id, name, dt);
    let s = |x: &str| Value::Utf8(x.to_string());
    let vec3 = |xs: [Option<f32>; 3]| Value::Vector(xs.to_vec());
    let present = Value::Struct(vec![]);
    let hidden = |id, name: &str| Field {
        id,
        parent_id: -1,
        name: name.to_string(),
        data_type: DataType::UInt64,
        nullable: false,
    };
    vec![
        ColumnData::new(
            f(0, "i32", DataType::Int32),
            vec![
                Value::Int32(-5),
                Value::Null,
                Value::Int32(i32::MAX),
                Value::Int32(0),
            ],
        ),
        ColumnData::new(
            f(1, "i64", DataType::Int64),
            vec![
                Value::Null,
                Value::Int64(i64::MIN),
                Value::Int64(42),
                Value::Null,
            ],
        ),
        ColumnData::new(
            f(2, "u64", DataType::UInt64),
            vec![
                Value::UInt64(u64::MAX),
                Value::Null,
                Value::UInt64(0),
                Value::UInt64(9),
            ],
        ),
        ColumnData::new(
            f(3, "f32", DataType::Float32),
            vec![
                Value::Float32(0.1),
                Value::Float32(-0.0),
                Value::Null,
                Value::Float32(f32::INFINITY),
            ],
        ),
        ColumnData::new(
            f(4, "f64", DataType::Float64),
            vec![
                Value::Float64(0.1),
                Value::Null,
                Value::Float64(f64::NAN),
                Value::Float64(-1e308),
            ],
        ),
        ColumnData::new(
            f(5, "s", DataType::Utf8),
            vec![s(""), Value::Null, s("héllo \"world\""), s("")],
        ),
        ColumnData::new(f(6, "s_all_null", DataType::Utf8), vec![Value::Null; 4]),
        ColumnData::new(f(7, "i32_all_null", DataType::Int32), vec![Value::Null; 4]),
        ColumnData::new(
            f(8, "b", DataType::Bool),
            vec![
                Value::Bool(true),
                Value::Null,
                Value::Bool(false),
                Value::Bool(true),
            ],
        ),
        ColumnData::new(
            f(9, "v", DataType::FixedSizeList { dimension: 3 }),
            vec![
                vec3([Some(1.0), None, Some(3.5)]),
                Value::Null,
                vec3([Some(0.0), Some(-2.0), Some(1e-3)]),
                Value::Null,
            ],
        ),
        ColumnData::new(f(10, "st", DataType::Struct), vec![present; 4]),
        ColumnData::new(
            Field::child(11, 10, "a", DataType::Int32),
            vec![Value::Int32(1), Value::Null, Value::Int32(3), Value::Null],
        ),
        ColumnData::new(
            Field::child(12, 10, "b", DataType::Utf8),
            vec![s("x"), s(""), Value::Null, Value::Null],
        ),
        ColumnData::new(hidden(-3, "_rowid"), (0..4).map(Value::UInt64).collect()),
        ColumnData::new(
            hidden(-4, "_row_created_at_version"),
            vec![Value::UInt64(1); 4],
        ),
        ColumnData::new(
            hidden(-5, "_row_last_updated_at_version"),
            vec![Value::UInt64(2); 4],
        ),
    ]
}

/// The columns as given to the writer, as one JSON document (the 2.2 check's expectation).
fn written_doc(path: &str, version: DataFileVersion, columns: &[ColumnData]) -> String {
    let docs: Vec<String> = columns
        .iter()
        .map(|c| {
            let values: Vec<String> = c.values.iter().map(json_value).collect();
            format!(
                "{{\"id\":{},\"parent_id\":{},\"name\":{},\"logical_type\":{},\"values\":[{}]}}",
                c.field.id,
                c.field.parent_id,
                json_str(&c.field.name),
                json_str(&c.field.data_type.logical_type()),
                values.join(",")
            )
        })
        .collect();
    let v = version.footer();
    let rows = columns.iter().map(|c| c.values.len()).max().unwrap_or(0);
    format!(
        "{{\"path\":{},\"version\":[{},{}],\"num_rows\":{rows},\"columns\":[{}]}}",
        json_str(path),
        v.major,
        v.minor,
        docs.join(",")
    )
}

/// 6,000 rows (several mini-block chunks per column in 2.2), strings up to 40 KiB (chunks of
/// two values), a 64-wide vector and a struct without NULLs.
/// 6,000 rows in several chunks; every 1000th string is `long` bytes (40,000 in v2.2; v2.1's
/// u16 chunk grammar holds at most 32 KiB per chunk, so its sample takes 4,000).
fn large_columns(long: usize) -> Vec<ColumnData> {
    let n = 6000usize;
    let f = |id, name: &str, dt| Field::new(id, name, dt);
    let text = |i: usize| match i % 1000 {
        7 => "L".repeat(long),
        _ => format!("row {i} {}", "x".repeat(i % 37)),
    };
    vec![
        ColumnData::new(
            f(0, "i64", DataType::Int64),
            (0..n)
                .map(|i| {
                    if i % 13 == 5 {
                        Value::Null
                    } else {
                        Value::Int64(i as i64 * 1_000_003 - 7)
                    }
                })
                .collect(),
        ),
        ColumnData::new(
            f(1, "s", DataType::Utf8),
            (0..n)
                .map(|i| {
                    if i % 11 == 3 {
                        Value::Null
                    } else {
                        Value::Utf8(text(i))
                    }
                })
                .collect(),
        ),
        ColumnData::new(
            f(2, "b", DataType::Bool),
            (0..n).map(|i| Value::Bool(i % 3 == 0)).collect(),
        ),
        ColumnData::new(
            f(3, "v64", DataType::FixedSizeList { dimension: 64 }),
            (0..n)
                .map(|i| {
                    if i % 17 == 0 {
                        Value::Null
                    } else {
                        Value::Vector((0..64).map(|k| Some((i * 64 + k) as f32 / 8.0)).collect())
                    }
                })
                .collect(),
        ),
        ColumnData::new(f(4, "st", DataType::Struct), vec![Value::Struct(vec![]); n]),
        ColumnData::new(
            Field::child(5, 4, "x", DataType::Float32),
            (0..n).map(|i| Value::Float32(i as f32 * 0.5)).collect(),
        ),
        ColumnData::new(
            Field {
                id: -3,
                parent_id: -1,
                name: "_rowid".into(),
                data_type: DataType::UInt64,
                nullable: false,
            },
            (0..n as u64).map(|i| Value::UInt64(i << 32 | 7)).collect(),
        ),
    ]
}

fn ragged_columns() -> Vec<ColumnData> {
    vec![
        ColumnData::new(Field::new(0, "one", DataType::Int64), vec![Value::Int64(7)]),
        ColumnData::new(
            Field::new(1, "three", DataType::Utf8),
            vec![
                Value::Utf8("a".into()),
                Value::Null,
                Value::Utf8("c".into()),
            ],
        ),
        ColumnData::new(Field::new(2, "empty", DataType::Float64), vec![]),
    ]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("read") => {
            let types = args.get(3).map(|t| {
                t.split(',')
                    .map(|x| DataType::from_logical_type(x).expect("logical type"))
                    .collect()
            });
            let (doc, ok) = dump(&args[2], types);
            println!("{doc}");
            if !ok {
                std::process::exit(2)
            }
        }
        Some("write-sample") => {
            let dir = &args[2];
            let version = args.get(3).map_or(DataFileVersion::V2_0, |v| {
                DataFileVersion::from_name(v).expect("version 2.0, 2.1 or 2.2")
            });
            let mut files = vec![
                ("sample.lance", sample_columns()),
                ("ragged.lance", ragged_columns()),
            ];
            match version {
                DataFileVersion::V2_0 => {}
                DataFileVersion::V2_1 => files.push(("large.lance", large_columns(4_000))),
                DataFileVersion::V2_2 => files.push(("large.lance", large_columns(40_000))),
            }
            for (name, columns) in files {
                let path = format!("{dir}/{name}");
                let bytes = write_data_file_in(version, &columns, &FileExtras::default()).unwrap();
                std::fs::write(&path, bytes).unwrap();
                match version {
                    DataFileVersion::V2_0 => {
                        let (doc, ok) = dump(&path, None);
                        assert!(ok, "the kit refuses its own sample: {doc}");
                        println!("{doc}");
                    }
                    // The columns as given to the writer (struct columns included), which
                    // datafile_roundtrip.py compares with pylance's read of the file.
                    DataFileVersion::V2_1 | DataFileVersion::V2_2 => {
                        println!("{}", written_doc(&path, version, &columns))
                    }
                }
            }
        }
        _ => {
            eprintln!(
                "usage: datafile_dump read FILE [TYPES] | datafile_dump write-sample DIR [2.0|2.1|2.2]"
            );
            std::process::exit(1)
        }
    }
}
