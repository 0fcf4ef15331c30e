//! Tests of the v2.0 data file writer and reader: round trips, byte-level layouts checked
//! against the Lance 14 facts, golden files written by pylance 14.0.2, refusals and a
//! property test that no byte sequence makes the reader panic.

use proptest::prelude::*;
use prost::Message;

use super::any::{ARRAY_ENCODING_URL, Any, COLUMN_ENCODING_URL};
use super::container::{Extent, FOOTER_LEN, FileVersion, Footer, Region, offset_table_bytes};
use super::page_encode::{bitmap, encode_page};
use super::*;
use enc::array_encoding::ArrayEncoding as Arm;
use lance_reference::error::ErrorClass;
use lance_reference::model::{DataType, Field, Value};
use lance_reference::proto::lance::encodings as enc;
use lance_reference::proto::lance::file as pbf;
use lance_reference::proto::lance::file::v2 as pb2;

const GOLDEN_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/lance14_files");

fn golden(name: &str) -> Vec<u8> {
    std::fs::read(format!("{GOLDEN_DIR}/{name}")).unwrap()
}

fn field(id: i32, name: &str, data_type: DataType) -> Field {
    Field::new(id, name, data_type)
}

fn child(id: i32, parent: i32, name: &str, data_type: DataType) -> Field {
    Field::child(id, parent, name, data_type)
}

fn i32s(xs: &[Option<i32>]) -> Vec<Value> {
    xs.iter()
        .map(|x| x.map_or(Value::Null, Value::Int32))
        .collect()
}

fn strs(xs: &[Option<&str>]) -> Vec<Value> {
    xs.iter()
        .map(|x| x.map_or(Value::Null, |s| Value::Utf8(s.to_string())))
        .collect()
}

fn vector(xs: &[Option<f32>]) -> Value {
    Value::Vector(xs.to_vec())
}

fn same(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.identical(y))
}

/// Writes, reads back every column with its field's type, and checks the values and schema.
fn assert_round_trip(columns: &[ColumnData]) -> Vec<u8> {
    let bytes = write_data_file(columns).unwrap();
    let file = read_data_file(&bytes, "rt.lance").unwrap();
    assert_eq!(file.num_columns(), columns.len());
    let longest = columns
        .iter()
        .map(|c| c.values.len() as u64)
        .max()
        .unwrap_or(0);
    assert_eq!(file.num_rows(), longest);
    for (i, c) in columns.iter().enumerate() {
        let got = file.column(i, &c.field.data_type).unwrap();
        assert!(
            same(&got, &c.values),
            "column {i}: wrote {:?}, read {:?}",
            c.values,
            got
        );
        let f = &file.schema()[i];
        assert_eq!(
            (f.id, f.parent_id, f.name.as_str()),
            (c.field.id, c.field.parent_id, c.field.name.as_str())
        );
        assert_eq!(f.logical_type, c.field.data_type.logical_type());
        assert_eq!(f.nullable, c.field.nullable);
    }
    bytes
}

// ---------------------------------------------------------------------------------------
// Round trips

#[test]
fn round_trip_every_type_with_nulls() {
    assert_round_trip(&[
        ColumnData::new(
            field(0, "i32", DataType::Int32),
            i32s(&[Some(1), None, Some(i32::MIN)]),
        ),
        ColumnData::new(
            field(1, "i64", DataType::Int64),
            vec![Value::Int64(i64::MAX), Value::Null, Value::Int64(-7)],
        ),
        ColumnData::new(
            field(2, "u64", DataType::UInt64),
            vec![Value::Null, Value::UInt64(u64::MAX), Value::UInt64(0)],
        ),
        ColumnData::new(
            field(3, "f32", DataType::Float32),
            vec![Value::Float32(f32::NAN), Value::Float32(-0.0), Value::Null],
        ),
        ColumnData::new(
            field(4, "f64", DataType::Float64),
            vec![
                Value::Float64(1e300),
                Value::Null,
                Value::Float64(f64::NEG_INFINITY),
            ],
        ),
        ColumnData::new(
            field(5, "s", DataType::Utf8),
            strs(&[Some(""), None, Some("ünï")]),
        ),
        ColumnData::new(
            field(6, "b", DataType::Bool),
            vec![Value::Bool(false), Value::Null, Value::Bool(true)],
        ),
        ColumnData::new(
            field(7, "v", DataType::FixedSizeList { dimension: 2 }),
            vec![
                vector(&[Some(1.0), None]),
                Value::Null,
                vector(&[Some(-2.5), Some(0.0)]),
            ],
        ),
    ]);
}

#[test]
fn round_trip_all_null_and_no_null_columns() {
    let all_null = vec![Value::Null; 5];
    for dt in [
        DataType::Int32,
        DataType::Int64,
        DataType::UInt64,
        DataType::Float32,
        DataType::Float64,
        DataType::Utf8,
        DataType::Bool,
        DataType::FixedSizeList { dimension: 3 },
    ] {
        assert_round_trip(&[ColumnData::new(field(0, "n", dt.clone()), all_null.clone())]);
    }
    assert_round_trip(&[ColumnData::new(
        field(0, "s", DataType::Utf8),
        strs(&[Some(""), Some("")]),
    )]);
    assert_round_trip(&[ColumnData::new(
        field(0, "b", DataType::Bool),
        vec![Value::Bool(true); 17],
    )]);
}

#[test]
fn round_trip_empty_columns() {
    let bytes = assert_round_trip(&[
        ColumnData::new(field(0, "a", DataType::Int32), vec![]),
        ColumnData::new(field(1, "s", DataType::Utf8), vec![]),
        ColumnData::new(field(2, "st", DataType::Struct), vec![]),
    ]);
    let file = read_data_file(&bytes, "empty.lance").unwrap();
    // Lance writes no page for an empty leaf column but always a struct header page.
    assert_eq!(file.page_summaries(0).unwrap().len(), 0);
    assert_eq!(file.page_summaries(2).unwrap().len(), 1);
}

