//! The decompression kernels of data files 2.1/2.2 on 1M values each (`Throughput` in
//! decoded bytes): FastLanes inline unpacking (1024 chunks of 1024 64-bit values packed with 12
//! bits, as Lance stores a 1M-row int64 column of small values), out-of-line unpacking (16-bit
//! definition levels packed with 1 bit), FSST (a 255-symbol table, codes of 1..8-byte
//! symbols, 1M codes in chunks of 100 strings) and byte-stream-split (32-bit values in chunks of
//! 1024, as Lance splits f32). Every packed bit pattern is valid data, so the inputs are
//! deterministic pseudo-random bytes.
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lance_reference_io::data_file::compression::{byte_stream_split, fastlanes, fsst};

const VALUES: usize = 1 << 20;

fn bytes(n: usize, mut state: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn kernels(c: &mut Criterion) {
    let mut group = c.benchmark_group("kernels_1m");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));

    // Inline: one mini-block chunk per 1024 values, each an 8-byte width word and 12 × 128 bytes.
    let chunk: Vec<u8> = [12u64.to_le_bytes().to_vec(), bytes(12 * 128, 1)].concat();
    group.throughput(Throughput::Bytes((VALUES * 8) as u64));
    group.bench_function("fastlanes_inline_u64_w12", |b| {
        b.iter(|| {
            let mut total = 0;
            for _ in 0..VALUES / 1024 {
                total += fastlanes::unpack_inline(64, black_box(&chunk), 1024)
                    .unwrap()
                    .len();
            }
            total
        })
    });

    // Out of line: definition levels, 1M u16 packed with 1 bit, one buffer.
    let levels = bytes(VALUES / 8, 2);
    group.throughput(Throughput::Bytes((VALUES * 2) as u64));
    group.bench_function("fastlanes_out_of_line_u16_w1", |b| {
        b.iter(|| fastlanes::unpack_out_of_line(16, 1, black_box(&levels), VALUES).unwrap())
    });

    // FSST: 255 symbols of 1..=8 bytes, codes below 255 (no escapes).
    let mut table = vec![0u8; fsst::SYMBOL_TABLE_LEN];
    table[0] = 255;
    table[3] = 1;
    table[4..8].copy_from_slice(&fsst::MAGIC);
    table[8..8 + 255 * 8].copy_from_slice(&bytes(255 * 8, 3));
    for code in 0..255 {
        table[8 + 255 * 8 + code] = 1 + (code % 8) as u8;
    }
    let codes: Vec<u8> = bytes(VALUES, 4).into_iter().map(|b| b % 255).collect();
    let strings_per_chunk = 100;
    let chunk_codes = 1000;
    let offsets: Vec<u64> = (0..=strings_per_chunk)
        .map(|i| (i * chunk_codes / strings_per_chunk) as u64)
        .collect();
    let decoded: usize = codes
        .chunks(chunk_codes)
        .map(|c| fsst::decompress(&table, &offsets[..], c).map_or(0, |d| d.1.len()))
        .sum();
    group.throughput(Throughput::Bytes(decoded as u64));
    group.bench_function("fsst_255_symbols", |b| {
        b.iter(|| {
            let mut total = 0;
            for c in codes.chunks_exact(chunk_codes) {
                total += fsst::decompress(&table, black_box(&offsets), c)
                    .unwrap()
                    .1
                    .len();
            }
            total
        })
    });

    // Byte-stream-split: f32 chunks of 1024 values.
    let split = bytes(4 * 1024, 5);
    group.throughput(Throughput::Bytes((VALUES * 4) as u64));
    group.bench_function("byte_stream_split_f32", |b| {
        b.iter(|| {
            let mut total = 0;
            for _ in 0..VALUES / 1024 {
                total += byte_stream_split::decode(32, black_box(&split), 1024)
                    .unwrap()
                    .len();
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, kernels);
criterion_main!(benches);
