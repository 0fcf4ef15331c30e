"""Writes the small Lance 14.0.2 datasets with an IVF_PQ index that
reference-io/tests/ivf_pq.rs reads, and what pylance reports about each index (JSON beside each
dataset).

    python tests/interop/make_ivf_pq_fixtures.py reference-io/tests/data/lance14_ivf_pq

- ivf-pq-8bit: a 2.0 dataset of 600 rows of fixed_size_list<float32, 4> in two fragments (row 7's
  vector NULL, row 8's with a NULL item), v2 an IVF_PQ index (2 partitions, 2 sub-vectors,
  8-bit codes), v3 a delete of ids 0..9;
- ivf-pq-4bit-stable: 800 rows of fixed_size_list<float32, 8> with stable row ids in the default
  data file version (2.2), v2 an IVF_PQ index of 4-bit codes (3 partitions, 4 sub-vectors), v3
  an append of 20 rows;
- ivf-pq-stable-compacted: 600 rows of fixed_size_list<float32, 4> with stable row ids (2.0),
  v2 an IVF_PQ index, v3 an append of 100 rows, v4 optimize_indices (the index takes the
  appended fragment in, with entries), v5 a delete of every id divisible by 7, v6-v7 a
  compaction: the index keeps its row ids, among them those of deleted appended rows, which
  no fragment holds any more.

(Lance gives each partition at least 256 training rows, hence the row counts.) lance.json holds,
per dataset, the index's PQ parameters and the row ids of each partition as pylance's own file
reader decodes `auxiliary.idx`, so the reference's row ids can be compared with Lance's.
"""
import json
import os
import shutil
import sys

import lance
import numpy as np
import pyarrow as pa
from lance.file import LanceFileReader


def table(rows, dim, start=0):
    rng = np.random.default_rng(11 + start)
    flat = rng.standard_normal((rows, dim)).astype(np.float32)
    vecs = []
    for i in range(rows):
        v = [float(x) for x in flat[i]]
        if start + i == 7:
            vecs.append(None)
            continue
        if start + i == 8:
            v[1] = None
        vecs.append(v)
    return pa.table(
        {
            "id": pa.array(range(start, start + rows), pa.int64()),
            "v": pa.array(vecs, pa.list_(pa.float32(), dim)),
        }
    )


def describe(uri):
    ds = lance.dataset(uri)
    stats = ds.stats.index_stats("v_idx")
    seg = stats["indices"][0]
    sizes = [p["size"] for p in seg["partitions"]]
    storage = os.path.join(uri, "_indices", seg["uuid"], "auxiliary.idx")
    ids = LanceFileReader(storage).read_all().to_table().column("_rowid").to_pylist()
    partitions, at = [], 0
    for n in sizes:
        partitions.append(ids[at : at + n])
        at += n
    return {
        "version": ds.version,
        "index_type": seg["index_type"],
        "sub_index": {k: seg["sub_index"][k] for k in ("nbits", "num_sub_vectors", "dimension")},
        "partitions": partitions,
    }


def main(out):
    os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "true")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    report = {}

    p = os.path.join(out, "ivf-pq-8bit")
    ds = lance.write_dataset(table(600, 4), p, max_rows_per_file=300, data_storage_version="2.0")
    ds.create_index("v", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=2)
    lance.dataset(p).delete("id < 10")
    report["ivf-pq-8bit"] = describe(p)

    p = os.path.join(out, "ivf-pq-4bit-stable")
    ds = lance.write_dataset(table(800, 8), p, max_rows_per_file=400, enable_stable_row_ids=True)
    ds.create_index("v", index_type="IVF_PQ", num_partitions=3, num_sub_vectors=4, num_bits=4)
    lance.write_dataset(table(20, 8, 800), p, mode="append")
    report["ivf-pq-4bit-stable"] = describe(p)

    p = os.path.join(out, "ivf-pq-stable-compacted")
    ds = lance.write_dataset(table(600, 4), p, max_rows_per_file=300, enable_stable_row_ids=True, data_storage_version="2.0")
    ds.create_index("v", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=2)
    lance.write_dataset(table(100, 4, 600), p, mode="append", data_storage_version="2.0")
    lance.dataset(p).optimize.optimize_indices()
    lance.dataset(p).delete("id % 7 = 0")
    lance.dataset(p).optimize.compact_files(target_rows_per_fragment=10000)
    report["ivf-pq-stable-compacted"] = describe(p)

    with open(os.path.join(out, "lance.json"), "w") as f:
        json.dump(report, f, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
