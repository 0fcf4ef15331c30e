//! Target `data_file`: bytes -> `read_data_file`, then every column decoded as every type a
//! manifest could give its field.
//!
//! Properties: no panic, and memory stays bounded (the runs use `-malloc_limit_mb`, so a
//! decoder that allocates for a count the file has not backed is a crash); a decoded column
//! holds exactly `column_rows` values; a column that decodes is written back by
//! `write_data_file` and reads back to identical values.
//!
//! Columns and fields are paired through `column_field` / `field_column`, never by position in
//! the schema: in v2.1+ a struct parent has no column (only leaves do), so column `i` is not
//! `schema()[i]` there. For each column the check also decodes the type its own field declares
//! (what a manifest would give it), asks for its struct validity (one entry per enclosing
//! struct, each of the column's length), and, in v2.1+, requires that a struct field has no
//! column, that no column decodes as a struct, and that `field_column` finds the column of each
//! leaf whose id is unique.

use lance_reference::model::{DataType, Field, Value};
use lance_reference_io::data_file::{ColumnData, read_data_file, write_data_file};

/// Columns tried per file: decoding each costs up to `MAX_DECODED_VALUES` values per type.
const MAX_COLUMNS: usize = 16;

pub fn check(data: &[u8]) {
    let Ok(file) = read_data_file(data, "fuzz.lance") else {
        return;
    };
    let mut types = vec![
        DataType::Bool,
        DataType::Int32,
        DataType::Int64,
        DataType::UInt64,
        DataType::Float32,
        DataType::Float64,
        DataType::Utf8,
        DataType::Struct,
        DataType::FixedSizeList { dimension: 1 },
        DataType::FixedSizeList { dimension: 2 },
    ];
    // The dimensions the file itself declares, so its own vectors get decoded too.
    for field in file.schema() {
        if let Some(t @ DataType::FixedSizeList { .. }) =
            DataType::from_logical_type(&field.logical_type)
        {
            if !types.contains(&t) {
                types.push(t);
            }
        }
    }
    let structural = file.is_structural();
    if structural {
        for field in file.schema() {
            if field.logical_type == "struct" {
                assert_eq!(
                    file.field_column(field.id),
                    None,
                    "v2.1+ struct field {} has a column",
                    field.id
                );
            }
        }
    }
    for index in 0..file.num_columns().min(MAX_COLUMNS) {
        let rows = file
            .column_rows(index)
            .expect("column index below num_columns");
        assert!(file.page_summaries(index).is_some());
        let own = file.column_field(index).map(|field| {
            let unique = file.schema().iter().filter(|f| f.id == field.id).count() == 1;
            if unique {
                assert_eq!(
                    file.field_column(field.id),
                    Some(index),
                    "column {index} holds field {} but field_column names another",
                    field.id
                );
            }
            if structural {
                assert_ne!(
                    field.logical_type, "struct",
                    "v2.1+ column {index} is a struct"
                );
            }
            DataType::from_logical_type(&field.logical_type)
        });
        if structural {
            assert!(
                file.column_field(index).is_some(),
                "v2.1+ column {index} has no field"
            );
            if let Ok(layers) = file.struct_validity(index) {
                for nulls in layers.iter().flatten() {
                    assert_eq!(
                        nulls.len() as u64,
                        rows,
                        "column {index}: struct validity of another length"
                    );
                }
            }
        }
        let mut tried = types.clone();
        if let Some(Some(t)) = own {
            if !tried.contains(&t) {
                tried.push(t);
            }
        }
        for data_type in &tried {
            let decoded = file.column(index, data_type);
            if structural && *data_type == DataType::Struct {
                assert!(decoded.is_err(), "v2.1+ column {index} decoded as a struct");
            }
            let Ok(values) = decoded else {
                continue;
            };
            assert_eq!(
                values.len() as u64,
                rows,
                "column {index} as {data_type:?}: wrong length"
            );
            for v in &values {
                assert!(
                    v.fits(data_type),
                    "column {index}: decoded {v:?} as {data_type:?}"
                );
            }
            if *data_type != DataType::Struct {
                round_trip(data_type, values);
            }
        }
    }
}

/// Writes one decoded column and reads it back.
fn round_trip(data_type: &DataType, values: Vec<Value>) {
    let column = ColumnData::new(Field::new(0, "c", data_type.clone()), values);
    let Ok(bytes) = write_data_file(std::slice::from_ref(&column)) else {
        return;
    };
    let file = read_data_file(&bytes, "rewrite.lance").expect("written file reads back");
    let back = file.column(0, data_type).expect("written column decodes");
    assert_eq!(
        back.len(),
        column.values.len(),
        "rewrite changed the row count"
    );
    for (row, (a, b)) in column.values.iter().zip(&back).enumerate() {
        assert!(a.identical(b), "rewrite changed row {row}: {a:?} -> {b:?}");
    }
}
