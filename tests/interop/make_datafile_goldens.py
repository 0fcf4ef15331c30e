"""Writes the small Lance v2.0 golden files under reference-io/tests/data/lance14_files/ with
pylance 14.0.2 (see the README there). Run: /work/venv-datafile/bin/python this_script OUT_DIR"""
import sys
import pyarrow as pa
import lance
from lance.file import LanceFileWriter

assert lance.__version__ == "14.0.2", lance.__version__
out = sys.argv[1]


def write(name, table, version="2.0", **kw):
    with LanceFileWriter(f"{out}/{name}.lance", schema=table.schema, version=version, **kw) as w:
        w.write_batch(table)


# The facts-sheet example: int32 with a null, utf8 with a null.
write("int_utf8", pa.table({
    "a": pa.array([1, None, 3], pa.int32()),
    "s": pa.array(["a", None, "ccc"]),
}))

# Every fixed-width type with nulls, plus all-null and no-null arms.
write("fixed_width", pa.table({
    "i32": pa.array([-1, None, 2147483647, 0], pa.int32()),
    "i64": pa.array([None, -9223372036854775808, 5, None], pa.int64()),
    "u64": pa.array([18446744073709551615, 0, 7, 1], pa.uint64()),
    "f32": pa.array([1.5, None, float("-inf"), -0.0], pa.float32()),
    "f64": pa.array([None, None, None, None], pa.float64()),
    "b": pa.array([True, None, False, True], pa.bool_()),
}))

# Strings (empty, null, all-null), a vector column with a null row and a null item, a struct.
fsl = pa.FixedSizeListArray.from_arrays(
    pa.array([1.0, None, 3.0, 0.0, 0.0, 0.0, 7.0, 8.0, 9.0], pa.float32()), 3,
    mask=pa.array([False, True, False]))
st = pa.StructArray.from_arrays(
    [pa.array([1, None, 3], pa.int32()), pa.array(["x", "", None])], names=["a", "b"])
write("nested", pa.table({
    "s": pa.array(["", None, "héllo"]),
    "n": pa.array([None, None, None], pa.string()),
    "v": fsl,
    "st": st,
}))

# 120 rows of 3 distinct strings: Lance picks dictionary encoding.
write("dictionary", pa.table({
    "d": pa.array([["red", "green", None, "blue"][i % 4] for i in range(120)]),
}))

# Several batches with a tiny page size: more than one page per column.
with LanceFileWriter(f"{out}/multipage.lance", version="2.0", data_cache_bytes=16) as w:
    for k in range(3):
        w.write_batch(pa.table({
            "x": pa.array([k * 10 + i if i != 2 else None for i in range(10)], pa.int64()),
            "s": pa.array([f"r{k}-{i}" for i in range(10)]),
        }))

# A v2.1 file: the reader must refuse it as an unsupported file version.
write("v2_1", pa.table({"a": pa.array([1, 2, 3], pa.int32())}), version="2.1")
