#!/usr/bin/env python3
"""Interop evidence: the kit's Lance data file writer (v2.0, v2.1 and v2.2) and reader (v2.0)
against pylance 14.0.2.

  (1) files written by the kit (`datafile_dump write-sample DIR 2.0|2.1|2.2`) are read by
      pylance's `lance.file.LanceFileReader` with identical values, column by column; in 2.1
      and 2.2 also a 6,000-row file (several mini-block chunks, 4 KB (2.1) or 40 KB (2.2)
      strings, a 64-wide vector), and every kit column whose page layout is the one pylance's
      own `LanceFileWriter` picks for the same values in the same version has byte-identical
      page buffers;
  (2) files written by pylance's `LanceFileWriter(..., version="2.0")` -- every supported type
      with NULLs, a low-cardinality utf8 column of 150 rows (dictionary encoded), a column split
      into several pages, structs -- are read by the kit's reader (`datafile_dump read`) with
      identical values; a `version="2.1"` file is read with the values pylance wrote (the cell-for-cell
      agreement on 2.1/2.2 files is `decode_agreement.py`).

Run from anywhere (needs cargo, and pylance==14.0.2 + pyarrow in the running interpreter):

    python3 -m venv /work/venv-datafile
    /work/venv-datafile/bin/pip install pylance==14.0.2 pyarrow
    /work/venv-datafile/bin/python tests/interop/datafile_roundtrip.py

Exits non-zero on the first disagreement.
"""
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import lance
import pyarrow as pa
from lance.file import LanceFileReader, LanceFileWriter

REPO = Path(__file__).resolve().parents[2]
CHECKS = []


