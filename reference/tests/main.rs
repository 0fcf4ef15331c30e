//! `lance-reference`'s integration tests, in one test binary (`autotests = false` in
//! `Cargo.toml`): one link instead of seven. Each file of this directory is a module; filter by
//! its name, e.g. `cargo test --release -p lance-reference --test integration resolve::`.

mod compaction_spill;
mod lineage_lance14;
mod lineage_proptest;
mod lineage_read;
mod protos;
mod reconciliation_properties;
mod resolve;
mod resolve_runs;
