//! Expected results: what a conforming reader returns for each version of a case, as typed
//! JSON (`expected/v<N>.json`, `expected/error.json`), and a parser for it.
//!
//! Invariant: everything here is computed from a version *as read back* from the store, by
//! the reference's reader, exclusion and query modules; nothing is copied from the scenario.
//! Output is deterministic: struct fields serialize in declaration order, JSON objects (struct
//! values) in key order, lists in the documented order, laid out by [`json_text`] ([`to_json`]).
//! Each declared query's final rows are checked against the flat
//! answer ([`lance_reference::query::flat_filter`] / `flat_top_k`) while computing them.
//!
//! The published schema is `spec/schemas/expected.schema.json`.

pub mod column_form;
pub mod json_text;
pub mod rows;
pub mod tagged;

use lance_reference::exclusion::ExclusionSets;
use lance_reference::model::{FieldId, Fragment, LineageSequence, Snapshot, Value};
use lance_reference::query::{self, RowRef, Scored};
use serde::{Deserialize, Serialize};

use crate::case::cell::type_name;
use crate::case::names::field_id;
use crate::case::{Case, QuerySpec};
use crate::reader;
pub use rows::{ExpectedCell, Rows};
use tagged::{Tagged, tag, tag_scalar};

/// One top-level column of the resolved table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    /// Column name.
    pub name: String,
    /// Type, spelled as in `case.toml`.
    #[serde(rename = "type")]
    pub data_type: String,
}

/// One live row, in physical order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// Fragment id.
    pub fragment: u64,
    /// Physical offset in the fragment.
    pub offset: u64,
    /// `_rowid` (uint64).
    #[serde(rename = "_rowid")]
    pub row_id: Tagged,
    /// `_row_created_at_version` (uint64).
    #[serde(rename = "_row_created_at_version")]
    pub created_at: Tagged,
    /// `_row_last_updated_at_version` (uint64).
    #[serde(rename = "_row_last_updated_at_version")]
    pub last_updated_at: Tagged,
    /// One tagged value per column, in `columns` order.
    pub values: Vec<Tagged>,
}

/// Where one lineage sequence lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "placement", rename_all = "snake_case", deny_unknown_fields)]
pub enum Location {
    /// Not recorded.
    Absent,
    /// In the manifest.
    Inline,
    /// In a hidden column of a data file.
    Column {
        /// The data file's path, relative to the dataset root.
        file: String,
    },
}

/// A fragment's lineage placement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FragmentLineage {
    /// Fragment id.
    pub fragment: u64,
    /// Rows physically stored, deleted ones included.
    pub physical_rows: u64,
    /// Row ids.
    pub row_ids: Location,
    /// Created-at versions.
    pub created_at: Location,
    /// Last-updated-at versions.
    pub last_updated_at: Location,
}

/// The exclusion set of one (index, covered fragment).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExclusionSet {
    /// Index name.
    pub index: String,
    /// Fragment id.
    pub fragment: u64,
    /// Excluded physical offsets, ascending.
    pub offsets: Vec<u32>,
}

/// A row in a query result; vector results carry the squared L2 distance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hit {
    /// Fragment id.
    pub fragment: u64,
    /// Physical offset.
    pub offset: u64,
    /// Squared L2 distance (float32), vector queries only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distance: Option<Tagged>,
}

/// Scalar or vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueryKind {
    /// A scalar predicate through a BTree index.
    Scalar,
    /// An L2 top-k through a vector index.
    Vector,
}

/// How one declared query is reconciled at one version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryResult {
    /// The query's name in `case.toml`.
    pub name: String,
    /// The index.
    pub index: String,
    /// Scalar or vector.
    pub kind: QueryKind,
    /// What the index returns (scalar: sorted by row; vector: its top k after the prefilter,
    /// in rank order).
    pub candidates: Vec<Hit>,
    /// Index hits dropped because they are in the exclusion set (sorted by row).
    pub excluded: Vec<Hit>,
    /// Live rows evaluated on current values (sorted by row).
    pub reevaluated: Vec<Hit>,
    /// Re-evaluated rows that match (scalar) or have a distance (vector).
    pub rematched: Vec<Hit>,
    /// The answer (scalar: sorted by row; vector: rank order).
    #[serde(rename = "final")]
    pub final_rows: Vec<Hit>,
    /// Vector only: the rows past place k at the k-th row's distance, in row order. A reader
    /// may return any of them, or of the tied rows in `final_rows`, at the last places
    /// ([OVL-QRY-5]). Left out of the file when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tied_past_k: Vec<Hit>,
}

