"""Writes the small Lance 14.0.2 datasets that reference-io/tests/dataset_v2x.rs reads, and what
pylance scans from each of their versions (JSON beside each dataset).

    LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES=1 python tests/interop/make_v2x_dataset_fixtures.py \
        reference-io/tests/data/lance14_v2x_datasets

- struct-overlays-2.2: a default (2.2) dataset with a nullable struct st{x, y} (NULL at row 1);
  v2 a dense overlay on st.x, v3 a sparse one on st.x and st.y (2.2 value files listing the
  leaves only, as Lance's writers do);
- mixed-2.0-base-2.2-overlay: a 2.0 dataset, v2 an overlay written by LanceFileWriter with its
  default version (2.2): Lance sets bit 256 in both words;
- spilled-lineage-2.2: a default (2.2) dataset of three fragments, a delete, spilling on with a
  0-byte budget, then compaction: the lineage columns are uint64 columns of a 2.2 file.

Each JSON holds, per version, the feature words and, per row in scan order, the values of the
top-level fields (a struct as the list of its children, or null) and the three lineage values.
"""
import json
import os
import shutil
import sys

import lance
import pyarrow as pa
from lance import LanceOperation as Op
from lance.file import LanceFileWriter
from lance.fragment import DataFile


def dump(uri):
    out = []
    for v in lance.dataset(uri).versions():
        ds = lance.dataset(uri, version=v["version"])
        names = [f.name for f in ds.schema]
        t = ds.to_table(
            columns=names + ["_row_created_at_version", "_row_last_updated_at_version"],
            with_row_id=True,
        ).to_pylist()

        def val(x):
            if isinstance(x, dict):
                return list(x.values())
            return x

        out.append(
            {
                "version": v["version"],
                "rows": [
                    {
                        "values": [val(r[n]) for n in names],
                        "row_id": r["_rowid"],
                        "created_at": r["_row_created_at_version"],
                        "last_updated_at": r["_row_last_updated_at_version"],
                    }
                    for r in t
                ],
            }
        )
    return out


def overlay(ds, fragment_id, table, field_ids, offsets, version=None):
    rel = f"overlay-{len(os.listdir(os.path.join(ds.uri, 'data')))}.lance"
    full = os.path.join(ds.uri, "data", rel)
    kw = {} if version is None else {"version": version}
    w = LanceFileWriter(full, table.schema, **kw)
    w.write_batch(table)
    w.close()
    major, minor = (2, 2) if version is None else tuple(int(p) for p in version.split("."))
    df = DataFile(rel, field_ids, list(range(len(field_ids))), major, minor, os.path.getsize(full))
    op = Op.DataOverlay([Op.DataOverlayGroup(fragment_id, [Op.DataOverlayFile(df, offsets)])])
    return lance.LanceDataset.commit(ds.uri, op, read_version=ds.version)


def struct_overlays(uri):
    st = pa.struct([pa.field("x", pa.int32()), pa.field("y", pa.string())])
    t = pa.table(
        {
            "id": pa.array([0, 1, 2, 3], pa.int64()),
            "st": pa.array(
                [{"x": 10, "y": "a"}, None, {"x": None, "y": "c"}, {"x": 13, "y": "d"}], st
            ),
        }
    )
    ds = lance.write_dataset(t, uri, enable_stable_row_ids=True)
    # ids: id 0, st 1, st.x 2, st.y 3
    xs = pa.table({"st": pa.array([{"x": 100}, {"x": 103}], pa.struct([pa.field("x", pa.int32())]))})
    ds = overlay(ds, 0, xs, [2], [0, 3])
    both = pa.table(
        {"st": pa.array([{"x": 201, "y": "B"}, {"x": 202, "y": "C"}], st)}
    )
    # Sparse: x covers {1, 2}, y covers {2, 3}: equal lengths, different offsets.
    ds = overlay(ds, 0, both, [2, 3], [[1, 2], [2, 3]])


def mixed(uri):
    t = pa.table({"id": pa.array([0, 1, 2], pa.int64()), "v": pa.array([10, 11, 12], pa.int32())})
    ds = lance.write_dataset(t, uri, data_storage_version="2.0", enable_stable_row_ids=True)
    ds = overlay(ds, 0, pa.table({"v": pa.array([100, 102], pa.int32())}), [1], [0, 2])


def spilled(uri):
    t = pa.table({"id": pa.array(range(6), pa.int64()), "v": pa.array(range(10, 16), pa.int32())})
    ds = lance.write_dataset(t, uri, max_rows_per_file=2, enable_stable_row_ids=True)
    ds.delete("id = 3")
    ds.update_config({"lance.row_lineage.spill": "true", "lance.row_lineage.inline_max_bytes": "0"})
    ds.optimize.compact_files()


def main(out):
    for name, make in [
        ("struct-overlays-2.2", struct_overlays),
        ("mixed-2.0-base-2.2-overlay", mixed),
        ("spilled-lineage-2.2", spilled),
    ]:
        uri = os.path.join(out, name)
        shutil.rmtree(uri, ignore_errors=True)
        make(uri)
        with open(uri + ".json", "w") as f:
            json.dump(dump(uri), f, indent=1)
            f.write("\n")
        print(name, "written")


if __name__ == "__main__":
    main(sys.argv[1])
