//! The stored corpus against the built-in reference reader, in process: every case passes and
//! every check of every case ran. This is all an implementer writes for their own reader (their
//! reader in place of `ReferenceReader`).
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;

use lance_conformance_runner::runner::{Options, ReferenceReader, Verdict, run_suite};

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance-cases")
}

#[test]
fn the_reference_passes_every_case_in_process() {
    // covers: OVL-PREC-1, OVL-COV-3, FLG-READ-1
    // covers: IDX-READ-13
    // (indices/vector-nan-never-ranks: a reader ranking a NaN distance answers a fourth row)
    passes_every_case(ReferenceReader::new());
}

/// The reader `cargo run -- run` judges the stored corpus with: the same reference, over a
/// storage that keeps what it decoded of one dataset for that dataset's next version, so a
/// version read from kept decodings must still be refused where the manifest's claims about a
/// file (its size, its columns) are wrong.
#[test]
fn the_stored_corpus_reader_passes_every_case_in_process() {
    passes_every_case(ReferenceReader::of_stored_corpus());
}

/// The row scan (`lance_reference::scan::scan`, which computed `expected/`) is a reader of its
/// own: `generate --check` finds it changed only where a case's datasets are regenerated, and
/// this runs it over every stored version, damaged ones included.
#[test]
fn the_row_scan_passes_every_case_in_process() {
    passes_every_case(ReferenceReader::row_scans());
}

fn passes_every_case(mut reader: ReferenceReader) {
    let report = run_suite(&mut reader, Options::new(corpus())).unwrap();
    let failing: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.verdict != Verdict::Pass)
        .map(|c| (c.id.clone(), c.first_problem()))
        .collect();
    assert!(failing.is_empty(), "{failing:?}");
    assert!(report.passed());
    assert_eq!(report.summary.passed, report.cases.len());
    assert!(report.cases.len() >= 12, "the corpus has at least 12 cases");
    // Every check ran: the reference declares every capability.
    for c in &report.cases {
        assert!(
            c.checks.iter().all(|k| k.verdict == Verdict::Pass),
            "{}",
            c.id
        );
    }
}
