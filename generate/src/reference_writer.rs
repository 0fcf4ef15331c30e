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
//! A `commit_prepared` reads the files the kit placed with the reference reader's own decoders
//! ([`read_file_columns`] for value and data files, [`read_deletion_file`] for deletion files),
//! builds the next version from them (overlays added or merged, fragments appended with the
//! ids, row ids and lineage this commit assigns, deletion sets replaced), and checks it exactly as a reader
//! checks a version ([`Snapshot::validate`]) before anything is written: a transaction whose
//! result a reader refuses is refused with that refusal's code, and the committer's own rules
//! come after ([OVL-VER-1]: an overlay a commit adds takes the version the commit creates;
//! [OVL-MERGE-6]: a `merge` that does not add overlays to the carried list is a compaction,
//! committed only when it is a merge the compactor could have made,
//! [`check_stated_merge`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use lance_reference::compaction::check_stated_merge;
use lance_reference::lineage::stamping::{AppendedFragment, append_fragment, stamp_overlays};
use lance_reference::model::{Coverage, DataFile, Fragment, Overlay, Snapshot, TOMBSTONE_FIELD_ID};
use lance_reference_io::data_file::DataFileVersion;
use lance_reference_io::deletion::{DeletionFile, DeletionFileType, read_deletion_file};
use lance_reference_io::layout::FileLayout;
use lance_reference_io::paths::data_file_path;
use lance_reference_io::read::{read_bounded, read_file_columns};
use lance_reference_io::{Dataset, LocalStorage, ReadOptions, WriteOptions, write_version};
use roaring::RoaringBitmap;

use crate::case::Step;
use crate::runner::capability::WRITE_WORDS;
use crate::runner::conformance_reader::{Answer, Description, Refusal};
use crate::runner::conformance_writer::ConformanceWriter;
use crate::runner::protocol::{
    CommitPreparedRequest, Implementation, LineageLengths, PrepareResult, PreparedCoverage,
    PreparedDeletionFileType, PreparedFile, PreparedOperation, PreparedOverlay,
    PreparedTransaction, ReadError, WriteRequest, WriteResult,
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
    Ok(WriteResult::new(snapshot.version))
}

