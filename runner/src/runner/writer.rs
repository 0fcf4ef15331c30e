//! Judging a writer: each case's steps replayed by the writer in a fresh directory, and every
//! version it commits judged by the kit.
//!
//! Invariant: the writer's answers are never taken on trust. After each commit the kit reads the
//! new version from disk with the reference reader and compares what it reads with the case's
//! `expected/`, by the same checks a reader gets ([`super::execute::version_checks`]: open,
//! scans, lineage placement, exclusion sets, queries), except that a spilled sequence's file
//! name is the writer's choice, so lineage is compared by placement only (and, in a table that
//! spills, by whether it is recorded at all, unless the writer declares the reference's
//! encoding: inline or spilled then follows the writer's own encoding, [LIN-ENC-6]); and `validate`
//! ([`crate::validate`]) judges the version alone and the commit against the one before it. A
//! step the case says must be refused has to be answered with `error` and leave no new version
//! (or, where the case allows it, `may_commit`, be committed as a version `validate` finds
//! clean); a `prepared` refusal and the step after it, its twin, are handed to a writer that
//! commits prepared files as the merges a caller states
//! ([`super::prepared_commit::StatedMerge`]), the malformed one refused and the twin committed.
//! Lengths a writer reports for the lineage it wrote (`lineage_lengths`) are checked against the
//! stored bytes where the kit can measure them, and decide a spill's placement where it cannot
//! ([LIN-ENC-6]). A case handed over at a stored version (`writer_from`)
//! starts from a copy of it, and a writer lacking a feature its writer word announces must
//! refuse the first step on it.
//! A case is sent only when every step is one a conforming writer can be asked for
//! ([`plan`]) and the writer declares every `write:` word its steps need; otherwise it is
//! `unsupported` as a whole, and so is a case the writer answers `unsupported` midway (a case
//! half written is not judged). Steps after a `corrupt` are not the writer's, and `reencode`
//! (an equivalent form some other writer chose) is left out: the version it re-encodes is
//! judged as the writer wrote it. What stops the kit from judging a step (a stored version it
//! cannot read, a step it cannot put on the wire, a version without an expected result, a
//! directory it cannot make) is a kit fault ([`super::kit_fault`]), never the writer's failure.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use lance_reference::lineage::SpillConfig;
use lance_reference::model::Snapshot;

use super::capability::{
    ERROR_CODES, PREPARED_COMMIT, REFERENCE_LINEAGE_ENCODING, SPILLED_LINEAGE,
};
use super::check::Check;
use super::conformance_reader::{ConformanceReader, Refusal};
use super::conformance_writer::ConformanceWriter;
use super::execute::{self, Expected, shown};
use super::kit_fault::KitFault;
use super::prepared_commit::{
    CommitterCase, PreparedCommitError, Side, StatedMerge, committer_case, manifest,
};
use super::protocol::{
    CommitPreparedRequest, ExclusionResult, LineageLengths, OpenResult, PreparedOperation,
    PreparedTransaction,
    QueryAnswer, QueryRequest, ReadError, ScanRequest, ScanResult, VersionRef, WriteRequest,
};
use super::reference::{ReferenceReader, read_checked};
use super::report::{CaseResult, CheckResult, FailureKind, Report, Role, Verdict};
use super::write_step::{WireError, to_wire};
use super::{Options, RunnerError, run_cases};
use crate::case::step::Shape;
use crate::case::{Case, IndexKindSpec, Level, Step};
use crate::corpus::{CaseDir, REFUSED_DIR, UNDAMAGED_DIR};
use crate::expected::{ExpectedVersion, FragmentLineage, Location};

/// How a writer run's skip of a case outside the writer suite begins: a case whose steps no
/// conforming writer is asked for (a reordered overlay list, cleared lineage, ...). Such a
/// case depends on the case alone, not on the writer, and a writer's area score leaves it out.
pub const NOT_A_WRITER_CASE: &str = "not a writer case";

/// One thing the runner asks of a writer.
#[derive(Debug, Clone, PartialEq)]
pub enum Action<'a> {
    /// Commit `step` as version `version`.
    Write {
        /// The step.
        step: &'a Step,
        /// The version it must create.
        version: u64,
    },
    /// Prepare `write` on version `version - 1`, let `conflict` commit `version`, then commit
    /// `write`, which must land as `version + 1`.
    Retry {
        /// The retried commit.
        write: &'a Step,
        /// The commit that wins the race.
        conflict: &'a Step,
        /// The version `conflict` creates.
        version: u64,
    },
    /// The commit of `step` is handed over as files the kit prepared: the malformed commit must
    /// be refused with `code`, then its twin must create `version`
    /// ([`super::prepared_commit`]).
    Prepared {
        /// The step whose commit the files are.
        step: &'a Step,
        /// The version the twin creates.
        version: u64,
        /// The reference's code for the refusal (`expected/error.json`), if the case pins one.
        code: Option<&'a str>,
    },
    /// The merge `attempt` stands for is handed over as the list a caller states, from the
    /// files the generator stored under `refused/` (`expect_refusal` with `prepared`); the
    /// committer must refuse it with `code`, leaving the newest version at `at`.
    RefusePreparedMerge {
        /// The `compact_overlays` step whose malformed result is handed over.
        attempt: &'a Step,
        /// The reference's code for the refusal.
        code: &'a str,
        /// The newest version before and after.
        at: u64,
    },
    /// The well-formed twin of a [`Action::RefusePreparedMerge`]: the stored version `version`
    /// handed over as a caller-stated `merge`, which must create `version`.
    PreparedMergeTwin {
        /// The `compact_overlays` step it stands for.
        step: &'a Step,
        /// The version it creates.
        version: u64,
    },
    /// `attempt` must be refused, leaving the newest version at `at`.
    Refuse {
        /// The step.
        attempt: &'a Step,
        /// The reference's error code for the refusal.
        code: &'a str,
        /// The newest version before and after.
        at: u64,
        /// The writer may commit `attempt` instead, as version `at + 1`, when `validate`
        /// finds that commit clean; the case ends there.
        may_commit: bool,
    },
}

/// What a writer run does with a case: the actions, and the `write:` words they need.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan<'a> {
    /// In order.
    pub actions: Vec<Action<'a>>,
    /// Every word the actions need.
    pub needs: BTreeSet<&'static str>,
}

