//! Lance-written v2.1 and v2.2 data files (`tests/data/lance14_v2x/`, written by pylance
//! 14.0.2 with `tests/interop/make_datafile_goldens_v2x.py`) decode to exactly what Lance reads
//! back from them, cell for cell: every leaf column, and the validity of every struct.
#![allow(clippy::unwrap_used, clippy::panic, clippy::expect_used)]

use std::path::PathBuf;

use lance_reference::model::{Column, DataType, Value};
use lance_reference_io::data_file::{DataFileContents, read_data_file};
use serde_json::Value as Json;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/lance14_v2x")
}

/// The stems of the golden files (`v2_1_10`, ...), in a fixed order.
fn stems() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".lance").map(str::to_string)
        })
        .collect();
    out.sort();
    out
}

fn data_type(arrow: &str) -> DataType {
    match arrow {
        "int32" => DataType::Int32,
        "int64" => DataType::Int64,
        "uint64" => DataType::UInt64,
        "float" => DataType::Float32,
        "double" => DataType::Float64,
        "string" => DataType::Utf8,
        "bool" => DataType::Bool,
        other => {
            let dim = other
                .strip_prefix("fixed_size_list<item: float>[")
                .and_then(|s| s.strip_suffix(']'))
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("type {other}"));
            DataType::FixedSizeList { dimension: dim }
        }
    }
}

/// A cell as the JSON holds it (floats as decimal strings, parsed exactly).
fn expected(v: &Json, t: &DataType) -> Value {
    if v.is_null() {
        return Value::Null;
    }
    match t {
        DataType::Int32 => Value::Int32(v.as_i64().unwrap() as i32),
        DataType::Int64 => Value::Int64(v.as_i64().unwrap()),
        DataType::UInt64 => Value::UInt64(v.as_u64().unwrap()),
        DataType::Float32 => Value::Float32(v.as_str().unwrap().parse().unwrap()),
        DataType::Float64 => Value::Float64(v.as_str().unwrap().parse().unwrap()),
        DataType::Utf8 => Value::Utf8(v.as_str().unwrap().to_string()),
        DataType::Bool => Value::Bool(v.as_bool().unwrap()),
        DataType::FixedSizeList { .. } => Value::Vector(
            v.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().map(|f| f.parse().unwrap()))
                .collect(),
        ),
        other => panic!("type {other:?}"),
    }
}

/// True when a page of the column needs a kernel this build may not have.
fn needs_kernel(pages: &Json) -> bool {
    pages.as_array().unwrap().iter().any(|p| {
        let p = p.as_str().unwrap();
        [
            "InlineBitpacking",
            "OutOfLineBitpacking",
            "Fsst",
            "ByteStreamSplit",
        ]
        .iter()
        .any(|k| p.contains(k))
    })
}

/// Checks every column of one golden file; returns how many columns used a bit-unpacking,
/// FSST or byte-stream-split kernel.
fn check_file(stem: &str) -> usize {
    let bytes = std::fs::read(dir().join(format!("{stem}.lance"))).unwrap();
    let doc: Json =
        serde_json::from_str(&std::fs::read_to_string(dir().join(format!("{stem}.json"))).unwrap())
            .unwrap();
    let file: DataFileContents = read_data_file(&bytes, stem).unwrap();
    let columns = doc["columns"].as_array().unwrap();
    assert_eq!(file.num_columns(), columns.len(), "{stem}");
    assert!(file.is_structural());
    let rows = doc["rows"].as_u64().unwrap();
    assert_eq!(file.num_rows(), rows);
    let mut kernels = 0;
    for (i, c) in columns.iter().enumerate() {
        let path = c["path"].as_str().unwrap();
        let t = data_type(c["type"].as_str().unwrap());
        let field = file.column_field(i).unwrap();
        assert_eq!(
            path.rsplit('.').next().unwrap(),
            field.name,
            "{stem}: column {i}"
        );
        match file.column_array(i, &t) {
            Ok(array) => {
                let got = Column::new(array).values();
                let want: Vec<Value> = c["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| expected(v, &t))
                    .collect();
                assert_eq!(got.len(), want.len(), "{stem}: {path}");
                for (row, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(g.identical(w), "{stem}: {path} row {row}: {g:?} != {w:?}");
                }
                kernels += usize::from(needs_kernel(&c["pages"]));
            }
            Err(e) => panic!("{stem}: {path} ({}): {e}", c["pages"]),
        }
        // Struct validity, outermost first, for leaves inside a struct.
        let validity = file.struct_validity(i);
        let parents: Vec<&str> = path.split('.').collect();
        match validity {
            Ok(v) => {
                assert_eq!(v.len(), parents.len() - 1, "{stem}: {path}");
                for (k, nulls) in v.iter().enumerate() {
                    let name = parents[..=k].join(".");
                    let want: Vec<bool> = doc["structs"][&name]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|b| b.as_bool().unwrap())
                        .collect();
                    let got: Vec<bool> = (0..rows as usize)
                        .map(|r| nulls.as_ref().is_none_or(|n| n.is_valid(r)))
                        .collect();
                    assert_eq!(got, want, "{stem}: struct {name} around {path}");
                }
            }
            Err(e) => panic!("{stem}: {path}: struct validity: {e}"),
        }
    }
    kernels
}