/// `expected/v<N>.json`. Its `rows` are written in the row form (an array of [`Row`]) up to
/// [`column_form::ROW_FORM_MAX`] rows and in the [`column_form`] past that; both read back
/// to the same rows.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "VersionFile")]
pub struct ExpectedVersion {
    /// The case id.
    pub case: String,
    /// The dataset version.
    pub version: u64,
    /// Top-level columns in schema order.
    pub columns: Vec<Column>,
    /// Live rows: fragments in manifest order, rows in physical order.
    pub rows: Rows,
    /// Lineage placement per fragment, in manifest order.
    pub fragments: Vec<FragmentLineage>,
    /// Exclusion sets, by index name then fragment id.
    pub exclusion_sets: Vec<ExclusionSet>,
    /// Declared queries answered at this version, in declaration order.
    pub queries: Vec<QueryResult>,
}

/// `rows` as a file holds them: the row form or the column form.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
enum RowsFile {
    Rows(Vec<Row>),
    Columns(column_form::ColumnForm),
}

impl<'de> Deserialize<'de> for RowsFile {
    /// An array is the row form, an object the column form (read straight, without
    /// buffering, so a large file is parsed once).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
        struct Form;
        impl<'de> serde::de::Visitor<'de> for Form {
            type Value = RowsFile;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of rows (row form) or an object (column form)")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, a: A) -> Result<RowsFile, A::Error> {
                Vec::deserialize(SeqAccessDeserializer::new(a)).map(RowsFile::Rows)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, a: A) -> Result<RowsFile, A::Error> {
                column_form::ColumnForm::deserialize(MapAccessDeserializer::new(a))
                    .map(RowsFile::Columns)
            }
        }
        d.deserialize_any(Form)
    }
}

/// `expected/v<N>.json` as written; [`ExpectedVersion`] with its rows in either form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct VersionFile {
    case: String,
    version: u64,
    columns: Vec<Column>,
    rows: RowsFile,
    fragments: Vec<FragmentLineage>,
    exclusion_sets: Vec<ExclusionSet>,
    queries: Vec<QueryResult>,
}

impl TryFrom<VersionFile> for ExpectedVersion {
    type Error = column_form::ColumnFormError;

    fn try_from(f: VersionFile) -> Result<Self, Self::Error> {
        let rows = match f.rows {
            RowsFile::Rows(rows) => Rows::Listed(rows),
            RowsFile::Columns(form) => Rows::Columns(column_form::decode(&f.columns, &form)?),
        };
        Ok(ExpectedVersion {
            case: f.case,
            version: f.version,
            columns: f.columns,
            rows,
            fragments: f.fragments,
            exclusion_sets: f.exclusion_sets,
            queries: f.queries,
        })
    }
}

impl Serialize for ExpectedVersion {
    /// The column form past [`column_form::ROW_FORM_MAX`] rows, when it round-trips (it does
    /// for every version the reference computes); the row form otherwise.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let listed = self.rows.to_vec();
        let columns = (listed.len() > column_form::ROW_FORM_MAX)
            .then(|| column_form::encode(&self.columns, &listed))
            .flatten();
        let rows = match columns {
            Some(form) => RowsFile::Columns(form),
            None => RowsFile::Rows(listed),
        };
        VersionFile {
            case: self.case.clone(),
            version: self.version,
            columns: self.columns.clone(),
            rows,
            fragments: self.fragments.clone(),
            exclusion_sets: self.exclusion_sets.clone(),
            queries: self.queries.clone(),
        }
        .serialize(s)
    }
}

/// `expected/error.json`: what a reader must do with the damaged newest version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedError {
    /// The case id.
    pub case: String,
    /// The damaged version.
    pub version: u64,
    /// Required class: `malformed`, `invalid` or `unsupported_feature`.
    pub class: String,
    /// The reference's error code, when the case pins one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// Why expected results could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum ExpectedFailure {
    /// The reference refused to read a version that should be readable.
    #[error("version {version}: the reference refuses to read it [{}/{}]: {error}", error.class().as_str(), error.code())]
    Unreadable {
        /// The version.
        version: u64,
        /// The error.
        error: lance_reference::Error,
    },
    /// A declared query does not make sense at a version.
    #[error("query {name:?} at version {version}: {problem}")]
    Query {
        /// The query.
        name: String,
        /// The version.
        version: u64,
        /// What is wrong.
        problem: String,
    },
    /// A negative case's damaged version reads, or fails differently than declared.
    #[error("negative case: {0}")]
    Negative(String),
}

