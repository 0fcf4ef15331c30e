//! The result of `validate` and its renderings: a human list and JSON.
//!
//! Invariant: every rendering is a pure function of the [`Report`] (no clock, no
//! environment); each finding shows its version, requirement ids, class and code, file, field
//! and message; what could not be judged is shown apart (`CANNOT JUDGE`, JSON `unjudged`),
//! never as a finding; the human form ends with the closing line
//! `N version(s) judged, N commit(s) judged, N finding(s)` (and `, N not judged` when any). The JSON form is described by
//! `spec/schemas/validate.schema.json`.

use std::fmt::Write as _;

use serde_json::{Value as Json, json};

use super::finding::Finding;
use super::history::CommitKind;
use super::version::Level;

/// What `validate` found in one dataset directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The dataset directory, as given.
    pub dataset: String,
    /// The versions judged, ascending, with how much of each the reader accepted (`None`:
    /// nothing, the version was refused).
    pub versions: Vec<(u64, Option<Level>)>,
    /// The commits judged against the version before them: version and what the commit was
    /// classified as.
    pub commits: Vec<(u64, Vec<CommitKind>)>,
    /// Every finding, in version order.
    pub findings: Vec<Finding>,
    /// What could not be judged, in version order: refusals that are limits of the kit
    /// ([`Finding::is_kit_limit`]), not requirements the dataset breaks.
    pub unjudged: Vec<Finding>,
}

impl Report {
    /// Whether everything was judged and nothing was found.
    pub fn conforming(&self) -> bool {
        self.findings.is_empty() && self.unjudged.is_empty()
    }

    /// The exit code: 1 when anything was found (a breach is established whatever else could
    /// not be read), else 2 when something could not be judged, else 0.
    pub fn exit_code(&self) -> u8 {
        if !self.findings.is_empty() {
            1
        } else if !self.unjudged.is_empty() {
            2
        } else {
            0
        }
    }
}

/// The human form.
pub fn human(report: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "dataset {}", report.dataset);
    for (v, readable) in &report.versions {
        let kinds = report.commits.iter().find(|(c, _)| c == v).map(|(_, k)| {
            if k.is_empty() {
                "-".to_string()
            } else {
                k.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
            }
        });
        let _ = writeln!(
            s,
            "v{v} {}{}",
            match readable {
                Some(Level::Full) => "read",
                Some(Level::Data) => "read without its index files",
                Some(Level::Manifest) => "read at the manifest level (no data file)",
                None => "refused",
            },
            kinds.map(|k| format!("; commit: {k}")).unwrap_or_default()
        );
    }
    for (f, verdict) in report
        .findings
        .iter()
        .map(|f| (f, "FAIL"))
        .chain(report.unjudged.iter().map(|f| (f, "CANNOT JUDGE")))
    {
        let reqs = if f.requirements.is_empty() {
            "-".to_string()
        } else {
            f.requirements.join(", ")
        };
        // A reader's message already starts with the file (and field) it is about.
        let location = if f.message.starts_with(&f.file) {
            String::new()
        } else if f.field.is_empty() {
            format!("{}: ", f.file)
        } else {
            format!("{}: {}: ", f.file, f.field)
        };
        let _ = writeln!(
            s,
            "v{} {verdict} {}/{} [{}] {location}{}",
            f.version,
            f.class.as_str(),
            f.code,
            reqs,
            f.message
        );
    }
    let _ = writeln!(
        s,
        "{} version(s) judged, {} commit(s) judged, {} finding(s){}",
        report.versions.len(),
        report.commits.len(),
        report.findings.len(),
        if report.unjudged.is_empty() {
            String::new()
        } else {
            format!(", {} not judged", report.unjudged.len())
        }
    );
    s
}

/// The JSON form.
pub fn to_json(report: &Report) -> Json {
    json!({
        "dataset": report.dataset,
        "conforming": report.conforming(),
        "versions": report
            .versions
            .iter()
            .map(|(v, level)| json!({
                "version": v,
                "readable": level.is_some(),
                "level": level.map(Level::as_str),
            }))
            .collect::<Vec<_>>(),
        "commits": report
            .commits
            .iter()
            .map(|(v, kinds)| {
                let kinds: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
                json!({"version": v, "kinds": kinds})
            })
            .collect::<Vec<_>>(),
        "findings": report.findings.iter().map(finding_json).collect::<Vec<_>>(),
        "unjudged": report.unjudged.iter().map(finding_json).collect::<Vec<_>>(),
    })
}

fn finding_json(f: &Finding) -> Json {
    json!({
        "version": f.version,
        "requirements": f.requirements,
        "class": f.class.as_str(),
        "code": f.code,
        "file": f.file,
        "field": f.field,
        "message": f.message,
    })
}

/// The JSON form as text.
pub fn json(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(&to_json(report)).unwrap_or_default();
    text.push('\n');
    text
}
