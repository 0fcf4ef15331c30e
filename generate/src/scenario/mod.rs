//! Executing a scenario on the reference: steps in, one [`Snapshot`] per committed version out.
//!
//! Invariant: [`execute`] is a pure function of the steps. Version `n` is `versions[n - 1]`;
//! every version has feature flags equal to what its content requires
//! ([`lance_reference::flags::set_commit_flags`]), passes [`Snapshot::validate`] and the written-flag
//! check, and was produced by the reference's own operations (overlay writer, stamping,
//! delete, index build, merge, fold, row rewrite, row-moving update), except the few manifest
//! edits that have no reference operation (config and schema changes, indices built in the
//! `create` commit, reserving row ids). File names are derived from the step number, so
//! they are stable across runs. `corrupt` steps do not touch the versions: they are returned
//! for the store to apply to the written dataset.

mod build;
pub mod corrupt;
pub mod edits;
mod rows;

use lance_reference::compaction::{self, FoldPlan, IndexPolicy};
use lance_reference::lineage::{PendingCommit, restamp};
use lance_reference::model::{FieldId, Index, IndexKind, Schema, Snapshot};
use lance_reference::{delete, flags, index_build};
use roaring::RoaringBitmap;

use crate::case::Cell;
use crate::case::names::field_id;
use crate::case::step::{FoldPolicySpec, IndexKindSpec, IndexSpec, Row};
use crate::case::{Corruption, Step};
use edits::ReencodePlan;

/// What one step did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRecord {
    /// Position in the scenario (0-based).
    pub step: usize,
    /// The step's `op`.
    pub op: &'static str,
    /// Versions the step committed (none for `corrupt`, two for `commit_retry`).
    pub versions: Vec<u64>,
    /// A one-line account for people (what was re-stamped, which fragment was created, ...).
    pub note: String,
}

/// The result of running a scenario.
#[derive(Debug, Clone)]
pub struct Execution {
    /// Every committed version, oldest first (`versions[n - 1]` is version `n`).
    pub versions: Vec<Snapshot>,
    /// One record per step.
    pub records: Vec<StepRecord>,
    /// Damage to apply to the newest written version (negative cases).
    pub corruptions: Vec<Corruption>,
    /// Equivalent re-encodings, each with the version it applies to, in step order.
    pub reencodings: Vec<(u64, ReencodePlan)>,
    /// The commits `prepared` refusals stand for, as a caller states them: each the version it
    /// would have created, never committed (the store writes them under `refused/`).
    pub refused: Vec<Snapshot>,
}

impl Execution {
    /// Version `n`, if it was committed.
    pub fn version(&self, n: u64) -> Option<&Snapshot> {
        n.checked_sub(1)
            .and_then(|i| self.versions.get(usize::try_from(i).ok()?))
    }
}

/// Why a scenario could not run.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The step does not make sense (unknown field, offset past the end, ...).
    #[error("step {step} ({op}): {problem}")]
    Step {
        /// Step position.
        step: usize,
        /// Its `op`.
        op: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// The reference refused or failed the operation.
    #[error("step {step} ({op}): the reference says [{}/{}]: {error}", error.class().as_str(), error.code())]
    Reference {
        /// Step position.
        step: usize,
        /// Its `op`.
        op: &'static str,
        /// The reference's error.
        error: Box<lance_reference::Error>,
    },
}

/// Mutable state of a run: the newest version, all versions, and id counters that outlive
/// any one version (fragment and field ids are never reused).
struct Run {
    versions: Vec<Snapshot>,
    next_fragment_id: u64,
    next_field_id: i32,
}

/// The failure of one operation, before it is tagged with its step.
enum Failure {
    Problem(String),
    Reference(lance_reference::Error),
}

impl From<lance_reference::Error> for Failure {
    fn from(e: lance_reference::Error) -> Self {
        Failure::Reference(e)
    }
}

