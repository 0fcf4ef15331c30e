//! The error vocabulary as a contract: every code a reader (or the reference) reports, with
//! its class and meaning, rendered as `spec/error-codes.md`.
//!
//! Invariant: the table is generated, never written by hand. Its rows come from the
//! `error_codes!` declarations of the reference crates ([`TABLES`]), where each error type's
//! `class()` and `code()` are one exhaustive `match`; the requirement ids of a code are those of
//! the corpus cases that pin it. `generate` writes the file, `generate --check` and
//! `tests/spec/error_codes.rs` fail when it differs, when a code is declared twice, when a wrapped
//! type is not in [`TABLES`], or when a case names a code (or a class for it) the table lacks.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use lance_reference::compaction::CompactionError;
use lance_reference::error::{CodeInfo, CodeRow, CodeTable};
use lance_reference::flags::FlagError;
use lance_reference::lineage::LineageError;
use lance_reference::query::QueryError;
use lance_reference_io::data_file::DataFileError;
use lance_reference_io::index_file::IndexFileError;
use lance_reference_io::{DatasetError, DatasetIoError, FramingProblem};

use crate::corpus::CaseDir;
use crate::validate::finding::HistoryError;

/// The file, relative to `spec/`.
pub const FILE: &str = "error-codes.md";

/// The table's requirement column as Rust, relative to the repository root: what `validate`
/// (in `lance-conformance-runner`) names for a code. Generated beside [`FILE`] from the same
/// rows, so that the runner crate holds its own copy and packages without `spec/`.
pub const PINNED_FILE: &str = "runner/src/validate/pinned.rs";

/// Every error type that can reach a reader's report, with its rows, in the order the table
/// lists them: the semantics first, then the on-disk I/O, then the writer and commit rules only `validate`
/// judges.
pub const TABLES: &[(&str, &[CodeRow])] = &[
    (lance_reference::Error::TYPE, lance_reference::Error::ROWS),
    (FlagError::TYPE, FlagError::ROWS),
    (LineageError::TYPE, LineageError::ROWS),
    (QueryError::TYPE, QueryError::ROWS),
    (CompactionError::TYPE, CompactionError::ROWS),
    (DatasetError::TYPE, DatasetError::ROWS),
    (FramingProblem::TYPE, FramingProblem::ROWS),
    (DatasetIoError::TYPE, DatasetIoError::ROWS),
    (DataFileError::TYPE, DataFileError::ROWS),
    (IndexFileError::TYPE, IndexFileError::ROWS),
    (HistoryError::TYPE, HistoryError::ROWS),
];

/// Every own code, with the type declaring it, in table order.
pub fn codes() -> Vec<(&'static str, CodeInfo)> {
    TABLES
        .iter()
        .flat_map(|(ty, rows)| {
            rows.iter().filter_map(move |r| match r {
                CodeRow::Own(info) => Some((*ty, *info)),
                CodeRow::Wraps(_) => None,
            })
        })
        .collect()
}

/// What is wrong with the tables themselves or with the corpus against them; empty when sound.
pub fn problems(cases: &[CaseDir]) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (ty, info) in codes() {
        if let Some(first) = seen.insert(info.code, ty) {
            out.push(format!(
                "code `{}` is declared by both {first} and {ty}",
                info.code
            ));
        }
    }
    let types: BTreeSet<&str> = TABLES.iter().map(|(t, _)| *t).collect();
    for (ty, rows) in TABLES {
        for row in rows.iter() {
            if let CodeRow::Wraps(inner) = row {
                let name = inner.rsplit("::").next().unwrap_or(inner);
                if !types.contains(name) {
                    out.push(format!("{ty} wraps {inner}, which is not in TABLES"));
                }
            }
        }
    }
    let by_code: BTreeMap<&str, CodeInfo> = codes().into_iter().map(|(_, i)| (i.code, i)).collect();
    for c in cases {
        let Some(spec) = &c.case.expect_error else {
            continue;
        };
        let Some(code) = &spec.code else {
            continue;
        };
        match by_code.get(code.as_str()) {
            None => out.push(format!(
                "case {}/{} expects code `{code}`, which no error type declares",
                c.area, c.case.id
            )),
            Some(info) if info.class.as_str() != spec.class => out.push(format!(
                "case {}/{} expects `{code}` as {}, the table says {}",
                c.area,
                c.case.id,
                spec.class,
                info.class.as_str()
            )),
            Some(_) => {}
        }
    }
    out
}

