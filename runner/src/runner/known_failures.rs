//! Known-failure files, and the rules that keep them honest.
//!
//! One entry per line: ``<case-id> [<kind>] [`<check>`]  # <reason>``. The kind is one of the
//! [`FailureKind`] words (`accepted-damage`, `wrong-class`, ...), the check a [`Check`] name in
//! backticks (`` `v2 refuses` ``), spelt as the runner spells it (a misspelt check is an error
//! naming its line, never an entry that silently matches nothing); both are optional, and the
//! reason is not.
//!
//! Invariant: a known-failure file can only describe the run it is used with. An entry covers
//! its case when the case fails, and, if the entry names a check and a kind, when that check
//! (else the case's first failing check) fails with that kind; and an entry whose check fails
//! only at SHOULD covers no case that fails at MUST, so a listed advisory failure never hides
//! an unlisted MUST failure of another check of the same case ([`Entry::covers`]). An entry
//! whose case now passes,
//! whose case fails otherwise than listed, or that names no case of the corpus fails the run;
//! so does a file with a duplicate id or an entry without a reason (then it is not used at
//! all). For each such entry, and for each failing case the file does not list, the runner
//! prints the exact line to remove or add, and `--update-known-failures` rewrites the file with
//! them ([`rewrite`]). Blank lines and lines starting with `#` are comments.

use std::collections::BTreeSet;

use super::check::{Check, CheckNameError};
use super::report::{CaseResult, FailureKind, Outcome, Report, Verdict, entry_line};
use crate::case::Level;

/// One entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// 1-based line number in the file.
    pub line: usize,
    /// The case id.
    pub case: String,
    /// The failure kind the entry pins, if any.
    pub kind: Option<FailureKind>,
    /// The check the entry pins, if any.
    pub check: Option<Check>,
    /// Why it fails (text after `#`).
    pub reason: String,
    /// The line as written.
    pub text: String,
}

impl Entry {
    /// Whether the entry covers failing case `c` as listed: the check it names (else the
    /// case's first failing check) fails, with the entry's kind if it names one, and, when the
    /// case fails at MUST (a MUST check failed or was inconclusive, or a check errored), that
    /// check is one of those failures. An entry for a SHOULD check (an `accepted-damage` of
    /// a `vN refuses` in a `may_read` case, say) then covers nothing: the MUST failure of
    /// another check (`vN read as its twin`) is unlisted and fails the run.
    pub fn covers(&self, c: &CaseResult) -> bool {
        let check = match &self.check {
            Some(name) => c.checks.iter().find(|k| &k.name == name),
            None => c.primary_failure(),
        };
        let Some(check) = check.filter(|k| k.verdict.is_failure()) else {
            return false;
        };
        let at_must = check.level == Level::Must || check.verdict == Verdict::Error;
        self.kind.is_none_or(|k| check.kind == Some(k)) && (at_must || !c.fails_at_must())
    }
}

/// A parsed known-failure file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownFailures {
    /// Where it came from (for messages).
    pub path: String,
    /// The entries, in file order.
    pub entries: Vec<Entry>,
    /// The lines before the first entry (the file's header), as written.
    pub header: Vec<String>,
}

/// Splits `line` at the first `#` outside backticks.
fn split_reason(line: &str) -> Option<(&str, &str)> {
    let mut quoted = false;
    for (i, ch) in line.char_indices() {
        match ch {
            '`' => quoted = !quoted,
            '#' if !quoted => return Some((&line[..i], &line[i + 1..])),
            _ => {}
        }
    }
    None
}

/// The shape of an entry, as the messages state it.
const SHAPE: &str = "an entry is `<case-id> [<kind>] [`<check>`]  # <reason>`";

/// Why a known-failures file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KnownFailuresError {
    /// The file could not be read.
    #[error("{path}: {error}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// A line is not an entry.
    #[error("{path}:{line}: {problem}")]
    Line {
        /// The file.
        path: String,
        /// The line number (from 1).
        line: usize,
        /// What is wrong with it.
        problem: EntryProblem,
    },
}

