//! `lance-conformance-bench`: the criterion benches of `lance-reference` (`resolve`,
//! `exclusion`, `lineage`) and `lance-reference-io` (`scan`), in `bench/benches/`, with the
//! scripts that compare the reference with Lance (`bench/*.py`). `BENCHMARKS.md` says what each
//! bench measures and holds the figures.
//!
//! Invariant: nothing here is built unless asked for. Every bench requires the `criterion`
//! feature, so `cargo build`, `cargo test --workspace` and `--all-targets` compile neither the
//! benches nor criterion; this library is empty. Build and run them with
//! `cargo bench -p lance-conformance-bench --features criterion`.
