#!/usr/bin/env python3
"""Full-scan decode of one data file, side by side: the reference's decoder and pylance
14.0.2's `LanceFileReader`, on the same file written by Lance 14 in data file version 2.2.

    /work/venv/bin/python bench/decode_side_by_side.py [--repeats 7] [--rows 1000000]
        [--version 2.2] [--json out.json] [--dir DIR] [--bin decode_time]

Steps: write one file of `--rows` rows with `lance.file.LanceFileWriter(path, schema,
version=V)` (columns `i64` int64, `f64` float64, `s` utf8 of 8 to 40 characters, `v`
fixed_size_list<float32, 4>, `n` nullable int32 with every seventh row NULL; fixed seed);
build `reference-io/examples/decode_time.rs` (release); time

  - pylance: `LanceFileReader(path).read_all().to_table()` (every column, into Arrow);
  - the reference: `decode_time FILE N` (read, parse, `column_array` of every column),

each the median of `--repeats` runs after one warm-up run (both read from the page cache), and
print both and their ratio (reference time / Lance time: below 1 the reference is faster). Each
column's Lance encodings (layout and compressions, from `LanceFileReader(p).metadata()`) are
printed so a figure can be matched to what was decoded. Before timing, the reference's rows and
columns are checked against the file (so a reader that skipped work could not pass for a fast
one); `tests/interop/decode_agreement.py` checks the values themselves.
"""

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import lance
import pyarrow as pa
from lance.file import LanceFileReader, LanceFileWriter

REPO = Path(__file__).resolve().parent.parent
VARIANT = re.compile(r"\b(\w+)\(\s*\n\s*(\w+) \{")


def cargo_example(target_dir):
    """Builds decode_time in release mode and returns the binary's path."""
    subprocess.run(
        ["cargo", "build", "--release", "-p", "lance-reference-io", "--example", "decode_time"],
        cwd=REPO, check=True)
    return Path(target_dir) / "release" / "examples" / "decode_time"


def make_table(rows):
    rng = random.Random(1_000_003)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 "
    return pa.table({
        "i64": pa.array([rng.randrange(-2**62, 2**62) for _ in range(rows)], pa.int64()),
        "f64": pa.array([rng.gauss(0, 1e6) for _ in range(rows)], pa.float64()),
        "s": pa.array(["".join(rng.choices(alphabet, k=rng.randrange(8, 41)))
                       for _ in range(rows)]),
        "v": pa.FixedSizeListArray.from_arrays(
            pa.array([rng.uniform(-1, 1) for _ in range(4 * rows)], pa.float32()), 4),
        "n": pa.array([None if i % 7 == 3 else rng.randrange(-2**31, 2**31)
                       for i in range(rows)], pa.int32()),
    })


def encodings(path):
    out = []
    for column in LanceFileReader(str(path)).metadata().columns:
        names = set()
        for page in column.pages:
            names.update(m.group(1) for m in VARIANT.finditer(page.encoding)
                         if m.group(1) == m.group(2))
            names.update(re.findall(r"scheme: CompressionAlgorithm(\w+)", page.encoding))
            if "dictionary: Some(" in page.encoding:
                names.add("dictionary")
        out.append((len(column.pages), sorted(names)))
    return out


def time_lance(path, repeats):
    LanceFileReader(str(path)).read_all().to_table()  # warm-up
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        table = LanceFileReader(str(path)).read_all().to_table()
        runs.append(time.perf_counter() - start)
    return runs, table


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--version", default="2.2")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--dir", help="where to write the file (default: a temporary directory)")
    parser.add_argument("--bin", help="a decode_time binary (default: built with cargo)")
    args = parser.parse_args()

    target_dir = os.environ.get("CARGO_TARGET_DIR", REPO / "target")
    binary = args.bin or cargo_example(target_dir)
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="lance-decode-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"decode-{args.version}-{args.rows}.lance"
    table = make_table(args.rows)
    with LanceFileWriter(str(path), schema=table.schema, version=args.version) as w:
        w.write_batch(table)
    size = path.stat().st_size

    lance_runs, lance_table = time_lance(path, args.repeats)
    if lance_table.num_rows != args.rows:
        sys.exit(f"pylance read {lance_table.num_rows} rows, {args.rows} were written")
    subprocess.run([binary, str(path), "1"], capture_output=True)  # warm-up
    out = subprocess.run([binary, str(path), str(args.repeats)], capture_output=True, text=True)
    doc = json.loads(out.stdout) if out.stdout.strip() else {"error": out.stderr.strip()}
    if out.returncode != 0 or "error" in doc:
        sys.exit(f"the reference did not decode {path.name}: {doc.get('error')}")
    if doc["rows"] != args.rows or doc["columns"] != table.num_columns:
        sys.exit(f"the reference decoded {doc['rows']} rows x {doc['columns']} columns, "
                 f"expected {args.rows} x {table.num_columns}")

    lance_s = statistics.median(lance_runs)
    reference_s = doc["median_s"]
    result = {
        "rows": args.rows,
        "file_version": args.version,
        "file_bytes": size,
        "repeats": args.repeats,
        "lance14_median_s": round(lance_s, 4),
        "reference_median_s": round(reference_s, 4),
        "reference_over_lance14": round(reference_s / lance_s, 2),
        "lance14_runs_s": [round(x, 4) for x in lance_runs],
        "reference_runs_s": doc["runs"],
    }
    print(f"pylance {lance.__version__}, data file {args.version}, {args.rows} rows, "
          f"{size / 1e6:.1f} MB, median of {args.repeats} runs after a warm-up")
    for field, (pages, names) in zip(table.schema, encodings(path)):
        print(f"  {field.name:4} {str(field.type):36} {pages:3} page(s): {', '.join(names)}")
    print(f"{'reader':<12} {'median s':>9}")
    print(f"{'pylance':<12} {lance_s:>9.4f}")
    print(f"{'reference':<12} {reference_s:>9.4f}")
    print(f"reference / pylance: {reference_s / lance_s:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
