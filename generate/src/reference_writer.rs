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
//! A `commit_prepared` reads the files the kit placed with the reference reader's own decoder
//! ([`read_file_columns`]), builds the next version from them, and checks it exactly as a reader
//! checks a version ([`Snapshot::validate`]) before anything is written: a transaction whose
//! result a reader refuses is refused with that refusal's code, and the committer's own rules
//! ([OVL-VER-1]: an overlay a commit adds takes the version the commit creates) come after.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use lance_reference::lineage::stamping::stamp_overlays;
use lance_reference::model::{Coverage, DataFile, Overlay, Snapshot};
use lance_reference_io::data_file::DataFileVersion;
use lance_reference_io::layout::FileLayout;
use lance_reference_io::paths::data_file_path;
use lance_reference_io::read::read_file_columns;
use lance_reference_io::{Dataset, LocalStorage, ReadOptions, WriteOptions, write_version};
use roaring::RoaringBitmap;

use crate::case::Step;
use crate::runner::capability::WRITE_WORDS;
use crate::runner::conformance_reader::{Answer, Description, Refusal};
use crate::runner::conformance_writer::ConformanceWriter;
use crate::runner::protocol::{
    CommitPreparedRequest, Implementation, PrepareResult, PreparedCoverage, PreparedOperation,
    PreparedOverlay, PreparedTransaction, ReadError, WriteRequest, WriteResult,
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
    land_with(dir, snapshot, &options)
}

fn land_with(dir: &Path, snapshot: &Snapshot, options: &WriteOptions) -> Answer<WriteResult> {
    write_version(dir, snapshot, options)
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
    history_at(Path::new(&request.dataset), request.read_version)
}

/// The history of `dir`, checked to end at `read_version` (the version a request builds on).
fn history_at(dir: &Path, read_version: u64) -> Answer<Vec<Snapshot>> {
    let versions = history(dir)?;
    if versions.len() as u64 != read_version {
        return Err(refused(
            "refused",
            None,
            format!(
                "asked to build on version {read_version}, but the newest version is {}",
                versions.len()
            ),
        ));
    }
    Ok(versions)
}

/// A refusal carrying a reference error's code, as class `refused` (§7).
fn refused_by(code: &str, message: String) -> Refusal {
    refused("refused", Some(code), message)
}

/// The model overlay of a prepared one, its value file read from `dir`.
fn prepared_overlay(
    dir: &Path,
    snapshot: &Snapshot,
    o: &PreparedOverlay,
    field: &str,
) -> Answer<Overlay> {
    let io = |e: lance_reference_io::DatasetError| refused_by(e.code(), format!("{field}: {e}"));
    let layout = FileLayout {
        path: data_file_path(&o.file.path, "(transaction)", &format!("{field}.file.path"))
            .map_err(io)?,
        column_indices: o.file.column_indices.clone(),
        file_major_version: o.file.file_major_version,
        file_minor_version: o.file.file_minor_version,
        file_size_bytes: o.file.file_size_bytes,
    };
    let mut file = DataFile {
        path: o.file.path.clone(),
        fields: o.file.fields.clone(),
        columns: Vec::new(),
    };
    file.columns = read_file_columns(
        &LocalStorage::new(dir),
        &snapshot.schema,
        &file,
        &layout,
        true,
        &format!("{field}.file"),
        ReadOptions::default().max_file_bytes,
    )
    .map_err(io)?;
    let bitmap = |offsets: &[u32]| offsets.iter().copied().collect::<RoaringBitmap>();
    let coverage = match &o.coverage {
        PreparedCoverage::Dense(offsets) => Coverage::Dense(bitmap(offsets)),
        PreparedCoverage::Sparse(lists) => {
            Coverage::Sparse(lists.iter().map(|l| bitmap(l)).collect())
        }
    };
    Ok(Overlay {
        file,
        coverage,
        committed_version: o.committed_version.unwrap_or(snapshot.version),
    })
}

