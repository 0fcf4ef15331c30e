#!/usr/bin/env python3
"""Time and peak memory of `lance-conformance validate` on a large pylance-written dataset.

Writes (pylance 14.0.2, data storage 2.0, stable row ids) ROWS rows in fragments of
ROWS / 10, then OVERLAYS overlay commits of 1000 cells each on fragment 0, a delete, a BTree
index on `val`, an append and a compaction, and runs `validate` on it under
`/usr/bin/time -v`. Prints versions, findings, wall seconds and peak RSS.

Usage (from the repository root):

    cargo build --release -p lance-conformance
    LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES=1 python3 bench/validate_large.py [DIR] [ROWS] [--no-index]

With `--no-index` the BTree index is left out, so the compaction's version is readable by the
reference (INTEROP.md 8) and the rewrite commit is judged too.
"""

import json
import os
import re
import shutil
import subprocess
import sys

os.environ.setdefault("LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "interop"))

import lance  # noqa: E402
import pyarrow as pa  # noqa: E402

from check_reference_datasets import write_value_file  # noqa: E402

OVERLAYS = 10


def build(p, rows, index=True):
    shutil.rmtree(p, ignore_errors=True)
    t = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "val": pa.array([i % 1000 for i in range(rows)], pa.int32()),
            "s": pa.array([f"s{i % 97}" for i in range(rows)], pa.string()),
        }
    )
    lance.write_dataset(t, p, data_storage_version="2.0", enable_stable_row_ids=True, max_rows_per_file=rows // 10)
    for k in range(OVERLAYS):
        ds = lance.dataset(p)
        offsets = list(range(k * 1000, (k + 1) * 1000))
        f = write_value_file(p, f"ov{k}.lance", pa.table({"val": pa.array([-k] * 1000, pa.int32())}))
        frag = ds.get_fragments()[0].fragment_id
        op = lance.LanceOperation.DataOverlay(
            [lance.LanceOperation.DataOverlayGroup(frag, [lance.LanceOperation.DataOverlayFile(f, offsets)])]
        )
        lance.LanceDataset.commit(p, op, read_version=ds.version)
    ds = lance.dataset(p)
    ds.delete("id % 1000 = 7")
    if index:
        ds.create_scalar_index("val", "BTREE")
    lance.write_dataset(t.slice(0, 1000), p, mode="append", data_storage_version="2.0")
    lance.dataset(p).optimize.compact_files(target_rows_per_fragment=rows // 5)


def main():
    argv = [a for a in sys.argv[1:] if not a.startswith("--")]
    p = argv[0] if argv else "/tmp/validate-large"
    rows = int(argv[1]) if len(argv) > 1 else 1_000_000
    build(p, rows, index="--no-index" not in sys.argv)
    r = subprocess.run(
        ["/usr/bin/time", "-v", "target/release/lance-conformance", "validate", p, "--format", "json"],
        capture_output=True,
        text=True,
    )
    report = json.loads(r.stdout)
    wall = re.search(r"Elapsed \(wall clock\) time .*: (\S+)", r.stderr).group(1)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(p) for f in fs)
    print(f"rows {rows}, {len(report['versions'])} versions, {size / 1e6:.1f} MB on disk")
    print(f"commits: {'; '.join(str(c['version']) + ' ' + '+'.join(c['kinds']) for c in report['commits'])}")
    print(f"findings: {len(report['findings'])}")
    for f in report["findings"][:10]:
        print(f"  v{f['version']} {f['code']} {f['requirements']}: {f['message'][:200]}")
    print(f"validate: wall {wall}, peak RSS {rss / 1024:.0f} MiB, exit {r.returncode}")


if __name__ == "__main__":
    main()
