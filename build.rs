//! Does nothing: the package has a build script only so that its `[build-dependencies]` entry,
//! which gives the host's `syn` the features the test build gives it (feature parity,
//! `Cargo.toml`), takes part in feature resolution.
fn main() {}
