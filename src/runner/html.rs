//! `lance-conformance report`: several JSON results of `run` as one static HTML page, a
//! matrix of cases by implementation (one column per run, in the order given).
//!
//! Invariant: the page is a pure function of the reports, the requirement index and the link
//! base; it needs no script and no network (styles are inline, details use `<details>`). Every
//! cell shows its run's outcome for that case, coloured by outcome; its reasons (failing checks
//! with level, kind and message, the known-failure reason, how a refusal profile judged it)
//! unfold from the cell. Every requirement id links to the section of the spec that states it.
//! A case a run did not include shows as not run, never as a pass. Above the matrix, every run's
//! skipped cases are counted by reason (the message of the check that was not judged).
//!
//! Each area has a score per run, as wpt.fyi scores interop: the share of the area's cases
//! (every case of the area any run holds, less those a writer run skipped as not a writer case:
//! no writer is asked for them) that the run passed; a known failure, any other skip and a
//! case not run score nothing. A cell whose case verdict differs from the one the same
//! implementation (name and role) got in the nearest run to its left carries a "changed" mark
//! naming that run and verdict, so two releases, or gates on and off, read as a diff.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use super::command::ReportArgs;
use super::output::{label, xml_escape as e};
use super::report::{CaseResult, Outcome, Report, Verdict};
use super::writer::NOT_A_WRITER_CASE;
use crate::case::RequirementIndex;

/// Why `report` wrote no page.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be read, a directory made, or the page written.
    #[error("{}: {error}", path.display())]
    File {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A results file is not a JSON report of `run`.
    #[error("{}: not a JSON report of `run`: {error}", path.display())]
    NotAReport {
        /// The results file.
        path: PathBuf,
        /// Why.
        error: serde_json::Error,
    },
    /// The requirements file does not load.
    #[error("{0}")]
    Requirements(#[from] crate::case::CaseError),
}

/// The error of `path`.
fn file(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |error| ReportError::File {
        path: path.to_path_buf(),
        error,
    }
}

/// Runs the command: reads the reports, writes the page.
pub fn command(args: &ReportArgs) -> Result<(), ReportError> {
    let mut reports = Vec::new();
    for p in &args.results {
        let text = std::fs::read_to_string(p).map_err(file(p))?;
        let r: Report = serde_json::from_str(&text).map_err(|error| ReportError::NotAReport {
            path: p.clone(),
            error,
        })?;
        reports.push(r);
    }
    let index = RequirementIndex::load(&args.requirements)?;
    let base = match &args.spec_base {
        Some(b) => b.trim_end_matches('/').to_string(),
        None => {
            let spec_dir = args.requirements.parent().unwrap_or(Path::new("."));
            let out_dir = args.output.parent().unwrap_or(Path::new("."));
            relative(out_dir, spec_dir)
        }
    };
    let page = render(&reports, &index, &base, &args.title);
    if let Some(dir) = args.output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(file(dir))?;
    }
    std::fs::write(&args.output, page).map_err(file(&args.output))?;
    eprintln!(
        "lance-conformance report: wrote {} ({} run(s))",
        args.output.display(),
        reports.len()
    );
    Ok(())
}

