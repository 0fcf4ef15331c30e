//! The writer run in process: the reference writer passes every writer case, and writers with
//! injected misbehaviour fail the cases that catch it, so no writer passes by doing nothing or
//! by committing what it should refuse.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use lance_conformance::case::Step;
use lance_conformance::reference_writer::ReferenceWriter;
use lance_conformance::runner::html;
use lance_conformance::runner::protocol::{
    CommitPreparedRequest, PrepareResult, ReadError, WriteRequest, WriteResult,
};
use lance_conformance::runner::write_step::{from_wire, to_wire};
use lance_conformance::runner::writer::run_writer_suite;
use lance_conformance::runner::{
    Answer, ConformanceWriter, Description, FailureKind, Options, Outcome, Refusal, Report,
};

use super::{copy_dir, corpus};

fn run(writer: &mut dyn ConformanceWriter) -> Report {
    let scratch = tempfile::tempdir().unwrap();
    run_writer_suite(writer, Options::new(corpus()), scratch.path(), None).unwrap()
}

/// The overlay cases only, with the run asking for data file version `version`.
fn run_overlays_in(writer: &mut dyn ConformanceWriter, version: &str) -> Report {
    let scratch = tempfile::tempdir().unwrap();
    let mut options = Options::new(corpus());
    options.filters.areas = vec!["overlays".into()];
    run_writer_suite(writer, options, scratch.path(), Some(version)).unwrap()
}

fn outcomes(report: &Report, outcome: Outcome) -> BTreeSet<String> {
    report
        .cases
        .iter()
        .filter(|c| c.outcome == outcome)
        .map(|c| c.id.clone())
        .collect()
}

#[test]
fn the_reference_writer_passes_every_writer_case() {
    let report = run(&mut ReferenceWriter::new());
    let failing = super::failing(&report);
    assert!(failing.is_empty(), "{failing:#?}");
    let passed = outcomes(&report, Outcome::Passed);
    // Most of the corpus is a writer case; the rest is named with its reason.
    assert!(
        passed.len() >= 140,
        "only {} writer cases passed",
        passed.len()
    );
    for c in &report.cases {
        if c.outcome == Outcome::Skipped {
            let why = c
                .checks
                .first()
                .and_then(|k| k.message.clone())
                .unwrap_or_default();
            assert!(why.starts_with("not a writer case: "), "{}: {why}", c.id);
        }
    }
    // Its area scores count only the writer cases: a case no writer is asked for is not one it
    // failed to pass, so the reference writer scores 100 in every area.
    for (area, per_run) in html::area_scores(std::slice::from_ref(&report)) {
        let s = per_run[0];
        let held = report.cases.iter().filter(|c| c.area == area).count();
        let outside = report
            .cases
            .iter()
            .filter(|c| c.area == area && c.outcome == Outcome::Skipped)
            .count();
        assert_eq!(
            (s.passed, s.total),
            (held - outside, held - outside),
            "{area}"
        );
        assert_eq!(s.percent(), 100, "{area}");
    }
    // Retries, refusals and negative cases' histories are among the passes.
    for id in [
        "retry-overlay",
        "retry-append",
        "merge-refuses-non-contiguous",
        "base-column-short",
    ] {
        assert!(passed.contains(id), "{id} did not pass");
    }
}

/// The reference writer with one misbehaviour.
struct Misbehaving {
    inner: ReferenceWriter,
    how: How,
}

#[derive(Clone, Copy)]
enum How {
    /// Refuses every step.
    RefuseAll,
    /// Drops the last row of every `append`.
    DropAppendedRow,
    /// Commits a `set_config` no-op where the reference refuses a step.
    CommitInsteadOfRefusing,
    /// Commits a retried commit on the version it read, as if no other commit had landed
    /// (here: refuses to prepare, committing at once instead).
    CommitAtPrepare,
    /// Declares no `write:` word.
    DeclareNothing,
    /// Does not declare `write:reference-lineage-encoding`.
    OwnEncoding,
    /// Writes its default data file version whatever the run asks for.
    IgnoreFileVersion,
    /// A committer that accepts every prepared commit: where the reference refuses one, it
    /// commits anyway (here: a `set_config` no-op, a new version all the same).
    AcceptEveryPrepared,
    /// A committer that refuses every prepared commit, the well-formed twins included.
    RefuseEveryPrepared,
    /// Does not declare `write:prepared-commit`.
    NoPreparedCommit,
    /// Does not declare `write:compact-overlays` (a committer without an overlay compaction of
    /// its own, as Lance's).
    NoCompactOverlays,
}

