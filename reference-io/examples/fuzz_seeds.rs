//! Writes seed inputs for the cargo-fuzz targets (`fuzz/`): bytes this crate writes (bitmaps,
//! deletion files, data files, lineage sequences, manifests) and the golden files found under
//! the given directories, and the files of the worked example written as a dataset, one
//! directory per target.
//!
//! Usage: `fuzz_seeds <out-dir> [--small] [<golden-dir> | <origin>=<curated-dir>...]`. Golden
//! files are classified by
//! name: `*.lance` -> `data_file`; `*.bin` -> `coverage_bitmap` and `deletion_file`;
//! `*.arrow` -> `deletion_file`; `*.manifest` -> `manifest`; `expected/*.json` -> `testee_response`; `lance14_samples.json` ->
//! `lineage_sequence` (its `hex` fields). Identical inputs are written once. `--small` keeps only inputs of at most
//! 2 KiB, at most 16 per target and 8 per origin: the curated set committed under `fuzz/seeds/`. Output names are stable
//! (`<origin>-<name>`), so re-running is idempotent. Files of a curated directory
//! (`<origin>=<dir>`, for example `lance=fuzz/lance-written`, the data files Lance 14 writes in
//! versions 2.1 and 2.2) are named `<origin>-<name>` and `--small` keeps them all: their
//! generator already chose them and bounded their size.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use lance_reference::lineage::{RowDatasetVersionSequence, RowIdSequence};
use lance_reference::model::{DataType, Field, Value};
use lance_reference::proto::lance::table as pb;
use lance_reference_io::data_file::{ColumnData, write_data_file};
use lance_reference_io::deletion::{DeletionFileType, write_deletion_file};
use lance_reference_io::roaring_format::{write_bitmap, write_bitmap_without_runs};
use lance_reference_io::{WriteOptions, write_version};
use prost::Message;
use roaring::RoaringBitmap;

const SMALL_BYTES: usize = 2048;
const SMALL_COUNT: usize = 16;

/// target -> (name -> bytes)
type Seeds = BTreeMap<&'static str, BTreeMap<String, Vec<u8>>>;

fn add(seeds: &mut Seeds, target: &'static str, name: impl Into<String>, bytes: Vec<u8>) {
    seeds.entry(target).or_default().insert(name.into(), bytes);
}

/// The `deletion_file` target's header: form bit, `physical_rows`.
fn deletion_input(form: DeletionFileType, physical_rows: u32, file: &[u8]) -> Vec<u8> {
    let mut out = vec![u8::from(form == DeletionFileType::Bitmap)];
    out.extend(physical_rows.to_le_bytes());
    out.extend(file);
    out
}

fn bitmaps() -> Vec<(&'static str, RoaringBitmap)> {
    vec![
        ("empty", RoaringBitmap::new()),
        ("one", [7].into_iter().collect()),
        ("array", [1, 5, 9, 200, 65_535].into_iter().collect()),
        ("run", (10..500).collect()),
        ("bitset", (0..10_000).step_by(2).collect()),
        (
            "three_containers",
            [3, 70_000, 140_000, 140_001].into_iter().collect(),
        ),
        ("five_containers", (0..5u32).map(|k| k << 16).collect()),
        ("high", [u32::MAX - 1, u32::MAX].into_iter().collect()),
    ]
}

