//! Renderings of a [`Report`]: a human table and summary, JSON, and JUnit XML.
//!
//! Invariant: every rendering is a pure function of the report (no clock, no environment),
//! lists cases in run order, shows every failing check with its level (a refusal and its class
//! are two checks, `MUST` and `SHOULD` apart), and ends the human form with the closing line
//! `N passed, N failed, N skipped`. The human form of a passing run is short: cases that pass
//! or are skipped are counted, not listed, and known failures take one line each; `--verbose`
//! lists every check, and the JSON form holds everything. The JUnit form is well-formed XML
//! (every text and attribute escaped, control characters dropped): one `<testcase>` per case,
//! `failure` for what fails the run, `error` for error, `skipped` for unsupported, skip, known
//! and advisory failures (with the reason). A kit fault is shown in every form as the kit's
//! (`KIT` in the table, a line naming the cases before the summary, a JUnit `error` of type
//! `kit_fault`), never as a failure of the implementation judged.

use std::fmt::Write as _;

use super::check::Check;
use super::report::{CaseResult, CheckResult, Outcome, Report, Verdict};

/// How much the human form shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Cases that did not pass, with their failing checks (known failures in one line).
    Normal,
    /// Only what fails the run, and the summary.
    Quiet,
    /// Every case and every check.
    Verbose,
}

/// The label of a case's outcome in the human table.
pub fn label(c: &CaseResult) -> &'static str {
    match (c.outcome, c.verdict) {
        (Outcome::Passed, _) => "PASS",
        (Outcome::UnexpectedPass, _) => "XPASS",
        (Outcome::KnownFailure, _) => "XFAIL",
        (Outcome::KnownFailureChanged, _) => "XCHG",
        (Outcome::Advisory, _) => "SHOULD",
        (Outcome::Failed, Verdict::Error) => "ERROR",
        (Outcome::Failed, Verdict::Inconclusive) => "INCONC",
        (Outcome::Failed, _) => "FAIL",
        (Outcome::Skipped, Verdict::Skip) => "SKIP",
        (Outcome::Skipped, _) => "UNSUP",
        (Outcome::KitFault, _) => "KIT",
    }
}

fn counts(c: &CaseResult) -> String {
    let n = |v: Verdict| c.checks.iter().filter(|k| k.verdict == v).count();
    let mut parts = vec![format!(
        "{}/{} checks pass",
        n(Verdict::Pass),
        c.checks.len()
    )];
    for v in [
        Verdict::KitFault,
        Verdict::Fail,
        Verdict::Error,
        Verdict::Inconclusive,
        Verdict::Unsupported,
        Verdict::Skip,
    ] {
        if n(v) > 0 {
            parts.push(format!("{} {}", n(v), v.as_str()));
        }
    }
    if !c.refusal_profile.is_empty() {
        parts.push(format!("refusal profile: {}", c.refusal_profile.join(", ")));
    }
    parts.join(", ")
}

/// `fail [MUST] v2 refuses` and its message, indented.
fn check_lines(out: &mut String, k: &CheckResult) {
    let kind = k
        .kind
        .map(|x| format!(" — {}", x.describe()))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "         {:<12} [{}] {}{kind}",
        k.verdict.as_str(),
        k.level.as_str(),
        k.name
    );
    if let Some(m) = &k.message {
        for line in m.lines() {
            let _ = writeln!(out, "                      {line}");
        }
    }
}

/// The human form.
pub fn human(report: &Report, detail: Detail) -> String {
    let mut out = String::new();
    let i = &report.implementation;
    let _ = writeln!(
        out,
        "{}: {} {}{}",
        report.role.as_str(),
        i.name,
        i.version,
        i.language
            .as_ref()
            .map(|l| format!(" ({l})"))
            .unwrap_or_default()
    );
    if let Some(l) = &report.label {
        let _ = writeln!(out, "run: {l}");
    }
    let _ = writeln!(out, "capabilities: {}", report.capabilities.join(", "));
    let profiled: Vec<&CaseResult> = report
        .cases
        .iter()
        .filter(|c| !c.refusal_profile.is_empty())
        .collect();
    if !profiled.is_empty() {
        let mut lacking: Vec<&str> = profiled
            .iter()
            .flat_map(|c| c.refusal_profile.iter().map(String::as_str))
            .collect();
        lacking.sort_unstable();
        lacking.dedup();
        let _ = writeln!(
            out,
            "refusal profile: {} case(s) have versions that need {}, which the reader does not declare; it must refuse those versions and read the others",
            profiled.len(),
            lacking.join(", ")
        );
    }
    let _ = writeln!(out);
    let width = report
        .cases
        .iter()
        .map(|c| c.area.len() + c.id.len() + 1)
        .max()
        .unwrap_or(0);
    for c in &report.cases {
        let shown = match detail {
            Detail::Verbose => true,
            Detail::Normal => !matches!(c.outcome, Outcome::Passed | Outcome::Skipped),
            Detail::Quiet => c.outcome.fails_run() || c.outcome == Outcome::KitFault,
        };
        if !shown {
            continue;
        }
        let name = format!("{}/{}", c.area, c.id);
        let _ = writeln!(out, "{:<6} {name:<width$}  {}", label(c), counts(c));
        if let Some(reason) = &c.known_failure {
            let _ = writeln!(out, "         known failure: {reason}");
        }
        match c.outcome {
            Outcome::UnexpectedPass => {
                let _ = writeln!(out, "         listed as a known failure, but passes");
            }
            Outcome::KnownFailureChanged => {
                let _ = writeln!(
                    out,
                    "         listed as a known failure, but now fails otherwise: {} [{}]",
                    c.kind.map_or("?", |k| k.as_str()),
                    c.failing_check
                        .as_ref()
                        .map_or_else(|| "?".to_string(), Check::to_string)
                );
            }
            _ => {}
        }
        if detail != Detail::Verbose && c.outcome == Outcome::Advisory {
            // One line: the details are in --verbose and the JSON report.
            if let Some(k) = c.primary_failure() {
                let kind = k
                    .kind
                    .map(|x| format!(" — {}", x.describe()))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "         advisory: [{}] {}{kind}",
                    k.level.as_str(),
                    k.name
                );
            }
            continue;
        }
        let with_checks = detail == Detail::Verbose
            || !matches!(c.outcome, Outcome::KnownFailure | Outcome::Passed);
        if !with_checks {
            continue;
        }
        for k in &c.checks {
            let show = detail == Detail::Verbose
                || k.verdict.is_failure()
                || k.verdict == Verdict::KitFault
                || (k.verdict == Verdict::Unsupported && c.outcome == Outcome::Skipped);
            if show {
                check_lines(&mut out, k);
            }
        }
    }
    let u = &report.known_failures;
    if !u.is_empty() {
        let _ = writeln!(out);
        match &u.file {
            Some(f) => {
                let _ = writeln!(
                    out,
                    "update {f} (or run again with --update-known-failures):"
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "known failures to list (in a file given with --known-failures, or written by --update-known-failures):"
                );
            }
        }
        for l in &u.remove {
            let _ = writeln!(out, "  remove: {l}");
        }
        for l in &u.add {
            let _ = writeln!(out, "  add:    {l}");
        }
    }
    let _ = writeln!(out);
    for l in report.detail_lines() {
        let _ = writeln!(out, "{l}");
    }
    let _ = writeln!(out, "{}", report.closing_line());
    out
}