/// Why a case is not one a conforming writer can replay ([`plan`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAWriterCase {
    /// `writer_from` hands over the first of the two versions a `commit_retry` makes.
    #[error("writer_from = {writer_from} falls inside a `commit_retry`, which makes two versions")]
    InsideRetry {
        /// The case's `writer_from`.
        writer_from: u64,
    },
    /// An overlay tombstones or relabels positions: a form only another writer makes.
    #[error(
        "an overlay with tombstoned or relabelled positions stands for another writer's form"
    )]
    OtherWritersForm,
    /// `writer_from` names a version the steps do not make.
    #[error("writer_from = {writer_from}, but the steps make only {versions} version(s)")]
    BeyondSteps {
        /// The case's `writer_from`.
        writer_from: u64,
        /// How many versions the steps make.
        versions: u64,
    },
    /// A `commit_retry` or `expect_refusal` inside another (its step is one of those).
    #[error("`{op}` inside `{op}`")]
    Nested {
        /// The inner step's op.
        op: &'static str,
    },
    /// A step standing for a change no conforming writer is asked to make.
    #[error("`{op}` stands for a change no conforming writer is asked to make")]
    NoConformingChange {
        /// The step's op.
        op: &'static str,
    },
}

/// Why a step of the stored case could not be handed to a writer: the stored version it is
/// typed by does not read, or the step has no wire form in that version's schema.
#[derive(Debug, thiserror::Error)]
pub enum StoredStepError {
    /// The stored version does not read as the reference reads it.
    #[error("the stored case's v{version}: {}", error.message)]
    Read {
        /// The stored version.
        version: u64,
        /// The reference's error.
        error: Box<ReadError>,
    },
    /// The stored version was read but is not kept.
    #[error("the stored case's v{0}")]
    Missing(u64),
    /// The step has no wire form in the version's schema.
    #[error("{0}")]
    Wire(#[from] WireError),
}

/// How a handed-over refusal's control commit (the same step on a copy of the version before)
/// went otherwise than committing the next version.
#[derive(Debug, thiserror::Error)]
pub enum ControlFailure {
    /// The copy could not be made (or an old one removed).
    #[error("{0}")]
    Copy(std::io::Error),
    /// The writer committed another version.
    #[error("it committed version {0}")]
    Committed(u64),
    /// The writer refused the step (its error, shown).
    #[error("refused: {0}")]
    Refused(String),
    /// The writer does not support the step, or skipped it.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The writer broke.
    #[error("broke: {0}")]
    Broke(String),
}

/// The writer run of `case`, or why the case is not one a conforming writer can replay (a step
/// that stands for a non-conforming or an older writer, or for a change no operation makes).
/// With `writer_from = N` the steps that make versions 1 to N are the stored dataset's, handed
/// to the writer as a copy ([`hand_over`]): they need no word and may be any step. With
/// `prepared_commit` (the writer declares `write:prepared-commit`) a `prepared` refusal and
/// the step after it, its twin, are handed over as stated merges and need no word of their
/// own; without it they are the writer's to make, as any refusal and step.
pub fn plan(case: &Case, prepared_commit: bool) -> Result<Plan<'_>, NotAWriterCase> {
    let mut out = Plan {
        actions: Vec::new(),
        needs: BTreeSet::new(),
    };
    let mut version = 0;
    let from = case.writer_from.unwrap_or(0);
    // The next ordinary step is the twin of a prepared refusal handed over.
    let mut twin_next = false;
    for step in &case.steps {
        if version < from {
            version += match step {
                Step::Corrupt(_) | Step::Reencode(_) | Step::ExpectRefusal { .. } => 0,
                Step::CommitRetry { .. } => 2,
                _ => 1,
            };
            if version > from {
                return Err(NotAWriterCase::InsideRetry { writer_from: from });
            }
            continue;
        }
        match step {
            Step::Corrupt(_) => break,
            Step::Reencode(_) => continue,
            Step::CommitRetry { write, conflict } => {
                out.needs.insert("write:commit-retry");
                needs(write, &mut out.needs)?;
                needs(conflict, &mut out.needs)?;
                out.actions.push(Action::Retry {
                    write,
                    conflict,
                    version: version + 1,
                });
                version += 2;
            }
            Step::ExpectRefusal {
                attempt,
                code,
                prepared: true,
                ..
            } if prepared_commit => {
                out.needs.insert(PREPARED_COMMIT);
                out.actions.push(Action::RefusePreparedMerge {
                    attempt,
                    code,
                    at: version,
                });
                twin_next = true;
            }
            Step::ExpectRefusal {
                attempt,
                code,
                may_commit,
                ..
            } => {
                needs(attempt, &mut out.needs)?;
                out.actions.push(Action::Refuse {
                    attempt,
                    code,
                    at: version,
                    may_commit: *may_commit,
                });
            }
            other if twin_next => {
                twin_next = false;
                version += 1;
                out.actions.push(Action::PreparedMergeTwin {
                    step: other,
                    version,
                });
            }
            other => {
                needs(other, &mut out.needs)?;
                version += 1;
                out.actions.push(Action::Write {
                    step: other,
                    version,
                });
            }
        }
    }
    if version < from {
        return Err(NotAWriterCase::BeyondSteps {
            writer_from: from,
            versions: version,
        });
    }
    Ok(out)
}

/// Copies the stored dataset `stored` at version `at` into the empty directory `dir`: every
/// file but the manifests of later versions (the files only those name stay, unreferenced, as
/// after any commit). The writer continues from there as from its own history.
pub fn hand_over(stored: &Path, at: u64, dir: &Path) -> std::io::Result<()> {
    use lance_reference_io::version_names::{VERSIONS_DIR, parse_manifest_name};
    fn copy(from: &Path, to: &Path, skip: &dyn Fn(&Path) -> bool) -> std::io::Result<()> {
        std::fs::create_dir_all(to)?;
        let mut entries: Vec<_> = std::fs::read_dir(from)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let target = to.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                copy(&path, &target, skip)?;
            } else if !skip(&path) {
                std::fs::copy(&path, &target)?;
            }
        }
        Ok(())
    }
    let versions = stored.join(VERSIONS_DIR);
    let later = |path: &Path| {
        path.parent() == Some(versions.as_path())
            && path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| parse_manifest_name(n).ok().flatten())
                .is_some_and(|e| e.version > at)
    };
    copy(stored, dir, &later)
}

/// The words a writer that lacks them must have to commit on top of a version whose writer word
/// sets `writer_flags`: bit 64 needs `write:overlay` ([OVL-FLAG-2]), bit 2048
/// `write:spilled-lineage` ([FLG-WRITE-5]).
pub fn lacking_for(writer_flags: u64, declared: &BTreeSet<String>) -> Vec<&'static str> {
    [(64, "write:overlay"), (2048, SPILLED_LINEAGE)]
        .into_iter()
        .filter(|(bit, word)| writer_flags & bit != 0 && !declared.contains(*word))
        .map(|(_, word)| word)
        .collect()
}

