//! Arrow at the Rust seam: a reader that answers scans and queries with Arrow record batches,
//! judged exactly as any other reader.
//!
//! Invariant: the conversion from Arrow to the protocol's typed JSON happens here and nowhere
//! else, and it is strict: a batch is converted only when every column it must have is there
//! with an Arrow type that means exactly one case type ([`case_type`]); anything else is the
//! reader's breakage ([`Refusal::Broken`]), never a silently different value. So a Rust reader
//! that produces record batches implements [`ArrowReader`], wraps itself in [`Arrow`], and is
//! run by [`super::run_suite`] with no conversion of its own. The checks and the conversion are
//! two steps ([`CheckedScan::check`], then [`CheckedScan::to_result`]): the runner compares a
//! checked scan with `expected/` in place, each cell meaning what its conversion would spell.
//!
//! A scan's batches hold, in this order, `fragment` and `offset` (`UInt64` or `UInt32`),
//! `_rowid`, `_row_created_at_version` and `_row_last_updated_at_version` (`UInt64`, nullable
//! where the reader has no value), then the projected columns in projection order, named as
//! requested. A query's hits are a batch of `fragment`, `offset` and, for vector queries,
//! `distance` (`Float32`).

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use serde_json::{Map, Value as Json};

use super::conformance_reader::{Answer, ConformanceReader, Description, Refusal};
use super::protocol::{
    ExclusionResult, OpenResult, QueryAnswer, QueryPlan, QueryRequest, Reconciliation, ScanRequest,
    ScanResult, VersionRef,
};
use crate::expected::tagged::{Tagged, f32_text, f64_text};
use crate::expected::{Column, FragmentLineage, Hit, QueryKind, Row};

/// A query answered with record batches of hits.
#[derive(Debug, Clone)]
pub struct ArrowQueryAnswer {
    /// Scalar or vector.
    pub kind: QueryKind,
    /// The answer (scalar: sorted by row; vector: rank order, with distances).
    pub final_rows: RecordBatch,
    /// `candidates`, `excluded`, `reevaluated`, `rematched`, for a reader that declares
    /// `exclusion`.
    pub reconciliation: Option<[RecordBatch; 4]>,
    /// How the reader answered (see [`QueryPlan`]).
    pub plan: Option<QueryPlan>,
}

/// A reader under test that answers with Arrow. The contract is [`ConformanceReader`]'s; only
/// the shapes of `scan` and `query` answers differ (see the module docs).
pub trait ArrowReader {
    /// Who the reader is and what it can do.
    fn describe(&mut self) -> Answer<Description>;
    /// Opens `at` and checks it as a reader must before returning rows.
    fn open(&mut self, at: &VersionRef) -> Answer<OpenResult>;
    /// Scans `request.at`: every live row, fragments in manifest order, rows in physical
    /// order, in one or more batches.
    fn scan(&mut self, request: &ScanRequest) -> Answer<Vec<RecordBatch>>;
    /// The lineage placement of `fragment` at `at`.
    fn lineage(&mut self, at: &VersionRef, fragment: u64) -> Answer<FragmentLineage>;
    /// Every exclusion set at `at`.
    fn exclusion(&mut self, at: &VersionRef) -> Answer<ExclusionResult>;
    /// Answers `query` at `at`.
    fn query(&mut self, at: &VersionRef, query: &QueryRequest) -> Answer<ArrowQueryAnswer>;
}

/// An [`ArrowReader`] as a [`ConformanceReader`].
#[derive(Debug)]
pub struct Arrow<R>(pub R);

/// The case type an Arrow type stands for, or `None` when it stands for none (or for more
/// than one).
pub fn case_type(data_type: &DataType) -> Option<String> {
    Some(match data_type {
        DataType::Boolean => "bool".into(),
        DataType::Int32 => "int32".into(),
        DataType::Int64 => "int64".into(),
        DataType::UInt64 => "uint64".into(),
        DataType::Float32 => "float32".into(),
        DataType::Float64 => "float64".into(),
        DataType::Utf8 | DataType::LargeUtf8 => "utf8".into(),
        DataType::FixedSizeList(item, n) if item.data_type() == &DataType::Float32 && *n > 0 => {
            format!("fixed_size_list<float32,{n}>")
        }
        DataType::Struct(fields) => {
            if fields.iter().any(|f| case_type(f.data_type()).is_none()) {
                return None;
            }
            "struct".into()
        }
        _ => return None,
    })
}

fn broken(what: String) -> Refusal {
    Refusal::Broken(format!("arrow answer: {what}"))
}

