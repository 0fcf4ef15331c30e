#!/usr/bin/env python3
"""`lance-conformance validate` on datasets pylance 14.0.2 writes (spec/validate.md).

Builds the pylance-written datasets of check_reference_datasets.py (plain types with deletes
and an append; stable row ids with a bitmap delete, a row-moving update, a BTree index and a
dense overlay; compaction with spilled lineage), a few more histories pinned to data file
version 2.0 (two overlay commits and an index build after them; compaction without spilling; an
overlay, then a compaction that rewrites the overlaid fragment; a BTree remapped by compaction;
no stable row ids), and a dozen realistic histories written through pylance's public API
(`realistic`: appends, deletes, updates, `add_columns`, overlays written with
`LanceFileWriter` and committed with `LanceOperation.DataOverlay`, spilled lineage with
compaction and a row-moving update, BTree and IVF indices, stable row ids, a struct column,
restore, 6,000-row string columns). Each realistic history is written twice: with Lance's
default settings (data file version 2.2), named `<name>@default`, and pinned to 2.0, named
`<name>@2.0`. It runs `validate --format json` on each and prints every finding.

Findings that are recorded Lance differences are listed in EXPECTED_FINDINGS (dataset ->
codes, INTEROP.md "validate on Lance-written datasets"); refusals the kit cannot judge past
(exit 2) in EXPECTED_UNJUDGED; anything else fails, and so does an exit code that does not
follow from the report. Whether the tree reads data file version 2.2 is READS_2_2: while it is
False every version of a default-settings history must be not judged in full, for its 2.2
files alone, with no finding (each version is judged at the manifest level once the manifest's
2.2 entries are accepted); a probe checks the constant on every run (the script fails when the
tree reads 2.2 and READS_2_2 is still False, or the other way round), and once it is True the
default histories must validate exactly as their 2.0 twins do.

Usage (from the repository root):

    cargo build --release -p lance-conformance
    LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES=1 \\
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
from lance.file import LanceFileReader, LanceFileWriter  # noqa: E402
from lance.fragment import DataFile  # noqa: E402

from check_reference_datasets import lance_written, write_value_file  # noqa: E402

# Whether the reference reads data file version 2.2 (Lance 14's default). Checked against a
# probe on every run, so it cannot go stale in either direction unnoticed.
READS_2_2 = True

# dataset name -> the finding codes it is expected to have (each a triaged Lance bug, with the
# requirement it breaks, in INTEROP.md "validate on Lance-written datasets"). Empty: none.
EXPECTED_FINDINGS = {}

# dataset name -> codes validate may not judge past (exit 2): features the kit does not
# implement, each refused by name.
EXPECTED_UNJUDGED = {}


def waits_for_2_2(name):
    """Whether `name` is a default-settings history the tree cannot read yet: every version is
    not judged in full, for its 2.2 files alone (refused in the manifest as `unsupported`, or,
    once the manifest's 2.2 entries are accepted, in the files as `unsupported_file_version`
    or `unsupported_encoding`, with the version judged at the manifest level)."""
    return name.endswith("@default") and not READS_2_2


def expected_unjudged(name):
    return sorted(EXPECTED_UNJUDGED.get(name, []))


def expected_findings(name):
    if waits_for_2_2(name):
        return []
    return sorted(EXPECTED_FINDINGS.get(name, []))


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
    # an index, then a compaction of the indexed fragments: Lance remaps the index (IDX-READ-9)
    p = os.path.join(work, "lance", "index-compact")
    lance.write_dataset(big, p, data_storage_version="2.0", enable_stable_row_ids=True, max_rows_per_file=100)
    lance.dataset(p).create_scalar_index("val", "BTREE")
    lance.dataset(p).optimize.compact_files(target_rows_per_fragment=1000)
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


def value_file(p, name, table, version):
    """Writes `table` with LanceFileWriter (its default file version when `version` is None)
    into `data/`, and returns its DataFile, with the version the file itself records."""
    path = os.path.join(p, "data", name)
    kw = {"version": version} if version else {}
    with LanceFileWriter(path, table.schema, **kw) as writer:
        writer.write_batch(table)
    meta = LanceFileReader(path).metadata()
    major, minor = meta.major_version, meta.minor_version
    if (major, minor) == (0, 3):
        major, minor = 2, 0
    ds = lance.dataset(p)
    ids = [ds.lance_schema.field(n).id() for n in table.column_names]
    return DataFile(name, ids, list(range(len(ids))), major, minor, os.path.getsize(path))


def commit_overlay(p, fragment_index, table, offsets, name, version):
    ds = lance.dataset(p)
    f = value_file(p, name, table, version)
    frag = ds.get_fragments()[fragment_index].fragment_id
    op = lance.LanceOperation.DataOverlay(
        [lance.LanceOperation.DataOverlayGroup(frag, [lance.LanceOperation.DataOverlayFile(f, offsets)])]
    )
    lance.LanceDataset.commit(p, op, read_version=ds.version)


def vectors(n, dim, seed):
    # Deterministic, spread values (no numpy needed): a small linear congruential sequence.
    x, out = seed, []
    for _ in range(n * dim):
        x = (x * 1103515245 + 12345) % (1 << 31)
        out.append((x % 10000) / 1000.0)
    return pa.FixedSizeListArray.from_arrays(pa.array(out, pa.float32()), dim)


def realistic(work, storage):
    """The realistic histories, written with data file version `storage` (None: Lance's
    default). Returns (name, path) pairs."""
    tag = storage or "default"
    kw = {"data_storage_version": storage} if storage else {}
    out = []

    def path(name):
        p = os.path.join(work, tag, name)
        out.append((f"{name}@{tag}", p))
        return p

    n = 6000
    people = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "name": pa.array([None if i % 97 == 0 else f"person-{i:05d}-{'x' * (i % 13)}" for i in range(n)], pa.string()),
            "city": pa.array([["Oslo", "Lima", "Pune", "Kyiv"][i % 4] for i in range(n)], pa.string()),
            "score": pa.array([None if i % 31 == 0 else i * 0.25 for i in range(n)], pa.float64()),
            "age": pa.array([i % 90 for i in range(n)], pa.int32()),
        }
    )
    # 1. appends and deletes on 6,000-row string columns
    p = path("appends-deletes")
    ds = lance.write_dataset(people, p, max_rows_per_file=2500, **kw)
    ds.delete("age = 7 OR id < 100")
    lance.write_dataset(people.slice(0, 700), p, mode="append", **kw)
    lance.dataset(p).delete("city = 'Lima' AND age > 80")
    lance.write_dataset(people.slice(700, 300), p, mode="append", **kw)
    # 2. updates without stable row ids (rows move into new fragments)
    p = path("updates")
    ds = lance.write_dataset(people, p, max_rows_per_file=3000, **kw)
    ds.update({"score": "score * 2", "city": "'Rome'"}, where="age < 5")
    lance.dataset(p).update({"name": "upper(name)"}, where="id % 500 = 1")
    # 3. add_columns (a Merge: one more data file per fragment), then an append and a delete
    p = path("add-columns")
    ds = lance.write_dataset(people, p, max_rows_per_file=4000, **kw)
    ds.add_columns({"age2": "age * 2", "label": "concat(city, '-', CAST(age AS VARCHAR))"})
    lance.write_dataset(lance.dataset(p).to_table().slice(0, 50), p, mode="append", **kw)
    lance.dataset(p).delete("id = 3")
    # 4. overlays written with LanceFileWriter (the dataset's version, or the writer's default)
    p = path("overlays")
    ds = lance.write_dataset(people, p, max_rows_per_file=3000, enable_stable_row_ids=True, **kw)
    commit_overlay(p, 0, pa.table({"age": pa.array([1, 2, 3], pa.int32())}), [0, 5, 2999], "ov-a.lance", storage)
    commit_overlay(
        p, 1, pa.table({"name": pa.array(["a", None], pa.string()), "score": pa.array([1.5, None], pa.float64())}),
        [10, 11], "ov-b.lance", storage,
    )
    lance.dataset(p).delete("id = 5")
    lance.dataset(p).create_scalar_index("age", "BTREE")
    # 5. spilled lineage: stable row ids, spilling on, a row-moving update, deletes, compaction
    p = path("spilled-compaction")
    ds = lance.write_dataset(people, p, max_rows_per_file=1000, enable_stable_row_ids=True, **kw)
    ds.update_config({"lance.row_lineage.spill": "true", "lance.row_lineage.inline_max_bytes": "0"})
    lance.dataset(p).update({"score": "score + 1"}, where="age = 3")
    lance.dataset(p).delete("age = 4")
    lance.dataset(p).optimize.compact_files(target_rows_per_fragment=10000)
    # 6. BTree index, appends, index optimisation, then a compaction that remaps it
    p = path("btree")
    ds = lance.write_dataset(people, p, max_rows_per_file=2000, **kw)
    ds.create_scalar_index("age", "BTREE")
    lance.write_dataset(people.slice(0, 500), p, mode="append", **kw)
    lance.dataset(p).optimize.optimize_indices()
    lance.dataset(p).delete("id % 7 = 0")
    lance.dataset(p).optimize.compact_files(target_rows_per_fragment=10000)
    # 7. IVF_FLAT with many partitions, an append and a delete; then, with stable row ids, a
    # compaction that moves the indexed rows (the index keeps its row ids, IDX-READ-9)
    m = 2000
    vec = pa.table({"id": pa.array(range(m), pa.int64()), "v": vectors(m, 8, 7)})
    p = path("ivf-flat")
    ds = lance.write_dataset(vec, p, max_rows_per_file=1000, **kw)
    ds.create_index("v", index_type="IVF_FLAT", num_partitions=8)
    lance.write_dataset(vec.slice(0, 100), p, mode="append", **kw)
    lance.dataset(p).delete("id < 10")
    p = path("ivf-flat-compact")
    ds = lance.write_dataset(vec, p, max_rows_per_file=500, enable_stable_row_ids=True, **kw)
    ds.create_index("v", index_type="IVF_FLAT", num_partitions=4)
    lance.dataset(p).delete("id % 5 = 0")
    lance.dataset(p).optimize.compact_files(target_rows_per_fragment=10000)
    # 8. IVF_PQ: judged by its row ids, its codes not compared with the vectors (IDX-READ-10)
    p = path("ivf-pq")
    ds = lance.write_dataset(vec, p, max_rows_per_file=1000, **kw)
    ds.create_index("v", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=2)
    # then an append the index takes in, a delete and a compaction that remaps it
    lance.write_dataset(vec.slice(0, 100), p, mode="append", **kw)
    lance.dataset(p).optimize.optimize_indices()
    lance.dataset(p).delete("id % 7 = 0")
    lance.dataset(p).optimize.compact_files(target_rows_per_fragment=10000)
    # 9. stable row ids: appends, an in-place update, a delete, a BTree over row ids
    p = path("stable-ids")
    ds = lance.write_dataset(people, p, max_rows_per_file=2000, enable_stable_row_ids=True, **kw)
    lance.write_dataset(people.slice(0, 100), p, mode="append", **kw)
    lance.dataset(p).update({"age": "age + 100"}, where="id % 1000 = 0")
    lance.dataset(p).delete("id % 3 = 1")
    lance.dataset(p).create_scalar_index("id", "BTREE")
    # 10. a struct column: appends, a delete, an update
    s = pa.table(
        {
            "id": pa.array(range(3000), pa.int64()),
            "addr": pa.StructArray.from_arrays(
                [
                    pa.array([f"street {i}" for i in range(3000)], pa.string()),
                    pa.array([None if i % 17 == 0 else i for i in range(3000)], pa.int32()),
                ],
                names=["street", "zip"],
            ),
        }
    )
    p = path("struct")
    ds = lance.write_dataset(s, p, max_rows_per_file=1000, **kw)
    lance.write_dataset(s.slice(0, 10), p, mode="append", **kw)
    lance.dataset(p).delete("id % 11 = 0")
    # 11. restore an older version after an append and a delete
    p = path("restore")
    ds = lance.write_dataset(people, p, **kw)
    lance.write_dataset(people.slice(0, 10), p, mode="append", **kw)
    lance.dataset(p).delete("id < 50")
    lance.dataset(p, version=2).restore()
    lance.write_dataset(people.slice(10, 10), p, mode="append", **kw)
    # 12. an overlaid fragment compacted with an index on the overlaid field (Lance drops the
    # fragments from that index's coverage, OVL-RWR-3) and on another field (remapped)
    p = path("overlay-index-compact")
    ds = lance.write_dataset(people, p, max_rows_per_file=1500, enable_stable_row_ids=True, **kw)
    ds.create_scalar_index("age", "BTREE")
    lance.dataset(p).create_scalar_index("id", "BTREE")
    commit_overlay(p, 0, pa.table({"age": pa.array([70, 71], pa.int32())}), [1, 2], "ov-c.lance", storage)
    lance.dataset(p).delete("id = 1600")
    lance.dataset(p).optimize.compact_files(target_rows_per_fragment=10000)
    return out


def probe_reads_2_2(work, binary):
    """Whether `binary` judges a minimal default-settings (2.2) dataset."""
    p = os.path.join(work, "probe-2.2")
    lance.write_dataset(pa.table({"x": pa.array([1, 2, 3], pa.int32())}), p)
    r = subprocess.run([binary, "validate", p, "--format", "json"], capture_output=True, text=True)
    report = json.loads(r.stdout)
    return not any("2.2" in f["message"] for f in report["unjudged"] + report["findings"])


def judge(binary, name, p, problems):
    r = subprocess.run([binary, "validate", p, "--format", "json"], capture_output=True, text=True)
    if r.returncode not in (0, 1, 2) or not r.stdout:
        problems.append(f"{name}: validate exited {r.returncode}: {r.stderr.strip()}")
        return
    report = json.loads(r.stdout)
    unjudged = sorted({f["code"] for f in report["unjudged"]})
    codes = sorted({f["code"] for f in report["findings"]})
    n = len(report["versions"])
    kinds = "; ".join(f"v{c['version']} {'+'.join(c['kinds']) or '-'}" for c in report["commits"])
    state = "FIND" if codes else ("SKIP" if unjudged else "ok  ")
    print(f"{state} {name}: {n} versions, {len(report['commits'])} commits judged ({kinds}), {len(report['findings'])} finding(s)")
    for f in report["unjudged"]:
        print(f"     v{f['version']} cannot judge {f['code']} {f['requirements']}: {f['message'][:200]}")
    for f in report["findings"]:
        print(f"     v{f['version']} {f['class']}/{f['code']} {f['requirements']} {f['field']}: {f['message'][:300]}")
    if waits_for_2_2(name):
        # Every version is refused for its 2.2 files, and for nothing else.
        refused = {f["version"] for f in report["unjudged"]}
        if refused != {v["version"] for v in report["versions"]}:
            problems.append(f"{name}: versions {sorted(refused)} not judged for 2.2, expected all")
        stray = [f["message"] for f in report["unjudged"] if "2.2" not in f["message"]]
        if stray or not set(unjudged) <= {"unsupported", "unsupported_file_version", "unsupported_encoding"}:
            problems.append(f"{name}: not judged for a reason other than data file version 2.2: {unjudged} {stray[:1]}")
    elif unjudged != expected_unjudged(name):
        problems.append(f"{name}: not judged {unjudged}, expected {expected_unjudged(name)}")
    if codes != expected_findings(name):
        problems.append(f"{name}: findings {codes}, expected {expected_findings(name)}")
    want_exit = 1 if report["findings"] else (2 if unjudged else 0)
    if r.returncode != want_exit:
        problems.append(f"{name}: exit {r.returncode}, expected {want_exit}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/lance-conformance")
    ap.add_argument("--only", help="judge only histories whose name contains this text")
    args = ap.parse_args()
    print(f"lance {lance.__version__}")
    problems = []
    with tempfile.TemporaryDirectory() as work:
        reads = probe_reads_2_2(work, args.bin)
        print(f"this tree reads data file version 2.2: {reads}")
        if reads != READS_2_2:
            problems.append(f"the probe says the tree reads 2.2: {reads}, but READS_2_2 is {READS_2_2}: update it")
        named = [(os.path.basename(p), p) for p in lance_written(work) + more(work)]
        named += realistic(work, None) + realistic(work, "2.0")
        for name, p in named:
            if args.only and args.only not in name:
                continue
            judge(args.bin, name, p, problems)
    for p in problems:
        print("PROBLEM", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
