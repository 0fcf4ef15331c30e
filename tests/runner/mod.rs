//! The runner's integration tests (a module of `tests/main.rs`): the protocol over a real
//! process (`process`), every message checked against the JSON Schemas (`protocol_schemas`),
//! and the in-process suite against the reference and against readers with injected
//! misbehaviour (`suite`), and the writer run against the reference writer and misbehaving
//! writers (`writer`), the lineage the public write paths leave, with injected writer bugs
//! (`lineage_writer`), what only a writer run decides (lengths a writer reports, versions handed
//! over, a malformed budget, a fold plan completed, `writer_refusals`), a reader answering in Arrow record batches (`arrow`), and corpus and
//! runner faults blamed on the kit (`kit_faults`).

mod arrow;
mod kit_faults;
mod lineage_writer;
mod process;
mod protocol_schemas;
mod suite;
mod writer;
mod writer_refusals;

/// The stored corpus, which every module here judges against.
fn corpus() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance-cases")
}

/// Copies the directory tree `from` into `to` (a scratch corpus a test may damage).
#[allow(clippy::unwrap_used)] // test code: fail loudly
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// The cases of `report` that fail the run, each with its first failing check (for a message).
fn failing(report: &lance_conformance::runner::Report) -> Vec<String> {
    report
        .cases
        .iter()
        .filter(|c| c.outcome.fails_run())
        .map(|c| format!("{}: {:?}", c.id, c.primary_failure()))
        .collect()
}