impl From<String> for Failure {
    fn from(s: String) -> Self {
        Failure::Problem(s)
    }
}

type Outcome<T> = Result<T, Failure>;

/// Runs `steps` (see the module docs).
pub fn execute(steps: &[Step]) -> Result<Execution, ScenarioError> {
    let mut run = Run {
        versions: Vec::new(),
        next_fragment_id: 0,
        next_field_id: 0,
    };
    let mut records = Vec::new();
    let mut corruptions = Vec::new();
    let mut reencodings = Vec::new();
    let mut refused: Vec<Snapshot> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let tag = tag_failure(i, step);
        let before = run.versions.len();
        let note = match step {
            Step::Corrupt(c) => {
                if run.versions.is_empty() {
                    return Err(tag(Failure::Problem("nothing written to corrupt".into())));
                }
                corruptions.push(c.clone());
                "applied to the written dataset".to_string()
            }
            Step::SetWriterFlag { bit } if corruptions.is_empty() => {
                let note = run.set_writer_flag(*bit).map_err(&tag)?;
                let current = run.current().map_err(&tag)?;
                reencodings.push((current.version, ReencodePlan::WriterFlags { bits: *bit }));
                note
            }
            Step::ExpectRefusal {
                attempt,
                code,
                may_commit,
                prepared: true,
            } if corruptions.is_empty() => {
                let note = run.step(i, step).map_err(&tag)?;
                if *may_commit {
                    return Err(tag(Failure::Problem(
                        "a prepared refusal cannot also let the writer commit".into(),
                    )));
                }
                let twin = match (attempt.as_ref(), steps.get(i + 1)) {
                    (
                        Step::CompactOverlays { fragment, .. },
                        Some(Step::CompactOverlays { fragment: next, .. }),
                    ) => fragment == next,
                    _ => false,
                };
                if !twin {
                    return Err(tag(Failure::Problem(
                        "a prepared refusal is a `compact_overlays` followed by its twin, a `compact_overlays` of the same fragment".into(),
                    )));
                }
                let stated = run.stated_refusal(i, attempt, code).map_err(&tag)?;
                if refused.iter().any(|r| r.version == stated.version) {
                    return Err(tag(Failure::Problem(format!(
                        "a second prepared refusal at version {}",
                        stated.version
                    ))));
                }
                refused.push(stated);
                format!("{note}; stated as a caller would, for committers (refused/)")
            }
            Step::Reencode(r) if corruptions.is_empty() => {
                let current = run.current().map_err(&tag)?;
                let (plan, note) =
                    edits::plan(current, r).map_err(|p| tag(Failure::Problem(p.to_string())))?;
                reencodings.push((current.version, plan));
                note
            }
            other => {
                if !corruptions.is_empty() {
                    return Err(tag(Failure::Problem("steps after `corrupt`".into())));
                }
                run.step(i, other).map_err(&tag)?
            }
        };
        records.push(StepRecord {
            step: i,
            op: step.op(),
            versions: (before + 1..=run.versions.len())
                .map(|v| v as u64)
                .collect(),
            note,
        });
    }
    Ok(Execution {
        versions: run.versions,
        records,
        corruptions,
        reencodings,
        refused,
    })
}

/// The commit `write` (an `overlay` or `append`) prepares on `read`, before it knows the version
/// it will land at. Appended fragments carry a placeholder id until [`Run::land`].
fn prepare(read: &Snapshot, i: usize, write: &Step) -> Outcome<PendingCommit> {
    Ok(match write {
        Step::Overlay { .. } => build::overlay_commit(read, write, &format!("s{i}w"))?,
        Step::Append {
            rows,
            generate_rows,
        } => PendingCommit {
            overlays: Vec::new(),
            // The id is a placeholder: fragment ids are assigned when the commit lands.
            appended: vec![build::appended(
                &read.schema,
                u64::MAX,
                &format!("s{i}w.lance"),
                &rows_of(&read.schema, rows, *generate_rows)?,
            )?],
        },
        _ => {
            return Err("`write` must be an `overlay` or `append` step"
                .to_string()
                .into());
        }
    })
}