/// By code: the requirement ids and the case names (`area/id`) of the cases that expect it.
type Pinned<'a> = BTreeMap<&'a str, (BTreeSet<&'a str>, BTreeSet<String>)>;

/// Which cases pin which code, and the requirement ids they carry.
fn pinned(cases: &[CaseDir]) -> Pinned<'_> {
    let mut pinned = Pinned::new();
    for c in cases {
        if let Some(code) = c.case.expect_error.as_ref().and_then(|e| e.code.as_deref()) {
            let entry = pinned.entry(code).or_default();
            entry
                .0
                .extend(c.case.requirements.iter().map(String::as_str));
            entry.1.insert(format!("{}/{}", c.area, c.case.id));
        }
    }
    pinned
}

/// The text of [`PINNED_FILE`] for `cases`: the requirement column of `spec/error-codes.md`,
/// one entry per code some case pins, in code order.
pub fn render_pinned(cases: &[CaseDir]) -> String {
    let mut s = String::new();
    s.push_str(
        "//! The requirement ids the corpus pins to each error code: the requirement column of\n\
         //! `spec/error-codes.md`, generated with it by `lance-conformance generate` (edit the\n\
         //! cases, not this file). `generate --check` fails when it is stale.\n\
         //!\n\
         //! Invariant: codes in ascending order, each once, only codes some case expects.\n\n\
         /// By code: the requirement ids of the corpus cases that expect it.\n\
         #[rustfmt::skip]\n\
         pub(crate) const PINNED: &[(&str, &[&str])] = &[\n",
    );
    for (code, (reqs, _)) in pinned(cases) {
        let ids: Vec<String> = reqs.iter().map(|r| format!("{r:?}")).collect();
        let _ = writeln!(s, "    ({code:?}, &[{}]),", ids.join(", "));
    }
    s.push_str("];\n");
    s
}

/// The text of `spec/error-codes.md` for `cases`.
pub fn render(cases: &[CaseDir]) -> String {
    let pinned = pinned(cases);
    let mut s = String::new();
    s.push_str("# Error codes\n\n");
    s.push_str(
        "<!-- generated by `lance-conformance generate` from the `error_codes!` declarations \
         of lance-reference and lance-reference-io; edit those, not this file -->\n\n",
    );
    s.push_str(
        "A reader that refuses a version reports a class and, where it can, one of these codes \
         (`spec/conformance.md`, the `error` of a response). A negative case judges the refusal \
         first; the class and the code are checks of their own, at the levels the spec gives \
         them (`spec/conformance.md` §4). Codes are stable: a code is never \
         reused for another meaning. A variant that wraps another error reports the inner \
         error's code, so wrappers have no row here.\n\n",
    );
    s.push_str(
        "Requirements and cases are those of the corpus cases that expect the code; a code no \
         case pins shows `-`.\n\n",
    );
    let mut current = "";
    for (ty, info) in codes() {
        if ty != current {
            current = ty;
            let _ = writeln!(s, "\n## `{ty}`\n");
            s.push_str("| code | class | meaning | requirements | cases |\n");
            s.push_str("|---|---|---|---|---|\n");
        }
        let (reqs, case_ids) = pinned
            .get(info.code)
            .map(|(r, c)| {
                (
                    r.iter().copied().collect::<Vec<_>>().join(", "),
                    c.iter().cloned().collect::<Vec<_>>().join(", "),
                )
            })
            .unwrap_or_default();
        let dash = |x: String| if x.is_empty() { "-".to_string() } else { x };
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} |",
            info.code,
            info.class.as_str(),
            info.meaning.replace('|', "\\|"),
            dash(reqs),
            dash(case_ids)
        );
    }
    s
}