/// The negative cases whose damaged commit a caller could hand a committer: the committer cases
/// (`spec/conformance.md` §7.4), one per kind of malformed commit.
const COMMITTER_CASES: [&str; 22] = [
    "coverage-past-end",
    "overlay-value-count-mismatch",
    "overlay-value-count-surplus",
    "overlay-value-wrong-type",
    "overlay-file-missing",
    "truncated-overlay-file",
    "overlay-duplicate-live-field",
    "sparse-bitmap-count",
    "sparse-value-count-one-field",
    "committed-version-zero",
    "committed-version-in-future",
    "append-base-column-short",
    "append-base-column-wrong-type",
    "append-duplicate-live-field",
    "append-fewer-column-indices",
    "deletion-past-end",
    "deletion-file-offset-past-end",
    "duplicate-deletion-offset",
    "num-deleted-rows-mismatch",
    "signed-deletion-offsets",
    "committer-merge-non-contiguous",
    "committer-merge-below-index-version",
];

/// The committer cases whose malformed commit is a merge a caller states (`expect_refusal` with
/// `prepared`), each with the code of its refusal.
const STATED_MERGE_CASES: [(&str, &str); 2] = [
    ("committer-merge-non-contiguous", "non_contiguous_merge"),
    (
        "committer-merge-below-index-version",
        "merged_version_mismatch",
    ),
];

impl ConformanceWriter for Misbehaving {
    fn describe(&mut self) -> Answer<Description> {
        let mut d = self.inner.describe()?;
        if matches!(self.how, How::DeclareNothing) {
            d.capabilities.clear();
        }
        if matches!(self.how, How::OwnEncoding) {
            d.capabilities.remove("write:reference-lineage-encoding");
        }
        if matches!(self.how, How::NoPreparedCommit) {
            d.capabilities.remove("write:prepared-commit");
        }
        if matches!(self.how, How::NoCompactOverlays) {
            d.capabilities.remove("write:compact-overlays");
        }
        Ok(d)
    }

    fn write(&mut self, request: &WriteRequest) -> Answer<WriteResult> {
        if matches!(self.how, How::IgnoreFileVersion) {
            let mut default = request.clone();
            default.data_file_version = None;
            return self.inner.write(&default);
        }
        match self.how {
            How::RefuseAll => Err(Refusal::Error(ReadError {
                class: "refused".into(),
                code: None,
                message: "no".into(),
            })),
            How::DropAppendedRow => {
                let mut step = from_wire(&request.step).unwrap();
                let Step::Append { rows, .. } = &mut step else {
                    return self.inner.write(request);
                };
                rows.pop();
                // The rows are typed again by the dataset's schema, which an append leaves alone.
                let dataset =
                    lance_reference_io::Dataset::open(std::path::Path::new(&request.dataset))
                        .unwrap();
                let (snapshot, _) = dataset.read_version(request.read_version).unwrap();
                let mut changed = request.clone();
                changed.step = to_wire(&step, &snapshot.schema).unwrap();
                self.inner.write(&changed)
            }
            How::CommitInsteadOfRefusing => match self.inner.write(request) {
                Err(Refusal::Error(e)) if e.class == "refused" => {
                    let mut noop = request.clone();
                    noop.step = serde_json::json!({"op": "set_config", "set": {"k": "v"}});
                    self.inner.write(&noop)
                }
                other => other,
            },
            _ => self.inner.write(request),
        }
    }

    fn prepare(&mut self, request: &WriteRequest) -> Answer<PrepareResult> {
        match self.how {
            How::CommitAtPrepare => {
                self.inner.write(request)?;
                Ok(PrepareResult {
                    transaction: "done".into(),
                })
            }
            How::IgnoreFileVersion => {
                let mut default = request.clone();
                default.data_file_version = None;
                self.inner.prepare(&default)
            }
            _ => self.inner.prepare(request),
        }
    }

    fn commit(&mut self, dataset: &str, transaction: &str) -> Answer<WriteResult> {
        self.inner.commit(dataset, transaction)
    }

