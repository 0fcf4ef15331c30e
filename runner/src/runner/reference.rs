//! The built-in reference reader: `lance-reference` behind [`ConformanceReader`].
//!
//! Invariant: every answer comes from reading the dataset directory named in the request with
//! the reference's dataset reader ([`Dataset::read_version`], which checks flags, framing,
//! paths, files and the snapshot) and the same functions that computed `expected/`
//! ([`crate::expected`]); nothing is read from `expected/`. Scans are answered as Arrow
//! record batches ([`ConformanceReader::scan_batches`]), judged as every Rust reader's batches
//! are, or converted by [`super::arrow_reader::scan_result`]; a reader made by
//! [`ReferenceReader::row_scans`] answers them from the row scan instead
//! ([`lance_reference::scan::scan`], the scan `expected/` was computed with), so that the
//! corpus judges both of the reference's scans. The last version read is cached,
//! keyed by directory and version, so a case's checks read each version once.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use lance_reference::error::CodedError;
use lance_reference::model::{FieldId, Snapshot};
use lance_reference::query::Predicate as ModelPredicate;
use lance_reference_io::{Dataset, ReadOptions};

use super::capability;
use super::unchanging::UnchangingStorage;
use super::conformance_reader::{Answer, ConformanceReader, Description, Refusal};
use super::protocol::{
    ExclusionResult, Implementation, Literal, OpenResult, Predicate, QueryAnswer, QueryRequest,
    ReadError, Reconciliation, ScanRequest, ScanResult, VersionRef,
};
use crate::case::{Capability, Op};
use crate::case::names::field_id;
use crate::expected::tagged::{Tagged, untag, untag_field};
use crate::expected::{self, ExpectedFailure, FragmentLineage, QueryResult};

/// The reference reader.
#[derive(Debug)]
pub struct ReferenceReader {
    cached: Option<(VersionRef, Result<Snapshot, ReadError>)>,
    capabilities: BTreeSet<String>,
    /// Whether scans are answered by the row scan ([`ReferenceReader::row_scans`]).
    rows: bool,
    /// Whether it reads a stored corpus ([`ReferenceReader::of_stored_corpus`]).
    stored: bool,
    /// For a reader of a stored corpus: the dataset directory it read last, kept open.
    opened: Option<(String, Dataset)>,
}

impl Default for ReferenceReader {
    fn default() -> Self {
        ReferenceReader::new()
    }
}

impl ReferenceReader {
    /// A reader declaring every capability.
    pub fn new() -> ReferenceReader {
        ReferenceReader::with_capabilities(ReferenceReader::capabilities())
    }

    /// A reader declaring only `capabilities`. Without a data capability it reads like a
    /// reader that does not implement the feature: it refuses, as an unsupported feature,
    /// every version whose content needs it ([`super::needs`]), so it passes the refusal
    /// profile; without a check capability its checks are `unsupported`.
    pub fn with_capabilities(capabilities: BTreeSet<String>) -> ReferenceReader {
        ReferenceReader {
            cached: None,
            capabilities,
            rows: false,
            stored: false,
            opened: None,
        }
    }

    /// A reader declaring every capability whose scans are answered by the row scan
    /// ([`lance_reference::scan::scan`]) rather than the record batches: the scan that computed
    /// `expected/`, judged here by the stored corpus like the reader's own.
    pub fn row_scans() -> ReferenceReader {
        ReferenceReader {
            rows: true,
            ..ReferenceReader::new()
        }
    }

    /// A reader declaring every capability, for a run of the stored corpus, whose files
    /// nothing writes while it reads them: the dataset directory it reads is kept open, over a
    /// storage that remembers what the reference decoded from it ([`super::unchanging`]), until
    /// it reads another one, so the versions of one dataset decode the files they share once.
    /// Every version is still read and checked whole, as [`read_checked`] reads it.
    pub fn of_stored_corpus() -> ReferenceReader {
        ReferenceReader {
            stored: true,
            ..ReferenceReader::new()
        }
    }

    /// The capabilities of the reference: every word of the vocabulary.
    pub fn capabilities() -> BTreeSet<String> {
        capability::VOCABULARY
            .iter()
            .map(|w| (*w).to_string())
            .collect()
    }

