//! `lance-reference-io`'s integration tests, in one test binary (`autotests = false` in
//! `Cargo.toml`): one link instead of two. Each file of this directory is a module; filter by
//! its name, e.g. `cargo test --release -p lance-reference-io --test integration dataset::`.

mod data_file_v2x;
mod dataset;
mod dataset_v2x;
mod index_files;
mod ivf_pq;
mod write_v2_2;