    fn commit_prepared(&mut self, request: &CommitPreparedRequest) -> Answer<WriteResult> {
        match self.how {
            How::AcceptEveryPrepared => match self.inner.commit_prepared(request) {
                Err(Refusal::Error(e)) if e.class == "refused" => self.inner.write(&WriteRequest {
                    dataset: request.dataset.clone(),
                    read_version: request.read_version,
                    step: serde_json::json!({"op": "set_config", "set": {"k": "v"}}),
                    data_file_version: None,
                }),
                other => other,
            },
            How::RefuseEveryPrepared => Err(Refusal::Error(ReadError {
                class: "refused".into(),
                code: None,
                message: "no".into(),
            })),
            _ => self.inner.commit_prepared(request),
        }
    }
}

/// The cases of `report` that ran a `refuses prepared` check.
fn committer_cases(report: &Report) -> BTreeSet<String> {
    report
        .cases
        .iter()
        .filter(|c| {
            c.checks
                .iter()
                .any(|k| k.name.to_string().contains("refuses prepared"))
        })
        .map(|c| c.id.clone())
        .collect()
}

/// The case `id` of `report`.
fn case<'a>(report: &'a Report, id: &str) -> &'a lance_conformance::runner::CaseResult {
    report.cases.iter().find(|c| c.id == id).unwrap()
}

#[test]
fn the_reference_committer_refuses_each_malformed_commit_and_commits_its_twin() {
    let report = run(&mut ReferenceWriter::new());
    let found = committer_cases(&report);
    let listed: BTreeSet<String> = COMMITTER_CASES.iter().map(|s| s.to_string()).collect();
    // the named cases at least; 2.2 twins of them and later cases of the same shape join them
    assert!(
        listed.is_subset(&found),
        "missing: {:?}",
        listed.difference(&found).collect::<Vec<_>>()
    );
    for id in COMMITTER_CASES {
        let c = case(&report, id);
        assert_eq!(
            c.outcome,
            Outcome::Passed,
            "{id}: {:?}",
            c.primary_failure()
        );
        let names: Vec<String> = c.checks.iter().map(|k| k.name.to_string()).collect();
        // The refusal carries the reader's code, and the twin is committed and then judged.
        assert!(
            names.iter().any(|n| n.contains("refusal code")),
            "{id}: {names:?}"
        );
        let twin = names
            .iter()
            .position(|n| n.contains("commit prepared"))
            .unwrap_or_else(|| panic!("{id}: {names:?}"));
        assert!(
            names[twin..].iter().any(|n| n.ends_with(" scan")),
            "{id}: {names:?}"
        );
    }
    // A caller-stated committed_version is a merge, the rest are overlays.
    let merge = case(&report, "committed-version-zero");
    assert!(
        merge
            .checks
            .iter()
            .any(|k| k.name.to_string() == "v2 refuses prepared (merge)")
    );
    let overlay = case(&report, "coverage-past-end");
    assert!(
        overlay
            .checks
            .iter()
            .any(|k| k.name.to_string() == "v2 refuses prepared (overlay)")
    );
    // A new fragment's files are an append, a new deletion file a delete.
    for (id, name) in [
        ("append-base-column-short", "v2 refuses prepared (append)"),
        ("deletion-past-end", "v3 refuses prepared (delete)"),
    ] {
        assert!(
            case(&report, id)
                .checks
                .iter()
                .any(|k| k.name.to_string() == name),
            "{id}"
        );
    }
    // A damaged fragment id is no committer case: the committer assigns an appended
    // fragment's id, so the damaged append hands it nothing malformed.
    assert!(!found.contains("fragment-id-above-32-bits"));
}

#[test]
fn a_stated_merge_is_refused_with_its_code_and_its_twin_committed_in_its_place() {
    // covers: OVL-MERGE-6
    let report = run(&mut ReferenceWriter::new());
    for (id, code) in STATED_MERGE_CASES {
        let c = case(&report, id);
        assert_eq!(
            c.outcome,
            Outcome::Passed,
            "{id}: {:?}",
            c.primary_failure()
        );
        let names: Vec<String> = c.checks.iter().map(|k| k.name.to_string()).collect();
        let at = |name: &str| {
            names
                .iter()
                .position(|n| n == name)
                .unwrap_or_else(|| panic!("{id}: no {name} in {names:?}"))
        };
        // The refusal with the reference's code, then the twin committed and judged, and no
        // compaction asked of the writer itself.
        let refused = at("v5 refuses prepared (merge)");
        assert!(refused < at(&format!("v5 refusal code ({code})")));
        assert!(refused < at("v5 commit prepared (merge)"));
        assert!(at("v5 commit prepared (merge)") < at("v5 scan"));
        assert!(
            !names.iter().any(|n| n.contains("(compact_overlays)")),
            "{names:?}"
        );
    }
}

