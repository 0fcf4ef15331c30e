//! Verdicts and the report of one run: what happened to each check, each case, and the run.
//!
//! Invariant: the run's result is a pure function of the case verdicts, the case levels and
//! the known-failure file: a MUST case that fails or errors fails the run unless it is a
//! known failure; a SHOULD case that fails is an advisory failure (reported, not failing); a
//! known failure that passes, and a known-failure entry naming no case, fail the run. A case
//! passes only when at least one of its checks ran and passed and none failed or errored, so
//! a reader that answers nothing never passes anything.

use std::collections::BTreeSet;

use serde::Serialize;

use super::known_failures::{KnownFailures, line_for};
use super::protocol::Implementation;
use crate::case::Level;

/// The verdict of a check or a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The reader returned what the case expects.
    Pass,
    /// The reader returned something else (or the wrong error, or none).
    Fail,
    /// The reader broke: crash, hang, garbage, protocol violation, its own bug.
    Error,
    /// The case or check needs a capability the reader does not declare.
    Unsupported,
    /// The reader chose not to answer.
    Skip,
}

impl Verdict {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
            Verdict::Unsupported => "unsupported",
            Verdict::Skip => "skip",
        }
    }

    /// The case verdict of its checks' verdicts (see the module docs).
    pub fn of_checks(checks: &[CheckResult]) -> Verdict {
        let any = |v: Verdict| checks.iter().any(|c| c.verdict == v);
        if any(Verdict::Error) {
            Verdict::Error
        } else if any(Verdict::Fail) {
            Verdict::Fail
        } else if any(Verdict::Pass) {
            Verdict::Pass
        } else if any(Verdict::Skip) {
            Verdict::Skip
        } else {
            Verdict::Unsupported
        }
    }
}

/// One check of a case (`v2 scan`, `v3 query "age = 26"`, `v4 refuses invalid`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    /// What was checked.
    pub name: String,
    /// Its verdict.
    pub verdict: Verdict,
    /// Why, when it did not pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// How a case counts in the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Passed.
    Passed,
    /// Fails the run.
    Failed,
    /// A SHOULD case that failed: reported, does not fail the run.
    Advisory,
    /// Listed as a known failure and failed (or errored).
    KnownFailure,
    /// Listed as a known failure but passed: fails the run.
    UnexpectedPass,
    /// Unsupported or skipped.
    Skipped,
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseResult {
    /// The case id.
    pub id: String,
    /// The area.
    pub area: String,
    /// MUST or SHOULD.
    pub level: Level,
    /// The requirement ids it checks.
    pub requirements: Vec<String>,
    /// Its tags.
    pub tags: Vec<String>,
    /// The case verdict.
    pub verdict: Verdict,
    /// How it counts.
    pub outcome: Outcome,
    /// The known-failure reason, when listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known_failure: Option<String>,
    /// Its checks, in run order.
    pub checks: Vec<CheckResult>,
}

impl CaseResult {
    /// The first message of a check that did not pass.
    pub fn first_problem(&self) -> Option<String> {
        self.checks
            .iter()
            .find(|c| c.verdict == self.verdict)
            .and_then(|c| {
                c.message
                    .as_ref()
                    .map(|m| format!("{} {}: {m}", c.verdict.as_str(), c.name))
            })
    }
}

/// The counts of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Cases that passed.
    pub passed: usize,
    /// Cases and known-failure entries that fail the run.
    pub failed: usize,
    /// Unsupported and skipped cases.
    pub skipped: usize,
    /// Known failures that failed as listed.
    pub known_failures: usize,
    /// SHOULD cases that failed.
    pub advisory: usize,
    /// Of `failed`: cases with verdict `error`.
    pub errors: usize,
    /// Of `failed`: known failures that passed.
    pub unexpected_passes: usize,
    /// Of `failed`: known-failure entries naming no case.
    pub unmatched_entries: usize,
}

