#!/usr/bin/env python3
"""Overlay read overhead, side by side: the reference reader and pylance 14.0.2 on the same
datasets, written once by the reference writer.

    python3 -m venv /work/venv-bench
    /work/venv-bench/bin/pip install pylance==14.0.2 pyarrow
    /work/venv-bench/bin/python bench/side_by_side.py [--repeats 7] [--rows 1000000] [--json out.json]
        [--data-file-version 2.0|2.2] [--bin bench_dataset]

Steps: build `reference-io/examples/bench_dataset.rs` (release), let it write two datasets of
1M rows x 4 columns (`16x10`: 16 dense overlays of 10% on one column, `4x1`: 4 of 1%), in
data file version `--data-file-version` (default 2.0: base files and overlay files alike), each
with version 1 = the base rows alone and version count+1 = the same rows under the overlays;
let it time the reference (open + read_version + scan, from disk); time pylance's
`to_table()` of the same two versions; print, per dataset and reader,

    overlay read overhead = scan time of the overlaid version / scan time of the base version

(the minimum over `--repeats` runs of each, the two versions alternated), how many times
smaller the reference's overhead is than Lance's, the reference's resolution throughput as a
fraction of a plain copy of the output columns (`copy time / resolve time`), and, because the
two overheads divide by very different base scans, the reference's base scan time over
Lance's and the seconds the overlays add to the reference's scan over those they add to
Lance's.

The reference's scan returns each row's fragment, offset, row id and both lineage versions
with the table's columns (what the kit's scan asks of every reader); `to_table()` returns the
table's columns alone. So Lance is also timed asked for those columns the way the pylance
adapter asks (`with_row_id`, `with_row_address`, the two lineage columns), and the base and
overlaid scans are compared with that like-for-like scan too (`lance kit`).

Before timing, pylance's scans are checked to return as many rows as the reference's and to
differ from the base in about the share of `value` cells the overlays cover, so a reader
that ignored the overlays could not pass for a fast one.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES", "1")

REPO = Path(__file__).resolve().parent.parent


def cargo_example(target_dir):
    """Builds bench_dataset in release mode and returns the binary's path."""
    subprocess.run(
        ["cargo", "build", "--release", "-p", "lance-reference-io", "--example", "bench_dataset"],
        cwd=REPO,
        check=True,
    )
    return Path(target_dir) / "release" / "examples" / "bench_dataset"