#[test]
fn a_committer_without_overlay_compaction_is_judged_on_the_merges_it_is_handed() {
    // Lance's shape: no compaction of its own, a committer taking caller-built merges.
    let report = misbehaving(How::NoCompactOverlays);
    for (id, _) in STATED_MERGE_CASES {
        let c = case(&report, id);
        assert_eq!(
            c.outcome,
            Outcome::Passed,
            "{id}: {:?}",
            c.primary_failure()
        );
    }
    // A refusal the writer makes itself still needs the word.
    assert_eq!(
        case(&report, "merge-refuses-non-contiguous").outcome,
        Outcome::Skipped
    );
}

#[test]
fn a_committer_accepting_every_prepared_commit_fails_every_committer_case() {
    let report = misbehaving(How::AcceptEveryPrepared);
    for id in COMMITTER_CASES {
        fails_as(case(&report, id), FailureKind::CommittedRefused);
    }
}

/// `c` failed (or is advisory, where the case is a SHOULD) as `kind`.
fn fails_as(c: &lance_conformance::runner::CaseResult, kind: FailureKind) {
    assert!(
        matches!(c.outcome, Outcome::Failed | Outcome::Advisory),
        "{}: {:?}",
        c.id,
        c.outcome
    );
    assert_eq!(c.kind, Some(kind), "{}", c.id);
}

#[test]
fn a_committer_refusing_every_prepared_commit_fails_every_committer_case() {
    let report = misbehaving(How::RefuseEveryPrepared);
    for id in COMMITTER_CASES {
        let c = case(&report, id);
        fails_as(c, FailureKind::RefusedWrite);
        // The malformed commit's refusal passed: the twin is what a refuse-all fails.
        assert!(
            c.checks
                .iter()
                .any(|k| k.name.to_string().contains("refuses prepared")
                    && k.verdict == lance_conformance::runner::Verdict::Pass)
        );
    }
}

#[test]
fn a_writer_without_prepared_commits_writes_those_cases_itself() {
    let report = misbehaving(How::NoPreparedCommit);
    assert!(committer_cases(&report).is_empty());
    for id in COMMITTER_CASES {
        let c = case(&report, id);
        assert_eq!(c.outcome, Outcome::Passed, "{id}");
        let written = ["overlay", "append", "delete"].iter().any(|op| {
            c.checks.iter().any(|k| {
                k.name.to_string().starts_with('v')
                    && k.name.to_string().ends_with(&format!(" write ({op})"))
            })
        });
        assert!(written, "{id}");
    }
    // The stated merges' refusal and twin are the writer's own compaction then.
    for (id, _) in STATED_MERGE_CASES {
        let names: Vec<String> = case(&report, id)
            .checks
            .iter()
            .map(|k| k.name.to_string())
            .collect();
        for name in [
            "v4 refuses (compact_overlays)",
            "v5 write (compact_overlays)",
        ] {
            assert!(names.iter().any(|n| n == name), "{id}: {names:?}");
        }
    }
}

fn misbehaving(how: How) -> Report {
    run(&mut Misbehaving {
        inner: ReferenceWriter::new(),
        how,
    })
}

fn kinds(report: &Report) -> BTreeSet<&'static str> {
    report
        .cases
        .iter()
        .filter_map(|c| c.kind)
        .map(FailureKind::as_str)
        .collect()
}

#[test]
fn a_writer_refusing_everything_passes_nothing() {
    let report = misbehaving(How::RefuseAll);
    assert!(outcomes(&report, Outcome::Passed).is_empty());
    assert!(kinds(&report).contains("refused-write"));
    assert!(!report.passed());
}

#[test]
fn a_writer_losing_rows_fails_every_case_that_appends() {
    let report = misbehaving(How::DropAppendedRow);
    let failed = outcomes(&report, Outcome::Failed);
    for id in ["retry-append", "spill-flag-on-and-off"] {
        assert!(failed.contains(id), "{id} did not fail: {failed:?}");
    }
    assert!(kinds(&report).contains("wrong-value"));
}

