#!/usr/bin/env python3
"""`lance-conformance validate` on datasets pylance 14.0.2 writes (spec/validate.md).

Builds the pylance-written datasets of check_reference_datasets.py (plain types with deletes
and an append; stable row ids with a bitmap delete, a row-moving update, a BTree index and a
dense overlay; compaction with spilled lineage) plus a few more histories (two overlay
commits and an index build after them; compaction without spilling; an overlay, then a
compaction that rewrites the overlaid fragment), runs `validate --format json` on each, and
prints every finding. Findings that are recorded Lance differences are listed in
EXPECTED_FINDINGS (dataset -> codes); anything else fails.

Usage (from the repository root):

    cargo build --release -p lance-conformance
    LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES=1 \
        python3 tests/interop/validate_lance_written.py [--bin target/release/lance-conformance]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES", "1")
sys.path.insert(0, os.path.dirname(__file__))

import lance  # noqa: E402
import pyarrow as pa  # noqa: E402

from check_reference_datasets import lance_written, write_value_file  # noqa: E402

# dataset name -> the finding codes it is expected to have (a recorded Lance difference,
# INTEROP.md "validate on Lance-written datasets").
EXPECTED_FINDINGS = {
    # Lance's compaction remaps a BTree index into the new fragments and keeps its
    # dataset_version, so fragment_bitmap names fragments that did not exist then (IDX-READ-4).
    "index-compact": ["index_coverage_without_entries"],
}

# dataset -> codes validate may not judge past (exit 2, no findings): Lance 14's default data
# file version is 2.2, which the reference does not decode yet (issue 25). When it does, this
# entry goes and the history must validate clean.
EXPECTED_UNJUDGED = {
    "default-version": ["unsupported"],
}


def overlay(p, values, offsets, name):
    ds = lance.dataset(p)
    f = write_value_file(p, name, pa.table({"val": pa.array(values, pa.int32())}))
    frag = ds.get_fragments()[0].fragment_id
    op = lance.LanceOperation.DataOverlay(
        [lance.LanceOperation.DataOverlayGroup(frag, [lance.LanceOperation.DataOverlayFile(f, offsets)])]
    )
    lance.LanceDataset.commit(p, op, read_version=ds.version)


def more(work):
    paths = []
    big = pa.table({"id": pa.array(range(1000), pa.int64()), "val": pa.array(range(1000), pa.int32())})
    # two overlay commits, then an index build, then an append
    p = os.path.join(work, "lance", "overlays-index")
    lance.write_dataset(big, p, data_storage_version="2.0", enable_stable_row_ids=True, max_rows_per_file=500)
    overlay(p, [-1, -2], [3, 10], "ov1.lance")
    overlay(p, [-3], [10], "ov2.lance")
    lance.dataset(p).create_scalar_index("val", "BTREE")
    lance.write_dataset(big.slice(0, 10), p, mode="append", data_storage_version="2.0")
    paths.append(p)
    # compaction without spilling, after deletes
    p = os.path.join(work, "lance", "compact")
    ds = lance.write_dataset(big, p, data_storage_version="2.0", enable_stable_row_ids=True, max_rows_per_file=100)
    ds.delete("id % 3 = 0")
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    paths.append(p)
    # an overlay, then a compaction rewriting the overlaid fragment
    p = os.path.join(work, "lance", "overlay-compact")
    lance.write_dataset(big, p, data_storage_version="2.0", enable_stable_row_ids=True, max_rows_per_file=100)
    overlay(p, [-1, -2], [3, 10], "ov1.lance")
    lance.dataset(p).delete("id = 50")
    lance.dataset(p).optimize.compact_files(target_rows_per_fragment=1000)
    paths.append(p)
    # an index, then a compaction of the indexed fragments
    p = os.path.join(work, "lance", "index-compact")
    lance.write_dataset(big, p, data_storage_version="2.0", enable_stable_row_ids=True, max_rows_per_file=100)
    lance.dataset(p).create_scalar_index("val", "BTREE")
    lance.dataset(p).optimize.compact_files(target_rows_per_fragment=1000)
    paths.append(p)
    # Lance 14's default settings (data file version 2.2): write, delete, append, BTree index
    p = os.path.join(work, "lance", "default-version")
    ds = lance.write_dataset(big, p)
    ds.delete("id < 10")
    lance.write_dataset(big.slice(0, 10), p, mode="append")
    lance.dataset(p).create_scalar_index("id", "BTREE")
    paths.append(p)
    # no stable row ids: append, delete, update, compaction
    p = os.path.join(work, "lance", "unstable-ids")
    lance.write_dataset(big, p, data_storage_version="2.0", max_rows_per_file=300)
    ds = lance.dataset(p)
    ds.delete("id < 20")
    ds.update({"val": "val * 2"}, where="id > 990")
    ds.optimize.compact_files(target_rows_per_fragment=2000)
    paths.append(p)
    return paths


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/lance-conformance")
    args = ap.parse_args()
    print(f"lance {lance.__version__}")
    problems = []
    with tempfile.TemporaryDirectory() as work:
        for p in lance_written(work) + more(work):
            name = os.path.basename(p)
            r = subprocess.run([args.bin, "validate", p, "--format", "json"], capture_output=True, text=True)
            if r.returncode not in (0, 1, 2) or not r.stdout:
                problems.append(f"{name}: validate exited {r.returncode}: {r.stderr.strip()}")
                continue
            report = json.loads(r.stdout)
            unjudged = sorted({f["code"] for f in report["unjudged"]})
            if unjudged != sorted(EXPECTED_UNJUDGED.get(name, [])):
                problems.append(f"{name}: not judged {unjudged}, expected {EXPECTED_UNJUDGED.get(name, [])}")
            want_exit = 1 if report["findings"] else (2 if unjudged else 0)
            if r.returncode != want_exit:
                problems.append(f"{name}: exit {r.returncode}, expected {want_exit}")
            for f in report["unjudged"]:
                print(f"     v{f['version']} cannot judge {f['code']}: {f['message'][:200]}")
            codes = sorted({f["code"] for f in report["findings"]})
            n = len(report["versions"])
            kinds = "; ".join(f"v{c['version']} {'+'.join(c['kinds']) or '-'}" for c in report["commits"])
            print(f"{'ok  ' if not codes else 'FIND'} {name}: {n} versions ({kinds}), {len(report['findings'])} finding(s)")
            for f in report["findings"]:
                print(f"     v{f['version']} {f['class']}/{f['code']} {f['requirements']} {f['field']}: {f['message'][:300]}")
            if codes != sorted(EXPECTED_FINDINGS.get(name, [])):
                problems.append(f"{name}: findings {codes}, expected {EXPECTED_FINDINGS.get(name, [])}")
    for p in problems:
        print("PROBLEM", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
