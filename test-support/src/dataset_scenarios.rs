//! Fixed multi-version snapshots that exercise every feature of a dataset directory: deletions
//! in both forms, dense and sparse overlays, tombstones, inline lineage, lineage columns in the
//! main data file and in a separate lineage-only file, indices, time travel. Shared by
//! `tests/dataset.rs` and `examples/write_interop.rs`.
//!
//! Every snapshot is *finished* ([`finish`]): files are named by content, flag words are the
//! ones the content requires, positions a read never decodes (tombstones, non-live overlay
//! positions) hold empty columns, and index entries are the resolved values at the index's
//! `dataset_version`. A finished snapshot is exactly what reading it back returns.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::BTreeMap;

use lance_reference::flags::required_flags;
use lance_reference::index_build::entries as index_entries;
use lance_reference::model::{
    Column, Coverage, DataFile, DataType, Field, Fragment, Index, IndexKind, Lineage,
    LineageSequence, Overlay, Schema, Snapshot, Value,
};
use lance_reference_io::WriteOptions;
use lance_reference_io::deletion::DeletionFileType;
use lance_reference_io::read::reads_position;
use lance_reference_io::write::name_files_by_content;
use roaring::RoaringBitmap;

/// A named multi-version dataset and the options to write it with.
pub struct Scenario {
    /// Directory name.
    pub name: &'static str,
    /// Versions 1..=n, finished.
    pub versions: Vec<Snapshot>,
    /// Write options.
    pub options: WriteOptions,
}

pub fn bitmap(offsets: &[u32]) -> RoaringBitmap {
    offsets.iter().copied().collect()
}

fn vector(a: f32, b: f32, c: f32) -> Value {
    Value::Vector(vec![Some(a), Some(b), Some(c)])
}

/// Empties the positions a read never decodes, names files, sets flags and index entries.
pub fn finish(mut s: Snapshot, history: &[Snapshot]) -> Snapshot {
    let schema = s.schema.clone();
    for f in &mut s.fragments {
        for file in &mut f.files {
            for (id, col) in file.fields.clone().into_iter().zip(file.columns.iter_mut()) {
                if !reads_position(&schema, id, false) {
                    *col = Column::empty();
                }
            }
        }
        for o in &mut f.overlays {
            for (id, col) in o
                .file
                .fields
                .clone()
                .into_iter()
                .zip(o.file.columns.iter_mut())
            {
                if !reads_position(&schema, id, true) {
                    *col = Column::empty();
                }
            }
        }
    }
    name_files_by_content(&mut s).unwrap();
    let (r, w) = required_flags(&s);
    s.reader_flags = r;
    s.writer_flags = w;
    for n in 0..s.indices.len() {
        let at = s.indices[n].dataset_version;
        let source = if at == s.version {
            s.clone()
        } else {
            history.iter().find(|h| h.version == at).unwrap().clone()
        };
        s.indices[n].entries = index_entries(&source, &s.indices[n]).unwrap();
    }
    s
}

fn user_columns(frag: u64, rows: u64) -> Vec<Vec<Value>> {
    let r = 0..rows;
    vec![
        r.clone()
            .map(|i| Value::Int64((frag * 100 + i) as i64))
            .collect(),
        r.clone()
            .map(|i| {
                if i % 3 == 2 {
                    Value::Null
                } else {
                    Value::Utf8(format!("f{frag}r{i}"))
                }
            })
            .collect(),
        r.clone()
            .map(|i| Value::Float64(i as f64 * 1.5 - 2.0))
            .collect(),
        r.clone()
            .map(|i| {
                if i == 1 {
                    Value::Null
                } else {
                    Value::Bool(i % 2 == 0)
                }
            })
            .collect(),
        r.clone()
            .map(|i| vector(frag as f32, i as f32, 0.25))
            .collect(),
        r.map(|i| Value::Int32(i as i32 * 7 - 3)).collect(),
    ]
}

const USER: [i32; 6] = [0, 1, 2, 3, 4, 5];