/// Continues a history that was read back from a dataset directory: `versions` are every
/// committed version, oldest first (empty before `create`), and `step` is one commit. `label`
/// names the files the step writes and must differ for every commit of the history (the
/// reference's writer uses the version it commits). Returns the new version. Fragment and
/// field ids continue above the highest ever used, so none is reused.
pub fn continue_history(
    versions: Vec<Snapshot>,
    label: usize,
    step: &Step,
) -> Result<Snapshot, ScenarioError> {
    let mut run = Run::resume(versions);
    let tag = tag_failure(label, step);
    if matches!(
        step,
        Step::Corrupt(_)
            | Step::Reencode(_)
            | Step::CommitRetry { .. }
            | Step::ExpectRefusal { .. }
    ) {
        return Err(tag(Failure::Problem(format!(
            "`{}` is not one commit",
            step.op()
        ))));
    }
    let before = run.versions.len();
    run.step(label, step).map_err(&tag)?;
    let one = run.versions.len() == before + 1;
    run.versions.pop().filter(|_| one).ok_or_else(|| {
        tag(Failure::Problem(
            "the step did not commit one version".into(),
        ))
    })
}

/// The second half of a retried commit: `write` (an `overlay` or `append`) was prepared on
/// version `read_version` of the history `versions`, other commits landed since, and it now
/// commits on the newest version, re-stamped ([OVL-VER-2], [LIN-STAMP-3]). Returns the new
/// version.
pub fn retry_on_newest(
    versions: Vec<Snapshot>,
    read_version: u64,
    label: usize,
    write: &Step,
) -> Result<Snapshot, ScenarioError> {
    let mut run = Run::resume(versions);
    let tag = tag_failure(label, write);
    let read = read_version
        .checked_sub(1)
        .and_then(|k| run.versions.get(usize::try_from(k).ok()?))
        .cloned()
        .ok_or_else(|| {
            tag(Failure::Problem(format!(
                "read version {read_version} is not a committed version"
            )))
        })?;
    let pending = prepare(&read, label, write).map_err(&tag)?;
    run.land(label, pending).map_err(&tag)?;
    run.versions
        .pop()
        .ok_or_else(|| tag(Failure::Problem("the retry committed no version".into())))
}

/// Tags a failure of `step` (at position or label `i`).
fn tag_failure(i: usize, step: &Step) -> impl Fn(Failure) -> ScenarioError + '_ {
    move |f: Failure| match f {
        Failure::Problem(problem) => ScenarioError::Step {
            step: i,
            op: step.op(),
            problem,
        },
        Failure::Reference(error) => ScenarioError::Reference {
            step: i,
            op: step.op(),
            error: Box::new(error),
        },
    }
}

impl Run {
    /// A run continuing `versions`: ids continue above the highest ever used.
    fn resume(versions: Vec<Snapshot>) -> Run {
        let next_fragment_id = versions
            .iter()
            .flat_map(|v| v.fragments.iter().map(|f| f.id + 1))
            .max()
            .unwrap_or(0);
        let next_field_id = versions
            .iter()
            .flat_map(|v| v.schema.fields().iter().map(|f| f.id + 1))
            .max()
            .unwrap_or(0)
            .max(0);
        Run {
            versions,
            next_fragment_id,
            next_field_id,
        }
    }

    fn current(&self) -> Outcome<&Snapshot> {
        self.versions
            .last()
            .ok_or_else(|| Failure::Problem("no version yet: start with `create`".into()))
    }

    fn next_version(&self) -> u64 {
        self.versions.len() as u64 + 1
    }

    fn alloc_fragment(&mut self) -> u64 {
        let id = self.next_fragment_id;
        self.next_fragment_id += 1;
        id
    }