    /// Reads `at` (or returns the cached read).
    fn snapshot(&mut self, at: &VersionRef) -> Result<&Snapshot, Refusal> {
        let fresh = !matches!(&self.cached, Some((key, _)) if key == at);
        if fresh {
            let read = match self.lacking(at) {
                Some(words) => Err(ReadError {
                    class: "unsupported_feature".into(),
                    code: Some("unsupported".into()),
                    message: format!(
                        "version {} needs {words}, which this reader does not implement",
                        at.version
                    ),
                }),
                None => self.read(at),
            };
            self.cached = Some((at.clone(), read));
        }
        match &self.cached {
            Some((_, Ok(s))) => Ok(s),
            Some((_, Err(e))) => Err(Refusal::Error(e.clone())),
            None => Err(Refusal::Broken("no snapshot cached".into())),
        }
    }
}

impl ReferenceReader {
    /// Reads `at` as [`read_checked`] does; a reader of a stored corpus reads it from the
    /// dataset it keeps open (opened first when `at` names another directory).
    fn read(&mut self, at: &VersionRef) -> Result<Snapshot, ReadError> {
        if !self.stored {
            return read_checked(Path::new(&at.dataset), at.version);
        }
        let dataset = match self.opened.take() {
            Some((dir, dataset)) if dir == at.dataset => dataset,
            _ => {
                let storage = Arc::new(UnchangingStorage::new(Path::new(&at.dataset)));
                Dataset::open_in(storage, ReadOptions::default()).map_err(|e| read_error(&e))?
            }
        };
        let read = dataset
            .read_version(at.version)
            .map(|(snapshot, _)| snapshot)
            .map_err(|e| read_error(&e));
        self.opened = Some((at.dataset.clone(), dataset));
        read
    }

    /// The record batches of a scan: the requested top-level columns (all when none are
    /// named), read by [`lance_reference::scan::scan_batches`].
    fn batches(&mut self, request: &ScanRequest) -> Answer<Vec<RecordBatch>> {
        let s = self.snapshot(&request.at)?;
        let schema = &s.schema;
        let fields = projected(schema, request)?;
        lance_reference::scan::scan_batches(s, Some(&fields))
            .map_err(|e| Refusal::Error(read_error(&e)))
    }

    /// The data capabilities version `at` needs that this reader was not given.
    fn lacking(&self, at: &VersionRef) -> Option<String> {
        // A reader declaring every data capability lacks none, whatever the version needs.
        let declared = |c: &Capability| self.capabilities.contains(capability::word(*c));
        if super::needs::DATA_CAPABILITIES.iter().all(declared) {
            return None;
        }
        let needs = super::needs::of_version(Path::new(&at.dataset), at.version).ok()?;
        let missing = super::needs::missing(&needs, &self.capabilities);
        (!missing.is_empty()).then(|| super::needs::words(&missing))
    }
}

/// The top-level fields `request` projects, in its order (every top-level field without a
/// projection).
fn projected(
    schema: &lance_reference::model::Schema,
    request: &ScanRequest,
) -> Result<Vec<FieldId>, Refusal> {
    match &request.columns {
        None => Ok(schema.top_level().map(|f| f.id).collect()),
        Some(names) => names
            .iter()
            .map(|n| {
                schema
                    .top_level()
                    .find(|f| f.name == *n)
                    .map(|f| f.id)
                    .ok_or_else(|| Refusal::Broken(format!("no top-level column {n:?}")))
            })
            .collect(),
    }
}

/// A reference error as the protocol reports it.
pub fn read_error(e: &dyn CodedError) -> ReadError {
    ReadError {
        class: e.class().as_str().to_string(),
        code: Some(e.code().to_string()),
        message: e.to_string(),
    }
}

/// Opens `root` and reads `version` as a conforming reader must ([`Dataset::read_version`]
/// ends with [`lance_reference::readable::check_readable`]).
pub fn read_checked(root: &Path, version: u64) -> Result<Snapshot, ReadError> {
    let read = match Dataset::open(root) {
        Ok(dataset) => dataset.read_version(version),
        Err(e) => Err(e),
    };
    read.map(|(snapshot, _)| snapshot)
        .map_err(|e| read_error(&e))
}

