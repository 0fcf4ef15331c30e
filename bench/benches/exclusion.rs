//! Exclusion sets over 100 overlays of a 1M-row fragment: the union of the coverage of every
//! overlay newer than the index on a field the index holds.
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use lance_reference::exclusion::exclusion_set;
use lance_reference::model::{Index, IndexKind};

use fixtures::{Form, ROWS, VALUE, WEIGHT, overlaid_fragment, percent, schema};
use lance_conformance_test_support::bench_fixtures as fixtures;

const OVERLAYS: usize = 100;

fn index_on(field: i32, dataset_version: u64) -> Index {
    Index {
        name: format!("idx_{field}"),
        fields: vec![field],
        dataset_version,
        fragment_bitmap: Some([0u32].into_iter().collect()),
        kind: IndexKind::BTree,
        entries: Vec::new(),
    }
}

fn exclusion(c: &mut Criterion) {
    let schema = schema();
    let mut group = c.benchmark_group("exclusion_100_overlays");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .throughput(Throughput::Elements(OVERLAYS as u64));
    // Overlays are committed at versions 2..=101, so an index at version 51 is older than the
    // last 50 of them, and one at version 1 is older than all 100.
    for density in [0.001, 0.01, 0.1] {
        let mut fragment = None;
        for (newer, dataset_version) in [(100, 1), (50, 51)] {
            for (what, field) in [("value", VALUE), ("weight", WEIGHT)] {
                let id = BenchmarkId::new(
                    format!("sparse_{}", percent(density)),
                    format!("index_on_{what}/{newer}_newer"),
                );
                let index = index_on(field, dataset_version);
                group.bench_function(id, |b| {
                    let fragment = fragment.get_or_insert_with(|| {
                        overlaid_fragment(ROWS, OVERLAYS, density, Form::Sparse)
                    });
                    b.iter(|| black_box(exclusion_set(&schema, &index, fragment)))
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, exclusion);
criterion_main!(benches);