    /// Stamps the flags the content requires, checks the version, and records it. A commit on
    /// top of a version whose writer word sets a bit the reference does not implement is
    /// refused first ([FLG-WRITE-5], [FLG-BITS-2]): the writer word binds every writer.
    fn commit(&mut self, mut snapshot: Snapshot) -> Outcome<()> {
        if let Some(prev) = self.versions.last() {
            flags::check_writer_flags(prev.writer_flags).map_err(lance_reference::Error::from)?;
        }
        snapshot.version = self.next_version();
        flags::set_commit_flags(&mut snapshot);
        flags::check_written_flags(&snapshot).map_err(lance_reference::Error::from)?;
        snapshot.validate()?;
        self.versions.push(snapshot);
        Ok(())
    }

    /// Commits a commit prepared on an older version ([`prepare`]) on the newest one: appended
    /// fragments get their ids now, and everything commit-assigned is re-stamped ([`restamp`]).
    fn land(&mut self, i: usize, mut pending: PendingCommit) -> Outcome<()> {
        for a in &mut pending.appended {
            a.fragment.id = self.alloc_fragment();
            a.fragment
                .files
                .iter_mut()
                .for_each(|f| f.path = format!("f{}-s{i}w.lance", a.fragment.id));
        }
        let newest = self.current()?.clone();
        self.commit(restamp(&pending, &newest)?)
    }