/// The commit reply's `lineage_lengths`: for each fragment of `next` whose id `prev` does not
/// hold (the fragments this commit wrote), the length of each present sequence's inline
/// encoding by the reference encoder, the one the store writes inline and compaction compares
/// with the budget ([LIN-ENC-6]), whether the sequence is inline or spilled.
fn lineage_lengths(prev: Option<&Snapshot>, next: &Snapshot) -> Answer<Vec<LineageLengths>> {
    use lance_reference::lineage::{RowDatasetVersionSequence, RowIdSequence};
    use lance_reference::model::{CREATED_AT_FIELD_ID, LAST_UPDATED_AT_FIELD_ID, ROW_ID_FIELD_ID};
    let known: BTreeSet<u64> = prev
        .map(|p| p.fragments.iter().map(|f| f.id).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for f in next.fragments.iter().filter(|f| !known.contains(&f.id)) {
        let values = |field| {
            f.lineage_values(field)
                .map_err(|e| Refusal::Broken(format!("fragment {}: its own lineage: {e}", f.id)))
        };
        let row_ids =
            values(ROW_ID_FIELD_ID)?.map(|v| RowIdSequence::from_values(&v).encode().len() as u64);
        let versions = |v: Option<Vec<u64>>| {
            v.map(|v| RowDatasetVersionSequence::from_versions(&v).encode().len() as u64)
        };
        out.push(LineageLengths {
            fragment: f.id,
            row_ids,
            created_at: versions(values(CREATED_AT_FIELD_ID)?),
            last_updated_at: versions(values(LAST_UPDATED_AT_FIELD_ID)?),
        });
    }
    Ok(out)
}

/// [`land`], reporting the lengths of the lineage the commit wrote ([`lineage_lengths`]).
fn land_reporting(
    dir: &Path,
    prev: Option<&Snapshot>,
    snapshot: &Snapshot,
    version: DataFileVersion,
) -> Answer<WriteResult> {
    let lengths = lineage_lengths(prev, snapshot)?;
    let mut result = land(dir, snapshot, version)?;
    result.lineage_lengths = Some(lengths);
    Ok(result)
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

/// Where fragment `id`, named by the prepared transaction's `i`-th fragment, sits in
/// `snapshot`; a refusal (`UnknownFragment`) when the snapshot holds no such fragment.
fn fragment_position(snapshot: &Snapshot, id: u64, i: usize) -> Answer<usize> {
    snapshot
        .fragments
        .iter()
        .position(|f| f.id == id)
        .ok_or_else(|| {
            let e = lance_reference::Error::UnknownFragment {
                fragment: id,
                context: format!("transaction fragments[{i}]"),
            };
            refused_by(e.code(), e.to_string())
        })
}

/// The model data file of a prepared one, read from `dir` as a reader reads a base file or,
/// with `overlay`, a value file.
fn prepared_data_file(
    dir: &Path,
    snapshot: &Snapshot,
    f: &PreparedFile,
    overlay: bool,
    field: &str,
) -> Answer<DataFile> {
    let io = |e: lance_reference_io::DatasetError| refused_by(e.code(), format!("{field}: {e}"));
    let layout = FileLayout {
        path: data_file_path(&f.path, "(transaction)", &format!("{field}.path")).map_err(io)?,
        column_indices: f.column_indices.clone(),
        file_major_version: f.file_major_version,
        file_minor_version: f.file_minor_version,
        file_size_bytes: f.file_size_bytes,
    };
    let mut file = DataFile {
        path: f.path.clone(),
        fields: f.fields.clone(),
        columns: Vec::new(),
    };
    file.columns = read_file_columns(
        &LocalStorage::new(dir),
        &snapshot.schema,
        &file,
        &layout,
        overlay,
        field,
        ReadOptions::default().max_file_bytes,
    )
    .map_err(io)?;
    Ok(file)
}

/// The model overlay of a prepared one, its value file read from `dir`.
fn prepared_overlay(
    dir: &Path,
    snapshot: &Snapshot,
    o: &PreparedOverlay,
    field: &str,
) -> Answer<Overlay> {
    let file = prepared_data_file(dir, snapshot, &o.file, true, &format!("{field}.file"))?;
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

/// An overlay a commit adds that lists a negative field id other than the tombstone: refused,
/// as `validate` would find the version it creates breaking [OVL-TOMB-6]
/// (`reserved_overlay_field`).
fn reserved_field(fragment: u64, o: &Overlay) -> Answer<()> {
    match o
        .file
        .fields
        .iter()
        .position(|&f| f < 0 && f != TOMBSTONE_FIELD_ID)
    {
        Some(k) => Err(refused_by(
            "reserved_overlay_field",
            format!(
                "fragment {fragment}: overlay {} lists field id {} at position {k}; an overlay holds no system column (OVL-TOMB-6)",
                o.file.path, o.file.fields[k]
            ),
        )),
        None => Ok(()),
    }
}

/// A transaction fragment stating a member its operation does not use: refused before
/// anything is read, so that no member is silently ignored.
fn check_members(transaction: &PreparedTransaction) -> Answer<()> {
    let op = transaction.operation;
    for (i, f) in transaction.fragments.iter().enumerate() {
        let stated = [
            ("overlays", !f.overlays.is_empty()),
            ("files", !f.files.is_empty()),
            ("physical_rows", f.physical_rows.is_some()),
            ("deletion_file", f.deletion_file.is_some()),
        ];
        let used: &[&str] = match op {
            PreparedOperation::Overlay | PreparedOperation::Merge => &["overlays"],
            PreparedOperation::Append => &["files", "physical_rows"],
            PreparedOperation::Delete => &["deletion_file"],
        };
        if let Some((member, _)) = stated.iter().find(|(m, on)| *on && !used.contains(m)) {
            return Err(refused(
                "refused",
                None,
                format!(
                    "fragments[{i}]: `{member}` is not part of an {} transaction",
                    op.as_str()
                ),
            ));
        }
        if let Some(member) = used
            .iter()
            .find(|m| !stated.iter().any(|(s, on)| s == *m && *on))
        {
            return Err(refused(
                "refused",
                None,
                format!(
                    "fragments[{i}]: an {} transaction states `{member}`",
                    op.as_str()
                ),
            ));
        }
    }
    Ok(())
}

/// Checks `next` as a reader checks a version: what a reader would refuse is refused with its
/// code.
fn readable(next: &Snapshot) -> Answer<()> {
    next.validate().map_err(|e| {
        refused_by(
            e.code(),
            format!("the committed version would be refused: {e}"),
        )
    })
}

/// The version `transaction` makes of the newest of `versions`, checked before it is
/// returned (module docs).
fn prepared_version(
    dir: &Path,
    versions: &[Snapshot],
    transaction: &PreparedTransaction,
) -> Answer<Snapshot> {
    let Some(prev) = versions.last() else {
        return Err(refused(
            "refused",
            None,
            "a prepared commit needs a version to build on".into(),
        ));
    };
    check_members(transaction)?;
    match transaction.operation {
        PreparedOperation::Overlay | PreparedOperation::Merge => {
            overlay_version(dir, prev, transaction)
        }
        PreparedOperation::Append => appended_version(dir, versions, transaction),
        PreparedOperation::Delete => deletion_version(dir, prev, transaction),
    }
}

/// An `append`: each listed fragment's files read as a reader reads a fragment's base files,
/// the fragment added after the existing ones with the next fragment id, its row ids and
/// lineage assigned by this commit ([`append_fragment`]).
fn appended_version(
    dir: &Path,
    versions: &[Snapshot],
    transaction: &PreparedTransaction,
) -> Answer<Snapshot> {
    let prev = versions
        .last()
        .ok_or_else(|| Refusal::Broken("no version".into()))?;
    let version = prev.version + 1;
    let mut next = prev.clone();
    next.version = version;
    // Ids continue above the highest any version used (a fragment deleted whole keeps its).
    let first_id = versions
        .iter()
        .flat_map(|v| v.fragments.iter().map(|f| f.id + 1))
        .max()
        .unwrap_or(0);
    for ((i, pf), id) in transaction.fragments.iter().enumerate().zip(first_id..) {
        let physical_rows = pf.physical_rows.unwrap_or(0);
        let mut files = Vec::new();
        for (k, f) in pf.files.iter().enumerate() {
            let field = format!("fragments[{i}].files[{k}]");
            files.push(prepared_data_file(dir, &next, f, false, &field)?);
        }
        let fragment = Fragment {
            id,
            physical_rows,
            files,
            deletions: RoaringBitmap::new(),
            overlays: Vec::new(),
            lineage: Default::default(),
        };
        append_fragment(
            &mut next,
            AppendedFragment {
                fragment,
                carried: None,
            },
            version,
        );
    }
    lance_reference::flags::set_commit_flags(&mut next);
    readable(&next)?;
    Ok(next)
}

/// A `delete`: each listed fragment's deletion file read with the reader's decoder, which
/// refuses what a reader refuses (an offset at or past `physical_rows`, a repeated offset, a
/// count that disagrees); the set replaces the fragment's deletions, and must keep every row
/// deleted before (a delete brings no row back). A fragment left with no live row leaves the
/// manifest, as a delete of all its rows does.
fn deletion_version(
    dir: &Path,
    prev: &Snapshot,
    transaction: &PreparedTransaction,
) -> Answer<Snapshot> {
    let mut next = prev.clone();
    next.version = prev.version + 1;
    for (i, pf) in transaction.fragments.iter().enumerate() {
        let field = format!("transaction fragments[{i}].deletion_file");
        let position = fragment_position(&next, pf.id, i)?;
        let Some(d) = &pf.deletion_file else {
            continue;
        };
        let stored = DeletionFile {
            file_type: match d.file_type {
                PreparedDeletionFileType::Array => DeletionFileType::ArrowArray,
                PreparedDeletionFileType::Bitmap => DeletionFileType::Bitmap,
            }
            .proto_value(),
            read_version: d.read_version,
            id: d.id,
            num_deleted_rows: d.num_deleted_rows,
            base_id: None,
        };
        let io =
            |e: lance_reference_io::DatasetError| refused_by(e.code(), format!("{field}: {e}"));
        let fragment = &mut next.fragments[position];
        let rel = stored
            .relative_path(fragment.id)
            .map_err(|e| refused_by(e.code(), format!("{field}: {e}")))?;
        let bytes = read_bounded(
            &LocalStorage::new(dir),
            &rel,
            ReadOptions::default().max_file_bytes,
            &field,
        )
        .map_err(io)?;
        let deleted = read_deletion_file(fragment.id, &stored, &bytes, fragment.physical_rows)
            .map_err(|e| refused_by(e.code(), format!("{field}: {e}")))?;
        if !fragment.deletions.is_subset(&deleted) {
            return Err(refused(
                "refused",
                None,
                format!(
                    "{field}: fragment {}'s new deletion file leaves out rows deleted before (a delete brings no row back)",
                    fragment.id
                ),
            ));
        }
        fragment.deletions = deleted;
        if fragment.deletions.len() == fragment.physical_rows {
            next.fragments.remove(position);
        }
    }
    lance_reference::flags::set_commit_flags(&mut next);
    readable(&next)?;
    Ok(next)
}

/// The version an `overlay` or `merge` transaction makes of `prev` (module docs).
fn overlay_version(
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
        let position = fragment_position(&next, pf.id, i)?;
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
            PreparedOperation::Merge => {
                let kept = fragment.overlays.len();
                let adds = overlays.len() > kept && overlays[..kept] == fragment.overlays[..];
                if !adds {
                    // Not the carried list with overlays added: an overlay compaction, judged
                    // as a merge of the fragment's overlays ([OVL-MERGE-6]) and committed as
                    // stated, lineage untouched ([OVL-MERGE-5]).
                    for o in overlays.iter().filter(|o| !fragment.overlays.contains(o)) {
                        reserved_field(fragment.id, o)?;
                    }
                    let mut after = fragment.clone();
                    after.overlays = overlays;
                    check_stated_merge(&prev.schema, fragment, &after).map_err(|e| {
                        let e = lance_reference::Error::from(e);
                        refused_by(e.code(), format!("fragments[{i}]: {e}"))
                    })?;
                    *fragment = after;
                    continue;
                }
                overlays.split_off(kept)
            }
            _ => overlays,
        };
        // First as stored, so that what a reader would refuse is refused with its code.
        fragment.overlays.extend(new.iter().cloned());
        added.push((position, new));
    }
    lance_reference::flags::set_commit_flags(&mut next);
    readable(&next)?;
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
    // [OVL-TOMB-6]: an added overlay names no system column. A reader skips such a position
    // ([OVL-TOMB-5]), so the version would read; the committer still writes no such overlay.
    for (position, new) in &added {
        for o in new {
            reserved_field(next.fragments[*position].id, o)?;
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
    readable(&next)?;
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
        let prev = versions.last().cloned();
        let label = versions.len() + 1;
        let next = scenario::continue_history(versions, label, &step).map_err(scenario_refusal)?;
        land_reporting(
            Path::new(&request.dataset),
            prev.as_ref(),
            &next,
            file_version,
        )
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
        let prev = versions.last().cloned();
        let label = versions.len() + 1;
        let next = scenario::retry_on_newest(versions, read_version, label, &step)
            .map_err(scenario_refusal)?;
        land_reporting(Path::new(dataset), prev.as_ref(), &next, file_version)
    }

    fn commit_prepared(&mut self, request: &CommitPreparedRequest) -> Answer<WriteResult> {
        let dir = Path::new(&request.dataset);
        let versions = history_at(dir, request.read_version)?;
        let next = prepared_version(dir, &versions, &request.transaction)?;
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
        for f in &request.transaction.fragments {
            for d in f.overlays.iter().map(|o| &o.file).chain(&f.files) {
                if let Some(v) = named(d.file_major_version, d.file_minor_version) {
                    options.file_versions.insert(d.path.clone(), v);
                }
            }
        }
        let lengths = lineage_lengths(versions.last(), &next)?;
        let mut result = land_with(dir, &next, &options)?;
        result.lineage_lengths = Some(lengths);
        Ok(result)
    }
}
