//! Deterministic inputs for the benchmarks: a four-column table, overlays of a chosen count,
//! coverage density and form, and id / version sequences of a chosen shape.
//!
//! Invariant: the same arguments always build the same values (a seeded splitmix64, no clock,
//! no thread-local randomness), so two runs, or the bench and the side-by-side example,
//! measure identical work.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, Float64Array, Int64Array, StringArray};
use lance_reference::flags::required_flags;
use lance_reference::model::{
    Column, Coverage, DataFile, DataType, Field, FieldId, Fragment, Overlay, Schema, Snapshot,
};
use lance_reference_io::data_file::DataFileVersion;
use lance_reference_io::write::name_files_by_content;
use lance_reference_io::{WriteOptions, write_version};
use roaring::RoaringBitmap;

/// Rows of the benchmark fragment.
pub const ROWS: u64 = 1_000_000;

/// `key` (int64, never overlaid), `value` (int64, the column overlays update), `score`
/// (float64, updated by sparse overlays elsewhere), `weight` (float64, never overlaid).
pub const KEY: FieldId = 0;
/// The column the resolution benches read.
pub const VALUE: FieldId = 1;
/// The second column a sparse overlay carries, over different offsets.
pub const SCORE: FieldId = 2;
/// A column no overlay touches.
pub const WEIGHT: FieldId = 3;

/// The four-column schema.
pub fn schema() -> Schema {
    Schema::new(vec![
        Field::new(KEY, "key", DataType::Int64),
        Field::new(VALUE, "value", DataType::Int64),
        Field::new(SCORE, "score", DataType::Float64),
        Field::new(WEIGHT, "weight", DataType::Float64),
    ])
    .expect("valid schema")
}

/// splitmix64: small, seedable, good enough to scatter offsets.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Each offset below `rows` independently with probability `density`: scattered coverage,
/// the worst case for a bitmap (no runs).
pub fn scattered(rows: u64, density: f64, rng: &mut Rng) -> RoaringBitmap {
    (0..rows as u32).filter(|_| rng.chance(density)).collect()
}

/// A fragment of `rows` rows in one base file holding the four columns.
pub fn base_fragment(rows: u64) -> Fragment {
    let n = rows as i64;
    Fragment::new(
        0,
        "base.lance",
        vec![KEY, VALUE, SCORE, WEIGHT],
        vec![
            Column::new(Arc::new(Int64Array::from_iter_values(0..n))),
            Column::new(Arc::new(Int64Array::from_iter_values(
                (0..n).map(|i| i * 7),
            ))),
            Column::new(Arc::new(Float64Array::from_iter_values(
                (0..n).map(|i| i as f64 * 0.5),
            ))),
            Column::new(Arc::new(Float64Array::from_iter_values(
                (0..n).map(|i| i as f64 * 0.25),
            ))),
        ],
    )
}

/// How an overlay's coverage is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// One shared bitmap; the overlay carries `value` only (a plain `UPDATE ... SET value`).
    Dense,
    /// One bitmap per field; the overlay carries `value` and `score` over independent offsets
    /// (a MERGE whose branches update different columns).
    Sparse,
}

impl Form {
    pub fn name(self) -> &'static str {
        match self {
            Form::Dense => "dense",
            Form::Sparse => "sparse",
        }
    }
}

/// One overlay over `rows` rows committed at `committed_version`, covering each offset of
/// `value` with probability `density` (and, when sparse, each offset of `score` likewise).
pub fn overlay(
    rows: u64,
    density: f64,
    form: Form,
    committed_version: u64,
    rng: &mut Rng,
) -> Overlay {
    let covered = scattered(rows, density, rng);
    let stamp = committed_version as i64 * 1_000_000_000;
    let values = Column::new(Arc::new(Int64Array::from_iter_values(
        covered.iter().map(|o| stamp + i64::from(o)),
    )));
    match form {
        Form::Dense => Overlay {
            file: DataFile {
                path: format!("overlay-{committed_version}.lance"),
                fields: vec![VALUE],
                columns: vec![values],
            },
            coverage: Coverage::Dense(covered),
            committed_version,
        },
        Form::Sparse => {
            let scores = scattered(rows, density, rng);
            let score_values = Column::new(Arc::new(Float64Array::from_iter_values(
                scores
                    .iter()
                    .map(|o| committed_version as f64 + f64::from(o)),
            )));
            Overlay {
                file: DataFile {
                    path: format!("overlay-{committed_version}.lance"),
                    fields: vec![VALUE, SCORE],
                    columns: vec![values, score_values],
                },
                coverage: Coverage::Sparse(vec![covered, scores]),
                committed_version,
            }
        }
    }
}

/// The base fragment with `count` overlays committed at versions `2..=count+1`.
pub fn overlaid_fragment(rows: u64, count: usize, density: f64, form: Form) -> Fragment {
    let mut fragment = base_fragment(rows);
    let mut rng = Rng::new(0x5eed ^ ((count as u64) << 32) ^ density.to_bits());
    fragment.overlays = (0..count)
        .map(|i| overlay(rows, density, form, i as u64 + 2, &mut rng))
        .collect();
    fragment
}