    fn step(&mut self, i: usize, step: &Step) -> Outcome<String> {
        match step {
            Step::Create {
                schema,
                rows,
                generate_rows,
                stable_row_ids,
                config,
                indices,
            } => {
                if !self.versions.is_empty() {
                    return Err("`create` must be the first step".to_string().into());
                }
                let fields = build::schema_fields(schema, -1, &mut self.next_field_id, &[])?;
                let schema = Schema::new(fields)?;
                let mut snapshot = Snapshot {
                    version: 1,
                    schema,
                    fragments: Vec::new(),
                    indices: Vec::new(),
                    config: config.clone(),
                    stable_row_ids: *stable_row_ids,
                    next_row_id: 0,
                    reader_flags: 0,
                    writer_flags: 0,
                };
                let mut pending = PendingCommit::default();
                let rows = rows_of(&snapshot.schema, rows, *generate_rows)?;
                if !rows.is_empty() {
                    let id = self.alloc_fragment();
                    let path = format!("f{id}-s{i}.lance");
                    pending
                        .appended
                        .push(build::appended(&snapshot.schema, id, &path, &rows)?);
                }
                snapshot = pending.apply(&snapshot, 1)?;
                for spec in indices {
                    let index = initial_index(&snapshot, spec)?;
                    snapshot.indices.push(index);
                }
                self.commit(snapshot)?;
                Ok(format!("created with {} row(s)", rows.len()))
            }
            Step::Append {
                rows,
                generate_rows,
            } => {
                let current = self.current()?.clone();
                let rows = rows_of(&current.schema, rows, *generate_rows)?;
                let id = self.alloc_fragment();
                let path = format!("f{id}-s{i}.lance");
                let pending = PendingCommit {
                    overlays: Vec::new(),
                    appended: vec![build::appended(&current.schema, id, &path, &rows)?],
                };
                self.commit(pending.apply(&current, self.next_version())?)?;
                Ok(format!("appended fragment {id} with {} row(s)", rows.len()))
            }
            Step::Overlay { .. } => {
                let current = self.current()?.clone();
                let pending = build::overlay_commit(&current, step, &format!("s{i}"))?;
                self.commit(pending.apply(&current, self.next_version())?)?;
                Ok(format!(
                    "{} overlay(s)",
                    pending.overlays.iter().map(|(_, o)| o.len()).sum::<usize>()
                ))
            }
            Step::Delete {
                fragment,
                offsets,
                predicate,
            } => {
                let current = self.current()?.clone();
                let version = self.next_version();
                let next = match (fragment, predicate) {
                    (Some(f), None) => {
                        let set: RoaringBitmap = offsets.iter().copied().collect();
                        delete::delete_rows(&current, *f, &set, version)?
                    }
                    (None, Some(p)) if offsets.is_empty() => {
                        let schema = &current.schema;
                        let predicate = p
                            .to_predicate(schema, &|n| field_id(schema, n))
                            .map_err(|e| e.to_string())?;
                        delete::delete_where(&current, &predicate, version)?
                    }
                    _ => {
                        return Err("give either `fragment` and `offsets`, or `where`"
                            .to_string()
                            .into());
                    }
                };
                let live = |s: &Snapshot| {
                    s.fragments
                        .iter()
                        .map(|f| f.physical_rows - f.deletions.len())
                        .sum::<u64>()
                };
                let count = live(&current).saturating_sub(live(&next));
                self.commit(next)?;
                Ok(format!("deleted {count} row(s)"))
            }
            Step::BuildIndex {
                name,
                fields,
                kind,
                built_from,
            } => {
                let current = self.current()?.clone();
                let from = built_from.unwrap_or(current.version);
                let read = from
                    .checked_sub(1)
                    .and_then(|k| self.versions.get(k as usize))
                    .ok_or_else(|| format!("built_from {from} is not a committed version"))?;
                let ids = field_ids(&current.schema, fields)?;
                let next = index_build::build_index(
                    read,
                    &current,
                    name,
                    &ids,
                    index_kind(*kind),
                    self.next_version(),
                )?;
                self.commit(next)?;
                Ok(format!("index {name} built from version {from}"))
            }
            Step::CompactOverlays {
                fragment,
                positions,
                committed_version,
            } => {
                let mut next = self.current()?.clone();
                let path = format!("f{fragment}-s{i}-merged.lance");
                let merged = {
                    let frag = next.fragment(*fragment)?;
                    let mut merged =
                        compaction::merge_overlays(&next.schema, frag, positions, &path)?;
                    if let Some(stated) = committed_version {
                        stamp_merged(&mut merged, &path, *stated);
                        compaction::check_stated_merge(&next.schema, frag, &merged)
                            .map_err(lance_reference::Error::from)?;
                    }
                    merged
                };
                for f in &mut next.fragments {
                    if f.id == *fragment {
                        *f = merged.clone();
                    }
                }
                self.commit(next)?;
                Ok(format!(
                    "merged overlays {positions:?} of fragment {fragment}"
                ))
            }
            Step::Fold { fragment, indices } => {
                let current = self.current()?.clone();
                let plan: FoldPlan = indices
                    .iter()
                    .map(|(k, p)| {
                        (
                            k.clone(),
                            match p {
                                FoldPolicySpec::Rebuild => IndexPolicy::Rebuild,
                                FoldPolicySpec::Drop => IndexPolicy::DropFragment,
                            },
                        )
                    })
                    .collect();
                let path = format!("f{fragment}-s{i}-folded.lance");
                let next =
                    compaction::fold(&current, *fragment, &plan, self.next_version(), &path)?;
                self.commit(next)?;
                Ok(format!("folded fragment {fragment}"))
            }
            Step::RewriteRows {
                fragments,
                rows_per_fragment,
            } => self.rewrite(i, fragments, *rows_per_fragment),
            Step::CommitRetry { write, conflict } => {
                let read = self.current()?.clone();
                let pending = prepare(&read, i, write)?;
                if matches!(
                    conflict.as_ref(),
                    Step::Corrupt(_)
                        | Step::CommitRetry { .. }
                        | Step::Create { .. }
                        | Step::ExpectRefusal { .. }
                ) {
                    return Err("`conflict` must be an ordinary commit".to_string().into());
                }
                let attempted = self.next_version();
                self.step(i, conflict)?;
                self.land(i, pending)?;
                Ok(format!(
                    "{} lost the race for version {attempted} to {}, re-stamped at version {}",
                    write.op(),
                    conflict.op(),
                    attempted + 1
                ))
            }
            Step::SetConfig { set, unset } => {
                let mut next = self.current()?.clone();
                for k in unset {
                    next.config.remove(k);
                }
                next.config
                    .extend(set.iter().map(|(k, v)| (k.clone(), v.clone())));
                self.commit(next)?;
                Ok("config changed".into())
            }
            Step::AddFields { schema, fill } => {
                let mut next = self.current()?.clone();
                let mut fields = next.schema.fields().to_vec();
                let added = build::schema_fields(schema, -1, &mut self.next_field_id, &fields)?;
                let names: Vec<String> = added.iter().map(|f| f.name.clone()).collect();
                fields.extend(added);
                next.schema = Schema::new(fields)?;
                if !fill.is_empty() {
                    let version = self.next_version();
                    rows::backfill(&mut next, &names, fill, &format!("s{i}"), version)?;
                }
                self.commit(next)?;
                Ok(if fill.is_empty() {
                    format!("added {names:?}")
                } else {
                    format!(
                        "added {names:?}, backfilled {:?}",
                        fill.keys().collect::<Vec<_>>()
                    )
                })
            }
            Step::DropFields { fields: names } => {
                let mut next = self.current()?.clone();
                let mut dropped = Vec::new();
                for n in names {
                    let id = field_id(&next.schema, n).ok_or_else(|| format!("no field {n:?}"))?;
                    dropped.push(id);
                }
                let schema = &next.schema;
                let keep: Vec<_> = schema
                    .fields()
                    .iter()
                    .filter(|f| !dropped.iter().any(|d| schema.ancestry(f.id).contains(d)))
                    .cloned()
                    .collect();
                let kept_ids: Vec<_> = keep.iter().map(|f| f.id).collect();
                next.schema = Schema::new(keep)?;
                next.indices
                    .retain(|x| x.fields.iter().all(|f| kept_ids.contains(f)));
                self.commit(next)?;
                Ok(format!("dropped {names:?}"))
            }
            Step::Corrupt(_) => Err("`corrupt` cannot be nested".to_string().into()),
            Step::Reencode(_) => Err("`reencode` cannot come after `corrupt`, nor be nested"
                .to_string()
                .into()),
            Step::ClearLineage {
                fragment,
                sequences,
            } => self.clear_lineage(*fragment, sequences),
            Step::ClearIndexCoverage { index } => self.clear_index_coverage(index),
            Step::AddSystemColumn { fragment, id } => self.add_system_column(i, *fragment, *id),
            Step::ReorderOverlays { fragment, order } => {
                let mut next = self.current()?.clone();
                reorder_overlays(&mut next, *fragment, order)?;
                self.commit(next)?;
                Ok(format!(
                    "stored the overlays of fragment {fragment} in the order {order:?}"
                ))
            }
            Step::ExpectRefusal { attempt, code, .. } => self.expect_refusal(i, attempt, code),
            Step::SetWriterFlag { bit } => self.set_writer_flag(*bit),
            Step::UpdateRows {
                fragment,
                offsets,
                set,
            } => self.update_rows(i, *fragment, offsets, set),
            Step::Update { predicate, set } => self.update_where(i, predicate, set),
            Step::RewriteColumns {
                fragment,
                offsets,
                set,
            } => self.rewrite_columns(i, *fragment, offsets, set),
            Step::MergeInsert { on, rows } => self.merge_insert(i, on, rows),
            Step::Restore { version } => self.restore(*version),
            Step::ReserveRowIds { count } => self.reserve_row_ids(*count),
        }
    }

