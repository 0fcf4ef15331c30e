#!/usr/bin/env python3
"""Cell-for-cell agreement between the kit's data file decoder and pylance 14.0.2 on files that
Lance itself writes, in data file versions 2.1 and 2.2 (and 2.0 as a control).

For each version V in 2.0, 2.1, 2.2 and each row count in 10, 100, 1,000 and 6,500, this
writes one table with `lance.file.LanceFileWriter(path, schema, version=V)`: int32, int64,
uint64, float32, float64 (with NaN, -0.0 and infinities), utf8 (random, low-cardinality, long
values), fixed_size_list<float32, 4> and <float32, 64>, a struct of two leaves, NULLs in every
column, plus columns shaped to make Lance pick the remaining encodings (runs, a constant, an
all-NULL column, and fields whose metadata asks for zstd, lz4, byte-stream-split or full-zip).
It reads each file back with pylance's `LanceFileReader(...).read_all()` and with the kit
(`datafile_dump read FILE`, JSON) and compares every cell: integers and strings by value,
floats by bit pattern (so -0.0 differs from 0.0), NaN equal to NaN.

Columns are compared as the kit stores them: in 2.0 a struct has a header column ({} per
present row, NULL per NULL row) before its children; from 2.1 on only leaves have columns, and
a leaf cell under a NULL struct row is NULL. (Lance refuses NULL struct rows in 2.0 files, so
the 2.0 tables have none.)

It prints the page encodings Lance chose (from `LanceFileReader(p).metadata()`: the layout and
the compression names parsed out of each page's `encoding` string) and exits 1 when a cell
differs, when the kit refuses a file or a column (its error code and text are printed), or when
one of the expected encodings did not occur in a version's files:

  2.1 and 2.2: mini-block, constant (NULL), full-zip, Flat, Variable, FixedSizeList,
               InlineBitpacking, OutOfLineBitpacking, RLE, dictionary, FSST, LZ4, zstd,
               byte-stream-split
  2.2 only:    constant (inline scalar), constant (value buffer), constant (value with levels)

LZ4 is Lance's own choice for the dictionary of low-cardinality strings in 2.2; zstd, LZ4 in
2.1 and byte-stream-split only occur through field metadata (`lance-encoding:compression` =
`zstd` / `lz4`, `lance-encoding:bss` = `on`, keys from rust/lance-encoding/src/constants.rs),
and full-zip for a narrow fixed-width column through `lance-encoding:structural-encoding` =
`fullzip` (Lance also picks full-zip by itself for the 64-float vectors and the long strings).
A constant page keeps a string in a page buffer of its own ("value buffer": no inline value,
one buffer, or three with the levels), and a constant value with NULLs beside it has definition
levels ("value with levels"); the `constant_utf8*` and `constant_nulls` columns make 2.2 write
them (2.1 stores such columns in mini-block pages).

    python3 tests/interop/decode_agreement.py [--bin-dir DIR] [--keep DIR] [--versions 2.1,2.2]

`--bin-dir` is the directory holding the `datafile_dump` example (CI passes
`$target/release/examples`); without it the example is built with cargo. Data is
deterministic (fixed seeds), so a run is repeatable.
"""

import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
import random

import lance
import pyarrow as pa
from lance.file import LanceFileReader, LanceFileWriter

REPO = Path(__file__).resolve().parents[2]
ROW_COUNTS = (10, 100, 1000, 6500)
VERSIONS = ("2.0", "2.1", "2.2")
DIFFS_SHOWN = 5

# Encoding name as printed -> how it is recognised in a page's encoding string.
EXPECTED_21 = [
    "mini-block", "constant (NULL)", "full-zip", "Flat", "Variable", "FixedSizeList",
    "InlineBitpacking", "OutOfLineBitpacking", "RLE", "dictionary", "FSST", "LZ4", "zstd",
    "byte-stream-split",
]
EXPECTED = {"2.1": EXPECTED_21, "2.2": EXPECTED_21 + [
    "constant (inline scalar)", "constant (value buffer)", "constant (value with levels)"]}

LAYOUTS = {"MiniBlockLayout": "mini-block", "FullZipLayout": "full-zip",
           "AllNullLayout": "constant (NULL)", "BlobLayout": "blob"}
COMPRESSIONS = {"Flat": "Flat", "Variable": "Variable", "FixedSizeList": "FixedSizeList",
                "InlineBitpacking": "InlineBitpacking",
                "OutOfLineBitpacking": "OutOfLineBitpacking", "Rle": "RLE",
                "Dictionary": "dictionary", "Fsst": "FSST", "ByteStreamSplit": "byte-stream-split",
                "General": "general", "Constant": "Constant", "PackedStruct": "PackedStruct",
                "VariablePackedStruct": "VariablePackedStruct"}
