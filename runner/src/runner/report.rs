//! Verdicts and the report of one run: what happened to each check, each case, and the run.
//!
//! Invariant: the run's result is a pure function of the check verdicts, the check levels and
//! the known-failure file. Every check has a level: a case's checks are at the case's level,
//! except a refusal's class and code, which are judged at the level the spec gives them
//! (`spec/conformance.md` §4). A case fails the run when a MUST check fails or is
//! inconclusive, or any check errors, unless a known-failure entry covers it; a case whose only
//! failures are SHOULD checks is an advisory failure (reported, not failing). A known failure
//! that passes, an entry whose failure changed kind or check, and an entry naming no case fail
//! the run. A case passes only when at least one of its checks ran and passed and none failed,
//! errored or was inconclusive, so a reader that answers nothing never passes anything.
//!
//! A kit fault (a check the kit could not judge because of its own or the corpus's problem,
//! [`super::kit_fault`]) is never counted against the reader: the case's outcome is
//! [`Outcome::KitFault`] whatever its other checks say, no known-failure entry covers it or is
//! dropped for it, and a run with one cannot pass ([`Report::exit_code`] is 2).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::check::Check;
use super::known_failures::{KnownFailures, line_for};
use super::protocol::Implementation;
use crate::case::Level;

/// The verdict of a check or a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The reader returned what the case expects.
    Pass,
    /// The reader returned something else (or the wrong error, or none).
    Fail,
    /// The reader broke: crash, hang, garbage, protocol violation, its own bug.
    Error,
    /// The answer cannot be judged: the reader refused a damaged version, but did not read its
    /// undamaged twin correctly, so the refusal says nothing about the damage.
    Inconclusive,
    /// The case or check needs a capability the reader does not declare.
    Unsupported,
    /// The reader chose not to answer.
    Skip,
    /// The kit could not judge the check: a problem of the corpus or the runner (an
    /// unreadable `expected/` file, a case that does not hold together, a scratch directory
    /// that cannot be made), not of the reader.
    KitFault,
}

impl Verdict {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Unsupported => "unsupported",
            Verdict::Skip => "skip",
            Verdict::KitFault => "kit_fault",
        }
    }

    /// Whether the verdict is a failure of the reader of some kind (fail, error,
    /// inconclusive); a kit fault is not.
    pub fn is_failure(self) -> bool {
        matches!(self, Verdict::Fail | Verdict::Error | Verdict::Inconclusive)
    }

    /// The case verdict of its checks' verdicts: kit fault, else error, else fail, else
    /// inconclusive, else pass, else skip, else unsupported.
    pub fn of_checks(checks: &[CheckResult]) -> Verdict {
        let any = |v: Verdict| checks.iter().any(|c| c.verdict == v);
        [
            Verdict::KitFault,
            Verdict::Error,
            Verdict::Fail,
            Verdict::Inconclusive,
            Verdict::Pass,
            Verdict::Skip,
        ]
        .into_iter()
        .find(|v| any(*v))
        .unwrap_or(Verdict::Unsupported)
    }
}

/// What kind of failure a failing check is: the vocabulary of known-failure entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// A readable version was read, but an answer differs from `expected/`.
    WrongValue,
    /// A readable version (an undamaged twin included) was refused.
    RefusedReadable,
    /// A damaged version was opened and scanned without an error.
    AcceptedDamage,
    /// A version that needs a data capability the reader does not declare was read instead of
    /// refused.
    ReadUnsupported,
    /// A refusal with another class than the spec gives.
    WrongClass,
    /// A refusal with another code than the reference's (readers declaring `error-codes`).
    WrongCode,
    /// The reader crashed, hung, broke the protocol or reported an error of its own.
    Crash,
    /// A refusal that cannot be judged (the undamaged twin was not read correctly).
    Inconclusive,
    /// A query answered rightly, but on the flat path where the case expects the index.
    IndexNotUsed,
    /// A writer refused a step the case commits.
    RefusedWrite,
    /// A writer committed a step the case says must be refused, or left a version behind
    /// while refusing it.
    CommittedRefused,
    /// A version a writer committed breaks a rule `validate` checks (alone or against the
    /// version before it), or the kit's reader refuses it.
    BrokeRule,
}

