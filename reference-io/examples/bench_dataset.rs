//! The reference's half of `bench/side_by_side.py`: writes the benchmark datasets with the
//! reference writer, then times the reference reader on them.
//!
//! ```text
//! cargo run --release -p lance-reference --example bench_dataset -- write <dir> [rows] [2.0|2.2]
//! cargo run --release -p lance-reference --example bench_dataset -- time <dir> [repeats]
//! ```
//!
//! `write` creates one dataset per configuration under `<dir>` (`16x10`: 16 overlays of 10%,
//! `4x1`: 4 overlays of 1%, both on one of four columns), each with version 1 (the base rows
//! alone) and version `count + 1` (the same rows under the overlays), and prints one JSON line
//! per dataset: its path and the two versions. Its data files are in data file version 2.0, or
//! in the version the third argument names.
//!
//! `time` prints one JSON line per dataset with the minimum over `repeats` runs (default 5) of:
//! `scan_base_s` / `scan_overlaid_s` (open + `read_version` + `scan_batches`, from disk), their
//! ratio `overlay_read_overhead`; `scan_rows_*_s` (the same with the row scan `scan`) and
//! `read_*_s` (open + `read_version` alone); `resolve_s` (`resolve_column` of every column of the overlaid
//! fragment, in memory), `copy_s` (cloning the same columns' base values, the plain copy)
//! and `resolution_vs_copy` = `copy_s / resolve_s` (1.0 = resolving is as fast as copying).
//! The minimum, not the mean, because on a shared machine noise only ever adds time.

use lance_conformance_test_support::bench_fixtures as fixtures;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, make_array};
use arrow_buffer::Buffer;
use lance_reference::columnar::resolve_array;
use lance_reference::model::Snapshot;
use lance_reference::scan::{scan, scan_batches};
use lance_reference_io::Dataset;
use lance_reference_io::data_file::DataFileVersion;
use serde_json::json;

/// (directory name, overlay count, density).
const CONFIGS: [(&str, usize, f64); 2] = [("16x10", 16, 0.1), ("4x1", 4, 0.01)];

