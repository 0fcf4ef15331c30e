//! Lineage through the public write paths (spec/row-lineage.md, [LIN-STAMP-4], [LIN-STAMP-6] to
//! [LIN-STAMP-8]): the reference writer passes the cases of `update`, `rewrite_columns`,
//! `merge_insert`, a backfilling `add_fields`, a delete before an append and a `restore` before
//! an append, in both data file versions; a writer whose commits do not stamp the rows they
//! change, whose restore winds `next_row_id` back, or whose appends number rows from the live
//! ones, fails them. The skipped cases of a run are
//! counted by reason in the HTML report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use lance_conformance::case::{RequirementIndex, Step};
use lance_conformance::reference_writer::ReferenceWriter;
use lance_conformance::runner::html;
use lance_conformance::runner::protocol::{
    CommitPreparedRequest, PrepareResult, WriteRequest, WriteResult,
};
use lance_conformance::runner::write_step::from_wire;
use lance_conformance::runner::writer::run_writer_suite;
use lance_conformance::runner::{
    Answer, ConformanceWriter, Description, Options, Outcome, Report, Verdict,
};
use lance_reference::model::{
    LAST_UPDATED_AT_FIELD_ID, LineageSequence, ROW_ID_FIELD_ID, Snapshot,
};
use lance_reference_io::version_names::{VERSIONS_DIR, manifest_name};
use lance_reference_io::{Dataset, WriteOptions, write_version};

use super::corpus;

/// The writer cases of the public write paths.
const LINEAGE_WRITE_CASES: [&str; 6] = [
    "update-where-stamps-matched",
    "column-rewrite-stamps-matched",
    "merge-insert-lineage",
    "backfill-stamps-every-row",
    "delete-then-append-no-reuse",
    "restore-then-append-no-reuse",
];

fn run_lineage(writer: &mut dyn ConformanceWriter, version: Option<&str>) -> Report {
    let scratch = tempfile::tempdir().unwrap();
    let mut options = Options::new(corpus());
    options.filters.cases = LINEAGE_WRITE_CASES.iter().map(|s| s.to_string()).collect();
    run_writer_suite(writer, options, scratch.path(), version).unwrap()
}

fn outcome(report: &Report, id: &str) -> Outcome {
    report.cases.iter().find(|c| c.id == id).unwrap().outcome
}

#[test]
fn the_reference_writer_passes_the_lineage_write_cases_in_2_0_and_2_2() {
    // covers: LIN-STAMP-6, LIN-STAMP-7, LIN-STAMP-8
    for version in [None, Some("2.2")] {
        let report = run_lineage(&mut ReferenceWriter::new(), version);
        assert_eq!(report.cases.len(), LINEAGE_WRITE_CASES.len());
        for id in LINEAGE_WRITE_CASES {
            assert_eq!(outcome(&report, id), Outcome::Passed, "{id} in {version:?}");
        }
    }
}

/// A writer bug injected after the reference writer committed a step: the newest version is
/// rewritten with one lineage value wrong.
#[derive(Clone, Copy)]
enum Bug {
    /// A commit that changes rows (an update, a column rewrite, a merge insert, a backfill)
    /// leaves every carried row's last-updated-at as it was before.
    NoBump,
    /// A restore copies the restored version's `next_row_id`, lower than the newest's.
    RestoreRewindsRowIds,
    /// An append numbers its rows from one above the highest row id the table holds, not from
    /// `next_row_id`.
    AppendAboveHighestId,
}

struct Buggy {
    inner: ReferenceWriter,
    bug: Bug,
}

/// Version `version` of `dir`.
fn read(dir: &Path, version: u64) -> Snapshot {
    Dataset::open(dir).unwrap().read_version(version).unwrap().0
}

/// Stores `snapshot` again as its version, in place of what the reference wrote.
fn rewrite(dir: &Path, snapshot: &Snapshot) {
    std::fs::remove_file(dir.join(VERSIONS_DIR).join(manifest_name(snapshot.version))).unwrap();
    write_version(dir, snapshot, &WriteOptions::default()).unwrap();
}

/// Each fragment's last-updated-at put back to what `before` held for the same row id.
fn unstamped(mut now: Snapshot, before: &Snapshot) -> Snapshot {
    let mut old: BTreeMap<u64, u64> = BTreeMap::new();
    for f in &before.fragments {
        let ids = f
            .lineage_values(ROW_ID_FIELD_ID)
            .unwrap()
            .unwrap_or_default();
        let updated = f
            .lineage_values(LAST_UPDATED_AT_FIELD_ID)
            .unwrap()
            .unwrap_or_else(|| vec![1; ids.len()]);
        old.extend(ids.into_iter().zip(updated));
    }
    for f in &mut now.fragments {
        let ids = f
            .lineage_values(ROW_ID_FIELD_ID)
            .unwrap()
            .unwrap_or_default();
        let mut updated = f
            .lineage_values(LAST_UPDATED_AT_FIELD_ID)
            .unwrap()
            .unwrap_or_else(|| vec![1; ids.len()]);
        for (v, id) in updated.iter_mut().zip(&ids) {
            if let Some(was) = old.get(id) {
                *v = *was;
            }
        }
        f.lineage.last_updated_at = LineageSequence::Inline(updated);
    }
    now
}