/// JSON with 2-space indentation, short objects and arrays on one line, and a trailing
/// newline ([`json_text::layout`]).
pub fn to_json<T: Serialize>(value: &T) -> String {
    json_text::layout(&serde_json::to_string(value).unwrap_or_default())
}

/// Parses `expected/v<N>.json`.
pub fn parse_version(text: &str) -> Result<ExpectedVersion, serde_json::Error> {
    serde_json::from_str(text)
}

/// Parses `expected/error.json`.
pub fn parse_error(text: &str) -> Result<ExpectedError, serde_json::Error> {
    serde_json::from_str(text)
}

fn uint(v: u64) -> Tagged {
    tag_scalar(&Value::UInt64(v))
}

fn placement(fragment: &Fragment, seq: &LineageSequence, field: FieldId) -> Location {
    match seq {
        LineageSequence::Absent => Location::Absent,
        LineageSequence::Inline(_) => Location::Inline,
        LineageSequence::Column => Location::Column {
            file: fragment
                .files
                .iter()
                .find(|f| f.fields.contains(&field))
                .map_or_else(String::new, |f| format!("data/{}", f.path)),
        },
    }
}

/// The expected results of `snapshot` (one version read back) for `case`.
pub fn compute(case: &Case, snapshot: &Snapshot) -> Result<ExpectedVersion, ExpectedFailure> {
    let version = snapshot.version;
    let scanned =
        reader::read(snapshot).map_err(|error| ExpectedFailure::Unreadable { version, error })?;
    let schema = &snapshot.schema;
    let top: Vec<FieldId> = schema.top_level().map(|f| f.id).collect();
    let mut queries = Vec::new();
    for q in case.queries.iter().filter(|q| q.at.contains(&version)) {
        queries.push(answer(snapshot, q)?);
    }
    Ok(ExpectedVersion {
        case: case.id.clone(),
        version,
        columns: columns(schema, &top),
        rows: Rows::Listed(scanned.iter().map(|r| row(schema, &top, r)).collect()),
        fragments: snapshot.fragments.iter().map(fragment_lineage).collect(),
        exclusion_sets: exclusion_sets(snapshot),
        queries,
    })
}

/// The columns of a scan projecting `fields` (top-level field ids), in that order.
pub fn columns(schema: &lance_reference::model::Schema, fields: &[FieldId]) -> Vec<Column> {
    fields
        .iter()
        .filter_map(|id| schema.field(*id))
        .map(|f| Column {
            name: f.name.clone(),
            data_type: type_name(&f.data_type),
        })
        .collect()
}

/// One scanned row as typed JSON; `fields` are the projected field ids, in `row.values` order.
pub fn row(
    schema: &lance_reference::model::Schema,
    fields: &[FieldId],
    row: &lance_reference::scan::ScanRow,
) -> Row {
    Row {
        fragment: row.fragment,
        offset: row.offset,
        row_id: uint(row.row_id),
        created_at: uint(row.created_at),
        last_updated_at: uint(row.last_updated_at),
        values: fields
            .iter()
            .zip(&row.values)
            .map(|(f, v)| tag(schema, *f, v))
            .collect(),
    }
}

/// Where `fragment`'s three lineage sequences live.
pub fn fragment_lineage(fragment: &Fragment) -> FragmentLineage {
    FragmentLineage {
        fragment: fragment.id,
        physical_rows: fragment.physical_rows,
        row_ids: placement(fragment, &fragment.lineage.row_ids, -3),
        created_at: placement(fragment, &fragment.lineage.created_at, -4),
        last_updated_at: placement(fragment, &fragment.lineage.last_updated_at, -5),
    }
}

/// Every exclusion set of `snapshot`, by index name then fragment id.
pub fn exclusion_sets(snapshot: &Snapshot) -> Vec<ExclusionSet> {
    ExclusionSets::of_snapshot(snapshot)
        .sets
        .into_iter()
        .map(|((index, fragment), set)| ExclusionSet {
            index,
            fragment,
            offsets: set.iter().collect(),
        })
        .collect()
}

