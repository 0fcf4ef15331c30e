//! The corpus's integration tests (a module of `tests/main.rs`): cases build as
//! their files say (`generate`), each case renders as its reviewed insta snapshot
//! (`snapshots`), and every case traces to requirements and capabilities (`traceability`).

mod generate;
mod refusals;
mod snapshots;
mod traceability;