#[test]
fn round_trip_vectors_with_null_rows_and_null_items() {
    let dt = DataType::FixedSizeList { dimension: 3 };
    assert_round_trip(&[ColumnData::new(
        field(0, "v", dt.clone()),
        vec![
            Value::Null,
            vector(&[None, None, None]),
            vector(&[Some(1.0), Some(2.0), Some(3.0)]),
        ],
    )]);
    // Every item of every present row NULL and no NULL row: the items are all_nulls.
    let bytes = assert_round_trip(&[ColumnData::new(
        field(0, "v", dt),
        vec![vector(&[None, None, None])],
    )]);
    let file = read_data_file(&bytes, "v.lance").unwrap();
    assert_eq!(
        file.page_summaries(0).unwrap()[0].encoding,
        "nullable.no_nulls(fixed_size_list(3, nullable.all_nulls))"
    );
}

#[test]
fn round_trip_struct_with_null_children() {
    let present = vec![Value::Struct(vec![]); 3];
    assert_round_trip(&[
        ColumnData::new(field(0, "st", DataType::Struct), present.clone()),
        ColumnData::new(
            child(1, 0, "a", DataType::Int32),
            i32s(&[None, Some(2), None]),
        ),
        ColumnData::new(child(2, 0, "inner", DataType::Struct), present),
        ColumnData::new(child(3, 2, "s", DataType::Utf8), strs(&[None, None, None])),
        ColumnData::new(
            field(4, "after", DataType::Bool),
            vec![Value::Bool(true); 3],
        ),
    ]);
}

#[test]
fn round_trip_columns_of_different_lengths() {
    let bytes = assert_round_trip(&[
        ColumnData::new(field(0, "short", DataType::Int32), i32s(&[Some(1)])),
        ColumnData::new(
            field(1, "long", DataType::Utf8),
            strs(&[Some("a"), None, Some("b"), Some("c")]),
        ),
        ColumnData::new(field(2, "none", DataType::Int64), vec![]),
    ]);
    let file = read_data_file(&bytes, "ragged.lance").unwrap();
    assert_eq!(file.num_rows(), 4);
    assert_eq!(file.column_rows(0), Some(1));
    assert_eq!(file.column_rows(1), Some(4));
    assert_eq!(file.column_rows(2), Some(0));
}

#[test]
fn round_trip_hidden_lineage_columns() {
    // covers: LIN-COL-1
    let hidden = |id, name: &str| Field {
        id,
        parent_id: -1,
        name: name.to_string(),
        data_type: DataType::UInt64,
        nullable: false,
    };
    let bytes = assert_round_trip(&[
        ColumnData::new(hidden(-3, "_rowid"), (0..4).map(Value::UInt64).collect()),
        ColumnData::new(
            hidden(-4, "_row_created_at_version"),
            vec![Value::UInt64(1); 4],
        ),
        ColumnData::new(
            hidden(-5, "_row_last_updated_at_version"),
            vec![Value::UInt64(3); 4],
        ),
    ]);
    let file = read_data_file(&bytes, "lineage.lance").unwrap();
    let ids: Vec<i32> = file.schema().iter().map(|f| f.id).collect();
    assert_eq!(ids, [-3, -4, -5]);
    assert!(
        file.schema()
            .iter()
            .all(|f| !f.nullable && f.logical_type == "uint64")
    );
}

#[test]
fn writing_is_deterministic() {
    let cols = [ColumnData::new(
        field(0, "s", DataType::Utf8),
        strs(&[Some("x"), None]),
    )];
    assert_eq!(
        write_data_file(&cols).unwrap(),
        write_data_file(&cols).unwrap()
    );
}

// ---------------------------------------------------------------------------------------
// Byte-level checks against the facts sheet

fn flat_of(e: &enc::ArrayEncoding) -> (u64, u32) {
    match &e.array_encoding {
        Some(Arm::Flat(f)) => (f.bits_per_value, f.buffer.as_ref().unwrap().buffer_index),
        other => panic!("expected flat, got {other:?}"),
    }
}

#[test]
fn utf8_page_matches_facts_example() {
    let page = encode_page(&DataType::Utf8, &strs(&[Some("a"), None, Some("ccc")])).unwrap();
    let ends: Vec<u8> = [1u64, 6, 4].iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(page.buffers, vec![ends, b"accc".to_vec()]);
    let Some(Arm::Binary(b)) = &page.encoding.array_encoding else {
        panic!("not binary")
    };
    assert_eq!(b.null_adjustment, 5);
    let Some(Arm::Nullable(n)) = &b.indices.as_ref().unwrap().array_encoding else {
        panic!()
    };
    let Some(enc::nullable::Nullability::NoNulls(nn)) = &n.nullability else {
        panic!()
    };
    assert_eq!(flat_of(nn.values.as_ref().unwrap()), (64, 0));
    assert_eq!(flat_of(b.bytes.as_ref().unwrap()), (8, 1));
}

#[test]
fn nullable_page_matches_facts_layout() {
    let page = encode_page(&DataType::Int32, &i32s(&[Some(1), None, Some(3)])).unwrap();
    assert_eq!(page.buffers[0], vec![0x05]);
    assert_eq!(
        page.buffers[1],
        [1i32, 0, 3]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect::<Vec<_>>()
    );
    let Some(Arm::Nullable(n)) = &page.encoding.array_encoding else {
        panic!()
    };
    let Some(enc::nullable::Nullability::SomeNulls(s)) = &n.nullability else {
        panic!()
    };
    assert_eq!(flat_of(s.validity.as_ref().unwrap()), (1, 0));
    assert_eq!(flat_of(s.values.as_ref().unwrap()), (32, 1));
    // The empty Buffer message for index 0 is still present on the wire (`12 00`).
    let wire = s.validity.as_ref().unwrap().encode_to_vec();
    assert_eq!(wire, vec![0x0a, 0x04, 0x08, 0x01, 0x12, 0x00]);
    // All NULL: no buffers at all.
    let page = encode_page(&DataType::Int64, &[Value::Null, Value::Null]).unwrap();
    assert!(page.buffers.is_empty());
    assert_eq!(page::describe(&page.encoding), "nullable.all_nulls");
}