/// The value at `row` of `array` as a tagged value of its case type.
fn tagged(array: &dyn Array, row: usize) -> Result<Tagged, Refusal> {
    let data_type = case_type(array.data_type())
        .ok_or_else(|| broken(format!("type {} has no case type", array.data_type())))?;
    tagged_as(array, row, data_type)
}

/// The value at `row` of `array`, whose case type (`case_type(array.data_type())`) the caller
/// computed once for the column.
fn tagged_as(array: &dyn Array, row: usize, data_type: String) -> Result<Tagged, Refusal> {
    if row >= array.len() {
        return Err(broken(format!("row {row} past the end ({})", array.len())));
    }
    let value = if array.is_null(row) {
        Json::Null
    } else {
        match array.data_type() {
            DataType::Boolean => Json::Bool(array.as_boolean().value(row)),
            DataType::Int32 => Json::from(array.as_primitive::<Int32Type>().value(row)),
            DataType::Int64 => {
                Json::String(array.as_primitive::<Int64Type>().value(row).to_string())
            }
            DataType::UInt64 => {
                Json::String(array.as_primitive::<UInt64Type>().value(row).to_string())
            }
            DataType::Float32 => {
                Json::String(f32_text(array.as_primitive::<Float32Type>().value(row)))
            }
            DataType::Float64 => {
                Json::String(f64_text(array.as_primitive::<Float64Type>().value(row)))
            }
            DataType::Utf8 => Json::String(array.as_string::<i32>().value(row).to_string()),
            DataType::LargeUtf8 => Json::String(array.as_string::<i64>().value(row).to_string()),
            DataType::FixedSizeList(..) => {
                let list = array.as_fixed_size_list();
                let items = list.value(row);
                let items = items.as_primitive::<Float32Type>();
                Json::Array(
                    (0..items.len())
                        .map(|i| {
                            if items.is_null(i) {
                                Json::Null
                            } else {
                                Json::String(f32_text(items.value(i)))
                            }
                        })
                        .collect(),
                )
            }
            DataType::Struct(fields) => {
                let s = array.as_struct();
                let mut out = Map::new();
                for (field, child) in fields.iter().zip(s.columns()) {
                    let t = tagged(child.as_ref(), row)?;
                    out.insert(
                        field.name().clone(),
                        serde_json::to_value(t).map_err(|e| broken(e.to_string()))?,
                    );
                }
                Json::Object(out)
            }
            other => return Err(broken(format!("type {other} has no case type"))),
        }
    };
    Ok(Tagged { data_type, value })
}

/// The column `name` of `batch`.
fn column<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a ArrayRef, Refusal> {
    batch
        .column_by_name(name)
        .ok_or_else(|| broken(format!("no column {name:?}")))
}

/// An unsigned position (`fragment`, `offset`) at `row`.
fn position(array: &dyn Array, name: &str, row: usize) -> Result<u64, Refusal> {
    if array.is_null(row) {
        return Err(broken(format!("{name} is NULL at row {row}")));
    }
    match array.data_type() {
        DataType::UInt64 => Ok(array.as_primitive::<UInt64Type>().value(row)),
        DataType::UInt32 => Ok(u64::from(array.as_primitive::<UInt32Type>().value(row))),
        other => Err(broken(format!("{name} is {other}, not UInt64 or UInt32"))),
    }
}

/// Checks that a lineage column (`_rowid`, ...) is `UInt64`.
fn lineage_column(array: &dyn Array, name: &str) -> Result<(), Refusal> {
    if array.data_type() != &DataType::UInt64 {
        return Err(broken(format!(
            "{name} is {}, not UInt64",
            array.data_type()
        )));
    }
    Ok(())
}

/// The case type of the lineage columns.
const LINEAGE_TYPE: &str = "uint64";

/// The protocol form of a scan answered in batches: [`CheckedScan::check`], then every cell
/// converted ([`CheckedScan::to_result`]).
pub fn scan_result(request: &ScanRequest, batches: &[RecordBatch]) -> Answer<ScanResult> {
    CheckedScan::check(request, batches)?.to_result()
}

/// A scan's batches that convert: every check of the conversion made, in the conversion's
/// order (so the first problem is the one [`scan_result`] reports), and no cell converted
/// yet. The runner compares such a scan with `expected/` cell by cell ([`ArrowCell`]), and
/// [`CheckedScan::to_result`] converts it whole; what is checked here is all the conversion
/// could refuse, so a checked scan always converts.
#[derive(Debug)]
pub struct CheckedScan<'a> {
    /// The projected columns with their case types.
    columns: Vec<Column>,
    batches: &'a [RecordBatch],
    /// Each row in answer order: its batch, its row there, its fragment and offset.
    rows: Vec<(usize, usize, u64, u64)>,
}