#[test]
fn lance_written_v2_1_and_v2_2_files_decode_cell_for_cell() {
    let stems = stems();
    assert_eq!(stems.len(), 8, "{stems:?}");
    let kernels: usize = stems.iter().map(|s| check_file(s)).sum();
    // Bit unpacking occurs from 100 rows on (levels, values, dictionary indices).
    assert!(kernels >= 20, "{kernels} columns used a kernel");
}

#[test]
fn struct_parents_have_no_column_in_v2_1_plus() {
    let bytes = std::fs::read(dir().join("v2_2_10.lance")).unwrap();
    let file = read_data_file(&bytes, "v2_2_10").unwrap();
    let st = file.schema().iter().find(|f| f.name == "st").unwrap();
    assert_eq!(st.logical_type, "struct");
    assert_eq!(file.field_column(st.id), None);
    let a = file.schema().iter().find(|f| f.name == "a").unwrap();
    let col = file.field_column(a.id).unwrap();
    assert_eq!(file.column_field(col).unwrap().id, a.id);
    // Asking for a struct column's values is a type mismatch, not a misread.
    let e = file.column_array(col, &DataType::Struct).unwrap_err();
    assert_eq!(e.code(), "encoding_type_mismatch");
}

#[test]
fn a_boolean_constant_is_a_one_byte_bitmap() {
    // What the BTree writer of Lance 14 stores in a 2.2 `page_lookup.lance` (min/max of a
    // boolean column): a constant page whose inline value is a length-1 BooleanArray's bitmap.
    // Read as an 8-bit value it is refused as Boolean; read as a bitmap it is the value.
    let bytes = std::fs::read(dir().join("v2_2_bool.lance")).unwrap();
    let file = read_data_file(&bytes, "v2_2_bool").unwrap();
    for (col, want) in [(0, Some(true)), (1, Some(false)), (2, Some(true))] {
        let pages = file.page_summaries(col).unwrap();
        assert!(
            pages.iter().all(|p| p.encoding.starts_with("constant(")),
            "{pages:?}"
        );
        let values = file.column(col, &DataType::Bool).unwrap();
        assert!(
            values
                .iter()
                .any(|v| *v == want.map_or(Value::Null, Value::Bool))
        );
        assert!(
            values
                .iter()
                .all(|v| *v == Value::Null || Some(v) == want.map(Value::Bool).as_ref())
        );
    }
}

#[test]
fn constant_pages_of_an_update_hold_strings_in_value_buffers() {
    // What `LanceDataset.update` wrote (README): `city` all 'Rome' (one buffer, the value),
    // `nick` 'anon' or NULL (value, empty repetition, definition), `age` 7 or NULL (inline
    // value, repetition, definition).
    let bytes = std::fs::read(dir().join("v2_2_update.lance")).unwrap();
    let file = read_data_file(&bytes, "v2_2_update").unwrap();
    let buffers = |col: usize| -> Vec<usize> {
        let pages = file.page_summaries(col).unwrap();
        assert!(
            pages.iter().all(|p| p.encoding.starts_with("constant(")),
            "{pages:?}"
        );
        pages.iter().map(|p| p.buffers).collect()
    };
    assert_eq!(buffers(1), [1]);
    assert_eq!(buffers(2), [3]);
    assert_eq!(buffers(3), [2]);
    let rows = file.num_rows() as usize;
    assert_eq!(rows, 80);
    let city = file.column(1, &DataType::Utf8).unwrap();
    assert!(city.iter().all(|v| *v == Value::Utf8("Rome".into())));
    let nick = file.column(2, &DataType::Utf8).unwrap();
    let nulls = nick.iter().filter(|v| **v == Value::Null).count();
    assert!(nulls > 0 && nulls < rows, "{nulls}");
    assert!(
        nick.iter()
            .all(|v| *v == Value::Null || *v == Value::Utf8("anon".into()))
    );
}
