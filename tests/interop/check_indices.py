#!/usr/bin/env python3
"""Index files between the reference and pylance 14.0.2, both directions (spec/indices.md).

1. Indices pylance WRITES: BTree on an int32 and a utf8 column (NULLs included) and IVF_FLAT
   with one partition on a vector column, over two fragments, with and without stable row ids,
   then a deletion and an append after the build. The reference reads every version
   (examples/index_dump.rs prints the entries it read from the index files after all of its
   checks), and the entries must equal pylance's own scan of the version each index claims:
   every live row of the covered fragments with its value (vector indices: non-NULL vectors
   only). Then one index file is removed and the reference must refuse the version
   (missing_file).
2. Indices the reference WRITES: every index of every readable version of every corpus case
   (conformance-cases/*/*/dataset, the versions with an expected/v<N>.json) is opened by
   pylance and queried through it, a BTree with `<key> IS NOT NULL`, a vector index with the
   nearest 3 rows to the zero vector. Lance's plan must name the index, and the answer must
   equal Lance's flat path (use_scalar_index=False / use_index=False). An index whose
   fragment_bitmap covers no fragment of the version is expected on the flat path instead.

Known differences are listed in EXPECTED_LANCE_DIFFERENCES with the reason; the check requires
them to still happen, so a change in Lance is noticed.

Usage (from the repository root):

    cargo build --release -p lance-reference-io --examples
    LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES=1 \
        python3 tests/interop/check_indices.py [--bin-dir target/release/examples]

Exit status 0 when every check holds.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib

os.environ.setdefault("LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES", "1")
os.environ.setdefault("LANCE_LOG", "error")  # no deprecation chatter from vector searches

import lance  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

# (case id, version, index name) -> a substring of the error Lance 14.0.2 raises instead; an
# index name of None: Lance cannot even open the version. (The versions of
# exclusion-nested-ancestry that Lance cannot scan, INTEROP.md 1, still answer these queries:
# they project no struct column.)
EXPECTED_LANCE_DIFFERENCES = {
    # INTEROP.md 10: a struct position with a bitmap of its own, wider than its child's.
    ("exclusion-struct-position-ignored", 2, "city_idx"): "its children have differing lengths",
    # INTEROP.md 11: an index without fragment_bitmap; the spec says it covers no fragment.
    ("index-without-coverage", 2, None): "Fragment bitmap is required",
    ("index-without-coverage", 3, None): "Fragment bitmap is required",
    ("index-without-coverage", 4, None): "Fragment bitmap is required",
}

# (case id, version, index name) -> why Lance 14.0.2 answers on the flat path although the
# index covers a fragment of the version (adapters/pylance/known-failures/14.0.2.txt).
EXPECTED_LANCE_FLAT = {
    ("second-vector-index-on-a-column", 4, "v_new"): (
        "two vector indices on one column, the first with an empty fragment_bitmap: Lance "
        "searches neither"
    ),
}

problems = []


def problem(text):
    problems.append(text)
    print(f"FAIL {text}")


def ok(text):
    print(f"ok   {text}")


def dump(bin_dir, path, version):
    run = subprocess.run(
        [os.path.join(bin_dir, "index_dump"), path, str(version)],
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        return None, run.stderr.strip()
    return [json.loads(line) for line in run.stdout.splitlines() if line.strip()], None


def norm(v):
    if isinstance(v, list):
        return [None if x is None else float(np.float32(x)) for x in v]
    if isinstance(v, float):
        return float(np.float32(v))
    return v


# ---------------------------------------------------------------- 1. pylance writes

def lance_written(root, stable):
    path = os.path.join(root, f"lance-indices-{'stable' if stable else 'plain'}")
    dim = 4

    def batch(start, n):
        return pa.table(
            {
                "id": pa.array(range(start, start + n), pa.int64()),
                "age": pa.array([None if i % 7 == 3 else (i * 37) % 50 for i in range(start, start + n)], pa.int32()),
                "name": pa.array([None if i % 5 == 2 else f"n{(i * 13) % 17}" for i in range(start, start + n)], pa.string()),
                "emb": pa.FixedSizeListArray.from_arrays(
                    pa.array([float((i * 3 + j) % 11) for i in range(start, start + n) for j in range(dim)], pa.float32()),
                    dim,
                ),
            }
        )

    kw = {"data_storage_version": "2.0", "enable_stable_row_ids": stable}
    lance.write_dataset(batch(0, 12), path, max_rows_per_file=6, **kw)
    ds = lance.dataset(path)
    ds.create_scalar_index("age", "BTREE")
    ds = lance.dataset(path)
    ds.create_scalar_index("name", "BTREE")
    ds = lance.dataset(path)
    ds.create_index(
        "emb", "IVF_FLAT", num_partitions=1, ivf_centroids=np.zeros((1, dim), dtype=np.float32)
    )
    ds = lance.dataset(path)
    ds.delete("id = 4")
    lance.write_dataset(batch(12, 3), path, mode="append", **kw)
    return path


def truth(path, index):
    """(fragment, offset) -> value, for the rows index `index` must hold (pylance's scan of the
    version it claims, restricted to its coverage)."""
    ds = lance.dataset(path, version=index["dataset_version"])
    field = index["fields"][0]
    t = ds.to_table(columns=[field], with_row_address=True)
    covered = set(index["fragment_ids"])
    out = {}
    for addr, v in zip(t.column("_rowaddr").to_pylist(), t.column(field).to_pylist()):
        frag, off = addr >> 32, addr & 0xFFFFFFFF
        if frag not in covered:
            continue
        if index["kind"] == "vector" and (v is None or any(x is None for x in v)):
            continue
        out[(frag, off)] = norm(v)
    return out


def check_lance_written(bin_dir, root):
    for stable in (False, True):
        path = lance_written(root, stable)
        name = f"lance-written {'stable' if stable else 'plain'}"
        ds = lance.dataset(path)
        for version in [v["version"] for v in ds.versions()]:
            entries, err = dump(bin_dir, path, version)
            if entries is None:
                problem(f"{name} v{version}: the reference refuses it: {err}")
                continue
            at = lance.dataset(path, version=version)
            indices = {}
            for i in at.list_indices():
                indices[i["name"]] = i
            for iname, meta in indices.items():
                got = {(e["fragment"], e["offset"]): norm(e["value"]) for e in entries if e["index"] == iname}
                kind = "vector" if meta["type"].upper().startswith("IVF") else "btree"
                dv = next((e["dataset_version"] for e in entries if e["index"] == iname), None)
                if dv is None:
                    # No entry read: the index must hold nothing at its version.
                    dv = version
                want = truth(path, {"dataset_version": dv, "fields": meta["fields"], "fragment_ids": list(meta["fragment_ids"]), "kind": kind})
                if got != want:
                    problem(f"{name} v{version} {iname}: the reference read {len(got)} entries, pylance's scan at v{dv} gives {len(want)}; first differences: {sorted(set(got.items()) ^ set(want.items()), key=str)[:4]}")
                else:
                    ok(f"{name} v{version} {iname} ({kind}, dataset_version {dv}): {len(got)} entries match")
        # Damage: remove one index file of the newest version; the reference must refuse it.
        ds = lance.dataset(path)
        victim = next(i for i in ds.list_indices() if i["name"] == "age_idx")
        lookup = os.path.join(path, "_indices", victim["uuid"], "page_lookup.lance")
        os.remove(lookup)
        entries, err = dump(bin_dir, path, ds.version)
        if entries is None and "missing_file" in (err or ""):
            ok(f"{name} v{ds.version} without page_lookup.lance: the reference refuses it ({err.split(':')[0]})")
        else:
            problem(f"{name} v{ds.version} without page_lookup.lance: expected missing_file, got {err or 'a read'}")


# ---------------------------------------------------------------- 2. the reference writes

def ident(name):
    return ".".join(f"`{p}`" for p in name.split("."))


def expected_dir(area_dir, case):
    """A case's `expected/`; a twin (`twin_of` in its case.toml) has none and shares its source's."""
    with open(os.path.join(area_dir, case, "case.toml"), "rb") as f:
        twin_of = tomllib.load(f).get("twin_of")
    return os.path.join(area_dir, twin_of or case, "expected")


def check_reference_written(cases_root):
    for area in sorted(os.listdir(cases_root)):
        area_dir = os.path.join(cases_root, area)
        if not os.path.isdir(area_dir):
            continue
        for case in sorted(os.listdir(area_dir)):
            dataset = os.path.join(area_dir, case, "dataset")
            expected = expected_dir(area_dir, case)
            if not os.path.isdir(os.path.join(dataset, "_indices")):
                continue
            versions = sorted(
                int(f[1:-5]) for f in os.listdir(expected) if f.startswith("v") and f.endswith(".json")
            )
            for version in versions:
                check_reference_version(case, dataset, version)


def check_reference_version(case, dataset, version):
    try:
        ds = lance.dataset(dataset, version=version)
        indices = ds.list_indices()
        fragments = {f.fragment_id for f in ds.get_fragments()}
    except Exception as e:  # noqa: BLE001
        recorded = EXPECTED_LANCE_DIFFERENCES.get((case, version, None))
        if recorded is not None and recorded in str(e):
            ok(f"{case} v{version}: Lance cannot open it, as recorded ({recorded})")
        else:
            problem(f"{case} v{version}: pylance cannot open it: {e}")
        return
    if (case, version, None) in EXPECTED_LANCE_DIFFERENCES:
        problem(f"{case} v{version}: Lance opens it now; update EXPECTED_LANCE_DIFFERENCES")
        return
    for index in indices:
        key = (case, version, index["name"])
        covered = set(index["fragment_ids"]) & fragments
        field = index["fields"][0]
        # Lance picks the index itself: another index on the same key counts as the index path.
        names = [i["name"] for i in indices if i["fields"][:1] == index["fields"][:1]]
        vector = index["type"].upper().startswith("IVF")
        try:
            if vector:
                dim = ds.schema.field(field).type.list_size
                q = {"column": field, "q": [0.0] * dim, "k": 3, "metric": "l2"}
                scanner = ds.scanner(columns=[], nearest=q, with_row_address=True)
                plan = scanner.explain_plan(True)
                used = any(f"ANNSubIndex: name={n}," in plan for n in names)
                got = scanner.to_table()
                flat = ds.to_table(columns=[], nearest={**q, "use_index": False}, with_row_address=True)
                answer = list(zip(got.column("_rowaddr").to_pylist(), got.column("_distance").to_pylist()))
                expected = list(zip(flat.column("_rowaddr").to_pylist(), flat.column("_distance").to_pylist()))
                same = sorted(d for _, d in answer) == sorted(d for _, d in expected)
            else:
                f = f"{ident(field)} IS NOT NULL"
                scanner = ds.scanner(columns=[], filter=f, with_row_address=True)
                plan = scanner.explain_plan(True)
                used = any(f"@{n}(" in plan for n in names)
                got = sorted(scanner.to_table().column("_rowaddr").to_pylist())
                flat = sorted(ds.to_table(columns=[], filter=f, with_row_address=True, use_scalar_index=False).column("_rowaddr").to_pylist())
                same = got == flat
        except Exception as e:  # noqa: BLE001
            if key in EXPECTED_LANCE_DIFFERENCES and EXPECTED_LANCE_DIFFERENCES[key] in str(e):
                ok(f"{case} v{version} {index['name']}: Lance fails as recorded ({EXPECTED_LANCE_DIFFERENCES[key]})")
            else:
                problem(f"{case} v{version} {index['name']}: Lance fails: {e}")
            continue
        if key in EXPECTED_LANCE_DIFFERENCES:
            problem(f"{case} v{version} {index['name']}: Lance no longer fails as recorded; update EXPECTED_LANCE_DIFFERENCES")
            continue
        path = "index" if used else "flat"
        want = "index" if covered else "flat"
        if not same:
            problem(f"{case} v{version} {index['name']}: the {path} path answers differently from the flat path")
        elif key in EXPECTED_LANCE_FLAT:
            if path == "flat" and want == "index":
                ok(f"{case} v{version} {index['name']}: flat path, as recorded ({EXPECTED_LANCE_FLAT[key]})")
            else:
                problem(f"{case} v{version} {index['name']}: plan is {path} now; update EXPECTED_LANCE_FLAT")
        elif path != want:
            problem(f"{case} v{version} {index['name']}: plan is {path}, expected {want} (covers {sorted(covered)})\n{plan}")
        else:
            ok(f"{case} v{version} {index['name']}: {path} path, same answer as the flat path")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", default="target/release/examples")
    parser.add_argument("--cases", default="conformance-cases")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        check_lance_written(args.bin_dir, root)
    check_reference_written(args.cases)
    print(f"{len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