def json_lines(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def fastest(repeats, run):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


# The columns the kit's scan asks of every reader beside the table's own (spec/conformance.md:
# each row's fragment and offset, `_rowid` and the two lineage versions), asked of Lance the
# way adapters/pylance/testee.py asks them. The reference's `scan_batches` always builds them.
LINEAGE_COLUMNS = ["_row_created_at_version", "_row_last_updated_at_version"]


def plain_scan(ds):
    return ds.to_table()


def kit_scan(ds):
    columns = [f.name for f in ds.schema] + LINEAGE_COLUMNS
    return ds.to_table(columns=columns, with_row_id=True, with_row_address=True)


def time_lance(lance, path, base, overlaid, repeats, scan=plain_scan):
    """Minimum `scan` time of each version, the two alternated."""
    best = {base: float("inf"), overlaid: float("inf")}
    for _ in range(repeats):
        for v in (base, overlaid):
            best[v] = min(best[v], fastest(1, lambda: scan(lance.dataset(path, version=v))))
    return best[base], best[overlaid]


def check_lance(lance, written, reference_rows):
    """pylance sees the same rows and the overlays' values (see the module docs)."""
    path = written["path"]
    base = lance.dataset(path, version=written["base_version"]).to_table()
    over = lance.dataset(path, version=written["overlaid_version"]).to_table()
    if base.num_rows != reference_rows or over.num_rows != reference_rows:
        sys.exit(f"{path}: pylance read {base.num_rows}/{over.num_rows} rows, "
                 f"the reference {reference_rows}")
    a = base.column("value").to_pylist()
    b = over.column("value").to_pylist()
    changed = sum(1 for x, y in zip(a, b) if x != y) / max(len(a), 1)
    expected = 1 - (1 - written["density"]) ** written["overlays"]
    if abs(changed - expected) > 0.01 + expected * 0.1:
        sys.exit(f"{path}: pylance changed {changed:.4f} of `value`, expected ~{expected:.4f}")
    return changed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--dir", help="dataset directory (default: a fresh temporary one)")
    parser.add_argument("--data-file-version", default="2.0", choices=["2.0", "2.2"])
    parser.add_argument("--bin", help="a bench_dataset binary (default: built with cargo)")
    args = parser.parse_args()

    import lance  # noqa: E402  (after the env var is set)

    target_dir = os.environ.get("CARGO_TARGET_DIR", REPO / "target")
    binary = args.bin or cargo_example(target_dir)
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="lance-bench-"))
    written = {w["dataset"]: w for w in json_lines(
        [binary, "write", work, str(args.rows), args.data_file_version])}
    reference = {r["dataset"]: r for r in json_lines([binary, "time", work, str(args.repeats)])}

    results = []
    for name, w in written.items():
        r = reference[name]
        changed = check_lance(lance, w, r["rows"])
        lance_base, lance_over = time_lance(
            lance, w["path"], w["base_version"], w["overlaid_version"], args.repeats)
        lance_overhead = lance_over / lance_base
        # Like for like: Lance asked for the columns the reference's scan always returns.
        kit_base, kit_over = time_lance(
            lance, w["path"], w["base_version"], w["overlaid_version"], args.repeats, kit_scan)
        results.append({
            "dataset": name,
            "data_file_version": w["data_file_version"],
            "rows": r["rows"],
            "overlays": w["overlays"],
            "density": w["density"],
            "value_cells_changed": round(changed, 4),
            "reference_overlay_read_overhead": round(r["overlay_read_overhead"], 3),
            "lance14_overlay_read_overhead": round(lance_overhead, 3),
            "lance14_over_reference_overhead": round(lance_overhead / r["overlay_read_overhead"], 2),
            "reference_resolution_vs_copy": round(r["resolution_vs_copy"], 3),
            # Seconds the overlays add, reference over Lance: the overhead ratios above divide
            # by very different base scans (the reference's is ~100x slower), so this says
            # which reader spends more time on the overlays themselves.
            "reference_added_over_lance14_added": round(
                (r["scan_overlaid_s"] - r["scan_base_s"]) / (lance_over - lance_base), 2),
            "reference_base_over_lance14_base": round(r["scan_base_s"] / lance_base, 1),
            "reference_scan_base_s": round(r["scan_base_s"], 4),
            "reference_scan_overlaid_s": round(r["scan_overlaid_s"], 4),
            "lance14_scan_base_s": round(lance_base, 4),
            "lance14_scan_overlaid_s": round(lance_over, 4),
            "reference_base_over_lance14_kit_scan_base": round(r["scan_base_s"] / kit_base, 2),
            "reference_overlaid_over_lance14_kit_scan_overlaid": round(
                r["scan_overlaid_s"] / kit_over, 2),
            "lance14_kit_scan_base_s": round(kit_base, 4),
            "lance14_kit_scan_overlaid_s": round(kit_over, 4),
        })

    print(f"pylance {lance.__version__}, {args.rows} rows, data file {args.data_file_version}, "
          f"min of {args.repeats} runs")
    header = ("dataset", "ref overhead", "lance overhead", "lance/ref", "ref resolve/copy",
              "ref base/lance base", "ref added/lance added", "ref base/lance kit base",
              "ref over/lance kit over")
    print("{:<8} {:>13} {:>15} {:>10} {:>17} {:>20} {:>22} {:>24} {:>24}".format(*header))
    for x in results:
        print("{:<8} {:>12.2f}x {:>14.2f}x {:>9.2f}x {:>17.2f} {:>19.1f}x {:>21.2f}x {:>23.2f}x "
              "{:>23.2f}x".format(
                  x["dataset"], x["reference_overlay_read_overhead"],
                  x["lance14_overlay_read_overhead"], x["lance14_over_reference_overhead"],
                  x["reference_resolution_vs_copy"], x["reference_base_over_lance14_base"],
                  x["reference_added_over_lance14_added"],
                  x["reference_base_over_lance14_kit_scan_base"],
                  x["reference_overlaid_over_lance14_kit_scan_overlaid"]))
    print("(lance: to_table(); lance kit: to_table() with the columns the kit's scan asks for, "
          "row id, row address and both lineage versions, as the reference's scan returns them)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