fn full_schema() -> Schema {
    Schema::new(vec![
        Field::new(0, "id", DataType::Int64),
        Field::new(1, "name", DataType::Utf8),
        Field::new(2, "score", DataType::Float64),
        Field::new(3, "flag", DataType::Bool),
        Field::new(4, "emb", DataType::FixedSizeList { dimension: 3 }),
        Field::new(5, "n", DataType::Int32),
    ])
    .unwrap()
}

fn u64s(v: impl IntoIterator<Item = u64>) -> Vec<Value> {
    v.into_iter().map(Value::UInt64).collect()
}

fn file(fields: Vec<i32>, values: Vec<Vec<Value>>) -> DataFile {
    DataFile {
        path: String::new(),
        fields,
        columns: columns(values),
    }
}

/// The column holding `values`, typed by them (a column of NULLs only has no type).
pub fn column(values: &[Value]) -> Column {
    Column::infer(values).unwrap()
}

/// Columns holding `values`, each typed by its values.
pub fn columns(values: Vec<Vec<Value>>) -> Vec<Column> {
    values.iter().map(|v| column(v)).collect()
}

/// Stable row ids; every feature. Three versions.
pub fn full() -> Scenario {
    let schema = full_schema();
    // v1
    let mut f0 = Fragment {
        files: vec![file(USER.to_vec(), user_columns(0, 6))],
        ..Fragment::new(0, "", vec![], vec![])
    };
    f0.physical_rows = 6;
    f0.lineage = Lineage {
        row_ids: LineageSequence::Inline((0..6).collect()),
        created_at: LineageSequence::Inline(vec![1; 6]),
        last_updated_at: LineageSequence::Inline(vec![1; 6]),
    };
    let mut cols = user_columns(1, 5);
    cols.push(u64s(6..11));
    cols.push(u64s([1; 5]));
    cols.push(u64s([1; 5]));
    let mut fields = USER.to_vec();
    fields.extend([-3, -4, -5]);
    let mut f1 = Fragment {
        files: vec![file(fields, cols)],
        ..Fragment::new(1, "", vec![], vec![])
    };
    f1.physical_rows = 5;
    f1.lineage = Lineage {
        row_ids: LineageSequence::Column,
        created_at: LineageSequence::Column,
        last_updated_at: LineageSequence::Column,
    };
    let mut f2 = Fragment {
        files: vec![
            file(USER.to_vec(), user_columns(2, 4)),
            file(vec![-3, -4], vec![u64s(11..15), u64s([1; 4])]),
        ],
        ..Fragment::new(2, "", vec![], vec![])
    };
    f2.physical_rows = 4;
    f2.lineage = Lineage {
        row_ids: LineageSequence::Column,
        created_at: LineageSequence::Column,
        last_updated_at: LineageSequence::Inline(vec![1; 4]),
    };
    let id_idx = Index {
        name: "id_idx".into(),
        fields: vec![0],
        dataset_version: 1,
        fragment_bitmap: Some(bitmap(&[0, 1, 2])),
        kind: IndexKind::BTree,
        entries: vec![],
    };
    let mut config = BTreeMap::new();
    config.insert("lance.row_lineage.spill".to_string(), "true".to_string());
    let v1 = finish(
        Snapshot {
            version: 1,
            schema: schema.clone(),
            fragments: vec![f0, f1, f2],
            indices: vec![id_idx.clone()],
            config,
            stable_row_ids: true,
            next_row_id: 15,
            reader_flags: 0,
            writer_flags: 0,
        },
        &[],
    );
    // v2
    let mut v2 = v1.clone();
    v2.version = 2;
    {
        let f0 = &mut v2.fragments[0];
        f0.overlays.push(Overlay {
            file: file(
                vec![2, 5],
                vec![
                    vec![Value::Float64(10.5), Value::Float64(30.5)],
                    vec![Value::Null, Value::Int32(33)],
                ],
            ),
            coverage: Coverage::Dense(bitmap(&[1, 3])),
            committed_version: 2,
        });
        f0.deletions = bitmap(&[5]);
        f0.lineage.last_updated_at = LineageSequence::Inline(vec![1, 2, 1, 2, 1, 1]);
        let f1 = &mut v2.fragments[1];
        f1.overlays.push(Overlay {
            file: file(
                vec![1, -2, 4],
                vec![
                    vec![Value::Utf8("x0".into()), Value::Utf8("x2".into())],
                    vec![],
                    vec![vector(9.0, 9.5, -1.0)],
                ],
            ),
            coverage: Coverage::Sparse(vec![bitmap(&[0, 2]), bitmap(&[1]), bitmap(&[4])]),
            committed_version: 2,
        });
        f1.deletions = bitmap(&[0, 1]);
        f1.lineage.last_updated_at = LineageSequence::Inline(vec![2, 1, 2, 1, 2]);
    }
    let mut f3 = Fragment {
        files: vec![file(USER.to_vec(), user_columns(3, 3))],
        ..Fragment::new(3, "", vec![], vec![])
    };
    f3.physical_rows = 3;
    f3.lineage = Lineage {
        row_ids: LineageSequence::Inline((15..18).collect()),
        created_at: LineageSequence::Inline(vec![2; 3]),
        last_updated_at: LineageSequence::Inline(vec![2; 3]),
    };
    v2.fragments.push(f3);
    v2.next_row_id = 18;
    v2.indices.push(Index {
        name: "emb_idx".into(),
        fields: vec![4],
        dataset_version: 2,
        fragment_bitmap: Some(bitmap(&[0, 1, 2, 3])),
        kind: IndexKind::Vector,
        entries: vec![],
    });
    let v2 = finish(v2, std::slice::from_ref(&v1));
    // v3: score folded out of fragment 0's first file into a new file; more deletions.
    let mut v3 = v2.clone();
    v3.version = 3;
    {
        let f0 = &mut v3.fragments[0];
        f0.files[0].fields[2] = -2;
        f0.files.push(file(
            vec![2],
            vec![(0..6).map(|i| Value::Float64(100.0 + i as f64)).collect()],
        ));
        f0.overlays.clear();
        v3.fragments[2].deletions = bitmap(&[1, 2]);
    }
    let v3 = finish(v3, &[v1.clone(), v2.clone()]);
    let mut options = WriteOptions::default();
    options.deletion_forms.insert(1, DeletionFileType::Bitmap);
    Scenario {
        name: "full",
        versions: vec![v1, v2, v3],
        options,
    }
}