/// Adds the `write:` words one ordinary step needs; an error names a step no conforming
/// writer is asked for.
pub fn needs(step: &Step, words: &mut BTreeSet<&'static str>) -> Result<(), NotAWriterCase> {
    let index = |kind: &IndexKindSpec| match kind {
        IndexKindSpec::Btree => "write:btree-index",
        IndexKindSpec::Vector => "write:vector-index",
    };
    let word = match step {
        Step::Create { indices, .. } => {
            words.extend(indices.iter().map(|i| index(&i.kind)));
            "write:create"
        }
        Step::Append { .. } => "write:append",
        Step::Overlay {
            shape,
            cells,
            tombstone,
            relabel,
            overlays,
            ..
        } => {
            let non_conforming = !tombstone.is_empty()
                || !relabel.is_empty()
                || overlays
                    .iter()
                    .any(|o| !o.tombstone.is_empty() || !o.relabel.is_empty());
            if non_conforming {
                return Err(NotAWriterCase::OtherWritersForm);
            }
            let sparse =
                |shape: Option<Shape>, cells: Option<&crate::case::step::Cells>| match shape {
                    Some(Shape::Sparse) => true,
                    Some(Shape::Auto) => cells.is_some_and(|c| {
                        let mut sets = c.values().map(|by| by.keys().collect::<Vec<_>>());
                        let first = sets.next();
                        sets.any(|s| Some(s) != first)
                    }),
                    _ => false,
                };
            if sparse(*shape, cells.as_ref())
                || overlays
                    .iter()
                    .any(|o| sparse(Some(o.shape), Some(&o.cells)))
            {
                words.insert("write:sparse-overlay");
            }
            "write:overlay"
        }
        Step::Delete { .. } => "write:delete",
        Step::BuildIndex { kind, .. } => index(kind),
        Step::CompactOverlays { .. } => "write:compact-overlays",
        Step::Fold { .. } => "write:fold",
        Step::RewriteRows { .. } => "write:rewrite-rows",
        Step::UpdateRows { .. } => "write:update-rows",
        Step::Update { .. } => "write:update",
        Step::RewriteColumns { .. } => "write:rewrite-columns",
        Step::MergeInsert { .. } => "write:merge-insert",
        Step::Restore { .. } => "write:restore",
        Step::SetConfig { .. } => "write:set-config",
        Step::AddFields { .. } => "write:add-fields",
        Step::DropFields { .. } => "write:drop-fields",
        Step::CommitRetry { .. } | Step::ExpectRefusal { .. } => {
            return Err(NotAWriterCase::Nested { op: step.op() });
        }
        Step::Corrupt(_)
        | Step::Reencode(_)
        | Step::ReorderOverlays { .. }
        | Step::SetWriterFlag { .. }
        | Step::ReserveRowIds { .. }
        | Step::ClearLineage { .. }
        | Step::ClearIndexCoverage { .. }
        | Step::AddSystemColumn { .. } => {
            return Err(NotAWriterCase::NoConformingChange { op: step.op() });
        }
    };
    words.insert(word);
    Ok(())
}

/// How much of a lineage sequence's placement the kit compares with `expected/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compared {
    /// Absent, inline or spilled; not the file's name, which is the writer's choice.
    Placement,
    /// Only whether it is recorded: in a table that spills, inline or spilled follows the
    /// writer's own encoding ([LIN-ENC-6]), which `vN rules` judges where bytes decide it.
    Recorded,
}

fn compared(l: &Location, how: Compared) -> Location {
    match (l, how) {
        (Location::Absent, _) => Location::Absent,
        (_, Compared::Recorded) => Location::Column {
            file: "(recorded: inline or spilled, by the writer's own encoding)".into(),
        },
        (Location::Column { .. }, Compared::Placement) => Location::Column {
            file: "(a data file of the writer's naming)".into(),
        },
        (Location::Inline, Compared::Placement) => Location::Inline,
    }
}

fn lineage_compared(f: &FragmentLineage, how: Compared) -> FragmentLineage {
    FragmentLineage {
        fragment: f.fragment,
        physical_rows: f.physical_rows,
        row_ids: compared(&f.row_ids, how),
        created_at: compared(&f.created_at, how),
        last_updated_at: compared(&f.last_updated_at, how),
    }
}

/// The kit's reader over what a writer wrote: the reference, with lineage answered as far as
/// it is compared.
struct KitReader(ReferenceReader, Compared);

impl ConformanceReader for KitReader {
    fn describe(&mut self) -> super::Answer<super::Description> {
        self.0.describe()
    }
    fn open(&mut self, at: &VersionRef) -> super::Answer<OpenResult> {
        self.0.open(at)
    }
    fn scan(&mut self, request: &ScanRequest) -> super::Answer<ScanResult> {
        self.0.scan(request)
    }
    fn lineage(&mut self, at: &VersionRef, fragment: u64) -> super::Answer<FragmentLineage> {
        let how = self.1;
        self.0
            .lineage(at, fragment)
            .map(|f| lineage_compared(&f, how))
    }
    fn exclusion(&mut self, at: &VersionRef) -> super::Answer<ExclusionResult> {
        self.0.exclusion(at)
    }
    fn query(&mut self, at: &VersionRef, query: &QueryRequest) -> super::Answer<QueryAnswer> {
        self.0.query(at, query)
    }
}

/// One case's writer run in progress.
struct Replay<'a> {
    writer: &'a mut dyn ConformanceWriter,
    kit: KitReader,
    case: &'a CaseDir,
    /// The expected result of every version, the damaged one's twin included.
    expected: BTreeMap<u64, &'a ExpectedVersion>,
    /// Where the writer writes.
    dir: String,
    /// Versions of the stored case read so far ([`Replay::stored`]).
    stored: BTreeMap<u64, Snapshot>,
    /// The writer declares [`REFERENCE_LINEAGE_ENCODING`].
    reference_encoding: bool,
    /// The writer declares `error-codes`.
    error_codes: bool,
    level: Level,
    out: Vec<CheckResult>,
    /// Set when the case cannot go on (a refusal, a crash, an unsupported step, a kit fault).
    stopped: bool,
    /// Set when the writer answered `unsupported` or `skipped`: the case is not judged.
    declined: Option<CheckResult>,
    /// The data file version the run asks for (`run --data-file-version`): sent with every
    /// write and prepare, and checked in every data file of every version written.
    data_file_version: Option<String>,
    /// `DataFile.path`s of the files the kit placed for a prepared commit: they are in the
    /// stored case's version, not the writer's, so the version check leaves them out.
    kit_files: BTreeSet<String>,
    /// The lineage lengths the last commit reply reported, judged with the version it created
    /// ([`Replay::lineage_lengths`]).
    reported: Option<Vec<LineageLengths>>,
    /// For a case handed over at version `N` whose first step must be refused: the stored
    /// version `N - 1` (and the stored dataset), on a copy of which the same step must commit
    /// before the refusal counts ([`Replay::control`]).
    control: Option<(PathBuf, u64)>,
}

