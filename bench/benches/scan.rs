//! A full scan from disk of a 1M-row, four-column dataset by the reference reader
//! (`Dataset::open` + `read_version` + `scan_batches`, the reference reader's path; `*_rows`:
//! the row scan `scan`), with and without overlays on one column: 16 overlays of 10% and 4
//! overlays of 1%. The **overlay read overhead** is the overlaid
//! version's time over the base version's time: the same rows, the same dataset.
//!
//! The datasets are written once, by the reference writer, into a temporary directory.
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use lance_reference::scan::{scan, scan_batches};
use lance_reference_io::Dataset;

use fixtures::{ROWS, percent, write_dataset};
use lance_conformance_test_support::bench_fixtures as fixtures;

fn read_and_scan(root: &Path, version: u64, batches: bool) -> usize {
    let dataset = Dataset::open(root).unwrap();
    let (snapshot, _) = dataset.read_version(version).unwrap();
    if batches {
        let batches = scan_batches(&snapshot, None).unwrap();
        batches.iter().map(|b| b.num_rows()).sum()
    } else {
        scan(&snapshot, None).unwrap().len()
    }
}

fn full_scan(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("scan_from_disk_1m");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .sampling_mode(SamplingMode::Flat)
        .throughput(Throughput::Elements(ROWS));
    for (count, density) in [(16, 0.1), (4, 0.01)] {
        let name = format!("{count}x{}", percent(density));
        let root = dir.path().join(&name);
        let mut versions = None;
        for (label, overlaid, batches) in [
            ("base", false, true),
            ("overlaid", true, true),
            ("base_rows", false, false),
            ("overlaid_rows", true, false),
        ] {
            group.bench_function(BenchmarkId::new(&name, label), |b| {
                let (base, with_overlays) =
                    *versions.get_or_insert_with(|| write_dataset(&root, ROWS, count, density));
                let version = if overlaid { with_overlays } else { base };
                b.iter(|| black_box(read_and_scan(&root, version, batches)))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, full_scan);
criterion_main!(benches);
