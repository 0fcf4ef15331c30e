#!/usr/bin/env python3
"""Turns the results of `cargo bench -p lance-conformance-bench --features criterion` into the ratios BENCHMARKS.md reports.

    python3 bench/ratios.py [target dir]   # default: $CARGO_TARGET_DIR or ./target

Reads criterion's `<target>/criterion/**/new/{benchmark,sample}.json`. Each benchmark's time
is its fastest sample (time / iterations): on a shared machine noise only ever adds time.
Absolute times are noise there, so everything is printed as a ratio:

- resolution: `plain_copy / resolve` per configuration (1.0 = as fast as cloning the column;
  the target is >= 0.5);
- scan from disk: `overlaid / base` per configuration, the overlay read overhead (targets:
  <= 1.5 for 16x10%, <= 1.1 for 4x1%);
- everything else: its time in units of `resolve_1m/plain_copy` (cloning 1M values), so the
  numbers travel between machines better than seconds do.
"""

import json
import os
import sys
from pathlib import Path


def fastest(directory):
    sample = json.loads((directory / "sample.json").read_text())
    return min(t / i for t, i in zip(sample["times"], sample["iters"]))


def load(root):
    times = {}
    for bench in sorted(root.glob("**/new/benchmark.json")):
        full_id = json.loads(bench.read_text())["full_id"]
        times[full_id] = fastest(bench.parent)
    return times


def main():
    target = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CARGO_TARGET_DIR", "target"))
    times = load(target / "criterion")
    if not times:
        sys.exit(f"no criterion results under {target / 'criterion'}; run cargo bench first")
    copy = times.get("resolve_1m/plain_copy")

    print("## resolution: plain copy / resolve (target >= 0.5)")
    for name, t in times.items():
        if name.startswith("resolve_1m/") and name != "resolve_1m/plain_copy" and copy:
            ratio = copy / t
            print(f"{name[len('resolve_1m/'):]:<22} {ratio:5.2f}  {'met' if ratio >= 0.5 else 'missed'}")

    print("\n## scan from disk: overlaid / base (overlay read overhead)")
    targets = {"16x10%": 1.5, "4x1%": 1.1}
    for config, limit in targets.items():
        base = times.get(f"scan_from_disk_1m/{config}/base")
        over = times.get(f"scan_from_disk_1m/{config}/overlaid")
        if base and over:
            ratio = over / base
            print(f"{config:<22} {ratio:5.2f}  target <= {limit}: {'met' if ratio <= limit else 'missed'}")

    print("\n## everything else, in units of one plain copy of 1M values")
    for name, t in times.items():
        if not name.startswith("resolve_1m/") and copy:
            print(f"{name:<62} {t / copy:10.4f}")


if __name__ == "__main__":
    main()