#[test]
fn a_writer_committing_what_it_must_refuse_fails_the_refusal_cases() {
    let report = misbehaving(How::CommitInsteadOfRefusing);
    let failed: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.kind == Some(FailureKind::CommittedRefused))
        .map(|c| c.id.as_str())
        .collect();
    assert!(
        failed.contains(&"merge-refuses-non-contiguous"),
        "{failed:?}"
    );
}

#[test]
fn a_writer_committing_at_prepare_fails_the_retry_cases() {
    let report = misbehaving(How::CommitAtPrepare);
    let failed = outcomes(&report, Outcome::Failed);
    for id in ["retry-overlay", "retry-append"] {
        assert!(failed.contains(id), "{id} did not fail: {failed:?}");
    }
}

#[test]
fn a_writer_declaring_nothing_is_sent_nothing_and_passes_nothing() {
    let report = misbehaving(How::DeclareNothing);
    assert!(outcomes(&report, Outcome::Passed).is_empty());
    assert_eq!(
        outcomes(&report, Outcome::Skipped).len(),
        report.cases.len()
    );
}

#[test]
fn every_step_the_corpus_sends_a_writer_reads_back_from_its_wire_form() {
    use lance_conformance::runner::reference::read_checked;
    use lance_conformance::runner::writer::{Action, plan};
    let index = lance_conformance::case::RequirementIndex::load(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("spec/requirements.toml"),
    )
    .unwrap();
    let mut sent = 0;
    for case in lance_conformance::corpus::load(&corpus(), &index).unwrap() {
        // Without prepared commits: every step, the prepared refusals' attempts included, is
        // sent as a step.
        let Ok(p) = plan(&case.case, false) else {
            continue;
        };
        let twin = case.dir.join("undamaged");
        let root = if twin.is_dir() {
            twin
        } else {
            case.dir.join("dataset")
        };
        let schema = |v: u64| read_checked(&root, v.max(1)).unwrap().schema;
        let mut steps: Vec<(&Step, u64)> = Vec::new();
        for a in &p.actions {
            match a {
                Action::Write { step, version } => steps.push((step, *version)),
                Action::Retry {
                    write,
                    conflict,
                    version,
                } => {
                    steps.push((conflict, *version));
                    steps.push((write, *version + 1));
                }
                Action::Refuse { attempt, at, .. }
                | Action::RefusePreparedMerge { attempt, at, .. } => steps.push((attempt, *at)),
                Action::Prepared { step, version, .. }
                | Action::PreparedMergeTwin { step, version } => steps.push((step, *version)),
            }
        }
        for (step, v) in steps {
            let s = schema(v);
            let wire = to_wire(step, &s).unwrap_or_else(|e| panic!("{}: {e}", case.case.id));
            let back = from_wire(&wire).unwrap_or_else(|e| panic!("{}: {e}\n{wire}", case.case.id));
            // Cells may come back in another spelling (an integer literal of a float field
            // becomes a float); their wire forms, which are typed, are equal.
            assert_eq!(to_wire(&back, &s).unwrap(), wire, "{}", case.case.id);
            assert_eq!(back.op(), step.op());
            sent += 1;
        }
    }
    assert!(sent > 300, "only {sent} steps");
}

#[test]
fn a_writer_with_an_encoding_of_its_own_is_judged_on_placement_where_bytes_decide_it() {
    // The reference's placements, judged without the reference's encoding: still right.
    let report = misbehaving(How::OwnEncoding);
    let failing: Vec<&str> = report
        .cases
        .iter()
        .filter(|c| c.outcome.fails_run())
        .map(|c| c.id.as_str())
        .collect();
    assert!(failing.is_empty(), "{failing:?}");
    // In a table that spills, `lineage` then compares whether a sequence is recorded.
    let budget = report
        .cases
        .iter()
        .find(|c| c.id == "budget-exact")
        .unwrap();
    let lineage = budget
        .checks
        .iter()
        .find(|k| k.name.to_string() == "v3 lineage")
        .unwrap();
    assert_eq!(lineage.verdict, lance_conformance::runner::Verdict::Pass);
}

