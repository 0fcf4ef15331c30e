//! A Rust reader that answers in Arrow plugs in through `runner::arrow_reader::Arrow` with no
//! conversion of its own: the reference, made to answer with record batches, passes the whole
//! corpus that way, and batches that break the seam's contract are the reader's breakage.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use arrow_array::types::Float32Type;
use arrow_array::{
    ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray, StructArray, UInt32Array, UInt64Array,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType as ArrowType, Field as ArrowField, Fields, Schema as ArrowSchema};
use lance_conformance::expected::tagged::{untag, untag_field};
use lance_conformance::expected::{FragmentLineage, Hit};
use lance_conformance::runner::arrow_reader::{Arrow, ArrowQueryAnswer, ArrowReader, scan_result};
use lance_conformance::runner::protocol::{
    ExclusionResult, OpenResult, QueryRequest, ScanRequest, VersionRef,
};
use lance_conformance::runner::reference::read_checked;
use lance_conformance::runner::{
    Answer, ConformanceReader, Description, Options, ReferenceReader, Refusal, run_suite,
};
use lance_reference::columnar;
use lance_reference::model::{DataType, FieldId, Schema, Value};

/// The reference, answering with record batches built from its model values.
struct ReferenceInArrow(ReferenceReader);

/// The Arrow type of field `id`, as the reference's own batches type it.
fn arrow_type(schema: &Schema, id: FieldId) -> ArrowType {
    columnar::arrow_type(schema, id).unwrap()
}

/// A struct field's children as Arrow fields.
fn children(schema: &Schema, id: FieldId) -> Fields {
    match arrow_type(schema, id) {
        ArrowType::Struct(fields) => fields,
        other => panic!("field {id} is {other}, not a struct"),
    }
}

/// The Arrow array of field `id` holding `values` (one per row).
fn array(schema: &Schema, id: FieldId, values: &[Value]) -> ArrayRef {
    let field = schema.field(id).unwrap();
    macro_rules! prim {
        ($arr:ty, $variant:ident) => {
            Arc::new(<$arr>::from(
                values
                    .iter()
                    .map(|v| match v {
                        Value::$variant(x) => Some(x.clone()),
                        _ => None,
                    })
                    .collect::<Vec<_>>(),
            )) as ArrayRef
        };
    }
    match field.data_type {
        DataType::Bool => prim!(BooleanArray, Bool),
        DataType::Int32 => prim!(Int32Array, Int32),
        DataType::Int64 => prim!(Int64Array, Int64),
        DataType::UInt64 => prim!(UInt64Array, UInt64),
        DataType::Float32 => prim!(Float32Array, Float32),
        DataType::Float64 => prim!(Float64Array, Float64),
        DataType::Utf8 => prim!(StringArray, Utf8),
        DataType::FixedSizeList { dimension } => Arc::new(
            FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
                values.iter().map(|v| match v {
                    Value::Vector(items) => Some(items.clone()),
                    _ => None,
                }),
                dimension as i32,
            ),
        ),
        DataType::Struct => {
            let kids: Vec<FieldId> = schema.children(id).map(|c| c.id).collect();
            let arrays = kids
                .iter()
                .enumerate()
                .map(|(k, child)| {
                    let column: Vec<Value> = values
                        .iter()
                        .map(|v| match v {
                            Value::Struct(c) => c.get(k).cloned().unwrap_or(Value::Null),
                            _ => Value::Null,
                        })
                        .collect();
                    array(schema, *child, &column)
                })
                .collect();
            let valid: Vec<bool> = values.iter().map(|v| !v.is_null()).collect();
            Arc::new(
                StructArray::try_new(children(schema, id), arrays, Some(NullBuffer::from(valid)))
                    .unwrap(),
            )
        }
    }
}