/// What is wrong with one line of a known-failures file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryProblem {
    /// No `#` reason.
    #[error("{}; this one gives no reason", SHAPE)]
    NoReason,
    /// A check opened with a backtick and not closed.
    #[error("an unclosed `` ` `` in the check")]
    UnclosedCheck,
    /// The check named is not one the runner has.
    #[error(transparent)]
    Check(#[from] CheckNameError),
    /// Two checks on one line.
    #[error("{}: two checks", SHAPE)]
    TwoChecks,
    /// A word that is not a failure kind.
    #[error("{word:?} is not a failure kind ({known})")]
    NotAKind {
        /// The word.
        word: String,
        /// The kinds, comma-separated.
        known: String,
    },
    /// Two kinds on one line.
    #[error("{}: two kinds", SHAPE)]
    TwoKinds,
    /// No case id, or an empty reason.
    #[error("{} (one id, a non-empty reason)", SHAPE)]
    Shape,
    /// The case is listed twice.
    #[error("{case} is already listed on line {first}")]
    AlreadyListed {
        /// The case id.
        case: String,
        /// The line of its first entry.
        first: usize,
    },
}

impl KnownFailures {
    /// Parses the file text; `path` is used in messages.
    pub fn parse(text: &str, path: &str) -> Result<KnownFailures, KnownFailuresError> {
        let mut entries: Vec<Entry> = Vec::new();
        let mut header = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                if entries.is_empty() {
                    header.push(raw.to_string());
                }
                continue;
            }
            let at = |problem: EntryProblem| KnownFailuresError::Line {
                path: path.to_string(),
                line,
                problem,
            };
            let Some((left, reason)) = split_reason(trimmed) else {
                return Err(at(EntryProblem::NoReason));
            };
            let reason = reason.trim();
            let mut rest = left.trim();
            let case_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let case = &rest[..case_end];
            rest = rest[case_end..].trim_start();
            let (mut kind, mut check) = (None, None);
            while !rest.is_empty() {
                if let Some(after) = rest.strip_prefix('`') {
                    let Some(end) = after.find('`') else {
                        return Err(at(EntryProblem::UnclosedCheck));
                    };
                    let named = after[..end].parse::<Check>().map_err(|e| at(e.into()))?;
                    if check.replace(named).is_some() {
                        return Err(at(EntryProblem::TwoChecks));
                    }
                    rest = after[end + 1..].trim_start();
                } else {
                    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                    let word = &rest[..end];
                    let Some(k) = FailureKind::parse(word) else {
                        let known: Vec<&str> =
                            FailureKind::ALL.iter().map(|k| k.as_str()).collect();
                        return Err(at(EntryProblem::NotAKind {
                            word: word.to_string(),
                            known: known.join(", "),
                        }));
                    };
                    if kind.replace(k).is_some() {
                        return Err(at(EntryProblem::TwoKinds));
                    }
                    rest = rest[end..].trim_start();
                }
            }
            if case.is_empty() || reason.is_empty() {
                return Err(at(EntryProblem::Shape));
            }
            if let Some(first) = entries.iter().find(|e| e.case == case) {
                return Err(at(EntryProblem::AlreadyListed {
                    case: case.to_string(),
                    first: first.line,
                }));
            }
            entries.push(Entry {
                line,
                case: case.to_string(),
                kind,
                check,
                reason: reason.to_string(),
                text: raw.to_string(),
            });
        }
        Ok(KnownFailures {
            path: path.to_string(),
            entries,
            header,
        })
    }

    /// Reads and parses a file; a missing file is an empty list when `missing_ok`.
    pub fn load(path: &std::path::Path) -> Result<KnownFailures, KnownFailuresError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| KnownFailuresError::Read {
            path: shown.clone(),
            error,
        })?;
        KnownFailures::parse(&text, &shown)
    }

    /// The entry for `case`, if listed.
    pub fn get(&self, case: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.case == case)
    }

    /// Entries naming none of `ids`.
    pub fn unmatched(&self, ids: &BTreeSet<String>) -> Vec<&Entry> {
        self.entries
            .iter()
            .filter(|e| !ids.contains(&e.case))
            .collect()
    }
}