    /// One version equal to the newest with `bit` added to its writer word ([`Step::SetWriterFlag`]):
    /// a newer writer's commit, so the reference's written-flag rules are not applied, and
    /// only a single bit the reference's writer does not implement is accepted. The store
    /// writes the words the content needs; the bit is added to the stored manifest by the
    /// re-encoding [`execute`] records for this version ([`ReencodePlan::WriterFlags`]).
    fn set_writer_flag(&mut self, bit: u64) -> Outcome<String> {
        if !bit.is_power_of_two() || flags::check_writer_flags(bit).is_ok() {
            return Err(format!(
                "`set_writer_flag` takes one bit the reference's writer does not implement, not {bit}"
            )
            .into());
        }
        let mut next = self.current()?.clone();
        next.version = self.next_version();
        next.writer_flags |= bit;
        next.validate()?;
        self.versions.push(next);
        Ok(format!("writer word bit {bit} set by a newer writer"))
    }

    /// The commit a `prepared` refusal of the merge `attempt` stands for, as a caller states it
    /// ([`compaction::stated_merge`]: the inputs' post-image at the newest input's position,
    /// contiguous or not, with `committed_version` as the step states it): the version it would
    /// create, never committed. The reference's committer must refuse it with `code`
    /// ([`compaction::check_stated_merge`]), the code the compactor refused the step with.
    fn stated_refusal(&mut self, i: usize, attempt: &Step, code: &str) -> Outcome<Snapshot> {
        let Step::CompactOverlays {
            fragment,
            positions,
            committed_version,
        } = attempt
        else {
            return Err(format!(
                "a prepared refusal states a merge: `compact_overlays`, not `{}`",
                attempt.op()
            )
            .into());
        };
        let mut next = self.current()?.clone();
        let path = format!("f{fragment}-s{i}-merged.lance");
        let before = next.fragment(*fragment)?.clone();
        let mut merged = compaction::stated_merge(&next.schema, &before, positions, &path)?;
        if let Some(stated) = committed_version {
            stamp_merged(&mut merged, &path, *stated);
        }
        match compaction::check_stated_merge(&next.schema, &before, &merged) {
            Err(e) if lance_reference::Error::from(e.clone()).code() == code => {}
            Err(e) => {
                return Err(format!(
                    "the committer refuses the stated merge with {}, not {code}: {e}",
                    lance_reference::Error::from(e.clone()).code()
                )
                .into());
            }
            Ok(()) => {
                return Err(format!(
                    "the committer accepts the stated merge; it had to refuse it with {code}"
                )
                .into());
            }
        }
        for f in &mut next.fragments {
            if f.id == *fragment {
                *f = merged.clone();
            }
        }
        next.version = self.next_version();
        flags::set_commit_flags(&mut next);
        next.validate()?;
        Ok(next)
    }