fn hit_batch(hits: &[Hit]) -> RecordBatch {
    let mut columns: Vec<(&str, ArrayRef)> = vec![
        (
            "fragment",
            Arc::new(UInt64Array::from(
                hits.iter().map(|h| h.fragment).collect::<Vec<_>>(),
            )),
        ),
        // Offsets as UInt32, as row addresses hold them.
        (
            "offset",
            Arc::new(UInt32Array::from(
                hits.iter().map(|h| h.offset as u32).collect::<Vec<_>>(),
            )),
        ),
    ];
    if hits.iter().any(|h| h.distance.is_some()) {
        let d: Vec<Option<f32>> = hits
            .iter()
            .map(|h| match h.distance.as_ref().map(|t| untag(t).unwrap()) {
                Some(Value::Float32(x)) => Some(x),
                _ => None,
            })
            .collect();
        columns.push(("distance", Arc::new(Float32Array::from(d))));
    }
    RecordBatch::try_from_iter(columns).unwrap()
}

impl ArrowReader for ReferenceInArrow {
    fn describe(&mut self) -> Answer<Description> {
        self.0.describe()
    }
    fn open(&mut self, at: &VersionRef) -> Answer<OpenResult> {
        self.0.open(at)
    }
    fn scan(&mut self, request: &ScanRequest) -> Answer<Vec<RecordBatch>> {
        let scan = self.0.scan(request)?;
        let schema = read_checked(
            std::path::Path::new(&request.at.dataset),
            request.at.version,
        )
        .map_err(Refusal::Error)?
        .schema;
        let lineage = |f: fn(
            &lance_conformance::expected::Row,
        ) -> &lance_conformance::expected::tagged::Tagged|
         -> ArrayRef {
            Arc::new(UInt64Array::from(
                scan.rows
                    .iter()
                    .map(|r| match untag(f(r)).unwrap() {
                        Value::UInt64(x) => Some(x),
                        _ => None,
                    })
                    .collect::<Vec<_>>(),
            ))
        };
        let mut fields = vec![
            ArrowField::new("fragment", ArrowType::UInt64, false),
            ArrowField::new("offset", ArrowType::UInt64, false),
            ArrowField::new("_rowid", ArrowType::UInt64, true),
            ArrowField::new("_row_created_at_version", ArrowType::UInt64, true),
            ArrowField::new("_row_last_updated_at_version", ArrowType::UInt64, true),
        ];
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(
                scan.rows.iter().map(|r| r.fragment).collect::<Vec<_>>(),
            )),
            Arc::new(UInt64Array::from(
                scan.rows.iter().map(|r| r.offset).collect::<Vec<_>>(),
            )),
            lineage(|r| &r.row_id),
            lineage(|r| &r.created_at),
            lineage(|r| &r.last_updated_at),
        ];
        for (k, c) in scan.columns.iter().enumerate() {
            let id = schema.top_level().find(|f| f.name == c.name).unwrap().id;
            let values: Vec<Value> = scan
                .rows
                .iter()
                .map(|r| untag_field(&schema, id, &r.values[k]).unwrap())
                .collect();
            fields.push(ArrowField::new(&c.name, arrow_type(&schema, id), true));
            columns.push(array(&schema, id, &values));
        }
        let batch = RecordBatch::try_new(Arc::new(ArrowSchema::new(fields)), columns).unwrap();
        // Two batches where there are rows enough, so the seam joins batches.
        let half = batch.num_rows() / 2;
        Ok(vec![
            batch.slice(0, half),
            batch.slice(half, batch.num_rows() - half),
        ])
    }
    fn lineage(&mut self, at: &VersionRef, fragment: u64) -> Answer<FragmentLineage> {
        self.0.lineage(at, fragment)
    }
    fn exclusion(&mut self, at: &VersionRef) -> Answer<ExclusionResult> {
        self.0.exclusion(at)
    }
    fn query(&mut self, at: &VersionRef, query: &QueryRequest) -> Answer<ArrowQueryAnswer> {
        let a = self.0.query(at, query)?;
        Ok(ArrowQueryAnswer {
            kind: a.kind,
            final_rows: hit_batch(&a.final_rows),
            reconciliation: a.reconciliation.map(|r| {
                [
                    hit_batch(&r.candidates),
                    hit_batch(&r.excluded),
                    hit_batch(&r.reevaluated),
                    hit_batch(&r.rematched),
                ]
            }),
            plan: a.plan,
        })
    }
}