impl Replay<'_> {
    fn push(&mut self, name: Check, verdict: Verdict, kind: Option<FailureKind>, msg: String) {
        let message = (!msg.is_empty()).then_some(msg);
        self.out
            .push(CheckResult::new(name, verdict, self.level, kind, message));
    }

    /// Records a check the kit could not judge; the case stops there.
    fn kit_fault(&mut self, name: Check, fault: &KitFault) {
        self.out
            .push(CheckResult::kit_fault(name, self.level, fault));
        self.stopped = true;
    }

    /// Version `version` of the stored case (its undamaged twin for a negative case's damaged
    /// version), read once: its schema types a step's cells, its config says whether the table
    /// spills.
    fn stored(&mut self, version: u64) -> Result<&Snapshot, StoredStepError> {
        if !self.stored.contains_key(&version) {
            let root = self.stored_root();
            let snapshot = read_checked(&root, version).map_err(|e| StoredStepError::Read {
                version,
                error: Box::new(e),
            })?;
            self.stored.insert(version, snapshot);
        }
        self.stored
            .get(&version)
            .ok_or(StoredStepError::Missing(version))
    }

    fn request(&mut self, name: &Check, step: &Step, version: u64) -> Option<WriteRequest> {
        let wire = self
            .stored(version)
            .and_then(|stored| Ok(to_wire(step, &stored.schema)?));
        match wire {
            Ok(step) => Some(WriteRequest {
                dataset: self.dir.clone(),
                read_version: newest(Path::new(&self.dir)),
                step,
                data_file_version: self.data_file_version.clone(),
            }),
            Err(message) => {
                self.kit_fault(
                    name.clone(),
                    &KitFault::StoredCase {
                        version,
                        message: message.to_string(),
                    },
                );
                None
            }
        }
    }

    /// Records a write's answer; true when it committed `version`.
    fn committed(
        &mut self,
        name: Check,
        answer: Result<super::protocol::WriteResult, Refusal>,
        version: u64,
    ) -> bool {
        match answer {
            Ok(r) if r.version == version => {
                self.push(name, Verdict::Pass, None, String::new());
                self.reported = r.lineage_lengths;
                true
            }
            Ok(r) => {
                self.push(
                    name,
                    Verdict::Fail,
                    Some(FailureKind::WrongValue),
                    format!(
                        "committed version {} where the case commits {version}",
                        r.version
                    ),
                );
                self.stopped = true;
                false
            }
            Err(r) => {
                self.refusal(name, r);
                false
            }
        }
    }

    /// Records a refusal of a step the case commits; the case stops there.
    fn refusal(&mut self, name: Check, r: Refusal) {
        self.stopped = true;
        match r {
            Refusal::Error(e) => self.push(
                name,
                Verdict::Fail,
                Some(FailureKind::RefusedWrite),
                format!("refused: {}", shown(&e)),
            ),
            Refusal::Unsupported(reason) | Refusal::Skipped(reason) => {
                self.declined = Some(CheckResult::new(
                    name,
                    Verdict::Unsupported,
                    self.level,
                    None,
                    Some(reason),
                ));
            }
            Refusal::Broken(m) => self.push(name, Verdict::Error, Some(FailureKind::Crash), m),
        }
    }

    /// `vN data file version`: every data file version `version` lists (base, lineage-only and
    /// overlay files) records the version the run asked for, `asked` (spec/conformance.md §7.3).
    /// The manifest's numbers are what is compared; `vN rules` already holds each file's footer
    /// to them.
    fn file_versions(&mut self, version: u64, asked: &str) {
        let name = Check::DataFileVersion { version };
        let layout = lance_reference_io::Dataset::open(Path::new(&self.dir))
            .and_then(|d| d.read_manifest_level(version));
        let layout = match layout {
            Ok((_, layout)) => layout,
            Err(e) => {
                let message = format!("the kit cannot read the manifest: {e}");
                self.push(name, Verdict::Fail, Some(FailureKind::BrokeRule), message);
                return;
            }
        };
        let wrong: Vec<String> = layout
            .fragments
            .iter()
            .flat_map(|f| f.files.iter().chain(&f.overlays))
            .filter(|file| {
                let listed = file.path.strip_prefix("data/").unwrap_or(&file.path);
                !self.kit_files.contains(listed) && !self.kit_files.contains(&file.path)
            })
            .filter_map(|file| {
                let found = format!("{}.{}", file.file_major_version, file.file_minor_version);
                (found != asked).then(|| format!("{}: {found}", file.path))
            })
            .collect();
        if wrong.is_empty() {
            self.push(name, Verdict::Pass, None, String::new());
        } else {
            let message = format!(
                "asked for data file version {asked}, the manifest records {}",
                wrong.join(", ")
            );
            self.push(name, Verdict::Fail, Some(FailureKind::BrokeRule), message);
        }
    }

    /// `vN lineage lengths`: the placement of the lineage the commit wrote, judged by the
    /// writer's own measure (`lineage_lengths` of its reply, [LIN-ENC-6]). For each fragment
    /// of version `version` whose id version `version - 1` does not hold, every sequence it
    /// stores needs a reported length: an inline one's must be its stored length (the kit
    /// measures it, so the report is checked where it can be), and a spilled one's must exceed
    /// the budget in force ([LIN-PLACE-3], [LIN-PLACE-4]; strictly greater). A spill with
    /// spilling off is `vN rules`' finding ([LIN-CFG-1]), and a budget that does not parse
    /// decides nothing here ([LIN-CFG-3]).
    fn lineage_lengths(&mut self, version: u64, reported: &[LineageLengths]) {
        use crate::validate::version::{inline_lengths, manifest_file};
        use lance_reference::model::LineageSequence;
        let name = Check::LineageLengths { version };
        let dataset = match lance_reference_io::Dataset::open(Path::new(&self.dir)) {
            Ok(d) => d,
            Err(e) => {
                let message = format!("the kit cannot open the dataset: {e}");
                self.push(name, Verdict::Fail, Some(FailureKind::BrokeRule), message);
                return;
            }
        };
        let (now, before) = match (
            dataset.read_manifest_level(version),
            version
                .checked_sub(1)
                .filter(|v| *v > 0)
                .map(|v| dataset.read_manifest_level(v))
                .transpose(),
        ) {
            (Ok((now, _)), Ok(before)) => (now, before.map(|(b, _)| b)),
            (Err(e), _) | (_, Err(e)) => {
                let message = format!("the kit cannot read the manifest: {e}");
                self.push(name, Verdict::Fail, Some(FailureKind::BrokeRule), message);
                return;
            }
        };
        let stored = inline_lengths(&dataset, &manifest_file(&dataset, version));
        let config = SpillConfig::from_table_config(&now.config).ok();
        let known: BTreeSet<u64> = before
            .iter()
            .flat_map(|b| b.fragments.iter().map(|f| f.id))
            .collect();
        let mut problems = Vec::new();
        let mut measured = 0;
        for f in now.fragments.iter().filter(|f| !known.contains(&f.id)) {
            let report = reported.iter().find(|r| r.fragment == f.id);
            let sequences = [
                (
                    "row ids",
                    &f.lineage.row_ids,
                    report.and_then(|r| r.row_ids),
                ),
                (
                    "created-at",
                    &f.lineage.created_at,
                    report.and_then(|r| r.created_at),
                ),
                (
                    "last-updated-at",
                    &f.lineage.last_updated_at,
                    report.and_then(|r| r.last_updated_at),
                ),
            ];
            for (k, (what, placed, length)) in sequences.into_iter().enumerate() {
                let at = format!("fragment {} {what}", f.id);
                match (placed, length) {
                    (LineageSequence::Absent, _) => {}
                    (_, None) => problems.push(format!(
                        "{at}: the commit wrote it, but the reply reports no length"
                    )),
                    (LineageSequence::Inline(_), Some(len)) => {
                        measured += 1;
                        let on_disk = stored
                            .get(&f.id)
                            .and_then(|l| l.get(k).copied().flatten())
                            .map(|n| n as u64);
                        if on_disk != Some(len) {
                            let on_disk =
                                on_disk.map_or("(not found)".to_string(), |n| n.to_string());
                            problems.push(format!(
                                "{at}: stored inline in {on_disk} bytes, the reply reports {len}"
                            ));
                        }
                    }
                    (LineageSequence::Column, Some(len)) => {
                        measured += 1;
                        let Some(c) = config.filter(|c| c.enabled) else {
                            continue;
                        };
                        if len <= c.inline_max_bytes as u64 {
                            problems.push(format!(
                                "{at}: spilled, but its inline encoding is {len} bytes by the writer's own measure, not over the budget of {} [LIN-PLACE-3, LIN-PLACE-4]",
                                c.inline_max_bytes
                            ));
                        }
                    }
                }
            }
        }
        if problems.is_empty() {
            let message = format!("{measured} sequence(s) placed as their reported lengths say");
            self.push(name, Verdict::Pass, None, message);
        } else {
            let message = problems.join("\n");
            self.push(name, Verdict::Fail, Some(FailureKind::BrokeRule), message);
        }
    }

    /// Judges version `version` as the writer left it: `validate`, then the reads.
    fn judge(&mut self, version: u64) {
        let name = Check::Rules { version };
        match crate::validate::validate(Path::new(&self.dir), Some(version)) {
            Ok(report) if report.findings.is_empty() => {
                self.push(name, Verdict::Pass, None, String::new())
            }
            Ok(report) => {
                let found = findings_text(&report);
                self.push(name, Verdict::Fail, Some(FailureKind::BrokeRule), found);
            }
            Err(e) => self.push(name, Verdict::Error, None, format!("validate: {e}")),
        }
        if let Some(asked) = self.data_file_version.clone() {
            self.file_versions(version, &asked);
        }
        if let Some(reported) = self.reported.take() {
            self.lineage_lengths(version, &reported);
        }
        let Some(expected) = self.expected.get(&version).copied() else {
            self.kit_fault(
                Check::Scan {
                    version,
                    twin: false,
                },
                &KitFault::NoExpectedVersion { version },
            );
            return;
        };
        // Where the case's table spills, placement is exact only for a writer whose encoding
        // is the reference's.
        let spills = self
            .stored(version)
            .ok()
            .and_then(|s| SpillConfig::from_table_config(&s.config).ok())
            .is_some_and(|c| c.enabled);
        self.kit.1 = if spills && !self.reference_encoding {
            Compared::Recorded
        } else {
            Compared::Placement
        };
        let how = self.kit.1;
        let mut expected = expected.clone();
        expected.fragments = expected
            .fragments
            .iter()
            .map(|f| lineage_compared(f, how))
            .collect();
        let declared = ReferenceReader::capabilities();
        let (checks, _) = execute::version_checks(
            &mut self.kit,
            &declared,
            self.level,
            &self.dir,
            self.case,
            &expected,
        );
        for mut c in checks {
            // The kit's reader refusing what was written is the writer's failure.
            if c.kind == Some(FailureKind::RefusedReadable) {
                c.kind = Some(FailureKind::BrokeRule);
                c.message = c
                    .message
                    .map(|m| format!("the kit's reader refuses the written version: {m}"));
            }
            // A kit fault stopped the version's checks; it stops the case too.
            if c.verdict == Verdict::KitFault {
                self.stopped = true;
            }
            self.out.push(c);
        }
    }

    fn write(&mut self, step: &Step, version: u64) {
        let name = Check::Write {
            version,
            op: step.op().into(),
        };
        let Some(request) = self.request(&name, step, version) else {
            return;
        };
        let answer = self.writer.write(&request);
        if self.committed(name, answer, version) {
            self.judge(version);
        }
    }

    fn retry(&mut self, write: &Step, conflict: &Step, version: u64) {
        let name = Check::Prepare {
            version: version + 1,
            op: write.op().into(),
        };
        let Some(request) = self.request(&name, write, version + 1) else {
            return;
        };
        let token = match self.writer.prepare(&request) {
            Ok(p) => p.transaction,
            Err(r) => return self.refusal(name, r),
        };
        if newest(Path::new(&self.dir)) != version - 1 {
            self.push(
                name,
                Verdict::Fail,
                Some(FailureKind::CommittedRefused),
                format!(
                    "prepare committed: the newest version is {}, not {}",
                    newest(Path::new(&self.dir)),
                    version - 1
                ),
            );
            self.stopped = true;
            return;
        }
        self.push(name, Verdict::Pass, None, String::new());
        self.write(conflict, version);
        if self.stopped {
            return;
        }
        let name = Check::CommitRetried {
            version: version + 1,
            op: write.op().into(),
        };
        let answer = self.writer.commit(&self.dir, &token);
        if self.committed(name, answer, version + 1) {
            self.judge(version + 1);
        }
    }

    fn refuse(&mut self, attempt: &Step, code: &str, at: u64, may_commit: bool) {
        let name = Check::RefusesWrite {
            version: at,
            op: attempt.op().into(),
        };
        let Some(request) = self.request(&name, attempt, at) else {
            return;
        };
        if let Some((stored, before)) = self.control.take() {
            if let Err(why) = self.control(&stored, before, &request) {
                let message = format!(
                    "inconclusive: the writer did not commit the same step on a copy of version {before}, where nothing forbids it ({why}), so its refusal here says nothing"
                );
                self.push(
                    name,
                    Verdict::Inconclusive,
                    Some(FailureKind::Inconclusive),
                    message,
                );
                self.stopped = true;
                return;
            }
        }
        let answer = self.writer.write(&request);
        match answer {
            Ok(r)
                if may_commit && r.version == at + 1 && newest(Path::new(&self.dir)) == at + 1 =>
            {
                self.committed_instead(name, at + 1);
            }
            answer => self.refused(name, answer, Some(code), at, at),
        }
    }

    /// The twin rule of a handed-over refusal: `request` sent on a copy of the stored version
    /// `before` (in a directory beside the writer's, removed afterwards) must commit version
    /// `before + 1`, so that a writer refusing everything does not pass by refusing.
    fn control(
        &mut self,
        stored: &Path,
        before: u64,
        request: &WriteRequest,
    ) -> Result<(), ControlFailure> {
        let dir = PathBuf::from(format!("{}-control", self.dir));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(ControlFailure::Copy)?;
        }
        hand_over(stored, before, &dir).map_err(ControlFailure::Copy)?;
        let mut control = request.clone();
        control.dataset = dir.display().to_string();
        control.read_version = before;
        let answer = self.writer.write(&control);
        let _ = std::fs::remove_dir_all(&dir);
        match answer {
            Ok(r) if r.version == before + 1 => Ok(()),
            Ok(r) => Err(ControlFailure::Committed(r.version)),
            Err(Refusal::Error(e)) => Err(ControlFailure::Refused(shown(&e))),
            Err(Refusal::Unsupported(m) | Refusal::Skipped(m)) => {
                Err(ControlFailure::Unsupported(m))
            }
            Err(Refusal::Broken(m)) => Err(ControlFailure::Broke(m)),
        }
    }

    /// The writer's refusal profile at a handed-over version (`writer_from`): its writer word
    /// announces a feature the writer lacks (`lacking`, [`lacking_for`]), so the first step
    /// on it, whatever the case does with it, must be refused and leave no version
    /// ([OVL-FLAG-2], [FLG-WRITE-5]).
    fn refuse_lacking(&mut self, action: &Action<'_>, lacking: &[&str]) {
        let (step, typed_by, at) = match action {
            Action::Write { step, version } => (*step, *version, version - 1),
            Action::Retry { write, version, .. } => (*write, *version, version - 1),
            Action::Prepared { step, version, .. }
            | Action::PreparedMergeTwin { step, version } => (*step, *version, version - 1),
            Action::Refuse { attempt, at, .. }
            | Action::RefusePreparedMerge { attempt, at, .. } => (*attempt, *at, *at),
        };
        let name = Check::RefusesWriteLacking {
            version: at,
            op: step.op().into(),
            needs: lacking.join(", "),
        };
        let Some(request) = self.request(&name, step, typed_by) else {
            return;
        };
        let answer = self.writer.write(&request);
        self.refused(name, answer, None, at, at);
    }

    /// A step the case refuses but lets a writer commit instead (`may_commit`): the commit
    /// passes when `validate` finds version `version` (alone and as a commit) clean, which
    /// includes the kit's reader reading it. The case ends here either way: its later steps
    /// assume the refusal.
    fn committed_instead(&mut self, name: Check, version: u64) {
        self.stopped = true;
        match crate::validate::validate(Path::new(&self.dir), Some(version)) {
            Ok(report) if report.findings.is_empty() => self.push(
                name,
                Verdict::Pass,
                None,
                format!(
                    "committed version {version} instead of refusing, and `validate` finds it clean (the case allows either)"
                ),
            ),
            Ok(report) => {
                let found = findings_text(&report);
                self.push(
                    name,
                    Verdict::Fail,
                    Some(FailureKind::BrokeRule),
                    format!("committed version {version} instead of refusing, and `validate` finds:\n{found}"),
                );
            }
            Err(e) => self.push(name, Verdict::Error, None, format!("validate: {e}")),
        }
    }

    /// Judges the answer to a commit that must be refused, leaving the newest version at `at`;
    /// `code` is the reference's code for the refusal, judged as `v<label> refusal code`.
    fn refused(
        &mut self,
        name: Check,
        answer: Result<super::protocol::WriteResult, Refusal>,
        code: Option<&str>,
        at: u64,
        label: u64,
    ) {
        let left = newest(Path::new(&self.dir));
        match answer {
            Err(Refusal::Error(e)) if left == at => {
                self.push(name, Verdict::Pass, None, format!("refused: {}", shown(&e)));
                let Some(code) = code else {
                    return;
                };
                // The code is the reference's vocabulary: judged only for a writer that
                // reports it, and at SHOULD, as for readers (§4).
                let name = Check::RefusalCode {
                    version: label,
                    code: code.into(),
                };
                let (verdict, kind, message) = if !self.error_codes {
                    (Verdict::Unsupported, None, "needs error-codes".to_string())
                } else if e.code.as_deref() == Some(code) {
                    (Verdict::Pass, None, String::new())
                } else {
                    (
                        Verdict::Fail,
                        Some(FailureKind::WrongCode),
                        format!(
                            "refused with code {}",
                            e.code.as_deref().unwrap_or("(none)")
                        ),
                    )
                };
                let message = (!message.is_empty()).then_some(message);
                self.out.push(CheckResult::new(
                    name,
                    verdict,
                    Level::Should,
                    kind,
                    message,
                ));
            }
            Err(Refusal::Error(e)) => {
                self.push(
                    name,
                    Verdict::Fail,
                    Some(FailureKind::CommittedRefused),
                    format!("refused ({}) but left version {left} behind", shown(&e)),
                );
                self.stopped = true;
            }
            Ok(r) => {
                self.push(
                    name,
                    Verdict::Fail,
                    Some(FailureKind::CommittedRefused),
                    format!("committed it as version {}", r.version),
                );
                self.stopped = true;
            }
            Err(r) => self.refusal(name, r),
        }
    }

    /// The request of one side of a committer case: its files placed in the writer's
    /// directory, its transaction built on the writer's version `version - 1`.
    fn prepared_request(
        &mut self,
        name: &Check,
        committer: &CommitterCase,
        side: &Side,
    ) -> Option<CommitPreparedRequest> {
        let at = committer.version - 1;
        let built = manifest(Path::new(&self.dir), at)
            .map_err(|e| e.in_writers_version(at))
            .and_then(|prev| committer.transaction(side, &prev.manifest))
            .and_then(|transaction| {
                CommitterCase::place_files(side, Path::new(&self.dir))?;
                Ok(transaction)
            });
        let built = built.map(|transaction| {
            let placed = transaction
                .fragments
                .iter()
                .flat_map(|f| f.overlays.iter().map(|o| &o.file).chain(&f.files))
                .map(|d| d.path.clone())
                .collect();
            (transaction, placed)
        });
        self.request_or_fault(name, committer.version, built)
    }

    /// The `commit_prepared` request of a transaction built for version `version`, whose files
    /// (`placed`, relative to `data/`) the kit put in the writer's directory; a transaction the
    /// stored case could not give is the kit's fault, not the writer's.
    fn request_or_fault(
        &mut self,
        name: &Check,
        version: u64,
        built: Result<(PreparedTransaction, Vec<String>), PreparedCommitError>,
    ) -> Option<CommitPreparedRequest> {
        match built {
            Ok((transaction, placed)) => {
                self.kit_files.extend(placed);
                Some(CommitPreparedRequest {
                    dataset: self.dir.clone(),
                    read_version: newest(Path::new(&self.dir)),
                    transaction,
                })
            }
            Err(message) => {
                self.kit_fault(
                    name.clone(),
                    &KitFault::StoredCase {
                        version,
                        message: message.to_string(),
                    },
                );
                None
            }
        }
    }

    /// A committer case: the malformed commit refused, then its twin committed and judged.
    fn prepared(&mut self, committer: &CommitterCase, code: Option<&str>) {
        let version = committer.version;
        let op = committer.operation.as_str();
        let name = Check::RefusesPrepared {
            version,
            op: op.into(),
        };
        let Some(request) = self.prepared_request(&name, committer, &committer.damaged) else {
            return;
        };
        let answer = self.writer.commit_prepared(&request);
        self.refused(name, answer, code, version - 1, version);
        if self.stopped {
            return;
        }
        let name = Check::CommitPrepared {
            version,
            op: op.into(),
        };
        let Some(request) = self.prepared_request(&name, committer, &committer.twin) else {
            return;
        };
        let answer = self.writer.commit_prepared(&request);
        if self.committed(name, answer, version) {
            self.judge(version);
        }
    }
}