/// No stable row ids, no lineage: `_rowid` is the row address. Overlay precedence by version
/// and by position, a covered NULL.
pub fn plain() -> Scenario {
    let schema = Schema::new(vec![
        Field::new(0, "id", DataType::Int64),
        Field::new(1, "val", DataType::Int32),
        Field::new(2, "name", DataType::Utf8),
    ])
    .unwrap();
    let cols = |frag: u64, rows: u64| -> Vec<Vec<Value>> {
        vec![
            (0..rows)
                .map(|i| Value::Int64((frag * 1000 + i) as i64))
                .collect(),
            (0..rows).map(|i| Value::Int32(i as i32)).collect(),
            (0..rows).map(|i| Value::Utf8(format!("r{i}"))).collect(),
        ]
    };
    let f0 = Fragment {
        files: vec![file(vec![0, 1, 2], cols(0, 8))],
        physical_rows: 8,
        ..Fragment::new(0, "", vec![], vec![])
    };
    let f1 = Fragment {
        files: vec![file(vec![0, 1, 2], cols(1, 5))],
        physical_rows: 5,
        ..Fragment::new(1, "", vec![], vec![])
    };
    let v1 = finish(
        Snapshot {
            version: 1,
            schema,
            fragments: vec![f0, f1],
            indices: vec![],
            config: BTreeMap::new(),
            stable_row_ids: false,
            next_row_id: 0,
            reader_flags: 0,
            writer_flags: 0,
        },
        &[],
    );
    let mut v2 = v1.clone();
    v2.version = 2;
    v2.fragments[0].overlays.push(Overlay {
        file: file(
            vec![1],
            vec![vec![
                Value::Int32(-10),
                Value::Int32(-17),
                Value::Int32(-14),
            ]],
        ),
        coverage: Coverage::Dense(bitmap(&[0, 4, 7])),
        committed_version: 2,
    });
    v2.fragments[0].deletions = bitmap(&[2]);
    v2.fragments[1].overlays.push(Overlay {
        file: file(
            vec![1, 2],
            vec![
                vec![Value::Int32(111)],
                vec![Value::Utf8("two".into()), Value::Null],
            ],
        ),
        coverage: Coverage::Sparse(vec![bitmap(&[1]), bitmap(&[2, 3])]),
        committed_version: 2,
    });
    let v2 = finish(v2, &[]);
    let mut v3 = v2.clone();
    v3.version = 3;
    for (values, offsets) in [
        (vec![Value::Null, Value::Int32(40)], [0u32, 4]),
        (vec![Value::Int32(41), Value::Int32(71)], [4, 7]),
    ] {
        v3.fragments[0].overlays.push(Overlay {
            file: file(vec![1], vec![values]),
            coverage: Coverage::Dense(bitmap(&offsets)),
            committed_version: 3,
        });
    }
    let v3 = finish(v3, &[]);
    Scenario {
        name: "plain",
        versions: vec![v1, v2, v3],
        options: WriteOptions::default(),
    }
}