use super::corpus;

#[test]
fn the_reference_answering_in_arrow_passes_every_case() {
    let mut reader = Arrow(ReferenceInArrow(ReferenceReader::new()));
    let report = run_suite(&mut reader, Options::new(corpus())).unwrap();
    let failing = super::failing(&report);
    assert!(failing.is_empty(), "{failing:#?}");
    assert!(report.summary.passed >= 170, "{:?}", report.summary);
}

#[test]
fn batches_that_break_the_contract_are_the_readers_breakage() {
    let at = VersionRef {
        dataset: "/d".into(),
        version: 1,
    };
    let request = ScanRequest { at, columns: None };
    // Lineage columns in the wrong order.
    let wrong_order = RecordBatch::try_from_iter([
        (
            "offset",
            Arc::new(UInt64Array::from(vec![0u64])) as ArrayRef,
        ),
        (
            "fragment",
            Arc::new(UInt64Array::from(vec![0u64])) as ArrayRef,
        ),
    ])
    .unwrap();
    // A signed offset, and a column type with no case type.
    let one = |name: &str, a: ArrayRef| {
        RecordBatch::try_from_iter([
            (
                "fragment",
                Arc::new(UInt64Array::from(vec![0u64])) as ArrayRef,
            ),
            (
                "offset",
                Arc::new(UInt64Array::from(vec![0u64])) as ArrayRef,
            ),
            (
                "_rowid",
                Arc::new(UInt64Array::from(vec![0u64])) as ArrayRef,
            ),
            (
                "_row_created_at_version",
                Arc::new(UInt64Array::from(vec![1u64])) as ArrayRef,
            ),
            (
                "_row_last_updated_at_version",
                Arc::new(UInt64Array::from(vec![1u64])) as ArrayRef,
            ),
            (name, a),
        ])
        .unwrap()
    };
    let unsigned_only = one("x", Arc::new(UInt32Array::from(vec![1u32])));
    for batch in [wrong_order, unsigned_only] {
        match scan_result(&request, &[batch]) {
            Err(Refusal::Broken(m)) => assert!(m.starts_with("arrow answer: "), "{m}"),
            other => panic!("accepted: {other:?}"),
        }
    }
    // A well-formed batch converts to tagged values.
    let good = one("x", Arc::new(Int64Array::from(vec![Some(-3i64)])));
    let scan = scan_result(&request, &[good]).unwrap();
    assert_eq!(scan.columns[0].data_type, "int64");
    assert_eq!(scan.rows[0].values[0].value, serde_json::json!("-3"));
    assert_eq!(scan.rows[0].row_id.value, serde_json::json!("0"));
    let _: &dyn ConformanceReader = &Arrow(ReferenceInArrow(ReferenceReader::new()));
}

/// A scan batch: the five fixed columns for `rows` rows (row ids 0.., versions 1), then
/// `values`.
fn scan_batch(rows: usize, row_ids: &[Option<u64>], values: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let mut columns: Vec<(&str, ArrayRef)> = vec![
        ("fragment", Arc::new(UInt64Array::from(vec![0u64; rows]))),
        (
            "offset",
            Arc::new(UInt32Array::from((0..rows as u32).collect::<Vec<_>>())),
        ),
        ("_rowid", Arc::new(UInt64Array::from(row_ids.to_vec()))),
        (
            "_row_created_at_version",
            Arc::new(UInt64Array::from(vec![1u64; rows])),
        ),
        (
            "_row_last_updated_at_version",
            Arc::new(UInt64Array::from(vec![1u64; rows])),
        ),
    ];
    columns.extend(values);
    RecordBatch::try_from_iter(columns).unwrap()
}

