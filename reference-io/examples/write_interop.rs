//! Writes the fixed interop datasets (`test-support/src/dataset_scenarios.rs`: `full`, `plain`,
//! `nested`) into a directory, every version of each, with the reference writer.
//!
//! ```text
//! cargo run -p lance-reference --example write_interop -- <out dir>
//! ```
//!
//! `tests/interop/check_reference_datasets.py` then reads them with pylance 14.0.2 and
//! compares every version with `dataset_dump`.

use lance_conformance_test_support::dataset_scenarios;

use std::path::PathBuf;
use std::process::ExitCode;

use lance_reference_io::write_version;

fn main() -> ExitCode {
    let Some(out) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: write_interop <out dir>");
        return ExitCode::FAILURE;
    };
    for s in dataset_scenarios::all() {
        let root = out.join(s.name);
        for v in &s.versions {
            if let Err(e) = write_version(&root, v, &s.options) {
                eprintln!(
                    "{} v{}: {} ({}): {e}",
                    s.name,
                    v.version,
                    e.class().as_str(),
                    e.code()
                );
                return ExitCode::FAILURE;
            }
        }
        println!("{}", root.display());
    }
    ExitCode::SUCCESS
}