fn hit(r: &RowRef) -> Hit {
    Hit {
        fragment: r.fragment,
        offset: r.offset,
        distance: None,
    }
}

fn scored(s: &Scored) -> Hit {
    Hit {
        fragment: s.row.fragment,
        offset: s.row.offset,
        distance: Some(tag_scalar(&Value::Float32(s.distance))),
    }
}

/// Reconciles one declared query and checks it against the flat answer.
fn answer(snapshot: &Snapshot, q: &QuerySpec) -> Result<QueryResult, ExpectedFailure> {
    let fail = |problem: String| ExpectedFailure::Query {
        name: q.name.clone(),
        version: snapshot.version,
        problem,
    };
    let schema = &snapshot.schema;
    if let Some(p) = &q.predicate {
        let predicate = p
            .to_predicate(schema, &|n| field_id(schema, n))
            .map_err(|e| fail(e.to_string()))?;
        return answer_scalar(snapshot, &q.name, &q.index, &predicate);
    }
    let (Some(vector), Some(k)) = (&q.vector, q.k) else {
        return Err(fail("needs `where`, or `vector` and `k`".into()));
    };
    answer_vector(snapshot, &q.name, &q.index, vector, k)
}

/// Reconciles the scalar query `name` (`predicate` through the BTree index `index`) and
/// checks its final rows against the flat scan.
pub fn answer_scalar(
    snapshot: &Snapshot,
    name: &str,
    index: &str,
    predicate: &query::Predicate,
) -> Result<QueryResult, ExpectedFailure> {
    let fail = |problem: String| ExpectedFailure::Query {
        name: name.to_string(),
        version: snapshot.version,
        problem,
    };
    let r = query::reconcile(snapshot, index, predicate).map_err(|e| fail(e.to_string()))?;
    let flat = query::flat_filter(snapshot, predicate).map_err(|e| fail(e.to_string()))?;
    if r.final_rows != flat {
        return Err(fail(format!(
            "reconciled {:?} differs from the flat scan {flat:?}",
            r.final_rows
        )));
    }
    Ok(QueryResult {
        name: name.to_string(),
        index: index.to_string(),
        kind: QueryKind::Scalar,
        candidates: r.candidates.iter().map(hit).collect(),
        excluded: r.excluded.iter().map(hit).collect(),
        reevaluated: r.reevaluated.iter().map(hit).collect(),
        rematched: r.rematched.iter().map(hit).collect(),
        final_rows: r.final_rows.iter().map(hit).collect(),
        tied_past_k: Vec::new(),
    })
}

/// Reconciles the vector query `name` (L2 top-`k` of `vector` through the vector index
/// `index`) and checks its final rows against the flat top-k.
pub fn answer_vector(
    snapshot: &Snapshot,
    name: &str,
    index: &str,
    vector: &[f32],
    k: usize,
) -> Result<QueryResult, ExpectedFailure> {
    let fail = |problem: String| ExpectedFailure::Query {
        name: name.to_string(),
        version: snapshot.version,
        problem,
    };
    let r = query::reconcile_vector(snapshot, index, vector, k).map_err(|e| fail(e.to_string()))?;
    let key = snapshot
        .index(index)
        .and_then(|i| i.fields.first().copied())
        .ok_or_else(|| fail("no such index".into()))?;
    let flat = query::flat_top_k(snapshot, key, vector, k).map_err(|e| fail(e.to_string()))?;
    let tied =
        query::flat_tied_past_k(snapshot, key, vector, k).map_err(|e| fail(e.to_string()))?;
    let rows = |v: &[Scored]| v.iter().map(|s| s.row).collect::<Vec<_>>();
    if rows(&r.final_rows) != rows(&flat) {
        return Err(fail(format!(
            "reconciled top-k {:?} differs from the flat top-k {:?}",
            rows(&r.final_rows),
            rows(&flat)
        )));
    }
    Ok(QueryResult {
        name: name.to_string(),
        index: index.to_string(),
        kind: QueryKind::Vector,
        candidates: r.candidates.iter().map(scored).collect(),
        excluded: r.excluded.iter().map(hit).collect(),
        reevaluated: r.reevaluated.iter().map(hit).collect(),
        rematched: r.rescored.iter().map(scored).collect(),
        final_rows: r.final_rows.iter().map(scored).collect(),
        tied_past_k: tied.iter().map(scored).collect(),
    })
}