#[test]
fn batches_compared_in_place_get_the_verdict_of_their_conversion() {
    use lance_conformance::expected::column_form;
    use lance_conformance::expected::{Column, Rows};
    use lance_conformance::runner::arrow_reader::CheckedScan;
    use lance_conformance::runner::compare;

    let request = ScanRequest {
        at: VersionRef {
            dataset: "/d".into(),
            version: 1,
        },
        columns: None,
    };
    // What is expected: three rows of an int64, a utf8, a float32 and an int32 column.
    let good = || -> Vec<(&'static str, ArrayRef)> {
        vec![
            (
                "id",
                Arc::new(Int64Array::from(vec![Some(-3), None, Some(1 << 40)])),
            ),
            (
                "name",
                Arc::new(StringArray::from(vec![Some("a"), Some(""), None])),
            ),
            (
                "x",
                Arc::new(Float32Array::from(vec![Some(0.1), Some(-0.0), None])),
            ),
            (
                "n",
                Arc::new(Int32Array::from(vec![Some(7), Some(i32::MIN), None])),
            ),
        ]
    };
    let ids = [Some(0), Some(1), Some(2)];
    let want = scan_result(&request, &[scan_batch(3, &ids, good())]).unwrap();
    let columns: Vec<Column> = want.columns.clone();
    let form = column_form::encode(&columns, &want.rows).unwrap();
    let expected = [
        Rows::Listed(want.rows.clone()),
        Rows::Columns(column_form::decode(&columns, &form).unwrap()),
    ];
    // One change at a time; every answer is compared both ways, with every projection.
    let with = |k: usize, a: ArrayRef| {
        let mut v = good();
        v[k].1 = a;
        v
    };
    let answers: Vec<(&str, Vec<RecordBatch>)> = vec![
        ("the same", vec![scan_batch(3, &ids, good())]),
        (
            "in two batches",
            vec![
                scan_batch(3, &ids, good()).slice(0, 1),
                scan_batch(3, &ids, good()).slice(1, 2),
            ],
        ),
        (
            "an integer differs",
            vec![scan_batch(
                3,
                &ids,
                with(0, Arc::new(Int64Array::from(vec![Some(-3), None, Some(1)]))),
            )],
        ),
        (
            "a NULL for a value",
            vec![scan_batch(
                3,
                &ids,
                with(
                    0,
                    Arc::new(Int64Array::from(vec![None, None, Some(1 << 40)])),
                ),
            )],
        ),
        (
            "a value for a NULL",
            vec![scan_batch(
                3,
                &ids,
                with(
                    3,
                    Arc::new(Int32Array::from(vec![Some(7), Some(i32::MIN), Some(0)])),
                ),
            )],
        ),
        (
            "a row id differs",
            vec![scan_batch(3, &[Some(0), Some(5), Some(2)], good())],
        ),
        (
            "a row id is NULL",
            vec![scan_batch(3, &[Some(0), None, Some(2)], good())],
        ),
        (
            "a string differs",
            vec![scan_batch(
                3,
                &ids,
                with(1, Arc::new(StringArray::from(vec![Some("a"), None, None]))),
            )],
        ),
        (
            "-0.0 for 0.0",
            vec![scan_batch(
                3,
                &ids,
                with(
                    2,
                    Arc::new(Float32Array::from(vec![Some(0.1), Some(0.0), None])),
                ),
            )],
        ),
        (
            "an int32 column for an int64 one",
            vec![scan_batch(
                3,
                &ids,
                with(0, Arc::new(Int32Array::from(vec![Some(-3), None, Some(1)]))),
            )],
        ),
        ("a row short", vec![scan_batch(3, &ids, good()).slice(0, 2)]),
    ];
    let projections: [&[usize]; 3] = [&[0, 1, 2, 3], &[3, 2, 1, 0], &[1]];
    for (what, batches) in &answers {
        let converted = scan_result(&request, batches).unwrap();
        let checked = CheckedScan::check(&request, batches).unwrap();
        for rows in &expected {
            for projection in projections {
                // The answer's columns in projection order, as a reader asked for them answers.
                let project = |b: &RecordBatch| {
                    let keep: Vec<usize> = (0..5).chain(projection.iter().map(|p| 5 + p)).collect();
                    b.project(&keep).unwrap()
                };
                let projected: Vec<RecordBatch> = batches.iter().map(project).collect();
                let converted = scan_result(&request, &projected).unwrap();
                let checked = CheckedScan::check(&request, &projected).unwrap();
                let in_place = compare::scan(&columns, rows, projection, &checked);
                let by_conversion = compare::scan(&columns, rows, projection, &converted);
                assert_eq!(in_place, by_conversion, "{what}, projection {projection:?}");
                if *what == "the same" || *what == "in two batches" {
                    assert!(in_place.is_ok(), "{what}: {in_place:?}");
                }
            }
        }
        assert_eq!(checked.to_result().unwrap(), converted, "{what}");
    }
    // A batch the conversion refuses is refused by the check, with the same words.
    let unsigned = scan_batch(
        1,
        &[Some(0)],
        vec![("x", Arc::new(UInt32Array::from(vec![1u32])))],
    );
    let null_offset = RecordBatch::try_from_iter([
        (
            "fragment",
            Arc::new(UInt64Array::from(vec![0u64])) as ArrayRef,
        ),
        (
            "offset",
            Arc::new(UInt64Array::from(vec![None::<u64>])) as ArrayRef,
        ),
        (
            "_rowid",
            Arc::new(UInt64Array::from(vec![0u64])) as ArrayRef,
        ),
        (
            "_row_created_at_version",
            Arc::new(UInt64Array::from(vec![1u64])) as ArrayRef,
        ),
        (
            "_row_last_updated_at_version",
            Arc::new(Int64Array::from(vec![1i64])) as ArrayRef,
        ),
    ])
    .unwrap();
    for batch in [unsigned, null_offset] {
        let refused = CheckedScan::check(&request, std::slice::from_ref(&batch)).unwrap_err();
        assert_eq!(Err(refused), scan_result(&request, &[batch]));
    }
}

