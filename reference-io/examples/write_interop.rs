//! Writes the fixed interop datasets (`test-support/src/dataset_scenarios.rs`: `full`, `plain`,
//! `nested`) into a directory, every version of each, with the reference writer.
//!
//! ```text
//! cargo run -p lance-reference --example write_interop -- <out dir> [2.0|2.1|2.2]
//! ```
//!
//! The optional version is the data file format of every file written (default 2.0); in 2.2
//! the datasets are the 2.0 ones' twins, whose scans must agree.
//!
//! `tests/interop/check_reference_datasets.py` then reads them with pylance 14.0.2 and
//! compares every version with `dataset_dump`.

use lance_conformance_test_support::dataset_scenarios;

use std::path::PathBuf;
use std::process::ExitCode;

use lance_reference_io::data_file::DataFileVersion;
use lance_reference_io::write_version;

fn main() -> ExitCode {
    let Some(out) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: write_interop <out dir> [2.0|2.1|2.2]");
        return ExitCode::FAILURE;
    };
    let Some(version) = std::env::args()
        .nth(2)
        .map_or(Some(DataFileVersion::V2_0), |v| {
            DataFileVersion::from_name(&v)
        })
    else {
        eprintln!("usage: write_interop <out dir> [2.0|2.1|2.2]");
        return ExitCode::FAILURE;
    };
    // Every scenario is attempted; a failed one stops at its failing version.
    let mut failed = false;
    for s in dataset_scenarios::all() {
        let root = out.join(s.name);
        let mut options = s.options.clone();
        options.data_file_version = version;
        let mut ok = true;
        for v in &s.versions {
            if let Err(e) = write_version(&root, v, &options) {
                eprintln!(
                    "{} v{}: {} ({}): {e}",
                    s.name,
                    v.version,
                    e.class().as_str(),
                    e.code()
                );
                ok = false;
                break;
            }
        }
        if ok {
            println!("{}", root.display());
        }
        failed |= !ok;
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