impl FailureKind {
    /// Every kind, in declaration order.
    pub const ALL: [FailureKind; 12] = [
        FailureKind::WrongValue,
        FailureKind::RefusedReadable,
        FailureKind::AcceptedDamage,
        FailureKind::ReadUnsupported,
        FailureKind::WrongClass,
        FailureKind::WrongCode,
        FailureKind::Crash,
        FailureKind::Inconclusive,
        FailureKind::IndexNotUsed,
        FailureKind::RefusedWrite,
        FailureKind::CommittedRefused,
        FailureKind::BrokeRule,
    ];

    /// The word used in known-failure files and JSON (`accepted-damage`).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::WrongValue => "wrong-value",
            FailureKind::RefusedReadable => "refused-readable",
            FailureKind::AcceptedDamage => "accepted-damage",
            FailureKind::ReadUnsupported => "read-unsupported",
            FailureKind::WrongClass => "wrong-class",
            FailureKind::WrongCode => "wrong-code",
            FailureKind::Crash => "crash",
            FailureKind::Inconclusive => "inconclusive",
            FailureKind::IndexNotUsed => "index-not-used",
            FailureKind::RefusedWrite => "refused-write",
            FailureKind::CommittedRefused => "committed-refused",
            FailureKind::BrokeRule => "broke-rule",
        }
    }

    /// The kind named by `word`.
    pub fn parse(word: &str) -> Option<FailureKind> {
        FailureKind::ALL.into_iter().find(|k| k.as_str() == word)
    }

    /// In words, for people.
    pub fn describe(self) -> &'static str {
        match self {
            FailureKind::WrongValue => "wrong value",
            FailureKind::RefusedReadable => "refused a readable version",
            FailureKind::AcceptedDamage => "accepted damage",
            FailureKind::ReadUnsupported => "read a version it does not declare it can read",
            FailureKind::WrongClass => "wrong error class",
            FailureKind::WrongCode => "wrong error code",
            FailureKind::Crash => "crash",
            FailureKind::Inconclusive => "inconclusive",
            FailureKind::IndexNotUsed => "index not used",
            FailureKind::RefusedWrite => "refused a step the case commits",
            FailureKind::CommittedRefused => "committed a step that must be refused",
            FailureKind::BrokeRule => "wrote a version that breaks a rule",
        }
    }
}

/// One check of a case (`v2 scan`, `v3 query "age = 26"`, `v4 refuses`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    /// What was checked.
    pub name: Check,
    /// Its verdict.
    pub verdict: Verdict,
    /// The level it is judged at: the case's, or lower for a refusal's class and code.
    pub level: Level,
    /// What kind of failure it is, when it failed, errored or was inconclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<FailureKind>,
    /// Why, when it did not pass (and, for some passes, how it was judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl CheckResult {
    /// A check with its kind kept only where the verdict has one: an error is a crash unless
    /// said otherwise, a failure or inconclusive keeps `kind`, any other verdict (a kit fault
    /// included: it is no failure of the reader) has none.
    pub fn new(
        name: Check,
        verdict: Verdict,
        level: Level,
        kind: Option<FailureKind>,
        message: Option<String>,
    ) -> CheckResult {
        let kind = match verdict {
            Verdict::Error => Some(kind.unwrap_or(FailureKind::Crash)),
            Verdict::Fail | Verdict::Inconclusive => kind,
            _ => None,
        };
        CheckResult {
            name,
            verdict,
            level,
            kind,
            message,
        }
    }

    /// A check the kit could not judge, and why ([`super::kit_fault`]).
    pub fn kit_fault(name: Check, level: Level, fault: &super::kit_fault::KitFault) -> CheckResult {
        CheckResult::new(
            name,
            Verdict::KitFault,
            level,
            None,
            Some(format!("kit fault [{}]: {fault}", fault.code())),
        )
    }
}