/// A struct column with two children; an overlay on one child.
pub fn nested() -> Scenario {
    let schema = Schema::new(vec![
        Field::new(0, "id", DataType::Int64),
        Field::new(1, "s", DataType::Struct),
        Field::child(2, 1, "a", DataType::Int32),
        Field::child(3, 1, "b", DataType::Utf8),
    ])
    .unwrap();
    let rows = 4u64;
    let columns = vec![
        (0..rows).map(|i| Value::Int64(i as i64)).collect(),
        (0..rows).map(|_| Value::Struct(vec![])).collect(),
        (0..rows).map(|i| Value::Int32(i as i32 * 10)).collect(),
        (0..rows)
            .map(|i| {
                if i == 2 {
                    Value::Null
                } else {
                    Value::Utf8(format!("b{i}"))
                }
            })
            .collect(),
    ];
    let f0 = Fragment {
        files: vec![file(vec![0, 1, 2, 3], columns)],
        physical_rows: rows,
        ..Fragment::new(0, "", vec![], vec![])
    };
    let v1 = finish(
        Snapshot {
            version: 1,
            schema,
            fragments: vec![f0],
            indices: vec![],
            config: BTreeMap::new(),
            stable_row_ids: false,
            next_row_id: 0,
            reader_flags: 0,
            writer_flags: 0,
        },
        &[],
    );
    let mut v2 = v1.clone();
    v2.version = 2;
    v2.fragments[0].overlays.push(Overlay {
        file: file(vec![2], vec![vec![Value::Int32(-1)]]),
        coverage: Coverage::Dense(bitmap(&[1])),
        committed_version: 2,
    });
    let v2 = finish(v2, &[]);
    let mut v3 = v2.clone();
    v3.version = 3;
    v3.fragments[0].overlays = vec![Overlay {
        file: file(
            vec![1, 2],
            vec![vec![Value::Struct(vec![])], vec![Value::Int32(-2)]],
        ),
        coverage: Coverage::Dense(bitmap(&[2])),
        committed_version: 3,
    }];
    let v3 = finish(v3, &[]);
    Scenario {
        name: "nested",
        versions: vec![v1, v2, v3],
        options: WriteOptions::default(),
    }
}

/// Every scenario.
pub fn all() -> Vec<Scenario> {
    vec![full(), plain(), nested()]
}
