//! Full-scan decode time of one data file, for `bench/decode_side_by_side.py`.
//!
//! ```text
//! decode_time FILE [RUNS]     # RUNS defaults to 7
//! ```
//!
//! One run reads the file from disk, parses it (`read_data_file`) and decodes every column
//! with `column_array` as the type its schema entry declares (in v2.0 column `i` is schema
//! field `i`; from v2.1 on only leaves take columns, so column `i` is the `i`-th non-struct
//! field). Prints one JSON line: the seconds of each run, their median, and the rows and
//! columns decoded (so a caller can check that nothing was skipped). A column the reader
//! refuses ends the program with exit code 2 and the error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Instant;

use lance_reference::model::DataType;
use lance_reference_io::data_file::{DataFileContents, read_data_file};

/// The declared type of each column, in column order.
fn column_types(file: &DataFileContents<'_>) -> Vec<DataType> {
    let v = file.version();
    let fields = file
        .schema()
        .iter()
        .filter(|f| (v.major, v.minor) < (2, 1) || f.logical_type != "struct");
    fields
        .take(file.num_columns())
        .map(|f| {
            DataType::from_logical_type(&f.logical_type)
                .unwrap_or_else(|| fail(&format!("column {}: type {}", f.name, f.logical_type)))
        })
        .collect()
}

fn fail(message: &str) -> ! {
    println!("{{\"error\": {message:?}}}");
    std::process::exit(2)
}

/// One full scan; returns (rows decoded, columns decoded).
fn scan(path: &str) -> (usize, usize) {
    let bytes = std::fs::read(path).unwrap();
    let file = read_data_file(&bytes, path).unwrap_or_else(|e| fail(&e.to_string()));
    let types = column_types(&file);
    let mut rows = 0;
    for (index, data_type) in types.iter().enumerate() {
        let array = file
            .column_array(index, data_type)
            .unwrap_or_else(|e| fail(&e.to_string()));
        rows = rows.max(array.len());
        black_box(&array);
    }
    (rows, types.len())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: decode_time FILE [RUNS]");
        std::process::exit(1)
    };
    let runs: usize = args.get(2).map_or(7, |r| r.parse().expect("RUNS"));
    let mut seconds = Vec::with_capacity(runs);
    let mut decoded = (0, 0);
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        decoded = scan(path);
        seconds.push(start.elapsed().as_secs_f64());
    }
    let mut sorted = seconds.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let list: Vec<String> = seconds.iter().map(|s| format!("{s:.6}")).collect();
    println!(
        "{{\"runs\": [{}], \"median_s\": {median:.6}, \"rows\": {}, \"columns\": {}}}",
        list.join(", "),
        decoded.0,
        decoded.1
    );
}