/// How a case counts in the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Passed.
    Passed,
    /// Fails the run.
    Failed,
    /// Only SHOULD checks failed: reported, does not fail the run.
    Advisory,
    /// Listed as a known failure and failed as listed.
    KnownFailure,
    /// Listed as a known failure, but failed otherwise (another kind, or not the listed
    /// check): fails the run until the entry is updated.
    KnownFailureChanged,
    /// Listed as a known failure but passed: fails the run.
    UnexpectedPass,
    /// Unsupported or skipped.
    Skipped,
    /// The kit could not judge the case (a check's verdict is `kit_fault`): not the reader's
    /// failure, but the run cannot pass (exit 2).
    KitFault,
}

impl Outcome {
    /// Whether the outcome fails the run as a failure of the reader (a kit fault ends the
    /// run with exit 2 instead: [`Report::exit_code`]).
    pub fn fails_run(self) -> bool {
        matches!(
            self,
            Outcome::Failed | Outcome::KnownFailureChanged | Outcome::UnexpectedPass
        )
    }
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// The data capabilities the reader does not declare that some version of the case needs:
    /// those versions were judged by the refusal profile (they must be refused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refusal_profile: Vec<String>,
    /// The kind of the case's first failure (its first failing MUST check, else its first
    /// failing check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<FailureKind>,
    /// The name of that check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_check: Option<Check>,
    /// The known-failure reason, when listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_failure: Option<String>,
    /// Its checks, in run order.
    pub checks: Vec<CheckResult>,
}

impl CaseResult {
    /// The result of corpus case `c` from its checks: its id, area, level, requirements and
    /// tags as the case file gives them.
    pub fn of_case(c: &crate::corpus::CaseDir, checks: Vec<CheckResult>) -> CaseResult {
        CaseResult::new(
            &c.case.id,
            &c.area,
            c.case.level,
            c.case.requirements.clone(),
            c.case.tags.clone(),
            checks,
        )
    }

    /// A case result from its checks; the outcome is decided by [`Report::new`].
    pub fn new(
        id: &str,
        area: &str,
        level: Level,
        requirements: Vec<String>,
        tags: Vec<String>,
        checks: Vec<CheckResult>,
    ) -> CaseResult {
        let mut c = CaseResult {
            id: id.to_string(),
            area: area.to_string(),
            level,
            requirements,
            tags,
            verdict: Verdict::of_checks(&checks),
            outcome: Outcome::Skipped,
            refusal_profile: Vec::new(),
            kind: None,
            failing_check: None,
            known_failure: None,
            checks,
        };
        let first = c.primary_failure().map(|k| (k.kind, k.name.clone()));
        if let Some((kind, name)) = first {
            c.kind = kind;
            c.failing_check = Some(name);
        }
        c
    }

    /// The first check the kit could not judge.
    pub fn kit_fault(&self) -> Option<&CheckResult> {
        self.checks.iter().find(|k| k.verdict == Verdict::KitFault)
    }

    /// The first failing MUST check, else the first failing check.
    pub fn primary_failure(&self) -> Option<&CheckResult> {
        let failing = || self.checks.iter().filter(|k| k.verdict.is_failure());
        failing()
            .find(|k| k.level == Level::Must)
            .or_else(|| failing().next())
    }

    /// Whether a MUST check failed or was inconclusive, or any check errored.
    pub fn fails_at_must(&self) -> bool {
        self.checks.iter().any(|k| {
            k.verdict == Verdict::Error || (k.verdict.is_failure() && k.level == Level::Must)
        })
    }

    /// `<verdict> <check>: <message>` of the first kit fault, else of the first failure.
    pub fn first_problem(&self) -> Option<String> {
        self.kit_fault()
            .or_else(|| self.primary_failure())
            .map(|c| {
                format!(
                    "{} {}{}",
                    c.verdict.as_str(),
                    c.name,
                    c.message
                        .as_ref()
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                )
            })
    }
}