/// One cell of a [`CheckedScan`]: a value of a checked column, with its case type.
#[derive(Debug, Clone, Copy)]
pub struct ArrowCell<'a> {
    array: &'a dyn Array,
    row: usize,
    data_type: &'a str,
}

impl ArrowCell<'_> {
    /// The cell's case type.
    pub fn data_type(&self) -> &str {
        self.data_type
    }

    /// The integer the cell holds (`Some(None)`: NULL) when its column is `Int32`, `Int64` or
    /// `UInt64`; `None` for any other column. The tagged value ([`ArrowCell::to_tagged`]) spells
    /// the same integer.
    pub fn integer(&self) -> Option<Option<i128>> {
        let value = match self.array.data_type() {
            DataType::Int32 | DataType::Int64 | DataType::UInt64
                if self.array.is_null(self.row) =>
            {
                return Some(None);
            }
            DataType::Int32 => i128::from(self.array.as_primitive::<Int32Type>().value(self.row)),
            DataType::Int64 => i128::from(self.array.as_primitive::<Int64Type>().value(self.row)),
            DataType::UInt64 => i128::from(self.array.as_primitive::<UInt64Type>().value(self.row)),
            _ => return None,
        };
        Some(Some(value))
    }

    /// The cell as the tagged value the conversion gives it.
    pub fn to_tagged(&self) -> Answer<Tagged> {
        tagged_as(self.array, self.row, self.data_type.to_string())
    }
}

impl<'a> CheckedScan<'a> {
    /// Checks `batches` as the answer to `request`: each batch starts with the five fixed
    /// columns (see the module docs), every other column has a case type, the columns are the
    /// ones asked for and the same in every batch, and every row has a fragment and an offset
    /// (`UInt64` or `UInt32`, not NULL) and `UInt64` lineage columns. Anything else is the
    /// reader's breakage.
    pub fn check(request: &ScanRequest, batches: &'a [RecordBatch]) -> Answer<CheckedScan<'a>> {
        const FIXED: [&str; 5] = lance_reference::scan::BATCH_PREFIX;
        let mut columns: Option<Vec<Column>> = None;
        let mut rows = Vec::new();
        for (b, batch) in batches.iter().enumerate() {
            let schema = batch.schema();
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            if names.len() < FIXED.len() || names[..FIXED.len()] != FIXED {
                return Err(broken(format!(
                    "a scan batch starts with {FIXED:?}, not {:?}",
                    &names[..names.len().min(FIXED.len())]
                )));
            }
            let mut these = Vec::new();
            for f in schema.fields().iter().skip(FIXED.len()) {
                let data_type = case_type(f.data_type()).ok_or_else(|| {
                    broken(format!(
                        "column {:?} is {}, which has no case type",
                        f.name(),
                        f.data_type()
                    ))
                })?;
                these.push(Column {
                    name: f.name().clone(),
                    data_type,
                });
            }
            if let Some(requested) = &request.columns {
                let got: Vec<&String> = these.iter().map(|c| &c.name).collect();
                if got.iter().copied().ne(requested.iter()) {
                    return Err(broken(format!(
                        "columns {got:?}, but {requested:?} were asked for"
                    )));
                }
            }
            match &columns {
                Some(c) if *c != these => {
                    return Err(broken("batches of one scan have different columns".into()));
                }
                Some(_) => {}
                None => columns = Some(these),
            }
            let fixed: Vec<&ArrayRef> = FIXED
                .iter()
                .map(|n| column(batch, n))
                .collect::<Result<_, _>>()?;
            rows.reserve(batch.num_rows());
            for row in 0..batch.num_rows() {
                let fragment = position(fixed[0].as_ref(), FIXED[0], row)?;
                let offset = position(fixed[1].as_ref(), FIXED[1], row)?;
                for (array, name) in fixed[2..].iter().zip(&FIXED[2..]) {
                    lineage_column(array.as_ref(), name)?;
                }
                rows.push((b, row, fragment, offset));
            }
        }
        Ok(CheckedScan {
            columns: columns.unwrap_or_default(),
            batches,
            rows,
        })
    }

    /// The projected columns, in projection order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Row `i`'s fragment and offset.
    pub fn position(&self, i: usize) -> Option<(u64, u64)> {
        self.rows.get(i).map(|&(_, _, f, o)| (f, o))
    }

    /// Row `i`'s `_rowid`, `_row_created_at_version` and `_row_last_updated_at_version`.
    pub fn lineage(&self, i: usize) -> Option<[ArrowCell<'_>; 3]> {
        let &(b, row, _, _) = self.rows.get(i)?;
        let batch = self.batches.get(b)?;
        let cell = |k: usize| -> Option<ArrowCell<'_>> {
            Some(ArrowCell {
                array: batch.columns().get(2 + k)?.as_ref(),
                row,
                data_type: LINEAGE_TYPE,
            })
        };
        Some([cell(0)?, cell(1)?, cell(2)?])
    }