#[test]
fn the_reference_writer_asked_for_2_2_writes_2_2_and_passes() {
    let report = run_overlays_in(&mut ReferenceWriter::new(), "2.2");
    let failing = super::failing(&report);
    assert!(failing.is_empty(), "{failing:#?}");
    let checked = report
        .cases
        .iter()
        .flat_map(|c| &c.checks)
        .filter(|k| k.name.to_string().ends_with(" data file version"))
        .count();
    assert!(
        checked >= 20,
        "only {checked} versions had their file version checked"
    );
}

#[test]
fn a_writer_asked_for_2_2_that_writes_2_0_fails_the_file_version_check() {
    let report = run_overlays_in(
        &mut Misbehaving {
            inner: ReferenceWriter::new(),
            how: How::IgnoreFileVersion,
        },
        "2.2",
    );
    let caught: Vec<&str> = report
        .cases
        .iter()
        .filter(|c| {
            c.checks.iter().any(|k| {
                k.name.to_string().ends_with(" data file version")
                    && k.kind == Some(FailureKind::BrokeRule)
                    && k.message.as_deref().is_some_and(|m| m.contains(": 2.0"))
            })
        })
        .map(|c| c.id.as_str())
        .collect();
    let sent = report
        .cases
        .iter()
        .filter(|c| c.outcome != Outcome::Skipped)
        .count();
    assert!(sent >= 5, "only {sent} overlay cases were sent");
    // A case the 2.0 file cannot hold at all (a NULL struct) fails its write instead; no case
    // may pass.
    let missed: Vec<&str> = report
        .cases
        .iter()
        .filter(|c| c.outcome != Outcome::Skipped && !caught.contains(&c.id.as_str()))
        .filter(|c| c.outcome != Outcome::Failed || c.id != "struct-null-in-v2-2-base")
        .map(|c| c.id.as_str())
        .collect();
    assert!(missed.is_empty(), "not caught: {missed:?}");
    assert!(
        caught.len() + 1 >= sent,
        "caught {} of {sent}",
        caught.len()
    );
}

/// `overlays/negative-id-in-overlay` at its version 1, with the value file of its version 2 in
/// `data/`: the commit its version 2 stands for, ready to be handed over with `fields`.
fn commit_with_fields(fields: &str) -> (tempfile::TempDir, CommitPreparedRequest) {
    use lance_reference_io::version_names::{VERSIONS_DIR, manifest_name};
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("t");
    copy_dir(
        &corpus().join("overlays/negative-id-in-overlay/dataset"),
        &dir,
    );
    let versions = dir.join(VERSIONS_DIR);
    std::fs::remove_file(versions.join(manifest_name(2))).unwrap();
    let _ = std::fs::remove_file(versions.join("latest_version_hint.json"));
    let size = std::fs::metadata(dir.join("data/f0-s1-ovl0.lance"))
        .unwrap()
        .len();
    let request = serde_json::from_str(&format!(
        r#"{{"dataset": {:?}, "read_version": 1, "transaction": {{"operation": "overlay",
            "fragments": [{{"id": 0, "overlays": [{{"file": {{"path": "f0-s1-ovl0.lance",
            "fields": {fields}, "column_indices": [0, 1, 2], "file_major_version": 2,
            "file_minor_version": 0, "file_size_bytes": {size}}},
            "coverage": {{"sparse": [[0], [1], [2]]}}}}]}}]}}}}"#,
        dir.to_str().unwrap()
    ))
    .unwrap();
    (scratch, request)
}

#[test]
fn the_reference_committer_refuses_an_overlay_naming_a_system_field() {
    // covers: OVL-TOMB-6
    // A reader skips the -9 position (OVL-TOMB-5), so no negative case holds this commit; the
    // committer must still not write it.
    let (_keep, request) = commit_with_fields("[0, -9, 2]");
    match ReferenceWriter::new().commit_prepared(&request) {
        Err(Refusal::Error(e)) => {
            assert_eq!(e.code.as_deref(), Some("reserved_overlay_field"), "{e:?}")
        }
        other => panic!("committed or broke: {other:?}"),
    }
    let versions = std::path::Path::new(&request.dataset)
        .join(lance_reference_io::version_names::VERSIONS_DIR);
    assert_eq!(std::fs::read_dir(versions).unwrap().count(), 1);
    // The twin, the same value file listing y's own id, is committed.
    let (_keep, request) = commit_with_fields("[0, 1, 2]");
    let written = ReferenceWriter::new().commit_prepared(&request).unwrap();
    assert_eq!(written.version, 2);
}