    /// Runs `attempt`, which the reference must refuse with `code` without committing
    /// anything. The class is the error's own: a writer refusal is judged by its code alone
    /// (spec/conformance.md §7.1), and a writer refuses some steps for a reason a reader would
    /// report as `unsupported_feature` (a writer word bit it does not implement, [FLG-WRITE-5])
    /// or `invalid` (a malformed budget, [LIN-CFG-3]).
    fn expect_refusal(&mut self, i: usize, attempt: &Step, code: &str) -> Outcome<String> {
        if matches!(
            attempt,
            Step::Create { .. }
                | Step::Corrupt(_)
                | Step::CommitRetry { .. }
                | Step::ExpectRefusal { .. }
        ) {
            return Err(format!("`{}` cannot be an expected refusal", attempt.op()).into());
        }
        let before = self.versions.len();
        let outcome = self.step(i, attempt);
        if self.versions.len() != before {
            return Err(format!(
                "{} was committed, but it had to be refused with {code}",
                attempt.op()
            )
            .into());
        }
        match outcome {
            Err(Failure::Reference(e)) if e.code() == code => Ok(format!(
                "{} refused [{}/{code}]: {e}",
                attempt.op(),
                e.class().as_str()
            )),
            Err(Failure::Reference(e)) => Err(format!(
                "{} had to be refused with {code}, the reference fails with {}/{}: {e}",
                attempt.op(),
                e.class().as_str(),
                e.code()
            )
            .into()),
            Err(Failure::Problem(p)) => Err(format!("{}: {p}", attempt.op()).into()),
            Ok(_) => Err(format!(
                "{} succeeded, but it had to be refused with {code}",
                attempt.op()
            )
            .into()),
        }
    }
}