fn failure(e: ExpectedFailure) -> Refusal {
    match e {
        ExpectedFailure::Unreadable { error, .. } => Refusal::Error(read_error(&error)),
        other => Refusal::Broken(other.to_string()),
    }
}

impl ConformanceReader for ReferenceReader {
    fn describe(&mut self) -> Answer<Description> {
        Ok(Description {
            implementation: Implementation {
                name: "lance-reference".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                language: Some("rust".into()),
                homepage: None,
            },
            capabilities: self.capabilities.clone(),
        })
    }

    fn open(&mut self, at: &VersionRef) -> Answer<OpenResult> {
        let s = self.snapshot(at)?;
        Ok(OpenResult { version: s.version })
    }

    fn scan(&mut self, request: &ScanRequest) -> Answer<ScanResult> {
        if self.rows {
            let s = self.snapshot(&request.at)?;
            let schema = &s.schema;
            let fields = projected(schema, request)?;
            let rows = lance_reference::scan::scan(s, Some(&fields))
                .map_err(|e| Refusal::Error(read_error(&e)))?;
            return Ok(ScanResult {
                columns: expected::columns(schema, &fields),
                rows: rows
                    .iter()
                    .map(|r| expected::row(schema, &fields, r))
                    .collect(),
            });
        }
        // Record batches, converted to the protocol's rows by the Arrow seam, as any Rust
        // reader's would be; `expected/` comes from the row scan, so every case checks one
        // against the other.
        let batches = self.batches(request)?;
        super::arrow_reader::scan_result(request, &batches)
    }

    fn scan_batches(&mut self, request: &ScanRequest) -> Option<Answer<Vec<RecordBatch>>> {
        // The row scan has no batches: its scans are judged through `scan`.
        (!self.rows).then(|| self.batches(request))
    }

    fn lineage(&mut self, at: &VersionRef, fragment: u64) -> Answer<FragmentLineage> {
        let s = self.snapshot(at)?;
        let f = s
            .fragment(fragment)
            .map_err(|e| Refusal::Broken(e.to_string()))?;
        Ok(expected::fragment_lineage(f))
    }

    fn exclusion(&mut self, at: &VersionRef) -> Answer<ExclusionResult> {
        let s = self.snapshot(at)?;
        Ok(ExclusionResult {
            exclusion_sets: expected::exclusion_sets(s),
        })
    }

    fn query(&mut self, at: &VersionRef, query: &QueryRequest) -> Answer<QueryAnswer> {
        let s = self.snapshot(at)?;
        let result = match (&query.predicate, &query.vector, query.k) {
            (Some(p), None, None) => {
                let predicate =
                    model_predicate(s, p).map_err(|e| Refusal::Broken(e.to_string()))?;
                expected::answer_scalar(s, &query.name, &query.index, &predicate)
                    .map_err(failure)?
            }
            (None, Some(v), Some(k)) => {
                let vector = match untag(v) {
                    Ok(lance_reference::model::Value::Vector(items)) => items
                        .into_iter()
                        .map(|x| x.ok_or("a query vector item is null"))
                        .collect::<Result<Vec<f32>, _>>()
                        .map_err(|e| Refusal::Broken(e.into()))?,
                    _ => return Err(Refusal::Broken("`vector` is not a float vector".into())),
                };
                let k = usize::try_from(k).map_err(|_| Refusal::Broken("k too large".into()))?;
                expected::answer_vector(s, &query.name, &query.index, &vector, k)
                    .map_err(failure)?
            }
            _ => {
                return Err(Refusal::Broken(
                    "a query has `where`, or `vector` and `k`".into(),
                ));
            }
        };
        Ok(answer(result))
    }
}

/// A query result as the protocol answers it (with the reconciliation lists).
pub fn answer(r: QueryResult) -> QueryAnswer {
    QueryAnswer {
        kind: r.kind,
        final_rows: r.final_rows,
        reconciliation: Some(Reconciliation {
            candidates: r.candidates,
            excluded: r.excluded,
            reevaluated: r.reevaluated,
            rematched: r.rematched,
        }),
        plan: None,
    }
}

