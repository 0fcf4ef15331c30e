"""Writes the v2.1/v2.2 golden data files of `reference-io/tests/data/lance14_v2x/`.

Each table is written with pylance's `LanceFileWriter(path, schema, version=...)` in format
2.1 and 2.2 at several row counts, then read back with `LanceFileReader`; what Lance reads back
is stored beside the file as JSON (one list of values per leaf column, and the validity of each
struct), so the Rust test compares the kit's decode with Lance's, cell for cell. The JSON also
lists the page layouts Lance chose (`LanceFileReader(p).metadata()`).

Usage: python tests/interop/make_datafile_goldens_v2x.py reference-io/tests/data/lance14_v2x
Deterministic: no randomness, so regenerating gives the same bytes.
"""

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import lance
import pyarrow as pa
from lance.file import LanceFileReader, LanceFileWriter


def table(n: int, wide: bool) -> pa.Table:
    def nul(i, k):
        return i % k == 3

    cols = {
        "i32": pa.array([None if nul(i, 7) else i * 3 - 50 for i in range(n)], pa.int32()),
        "i64": pa.array([None if nul(i, 7) else i * 100003 - 7 for i in range(n)], pa.int64()),
        "u64": pa.array([None if nul(i, 5) else 2**63 + i * 977 for i in range(n)], pa.uint64()),
        "f32": pa.array([None if nul(i, 6) else i * 0.5 - 3.25 for i in range(n)], pa.float32()),
        "f64": pa.array(
            [None if nul(i, 7) else ((i * 2654435761) % 1000003) / 7.0 for i in range(n)],
            pa.float64(),
        ),
        "utf8": pa.array(
            [None if nul(i, 7) else "v%d" % (i * 7919 % 100000) for i in range(n)], pa.utf8()
        ),
        "lowcard": pa.array(
            [None if nul(i, 11) else ["INFO", "WARN", "ERROR"][i % 3] for i in range(n)],
            pa.utf8(),
        ),
        "const": pa.array([42] * n, pa.int64()),
        "allnull": pa.array([None] * n, pa.int32()),
        "v4": pa.array(
            [None if nul(i, 7) else [float(i), 1.5, -2.0, float(i % 5)] for i in range(n)],
            pa.list_(pa.float32(), 4),
        ),
        "st": pa.StructArray.from_arrays(
            [
                pa.array([None if i % 5 == 1 else i for i in range(n)], pa.int32()),
                pa.array([None if i % 3 == 1 else "x%d" % i for i in range(n)], pa.utf8()),
            ],
            names=["a", "b"],
            mask=pa.array([i % 4 == 2 for i in range(n)]),
        ),
        "stnull": pa.StructArray.from_arrays(
            [pa.array([None] * n, pa.int32())],
            names=["c"],
            mask=pa.array([i % 2 == 0 for i in range(n)]),
        ),
    }
    if wide:
        cols["v64"] = pa.array(
            [None if nul(i, 7) else [float(i + j) for j in range(64)] for i in range(n)],
            pa.list_(pa.float32(), 64),
        )
    return pa.table(cols)


def bool_table(n: int) -> pa.Table:
    """Boolean columns Lance stores as constant pages in 2.2 (one true, one false, one true or
    NULL: an inline value of one byte, a one-value bitmap) beside one it bit-packs."""
    return pa.table(
        {
            "yes": pa.array([True] * n),
            "no": pa.array([False] * n),
            "yes_or_null": pa.array([None if i % 3 == 1 else True for i in range(n)]),
            "bits": pa.array([None if i % 7 == 3 else i % 3 == 0 for i in range(n)]),
        }
    )


def compact(encoding: str) -> str:
    """The layout and encoding names of a page's Debug string, in order, deduplicated."""
    names = re.findall(
        r"\b(MiniBlockLayout|ConstantLayout|FullZipLayout|BlobLayout|Flat|Variable|"
        r"FixedSizeList|InlineBitpacking|OutOfLineBitpacking|Rle|General|Fsst|"
        r"ByteStreamSplit|Dictionary|CompressionAlgorithmLz4|CompressionAlgorithmZstd)\b",
        encoding,
    )
    if "dictionary: Some" in encoding or "dictionary: (" in encoding:
        names.append("dictionary")
    if "inline_value: Some" in encoding or "inline_value: (" in encoding:
        names.append("inline_value")
    return ",".join(dict.fromkeys(names))