/// Lines to change in the known-failure file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct KnownFailureUpdate {
    /// The file.
    pub file: String,
    /// Lines to remove (cases that pass now, ids matching no case).
    pub remove: Vec<String>,
    /// Lines to add (failing cases not listed).
    pub add: Vec<String>,
}

/// The report of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The reader.
    pub implementation: Implementation,
    /// Its declared capabilities.
    pub capabilities: Vec<String>,
    /// Every case run, in corpus order.
    pub cases: Vec<CaseResult>,
    /// The counts.
    pub summary: Summary,
    /// What to change in the known-failure file (when one was given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known_failures: Option<KnownFailureUpdate>,
}

impl Report {
    /// Classifies the cases and counts them. `corpus_ids` are every case id of the corpus
    /// (filtered out or not), against which known-failure entries are matched.
    pub fn new(
        implementation: Implementation,
        capabilities: Vec<String>,
        mut cases: Vec<CaseResult>,
        known: Option<&KnownFailures>,
        corpus_ids: &BTreeSet<String>,
    ) -> Report {
        let mut summary = Summary::default();
        let mut update = known.map(|k| KnownFailureUpdate {
            file: k.path.clone(),
            ..KnownFailureUpdate::default()
        });
        for c in &mut cases {
            let entry = known.and_then(|k| k.get(&c.id));
            c.known_failure = entry.map(|e| e.reason.clone());
            c.outcome = match (c.verdict, entry.is_some(), c.level) {
                (Verdict::Pass, true, _) => Outcome::UnexpectedPass,
                (Verdict::Pass, false, _) => Outcome::Passed,
                (Verdict::Fail | Verdict::Error, true, _) => Outcome::KnownFailure,
                (Verdict::Fail, false, Level::Should) => Outcome::Advisory,
                (Verdict::Fail | Verdict::Error, false, _) => Outcome::Failed,
                (Verdict::Unsupported | Verdict::Skip, _, _) => Outcome::Skipped,
            };
            match c.outcome {
                Outcome::Passed => summary.passed += 1,
                Outcome::Failed => {
                    summary.failed += 1;
                    summary.errors += usize::from(c.verdict == Verdict::Error);
                    if let Some(u) = &mut update {
                        let reason = c
                            .first_problem()
                            .unwrap_or_else(|| c.verdict.as_str().into());
                        u.add.push(line_for(&c.id, &reason));
                    }
                }
                Outcome::Advisory => summary.advisory += 1,
                Outcome::KnownFailure => summary.known_failures += 1,
                Outcome::UnexpectedPass => {
                    summary.failed += 1;
                    summary.unexpected_passes += 1;
                    if let (Some(u), Some(e)) = (&mut update, entry) {
                        u.remove.push(e.text.clone());
                    }
                }
                Outcome::Skipped => summary.skipped += 1,
            }
        }
        if let (Some(k), Some(u)) = (known, &mut update) {
            let mut ids = corpus_ids.clone();
            ids.extend(cases.iter().map(|c| c.id.clone()));
            for e in k.unmatched(&ids) {
                summary.failed += 1;
                summary.unmatched_entries += 1;
                u.remove.push(e.text.clone());
            }
        }
        Report {
            implementation,
            capabilities,
            cases,
            summary,
            known_failures: update,
        }
    }

    /// Whether the run passes (nothing counts as failed).
    pub fn passed(&self) -> bool {
        self.summary.failed == 0
    }

    /// The closing line, exactly `N passed, N failed, N skipped` (the form CI reads).
    pub fn closing_line(&self) -> String {
        let s = &self.summary;
        format!(
            "{} passed, {} failed, {} skipped",
            s.passed, s.failed, s.skipped
        )
    }

    /// The line before it: what `failed` and the uncounted outcomes are made of.
    pub fn detail_line(&self) -> String {
        let s = &self.summary;
        format!(
            "summary: {} errors, {} unexpected passes, {} unmatched known-failure entries (all counted as failed); {} known failures, {} advisory (SHOULD) failures",
            s.errors, s.unexpected_passes, s.unmatched_entries, s.known_failures, s.advisory
        )
    }
}