mod page {
    pub(super) use super::super::page_decode::describe;
}

#[test]
fn bitmaps_are_lsb_first() {
    assert_eq!(bitmap(&[true, false, true]), vec![0x05]);
    let mut nine = vec![false; 9];
    nine[8] = true;
    nine[7] = true;
    assert_eq!(bitmap(&nine), vec![0x80, 0x01]);
}

#[test]
fn footer_and_tables_follow_lance_layout() {
    let bytes = write_data_file(&[
        ColumnData::new(field(0, "a", DataType::Int32), i32s(&[Some(1)])),
        ColumnData::new(field(1, "b", DataType::Int32), i32s(&[Some(2)])),
    ])
    .unwrap();
    let n = bytes.len();
    let footer = &bytes[n - FOOTER_LEN..];
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let (cms, cmo, gbo) = (u64_at(footer, 0), u64_at(footer, 8), u64_at(footer, 16));
    assert_eq!(&footer[24..28], &1u32.to_le_bytes()); // one global buffer
    assert_eq!(&footer[28..32], &2u32.to_le_bytes()); // two columns
    assert_eq!(&footer[32..36], &[0, 0, 3, 0]); // version (0,3)
    assert_eq!(&footer[36..], b"LANC");
    assert_eq!(gbo - cmo, 32);
    assert_eq!(gbo as usize + 16, n - FOOTER_LEN);
    // Page buffers are padded to 64 bytes with 'H'; global buffer 0 follows, before the
    // column metadata, which starts right after it.
    assert_eq!(&bytes[4..64], &[0x48; 60][..]);
    let (g_pos, g_size) = (
        u64_at(&bytes, gbo as usize),
        u64_at(&bytes, gbo as usize + 8),
    );
    assert_eq!(g_pos, 128);
    assert_eq!(g_pos + g_size, cms);
    let descriptor = pbf::FileDescriptor::decode(&bytes[g_pos as usize..cms as usize]).unwrap();
    assert_eq!(descriptor.length, 1);
    // CMO entries tile the column metadata region.
    let (c0, s0) = (
        u64_at(&bytes, cmo as usize),
        u64_at(&bytes, cmo as usize + 8),
    );
    let (c1, s1) = (
        u64_at(&bytes, cmo as usize + 16),
        u64_at(&bytes, cmo as usize + 24),
    );
    assert_eq!((c0, c0 + s0, c1 + s1), (cms, c1, cmo));
}

// ---------------------------------------------------------------------------------------
// Golden files written by pylance 14.0.2 (see tests/data/lance14_files/README.md)

fn int_utf8_columns() -> Vec<ColumnData> {
    vec![
        ColumnData::new(
            field(0, "a", DataType::Int32),
            i32s(&[Some(1), None, Some(3)]),
        ),
        ColumnData::new(
            field(1, "s", DataType::Utf8),
            strs(&[Some("a"), None, Some("ccc")]),
        ),
    ]
}

fn fixed_width_columns() -> Vec<ColumnData> {
    vec![
        ColumnData::new(
            field(0, "i32", DataType::Int32),
            i32s(&[Some(-1), None, Some(i32::MAX), Some(0)]),
        ),
        ColumnData::new(
            field(1, "i64", DataType::Int64),
            vec![
                Value::Null,
                Value::Int64(i64::MIN),
                Value::Int64(5),
                Value::Null,
            ],
        ),
        ColumnData::new(
            field(2, "u64", DataType::UInt64),
            [u64::MAX, 0, 7, 1].into_iter().map(Value::UInt64).collect(),
        ),
        ColumnData::new(
            field(3, "f32", DataType::Float32),
            vec![
                Value::Float32(1.5),
                Value::Null,
                Value::Float32(f32::NEG_INFINITY),
                Value::Float32(-0.0),
            ],
        ),
        ColumnData::new(field(4, "f64", DataType::Float64), vec![Value::Null; 4]),
        ColumnData::new(
            field(5, "b", DataType::Bool),
            vec![
                Value::Bool(true),
                Value::Null,
                Value::Bool(false),
                Value::Bool(true),
            ],
        ),
    ]
}

fn nested_columns() -> Vec<ColumnData> {
    let present = vec![Value::Struct(vec![]); 3];
    vec![
        ColumnData::new(
            field(0, "s", DataType::Utf8),
            strs(&[Some(""), None, Some("héllo")]),
        ),
        ColumnData::new(field(1, "n", DataType::Utf8), vec![Value::Null; 3]),
        ColumnData::new(
            field(2, "v", DataType::FixedSizeList { dimension: 3 }),
            vec![
                vector(&[Some(1.0), None, Some(3.0)]),
                Value::Null,
                vector(&[Some(7.0), Some(8.0), Some(9.0)]),
            ],
        ),
        ColumnData::new(field(3, "st", DataType::Struct), present),
        ColumnData::new(
            child(4, 3, "a", DataType::Int32),
            i32s(&[Some(1), None, Some(3)]),
        ),
        ColumnData::new(
            child(5, 3, "b", DataType::Utf8),
            strs(&[Some("x"), Some(""), None]),
        ),
    ]
}

