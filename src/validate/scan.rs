//! The `scan` subcommand: one version of a table where it lives (a directory, `file://`, or in
//! a build with the `object-store` feature `s3://`, `gs://`, `az://`) read by the reference
//! reader and printed, as a testee answers a `scan` request.
//!
//! Invariant: the table is reached through the same [`Location`] seam as `validate` (the same
//! parsing, the same [`lance_reference_io::Storage`] for each scheme, listing, ranged reads and
//! retries by `object_store` for remote tables), and read exactly as the reference reader reads
//! a corpus case: [`lance_reference_io::Dataset::read_version`] (every check a conforming
//! reader makes, indices included), then [`scan_batches`] converted by the runner's own
//! [`scan_result`]. So the rows printed for a table on object storage are the rows printed for
//! a copy of it in a directory, byte for byte. Exit codes: 0 when the version reads, 1 when the
//! reference refuses it (its error on stderr), 2 when nothing could be read (a location, a
//! listing, a version not listed, or `junit`).

use clap::Args;
use lance_reference::scan::scan_batches;
use lance_reference_io::{Dataset, ReadOptions};
use serde::Serialize;

use super::location::Location;
use crate::expected::{Column, Row};
use crate::runner::arrow_reader::scan_result;
use crate::runner::command::Format;
use crate::runner::protocol::{ScanRequest, VersionRef};

/// Arguments of `scan`.
#[derive(Debug, Clone, Args)]
pub struct ScanArgs {
    /// The table: a directory (the one holding `_versions/`), a `file://` URI, or (in a build
    /// with the `object-store` feature) an `s3://`, `gs://` or `az://` URI, with credentials
    /// from the environment.
    pub dataset: String,
    /// The version to read (default: the newest listed).
    #[arg(long)]
    pub version: Option<u64>,
    /// Output format: `human` (a row a line) or `json` (the protocol's scan result, with the
    /// version read).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

/// What `scan --format json` prints.
#[derive(Debug, Serialize)]
struct Scanned<'a> {
    version: u64,
    columns: &'a [Column],
    rows: &'a [Row],
}

/// Why a scan printed nothing, with its exit code.
enum Failure {
    /// The reference refused the version (exit 1).
    Refused(String),
    /// Nothing could be read (exit 2).
    Setup(String),
}

/// Runs `scan`; returns the exit code.
pub fn command(args: &ScanArgs) -> u8 {
    if args.format == Format::Junit {
        eprintln!("lance-conformance scan: --format junit is not offered by scan (human or json)");
        return 2;
    }
    match scan(args) {
        Ok(out) => {
            print!("{out}");
            0
        }
        Err(Failure::Refused(e)) => {
            eprintln!("lance-conformance scan: {e}");
            1
        }
        Err(Failure::Setup(e)) => {
            eprintln!("lance-conformance scan: {e}");
            2
        }
    }
}

fn scan(args: &ScanArgs) -> Result<String, Failure> {
    let setup = |e: &dyn std::fmt::Display| Failure::Setup(e.to_string());
    let location = Location::parse(&args.dataset).map_err(|e| setup(&e))?;
    let storage = location.storage().map_err(|e| setup(&e))?;
    let dataset = Dataset::open_in(storage, ReadOptions::default()).map_err(|e| setup(&e))?;
    let listed = dataset.versions();
    let version = match args.version {
        Some(v) if listed.contains(&v) => v,
        Some(v) => {
            let listed: Vec<String> = listed.iter().map(u64::to_string).collect();
            return Err(Failure::Setup(format!(
                "{}: version {v} is not listed (versions: {})",
                args.dataset,
                listed.join(", ")
            )));
        }
        None => dataset
            .latest_version()
            .ok_or_else(|| Failure::Setup(format!("{}: no version listed", args.dataset)))?,
    };
    let (snapshot, _) = dataset
        .read_version(version)
        .map_err(|e| Failure::Refused(e.to_string()))?;
    let batches = scan_batches(&snapshot, None).map_err(|e| Failure::Refused(e.to_string()))?;
    let request = ScanRequest {
        at: VersionRef {
            dataset: args.dataset.clone(),
            version,
        },
        columns: None,
    };
    let result = scan_result(&request, &batches).map_err(|e| Failure::Refused(format!("{e:?}")))?;
    Ok(match args.format {
        Format::Json => {
            let scanned = Scanned {
                version,
                columns: &result.columns,
                rows: &result.rows,
            };
            let mut out = serde_json::to_string_pretty(&scanned)
                .map_err(|e| Failure::Setup(format!("cannot print the rows: {e}")))?;
            out.push('\n');
            out
        }
        _ => human(version, &result.columns, &result.rows)?,
    })
}

/// A header line (the version, the row count, the columns with their types), then one line
/// per row: its JSON as the protocol spells it.
fn human(version: u64, columns: &[Column], rows: &[Row]) -> Result<String, Failure> {
    let names: Vec<String> = columns
        .iter()
        .map(|c| format!("{} ({})", c.name, c.data_type))
        .collect();
    let mut out = format!(
        "version {version}: {} rows; columns {}\n",
        rows.len(),
        names.join(", ")
    );
    for row in rows {
        let line = serde_json::to_string(row)
            .map_err(|e| Failure::Setup(format!("cannot print the rows: {e}")))?;
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}