impl Replay<'_> {
    /// The stored case's directory its versions are read from: a negative case's undamaged
    /// twin, else its dataset.
    fn stored_root(&self) -> PathBuf {
        let twin = self.case.dir.join(UNDAMAGED_DIR);
        if twin.is_dir() {
            twin
        } else {
            self.case.dir.join("dataset")
        }
    }

    /// The request of the merge stored version `version` of `after` states on the stored
    /// version before it: its new value files placed in the writer's directory, its list
    /// built on the writer's own version `version - 1` ([`StatedMerge`]).
    fn stated_merge_request(
        &mut self,
        name: &Check,
        after: &Path,
        version: u64,
    ) -> Option<CommitPreparedRequest> {
        let at = version - 1;
        let built = StatedMerge::between(&self.stored_root(), after, version).and_then(|merge| {
            let prev = manifest(Path::new(&self.dir), at)
                .map_err(|e| e.in_writers_version(at))?;
            let transaction = merge.transaction(&prev.manifest)?;
            let placed = merge.place_files(Path::new(&self.dir))?;
            Ok((transaction, placed))
        });
        self.request_or_fault(name, version, built)
    }

    /// A prepared refusal (`expect_refusal` with `prepared`): the malformed merge stored under
    /// `refused/` handed over as a `merge`, which must be refused, leaving version `at`.
    fn refuse_stated_merge(&mut self, code: &str, at: u64) {
        let name = Check::RefusesPrepared {
            version: at + 1,
            op: PreparedOperation::Merge.as_str().into(),
        };
        let refused = self.case.dir.join(REFUSED_DIR);
        let Some(request) = self.stated_merge_request(&name, &refused, at + 1) else {
            return;
        };
        let answer = self.writer.commit_prepared(&request);
        self.refused(name, answer, Some(code), at, at + 1);
    }

    /// The twin of a prepared refusal: the stored version `version`, a well-formed merge,
    /// handed over the same way; it must create `version`, judged as any version.
    fn stated_merge_twin(&mut self, version: u64) {
        let name = Check::CommitPrepared {
            version,
            op: PreparedOperation::Merge.as_str().into(),
        };
        let stored = self.stored_root();
        let Some(request) = self.stated_merge_request(&name, &stored, version) else {
            return;
        };
        let answer = self.writer.commit_prepared(&request);
        if self.committed(name, answer, version) {
            self.judge(version);
        }
    }
}