fn assert_golden_reads_as(name: &str, expected: &[ColumnData]) {
    let bytes = golden(name);
    let file = read_data_file(&bytes, name).unwrap();
    assert_eq!(file.num_columns(), expected.len(), "{name}");
    for (i, c) in expected.iter().enumerate() {
        let got = file.column(i, &c.field.data_type).unwrap();
        assert!(
            same(&got, &c.values),
            "{name} column {i}: expected {:?}, read {:?}",
            c.values,
            got
        );
        let f = &file.schema()[i];
        assert_eq!(
            (f.id, f.parent_id, f.name.as_str()),
            (c.field.id, c.field.parent_id, c.field.name.as_str())
        );
    }
}

#[test]
fn reads_pylance_golden_files() {
    assert_golden_reads_as("int_utf8.lance", &int_utf8_columns());
    assert_golden_reads_as("fixed_width.lance", &fixed_width_columns());
    assert_golden_reads_as("nested.lance", &nested_columns());
}

#[test]
fn writes_the_same_bytes_as_pylance() {
    for (name, columns) in [
        ("int_utf8.lance", int_utf8_columns()),
        ("fixed_width.lance", fixed_width_columns()),
        ("nested.lance", nested_columns()),
    ] {
        let ours = write_data_file(&columns).unwrap();
        let theirs = golden(name);
        let first_difference = ours.iter().zip(&theirs).position(|(a, b)| a != b);
        assert!(
            ours == theirs,
            "{name}: {} vs {} bytes, first difference at {first_difference:?}",
            ours.len(),
            theirs.len()
        );
    }
}

#[test]
fn reads_pylance_dictionary_strings() {
    let bytes = golden("dictionary.lance");
    let file = read_data_file(&bytes, "dictionary.lance").unwrap();
    let summary = file.page_summaries(0).unwrap();
    assert_eq!(summary.len(), 1);
    assert!(
        summary[0].encoding.starts_with("dictionary("),
        "{}",
        summary[0].encoding
    );
    let expected: Vec<Value> = (0..120)
        .map(|i| strs(&[Some("red"), Some("green"), None, Some("blue")])[i % 4].clone())
        .collect();
    assert!(same(&file.column(0, &DataType::Utf8).unwrap(), &expected));
}

#[test]
fn reads_pylance_multi_page_columns() {
    let bytes = golden("multipage.lance");
    let file = read_data_file(&bytes, "multipage.lance").unwrap();
    assert_eq!(file.page_summaries(0).unwrap().len(), 3);
    assert_eq!(file.page_summaries(1).unwrap().len(), 3);
    let x: Vec<Value> = (0..3)
        .flat_map(|k| {
            (0..10).map(move |i| {
                if i == 2 {
                    Value::Null
                } else {
                    Value::Int64(k * 10 + i)
                }
            })
        })
        .collect();
    let s: Vec<Value> = (0..3)
        .flat_map(|k| (0..10).map(move |i| Value::Utf8(format!("r{k}-{i}"))))
        .collect();
    assert!(same(&file.column(0, &DataType::Int64).unwrap(), &x));
    assert!(same(&file.column(1, &DataType::Utf8).unwrap(), &s));
}

#[test]
fn reads_pylance_v2_1_file() {
    // covers: DS-FILE-3
    let bytes = golden("v2_1.lance");
    let file = read_data_file(&bytes, "v2_1.lance").unwrap();
    assert_eq!(file.version(), FileVersion { major: 2, minor: 1 });
    assert_eq!(
        file.column(0, &DataType::Int32).unwrap(),
        i32s(&[Some(1), Some(2), Some(3)])
    );
}

#[test]
fn refuses_v2_3_and_legacy_footers_by_name() {
    // covers: DS-FILE-3
    let mut bytes = golden("v2_1.lance");
    let n = bytes.len();
    for (major, minor, says) in [(2u16, 3u16, "2.3"), (0, 2, "legacy"), (3, 0, "3.0")] {
        bytes[n - 8..n - 6].copy_from_slice(&major.to_le_bytes());
        bytes[n - 6..n - 4].copy_from_slice(&minor.to_le_bytes());
        let err = read_data_file(&bytes, "v.lance").unwrap_err();
        assert_eq!(err.code(), "unsupported_file_version");
        assert_eq!(err.class(), ErrorClass::UnsupportedFeature);
        assert!(err.to_string().contains(says), "{err}");
    }
}

// ---------------------------------------------------------------------------------------
// Hand-assembled files for refusals

fn direct(url: &str, value: Vec<u8>) -> pb2::Encoding {
    pb2::Encoding {
        location: Some(pb2::encoding::Location::Direct(pb2::DirectEncoding {
            encoding: Any {
                type_url: url.into(),
                value,
            }
            .encode_to_vec(),
        })),
    }
}

fn values_column_encoding() -> pb2::Encoding {
    let ce = enc::ColumnEncoding {
        column_encoding: Some(enc::column_encoding::ColumnEncoding::Values(())),
    };
    direct(COLUMN_ENCODING_URL, ce.encode_to_vec())
}

fn one_page(data: &[u8], length: u64, encoding: pb2::Encoding) -> pb2::ColumnMetadata {
    pb2::ColumnMetadata {
        encoding: Some(values_column_encoding()),
        pages: vec![pb2::column_metadata::Page {
            buffer_offsets: vec![0],
            buffer_sizes: vec![data.len() as u64],
            length,
            encoding: Some(encoding),
            priority: 0,
        }],
        buffer_offsets: vec![],
        buffer_sizes: vec![],
    }
}