/// Why a version's manifest could not give its schema.
#[derive(Debug, thiserror::Error)]
pub enum ManifestSchemaError {
    /// The dataset, or the manifest's content, could not be read.
    #[error("{0}")]
    Dataset(Box<lance_reference_io::DatasetError>),
    /// No manifest is stored for the version.
    #[error("no manifest for version {0}")]
    NoManifest(u64),
    /// The manifest file could not be read.
    #[error("{path}: {error}")]
    Read {
        /// The manifest, relative to the dataset root.
        path: String,
        /// Why.
        error: std::io::Error,
    },
}

impl From<lance_reference_io::DatasetError> for ManifestSchemaError {
    fn from(e: lance_reference_io::DatasetError) -> ManifestSchemaError {
        ManifestSchemaError::Dataset(Box::new(e))
    }
}

/// The schema of `version` as its manifest states it, read without the files the manifest
/// references (so a version whose files are damaged still gives its schema).
pub fn manifest_schema(
    root: &Path,
    version: u64,
) -> Result<lance_reference::model::Schema, ManifestSchemaError> {
    use lance_reference_io::codec::decode_manifest;
    use lance_reference_io::manifest_file::decode_manifest_file;
    let dataset = Dataset::open(root)?;
    let entry = dataset
        .entries()
        .iter()
        .find(|e| e.version == version)
        .ok_or(ManifestSchemaError::NoManifest(version))?;
    let rel = format!("_versions/{}", entry.name);
    let bytes = std::fs::read(root.join(&rel)).map_err(|error| ManifestSchemaError::Read {
        path: rel.clone(),
        error,
    })?;
    let file = decode_manifest_file(&bytes, &rel)?;
    let (snapshot, _) = decode_manifest(&file, &rel, u64::MAX)?;
    Ok(snapshot.schema)
}

/// Why a protocol predicate has no model form in a version's schema.
#[derive(Debug, thiserror::Error)]
pub enum PredicateError {
    /// The predicate names a field the schema does not have.
    #[error("no field {0:?}")]
    NoField(String),
    /// A literal does not read as a value of its field.
    #[error(transparent)]
    Literal(#[from] crate::expected::tagged::TaggedError),
    /// A comparison without one tagged value.
    #[error("{0}: the operator needs one tagged value")]
    NotOneValue(String),
    /// `in` without an array of tagged values.
    #[error("{0}: `in` needs an array of tagged values")]
    NotAList(String),
}

/// The model predicate of a protocol predicate, resolving dotted names in `snapshot`'s schema.
pub fn model_predicate(
    snapshot: &Snapshot,
    p: &Predicate,
) -> Result<ModelPredicate, PredicateError> {
    let schema = &snapshot.schema;
    match p {
        Predicate::And { and } => Ok(ModelPredicate::And(
            and.iter()
                .map(|p| model_predicate(snapshot, p))
                .collect::<Result<_, _>>()?,
        )),
        Predicate::Or { or } => Ok(ModelPredicate::Or(
            or.iter()
                .map(|p| model_predicate(snapshot, p))
                .collect::<Result<_, _>>()?,
        )),
        Predicate::Leaf { field, op, value } => {
            let id =
                field_id(schema, field).ok_or_else(|| PredicateError::NoField(field.clone()))?;
            let one = |t: &Tagged| untag_field(schema, id, t).map_err(PredicateError::from);
            let literal = || match value {
                Some(Literal::One(t)) => one(t),
                _ => Err(PredicateError::NotOneValue(field.clone())),
            };
            Ok(match op {
                Op::Eq => ModelPredicate::Eq(id, literal()?),
                Op::Ne => ModelPredicate::Ne(id, literal()?),
                Op::Lt => ModelPredicate::Lt(id, literal()?),
                Op::Le => ModelPredicate::Le(id, literal()?),
                Op::Gt => ModelPredicate::Gt(id, literal()?),
                Op::Ge => ModelPredicate::Ge(id, literal()?),
                Op::In => match value {
                    Some(Literal::List(items)) => {
                        ModelPredicate::In(id, items.iter().map(one).collect::<Result<_, _>>()?)
                    }
                    _ => return Err(PredicateError::NotAList(field.clone())),
                },
                Op::IsNull => ModelPredicate::IsNull(id),
                Op::IsNotNull => ModelPredicate::IsNotNull(id),
            })
        }
    }
}