/// `validate`'s findings, one a line, each with the requirements it breaks.
fn findings_text(report: &crate::validate::report::Report) -> String {
    let lines: Vec<String> = report
        .findings
        .iter()
        .map(|f| {
            format!(
                "[{}] {}/{} {} {}: {}",
                f.requirements.join(", "),
                f.class.as_str(),
                f.code,
                f.file,
                f.field,
                f.message
            )
        })
        .collect();
    lines.join("\n")
}

/// The newest version in `dir` (0 when there is none, or the directory cannot be listed).
fn newest(dir: &Path) -> u64 {
    lance_reference_io::Dataset::open(dir)
        .ok()
        .and_then(|d| d.latest_version())
        .unwrap_or(0)
}

/// Replays `case` through `writer` in `dir` (created afresh) and judges every version.
pub fn run_case(
    writer: &mut dyn ConformanceWriter,
    declared: &BTreeSet<String>,
    case: &CaseDir,
    expected: &Expected,
    dir: &Path,
    data_file_version: Option<&str>,
) -> Vec<CheckResult> {
    // A case not sent is judged by one check of its own.
    let unsupported = |message: String| {
        vec![CheckResult::new(
            Check::WriterCase,
            Verdict::Unsupported,
            case.case.level,
            None,
            Some(message),
        )]
    };
    // A case of its own (not a twin) in another data file version than 2.0 shows what only
    // that version can store (a NULL struct in v2.2): a run that asks for nothing asks for its
    // version, and a run that asks for another version does not send it.
    let own = case.case.data_file_version;
    let data_file_version = match data_file_version {
        None if case.twin_of.is_none() && !own.is_default() => Some(own.as_str()),
        Some(asked) if case.twin_of.is_none() && !own.is_default() && asked != own.as_str() => {
            return unsupported(format!(
                "a case of data file version {} only, the run asks for {asked}",
                own.as_str()
            ));
        }
        other => other,
    };
    // A handed-over dataset is in the stored case's data file version: a run asking for
    // another would have the writer continue a history it could not have written.
    if case.case.writer_from.is_some() {
        if let Some(asked) = data_file_version.filter(|a| *a != own.as_str()) {
            return unsupported(format!(
                "a case handed over in data file version {}, the run asks for {asked}",
                own.as_str()
            ));
        }
    }
    let mut plan = match plan(&case.case, declared.contains(PREPARED_COMMIT)) {
        Ok(p) => p,
        Err(why) => return unsupported(format!("{NOT_A_WRITER_CASE}: {why}")),
    };
    let lacking: Vec<&str> = plan
        .needs
        .iter()
        .copied()
        .filter(|w| !declared.contains(*w))
        .collect();
    if !lacking.is_empty() {
        return unsupported(format!("needs {}", lacking.join(", ")));
    }
    // A negative case whose damaged commit a caller could hand over is, for a writer that
    // commits prepared files, a committer case: its last commit is the kit's.
    let mut committer = None;
    if declared.contains(PREPARED_COMMIT) {
        if let (Some(Action::Write { step, version }), Some(twin)) =
            (plan.actions.last(), expected.undamaged.as_ref())
        {
            let commit = matches!(
                step,
                Step::Overlay { .. } | Step::Append { .. } | Step::Delete { .. }
            );
            if commit && *version == twin.version {
                match committer_case(case, *version) {
                    Ok(found) => committer = found,
                    Err(message) => {
                        return vec![CheckResult::kit_fault(
                            Check::WriterCase,
                            case.case.level,
                            &KitFault::StoredCase {
                                version: *version,
                                message: message.to_string(),
                            },
                        )];
                    }
                }
            }
        }
    }
    if committer.is_some() {
        if let Some(Action::Write { step, version }) = plan.actions.pop() {
            plan.actions.push(Action::Prepared {
                step,
                version,
                code: expected.error.as_ref().and_then(|e| e.code.as_deref()),
            });
        }
    }
    let fault = |source| {
        vec![CheckResult::kit_fault(
            Check::WriterCase,
            case.case.level,
            &KitFault::Scratch {
                path: dir.to_path_buf(),
                source,
            },
        )]
    };
    if dir.exists() {
        if let Err(e) = std::fs::remove_dir_all(dir) {
            return fault(e);
        }
    }
    if let Err(e) = std::fs::create_dir_all(dir) {
        return fault(e);
    }
    // A case handed over at version N starts from a copy of the stored dataset; a writer that
    // lacks a feature the copied version's writer word announces must refuse its first step.
    let mut lacking = Vec::new();
    if let Some(from) = case.case.writer_from {
        if let Err(e) = hand_over(&case.dir.join("dataset"), from, dir) {
            return fault(e);
        }
        match lance_reference_io::Dataset::open(dir).and_then(|d| d.read_manifest_level(from)) {
            Ok((snapshot, _)) => lacking = lacking_for(snapshot.writer_flags, declared),
            Err(e) => {
                return vec![CheckResult::kit_fault(
                    Check::WriterCase,
                    case.case.level,
                    &KitFault::StoredCase {
                        version: from,
                        message: format!("the handed-over copy: {e}"),
                    },
                )];
            }
        }
    }
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut by_version: BTreeMap<u64, &ExpectedVersion> =
        expected.versions.iter().map(|v| (v.version, v)).collect();
    if let Some(twin) = &expected.undamaged {
        by_version.insert(twin.version, twin);
    }
    let mut replay = Replay {
        writer,
        kit: KitReader(ReferenceReader::new(), Compared::Placement),
        case,
        expected: by_version,
        dir: absolute.display().to_string(),
        stored: BTreeMap::new(),
        reference_encoding: declared.contains(REFERENCE_LINEAGE_ENCODING),
        error_codes: declared.contains(ERROR_CODES),
        level: case.case.level,
        out: Vec::new(),
        stopped: false,
        declined: None,
        data_file_version: data_file_version.map(str::to_string),
        kit_files: BTreeSet::new(),
        reported: None,
        control: None,
    };
    if let (Some(from), true, Some(Action::Refuse { at, .. })) = (
        case.case.writer_from,
        lacking.is_empty(),
        plan.actions.first(),
    ) {
        if *at == from && from > 1 {
            replay.control = Some((case.dir.join("dataset"), from - 1));
        }
    }
    if !lacking.is_empty() {
        if let Some(first) = plan.actions.first() {
            replay.refuse_lacking(first, &lacking);
        }
        plan.actions.clear();
    }
    for action in &plan.actions {
        if replay.stopped {
            break;
        }
        match action {
            Action::Write { step, version } => replay.write(step, *version),
            Action::Retry {
                write,
                conflict,
                version,
            } => replay.retry(write, conflict, *version),
            Action::Refuse {
                attempt,
                code,
                at,
                may_commit,
            } => replay.refuse(attempt, code, *at, *may_commit),
            Action::Prepared { code, .. } => {
                if let Some(c) = &committer {
                    replay.prepared(c, *code);
                }
            }
            Action::RefusePreparedMerge { code, at, .. } => replay.refuse_stated_merge(code, *at),
            Action::PreparedMergeTwin { version, .. } => replay.stated_merge_twin(*version),
        }
    }
    match replay.declined.take() {
        // A case half written is not judged; what failed before the writer declined still
        // counts.
        Some(declined) => {
            let mut out: Vec<CheckResult> = replay
                .out
                .into_iter()
                .filter(|c| c.verdict != Verdict::Pass)
                .collect();
            out.push(declined);
            out
        }
        None => replay.out,
    }
}