SCHEMES = {"CompressionAlgorithmLz4": "LZ4", "CompressionAlgorithmZstd": "zstd"}
# `Name(\n   Name {`: an enum variant holding a message, in Rust's pretty Debug output.
VARIANT = re.compile(r"\b(\w+)\(\s*\n\s*(\w+) \{")
SCHEME = re.compile(r"scheme: (\w+)")


def page_encodings(encoding, buffers):
    """The layout and compression names of one 2.1+ page's `encoding` string, in order.
    `buffers` is the page's buffer count, which tells a constant page's forms apart (Lance 14:
    an inline value with 0 or 2 buffers; else a value buffer with 1 or 3; else all NULL)."""
    names = []
    for m in VARIANT.finditer(encoding):
        variant, message = m.group(1), m.group(2)
        if variant != message:
            continue
        if variant == "ConstantLayout":
            inline = re.search(r"inline_value: (\w+)", encoding)
            if inline and inline.group(1) == "Some":
                names.append("constant (inline scalar)")
                if buffers == 2:
                    names.append("constant (value with levels)")
            elif buffers in (1, 3):
                names.append("constant (value buffer)")
                if buffers == 3:
                    names.append("constant (value with levels)")
            else:
                names.append("constant (NULL)")
        elif variant in LAYOUTS:
            names.append(LAYOUTS[variant])
        elif variant in COMPRESSIONS:
            names.append(COMPRESSIONS[variant])
        else:
            names.append(f"other:{variant}")
    if re.search(r"\bdictionary: Some\(", encoding):
        names.append("dictionary")
    names.extend(SCHEMES.get(s, f"other:{s}") for s in SCHEME.findall(encoding))
    return names


def legacy_encodings(encoding):
    """The node names of a 2.0 page's ArrayEncoding tree (informational only)."""
    return sorted({m.group(1) for m in VARIANT.finditer(encoding) if m.group(1) == m.group(2)})


# ---------------------------------------------------------------- the tables Lance writes


def with_nulls(values, every, offset=3):
    return [None if i % every == offset else v for i, v in enumerate(values)]


def word(rng, alphabet, lo, hi):
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(lo, hi)))


def special_floats(values):
    """NaN, -0.0 and both infinities at fixed rows (where the column is long enough)."""
    out = list(values)
    for row, x in ((1, float("nan")), (2, -0.0), (5, float("inf")), (8, float("-inf"))):
        if row < len(out):
            out[row] = x
    return out


def vectors(rng, n, dim, null_every):
    items = pa.array([rng.uniform(-1, 1) for _ in range(n * dim)], pa.float32())
    mask = pa.array([i % null_every == 2 for i in range(n)])
    return pa.FixedSizeListArray.from_arrays(items, dim, mask=mask)