/// Lays out `data`, a FileDescriptor of `length` rows and raw column metadata messages.
fn assemble(data: &[u8], length: u64, columns: &[Vec<u8>], version: FileVersion) -> Vec<u8> {
    let mut out = data.to_vec();
    let descriptor = pbf::FileDescriptor {
        schema: Some(pbf::Schema {
            fields: vec![],
            metadata: Default::default(),
        }),
        length,
    }
    .encode_to_vec();
    let g = Extent {
        position: out.len() as u64,
        size: descriptor.len() as u64,
    };
    out.extend_from_slice(&descriptor);
    let column_meta_start = out.len() as u64;
    let mut extents = vec![];
    for c in columns {
        extents.push(Extent {
            position: out.len() as u64,
            size: c.len() as u64,
        });
        out.extend_from_slice(c);
    }
    let cmo_table_start = out.len() as u64;
    out.extend_from_slice(&offset_table_bytes(&extents));
    let gbo_table_start = out.len() as u64;
    out.extend_from_slice(&offset_table_bytes(&[g]));
    out.extend_from_slice(
        &Footer {
            column_meta_start,
            cmo_table_start,
            gbo_table_start,
            num_global_buffers: 1,
            num_columns: columns.len() as u32,
            version,
        }
        .to_bytes(),
    );
    out
}

const V2_0: FileVersion = FileVersion { major: 2, minor: 0 };

fn flat_page(bits: u64) -> enc::ArrayEncoding {
    enc::ArrayEncoding {
        array_encoding: Some(Arm::Flat(enc::Flat {
            bits_per_value: bits,
            buffer: Some(enc::Buffer {
                buffer_index: 0,
                buffer_type: 0,
            }),
            compression: None,
        })),
    }
}

fn file_with_page(data: &[u8], rows: u64, page: enc::ArrayEncoding) -> Vec<u8> {
    let meta = one_page(data, rows, direct(ARRAY_ENCODING_URL, page.encode_to_vec()));
    assemble(data, rows, &[meta.encode_to_vec()], V2_0)
}

fn decode_err(bytes: &[u8], dt: &DataType) -> DataFileError {
    match read_data_file(bytes, "bad.lance") {
        Err(e) => e,
        Ok(file) => file.column(0, dt).unwrap_err(),
    }
}

#[test]
fn accepts_footer_2_0_from_hand_assembled_file() {
    let bytes = file_with_page(&7i32.to_le_bytes(), 1, flat_page(32));
    let file = read_data_file(&bytes, "ok.lance").unwrap();
    assert_eq!(file.version(), V2_0);
    assert_eq!(
        file.column(0, &DataType::Int32).unwrap(),
        vec![Value::Int32(7)]
    );
}