impl ConformanceWriter for Buggy {
    fn describe(&mut self) -> Answer<Description> {
        self.inner.describe()
    }

    fn write(&mut self, request: &WriteRequest) -> Answer<WriteResult> {
        let step = from_wire(&request.step).unwrap();
        let written = self.inner.write(request)?;
        let dir = Path::new(&request.dataset);
        match (self.bug, &step) {
            (
                Bug::NoBump,
                Step::Update { .. }
                | Step::UpdateRows { .. }
                | Step::RewriteColumns { .. }
                | Step::MergeInsert { .. }
                | Step::AddFields { .. },
            ) => {
                let before = read(dir, request.read_version);
                rewrite(dir, &unstamped(read(dir, written.version), &before));
            }
            (Bug::AppendAboveHighestId, Step::Append { .. }) => {
                let before = read(dir, request.read_version);
                let start = before
                    .fragments
                    .iter()
                    .flat_map(|f| {
                        f.lineage_values(ROW_ID_FIELD_ID)
                            .unwrap()
                            .unwrap_or_default()
                    })
                    .map(|id| id + 1)
                    .max()
                    .unwrap_or(0);
                let mut now = read(dir, written.version);
                let appended = now.fragments.last_mut().unwrap();
                let rows = appended.physical_rows;
                appended.lineage.row_ids = LineageSequence::Inline((start..start + rows).collect());
                now.next_row_id = start + rows;
                rewrite(dir, &now);
            }
            (Bug::RestoreRewindsRowIds, Step::Restore { version }) => {
                let mut now = read(dir, written.version);
                now.next_row_id = read(dir, *version).next_row_id;
                rewrite(dir, &now);
            }
            _ => {}
        }
        Ok(written)
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

fn failed(bug: Bug) -> BTreeSet<String> {
    let report = run_lineage(
        &mut Buggy {
            inner: ReferenceWriter::new(),
            bug,
        },
        None,
    );
    report
        .cases
        .iter()
        .filter(|c| c.outcome.fails_run())
        .map(|c| c.id.clone())
        .collect()
}

#[test]
fn a_writer_whose_updates_do_not_stamp_fails_every_case_that_changes_rows() {
    // covers: LIN-STAMP-4, LIN-STAMP-6, LIN-STAMP-7
    let expected: BTreeSet<String> = [
        "update-where-stamps-matched",
        "column-rewrite-stamps-matched",
        "merge-insert-lineage",
        "backfill-stamps-every-row",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(failed(Bug::NoBump), expected);
}

#[test]
fn a_writer_whose_restore_rewinds_next_row_id_reuses_ids_and_fails() {
    // covers: LIN-STAMP-8
    let expected: BTreeSet<String> = ["restore-then-append-no-reuse".to_string()].into();
    assert_eq!(failed(Bug::RestoreRewindsRowIds), expected);
    // The restore's own commit is caught by `validate`, before any append reuses an id.
    let report = run_lineage(
        &mut Buggy {
            inner: ReferenceWriter::new(),
            bug: Bug::RestoreRewindsRowIds,
        },
        None,
    );
    let case = report
        .cases
        .iter()
        .find(|c| c.id == "restore-then-append-no-reuse")
        .unwrap();
    let rules = case
        .checks
        .iter()
        .find(|k| k.name.to_string() == "v4 rules")
        .unwrap();
    assert_eq!(rules.verdict, Verdict::Fail);
    assert!(
        rules.message.as_deref().unwrap().contains("[LIN-STAMP-8]"),
        "{:?}",
        rules.message
    );
}

#[test]
fn a_writer_numbering_appends_from_the_live_rows_reuses_ids_and_fails() {
    // covers: LIN-STAMP-1, LIN-STAMP-8
    let expected: BTreeSet<String> = [
        "delete-then-append-no-reuse".to_string(),
        "restore-then-append-no-reuse".to_string(),
    ]
    .into();
    assert_eq!(failed(Bug::AppendAboveHighestId), expected);
}

#[test]
fn the_report_counts_skipped_cases_by_reason() {
    let mut words = ReferenceWriter::new().describe().unwrap().capabilities;
    words.remove("write:restore");
    words.remove("write:merge-insert");
    let report = run_lineage(&mut ReferenceWriter::with_capabilities(words), None);
    let reasons: Vec<Option<String>> = report.cases.iter().map(html::skip_reason).collect();
    assert_eq!(
        reasons.iter().flatten().collect::<BTreeSet<_>>(),
        BTreeSet::from([
            &"needs write:merge-insert".to_string(),
            &"needs write:restore".to_string()
        ])
    );
    let index = RequirementIndex::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("spec/requirements.toml"),
    )
    .unwrap();
    let page = html::render(&[report.clone(), report], &index, ".", "skips");
    assert!(page.contains("<table class=\"skips\">"), "{page}");
    for reason in ["needs write:merge-insert", "needs write:restore"] {
        let row = format!(
            "<tr><td class=\"reason\">{reason}</td><td class=\"skipped\">1</td><td class=\"skipped\">1</td></tr>"
        );
        assert!(page.contains(&row), "no row {row}");
    }
}
