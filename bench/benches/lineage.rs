//! Row-id and version sequences of 1M rows: building and encoding them (`from_values` /
//! `from_versions` + `encode`), decoding them back to one value per row (`decode` + `values` /
//! `versions`), for sequential, 30%-deleted and shuffled shapes; and the placement decision
//! (inline or spilled) for one sequence and for a compaction's outputs.
//!
//! Each shape's encoded size is printed once to stderr (`encoded ...`), for BENCHMARKS.md.
#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use lance_reference::lineage::placement::{
    EncodedLengths, INLINE_MAX_BYTES_KEY, Origin, SPILL_KEY, SequenceKind, SpillConfig, placement,
    plan_compaction,
};
use lance_reference::lineage::{RowDatasetVersionSequence, RowIdSequence};

use fixtures::{ROWS, Shape};
use lance_conformance_test_support::bench_fixtures as fixtures;

fn quick(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sampling_mode(SamplingMode::Flat);
}

fn row_ids(c: &mut Criterion) {
    let mut group = c.benchmark_group("row_ids_1m");
    quick(&mut group);
    group.throughput(Throughput::Elements(ROWS));
    for shape in Shape::ALL {
        let ids = shape.row_ids(ROWS);
        let bytes = RowIdSequence::from_values(&ids).encode();
        eprintln!("encoded row ids {}: {} bytes", shape.name(), bytes.len());
        group.bench_function(BenchmarkId::new("encode", shape.name()), |b| {
            b.iter(|| black_box(RowIdSequence::from_values(black_box(&ids)).encode()))
        });
        group.bench_function(BenchmarkId::new("decode", shape.name()), |b| {
            b.iter(|| {
                let sequence = RowIdSequence::decode(black_box(&bytes)).unwrap();
                black_box(sequence.values(ROWS).unwrap())
            })
        });
    }
    group.finish();
}

fn versions(c: &mut Criterion) {
    let mut group = c.benchmark_group("versions_1m");
    quick(&mut group);
    group.throughput(Throughput::Elements(ROWS));
    for shape in Shape::ALL {
        let versions = shape.versions(ROWS);
        let bytes = RowDatasetVersionSequence::from_versions(&versions).encode();
        eprintln!("encoded versions {}: {} bytes", shape.name(), bytes.len());
        group.bench_function(BenchmarkId::new("encode", shape.name()), |b| {
            b.iter(|| {
                black_box(RowDatasetVersionSequence::from_versions(black_box(&versions)).encode())
            })
        });
        group.bench_function(BenchmarkId::new("decode", shape.name()), |b| {
            b.iter(|| {
                let sequence = RowDatasetVersionSequence::decode(black_box(&bytes)).unwrap();
                black_box(sequence.versions(ROWS).unwrap())
            })
        });
    }
    group.finish();
}

fn placement_decision(c: &mut Criterion) {
    let mut group = c.benchmark_group("placement");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(500));
    let table_config: BTreeMap<String, String> =
        [(SPILL_KEY, "true"), (INLINE_MAX_BYTES_KEY, "204800")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    let config = SpillConfig::from_table_config(&table_config).unwrap();
    group.bench_function("one_sequence", |b| {
        b.iter(|| {
            black_box(placement(
                black_box(SequenceKind::RowIds),
                black_box(Origin::CarriedOver),
                black_box(300_000),
                black_box(&config),
            ))
        })
    });
    group.bench_function("from_table_config", |b| {
        b.iter(|| black_box(SpillConfig::from_table_config(black_box(&table_config)).unwrap()))
    });
    // A compaction into 100 outputs where every other output's row ids are over budget, so
    // the plan is per fragment (the slower arm).
    let outputs: Vec<EncodedLengths> = (0..100)
        .map(|i| EncodedLengths {
            row_ids: if i % 2 == 0 { 300_000 } else { 100 },
            created_at: 20,
            last_updated_at: 20,
        })
        .collect();
    group.throughput(Throughput::Elements(outputs.len() as u64));
    group.bench_function("plan_compaction_100_outputs", |b| {
        b.iter(|| black_box(plan_compaction(black_box(&config), black_box(&outputs))))
    });
    // The whole decision for a carried-over 1M-row shuffled id sequence: encode it to learn
    // its inline length, then place it.
    let ids = Shape::Shuffled.row_ids(ROWS);
    group.throughput(Throughput::Elements(ROWS));
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    group.bench_function("encode_and_place_1m_shuffled_ids", |b| {
        b.iter(|| {
            let len = RowIdSequence::from_values(black_box(&ids)).encode().len();
            black_box(placement(
                SequenceKind::RowIds,
                Origin::CarriedOver,
                len,
                &config,
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, row_ids, versions, placement_decision);
criterion_main!(benches);