/// The counts of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Cases that passed.
    pub passed: usize,
    /// Everything that fails the run: cases and known-failure entries (the parts below).
    pub failed: usize,
    /// Unsupported and skipped cases.
    pub skipped: usize,
    /// Known failures that failed as listed.
    pub known_failures: usize,
    /// Cases whose only failures are SHOULD checks.
    pub advisory: usize,
    /// Of `failed`: cases with a failing MUST check (verdict fail).
    pub failed_cases: usize,
    /// Of `failed`: cases with verdict `error`.
    pub errors: usize,
    /// Of `failed`: cases with verdict `inconclusive`.
    pub inconclusive: usize,
    /// Of `failed`: known failures that passed.
    pub unexpected_passes: usize,
    /// Of `failed`: known failures that failed otherwise than listed.
    pub changed_known_failures: usize,
    /// Of `failed`: known-failure entries naming no case.
    pub unmatched_entries: usize,
    /// Cases the kit could not judge (not counted in `failed`; the run exits 2).
    #[serde(default)]
    pub kit_faults: usize,
}

/// Lines to change in the known-failure file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownFailureUpdate {
    /// The file (`None` when the run had no known-failure file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Lines to remove (cases that pass now, changed entries, ids matching no case).
    pub remove: Vec<String>,
    /// Lines to add (failing cases not listed, changed entries as they are now).
    pub add: Vec<String>,
}

impl KnownFailureUpdate {
    /// Whether nothing needs to change.
    pub fn is_empty(&self) -> bool {
        self.remove.is_empty() && self.add.is_empty()
    }
}

/// The report of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// What the run is called (`--label`): the reader and its set-up, e.g. which feature
    /// gates were on, which the handshake cannot tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Whether a reader or a writer was judged (absent in JSON for a reader).
    #[serde(default, skip_serializing_if = "Role::is_reader")]
    pub role: Role,
    /// The reader (or writer).
    pub implementation: Implementation,
    /// Its declared capabilities.
    pub capabilities: Vec<String>,
    /// Every case run, in corpus order.
    pub cases: Vec<CaseResult>,
    /// The counts.
    pub summary: Summary,
    /// What to change in the known-failure file (or to list in one).
    pub known_failures: KnownFailureUpdate,
}

/// What a run judged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A reader, against the stored datasets (`run`, `run --reader-cmd`).
    #[default]
    Reader,
    /// A writer, replaying each case's steps (`run --writer-cmd`).
    Writer,
}

impl Role {
    /// Whether this is [`Role::Reader`].
    pub fn is_reader(&self) -> bool {
        *self == Role::Reader
    }

    /// The word (`reader`, `writer`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Reader => "reader",
            Role::Writer => "writer",
        }
    }
}

/// The lines of a check's message that say what went wrong: trimmed, blank ones dropped, and
/// none from a testee's traceback on (the `detail` of an `errored`, which the process reader
/// appends to the message; the JSON report keeps it whole).
pub fn message_lines(message: &str) -> impl Iterator<Item = &str> {
    message
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Traceback (most recent call last)"))
        .filter(|l| !l.is_empty())
}

