//! A readable rendering of every manifest version of a case, for insta snapshots and people.
//!
//! Invariant: the rendering is a deterministic function of the versions as read back (plus
//! the step records and the declared corruptions), shows every manifest fact a reader acts on
//! (fragments, files with field ids, overlays with coverage as ranges, committed versions,
//! deletions, lineage placement and inline sizes, the encoding of a row-id sequence that is not
//! a plain range, indices, flags by name, config), and never
//! validates: a damaged version renders as faithfully as a sound one.

pub mod snapshot;

use std::fmt::Write;

use crate::case::Case;
use crate::scenario::StepRecord;
use crate::store::ReadBack;

pub use snapshot::{flags, ranges, version};

/// Renders a whole case: header, step log, every version, and the damage of a negative case.
pub fn case(case: &Case, records: &[StepRecord], read: &ReadBack) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "case {}: {}", case.id, case.title);
    let _ = writeln!(
        out,
        "level {}; requirements {}",
        case.level.as_str(),
        case.requirements.join(", ")
    );
    let _ = writeln!(out, "steps:");
    for r in records {
        let versions = match r.versions.as_slice() {
            [] => "-".to_string(),
            vs => vs
                .iter()
                .map(|v| format!("v{v}"))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let _ = writeln!(out, "  {} {} -> {versions}: {}", r.step, r.op, r.note);
    }
    // A re-encoding applies to the version committed by the step before it.
    let mut reencoded: Vec<(u64, &str)> = Vec::new();
    let mut last = None;
    for r in records {
        if r.op == "reencode" {
            if let Some(v) = last {
                reencoded.push((v, r.note.as_str()));
            }
        }
        last = r.versions.last().copied().or(last);
    }
    for v in &read.versions {
        let _ = writeln!(out, "\n=== version {} ===", v.version);
        for (_, note) in reencoded.iter().filter(|(at, _)| *at == v.version) {
            let _ = writeln!(out, "stored form: {note}");
        }
        version(&mut out, v);
    }
    if let Some(damaged) = &read.corrupted {
        let _ = writeln!(out, "\n=== version {} (damaged) ===", damaged.version);
        for step in &case.steps {
            if let crate::case::Step::Corrupt(c) = step {
                let _ = writeln!(out, "corruption: {} {:?}", c.name(), c);
            }
        }
        if let Some(snapshot) = &damaged.snapshot {
            version(&mut out, snapshot);
        }
        if let Some(e) = &case.expect_error {
            let code = e.code.as_deref().unwrap_or("");
            let _ = writeln!(out, "a reader must fail: {} {code}", e.class);
        }
        match &damaged.read {
            Err(e) => {
                let (class, code) = (e.class().as_str(), e.code());
                let _ = writeln!(
                    out,
                    "the reference's dataset reader fails: {class}/{code}: {e}"
                );
            }
            Ok(_) => {
                let _ = writeln!(
                    out,
                    "the reference's dataset reader decodes it; the scan must refuse it"
                );
            }
        }
    }
    out
}