def dump(*args):
    """Runs the kit's example binary and parses its JSON output."""
    out = subprocess.run(
        ["cargo", "run", "-q", "--release", "-p", "lance-reference-io", "--example", "datafile_dump", "--", *args],
        cwd=REPO, capture_output=True, text=True)
    if out.returncode not in (0, 2):
        sys.exit(f"datafile_dump {args} failed:\n{out.stderr}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def norm(v):
    """A comparable form of a value: floats by repr (keeps -0.0, NaN, inf apart)."""
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else repr(v)
    if v in ("NaN",):
        return "NaN"
    if v == "inf":
        return repr(float("inf"))
    if v == "-inf":
        return repr(float("-inf"))
    if isinstance(v, list):
        return [norm(x) for x in v]
    return v


def norm_kit(v):
    # JSON numbers that are floats arrive as float; ints stay int.
    return norm(v)


def flatten(arrow_type, name, values, out):
    """Pre-order columns of one Arrow field, as the kit stores them: a struct becomes a
    header column ({} per present row) followed by its children's columns."""
    if pa.types.is_struct(arrow_type):
        out.append((name, [None if v is None else {} for v in values]))
        for i in range(arrow_type.num_fields):
            child = arrow_type.field(i)
            flatten(child.type, child.name,
                    [None if v is None else v[child.name] for v in values], out)
    else:
        out.append((name, values))


def table_columns(table):
    out = []
    for f in table.schema:
        flatten(f.type, f.name, table.column(f.name).to_pylist(), out)
    return out


def check(what, ok, detail=""):
    CHECKS.append(what)
    status = "ok  " if ok else "FAIL"
    print(f"{status} {what}" + (f"  {detail}" if detail and not ok else ""))
    if not ok:
        sys.exit(1)


def compare(what, expected, got):
    e, g = [norm(v) for v in expected], [norm_kit(v) for v in got]
    check(what, e == g, f"expected {e}\n     got {g}")


def page_bytes(path, column):
    """The encoding and buffer bytes of each page of `column` in the file at `path`."""
    data = Path(path).read_bytes()
    pages = LanceFileReader(path).metadata().columns[column].pages
    return [(p.encoding, [data[b.position:b.position + b.size] for b in p.buffers]) for p in pages]


def same_layout_as_lance(path, table, tmp, version):
    """Writes `table` with pylance's own writer in `version` and compares the kit's file column
    by column: where Lance chose the same page layout, the page buffers must be identical.
    Returns (columns compared, columns whose layout Lance chose differently)."""
    lance_path = str(tmp / (Path(path).stem + f".by-lance-{version}.lance"))
    with LanceFileWriter(lance_path, schema=table.schema, version=version) as w:
        w.write_batch(table)
    ours = LanceFileReader(path).metadata().columns
    compared, differs = 0, []
    for k in range(len(ours)):
        kit, lance_pages = page_bytes(path, k), page_bytes(lance_path, k)
        if [e for e, _ in kit] != [e for e, _ in lance_pages]:
            differs.append(k)
            continue
        compared += 1
        check(f"kit {version} column {k} of {Path(path).name}: same layout as Lance's writer, "
              f"same bytes", kit == lance_pages)
    return compared, differs


def kit_to_pylance(tmp, version):
    out = tmp / f"kit-{version}"
    out.mkdir()
    docs = dump("write-sample", str(out), version)
    footer = {"2.0": (0, 3), "2.1": (2, 1), "2.2": (2, 2)}[version]
    for doc in docs:
        path = doc["path"]
        name = f"{version}/{Path(path).name}"
        md = LanceFileReader(path).metadata()
        check(f"pylance opens kit {name}: footer {md.major_version}.{md.minor_version}, "
              f"{md.num_rows} rows", (md.major_version, md.minor_version) == footer
              and md.num_rows == doc["num_rows"])
        if version != "2.0":
            leaves = [c for c in doc["columns"] if c["logical_type"] != "struct"]
            check(f"kit {name}: one column per leaf field, none for a struct "
                  f"({len(leaves)} of {len(doc['columns'])} fields)",
                  len(md.columns) == len(leaves))
        lengths = {len(c["values"]) for c in doc["columns"]}
        if len(lengths) == 1:
            table = LanceFileReader(path).read_all().to_table()
            got = table_columns(table)
            check(f"pylance sees the kit's {len(doc['columns'])} columns of {name} in pre-order",
                  [n for n, _ in got] == [c["name"] for c in doc["columns"]])
            for (col_name, values), c in zip(got, doc["columns"]):
                compare(f"kit->pylance {name} {col_name} ({c['logical_type']}, id {c['id']})",
                        c["values"], values)
            if version != "2.0":
                compared, differs = same_layout_as_lance(path, table, tmp, version)
                print(f"     {name}: {compared} column(s) laid out as Lance lays them out, "
                      f"byte-identical; Lance chose another layout for column(s) {differs}")
        else:
            # Columns of different lengths must be read one at a time (Lance refuses to read
            # them together).
            for c in doc["columns"]:
                t = LanceFileReader(path, columns=[c["name"]]).read_all().to_table()
                compare(f"kit->pylance {name} {c['name']} alone ({len(c['values'])} of "
                        f"{doc['num_rows']} rows)", c["values"], t.column(c["name"]).to_pylist())


def pylance_to_kit(tmp):
    fsl = pa.FixedSizeListArray.from_arrays(
        pa.array([1.0, None, 3.0, 0.0, 0.0, 0.0, 0.25, -8.0, 9.5, 1.0, 2.0, 3.0], pa.float32()), 3,
        mask=pa.array([False, True, False, False]))
    st = pa.StructArray.from_arrays(
        [pa.array([1, None, 3, 4], pa.int32()), pa.array(["x", "", None, "w"])], names=["a", "b"])
    tables = {
        "types": pa.table({
            "i32": pa.array([-1, None, 2**31 - 1, 0], pa.int32()),
            "i64": pa.array([None, -2**63, 5, None], pa.int64()),
            "u64": pa.array([2**64 - 1, 0, None, 1], pa.uint64()),
            "f32": pa.array([1.5, None, float("-inf"), -0.0], pa.float32()),
            "f64": pa.array([float("nan"), None, 1e-300, 2.5], pa.float64()),
            "f64_null": pa.array([None] * 4, pa.float64()),
            "s": pa.array(["", None, "héllo", "a" * 40]),
            "s_null": pa.array([None] * 4, pa.string()),
            "b": pa.array([True, None, False, True]),
            "v": fsl,
            "st": st,
        }),
        "dictionary": pa.table({
            "d": pa.array([["red", "green", None, "blue", ""][i % 5] for i in range(150)]),
            "i": pa.array(range(150), pa.int32()),
        }),
    }
    for name, table in tables.items():
        with LanceFileWriter(str(tmp / f"{name}.lance"), schema=table.schema, version="2.0") as w:
            w.write_batch(table)
    batches = [pa.table({
        "x": pa.array([k * 100 + i if i % 7 else None for i in range(50)], pa.int64()),
        "s": pa.array([f"row-{k}-{i}" if i % 5 else None for i in range(50)]),
        "v": pa.FixedSizeListArray.from_arrays(
            pa.array([float(k * 100 + i) for i in range(100)], pa.float32()), 2),
    }) for k in range(4)]
    with LanceFileWriter(str(tmp / "multipage.lance"), version="2.0", data_cache_bytes=64) as w:
        for b in batches:
            w.write_batch(b)
    tables["multipage"] = pa.concat_tables(batches)

    for name, table in tables.items():
        path = tmp / f"{name}.lance"
        doc, = dump("read", str(path))
        check(f"kit opens pylance {name}.lance: footer {doc['version']}, {doc['num_rows']} rows",
              "error" not in doc and doc["num_rows"] == table.num_rows)
        expected = table_columns(table)
        check(f"kit sees pylance {name}.lance columns in pre-order",
              [c["name"] for c in doc["columns"]] == [n for n, _ in expected])
        for (col_name, values), c in zip(expected, doc["columns"]):
            compare(f"pylance->kit {name} {col_name} ({c['logical_type']}; "
                    f"{len(c['pages'])} page(s): {c['pages'][0] if c['pages'] else '-'})",
                    values, c["values"])
        if name == "dictionary":
            check("pylance used dictionary encoding for the low-cardinality utf8 column",
                  doc["columns"][0]["pages"][0].startswith("dictionary("),
                  doc["columns"][0]["pages"][0])
        if name == "multipage":
            check("pylance split every multipage column into several pages",
                  all(len(c["pages"]) > 1 for c in doc["columns"]),
                  str([len(c["pages"]) for c in doc["columns"]]))

    t = pa.table({"a": pa.array([1, 2, 3], pa.int32())})
    with LanceFileWriter(str(tmp / "v2_1.lance"), schema=t.schema, version="2.1") as w:
        w.write_batch(t)
    doc, = dump("read", str(tmp / "v2_1.lance"))
    values = [c.get("values") for c in doc.get("columns", [])]
    check("kit reads a pylance version=\"2.1\" file",
          "code" not in doc and values == [[1, 2, 3]], str(doc))


def main():
    print(f"pylance {lance.__version__}, pyarrow {pa.__version__}")
    if lance.__version__ != "14.0.2":
        sys.exit("pylance 14.0.2 is required")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        kit_to_pylance(tmp, "2.0")
        kit_to_pylance(tmp, "2.2")
        kit_to_pylance(tmp, "2.1")
        pylance_to_kit(tmp)
    print(f"all {len(CHECKS)} checks passed")


if __name__ == "__main__":
    main()