fn synthesized(seeds: &mut Seeds) {
    for (name, bitmap) in bitmaps() {
        add(
            seeds,
            "coverage_bitmap",
            format!("ours-{name}"),
            write_bitmap(&bitmap),
        );
        add(
            seeds,
            "coverage_bitmap",
            format!("ours-{name}-noruns"),
            write_bitmap_without_runs(&bitmap),
        );
        let rows = bitmap.max().map_or(0, |m| m.saturating_add(1));
        for form in [DeletionFileType::ArrowArray, DeletionFileType::Bitmap] {
            let file = write_deletion_file(&bitmap, form);
            add(
                seeds,
                "deletion_file",
                format!("ours-{name}.{}", form.suffix()),
                deletion_input(form, rows, &file),
            );
        }
    }

    let columns = [
        (
            "int32",
            DataType::Int32,
            vec![Value::Int32(1), Value::Null, Value::Int32(-3)],
        ),
        (
            "int64",
            DataType::Int64,
            vec![Value::Int64(1 << 40), Value::Null, Value::Int64(0)],
        ),
        (
            "uint64",
            DataType::UInt64,
            vec![Value::UInt64(5), Value::UInt64(6), Value::UInt64(7)],
        ),
        (
            "bool",
            DataType::Bool,
            vec![Value::Bool(true), Value::Null, Value::Bool(false)],
        ),
        (
            "float",
            DataType::Float32,
            vec![Value::Float32(1.5), Value::Null, Value::Float32(-0.0)],
        ),
        (
            "double",
            DataType::Float64,
            vec![Value::Float64(2.5), Value::Float64(f64::NAN), Value::Null],
        ),
        (
            "utf8",
            DataType::Utf8,
            vec![
                Value::Utf8("a".into()),
                Value::Null,
                Value::Utf8(String::new()),
            ],
        ),
        (
            "vector",
            DataType::FixedSizeList { dimension: 2 },
            vec![
                Value::Vector(vec![Some(1.0), None]),
                Value::Null,
                Value::Vector(vec![Some(0.0), Some(2.0)]),
            ],
        ),
    ];
    for (name, data_type, values) in columns {
        let column = ColumnData::new(Field::new(0, "c", data_type), values);
        if let Ok(bytes) = write_data_file(&[column]) {
            add(seeds, "data_file", format!("ours-{name}"), bytes);
        }
    }
    let nested = [
        ColumnData::new(
            Field::new(0, "s", DataType::Struct),
            vec![Value::Struct(vec![]); 2],
        ),
        ColumnData::new(
            Field::child(1, 0, "x", DataType::Int32),
            vec![Value::Int32(4), Value::Null],
        ),
        ColumnData::new(
            Field {
                id: -3,
                parent_id: -1,
                name: "_rowid".into(),
                data_type: DataType::UInt64,
                nullable: false,
            },
            vec![Value::UInt64(0), Value::UInt64(1)],
        ),
    ];
    if let Ok(bytes) = write_data_file(&nested) {
        add(seeds, "data_file", "ours-struct-and-rowid", bytes);
    }

    let lists: [(&str, Vec<u64>); 6] = [
        ("range", (0..10).collect()),
        ("holes", (0..100).filter(|v| v % 17 != 3).collect()),
        ("bitmap", (0..200).filter(|v| v % 3 == 0).collect()),
        ("sorted", vec![1, 1_000, 1_000_000, 1 << 40]),
        ("unsorted", vec![5, 3, 9, 3]),
        ("max", vec![u64::MAX - 1, u64::MAX]),
    ];
    for (name, values) in &lists {
        add(
            seeds,
            "lineage_sequence",
            format!("ours-rowids-{name}"),
            RowIdSequence::from_values(values).encode(),
        );
        add(
            seeds,
            "lineage_sequence",
            format!("ours-versions-{name}"),
            RowDatasetVersionSequence::from_versions(values).encode(),
        );
    }

    let manifest = pb::Manifest {
        version: 3,
        next_row_id: 4,
        reader_feature_flags: 2,
        writer_feature_flags: 2,
        max_fragment_id: Some(0),
        config: [("lance.auto_cleanup.interval".to_string(), "20".to_string())]
            .into_iter()
            .collect(),
        ..Default::default()
    };
    add(seeds, "manifest", "ours-minimal", manifest.encode_to_vec());

    // Structured targets: a few fixed byte strings (libFuzzer grows them from there).
    for target in ["lineage_values", "resolve_differential", "history"] {
        for (i, len) in [16usize, 64, 256].into_iter().enumerate() {
            let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (i as u64);
            let bytes = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x >> 24) as u8
                })
                .collect();
            add(&mut *seeds, target, format!("fixed-{len}"), bytes);
        }
    }
}

/// Every version of the specification's worked example, written as a dataset: manifests,
/// data and overlay files, deletion files.
fn worked_example(seeds: &mut Seeds) {
    let dir = tempfile::tempdir().unwrap();
    for snapshot in lance_reference::worked_example::versions().unwrap() {
        write_version(dir.path(), &snapshot, &WriteOptions::default()).unwrap();
    }
    goldens(seeds, dir.path(), "worked");
}

fn golden_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            golden_files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn goldens(seeds: &mut Seeds, dir: &Path, origin: &str) {
    let mut files = Vec::new();
    golden_files(dir, &mut files);
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let name = path
            .strip_prefix(dir)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace(['/', '\\'], "_");
        let name = format!("{origin}-{name}");
        match path.extension().and_then(|e| e.to_str()) {
            Some("lance") => add(seeds, "data_file", name, bytes),
            Some("manifest") => add(seeds, "manifest", name, bytes),
            Some("bin") => {
                add(
                    seeds,
                    "deletion_file",
                    name.clone(),
                    deletion_input(DeletionFileType::Bitmap, u32::MAX, &bytes),
                );
                add(seeds, "coverage_bitmap", name, bytes);
            }
            Some("arrow") => add(
                seeds,
                "deletion_file",
                name,
                deletion_input(DeletionFileType::ArrowArray, u32::MAX, &bytes),
            ),
            Some("json") if path.ends_with("lance14_samples.json") => samples(seeds, &bytes),
            Some("json") if path.parent().is_some_and(|p| p.ends_with("expected")) => {
                if let Some(line) = response_line(&bytes) {
                    add(seeds, "testee_response", name, line);
                }
            }
            _ => {}
        }
    }
}

