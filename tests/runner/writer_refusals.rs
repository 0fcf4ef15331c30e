//! What a writer run decides that the writer's own history cannot show (issue 27, items 13 to
//! 15 and [OVL-FOLD-6]): placement judged by the lengths a writer reports (`lineage_lengths`,
//! [LIN-ENC-6]), writers handed a stored version they cannot write (`writer_from`,
//! [OVL-FLAG-2], [FLG-WRITE-5], [FLG-BITS-2]), a malformed budget ([LIN-CFG-3]) and a fold
//! plan completed by the compactor itself ([OVL-FOLD-6]). The reference writer passes every
//! case; each writer bug injected into a scratch copy of it fails exactly the cases named.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use lance_conformance::reference_writer::ReferenceWriter;
use lance_conformance::runner::protocol::{
    CommitPreparedRequest, PrepareResult, WriteRequest, WriteResult,
};
use lance_conformance::runner::{
    Answer, ConformanceWriter, Description, Options, Refusal, Report, Verdict,
};
use lance_reference::lineage::{DEFAULT_INLINE_MAX_BYTES, INLINE_MAX_BYTES_KEY, SpillConfig};
use lance_reference::model::Snapshot;
use lance_reference_io::version_names::{VERSIONS_DIR, manifest_name};
use lance_reference_io::{Dataset, WriteOptions, write_version};

use super::corpus;

/// The cases whose placement depends on the budget, in data file version 2.0.
const BUDGET_CASES: [&str; 9] = [
    "budget-exact",
    "spill-layout-lineage-file",
    "budget-over-by-one",
    "budget-under-by-one",
    "default-budget",
    "default-budget-over",
    "default-budget-under",
    "rewrite-lineage-spilled",
    "commit-assigned-inline",
];

/// The cases a writer is handed a stored version in.
const HANDOVER_CASES: [&str; 3] = [
    "unknown-writer-flag",
    "writer-without-overlays",
    "writer-without-spilled-lineage",
];

fn run(writer: &mut dyn ConformanceWriter, cases: &[&str]) -> Report {
    let scratch = tempfile::tempdir().unwrap();
    let mut options = Options::new(corpus());
    options.filters.cases = cases.iter().map(|s| s.to_string()).collect();
    lance_conformance::runner::writer::run_writer_suite(writer, options, scratch.path(), None)
        .unwrap()
}