/// The JSON form (pretty-printed, with a trailing newline).
pub fn json(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(report).unwrap_or_default();
    text.push('\n');
    text
}

/// Escapes text for XML content and attributes; drops characters XML 1.0 forbids.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' => out.push(ch),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

/// The JUnit XML form.
pub fn junit(report: &Report) -> String {
    let e = xml_escape;
    let failures = report
        .cases
        .iter()
        .filter(|c| c.outcome.fails_run() && c.verdict != Verdict::Error)
        .count();
    let errors = report
        .cases
        .iter()
        .filter(|c| {
            (c.outcome == Outcome::Failed && c.verdict == Verdict::Error)
                || c.outcome == Outcome::KitFault
        })
        .count();
    let skipped = report
        .cases
        .iter()
        .filter(|c| {
            matches!(
                c.outcome,
                Outcome::Skipped | Outcome::KnownFailure | Outcome::Advisory
            )
        })
        .count();
    let suite = format!("lance-conformance: {}", report.title());
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">",
        e(&suite),
        report.cases.len(),
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">",
        e(&suite),
        report.cases.len(),
    );
    for c in &report.cases {
        let _ = writeln!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\">",
            e(&c.area),
            e(&c.id)
        );
        let details: String = c
            .checks
            .iter()
            .map(|k| {
                format!(
                    "{} [{}] {}{}{}\n",
                    k.verdict.as_str(),
                    k.level.as_str(),
                    k.name,
                    k.kind
                        .map(|x| format!(" ({})", x.as_str()))
                        .unwrap_or_default(),
                    k.message
                        .as_ref()
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                )
            })
            .collect();
        let first = c.first_problem().unwrap_or_default();
        match (c.outcome, c.verdict) {
            (Outcome::Passed, _) => {}
            (Outcome::KitFault, _) => {
                let _ = writeln!(
                    out,
                    "      <error message=\"the kit failed (not the {}'s failure): {}\" type=\"kit_fault\">{}</error>",
                    report.role.as_str(),
                    e(&first),
                    e(&details)
                );
            }
            (Outcome::UnexpectedPass, _) => {
                let _ = writeln!(
                    out,
                    "      <failure message=\"listed as a known failure, but passes\" type=\"unexpected_pass\"/>"
                );
            }
            (Outcome::KnownFailureChanged, _) => {
                let _ = writeln!(
                    out,
                    "      <failure message=\"listed as a known failure, but fails otherwise: {}\" type=\"known_failure_changed\">{}</failure>",
                    e(&first),
                    e(&details)
                );
            }
            (Outcome::Failed, Verdict::Error) => {
                let _ = writeln!(
                    out,
                    "      <error message=\"{}\" type=\"error\">{}</error>",
                    e(&first),
                    e(&details)
                );
            }
            (Outcome::Failed, v) => {
                let _ = writeln!(
                    out,
                    "      <failure message=\"{}\" type=\"{}\">{}</failure>",
                    e(&first),
                    v.as_str(),
                    e(&details)
                );
            }
            (Outcome::KnownFailure, _) => {
                let reason = c.known_failure.clone().unwrap_or_default();
                let _ = writeln!(
                    out,
                    "      <skipped message=\"known failure: {}\"/>",
                    e(&reason)
                );
            }
            (Outcome::Advisory, _) => {
                let _ = writeln!(
                    out,
                    "      <skipped message=\"advisory (only SHOULD checks failed): {}\"/>",
                    e(&first)
                );
            }
            (Outcome::Skipped, v) => {
                let _ = writeln!(
                    out,
                    "      <skipped message=\"{}: {}\"/>",
                    v.as_str(),
                    e(&first)
                );
            }
        }
        if !matches!(c.outcome, Outcome::Passed) || c.checks.iter().any(|k| k.level != c.level) {
            let _ = writeln!(out, "      <system-out>{}</system-out>", e(&details));
        }
        let _ = writeln!(out, "    </testcase>");
    }
    let _ = writeln!(out, "  </testsuite>");
    let _ = writeln!(out, "</testsuites>");
    out
}