def page_names(page) -> str:
    """`compact` of a page's encoding, and `value_buffer` for a constant page whose value is in
    a page buffer (no inline value, 1 or 3 buffers: Lance 14's reader tells it so)."""
    names = compact(str(page.encoding))
    if "ConstantLayout" in names and "inline_value" not in names and len(page.buffers) in (1, 3):
        names += ",value_buffer"
    return names


def jsonable(values):
    """Floats as their shortest round-trip decimal strings, so a reader parses them exactly."""

    def one(v):
        if isinstance(v, float):
            if v != v:
                raise ValueError("NaN")
            return repr(v)
        if isinstance(v, list):
            return [one(x) for x in v]
        return v

    return [one(v) for v in values]


def leaves(name, array):
    """(path, values) of each leaf, with the struct's nulls applied, and struct validities."""
    if pa.types.is_struct(array.type):
        structs = {name: [bool(x) for x in array.is_valid().to_pylist()]}
        cols = []
        for field, child in zip(array.type, array.flatten()):
            c, s = leaves(name + "." + field.name, child)
            cols += c
            structs.update(s)
        return cols, structs
    return [(name, array.type, jsonable(array.to_pylist()))], {}


def updated_file(path: Path) -> None:
    """The data file `LanceDataset.update` writes (dataset defaults: data file version 2.2)
    for rows whose columns the update makes constant: `city` one string (a constant page with
    a value buffer), `nick` one string or NULL (value buffer and definition levels), `age` one
    integer or NULL (inline value and definition levels). Copied to `path`."""
    n = 200
    t = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "city": pa.array([["Oslo", "Lima", "Pune", "Kyiv"][i % 4] for i in range(n)]),
            "nick": pa.array(["anon" if i % 3 == 0 else f"n{i}" for i in range(n)]),
            "age": pa.array([7 if i % 2 == 0 else i % 90 for i in range(n)], pa.int32()),
            "score": pa.array([None if i % 31 == 0 else i * 0.25 for i in range(n)]),
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        ds = lance.write_dataset(t, tmp)
        ds.update(
            {
                "city": "'Rome'",
                # NULL where the old value equals the new one (Lance's SQL has no CASE).
                "nick": "nullif('anon', nick)",
                "age": "nullif(7, age)",
                "score": "score * 2",
            },
            where="id % 10 < 4",
        )
        last = lance.dataset(tmp).get_fragments()[-1]
        (data_file,) = last.metadata.files
        shutil.copyfile(Path(tmp) / "data" / data_file.path, path)


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = [(version, n) for version in ["2.1", "2.2"] for n in [10, 100, 1000]]
    files.append(("2.2", "update"))
    files.append(("2.2", "bool"))
    for version, n in files:
        stem = f"v{version.replace('.', '_')}_{n}"
        path = out / f"{stem}.lance"
        if path.exists():
            path.unlink()
        if n == "update":
            updated_file(path)
        elif n == "bool":
            t = bool_table(10)
            with LanceFileWriter(str(path), t.schema, version=version) as w:
                w.write_batch(t)
        else:
            t = table(n, wide=n <= 100)
            with LanceFileWriter(str(path), t.schema, version=version) as w:
                w.write_batch(t)
        reader = LanceFileReader(str(path))
        back = reader.read_all().to_table()
        columns, structs = [], {}
        for name in back.column_names:
            c, s = leaves(name, back.column(name).combine_chunks())
            columns += c
            structs.update(s)
        meta = reader.metadata()
        doc = {
            "version": version,
            "rows": back.num_rows,
            "columns": [
                {
                    "path": p,
                    "type": str(ty),
                    "values": v,
                    "pages": [page_names(pg) for pg in meta.columns[i].pages],
                }
                for i, (p, ty, v) in enumerate(columns)
            ],
            "structs": structs,
        }
        (out / f"{stem}.json").write_text(json.dumps(doc, indent=None) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
