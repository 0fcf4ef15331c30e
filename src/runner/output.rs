//! Renderings of a [`Report`]: a human table and summary, JSON, and JUnit XML.
//!
//! Invariant: every rendering is a pure function of the report (no clock, no environment),
//! lists cases in run order, and ends the human form with the closing line
//! `N passed, N failed, N skipped`. The JUnit form is well-formed XML (every text and
//! attribute escaped, control characters dropped): one `<testcase>` per case, `failure` for
//! fail and unexpected pass, `error` for error, `skipped` for unsupported, skip, known and
//! advisory failures (with the reason).

use std::fmt::Write as _;

use super::report::{CaseResult, Outcome, Report, Verdict};

/// How much the human form shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Every case, and every check of cases that did not pass.
    Normal,
    /// Only cases that did not pass, and the summary.
    Quiet,
    /// Every check of every case.
    Verbose,
}

fn label(c: &CaseResult) -> &'static str {
    match (c.outcome, c.verdict) {
        (Outcome::Passed, _) => "PASS",
        (Outcome::UnexpectedPass, _) => "XPASS",
        (Outcome::KnownFailure, _) => "XFAIL",
        (Outcome::Advisory, _) => "SHOULD",
        (Outcome::Failed, Verdict::Error) => "ERROR",
        (Outcome::Failed, _) => "FAIL",
        (Outcome::Skipped, Verdict::Skip) => "SKIP",
        (Outcome::Skipped, _) => "UNSUP",
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
        Verdict::Fail,
        Verdict::Error,
        Verdict::Unsupported,
        Verdict::Skip,
    ] {
        if n(v) > 0 {
            parts.push(format!("{} {}", n(v), v.as_str()));
        }
    }
    parts.join(", ")
}

/// The human form.
pub fn human(report: &Report, detail: Detail) -> String {
    let mut out = String::new();
    let i = &report.implementation;
    let _ = writeln!(
        out,
        "reader: {} {}{}",
        i.name,
        i.version,
        i.language
            .as_ref()
            .map(|l| format!(" ({l})"))
            .unwrap_or_default()
    );
    let _ = writeln!(out, "capabilities: {}", report.capabilities.join(", "));
    let _ = writeln!(out);
    let width = report
        .cases
        .iter()
        .map(|c| c.area.len() + c.id.len() + 1)
        .max()
        .unwrap_or(0);
    for c in &report.cases {
        let clean = c.outcome == Outcome::Passed || c.outcome == Outcome::Skipped;
        if detail == Detail::Quiet && clean {
            continue;
        }
        let name = format!("{}/{}", c.area, c.id);
        let _ = writeln!(out, "{:<6} {name:<width$}  {}", label(c), counts(c));
        if let Some(reason) = &c.known_failure {
            let _ = writeln!(out, "         known failure: {reason}");
        }
        if c.outcome == Outcome::UnexpectedPass {
            let _ = writeln!(out, "         listed as a known failure, but passes");
        }
        for k in &c.checks {
            let show = detail == Detail::Verbose
                || (k.verdict != Verdict::Pass && (k.verdict != Verdict::Unsupported || !clean));
            if !show {
                continue;
            }
            let _ = writeln!(out, "         {:<11} {}", k.verdict.as_str(), k.name);
            if let Some(m) = &k.message {
                for line in m.lines() {
                    let _ = writeln!(out, "                     {line}");
                }
            }
        }
    }
    if let Some(u) = &report.known_failures {
        if !u.remove.is_empty() || !u.add.is_empty() {
            let _ = writeln!(out);
            let _ = writeln!(out, "update {}:", u.file);
            for l in &u.remove {
                let _ = writeln!(out, "  remove: {l}");
            }
            for l in &u.add {
                let _ = writeln!(out, "  add:    {l}");
            }
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "{}", report.detail_line());
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
    let s = &report.summary;
    let failures = report
        .cases
        .iter()
        .filter(|c| {
            matches!(c.outcome, Outcome::Failed | Outcome::UnexpectedPass)
                && c.verdict != Verdict::Error
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
    let suite = format!(
        "lance-conformance: {} {}",
        report.implementation.name, report.implementation.version
    );
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{}\" skipped=\"{skipped}\">",
        e(&suite),
        report.cases.len(),
        s.errors
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{}\" skipped=\"{skipped}\">",
        e(&suite),
        report.cases.len(),
        s.errors
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
                    "{} {}{}\n",
                    k.verdict.as_str(),
                    k.name,
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
            (Outcome::UnexpectedPass, _) => {
                let _ = writeln!(
                    out,
                    "      <failure message=\"listed as a known failure, but passes\" type=\"unexpected_pass\"/>"
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
            (Outcome::Failed, _) => {
                let _ = writeln!(
                    out,
                    "      <failure message=\"{}\" type=\"fail\">{}</failure>",
                    e(&first),
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
                    "      <skipped message=\"advisory (SHOULD) failure: {}\"/>",
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
        let _ = writeln!(out, "    </testcase>");
    }
    let _ = writeln!(out, "  </testsuite>");
    let _ = writeln!(out, "</testsuites>");
    out
}