#[test]
fn an_arrow_reader_answering_no_rows_fails() {
    // The reference in Arrow, its scans answered with the fixed columns and no row.
    struct Empty(ReferenceInArrow);
    impl ArrowReader for Empty {
        fn describe(&mut self) -> Answer<Description> {
            self.0.describe()
        }
        fn open(&mut self, at: &VersionRef) -> Answer<OpenResult> {
            self.0.open(at)
        }
        fn scan(&mut self, request: &ScanRequest) -> Answer<Vec<RecordBatch>> {
            let batches = self.0.scan(request)?;
            Ok(batches.iter().map(|b| b.slice(0, 0)).collect())
        }
        fn lineage(&mut self, at: &VersionRef, fragment: u64) -> Answer<FragmentLineage> {
            self.0.lineage(at, fragment)
        }
        fn exclusion(&mut self, at: &VersionRef) -> Answer<ExclusionResult> {
            self.0.exclusion(at)
        }
        fn query(&mut self, at: &VersionRef, query: &QueryRequest) -> Answer<ArrowQueryAnswer> {
            self.0.query(at, query)
        }
    }
    let mut reader = Arrow(Empty(ReferenceInArrow(ReferenceReader::new())));
    let mut options = Options::new(corpus());
    options.filters.cases = vec![
        "overlays/worked-example".into(),
        "dataset/offsets-past-65536".into(),
    ];
    let report = run_suite(&mut reader, options).unwrap();
    assert_eq!(report.summary.failed, 2, "{:?}", report.summary);
    for case in &report.cases {
        let problem = case.first_problem().unwrap_or_default();
        assert!(
            problem.contains("rows expected, 0 returned"),
            "{}: {problem}",
            case.id
        );
    }
}