/// The four-column schema with `value` as text (the text resolution bench).
pub fn utf8_schema() -> Schema {
    Schema::new(vec![
        Field::new(KEY, "key", DataType::Int64),
        Field::new(VALUE, "value", DataType::Utf8),
        Field::new(SCORE, "score", DataType::Float64),
        Field::new(WEIGHT, "weight", DataType::Float64),
    ])
    .expect("valid schema")
}

/// `fragment` with every `value` column (the base file's and each overlay's) as text: each
/// int64 as its decimal digits (7 to 14 bytes for the base and overlay values), same
/// coverage, so text and int64 resolution do the same work but for what a value is.
pub fn with_utf8_value(mut fragment: Fragment) -> Fragment {
    let as_text = |column: &Column| {
        let ints = column
            .array()
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("value is int64");
        Column::new(Arc::new(StringArray::from_iter(
            ints.iter().map(|v| v.map(|v| v.to_string())),
        )))
    };
    let files = fragment
        .files
        .iter_mut()
        .map(|f| (&f.fields, &mut f.columns));
    let overlays = fragment
        .overlays
        .iter_mut()
        .map(|o| (&o.file.fields, &mut o.file.columns));
    for (fields, columns) in files.chain(overlays) {
        for (field, column) in fields.iter().zip(columns.iter_mut()) {
            if *field == VALUE {
                *column = as_text(column);
            }
        }
    }
    fragment
}

/// The two versions of a benchmark dataset compared by the scan benches: version 1 holds the
/// base fragment alone, version `count + 1` the same rows under `count` dense overlays on
/// `value` of `density` each (committed at versions `2..=count+1`; the versions between are
/// not written). Files are named by content and flag words are the ones the content needs.
pub fn dataset_versions(rows: u64, count: usize, density: f64) -> [Snapshot; 2] {
    let finish = |version: u64, mut fragment: Fragment| {
        fragment.files[0].path.clear();
        for overlay in &mut fragment.overlays {
            overlay.file.path.clear();
        }
        let mut snapshot = Snapshot {
            version,
            schema: schema(),
            fragments: vec![fragment],
            indices: Vec::new(),
            config: BTreeMap::new(),
            stable_row_ids: false,
            next_row_id: 0,
            reader_flags: 0,
            writer_flags: 0,
        };
        name_files_by_content(&mut snapshot).expect("nameable files");
        (snapshot.reader_flags, snapshot.writer_flags) = required_flags(&snapshot);
        snapshot
    };
    [
        finish(1, base_fragment(rows)),
        finish(
            count as u64 + 1,
            overlaid_fragment(rows, count, density, Form::Dense),
        ),
    ]
}

/// Writes [`dataset_versions`] into `root` with the reference writer; returns the two
/// version numbers (base, overlaid).
pub fn write_dataset(root: &Path, rows: u64, count: usize, density: f64) -> (u64, u64) {
    write_dataset_in(root, rows, count, density, DataFileVersion::default())
}

/// [`write_dataset`] with every data file (base and overlays) in data file version `version`.
pub fn write_dataset_in(
    root: &Path,
    rows: u64,
    count: usize,
    density: f64,
    version: DataFileVersion,
) -> (u64, u64) {
    let [base, overlaid] = dataset_versions(rows, count, density);
    let options = WriteOptions {
        data_file_version: version,
        ..WriteOptions::default()
    };
    write_version(root, &base, &options).expect("base version written");
    write_version(root, &overlaid, &options).expect("overlaid version written");
    (base.version, overlaid.version)
}

/// A density as a short label: `0.1%`, `1%`, `10%`, `50%`.
pub fn percent(density: f64) -> String {
    format!("{}%", density * 100.0)
}

/// The shapes of a 1M-id lineage sequence the lineage benches encode and decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `0..n` in order: one fragment as appended.
    Sequential,
    /// Ids in order with 30% removed at random (`n` survivors): after deletes and a compaction.
    Deleted30,
    /// A permutation of `0..n`: rows gathered from everywhere.
    Shuffled,
}

impl Shape {
    pub const ALL: [Shape; 3] = [Shape::Sequential, Shape::Deleted30, Shape::Shuffled];

    pub fn name(self) -> &'static str {
        match self {
            Shape::Sequential => "sequential",
            Shape::Deleted30 => "deleted_30pct",
            Shape::Shuffled => "shuffled",
        }
    }

    /// `n` row ids of this shape.
    pub fn row_ids(self, n: u64) -> Vec<u64> {
        let mut rng = Rng::new(42);
        match self {
            Shape::Sequential => (0..n).collect(),
            Shape::Deleted30 => (0..)
                .filter(|_| !rng.chance(0.3))
                .take(n as usize)
                .collect(),
            Shape::Shuffled => {
                let mut ids: Vec<u64> = (0..n).collect();
                for i in (1..ids.len()).rev() {
                    let j = rng.below(i as u64 + 1) as usize;
                    ids.swap(i, j);
                }
                ids
            }
        }
    }

    /// Per-row versions of the rows [`Shape::row_ids`] names, when row id `i` was appended at
    /// version `1 + i / (n / 100)` (100 appends of `n / 100` rows): sequential = 100 runs;
    /// 30% deleted = about 143 runs; shuffled = almost a run per row.
    pub fn versions(self, n: u64) -> Vec<u64> {
        let appended = |i: u64| 1 + i / (n / 100).max(1);
        let ids = self.row_ids(n);
        ids.into_iter().map(appended).collect()
    }
}