#[test]
fn huge_row_claims_are_errors_not_allocations() {
    let data = [0u8; 10];
    for rows in [1u64 << 60, 1000] {
        let err = decode_err(
            &file_with_page(&data, rows, flat_page(64)),
            &DataType::Int64,
        );
        assert!(
            matches!(
                err,
                DataFileError::RowLimitExceeded { .. } | DataFileError::OutOfBounds { .. }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("bad.lance"));
    }
    // A page that claims more rows than the file's declared length.
    let meta = one_page(
        &data,
        5,
        direct(ARRAY_ENCODING_URL, flat_page(8).encode_to_vec()),
    );
    let err = read_data_file(
        &assemble(&data, 2, &[meta.encode_to_vec()], V2_0),
        "bad.lance",
    )
    .unwrap_err();
    assert_eq!(err.code(), "data_file_out_of_bounds");
    // An all-NULL page needs no bytes: its row count is capped by the reader's limit.
    let all_null = enc::ArrayEncoding {
        array_encoding: Some(Arm::Nullable(Box::new(enc::Nullable {
            nullability: Some(enc::nullable::Nullability::AllNulls(
                enc::nullable::AllNull {},
            )),
        }))),
    };
    let err = decode_err(&file_with_page(&[], 1 << 40, all_null), &DataType::Int32);
    assert_eq!(err.code(), "row_limit_exceeded");
}

#[test]
fn refuses_later_footer_versions_and_bad_magic() {
    // covers: DS-FILE-3
    let ok = file_with_page(&7i32.to_le_bytes(), 1, flat_page(32));
    for (major, minor) in [(2u16, 1u16), (2, 2)] {
        let mut bytes = ok.clone();
        let n = bytes.len();
        bytes[n - 8..n - 6].copy_from_slice(&major.to_le_bytes());
        bytes[n - 6..n - 4].copy_from_slice(&minor.to_le_bytes());
        // This file's schema has no leaf field for its column, which v2.1+ requires.
        let err = read_data_file(&bytes, "x.lance").unwrap_err();
        assert_eq!(err.code(), "data_file_out_of_bounds", "{err}");
        assert!(err.to_string().contains("leaf fields"), "{err}");
    }
    for (major, minor) in [(2u16, 3u16), (0, 2), (3, 0)] {
        let mut bytes = ok.clone();
        let n = bytes.len();
        bytes[n - 8..n - 6].copy_from_slice(&major.to_le_bytes());
        bytes[n - 6..n - 4].copy_from_slice(&minor.to_le_bytes());
        let err = read_data_file(&bytes, "x.lance").unwrap_err();
        assert_eq!(err.code(), "unsupported_file_version", "{major}.{minor}");
        assert_eq!(err.class(), ErrorClass::UnsupportedFeature);
    }
    let mut bytes = ok.clone();
    let n = bytes.len();
    bytes[n - 1] = b'X';
    assert_eq!(
        read_data_file(&bytes, "x.lance").unwrap_err().code(),
        "data_file_bad_magic"
    );
    assert_eq!(
        read_data_file(&ok[..39], "x.lance").unwrap_err().code(),
        "data_file_too_short"
    );
}

#[test]
fn refuses_unsupported_encodings_by_name() {
    let data = [0u8; 16];
    let bitpacked = enc::ArrayEncoding {
        array_encoding: Some(Arm::Bitpacked(enc::Bitpacked {
            compressed_bits_per_value: 3,
            uncompressed_bits_per_value: 32,
            buffer: Some(enc::Buffer::default()),
            signed: false,
        })),
    };
    let err = decode_err(&file_with_page(&data, 2, bitpacked), &DataType::Int32);
    assert_eq!(err.code(), "unsupported_encoding");
    assert!(err.to_string().contains("bitpacked"), "{err}");
    assert!(
        err.to_string()
            .contains("ColumnMetadata[0].pages[0].encoding"),
        "{err}"
    );

    let mut compressed = flat_page(32);
    if let Some(Arm::Flat(f)) = &mut compressed.array_encoding {
        f.compression = Some(enc::Compression {
            scheme: "zstd".into(),
            level: None,
        });
    }
    let err = decode_err(&file_with_page(&data, 2, compressed), &DataType::Int32);
    assert_eq!(err.class(), ErrorClass::UnsupportedFeature);

    // A v2.1 structural layout under the page's Any.
    let meta = one_page(&data, 2, direct("/lance.encodings21.PageLayout", vec![]));
    let err = read_data_file(
        &assemble(&data, 2, &[meta.encode_to_vec()], V2_0),
        "bad.lance",
    )
    .unwrap_err();
    assert_eq!(err.code(), "unsupported_encoding");

    // An indirect (deferred) encoding.
    let indirect = pb2::Encoding {
        location: Some(pb2::encoding::Location::Indirect(pb2::DeferredEncoding {
            buffer_location: 0,
            buffer_length: 4,
        })),
    };
    let meta = one_page(&data, 2, indirect);
    let err = read_data_file(
        &assemble(&data, 2, &[meta.encode_to_vec()], V2_0),
        "bad.lance",
    )
    .unwrap_err();
    assert_eq!(err.code(), "unsupported_encoding");
}

#[test]
fn refuses_deep_encoding_trees() {
    // nullable.no_nulls nested 20 times around a flat: legal protobuf, but no writer emits it.
    let mut e = flat_page(32);
    for _ in 0..20 {
        e = enc::ArrayEncoding {
            array_encoding: Some(Arm::Nullable(Box::new(enc::Nullable {
                nullability: Some(enc::nullable::Nullability::NoNulls(Box::new(
                    enc::nullable::NoNull {
                        values: Some(Box::new(e)),
                    },
                ))),
            }))),
        };
    }
    let err = decode_err(&file_with_page(&[0; 4], 1, e), &DataType::Int32);
    assert_eq!(err.code(), "unsupported_encoding");
    assert!(err.to_string().contains("21 levels deep"), "{err}");
}

#[test]
fn malformed_protobuf_names_the_structure() {
    let data = [0u8; 8];
    let good = one_page(
        &data,
        2,
        direct(ARRAY_ENCODING_URL, flat_page(32).encode_to_vec()),
    )
    .encode_to_vec();
    let err = read_data_file(
        &assemble(&data, 2, &[good.clone(), vec![0x12, 0xff]], V2_0),
        "m.lance",
    )
    .unwrap_err();
    assert_eq!(err.code(), "data_file_malformed_protobuf");
    assert!(
        err.to_string().contains("m.lance: ColumnMetadata[1]"),
        "{err}"
    );

    let meta = one_page(&data, 2, direct(ARRAY_ENCODING_URL, vec![0x0a, 0x05, 0x08]));
    let err = read_data_file(
        &assemble(&data, 2, &[meta.encode_to_vec()], V2_0),
        "m.lance",
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("ColumnMetadata[0].pages[0].encoding"),
        "{err}"
    );
}

#[test]
fn type_mismatches_and_bad_page_data_are_reported() {
    let bytes = write_data_file(&int_utf8_columns()).unwrap();
    let file = read_data_file(&bytes, "t.lance").unwrap();
    assert_eq!(
        file.column(0, &DataType::Int64).unwrap_err().code(),
        "encoding_type_mismatch"
    );
    assert_eq!(
        file.column(1, &DataType::Int32).unwrap_err().code(),
        "encoding_type_mismatch"
    );
    assert_eq!(
        file.column(2, &DataType::Int32).unwrap_err().code(),
        "no_such_column"
    );

    // A dictionary code past the end of the dictionary.
    let items = enc::ArrayEncoding {
        array_encoding: Some(Arm::Nullable(Box::new(enc::Nullable {
            nullability: Some(enc::nullable::Nullability::AllNulls(
                enc::nullable::AllNull {},
            )),
        }))),
    };
    let dict = enc::ArrayEncoding {
        array_encoding: Some(Arm::Dictionary(Box::new(enc::Dictionary {
            indices: Some(Box::new(flat_page(8))),
            items: Some(Box::new(items)),
            num_dictionary_items: 1,
        }))),
    };
    let err = decode_err(&file_with_page(&[0, 1, 2], 3, dict), &DataType::Utf8);
    assert_eq!(err.code(), "invalid_page_data");
    assert!(err.to_string().contains("row 2: code 2"), "{err}");

    // String end offsets that run past the bytes.
    let mut data: Vec<u8> = 9u64.to_le_bytes().to_vec();
    data.extend_from_slice(b"abc");
    let binary = enc::ArrayEncoding {
        array_encoding: Some(Arm::Binary(Box::new(enc::Binary {
            indices: Some(Box::new(flat_page(64))),
            bytes: Some(Box::new(enc::ArrayEncoding {
                array_encoding: Some(Arm::Flat(enc::Flat {
                    bits_per_value: 8,
                    buffer: Some(enc::Buffer {
                        buffer_index: 1,
                        buffer_type: 0,
                    }),
                    compression: None,
                })),
            })),
            null_adjustment: 100,
        }))),
    };
    let mut meta = one_page(&data, 1, direct(ARRAY_ENCODING_URL, binary.encode_to_vec()));
    meta.pages[0].buffer_offsets = vec![0, 8];
    meta.pages[0].buffer_sizes = vec![8, 3];
    let err = decode_err(
        &assemble(&data, 1, &[meta.encode_to_vec()], V2_0),
        &DataType::Utf8,
    );
    assert_eq!(err.code(), "invalid_page_data");
}

#[test]
fn a_null_struct_is_written_into_its_leaves_layers_in_v2_2() {
    // covers: DS-LEAF-1, DS-LEAF-4
    let st = |v: &[bool]| -> Vec<Value> {
        v.iter()
            .map(|p| {
                if *p {
                    Value::Struct(Vec::new())
                } else {
                    Value::Null
                }
            })
            .collect()
    };
    let columns = [
        ColumnData::new(
            field(0, "st", DataType::Struct),
            st(&[true, false, true, false]),
        ),
        ColumnData::new(
            child(1, 0, "a", DataType::Int32),
            i32s(&[Some(1), None, None, None]),
        ),
        ColumnData::new(
            child(2, 0, "b", DataType::Utf8),
            strs(&[Some("x"), None, Some("z"), None]),
        ),
    ];
    // v2.0 cannot store it.
    assert_eq!(
        write_data_file(&columns).unwrap_err().code(),
        "null_struct_unsupported"
    );
    let bytes =
        write_data_file_in(DataFileVersion::V2_2, &columns, &FileExtras::default()).unwrap();
    let file = read_data_file(&bytes, "st.lance").unwrap();
    for (col, data_type, want) in [
        (0, DataType::Int32, i32s(&[Some(1), None, None, None])),
        (1, DataType::Utf8, strs(&[Some("x"), None, Some("z"), None])),
    ] {
        assert_eq!(file.column(col, &data_type).unwrap(), want);
        let layers = file.struct_validity(col).unwrap();
        assert_eq!(layers.len(), 1);
        let valid: Vec<bool> = (0..4)
            .map(|r| layers[0].as_ref().is_none_or(|n| n.is_valid(r)))
            .collect();
        assert_eq!(valid, [true, false, true, false], "column {col}");
    }
    // A struct present everywhere keeps the all-valid layer of before.
    let present = [
        ColumnData::new(field(0, "st", DataType::Struct), st(&[true, true])),
        ColumnData::new(child(1, 0, "a", DataType::Int32), i32s(&[Some(1), None])),
    ];
    let bytes =
        write_data_file_in(DataFileVersion::V2_2, &present, &FileExtras::default()).unwrap();
    let file = read_data_file(&bytes, "st.lance").unwrap();
    assert_eq!(file.struct_validity(0).unwrap(), vec![None]);
}

#[test]
fn writer_refuses_what_it_cannot_store() {
    let code = |cols: &[ColumnData]| write_data_file(cols).unwrap_err().code();
    assert_eq!(
        code(&[ColumnData::new(
            field(0, "st", DataType::Struct),
            vec![Value::Null]
        )]),
        "null_struct_unsupported"
    );
    let mut strict = field(0, "x", DataType::UInt64);
    strict.nullable = false;
    assert_eq!(
        code(&[ColumnData::new(strict, vec![Value::Null])]),
        "null_in_non_nullable"
    );
    assert_eq!(
        code(&[ColumnData::new(
            field(0, "x", DataType::Int32),
            vec![Value::Int64(1)]
        )]),
        "value_type_mismatch"
    );
    assert_eq!(
        code(&[ColumnData::new(
            field(0, "v", DataType::FixedSizeList { dimension: 2 }),
            vec![vector(&[Some(1.0)])]
        )]),
        "value_type_mismatch"
    );
    assert_eq!(
        code(&[ColumnData::new(child(1, 0, "a", DataType::Int32), vec![])]),
        "bad_field_order"
    );
}

// ---------------------------------------------------------------------------------------
// Property tests

fn data_type() -> impl Strategy<Value = DataType> {
    prop_oneof![
        Just(DataType::Int32),
        Just(DataType::Int64),
        Just(DataType::UInt64),
        Just(DataType::Float32),
        Just(DataType::Float64),
        Just(DataType::Utf8),
        Just(DataType::Bool),
        (1u32..4).prop_map(|dimension| DataType::FixedSizeList { dimension }),
    ]
}

fn value(dt: &DataType) -> BoxedStrategy<Value> {
    let present: BoxedStrategy<Value> = match dt.clone() {
        DataType::Int32 => any::<i32>().prop_map(Value::Int32).boxed(),
        DataType::Int64 => any::<i64>().prop_map(Value::Int64).boxed(),
        DataType::UInt64 => any::<u64>().prop_map(Value::UInt64).boxed(),
        DataType::Float32 => any::<u32>()
            .prop_map(|b| Value::Float32(f32::from_bits(b)))
            .boxed(),
        DataType::Float64 => any::<u64>()
            .prop_map(|b| Value::Float64(f64::from_bits(b)))
            .boxed(),
        DataType::Utf8 => "\\PC{0,6}".prop_map(Value::Utf8).boxed(),
        DataType::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        DataType::FixedSizeList { dimension } => proptest::collection::vec(
            proptest::option::weighted(0.8, any::<u32>().prop_map(f32::from_bits)),
            dimension as usize,
        )
        .prop_map(Value::Vector)
        .boxed(),
        DataType::Struct => Just(Value::Struct(vec![])).boxed(),
    };
    prop_oneof![1 => Just(Value::Null), 3 => present].boxed()
}

fn column() -> impl Strategy<Value = (DataType, Vec<Value>)> {
    data_type().prop_flat_map(|dt| {
        let v = value(&dt);
        (
            Just(dt),
            prop_oneof![
                proptest::collection::vec(v.clone(), 0..24),
                // Occasionally every value NULL, to reach the all_nulls arm.
                (0usize..24).prop_map(|n| vec![Value::Null; n]),
            ],
        )
    })
}

fn columns_strategy() -> impl Strategy<Value = Vec<ColumnData>> {
    proptest::collection::vec(column(), 0..5).prop_map(|cols| {
        cols.into_iter()
            .enumerate()
            .map(|(i, (dt, values))| ColumnData::new(field(i as i32, &format!("c{i}"), dt), values))
            .collect()
    })
}

fn decode_everything(bytes: &[u8], types: &[DataType]) {
    if let Ok(file) = read_data_file(bytes, "fuzz.lance") {
        for i in 0..file.num_columns() + 1 {
            for dt in types {
                let _ = file.column(i, dt);
            }
        }
    }
}

/// The region a reader holding only the file's last `tail` bytes (at least the footer's) ends
/// up reading
/// ([`metadata_start`], asked until it answers the start of what is held).
fn metadata_region(bytes: &[u8], tail: usize) -> Region<'_> {
    let len = bytes.len() as u64;
    let mut held = Region {
        start: len.saturating_sub(tail as u64),
        bytes: &bytes[bytes.len().saturating_sub(tail)..],
    };
    loop {
        let from = metadata_start(held, len, "fuzz.lance");
        if from >= held.start {
            return held;
        }
        held = Region {
            start: from,
            bytes: &bytes[from as usize..],
        };
    }
}