/// Runs the selected cases through `writer`, each in a fresh directory under `scratch`, and
/// reports; with `data_file_version`, every request asks for that data file version and every
/// version written is checked to hold only files of it. No report is returned unless the
/// corpus is verified.
///
/// # Example
///
/// A writer that declares only `write:create` and declines every step: the cases whose steps
/// are all `create` are sent to it, and each fails as `refused-write`; every other case needs
/// a word it does not declare and is `unsupported`. (A complete writer is the reference's,
/// `ReferenceWriter` in `lance-conformance-generate`, which `lance-conformance testee` serves.)
///
/// ```
/// # use std::path::Path;
/// use lance_conformance_runner::runner::protocol::*;
/// use lance_conformance_runner::runner::{Answer, ConformanceWriter, Description, Refusal};
/// use lance_conformance_runner::runner::{FailureKind, Options, Outcome, run_writer_suite};
///
/// struct Declines;
///
/// impl ConformanceWriter for Declines {
///     fn describe(&mut self) -> Answer<Description> {
///         let implementation = Implementation {
///             name: "declines".into(),
///             version: "0.1.0".into(),
///             language: None,
///             homepage: None,
///         };
///         let capabilities = ["write:create".to_string()].into();
///         Ok(Description { implementation, capabilities })
///     }
///     fn write(&mut self, _: &WriteRequest) -> Answer<WriteResult> {
///         let message = "this writer commits nothing".to_string();
///         Err(Refusal::Error(ReadError { class: "refused".into(), code: None, message }))
///     }
///     fn prepare(&mut self, _: &WriteRequest) -> Answer<PrepareResult> {
///         Err(Refusal::Unsupported("prepare".into()))
///     }
///     fn commit(&mut self, _: &str, _: &str) -> Answer<WriteResult> {
///         Err(Refusal::Unsupported("commit".into()))
///     }
/// }
///
/// let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance-cases");
/// let scratch = std::env::temp_dir().join(format!("writer-example-{}", std::process::id()));
/// let mut options = Options::new(corpus);
/// options.filters.areas = vec!["dataset".into()];
/// let report = run_writer_suite(&mut Declines, options, &scratch, None)?;
/// let _ = std::fs::remove_dir_all(&scratch);
/// let failed: Vec<_> = report.cases.iter().filter(|c| c.outcome == Outcome::Failed).collect();
/// assert!(!failed.is_empty() && report.exit_code() == 1);
/// assert!(failed.iter().all(|c| c.kind == Some(FailureKind::RefusedWrite)));
/// # Ok::<(), lance_conformance_runner::runner::RunnerError>(())
/// ```
pub fn run_writer_suite(
    writer: &mut dyn ConformanceWriter,
    options: Options,
    scratch: &Path,
    data_file_version: Option<&str>,
) -> Result<Report, RunnerError> {
    let description = writer.describe();
    let mut report = run_cases(options, description, |c, expected, _, declared| {
        let dir: PathBuf = scratch.join(&c.area).join(&c.case.id);
        let checks = run_case(writer, declared, c, expected, &dir, data_file_version);
        CaseResult::of_case(c, checks)
    })?;
    report.role = Role::Writer;
    Ok(report)
}
