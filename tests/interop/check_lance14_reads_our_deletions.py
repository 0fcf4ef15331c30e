#!/usr/bin/env python3
"""Check that pylance 14.0.2 reads deletion files written by lance-reference's writers.

For each case: write a 20000-row dataset (one int64 column `id` equal to the physical
offset) with pylance, delete some rows with pylance so that it writes a deletion file and a
manifest pointing at it, then overwrite that file (same name, same form) with one written by
`cargo run --example write_deletion_file`, deleting the SAME NUMBER of rows but DIFFERENT
offsets. The manifest's num_deleted_rows stays right, so count_rows() must not change, while
to_table() must show the rows our file deletes, proving pylance read our bytes.

Usage: check_lance14_reads_our_deletions.py [SCRATCH_DIR]   (run from the repository root)
Exit status 0 when every case passes.
"""
import glob
import os
import shutil
import subprocess
import sys

import lance
import pyarrow as pa

ROWS = 20000
# name, pylance predicate, our form, our offsets (same count as the predicate deletes)
CASES = [
    ("arrow", "id < 10", "arrow", ["100..110"]),
    ("bin", "id < 6000", "bin", ["10000..16000"]),
    ("bin-runs", "id < 6000", "bin-runs", ["10000..13000", "15000..18000"]),
]


def expand(specs):
    out = set()
    for s in specs:
        a, _, b = s.partition("..")
        out.update(range(int(a), int(b)) if b else [int(a)])
    return out


def main():
    scratch = sys.argv[1] if len(sys.argv) > 1 else "/tmp/lance14_interop_deletions"
    os.makedirs(scratch, exist_ok=True)
    print(f"lance {lance.__version__}")
    failures = 0
    for name, predicate, form, specs in CASES:
        path = os.path.join(scratch, name)
        shutil.rmtree(path, ignore_errors=True)
        lance.write_dataset(pa.table({"id": pa.array(range(ROWS), pa.int64())}), path)
        lance.dataset(path).delete(predicate)
        (target,) = glob.glob(os.path.join(path, "_deletions", "*"))
        suffix = ".arrow" if form == "arrow" else ".bin"
        assert target.endswith(suffix), target
        subprocess.run(["cargo", "run", "-q", "--release", "-p", "lance-reference-io", "--example",
                        "write_deletion_file", "--", form, target, *specs], check=True)
        ours = expand(specs)
        if form == "arrow":
            # An independent Arrow reader agrees on the file's shape and content.
            reader = pa.ipc.open_file(target)
            want = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
            assert reader.schema.equals(want, check_metadata=True), reader.schema
            assert reader.num_record_batches == 1
            assert set(reader.read_all()["row_id"].to_pylist()) == ours
        ds = lance.dataset(path)
        ids = set(ds.to_table()["id"].to_pylist())
        expected = set(range(ROWS)) - ours
        count = ds.count_rows()
        ok = ids == expected and count == ROWS - len(ours)
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}: replaced {os.path.relpath(target, path)} "
              f"({os.path.getsize(target)} bytes); count_rows={count}, to_table has {len(ids)} "
              f"rows, deleted ids == ours: {set(range(ROWS)) - ids == ours}")
    print(f"{len(CASES) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
