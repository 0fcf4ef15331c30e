//! Resolving one column of a 1M-row fragment under 1, 4, 16 and 64 overlays at coverage
//! densities 0.1%, 1%, 10% and 50%, dense and sparse, next to the baseline of a plain copy of
//! the same column (`Vec<Value>::clone`). "Resolution as a fraction of a plain copy" is
//! `plain_copy time / resolve time` (1.0 = as fast as copying).
//!
//! Group `resolve_array_1m` does the same for the Arrow gather (`columnar::resolve_array`) at
//! the headline configurations, against `arrow_plain_copy` (a copy of the column's Arrow form:
//! one memcpy of its values), and group `resolve_array_utf8_1m` for a text column (the same
//! values as decimal text) against a copy of that column's offsets and bytes.
//!
//! By default sparse coverage runs for a subset of the matrix; `LANCE_BENCH_FULL=1 cargo bench
//! -p lance-conformance-bench --features criterion --bench resolve` runs every (count, density, form).

#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Duration;

use arrow_array::{Array, Int64Array, StringArray};
use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group,
    criterion_main,
};
use lance_reference::columnar::resolve_array;
use lance_reference::resolve::resolve_column;

use fixtures::{
    Form, ROWS, VALUE, base_fragment, overlaid_fragment, percent, schema, utf8_schema,
    with_utf8_value,
};
use lance_conformance_test_support::bench_fixtures as fixtures;

const COUNTS: [usize; 4] = [1, 4, 16, 64];
const DENSITIES: [f64; 4] = [0.001, 0.01, 0.1, 0.5];

fn full_matrix() -> bool {
    std::env::var_os("LANCE_BENCH_FULL").is_some_and(|v| v != "0")
}

/// The (count, density, form) cells to run.
fn matrix() -> Vec<(usize, f64, Form)> {
    let mut cells = Vec::new();
    for count in COUNTS {
        for density in DENSITIES {
            cells.push((count, density, Form::Dense));
            let headline = (count == 4 && density == 0.01) || (count == 16 && density == 0.1);
            if full_matrix() || headline || density == 0.1 {
                cells.push((count, density, Form::Sparse));
            }
        }
    }
    cells
}

/// A group of 1M-row resolutions, ten flat samples each.
fn group_of<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sampling_mode(SamplingMode::Flat)
        .throughput(Throughput::Elements(ROWS));
    group
}

fn resolve(c: &mut Criterion) {
    let schema = schema();
    let mut group = group_of(c, "resolve_1m");

    let base = base_fragment(ROWS);
    let column = base.files[0].columns[VALUE as usize].clone();
    group.bench_function("plain_copy", |b| b.iter(|| black_box(column.clone())));
    group.bench_function("no_overlays", |b| {
        b.iter(|| black_box(resolve_column(&schema, &base, VALUE).unwrap()))
    });
    drop(base);

    for (count, density, form) in matrix() {
        let id = BenchmarkId::new(form.name(), format!("{count}x{}", percent(density)));
        // Built on first use, so a filtered run builds only what it measures.
        let mut fragment = None;
        group.bench_function(id, |b| {
            let fragment =
                fragment.get_or_insert_with(|| overlaid_fragment(ROWS, count, density, form));
            b.iter(|| black_box(resolve_column(&schema, fragment, VALUE).unwrap()))
        });
    }
    group.finish();
}

fn resolve_arrow(c: &mut Criterion) {
    let schema = schema();
    let mut group = group_of(c, "resolve_array_1m");
    let base = base_fragment(ROWS);
    let array = resolve_array(&schema, &base, VALUE).unwrap();
    let array = array.as_any().downcast_ref::<Int64Array>().unwrap().clone();
    group.bench_function("arrow_plain_copy", |b| {
        b.iter(|| {
            black_box(Int64Array::new(
                array.values().to_vec().into(),
                array.nulls().cloned(),
            ))
        })
    });
    group.bench_function("no_overlays", |b| {
        b.iter(|| black_box(resolve_array(&schema, &base, VALUE).unwrap()))
    });
    drop(base);
    for (count, density, form) in [(4, 0.01, Form::Dense), (16, 0.1, Form::Dense)] {
        let id = BenchmarkId::new(form.name(), format!("{count}x{}", percent(density)));
        let mut fragment = None;
        group.bench_function(id, |b| {
            let fragment =
                fragment.get_or_insert_with(|| overlaid_fragment(ROWS, count, density, form));
            b.iter(|| black_box(resolve_array(&schema, fragment, VALUE).unwrap()))
        });
    }
    group.finish();
}

/// The Arrow gather of a text column: `value` as the decimal text of the same int64 values,
/// under the same overlays, against a copy of the column's offsets and bytes.
fn resolve_arrow_utf8(c: &mut Criterion) {
    let schema = utf8_schema();
    let mut group = group_of(c, "resolve_array_utf8_1m");
    let base = with_utf8_value(base_fragment(ROWS));
    let array = resolve_array(&schema, &base, VALUE).unwrap();
    let text = array
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap()
        .clone();
    group.bench_function("arrow_plain_copy", |b| {
        b.iter(|| {
            black_box((
                text.value_offsets().to_vec(),
                text.value_data().to_vec(),
                text.nulls().cloned(),
            ))
        })
    });
    group.bench_function("no_overlays", |b| {
        b.iter(|| black_box(resolve_array(&schema, &base, VALUE).unwrap()))
    });
    drop(base);
    for (count, density, form) in [(4, 0.01, Form::Dense), (16, 0.1, Form::Dense)] {
        let id = BenchmarkId::new(form.name(), format!("{count}x{}", percent(density)));
        let mut fragment = None;
        group.bench_function(id, |b| {
            let fragment = fragment.get_or_insert_with(|| {
                with_utf8_value(overlaid_fragment(ROWS, count, density, form))
            });
            b.iter(|| black_box(resolve_array(&schema, fragment, VALUE).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, resolve, resolve_arrow, resolve_arrow_utf8);
criterion_main!(benches);