/// The line of an entry: ``<case>  <kind>  `<check>`  # <reason>`` (a check holding a backtick
/// is left out, so the line always parses).
pub fn line_for(
    case: &str,
    kind: Option<FailureKind>,
    check: Option<&Check>,
    reason: &str,
) -> String {
    let mut line = case.to_string();
    if let Some(k) = kind {
        line.push_str("  ");
        line.push_str(k.as_str());
    }
    if let Some(c) = check.map(Check::to_string).filter(|c| !c.contains('`')) {
        line.push_str(&format!("  `{c}`"));
    }
    let reason = reason.replace('\n', " ");
    format!("{line}  # {}", reason.trim())
}

/// The known-failure file as it has to be for `report` to pass: the header (comment lines
/// before the first entry) and every entry that still holds, as written; entries that changed
/// as they are now; entries of cases that pass or that name no case dropped; then the failing
/// cases the file did not list, in corpus order, with their whole messages as reasons.
pub fn rewrite(known: Option<&KnownFailures>, report: &Report) -> String {
    let mut out = String::new();
    match known {
        Some(k) if !k.header.is_empty() => {
            for l in &k.header {
                out.push_str(l);
                out.push('\n');
            }
        }
        _ => out.push_str(
            "# Known failures: <case-id> [<kind>] [`<check>`]  # <reason> (spec/conformance.md §5).\n\n",
        ),
    }
    let by_id = |id: &str| report.cases.iter().find(|c| c.id == id);
    if let Some(k) = known {
        for e in &k.entries {
            match by_id(&e.case) {
                // Not run (filtered out): kept, the run says nothing about it.
                None if report.known_failures.remove.iter().all(|r| r != &e.text) => {
                    out.push_str(&e.text);
                    out.push('\n');
                }
                None => {}
                Some(c) => match c.outcome {
                    // A kit fault says nothing about the implementation: the entry is kept.
                    Outcome::KnownFailure | Outcome::Skipped | Outcome::KitFault => {
                        out.push_str(&e.text);
                        out.push('\n');
                    }
                    Outcome::KnownFailureChanged => {
                        out.push_str(&entry_line(c, Some(&e.reason)));
                        out.push('\n');
                    }
                    _ => {}
                },
            }
        }
    }
    for c in report.cases.iter().filter(|c| c.outcome == Outcome::Failed) {
        out.push_str(&entry_line(c, None));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::protocol::Implementation;
    use super::super::report::CheckResult;
    use super::*;

    #[test]
    fn entries_need_a_reason_and_are_unique() {
        let k =
            KnownFailures::parse("# header\n\na  # Lance 14 bug: x\nb # spec gap\n", "k").unwrap();
        assert_eq!(k.entries.len(), 2);
        assert_eq!(k.entries[0].line, 3);
        assert_eq!(k.header, ["# header", ""]);
        assert_eq!(k.get("b").unwrap().reason, "spec gap");
        assert!(
            KnownFailures::parse("a\n", "k")
                .unwrap_err()
                .to_string()
                .contains("k:1")
        );
        assert!(KnownFailures::parse("a  #  \n", "k").is_err());
        assert!(KnownFailures::parse("a b # r\n", "k").is_err());
        let dup = KnownFailures::parse("a # r\n\na # s\n", "k")
            .unwrap_err()
            .to_string();
        assert!(dup.contains("k:3") && dup.contains("line 1"), "{dup}");
        let ids: BTreeSet<String> = ["a".to_string()].into();
        assert_eq!(k.unmatched(&ids)[0].case, "b");
    }

    /// A SHOULD case read through its damage: `v2 refuses` fails at SHOULD (accepted
    /// damage), and `v2 read as its twin` passes or fails at MUST as `read_ok` says.
    fn may_read_case(read_ok: bool) -> CaseResult {
        let refuses = CheckResult::new(
            Check::Refuses { version: 2 },
            Verdict::Fail,
            Level::Should,
            Some(FailureKind::AcceptedDamage),
            Some("read the damaged version".into()),
        );
        let read = if read_ok {
            CheckResult::new(
                Check::ReadAsTwin { version: 2 },
                Verdict::Pass,
                Level::Must,
                None,
                None,
            )
        } else {
            CheckResult::new(
                Check::ReadAsTwin { version: 2 },
                Verdict::Fail,
                Level::Must,
                Some(FailureKind::WrongValue),
                Some("stale base values".into()),
            )
        };
        CaseResult::new(
            "c",
            "flags",
            Level::Should,
            vec![],
            vec![],
            vec![refuses, read],
        )
    }

    fn outcome_with(entries: &str, case: CaseResult) -> (Outcome, Vec<String>) {
        let known = KnownFailures::parse(entries, "k").unwrap();
        let implementation = Implementation {
            name: "t".into(),
            version: "0".into(),
            language: None,
            homepage: None,
        };
        let ids: BTreeSet<String> = ["c".to_string()].into();
        let report = Report::new(implementation, vec![], vec![case], Some(&known), &ids);
        (report.cases[0].outcome, report.known_failures.add)
    }

    #[test]
    fn an_entry_for_a_should_check_hides_no_must_failure() {
        let should_entry = "c  accepted-damage  `v2 refuses`  # recorded deviation: reads it\n";
        // The listed SHOULD failure alone: covered.
        let (outcome, add) = outcome_with(should_entry, may_read_case(true));
        assert_eq!(outcome, Outcome::KnownFailure);
        assert!(add.is_empty(), "{add:?}");
        // The same entry while the read is also wrong at MUST: the MUST failure is unlisted,
        // so the run fails and the line to add names the MUST check.
        let (outcome, add) = outcome_with(should_entry, may_read_case(false));
        assert_eq!(outcome, Outcome::KnownFailureChanged);
        assert!(outcome.fails_run());
        assert_eq!(add.len(), 1, "{add:?}");
        assert!(
            add[0].starts_with("c  wrong-value  `v2 read as its twin`"),
            "{add:?}"
        );
        // An entry naming the MUST failure covers the case, and one naming nothing covers
        // its first failing MUST check.
        let must_entry = "c  wrong-value  `v2 read as its twin`  # Lance bug: stale values\n";
        let (outcome, _) = outcome_with(must_entry, may_read_case(false));
        assert_eq!(outcome, Outcome::KnownFailure);
        let (outcome, _) = outcome_with("c  # Lance bug: stale values\n", may_read_case(false));
        assert_eq!(outcome, Outcome::KnownFailure);
        let (outcome, _) = outcome_with("c  accepted-damage  # r\n", may_read_case(false));
        assert_eq!(outcome, Outcome::KnownFailureChanged);
    }

    #[test]
    fn an_entry_may_pin_a_kind_and_a_check() {
        let k = KnownFailures::parse(
            "x  accepted-damage  `v2 query \"a # b\"`  # Lance bug: reads it\ny `v1 scan [a, b]` # r\n",
            "k",
        )
        .unwrap();
        let x = k.get("x").unwrap();
        assert_eq!(x.kind, Some(FailureKind::AcceptedDamage));
        assert_eq!(
            x.check.as_ref().map(Check::to_string).as_deref(),
            Some("v2 query \"a # b\"")
        );
        assert_eq!(x.reason, "Lance bug: reads it");
        let y = k.get("y").unwrap();
        assert_eq!(
            (y.kind, y.check.as_ref()),
            (
                None,
                Some(&Check::ProjectedScan {
                    version: 1,
                    columns: vec!["a".into(), "b".into()]
                })
            )
        );
        let misspelt = KnownFailures::parse(
            "a # r
x  `v2 refuse`  # r
",
            "k",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            misspelt,
            "k:2: \"v2 refuse\" is not a check name (no check of a version is named so)"
        );
        assert!(KnownFailures::parse("x crashed # r\n", "k").is_err());
        assert!(KnownFailures::parse("x crash crash # r\n", "k").is_err());
        let line = line_for(
            "x",
            Some(FailureKind::Crash),
            Some(&Check::Refuses { version: 1 }),
            "Lance panicked:\nindex out of range",
        );
        assert_eq!(
            line,
            "x  crash  `v1 refuses`  # Lance panicked: index out of range"
        );
        let back = KnownFailures::parse(&line, "k").unwrap();
        assert_eq!(back.entries[0].kind, Some(FailureKind::Crash));
    }
}