def make_table(n, struct_nulls, steer):
    """One deterministic table of `n` rows, the same for every version. Lance refuses NULL
    struct rows in 2.0 (it stores no struct validity), so `struct_nulls` is off there; `steer`
    adds the field metadata that asks for zstd, LZ4, byte-stream-split and full-zip (2.1+ only:
    the kit's 2.0 reader decodes no general compression, which the control does not need)."""
    rng = random.Random(2500 + n)
    cols = {
        "i32": pa.array(with_nulls([rng.randrange(-1000, 1000) for _ in range(n)], 7), pa.int32()),
        "i64": pa.array(with_nulls([rng.randrange(-2**62, 2**62) for _ in range(n)], 5),
                        pa.int64()),
        "u64": pa.array(with_nulls([rng.randrange(0, 2**64) for _ in range(n)], 9), pa.uint64()),
        "f32": pa.array(special_floats(with_nulls([rng.uniform(-1e3, 1e3) for _ in range(n)], 6)),
                        pa.float32()),
        "f64": pa.array(special_floats(with_nulls([rng.gauss(0, 1) for _ in range(n)], 4)),
                        pa.float64()),
        "utf8": pa.array(with_nulls([word(rng, "abcdefghij klmnopé\"\\", 0, 60) for _ in range(n)],
                                    8)),
        "utf8_low": pa.array(with_nulls([rng.choice(["red", "green", "blue", "", "amber"])
                                         for _ in range(n)], 10)),
        "utf8_long": pa.array(with_nulls([word(rng, "abcdefghij klmnop", 100, 400)
                                          for _ in range(n)], 8)),
        "vec4": vectors(rng, n, 4, 11),
        "vec64": vectors(rng, n, 64, 13),
        "st": pa.StructArray.from_arrays(
            [pa.array(with_nulls([rng.randrange(0, 1 << 20) for _ in range(n)], 6), pa.int32()),
             pa.array(with_nulls([f"x{i % 17}" for i in range(n)], 5))],
            names=["a", "b"], mask=pa.array([struct_nulls and i % 9 == 4 for i in range(n)])),
        "runs": pa.array(with_nulls([i // 50 for i in range(n)], 13), pa.int64()),
        "constant": pa.array([42] * n, pa.int64()),
        "constant_utf8": pa.array(["Rome"] * n),
        "constant_utf8_nulls": pa.array(with_nulls(["a constant string"] * n, 7)),
        "constant_nulls": pa.array(with_nulls([-7] * n, 5), pa.int32()),
        "all_null": pa.array([None] * n, pa.int32()),
        "f64_zstd": pa.array(with_nulls([rng.gauss(0, 1) for _ in range(n)], 4), pa.float64()),
        "f32_bss": pa.array(with_nulls([rng.uniform(0, 1) for _ in range(n)], 6), pa.float32()),
        "utf8_lz4": pa.array(with_nulls([word(rng, "abc", 0, 20) for _ in range(n)], 8)),
        "utf8_zstd": pa.array(with_nulls([word(rng, "abc", 0, 20) for _ in range(n)], 8)),
        "i64_fullzip": pa.array(with_nulls([rng.randrange(-2**62, 2**62) for _ in range(n)], 5),
                                pa.int64()),
    }
    metadata = {
        "f64_zstd": {"lance-encoding:compression": "zstd"},
        "f32_bss": {"lance-encoding:compression": "zstd", "lance-encoding:bss": "on"},
        "utf8_lz4": {"lance-encoding:compression": "lz4"},
        "utf8_zstd": {"lance-encoding:compression": "zstd"},
        "i64_fullzip": {"lance-encoding:structural-encoding": "fullzip"},
    }
    table = pa.table(cols)
    if not steer:
        return table
    schema = pa.schema([f.with_metadata(metadata[f.name]) if f.name in metadata else f
                        for f in table.schema])
    return table.cast(schema)


# ---------------------------------------------------------------- comparing


def flatten(arrow_type, name, values, out, headers):
    """The columns the kit stores for one Arrow field, in pre-order. With `headers` (v2.0) a
    struct becomes a header column ({} per present row) before its children; without (2.1+)
    only leaves are columns. Either way a child cell under a NULL struct row is NULL."""
    if pa.types.is_struct(arrow_type):
        if headers:
            out.append((name, [None if v is None else {} for v in values]))
        for i in range(arrow_type.num_fields):
            child = arrow_type.field(i)
            flatten(child.type, f"{name}.{child.name}",
                    [None if v is None else v[child.name] for v in values], out, headers)
    else:
        out.append((name, values))


def expected_columns(table, headers):
    out = []
    for f in table.schema:
        flatten(f.type, f.name, table.column(f.name).to_pylist(), out, headers)
    return out


FLOAT_WORDS = {"NaN": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def norm(v, is_float):
    """A comparable form: floats by bit pattern (NaN as one class), vectors item by item."""
    if v is None:
        return None
    if isinstance(v, list):
        return tuple(norm(x, True) for x in v)
    if isinstance(v, dict):
        return "{}"
    if is_float:
        x = FLOAT_WORDS.get(v, v) if isinstance(v, str) else float(v)
        return "NaN" if math.isnan(x) else struct.pack("<d", x).hex()
    return v


def show(v):
    if isinstance(v, float):
        return repr(v)
    s = json.dumps(v, ensure_ascii=False)
    return s if len(s) <= 80 else s[:77] + "..."


class Run:
    def __init__(self):
        self.failures = []
        self.cells = 0

    def fail(self, line):
        self.failures.append(line)
        print(f"FAIL {line}")


def run_kit(bin_dir, path):
    out = subprocess.run([str(Path(bin_dir) / "datafile_dump"), "read", str(path)],
                         capture_output=True, text=True)
    if out.returncode not in (0, 2) or not out.stdout.strip():
        return None, f"datafile_dump exited {out.returncode}: {out.stderr.strip()[-2000:]}"
    return json.loads(out.stdout), None


def compare_file(run, bin_dir, version, n, path, table):
    name = path.name
    lance_table = LanceFileReader(str(path)).read_all().to_table()
    expected = expected_columns(lance_table, headers=(version == "2.0"))
    written = expected_columns(table, headers=(version == "2.0"))
    for (col_name, got), (_, put) in zip(expected, written):
        floats = pa.types.is_floating(lance_table.schema.field(col_name.split(".")[0]).type)
        if [norm(v, floats) for v in got] != [norm(v, floats) for v in put]:
            # Not the kit's fault; printed so that a change in Lance's writer or reader shows.
            print(f"note {name} {col_name}: pylance reads back other values than it was given")
    doc, err = run_kit(bin_dir, path)
    if err:
        run.fail(f"{name}: {err}")
        return
    if "error" in doc and "columns" not in doc:
        run.fail(f"{name}: kit refused the file: {doc.get('code')}: {doc['error']}")
        return
    cols = doc["columns"]
    if doc["num_rows"] != n:
        run.fail(f"{name}: kit num_rows {doc['num_rows']}, Lance wrote {n}")
    if len(cols) != len(expected):
        run.fail(f"{name}: kit has {len(cols)} columns, pylance's table flattens to "
                 f"{len(expected)} ({', '.join(c for c, _ in expected)})")
    for index, ((col_name, lance_values), c) in enumerate(zip(expected, cols)):
        where = f"{name} column {index} ({col_name}, {c.get('logical_type') or '?'})"
        if "error" in c:
            run.fail(f"{where}: kit refused: {c['code']}: {c['error']}")
            continue
        is_float = c["logical_type"] in ("float", "double")
        kit_values = c["values"]
        if len(kit_values) != len(lance_values):
            run.fail(f"{where}: kit decoded {len(kit_values)} rows, pylance {len(lance_values)}")
            continue
        diffs = [row for row, (a, b) in enumerate(zip(lance_values, kit_values))
                 if norm(a, is_float) != norm(b, is_float)]
        run.cells += len(lance_values)
        for row in diffs[:DIFFS_SHOWN]:
            run.fail(f"{where} row {row}: pylance {show(lance_values[row])}, "
                     f"kit {show(kit_values[row])}")
        if len(diffs) > DIFFS_SHOWN:
            run.fail(f"{where}: {len(diffs) - DIFFS_SHOWN} more differing rows "
                     f"({len(diffs)} of {len(lance_values)})")


def encodings_of(path, version, table):
    """{leaf column name: [encoding names of each page]} from pylance's metadata."""
    md = LanceFileReader(str(path)).metadata()
    names = [c for c, _ in expected_columns(table.slice(0, 0), headers=(version == "2.0"))]
    out = {}
    for i, column in enumerate(md.columns):
        name = names[i] if i < len(names) else f"#{i}"
        if version == "2.0":
            out[name] = [legacy_encodings(p.encoding) for p in column.pages]
        else:
            out[name] = [page_encodings(p.encoding, len(p.buffers)) for p in column.pages]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin-dir", help="directory of the datafile_dump example binary")
    ap.add_argument("--keep", help="write the Lance files here (kept) instead of a temp dir")
    ap.add_argument("--versions", default=",".join(VERSIONS))
    args = ap.parse_args()
    print(f"pylance {lance.__version__}, pyarrow {pa.__version__}")
    if lance.__version__ != "14.0.2":
        sys.exit("pylance 14.0.2 is required")
    bin_dir = args.bin_dir
    if not bin_dir:
        subprocess.run(["cargo", "build", "-q", "--release", "-p", "lance-reference-io",
                        "--example", "datafile_dump"], cwd=REPO, check=True)
        bin_dir = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release" / "examples"
    versions = [v for v in args.versions.split(",") if v]

    run = Run()
    seen = {v: {} for v in versions}  # version -> encoding -> first "file column"
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = Path(args.keep or tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        for n in ROW_COUNTS:
            for version in versions:
                legacy = version == "2.0"
                table = make_table(n, struct_nulls=not legacy, steer=not legacy)
                path = out_dir / f"v{version.replace('.', '_')}-{n}rows.lance"
                with LanceFileWriter(str(path), schema=table.schema, version=version) as w:
                    w.write_batch(table)
                encodings = encodings_of(path, version, table)
                print(f"-- {path.name}: {n} rows, {len(encodings)} columns")
                for col, pages in encodings.items():
                    print(f"     {col:12} {' | '.join(', '.join(p) for p in pages)}")
                    for page in pages:
                        for e in page:
                            seen[version].setdefault(e, f"{path.name} {col}")
                before = len(run.failures)
                compare_file(run, bin_dir, version, n, path, table)
                if len(run.failures) == before:
                    print(f"ok   {path.name}: every cell agrees")

    print()
    for version in versions:
        if version not in EXPECTED:
            continue
        missing = [e for e in EXPECTED[version] if e not in seen[version]]
        print(f"encodings seen in {version} files: {', '.join(sorted(seen[version]))}")
        for e in EXPECTED[version]:
            if e in seen[version]:
                print(f"     {e:26} first in {seen[version][e]}")
        if missing:
            run.fail(f"{version}: expected encodings did not occur: {', '.join(missing)}")
    print()
    if run.failures:
        print(f"{len(run.failures)} failure(s); {run.cells} cells compared")
        sys.exit(1)
    print(f"every cell agrees ({run.cells} cells), every expected encoding occurred")


if __name__ == "__main__":
    main()
