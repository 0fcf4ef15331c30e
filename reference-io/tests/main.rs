//! `lance-reference-io`'s integration tests, in one test binary (`autotests = false` in
//! `Cargo.toml`): one link instead of two. Each file of this directory is a module; filter by
//! its name, e.g. `cargo test --release -p lance-reference-io --test integration dataset::`.

mod data_file_v2x;
mod dataset;
mod dataset_v2x;
mod index_files;
mod ivf_pq;
mod write_v2_2;

/// A copy of the dataset directory `from` that a test may damage.
#[allow(clippy::unwrap_used)]
fn copy_dir(from: &std::path::Path) -> tempfile::TempDir {
    fn walk(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let p = e.unwrap().path();
            let target = to.join(p.file_name().unwrap());
            if p.is_dir() {
                walk(&p, &target);
            } else {
                std::fs::copy(&p, &target).unwrap();
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    walk(from, dir.path());
    dir
}
