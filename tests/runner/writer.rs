//! The writer run in process: the reference writer passes every writer case, and writers with
//! injected misbehaviour fail the cases that catch it, so no writer passes by doing nothing or
//! by committing what it should refuse.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use lance_conformance::case::Step;
use lance_conformance::reference_writer::ReferenceWriter;
use lance_conformance::runner::protocol::{PrepareResult, ReadError, WriteRequest, WriteResult};
use lance_conformance::runner::write_step::{from_wire, to_wire};
use lance_conformance::runner::writer::run_writer_suite;
use lance_conformance::runner::{
    Answer, ConformanceWriter, Description, FailureKind, Options, Outcome, Refusal, Report,
};

use super::corpus;

fn run(writer: &mut dyn ConformanceWriter) -> Report {
    let scratch = tempfile::tempdir().unwrap();
    run_writer_suite(writer, Options::new(corpus()), scratch.path()).unwrap()
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
    let failing: Vec<String> = report
        .cases
        .iter()
        .filter(|c| c.outcome.fails_run())
        .map(|c| format!("{}: {:?}", c.id, c.primary_failure()))
        .collect();
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
}

impl ConformanceWriter for Misbehaving {
    fn describe(&mut self) -> Answer<Description> {
        let mut d = self.inner.describe()?;
        if matches!(self.how, How::DeclareNothing) {
            d.capabilities.clear();
        }
        if matches!(self.how, How::OwnEncoding) {
            d.capabilities.remove("write:reference-lineage-encoding");
        }
        Ok(d)
    }

    fn write(&mut self, request: &WriteRequest) -> Answer<WriteResult> {
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
            _ => self.inner.prepare(request),
        }
    }

    fn commit(&mut self, dataset: &str, transaction: &str) -> Answer<WriteResult> {
        self.inner.commit(dataset, transaction)
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
        let Ok(p) = plan(&case.case) else { continue };
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
                Action::Refuse { attempt, at, .. } => steps.push((attempt, *at)),
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
        .find(|k| k.name == "v3 lineage")
        .unwrap();
    assert_eq!(lineage.verdict, lance_conformance::runner::Verdict::Pass);
}