/// An expected scan (`expected/v<N>.json`) as a testee's response line: `{"seq", "result"}`.
/// A file in the column form (`rows` an object, past 100 rows) is no scan answer: none.
fn response_line(json: &[u8]) -> Option<Vec<u8>> {
    let mut doc: serde_json::Value = serde_json::from_slice(json).ok()?;
    let object = doc.as_object_mut()?;
    if !object.get("rows")?.is_array() {
        return None;
    }
    object.remove("case");
    object.remove("version");
    let response = serde_json::json!({"seq": 3, "result": doc});
    let mut line = serde_json::to_vec(&response).ok()?;
    line.push(b'\n');
    Some(line)
}

/// The other answers and refusals a testee sends, one line each.
fn protocol_lines(seeds: &mut Seeds) {
    let lines = [
        (
            "start",
            r#"{"seq":1,"result":{"protocol":1,"implementation":{"name":"t","version":"0"},"capabilities":["scan","query"]}}"#,
        ),
        ("open", r#"{"seq":2,"result":{"version":3}}"#),
        (
            "error",
            r#"{"seq":2,"error":{"class":"invalid_data","code":"bad_bitmap","message":"x"}}"#,
        ),
        (
            "unsupported",
            r#"{"seq":4,"unsupported":{"reason":"no vectors","issue_url":"u"}}"#,
        ),
        (
            "errored",
            r#"{"seq":5,"errored":{"message":"boom","detail":"d"}}"#,
        ),
        (
            "exclusion",
            r#"{"seq":6,"result":{"exclusion_sets":[{"index":"i","fragment":0,"offsets":[1,3]}]}}"#,
        ),
        (
            "query",
            r#"{"seq":7,"result":{"kind":"vector","final":[{"fragment":0,"offset":1,"distance":{"type":"float32","value":"0.5"}}]}}"#,
        ),
        (
            "cells",
            r#"{"seq":8,"result":{"columns":[{"name":"v","type":"fixed_size_list<float32,2>"}],"rows":[{"fragment":0,"offset":0,"_rowid":{"type":"uint64","value":"18446744073709551615"},"_row_created_at_version":{"type":"uint64","value":"1"},"_row_last_updated_at_version":{"type":"uint64","value":"2"},"values":[{"type":"fixed_size_list<float32,2>","value":["NaN",null]},{"type":"float64","value":"-0.0"},{"type":"int64","value":"-9223372036854775808"},{"type":"struct","value":{"a":null}}]}]}}"#,
        ),
    ];
    for (name, line) in lines {
        add(
            seeds,
            "testee_response",
            format!("ours-{name}"),
            format!("{line}\n").into_bytes(),
        );
    }
}

/// The `hex` of every sample in `lance14_samples.json`.
fn samples(seeds: &mut Seeds, json: &[u8]) {
    let doc: serde_json::Value = serde_json::from_slice(json).unwrap();
    for sample in doc["samples"].as_array().into_iter().flatten() {
        let (Some(name), Some(hex)) = (sample["name"].as_str(), sample["hex"].as_str()) else {
            continue;
        };
        let bytes = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        add(
            seeds,
            "lineage_sequence",
            format!("lance14-{}", name.replace('/', "_")),
            bytes,
        );
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((out, rest)) = args.split_first() else {
        eprintln!("usage: fuzz_seeds <out-dir> [--small] [<golden-dir>...]");
        return ExitCode::FAILURE;
    };
    let small = rest.iter().any(|a| a == "--small");
    let mut seeds = Seeds::new();
    synthesized(&mut seeds);
    let mut curated: Vec<&str> = Vec::new();
    for arg in rest.iter().filter(|a| *a != "--small") {
        match arg.split_once('=') {
            Some((origin, dir)) => {
                goldens(&mut seeds, Path::new(dir), origin);
                curated.push(origin);
            }
            None => goldens(&mut seeds, Path::new(arg), "golden"),
        }
    }
    worked_example(&mut seeds);
    protocol_lines(&mut seeds);
    for (target, files) in &seeds {
        let dir = Path::new(out).join(target);
        std::fs::create_dir_all(&dir).unwrap();
        let mut written: Vec<&[u8]> = Vec::new();
        let mut per_origin: BTreeMap<&str, usize> = BTreeMap::new();
        let mut chosen = 0; // inputs kept by the --small rules (curated ones not counted)
        for (name, bytes) in files {
            if written.contains(&bytes.as_slice()) {
                continue; // same bytes under another name
            }
            let origin = name.split('-').next().unwrap_or_default();
            if curated.contains(&origin) {
                std::fs::write(dir.join(name), bytes).unwrap();
                written.push(bytes);
                continue;
            }
            let taken = per_origin.entry(origin).or_default();
            if small
                && (bytes.len() > SMALL_BYTES || chosen == SMALL_COUNT || *taken == SMALL_COUNT / 2)
            {
                continue;
            }
            std::fs::write(dir.join(name), bytes).unwrap();
            written.push(bytes);
            *taken += 1;
            chosen += 1;
        }
        let written = written.len();
        println!("{target}: {written} seeds");
    }
    ExitCode::SUCCESS
}