fn fastest(repeats: usize, mut run: impl FnMut()) -> Duration {
    (0..repeats.max(1))
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn read(root: &Path, version: u64) -> Result<Snapshot, String> {
    let dataset = Dataset::open(root).map_err(|e| e.to_string())?;
    let (snapshot, _) = dataset.read_version(version).map_err(|e| e.to_string())?;
    Ok(snapshot)
}

fn write(dir: &Path, rows: u64, file_version: DataFileVersion) -> Result<(), String> {
    for (name, count, density) in CONFIGS {
        let root = dir.join(name);
        if root.exists() {
            return Err(format!(
                "{} exists; give an empty directory",
                root.display()
            ));
        }
        let (base, overlaid) =
            fixtures::write_dataset_in(&root, rows, count, density, file_version);
        let line = json!({"dataset": name, "path": root, "rows": rows,
            "data_file_version": file_version.name(),
            "overlays": count, "density": density, "base_version": base,
            "overlaid_version": overlaid});
        println!("{line}");
    }
    Ok(())
}

fn time(dir: &Path, repeats: usize) -> Result<(), String> {
    for (name, count, density) in CONFIGS {
        let root = dir.join(name);
        let dataset = Dataset::open(&root).map_err(|e| e.to_string())?;
        let versions = dataset.versions();
        let (Some(&base), Some(&overlaid)) = (versions.first(), versions.last()) else {
            return Err(format!("{}: no versions", root.display()));
        };
        // Sanity: the overlaid version really carries the overlays, the base none.
        let with = read(&root, overlaid)?;
        let without = read(&root, base)?;
        if with.fragments[0].overlays.len() != count || !without.fragments[0].overlays.is_empty() {
            return Err(format!("{}: unexpected overlay counts", root.display()));
        }
        let mut rows = 0;
        // Alternate the two reads so drift on a shared machine hits both alike. A scan is
        // open + `read_version` + `scan_batches` (the reference reader's path); the row scan
        // (`scan`, rows of `Value`s) and the read alone are timed beside it.
        let (mut scan_base, mut scan_overlaid) = (Duration::MAX, Duration::MAX);
        let (mut rows_base, mut rows_overlaid) = (Duration::MAX, Duration::MAX);
        let (mut read_base, mut read_overlaid) = (Duration::MAX, Duration::MAX);
        for _ in 0..repeats.max(1) {
            for (v, best, best_rows, best_read) in [
                (base, &mut scan_base, &mut rows_base, &mut read_base),
                (
                    overlaid,
                    &mut scan_overlaid,
                    &mut rows_overlaid,
                    &mut read_overlaid,
                ),
            ] {
                let mut scanned = Ok(0);
                let t = fastest(1, || {
                    scanned = read(&root, v)
                        .and_then(|s| scan_batches(&s, None).map_err(|e| e.to_string()))
                        .map(|b| b.iter().map(|b| b.num_rows()).sum());
                });
                rows = scanned?;
                *best = (*best).min(t);
                let mut as_rows = Ok(0);
                let t = fastest(1, || {
                    as_rows = read(&root, v)
                        .and_then(|s| scan(&s, None).map_err(|e| e.to_string()))
                        .map(|r| r.len());
                });
                if as_rows? != rows {
                    return Err(format!("{}: row and batch scans differ", root.display()));
                }
                *best_rows = (*best_rows).min(t);
                let t = fastest(1, || {
                    black_box(read(&root, v).map(|s| s.fragments.len()).ok());
                });
                *best_read = (*best_read).min(t);
            }
        }
        let fragment = &with.fragments[0];
        let fields: Vec<_> = with.schema.top_level().map(|f| f.id).collect();
        // Resolution is the Arrow gather of every top-level column (the reference reader's
        // path); its yardstick is a plain copy of the same columns' buffers.
        let resolve = fastest(repeats, || {
            for &f in &fields {
                black_box(
                    resolve_array(&with.schema, fragment, f)
                        .map(|c| c.len())
                        .ok(),
                );
            }
        });
        let copy = fastest(repeats, || {
            for column in &fragment.files[0].columns {
                black_box(deep_copy(column.array()));
            }
        });
        let line = json!({
            "dataset": name, "overlays": count, "density": density, "rows": rows,
            "scan_base_s": scan_base.as_secs_f64(),
            "scan_overlaid_s": scan_overlaid.as_secs_f64(),
            "overlay_read_overhead": scan_overlaid.as_secs_f64() / scan_base.as_secs_f64(),
            "scan_rows_base_s": rows_base.as_secs_f64(),
            "scan_rows_overlaid_s": rows_overlaid.as_secs_f64(),
            "read_base_s": read_base.as_secs_f64(),
            "read_overlaid_s": read_overlaid.as_secs_f64(),
            "resolve_s": resolve.as_secs_f64(),
            "copy_s": copy.as_secs_f64(),
            "resolution_vs_copy": copy.as_secs_f64() / resolve.as_secs_f64(),
        });
        println!("{line}");
    }
    Ok(())
}

/// A copy of `array` with every buffer copied (the plain copy resolution is measured against).
fn deep_copy(array: &ArrayRef) -> ArrayRef {
    let data = array.to_data();
    let buffers = data
        .buffers()
        .iter()
        .map(|b| Buffer::from(b.as_slice()))
        .collect();
    let copied = data.into_builder().buffers(buffers).build();
    copied.map_or_else(|_| array.clone(), make_array)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: u64| {
        args.get(i).map_or(Ok(default), |s| {
            s.parse::<u64>().map_err(|e| format!("{s}: {e}"))
        })
    };
    let result = match (args.first().map(String::as_str), args.get(1)) {
        (Some("write"), Some(dir)) => {
            let file_version = match args.get(3) {
                None => Ok(DataFileVersion::default()),
                Some(name) => DataFileVersion::from_name(name)
                    .ok_or_else(|| format!("data file version {name}: 2.0 or 2.2")),
            };
            number(2, fixtures::ROWS)
                .and_then(|rows| file_version.and_then(|v| write(&PathBuf::from(dir), rows, v)))
        }
        (Some("time"), Some(dir)) => {
            number(2, 5).and_then(|repeats| time(&PathBuf::from(dir), repeats as usize))
        }
        _ => Err("usage: bench_dataset write <dir> [rows] [2.0|2.2] | time <dir> [repeats]".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_dataset: {e}");
            ExitCode::FAILURE
        }
    }
}