    /// Row `i`'s value in projected column `p`.
    pub fn value(&self, i: usize, p: usize) -> Option<ArrowCell<'_>> {
        let &(b, row, _, _) = self.rows.get(i)?;
        let array = self.batches.get(b)?.columns().get(5 + p)?.as_ref();
        Some(ArrowCell {
            array,
            row,
            data_type: &self.columns.get(p)?.data_type,
        })
    }

    /// Every row converted to the protocol's form.
    pub fn to_result(&self) -> Answer<ScanResult> {
        let mut rows = Vec::with_capacity(self.rows.len());
        let lost = || broken("a checked row is gone".into());
        for i in 0..self.rows.len() {
            let (fragment, offset) = self.position(i).ok_or_else(lost)?;
            let [row_id, created_at, last_updated_at] = self.lineage(i).ok_or_else(lost)?;
            let values = (0..self.columns.len())
                .map(|p| self.value(i, p).ok_or_else(lost)?.to_tagged())
                .collect::<Result<_, _>>()?;
            rows.push(Row {
                fragment,
                offset,
                row_id: row_id.to_tagged()?,
                created_at: created_at.to_tagged()?,
                last_updated_at: last_updated_at.to_tagged()?,
                values,
            });
        }
        Ok(ScanResult {
            columns: self.columns.clone(),
            rows,
        })
    }
}

/// The hits of a batch: `fragment`, `offset`, and `distance` (`Float32`) where there is one
/// (vector queries; a NULL distance is none).
pub fn hits(batch: &RecordBatch) -> Answer<Vec<Hit>> {
    let fragment = column(batch, "fragment")?;
    let offset = column(batch, "offset")?;
    let distance = batch.column_by_name("distance");
    if let Some(d) = distance.filter(|d| d.data_type() != &DataType::Float32) {
        return Err(broken(format!(
            "distance is {}, not Float32",
            d.data_type()
        )));
    }
    (0..batch.num_rows())
        .map(|row| {
            Ok(Hit {
                fragment: position(fragment.as_ref(), "fragment", row)?,
                offset: position(offset.as_ref(), "offset", row)?,
                distance: match distance {
                    Some(d) if !d.is_null(row) => Some(tagged(d.as_ref(), row)?),
                    _ => None,
                },
            })
        })
        .collect()
}

impl<R: ArrowReader> ConformanceReader for Arrow<R> {
    fn describe(&mut self) -> Answer<Description> {
        self.0.describe()
    }

    fn open(&mut self, at: &VersionRef) -> Answer<OpenResult> {
        self.0.open(at)
    }

    fn scan(&mut self, request: &ScanRequest) -> Answer<ScanResult> {
        let batches = self.0.scan(request)?;
        scan_result(request, &batches)
    }

    fn scan_batches(&mut self, request: &ScanRequest) -> Option<Answer<Vec<RecordBatch>>> {
        Some(self.0.scan(request))
    }

    fn lineage(&mut self, at: &VersionRef, fragment: u64) -> Answer<FragmentLineage> {
        self.0.lineage(at, fragment)
    }

    fn exclusion(&mut self, at: &VersionRef) -> Answer<ExclusionResult> {
        self.0.exclusion(at)
    }

    fn query(&mut self, at: &VersionRef, query: &QueryRequest) -> Answer<QueryAnswer> {
        let a = self.0.query(at, query)?;
        let reconciliation = match &a.reconciliation {
            None => None,
            Some([c, e, r, m]) => Some(Reconciliation {
                candidates: hits(c)?,
                excluded: hits(e)?,
                reevaluated: hits(r)?,
                rematched: hits(m)?,
            }),
        };
        Ok(QueryAnswer {
            kind: a.kind,
            final_rows: hits(&a.final_rows)?,
            reconciliation,
            plan: a.plan,
        })
    }
}
