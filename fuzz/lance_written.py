#!/usr/bin/env python3
"""Writes the Lance-written data file seeds of the `data_file` fuzz target into
fuzz/lance-written/: small files (each at most 16 KiB, the target's -max_len) written by pylance
14.0.2's `LanceFileWriter` in data file versions 2.1 and 2.2, chosen so that between them they
hold every page layout and compression Lance 14 picks for the kit's column types (mini-block,
constant, full-zip, Flat, Variable, FixedSizeList, inline and out-of-line bit-packing, RLE,
dictionaries, FSST, LZ4, zstd, byte-stream-split), with NULLs and NULL struct rows.

    /work/venv/bin/python fuzz/lance_written.py [fuzz/lance-written]
    fuzz/seeds.sh --small        # copies them into fuzz/seeds/data_file/ as lance-*

The data is deterministic (fixed seeds), but Lance's bytes are not always: it trains FSST symbol
tables on a sample drawn with an OS-seeded generator, so the `fsst` and `general` files differ
from run to run (their values and encodings do not). The committed files are therefore the
seeds; regenerate only to change what they hold. Each file's encodings are printed (layout and
compression names parsed from `LanceFileReader(p).metadata()`).
"""
import random
import re
import sys
from pathlib import Path

import lance
import pyarrow as pa
from lance.file import LanceFileReader, LanceFileWriter

MAX_BYTES = 16 * 1024
OUT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent / "lance-written")
VARIANT = re.compile(r"\b(\w+)\(\s*\n\s*(\w+) \{")


def nulls(values, every, offset=3):
    return [None if i % every == offset else v for i, v in enumerate(values)]


def steer(table, metadata):
    """The table with field metadata that steers Lance's encoding choice."""
    schema = pa.schema([f.with_metadata(metadata[f.name]) if f.name in metadata else f
                        for f in table.schema])
    return table.cast(schema)


def tables():
    rng = random.Random(41)
    n = 100
    yield "mixed", pa.table({
        "i32": pa.array(nulls([rng.randrange(-50, 50) for _ in range(n)], 7), pa.int32()),
        "i64": pa.array(nulls([rng.randrange(0, 1 << 40) for _ in range(n)], 5), pa.int64()),
        "u64": pa.array(nulls([rng.randrange(0, 1 << 64) for _ in range(n)], 9), pa.uint64()),
        "f32": pa.array(nulls([rng.uniform(-1, 1) for _ in range(n)], 6), pa.float32()),
        "f64": pa.array(nulls([float("nan") if i == 1 else -0.0 if i == 2 else rng.gauss(0, 1)
                               for i in range(n)], 4), pa.float64()),
        "s": pa.array(nulls(["".join(rng.choice("ab c") for _ in range(rng.randrange(0, 12)))
                             for _ in range(n)], 8)),
        "s_low": pa.array(nulls([rng.choice(["red", "green", "", "blue"]) for _ in range(n)], 10)),
        "v4": pa.FixedSizeListArray.from_arrays(
            pa.array([rng.uniform(-1, 1) for _ in range(4 * n)], pa.float32()), 4,
            mask=pa.array([i % 11 == 2 for i in range(n)])),
        "st": pa.StructArray.from_arrays(
            [pa.array(nulls(list(range(n)), 6), pa.int32()),
             pa.array(nulls([f"x{i % 7}" for i in range(n)], 5))],
            names=["a", "b"], mask=pa.array([i % 9 == 4 for i in range(n)])),
        "runs": pa.array([i // 20 for i in range(n)], pa.int64()),
        "constant": pa.array([7] * n, pa.int64()),
        "all_null": pa.array([None] * n, pa.float32()),
    })
    n = 12
    yield "fullzip", steer(pa.table({
        "v64": pa.FixedSizeListArray.from_arrays(
            pa.array([rng.uniform(-1, 1) for _ in range(64 * n)], pa.float32()), 64,
            mask=pa.array([i % 5 == 1 for i in range(n)])),
        "long": pa.array(nulls(["".join(rng.choice("xyz") for _ in range(rng.randrange(150, 300)))
                                for _ in range(n)], 4)),
        "i64": pa.array(nulls([rng.randrange(-2**62, 2**62) for _ in range(n)], 3), pa.int64()),
    }), {"i64": {"lance-encoding:structural-encoding": "fullzip"}})
    n = 1000
    yield "general", steer(pa.table({
        "f64_zstd": pa.array(nulls([i * 0.25 for i in range(n)], 4),
                             pa.float64()),
        "f32_bss": pa.array(nulls([round(rng.uniform(0, 1), 2) for _ in range(n)], 6),
                            pa.float32()),
        "s_lz4": pa.array(nulls(["".join(rng.choice("ab") for _ in range(rng.randrange(0, 8)))
                                 for _ in range(n)], 8)),
        "s_zstd": pa.array(nulls(["".join(rng.choice("ab") for _ in range(rng.randrange(0, 8)))
                                  for _ in range(n)], 8)),
    }), {"f64_zstd": {"lance-encoding:compression": "zstd"},
         "f32_bss": {"lance-encoding:compression": "zstd", "lance-encoding:bss": "on"},
         "s_lz4": {"lance-encoding:compression": "lz4"},
         "s_zstd": {"lance-encoding:compression": "zstd"}})
    n = 6000
    yield "bitpacked", pa.table({
        "small": pa.array(nulls([rng.randrange(0, 8) for _ in range(n)], 7), pa.int32()),
    })
    n = 600
    words = ["lance", "column", "page", "buffer", "struct", "vector"]
    yield "fsst", pa.table({
        "text": pa.array([" ".join(rng.choice(words) for _ in range(12)) for _ in range(n)]),
    })


def encodings(path):
    out = []
    for column in LanceFileReader(str(path)).metadata().columns:
        for page in column.pages:
            names = [m.group(1) for m in VARIANT.finditer(page.encoding)
                     if m.group(1) == m.group(2)]
            names += re.findall(r"scheme: CompressionAlgorithm(\w+)", page.encoding)
            if "dictionary: Some(" in page.encoding:
                names.append("dictionary")
            out.append(",".join(names))
    return out


def main():
    assert lance.__version__ == "14.0.2", lance.__version__
    OUT.mkdir(parents=True, exist_ok=True)
    for name, table in tables():
        for version in ("2.1", "2.2"):
            path = OUT / f"v{version.replace('.', '_')}-{name}.lance"
            with LanceFileWriter(str(path), schema=table.schema, version=version) as w:
                w.write_batch(table)
            size = path.stat().st_size
            print(f"{path.name}: {size} bytes, {table.num_rows} rows: {' | '.join(encodings(path))}")
            if size > MAX_BYTES:
                sys.exit(f"{path.name} is {size} bytes, above the data_file target's -max_len")


if __name__ == "__main__":
    main()