fn failed(report: &Report) -> BTreeSet<String> {
    report
        .cases
        .iter()
        .filter(|c| c.outcome.fails_run())
        .map(|c| c.id.clone())
        .collect()
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

/// The reference writer's words without `drop`.
fn words_without(drop: &[&str]) -> BTreeSet<String> {
    let mut words = ReferenceWriter::new().describe().unwrap().capabilities;
    for d in drop {
        assert!(words.remove(*d), "{d}");
    }
    words
}

fn read(dir: &Path, version: u64) -> Snapshot {
    Dataset::open(dir).unwrap().read_version(version).unwrap().0
}

/// Stores `snapshot` again as its version, in place of what was written.
fn rewrite(dir: &Path, snapshot: &Snapshot) {
    std::fs::remove_file(dir.join(VERSIONS_DIR).join(manifest_name(snapshot.version))).unwrap();
    write_version(dir, snapshot, &WriteOptions::default()).unwrap();
}

/// A writer bug injected around the reference writer.
#[derive(Clone, Copy, PartialEq)]
enum Bug {
    /// None: the reference writer as it is, under another set of words.
    None,
    /// A compaction spills a sequence whose inline encoding is exactly as long as the budget
    /// (`>=` for `>`): the reference is run with the budget one byte lower, and the config
    /// put back afterwards.
    SpillAtBudget,
    /// [`Bug::SpillAtBudget`], and the replies carry no `lineage_lengths`.
    SpillAtBudgetSilently,
    /// Commits on top of a version whose writer word sets an unknown bit, as if it were clear.
    IgnoresWriterWord,
    /// A malformed budget is replaced by the default when a rewrite places carried lineage.
    DefaultsMalformedBudget,
    /// A fold plan that forgets a stale index is completed: the index is dropped from the
    /// fragment's coverage.
    CompletesFoldPlan,
    /// A fold plan that forgets a stale index is committed with the index left stale (as it
    /// was before the fold, still covering the fragment).
    CommitsStaleFold,
}

struct Buggy {
    inner: ReferenceWriter,
    bug: Bug,
}

impl Buggy {
    fn new(bug: Bug) -> Buggy {
        Buggy::with(bug, ReferenceWriter::new().describe().unwrap().capabilities)
    }

    fn with(bug: Bug, words: BTreeSet<String>) -> Buggy {
        Buggy {
            inner: ReferenceWriter::with_capabilities(words),
            bug,
        }
    }

    /// The reference writes the step with the newest version's config changed by `change`;
    /// both versions get the config they had (the new one, its predecessor's) back.
    fn with_config(
        &mut self,
        request: &WriteRequest,
        change: impl Fn(&mut BTreeMap<String, String>),
    ) -> Answer<WriteResult> {
        let dir = Path::new(&request.dataset);
        let before = read(dir, request.read_version);
        let mut changed = before.clone();
        change(&mut changed.config);
        rewrite(dir, &changed);
        let written = self.inner.write(request);
        rewrite(dir, &before);
        if let Ok(w) = &written {
            let mut now = read(dir, w.version);
            now.config = before.config.clone();
            rewrite(dir, &now);
        }
        written
    }

    /// A fold of `request` with every index of the version it reads given `policy`.
    fn fold_with(&mut self, request: &WriteRequest, policy: &str) -> Answer<WriteResult> {
        let dir = Path::new(&request.dataset);
        let indices: serde_json::Map<String, serde_json::Value> = read(dir, request.read_version)
            .indices
            .iter()
            .map(|i| (i.name.clone(), serde_json::json!(policy)))
            .collect();
        let mut request = request.clone();
        request.step["indices"] = serde_json::Value::Object(indices);
        self.inner.write(&request)
    }
}

fn refused_with(answer: &Answer<WriteResult>, code: &str) -> bool {
    matches!(answer, Err(Refusal::Error(e)) if e.code.as_deref() == Some(code))
}

impl ConformanceWriter for Buggy {
    fn describe(&mut self) -> Answer<Description> {
        self.inner.describe()
    }

    fn write(&mut self, request: &WriteRequest) -> Answer<WriteResult> {
        let op = request.step["op"].as_str().unwrap_or_default().to_string();
        let dir = Path::new(&request.dataset);
        match (self.bug, op.as_str()) {
            (Bug::SpillAtBudget | Bug::SpillAtBudgetSilently, "rewrite_rows") => {
                let spill = SpillConfig::from_table_config(&read(dir, request.read_version).config)
                    .unwrap();
                if !spill.enabled || spill.inline_max_bytes == 0 {
                    return self.inner.write(request);
                }
                let lower = (spill.inline_max_bytes - 1).to_string();
                let mut written = self.with_config(request, |c| {
                    c.insert(INLINE_MAX_BYTES_KEY.into(), lower.clone());
                });
                if self.bug == Bug::SpillAtBudgetSilently {
                    if let Ok(w) = &mut written {
                        w.lineage_lengths = None;
                    }
                }
                written
            }
            (Bug::SpillAtBudgetSilently, _) => self.inner.write(request).map(|mut w| {
                w.lineage_lengths = None;
                w
            }),
            (Bug::IgnoresWriterWord, _) => {
                let mut now = read(dir, request.read_version);
                if now.writer_flags >> 18 != 0 {
                    now.writer_flags &= (1 << 18) - 1;
                    rewrite(dir, &now);
                }
                self.inner.write(request)
            }
            (Bug::DefaultsMalformedBudget, "rewrite_rows") => self.with_config(request, |c| {
                if c.get(INLINE_MAX_BYTES_KEY)
                    .is_some_and(|v| v.parse::<usize>().is_err())
                {
                    c.insert(
                        INLINE_MAX_BYTES_KEY.into(),
                        DEFAULT_INLINE_MAX_BYTES.to_string(),
                    );
                }
            }),
            (Bug::CompletesFoldPlan, "fold") => {
                let answer = self.inner.write(request);
                if refused_with(&answer, "stale_index") {
                    return self.fold_with(request, "drop");
                }
                answer
            }
            (Bug::CommitsStaleFold, "fold") => {
                let answer = self.inner.write(request);
                if !refused_with(&answer, "stale_index") {
                    return answer;
                }
                let before = read(dir, request.read_version);
                let written = self.fold_with(request, "rebuild")?;
                // The rebuilt index replaced by the one the fold found: built before the
                // folded overlay, still covering the fragment.
                let mut now = read(dir, written.version);
                now.indices = before.indices.clone();
                rewrite(dir, &now);
                Ok(written)
            }
            _ => self.inner.write(request),
        }
    }

    fn prepare(&mut self, request: &WriteRequest) -> Answer<PrepareResult> {
        self.inner.prepare(request)
    }

    fn commit(&mut self, dataset: &str, transaction: &str) -> Answer<WriteResult> {
        self.inner.commit(dataset, transaction)
    }

    fn commit_prepared(&mut self, request: &CommitPreparedRequest) -> Answer<WriteResult> {
        self.inner.commit_prepared(request)
    }
}

/// The checks named `suffix` of `report`'s cases, with their verdicts.
fn checks_named(report: &Report, suffix: &str) -> Vec<(String, Verdict)> {
    report
        .cases
        .iter()
        .flat_map(|c| {
            c.checks
                .iter()
                .filter(|k| k.name.to_string().ends_with(suffix))
                .map(move |k| (format!("{} {}", c.id, k.name), k.verdict))
        })
        .collect()
}

#[test]
fn a_writer_reporting_its_lengths_is_judged_by_them_without_the_reference_encoding() {
    // covers: LIN-ENC-6, LIN-PLACE-3, LIN-PLACE-4
    let words = words_without(&["write:reference-lineage-encoding"]);
    let report = run(&mut Buggy::with(Bug::None, words.clone()), &BUDGET_CASES);
    assert_eq!(failed(&report), BTreeSet::new());
    let judged = checks_named(&report, "lineage lengths");
    assert!(
        judged.iter().any(|(n, _)| n.starts_with("budget-exact v3")),
        "{judged:?}"
    );
    assert!(
        judged.iter().all(|(_, v)| *v == Verdict::Pass),
        "{judged:?}"
    );
    // A compaction that spills at the budget: caught through the reported lengths, in every
    // case where some carried sequence is exactly as long as the budget...
    let report = run(
        &mut Buggy::with(Bug::SpillAtBudget, words.clone()),
        &BUDGET_CASES,
    );
    assert_eq!(
        failed(&report),
        set(&[
            "budget-exact",
            "budget-over-by-one",
            "spill-layout-lineage-file"
        ])
    );
    for id in failed(&report) {
        let case = report.cases.iter().find(|c| c.id == id).unwrap();
        let check = case.primary_failure().unwrap();
        assert!(
            check.name.to_string().ends_with("lineage lengths"),
            "{id}: {check:?}"
        );
    }
    // ...and missed by a writer that reports nothing, which is what the report adds.
    let report = run(
        &mut Buggy::with(Bug::SpillAtBudgetSilently, words),
        &BUDGET_CASES,
    );
    assert_eq!(failed(&report), BTreeSet::new());
}

#[test]
fn writers_handed_a_version_they_cannot_write_must_refuse() {
    // covers: OVL-FLAG-2, FLG-WRITE-5, FLG-BITS-2, FLG-READ-3
    let report = run(&mut ReferenceWriter::new(), &HANDOVER_CASES);
    assert_eq!(failed(&report), BTreeSet::new());
    assert!(report.cases.iter().all(|c| c.verdict == Verdict::Pass));
    // Declaring no overlays (or no spilled lineage) but committing anyway.
    let report = run(
        &mut Buggy::with(
            Bug::None,
            words_without(&["write:overlay", "write:sparse-overlay"]),
        ),
        &HANDOVER_CASES,
    );
    assert_eq!(failed(&report), set(&["writer-without-overlays"]));
    let report = run(
        &mut Buggy::with(Bug::None, words_without(&["write:spilled-lineage"])),
        &HANDOVER_CASES,
    );
    assert_eq!(failed(&report), set(&["writer-without-spilled-lineage"]));
    // A writer word bit nobody implements, ignored.
    let report = run(&mut Buggy::new(Bug::IgnoresWriterWord), &HANDOVER_CASES);
    assert_eq!(failed(&report), set(&["unknown-writer-flag"]));
}

/// A writer without overlays that honours the writer word: refuses every commit on a version
/// whose writer word sets bit 64.
struct Honest(ReferenceWriter);

impl ConformanceWriter for Honest {
    fn describe(&mut self) -> Answer<Description> {
        self.0.describe()
    }
    fn write(&mut self, request: &WriteRequest) -> Answer<WriteResult> {
        let dir = Path::new(&request.dataset);
        if request.read_version > 0 && read(dir, request.read_version).writer_flags & 64 != 0 {
            return Err(Refusal::Error(
                lance_conformance::runner::protocol::ReadError {
                    class: "refused".into(),
                    code: None,
                    message: "writer bit 64: overlays are not implemented".into(),
                },
            ));
        }
        self.0.write(request)
    }
    fn prepare(&mut self, request: &WriteRequest) -> Answer<PrepareResult> {
        self.0.prepare(request)
    }
    fn commit(&mut self, dataset: &str, transaction: &str) -> Answer<WriteResult> {
        self.0.commit(dataset, transaction)
    }
    fn commit_prepared(&mut self, request: &CommitPreparedRequest) -> Answer<WriteResult> {
        self.0.commit_prepared(request)
    }
}

#[test]
fn a_writer_without_overlays_that_refuses_passes_the_handover() {
    // covers: OVL-FLAG-2
    let words = words_without(&["write:overlay", "write:sparse-overlay"]);
    let report = run(
        &mut Honest(ReferenceWriter::with_capabilities(words)),
        &["writer-without-overlays"],
    );
    let case = &report.cases[0];
    assert_eq!(case.verdict, Verdict::Pass, "{:?}", case.checks);
    assert_eq!(
        case.checks[0].name.to_string(),
        "v2 refuses (append; needs write:overlay)"
    );
}

#[test]
fn a_malformed_budget_must_not_fall_back_to_the_default() {
    // covers: LIN-CFG-3
    let cases = ["malformed-budget-refused", "malformed-budget-reads"];
    let report = run(&mut ReferenceWriter::new(), &cases);
    assert_eq!(failed(&report), BTreeSet::new());
    let refused = checks_named(&report, "refuses (rewrite_rows)");
    assert_eq!(
        refused,
        vec![(
            "malformed-budget-refused v2 refuses (rewrite_rows)".to_string(),
            Verdict::Pass
        )]
    );
    let report = run(&mut Buggy::new(Bug::DefaultsMalformedBudget), &cases);
    // A SHOULD case: the fallback is advisory, not a failure of the run.
    assert_eq!(failed(&report), BTreeSet::new());
    let case = report
        .cases
        .iter()
        .find(|c| c.id == "malformed-budget-refused")
        .unwrap();
    assert_eq!(case.verdict, Verdict::Fail, "{:?}", case.checks);
    assert_eq!(
        case.outcome,
        lance_conformance::runner::Outcome::Advisory,
        "{:?}",
        case.checks
    );
    let other = report
        .cases
        .iter()
        .find(|c| c.id == "malformed-budget-reads")
        .unwrap();
    assert_eq!(other.verdict, Verdict::Pass);
}

#[test]
fn a_fold_plan_may_be_refused_or_completed_but_never_committed_stale() {
    // covers: OVL-FOLD-6, OVL-FOLD-5
    let case = ["fold-refuses-stale-plan"];
    for bug in [Bug::None, Bug::CompletesFoldPlan] {
        let report = run(&mut Buggy::new(bug), &case);
        assert_eq!(failed(&report), BTreeSet::new());
        assert_eq!(report.cases[0].verdict, Verdict::Pass);
    }
    let report = run(&mut Buggy::new(Bug::CompletesFoldPlan), &case);
    let refusal = &report.cases[0].checks;
    assert!(
        refusal
            .iter()
            .any(|c| c.name.to_string() == "v2 refuses (fold)"
                && c.verdict == Verdict::Pass
                && c.message.as_deref().is_some_and(|m| m.contains("validate"))),
        "{refusal:?}"
    );
    let report = run(&mut Buggy::new(Bug::CommitsStaleFold), &case);
    assert_eq!(failed(&report), set(&case));
    let check = report.cases[0].primary_failure().unwrap();
    assert_eq!(check.name.to_string(), "v2 refuses (fold)");
    assert!(
        check
            .message
            .as_deref()
            .is_some_and(|m| m.contains("OVL-FOLD-5")),
        "{check:?}"
    );
}