/// Gives the merged overlay of `fragment` (its data file is `path`) the `committed_version` a
/// caller states.
fn stamp_merged(fragment: &mut lance_reference::model::Fragment, path: &str, stated: u64) {
    for o in &mut fragment.overlays {
        if o.file.path == path {
            o.committed_version = stated;
        }
    }
}

/// The rows of a `create` or `append` step: the listed ones, or `generate` rows, row `i`
/// holding `i` in every integer top-level field (NULL elsewhere).
fn rows_of(schema: &Schema, rows: &[Row], generate: Option<u64>) -> Outcome<Vec<Row>> {
    let Some(n) = generate else {
        return Ok(rows.to_vec());
    };
    if !rows.is_empty() {
        return Err("give `rows` or `generate_rows`, not both"
            .to_string()
            .into());
    }
    let ints: Vec<String> = schema
        .top_level()
        .filter(|f| {
            matches!(
                f.data_type,
                lance_reference::model::DataType::Int32
                    | lance_reference::model::DataType::Int64
                    | lance_reference::model::DataType::UInt64
            )
        })
        .map(|f| f.name.clone())
        .collect();
    Ok((0..n)
        .map(|i| {
            ints.iter()
                .map(|name| (name.clone(), Cell::Int(i as i64)))
                .collect()
        })
        .collect())
}

/// Stores fragment `fragment`'s overlays in `order` (a permutation of the positions).
fn reorder_overlays(snapshot: &mut Snapshot, fragment: u64, order: &[usize]) -> Outcome<()> {
    let frag = snapshot
        .fragments
        .iter_mut()
        .find(|f| f.id == fragment)
        .ok_or_else(|| format!("no fragment {fragment}"))?;
    let n = frag.overlays.len();
    let mut sorted = order.to_vec();
    sorted.sort_unstable();
    if sorted != (0..n).collect::<Vec<_>>() {
        return Err(
            format!("order {order:?} is not a permutation of the {n} overlay position(s)").into(),
        );
    }
    let old = frag.overlays.clone();
    frag.overlays = order.iter().filter_map(|&p| old.get(p).cloned()).collect();
    Ok(())
}

fn field_ids(schema: &Schema, names: &[String]) -> Outcome<Vec<FieldId>> {
    names
        .iter()
        .map(|n| field_id(schema, n).ok_or_else(|| Failure::Problem(format!("no field {n:?}"))))
        .collect()
}

fn index_kind(kind: IndexKindSpec) -> IndexKind {
    match kind {
        IndexKindSpec::Btree => IndexKind::BTree,
        IndexKindSpec::Vector => IndexKind::Vector,
    }
}

/// An index built in the `create` commit itself: `dataset_version` 1, covering every fragment
/// of version 1, holding the values [`index_build::entries`] reads.
fn initial_index(snapshot: &Snapshot, spec: &IndexSpec) -> Outcome<Index> {
    let fields = field_ids(&snapshot.schema, &spec.fields)?;
    if fields.is_empty() {
        return Err(format!("index {} names no field", spec.name).into());
    }
    let mut index = Index {
        name: spec.name.clone(),
        fields,
        dataset_version: snapshot.version,
        fragment_bitmap: Some(
            snapshot
                .fragments
                .iter()
                .filter_map(|f| u32::try_from(f.id).ok())
                .collect(),
        ),
        kind: index_kind(spec.kind),
        entries: Vec::new(),
    };
    index.entries = index_build::entries(snapshot, &index)?;
    Ok(index)
}