/// The known-failure line for a failing case as it fails now; `was` is the reason of the
/// entry it replaces.
pub fn entry_line(c: &CaseResult, was: Option<&str>) -> String {
    let Some(check) = c.primary_failure() else {
        return line_for(&c.id, None, None, c.verdict.as_str());
    };
    // The whole message, on one line; a testee's traceback is left to the JSON report.
    let mut reason = message_lines(check.message.as_deref().unwrap_or(check.verdict.as_str()))
        .collect::<Vec<_>>()
        .join(" / ");
    if let Some(old) = was {
        reason = format!("{reason} (was: {old})");
    }
    line_for(&c.id, check.kind, Some(&check.name), &reason)
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
        let mut update = KnownFailureUpdate {
            file: known.map(|k| k.path.clone()),
            ..KnownFailureUpdate::default()
        };
        for c in &mut cases {
            let entry = known.and_then(|k| k.get(&c.id));
            c.known_failure = entry.map(|e| e.reason.clone());
            let failing = c.verdict.is_failure();
            c.outcome = match (failing, c.verdict, entry) {
                (_, Verdict::KitFault, _) => Outcome::KitFault,
                (false, Verdict::Pass, Some(_)) => Outcome::UnexpectedPass,
                (false, Verdict::Pass, None) => Outcome::Passed,
                (false, _, _) => Outcome::Skipped,
                (true, _, Some(e)) if e.covers(c) => Outcome::KnownFailure,
                (true, _, Some(_)) => Outcome::KnownFailureChanged,
                (true, _, None) if c.fails_at_must() => Outcome::Failed,
                (true, _, None) => Outcome::Advisory,
            };
            match c.outcome {
                Outcome::Passed => summary.passed += 1,
                Outcome::Failed => {
                    match c.verdict {
                        Verdict::Error => summary.errors += 1,
                        Verdict::Inconclusive => summary.inconclusive += 1,
                        _ => summary.failed_cases += 1,
                    }
                    update.add.push(entry_line(c, None));
                }
                Outcome::Advisory => summary.advisory += 1,
                Outcome::KnownFailure => summary.known_failures += 1,
                Outcome::KnownFailureChanged => {
                    summary.changed_known_failures += 1;
                    if let Some(e) = entry {
                        update.remove.push(e.text.clone());
                        update.add.push(entry_line(c, Some(&e.reason)));
                    }
                }
                Outcome::UnexpectedPass => {
                    summary.unexpected_passes += 1;
                    if let Some(e) = entry {
                        update.remove.push(e.text.clone());
                    }
                }
                Outcome::Skipped => summary.skipped += 1,
                Outcome::KitFault => summary.kit_faults += 1,
            }
            if c.outcome.fails_run() {
                summary.failed += 1;
            }
        }
        if let Some(k) = known {
            let mut ids = corpus_ids.clone();
            ids.extend(cases.iter().map(|c| c.id.clone()));
            for e in k.unmatched(&ids) {
                summary.failed += 1;
                summary.unmatched_entries += 1;
                update.remove.push(e.text.clone());
            }
        }
        Report {
            label: None,
            role: Role::Reader,
            implementation,
            capabilities,
            cases,
            summary,
            known_failures: update,
        }
    }

    /// Whether the run passes (nothing counts as failed, and the kit judged every case).
    pub fn passed(&self) -> bool {
        self.summary.failed == 0 && self.summary.kit_faults == 0
    }

    /// The exit status of the run: 2 when the kit could not judge some case (whatever else
    /// failed), else 1 when something fails the run, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.summary.kit_faults > 0 {
            2
        } else {
            u8::from(self.summary.failed > 0)
        }
    }

    /// The cases the kit could not judge.
    pub fn kit_faults(&self) -> impl Iterator<Item = &CaseResult> {
        self.cases.iter().filter(|c| c.outcome == Outcome::KitFault)
    }

    /// What the run is called: its label, else `<name> <version>`.
    pub fn title(&self) -> String {
        self.label.clone().unwrap_or_else(|| {
            format!(
                "{} {}",
                self.implementation.name, self.implementation.version
            )
        })
    }

    /// The closing line, exactly `N passed, N failed, N skipped` (the form CI reads).
    pub fn closing_line(&self) -> String {
        let s = &self.summary;
        format!(
            "{} passed, {} failed, {} skipped",
            s.passed, s.failed, s.skipped
        )
    }

    /// The lines before it: what `failed` is made of, and what does not fail the run; and,
    /// first, when the kit could not judge some case, which ones (the run exits 2).
    pub fn detail_lines(&self) -> Vec<String> {
        let s = &self.summary;
        let mut lines = Vec::new();
        if s.kit_faults > 0 {
            let ids: Vec<String> = self
                .kit_faults()
                .map(|c| format!("{}/{}", c.area, c.id))
                .collect();
            lines.push(format!(
                "the kit failed ({}): it could not judge {} (a kit or corpus problem, not the {}'s failure; exit 2)",
                s.kit_faults,
                ids.join(", "),
                self.role.as_str()
            ));
        }
        lines.extend([
            format!(
                "failing the run ({}): {} failed, {} errored, {} inconclusive, {} known failures that passed, {} known failures that failed otherwise than listed, {} known-failure entries naming no case",
                s.failed,
                s.failed_cases,
                s.errors,
                s.inconclusive,
                s.unexpected_passes,
                s.changed_known_failures,
                s.unmatched_entries
            ),
            format!(
                "not failing the run: {} known failures as listed, {} advisory (only SHOULD checks failed), {} skipped (unsupported or declined)",
                s.known_failures, s.advisory, s.skipped
            ),
        ]);
        lines
    }
}