/// The version `transaction` makes of `prev`, checked before it is returned (module docs).
fn prepared_version(
    dir: &Path,
    prev: &Snapshot,
    transaction: &PreparedTransaction,
) -> Answer<Snapshot> {
    let version = prev.version + 1;
    let mut next = prev.clone();
    next.version = version;
    // Per touched fragment: its position and the overlays the commit adds.
    let mut added: Vec<(usize, Vec<Overlay>)> = Vec::new();
    for (i, pf) in transaction.fragments.iter().enumerate() {
        let position = next
            .fragments
            .iter()
            .position(|f| f.id == pf.id)
            .ok_or_else(|| {
                let e = lance_reference::Error::UnknownFragment {
                    fragment: pf.id,
                    context: format!("transaction fragments[{i}]"),
                };
                refused_by(e.code(), e.to_string())
            })?;
        let mut overlays = Vec::new();
        for (k, o) in pf.overlays.iter().enumerate() {
            let field = format!("fragments[{i}].overlays[{k}]");
            let stated = o.committed_version.is_some();
            if stated != (transaction.operation == PreparedOperation::Merge) {
                return Err(refused(
                    "refused",
                    None,
                    format!(
                        "{field}: `committed_version` is stated in a merge and only there, this is an {}",
                        transaction.operation.as_str()
                    ),
                ));
            }
            overlays.push(prepared_overlay(dir, &next, o, &field)?);
        }
        let fragment = &mut next.fragments[position];
        let new = match transaction.operation {
            PreparedOperation::Overlay => overlays,
            PreparedOperation::Merge => {
                let kept = fragment.overlays.len();
                if overlays.len() < kept || overlays[..kept] != fragment.overlays[..] {
                    return Err(Refusal::Unsupported(format!(
                        "fragment {}: a merge that replaces or changes carried overlays (an overlay compaction); the reference commits only merges that keep them",
                        pf.id
                    )));
                }
                overlays.split_off(kept)
            }
        };
        // First as stored, so that what a reader would refuse is refused with its code.
        fragment.overlays.extend(new.iter().cloned());
        added.push((position, new));
    }
    lance_reference::flags::set_commit_flags(&mut next);
    next.validate().map_err(|e| {
        refused_by(
            e.code(),
            format!("the committed version would be refused: {e}"),
        )
    })?;
    // [OVL-VER-1]: an overlay the commit adds takes the version the commit creates.
    for (position, new) in &added {
        let fragment = &next.fragments[*position];
        if let Some(o) = new.iter().find(|o| o.committed_version != version) {
            let e = lance_reference::Error::BadCommittedVersion {
                fragment: fragment.id,
                file: o.file.path.clone(),
                committed_version: o.committed_version,
                problem: format!(
                    "an overlay this commit adds takes the version it creates, {version} (OVL-VER-1)"
                ),
            };
            return Err(refused_by(e.code(), e.to_string()));
        }
    }
    // Then stamped: last-updated-at of the rows the added overlays cover ([OVL-LIN-1]).
    for (position, new) in added {
        let fragment = &mut next.fragments[position];
        let kept = fragment.overlays.len() - new.len();
        fragment.overlays.truncate(kept);
        stamp_overlays(fragment, new, version, next.stable_row_ids, &next.schema)
            .map_err(|e| refused_by(e.code(), e.to_string()))?;
    }
    lance_reference::flags::set_commit_flags(&mut next);
    next.validate().map_err(|e| {
        refused_by(
            e.code(),
            format!("the committed version would be refused: {e}"),
        )
    })?;
    Ok(next)
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

    fn commit_prepared(&mut self, request: &CommitPreparedRequest) -> Answer<WriteResult> {
        let dir = Path::new(&request.dataset);
        let versions = history_at(dir, request.read_version)?;
        let Some(prev) = versions.last() else {
            return Err(refused(
                "refused",
                None,
                "a prepared commit needs a version to build on".into(),
            ));
        };
        let next = prepared_version(dir, prev, &request.transaction)?;
        // The manifest records every file in the version it is in: the files already listed
        // as the previous version lists them, the kit's files as the transaction states, and
        // anything new in the dataset's version (`data_format`).
        let prev_layout = Dataset::open(dir)
            .and_then(|d| d.read_manifest_level(request.read_version))
            .ok()
            .map(|(_, layout)| layout);
        let named =
            |major: u32, minor: u32| DataFileVersion::from_name(&format!("{major}.{minor}"));
        let mut options = WriteOptions::default();
        if let Some(layout) = &prev_layout {
            if let Some(v) = layout
                .data_format
                .as_ref()
                .and_then(|f| DataFileVersion::from_name(&f.version))
            {
                options.data_file_version = v;
            }
            for f in layout
                .fragments
                .iter()
                .flat_map(|f| f.files.iter().chain(&f.overlays))
            {
                if let Some(v) = named(f.file_major_version, f.file_minor_version) {
                    options.file_versions.insert(f.path.clone(), v);
                }
            }
        }
        for o in request
            .transaction
            .fragments
            .iter()
            .flat_map(|f| &f.overlays)
        {
            if let Some(v) = named(o.file.file_major_version, o.file.file_minor_version) {
                options.file_versions.insert(o.file.path.clone(), v);
            }
        }
        land_with(dir, &next, &options)
    }
}