/// A file read from its metadata region, each page fetched alone, reads as the whole file does:
/// the same first error, or the same columns and struct layers.
fn assert_read_as_whole(bytes: &[u8], tail: usize, types: &[DataType]) {
    let whole = read_data_file(bytes, "fuzz.lance");
    let held = metadata_region(bytes, tail);
    let part = read_data_file_in(held, bytes.len() as u64, "fuzz.lance");
    let (whole, part) = match (whole, part) {
        (Ok(whole), Ok(part)) => (whole, part),
        (whole, part) => {
            assert_eq!(whole.err(), part.err());
            return;
        }
    };
    let fetch = |span: Extent| -> Result<std::borrow::Cow<'_, [u8]>, DataFileError> {
        let page = Region::whole(bytes).get(span).unwrap();
        Ok(std::borrow::Cow::Owned(page.to_vec()))
    };
    assert_eq!(whole.num_columns(), part.num_columns());
    assert_eq!(whole.schema(), part.schema());
    for i in 0..whole.num_columns() + 1 {
        for dt in types {
            let a = whole.column_array(i, dt);
            let b = part.column_array_with(i, dt, fetch);
            match (&a, &b) {
                (Ok(a), Ok(b)) => assert_eq!(a.as_ref(), b.as_ref(), "column {i} as {dt:?}"),
                _ => assert_eq!(a.err(), b.err(), "column {i} as {dt:?}"),
            }
        }
        assert_eq!(
            whole.struct_validity(i),
            part.struct_validity_with(i, fetch)
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_file_read_from_its_metadata_region_reads_as_whole(
        columns in columns_strategy(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in any::<prop::sample::Index>(),
        tail in FOOTER_LEN..400,
    ) {
        let bytes = write_data_file(&columns).unwrap();
        let mut types: Vec<DataType> = columns.iter().map(|c| c.field.data_type.clone()).collect();
        types.push(DataType::Utf8);
        let mut mutated = bytes.clone();
        for (at, x) in &flips {
            let i = at.index(mutated.len());
            mutated[i] ^= x | 1;
        }
        assert_read_as_whole(&bytes, tail, &types);
        assert_read_as_whole(&mutated, tail, &types);
        assert_read_as_whole(&bytes[..cut.index(bytes.len() + 1)], tail, &types);
    }

    #[test]
    fn read_of_write_is_identity(columns in columns_strategy()) {
        let bytes = write_data_file(&columns).unwrap();
        let file = read_data_file(&bytes, "p.lance").unwrap();
        prop_assert_eq!(file.num_columns(), columns.len());
        for (i, c) in columns.iter().enumerate() {
            let got = file.column(i, &c.field.data_type).unwrap();
            prop_assert!(same(&got, &c.values), "column {}: {:?} vs {:?}", i, c.values, got);
        }
    }

    #[test]
    fn mutated_or_truncated_files_never_panic(
        columns in columns_strategy(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let bytes = write_data_file(&columns).unwrap();
        let mut types: Vec<DataType> = columns.iter().map(|c| c.field.data_type.clone()).collect();
        types.push(DataType::Utf8);
        types.push(DataType::FixedSizeList { dimension: 2 });
        let mut mutated = bytes.clone();
        for (at, x) in &flips {
            let i = at.index(mutated.len());
            mutated[i] ^= x | 1;
        }
        decode_everything(&mutated, &types);
        decode_everything(&bytes[..cut.index(bytes.len() + 1)], &types);
    }
}

#[test]
fn files_lance_wrote_read_from_their_metadata_region_as_whole() {
    let v2x = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/lance14_v2x");
    let mut files: Vec<Vec<u8>> = [
        "dictionary.lance",
        "fixed_width.lance",
        "int_utf8.lance",
        "multipage.lance",
        "nested.lance",
        "v2_1.lance",
    ]
    .iter()
    .map(|name| golden(name))
    .collect();
    for name in ["v2_1_1000", "v2_2_1000", "v2_2_bool", "v2_2_update"] {
        files.push(std::fs::read(format!("{v2x}/{name}.lance")).unwrap());
    }
    let types = [
        DataType::Int32,
        DataType::Int64,
        DataType::UInt64,
        DataType::Float32,
        DataType::Float64,
        DataType::Utf8,
        DataType::Bool,
        DataType::Struct,
        DataType::FixedSizeList { dimension: 8 },
    ];
    for bytes in &files {
        for tail in [FOOTER_LEN, 100, 1 << 16] {
            assert_read_as_whole(bytes, tail, &types);
        }
    }
}
