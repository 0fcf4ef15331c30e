//! The reference writer behind the writer protocol: what `lance-conformance testee` commits when
//! the runner asks it to write.
//!
//! Invariant: the writer keeps no state of its own between requests except prepared
//! transactions. Each `write` reads every version of the directory back with the reference
//! reader, continues that history by one step with the same scenario engine that builds the
//! corpus ([`crate::scenario::continue_history`]), and writes the new version with the same
//! store writer ([`lance_reference_io::write_version`]); so the reference writer judged
//! through the protocol is the writer that produced the goldens, not a second copy. A step the
//! reference refuses leaves the directory as it was: nothing is written before the new version
//! is complete and checked. A `prepare` only records the step and the version it read; its
//! `commit` builds the commit from that version and lands it on the newest one, re-stamped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use lance_reference::model::Snapshot;
use lance_reference_io::data_file::DataFileVersion;
use lance_reference_io::{Dataset, WriteOptions, write_version};

use crate::case::Step;
use crate::runner::capability::WRITE_WORDS;
use crate::runner::conformance_reader::{Answer, Description, Refusal};
use crate::runner::conformance_writer::ConformanceWriter;
use crate::runner::protocol::{
    Implementation, PrepareResult, ReadError, WriteRequest, WriteResult,
};
use crate::runner::write_step::from_wire;
use crate::scenario::{self, ScenarioError};

/// The reference writer.
#[derive(Debug, Default)]
pub struct ReferenceWriter {
    /// Declared words (default: every `write:` word).
    limit: Option<BTreeSet<String>>,
    /// Prepared transactions by token: the dataset, the version read, the step, the data file
    /// version asked for.
    prepared: BTreeMap<String, (String, u64, Step, DataFileVersion)>,
    next_token: u64,
}

impl ReferenceWriter {
    /// A writer declaring every `write:` word.
    pub fn new() -> ReferenceWriter {
        ReferenceWriter::default()
    }

    /// A writer declaring only the `write:` words among `capabilities`.
    pub fn with_capabilities(capabilities: BTreeSet<String>) -> ReferenceWriter {
        ReferenceWriter {
            limit: Some(capabilities),
            ..ReferenceWriter::default()
        }
    }
}

/// A refusal in the protocol's terms.
fn refused(class: &str, code: Option<&str>, message: String) -> Refusal {
    Refusal::Error(ReadError {
        class: class.to_string(),
        code: code.map(str::to_string),
        message,
    })
}

fn scenario_refusal(e: ScenarioError) -> Refusal {
    match &e {
        ScenarioError::Reference { error, .. } => {
            refused(error.class().as_str(), Some(error.code()), e.to_string())
        }
        ScenarioError::Step { .. } => refused("refused", None, e.to_string()),
    }
}

/// Every version of `dir`, oldest first (none when the directory holds no dataset yet).
fn history(dir: &Path) -> Result<Vec<Snapshot>, Refusal> {
    if !dir.join("_versions").is_dir() {
        return Ok(Vec::new());
    }
    let dataset = Dataset::open(dir)
        .map_err(|e| refused(e.class().as_str(), Some(e.code()), format!("opening: {e}")))?;
    let listed = dataset.versions();
    if listed.iter().copied().ne(1..=listed.len() as u64) {
        return Err(refused(
            "refused",
            None,
            format!("versions {listed:?} are not 1..N: not a history this writer continues"),
        ));
    }
    listed
        .iter()
        .map(|v| {
            dataset.read_version(*v).map(|(s, _)| s).map_err(|e| {
                refused(
                    e.class().as_str(),
                    Some(e.code()),
                    format!("reading v{v}: {e}"),
                )
            })
        })
        .collect()
}

/// The data file version a request asks for: the reference's default (2.0) when it asks for
/// none; `unsupported` for a version the reference does not write.
fn asked_version(request: &WriteRequest) -> Answer<DataFileVersion> {
    match request.data_file_version.as_deref() {
        None => Ok(DataFileVersion::default()),
        Some(name) => DataFileVersion::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = DataFileVersion::ALL.iter().map(|v| v.name()).collect();
            Refusal::Unsupported(format!(
                "data file version {name}: the reference writes {}",
                known.join(" and ")
            ))
        }),
    }
}

/// Writes `snapshot` into `dir`, its new data files in `version`.
fn land(dir: &Path, snapshot: &Snapshot, version: DataFileVersion) -> Answer<WriteResult> {
    let options = WriteOptions {
        data_file_version: version,
        ..WriteOptions::default()
    };
    write_version(dir, snapshot, &options)
        .map_err(|e| refused(e.class().as_str(), Some(e.code()), format!("writing: {e}")))?;
    Ok(WriteResult {
        version: snapshot.version,
    })
}

fn step_of(request: &WriteRequest) -> Answer<Step> {
    from_wire(&request.step).map_err(|m| Refusal::Broken(format!("not a step: {m}")))
}

/// The history of `request.dataset`, checked to be at `request.read_version`.
fn at_read_version(request: &WriteRequest) -> Answer<Vec<Snapshot>> {
    let versions = history(Path::new(&request.dataset))?;
    if versions.len() as u64 != request.read_version {
        return Err(refused(
            "refused",
            None,
            format!(
                "asked to build on version {}, but the newest version is {}",
                request.read_version,
                versions.len()
            ),
        ));
    }
    Ok(versions)
}

impl ConformanceWriter for ReferenceWriter {
    fn describe(&mut self) -> Answer<Description> {
        Ok(Description {
            implementation: Implementation {
                name: "lance-conformance reference writer".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                language: Some("Rust".into()),
                homepage: None,
            },
            capabilities: WRITE_WORDS
                .iter()
                .filter(|w| self.limit.as_ref().is_none_or(|l| l.contains(**w)))
                .map(|w| (*w).to_string())
                .collect(),
        })
    }

    fn write(&mut self, request: &WriteRequest) -> Answer<WriteResult> {
        let step = step_of(request)?;
        let file_version = asked_version(request)?;
        let versions = at_read_version(request)?;
        let label = versions.len() + 1;
        let next = scenario::continue_history(versions, label, &step).map_err(scenario_refusal)?;
        land(Path::new(&request.dataset), &next, file_version)
    }

    fn prepare(&mut self, request: &WriteRequest) -> Answer<PrepareResult> {
        let step = step_of(request)?;
        if !matches!(step, Step::Overlay { .. } | Step::Append { .. }) {
            return Err(Refusal::Unsupported(format!(
                "the reference prepares only `overlay` and `append`, not `{}`",
                step.op()
            )));
        }
        let file_version = asked_version(request)?;
        at_read_version(request)?;
        self.next_token += 1;
        let token = format!("t{}", self.next_token);
        self.prepared.insert(
            token.clone(),
            (
                request.dataset.clone(),
                request.read_version,
                step,
                file_version,
            ),
        );
        Ok(PrepareResult { transaction: token })
    }

    fn commit(&mut self, dataset: &str, transaction: &str) -> Answer<WriteResult> {
        let Some((prepared_in, read_version, step, file_version)) =
            self.prepared.remove(transaction)
        else {
            return Err(Refusal::Broken(format!(
                "no prepared transaction {transaction:?}"
            )));
        };
        if prepared_in != dataset {
            return Err(Refusal::Broken(format!(
                "transaction {transaction:?} was prepared in {prepared_in}, not {dataset}"
            )));
        }
        let versions = history(Path::new(dataset))?;
        let label = versions.len() + 1;
        let next = scenario::retry_on_newest(versions, read_version, label, &step)
            .map_err(scenario_refusal)?;
        land(Path::new(dataset), &next, file_version)
    }
}