fn absolute(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `to` relative to the directory `from`, with `/`.
fn relative(from: &Path, to: &Path) -> String {
    let (from, to) = (absolute(from), absolute(to));
    let a: Vec<_> = from.components().collect();
    let b: Vec<_> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_string(); a.len() - common];
    parts.extend(
        b[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

const STYLE: &str = "
body { font-family: system-ui, sans-serif; font-size: 14px; margin: 1.5em; color: #1b1b1b; }
h1 { font-size: 20px; margin: 0 0 .3em; }
p.note { color: #444; max-width: 70em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #c9c9c9; padding: 3px 6px; vertical-align: top; }
thead th { background: #f0f0f0; position: sticky; top: 0; }
th.area { background: #dfe6ee; text-align: left; font-size: 15px; }
table.matrix { table-layout: fixed; }
table.matrix th.casehead, td.case { width: 25em; }
table.matrix th.runhead, td.cell { width: 13em; }
td.case .id { font-family: ui-monospace, monospace; white-space: nowrap; }
td.case .level { font-size: 11px; color: #555; margin-left: .4em; }
.reqs a { font-size: 11px; margin-right: .35em; color: #1a4f8a; }
details summary { cursor: pointer; font-weight: 600; }
details div { font-size: 12px; max-width: 38em; white-space: pre-wrap; word-break: break-word; margin-top: .3em; }
.pass { background: #c8e6c9; }
.fail { background: #ffcdd2; }
.error { background: #e1bee7; }
.inconclusive { background: #ffe0b2; }
.known { background: #fff3b0; }
.advisory { background: #d6e8fb; }
.changed { background: #ff8a80; }
.skipped { background: #eeeeee; color: #555; }
.kit { background: #ffffff; border: 2px dashed #b00020; }
.notrun { background: #fafafa; color: #999; }
.tag { font-size: 11px; font-weight: normal; color: #333; }
table.runs td, table.runs th { text-align: left; }
table.skips td.reason { max-width: 60em; font-size: 0.9em; }
table.skips td, table.skips th { text-align: left; }
.legend span { display: inline-block; padding: 2px 8px; margin-right: 4px; border: 1px solid #c9c9c9; }
.delta { display: inline-block; font-size: 11px; font-weight: 700; color: #fff; background: #6a1b9a; border-radius: 3px; padding: 0 4px; margin-left: .3em; }
th.score { font-weight: 600; text-align: right; white-space: nowrap; }
table.scores td { text-align: right; white-space: nowrap; }
.bar { display: block; height: 8px; background: #2e7d32; }
.barbg { display: inline-block; width: 60px; height: 8px; background: #e0e0e0; vertical-align: middle; margin-right: .4em; text-align: left; }
";

/// An area's score in one run: the cases of the area it passed, of `total` (every case of the
/// area in any run, less the run's skips as not a writer case), as wpt.fyi scores interop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AreaScore {
    /// Cases of the area the run passed.
    pub passed: usize,
    /// Cases of the area in any run, less those this run skipped as not a writer case.
    pub total: usize,
}

impl AreaScore {
    /// The score in whole percent, rounded down (100 only when every case passed).
    pub fn percent(self) -> usize {
        (self.passed * 100).checked_div(self.total).unwrap_or(0)
    }
}

/// Per area (in first-seen order) and per run (in the order given), the area's score.
pub fn area_scores(reports: &[Report]) -> Vec<(String, Vec<AreaScore>)> {
    let mut areas: Vec<String> = Vec::new();
    let mut ids: BTreeMap<String, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for r in reports {
        for c in &r.cases {
            if !ids.contains_key(&c.area) {
                areas.push(c.area.clone());
            }
            ids.entry(c.area.clone()).or_default().insert(&c.id);
        }
    }
    areas
        .into_iter()
        .map(|a| {
            let held = ids[&a].len();
            let per_run = reports
                .iter()
                .map(|r| {
                    let of_area = || r.cases.iter().filter(|c| c.area == a);
                    let outside = of_area()
                        .filter(|c| {
                            skip_reason(c).is_some_and(|w| w.starts_with(NOT_A_WRITER_CASE))
                        })
                        .count();
                    AreaScore {
                        passed: of_area().filter(|c| c.outcome == Outcome::Passed).count(),
                        total: held - outside,
                    }
                })
                .collect();
            (a, per_run)
        })
        .collect()
}

/// For run `j`, the nearest run to its left of the same implementation (name and role), if
/// any: the run its verdicts are compared with for the "changed" mark.
pub fn previous_run(reports: &[Report], j: usize) -> Option<usize> {
    let r = &reports[j];
    (0..j).rev().find(|&i| {
        reports[i].implementation.name == r.implementation.name && reports[i].role == r.role
    })
}

/// The "changed" mark of case `id` in run `j`: the earlier run of the same implementation and
/// the verdict the case had there, when it differs from this run's. A case the earlier run did
/// not hold is not marked.
pub fn changed(reports: &[Report], j: usize, id: &str) -> Option<(usize, Verdict)> {
    let i = previous_run(reports, j)?;
    let now = reports[j].cases.iter().find(|c| c.id == id)?;
    let before = reports[i].cases.iter().find(|c| c.id == id)?;
    (before.verdict != now.verdict).then_some((i, before.verdict))
}

fn score_cell(out: &mut String, score: AreaScore, tag: &str) {
    let width = score.percent() * 60 / 100;
    let _ = write!(
        out,
        "<{tag} class=\"score\"><span class=\"barbg\"><span class=\"bar\" style=\"width:{width}px\"></span></span>{}% <span class=\"tag\">{}/{}</span></{tag}>",
        score.percent(),
        score.passed,
        score.total
    );
}

/// The table of area scores: one row per area, one column per run.
fn scores_table(out: &mut String, reports: &[Report], scores: &[(String, Vec<AreaScore>)]) {
    let _ = write!(
        out,
        "<table class=\"scores\"><thead><tr><th>area score (cases passed)</th>"
    );
    for r in reports {
        let _ = write!(out, "<th>{}</th>", e(&r.title()));
    }
    let _ = writeln!(out, "</tr></thead><tbody>");
    for (area, per_run) in scores {
        let _ = write!(out, "<tr><th class=\"area\">{}</th>", e(area));
        for s in per_run {
            score_cell(out, *s, "td");
        }
        let _ = writeln!(out, "</tr>");
    }
    let _ = writeln!(out, "</tbody></table>\n<p></p>");
}

/// The CSS class of a case's outcome.
fn class_of(c: &CaseResult) -> &'static str {
    match (c.outcome, c.verdict) {
        (Outcome::Passed, _) => "pass",
        (Outcome::KnownFailure, _) => "known",
        (Outcome::Advisory, _) => "advisory",
        (Outcome::KnownFailureChanged | Outcome::UnexpectedPass, _) => "changed",
        (Outcome::Failed, Verdict::Error) => "error",
        (Outcome::Failed, Verdict::Inconclusive) => "inconclusive",
        (Outcome::Failed, _) => "fail",
        (Outcome::Skipped, _) => "skipped",
        (Outcome::KitFault, _) => "kit",
    }
}

/// `overlays.md#feature-gate` → the link to it under `base`.
fn link(base: &str, section: &str) -> String {
    if base == "." {
        section.to_string()
    } else {
        format!("{base}/{section}")
    }
}

fn cell(out: &mut String, c: &CaseResult, changed: Option<(&str, Verdict)>) {
    let mut body = String::new();
    if let Some((run, verdict)) = changed {
        let _ = writeln!(
            body,
            "changed: {} in {run}, {} here",
            verdict.as_str(),
            c.verdict.as_str()
        );
    }
    if let Some(reason) = &c.known_failure {
        let _ = writeln!(body, "known failure: {reason}");
    }
    if !c.refusal_profile.is_empty() {
        let _ = writeln!(
            body,
            "refusal profile: versions needing {} must be refused, the others read",
            c.refusal_profile.join(", ")
        );
    }
    for k in c
        .checks
        .iter()
        .filter(|k| k.verdict != Verdict::Unsupported)
    {
        // Failures in full (a testee's traceback left to the JSON); refusals that passed by
        // name, so the cell says which versions were refused; other passes not at all.
        if k.verdict == Verdict::Pass && !k.name.is_refusal() {
            continue;
        }
        let kind = k
            .kind
            .map(|x| format!(" ({})", x.describe()))
            .unwrap_or_default();
        let message = match (&k.message, k.verdict) {
            (Some(m), v) if v != Verdict::Pass => {
                let kept: Vec<&str> = super::report::message_lines(m).collect();
                format!(": {}", kept.join(" "))
            }
            _ => String::new(),
        };
        let _ = writeln!(
            body,
            "{} [{}] {}{kind}{message}",
            k.verdict.as_str(),
            k.level.as_str(),
            k.name
        );
    }
    let not_run: Vec<&str> = c
        .checks
        .iter()
        .filter(|k| k.verdict == Verdict::Unsupported)
        .filter_map(|k| k.message.as_deref())
        .collect();
    if !not_run.is_empty() {
        let mut why = not_run.clone();
        why.sort_unstable();
        why.dedup();
        let _ = writeln!(
            body,
            "{} check(s) not sent ({})",
            not_run.len(),
            why.join("; ")
        );
    }
    let passed = c
        .checks
        .iter()
        .filter(|k| k.verdict == Verdict::Pass)
        .count();
    let _ = writeln!(body, "{passed}/{} checks pass", c.checks.len());
    let tag = if c.refusal_profile.is_empty() {
        String::new()
    } else {
        format!(
            " <span class=\"tag\">· without {}</span>",
            e(&c.refusal_profile.join(", "))
        )
    };
    let kind = match (c.outcome, c.kind) {
        (Outcome::KitFault, _) => {
            " <span class=\"tag\">the kit failed, not the implementation</span>".to_string()
        }
        (Outcome::Passed | Outcome::Skipped, _) | (_, None) => String::new(),
        (_, Some(k)) => format!(" <span class=\"tag\">{}</span>", e(k.describe())),
    };
    let delta = match changed {
        Some((run, verdict)) => format!(
            " <span class=\"delta\" title=\"{} in {}\">changed</span>",
            verdict.as_str(),
            e(run)
        ),
        None => String::new(),
    };
    let _ = write!(
        out,
        "<td class=\"cell {}\"><details><summary>{}{delta}{kind}{tag}</summary><div>{}</div></details></td>",
        class_of(c),
        label(c),
        e(body.trim_end())
    );
}

/// The page.
pub fn render(reports: &[Report], index: &RequirementIndex, base: &str, title: &str) -> String {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut info: BTreeMap<String, &CaseResult> = BTreeMap::new();
    for r in reports {
        for c in &r.cases {
            if !info.contains_key(&c.id) {
                order.push((c.area.clone(), c.id.clone()));
                info.insert(c.id.clone(), c);
            }
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>",
        e(title)
    );
    let _ = writeln!(out, "<h1>{}</h1>", e(title));
    let _ = writeln!(
        out,
        "<p class=\"note\">One row per conformance case, one column per run. A cell shows the case's outcome in that run; click it for the checks that did not pass (with their level and kind), the known-failure reason and how a refusal profile judged it. A negative case's refusal is its MUST; its error class and code are separate checks at the level the spec gives them. Requirement ids link to the spec.</p>"
    );
    let _ = writeln!(
        out,
        "<p class=\"legend\"><span class=\"pass\">PASS</span><span class=\"fail\">FAIL</span><span class=\"error\">ERROR (crash)</span><span class=\"inconclusive\">INCONC (twin not read)</span><span class=\"known\">XFAIL (known failure)</span><span class=\"advisory\">SHOULD (advisory)</span><span class=\"changed\">XCHG / XPASS (known-failure list out of date)</span><span class=\"skipped\">UNSUP / SKIP</span><span class=\"kit\">KIT (the kit could not judge: a corpus or runner fault)</span><span class=\"notrun\">not run</span><span class=\"delta\">changed</span> (the verdict differs from the same implementation's in the nearest run to the left)</p>"
    );
    let _ = writeln!(
        out,
        "<table class=\"runs\"><thead><tr><th>run</th><th>implementation</th><th>capabilities</th><th>passed</th><th>failing the run</th><th>known failures</th><th>advisory</th><th>skipped</th><th>kit faults</th></tr></thead><tbody>"
    );
    for r in reports {
        let s = &r.summary;
        let _ = writeln!(
            out,
            "<tr><th>{}</th><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td{}>{}</td></tr>",
            e(&r.title()),
            e(&r.implementation.name),
            e(&r.implementation.version),
            e(&r.capabilities.join(", ")),
            s.passed,
            s.failed,
            s.known_failures,
            s.advisory,
            s.skipped,
            if s.kit_faults > 0 {
                " class=\"kit\""
            } else {
                ""
            },
            s.kit_faults
        );
    }
    let _ = writeln!(out, "</tbody></table>\n<p></p>");
    let scores = area_scores(reports);
    scores_table(&mut out, reports, &scores);
    skips_by_reason(&mut out, reports);
    let _ = write!(
        out,
        "<table class=\"matrix\"><thead><tr><th class=\"casehead\">case</th>"
    );
    for r in reports {
        let _ = write!(out, "<th class=\"runhead\">{}</th>", e(&r.title()));
    }
    let _ = writeln!(out, "</tr></thead><tbody>");
    let mut area = String::new();
    for (a, id) in &order {
        if *a != area {
            area = a.clone();
            let _ = write!(out, "<tr><th class=\"area\">{}</th>", e(a));
            if let Some((_, per_run)) = scores.iter().find(|(x, _)| x == a) {
                for s in per_run {
                    score_cell(&mut out, *s, "th");
                }
            }
            let _ = writeln!(out, "</tr>");
        }
        let c = info[id];
        let reqs: String = c
            .requirements
            .iter()
            .map(|r| {
                let section = index.sections.get(r).cloned().unwrap_or_default();
                let summary = index.bodies.get(r).cloned().unwrap_or_default();
                let level = index.levels.get(r).cloned().unwrap_or_default();
                format!(
                    "<a href=\"{}\" title=\"{} — {}\">{}</a>",
                    e(&link(base, &section)),
                    e(&level),
                    e(&summary),
                    e(r)
                )
            })
            .collect();
        let _ = write!(
            out,
            "<tr><td class=\"case\"><span class=\"id\">{}/{}</span><span class=\"level\">{}</span><br><span class=\"reqs\">{reqs}</span></td>",
            e(a),
            e(id),
            c.level.as_str()
        );
        for (j, r) in reports.iter().enumerate() {
            let mark = changed(reports, j, id).map(|(i, v)| (reports[i].title(), v));
            let mark = mark.as_ref().map(|(t, v)| (t.as_str(), *v));
            match r.cases.iter().find(|x| &x.id == id) {
                Some(x) => cell(&mut out, x, mark),
                None => {
                    let _ = write!(out, "<td class=\"cell notrun\">not run</td>");
                }
            }
        }
        let _ = writeln!(out, "</tr>");
    }
    let _ = writeln!(out, "</tbody></table>\n</body>\n</html>");
    out
}

/// Why a skipped case was skipped: the message of its first check that was not judged
/// (unsupported or declined), or `skipped` when none says.
pub fn skip_reason(c: &CaseResult) -> Option<String> {
    if c.outcome != Outcome::Skipped {
        return None;
    }
    Some(
        c.checks
            .iter()
            .find(|k| matches!(k.verdict, Verdict::Unsupported | Verdict::Skip))
            .and_then(|k| k.message.clone())
            .unwrap_or_else(|| "skipped".into()),
    )
}

/// The skipped cases of every run, counted by reason: one row per reason (in reason order),
/// one column per run. Nothing when no run skipped a case.
fn skips_by_reason(out: &mut String, reports: &[Report]) {
    let mut counts: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, r) in reports.iter().enumerate() {
        for reason in r.cases.iter().filter_map(skip_reason) {
            counts
                .entry(reason)
                .or_insert_with(|| vec![0; reports.len()])[i] += 1;
        }
    }
    if counts.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<table class=\"skips\"><thead><tr><th>skipped because</th>"
    );
    for r in reports {
        let _ = write!(out, "<th>{}</th>", e(&r.title()));
    }
    let _ = writeln!(out, "</tr></thead><tbody>");
    for (reason, per_run) in &counts {
        let _ = write!(out, "<tr><td class=\"reason\">{}</td>", e(reason));
        for n in per_run {
            if *n == 0 {
                let _ = write!(out, "<td></td>");
            } else {
                let _ = write!(out, "<td class=\"skipped\">{n}</td>");
            }
        }
        let _ = writeln!(out, "</tr>");
    }
    let _ = writeln!(out, "</tbody></table>\n<p></p>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_relative_to_the_page() {
        assert_eq!(
            relative(Path::new("/a/target"), Path::new("/a/spec")),
            "../spec"
        );
        assert_eq!(relative(Path::new("/a"), Path::new("/a")), ".");
        assert_eq!(link("../spec", "overlays.md#x"), "../spec/overlays.md#x");
    }
}
