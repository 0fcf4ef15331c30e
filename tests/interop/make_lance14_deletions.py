#!/usr/bin/env python3
"""Regenerate the Lance 14 deletion-file goldens in reference-io/tests/data/lance14_deletions/.

Needs pylance==14.0.2 and pyarrow (see the README beside the goldens). Every case builds a
fresh dataset with one int64 column `id` whose value equals the row's physical offset, runs one
pylance operation, and copies the single file that operation wrote to a stable name. Deletion
file names carry a random u64 id, so the stable name replaces it; the original name is printed.

Usage: make_lance14_deletions.py OUT_DIR [SCRATCH_DIR]
"""
import glob
import os
import shutil
import struct
import sys

import lance
import pyarrow as pa


def table(rows):
    return pa.table({"id": pa.array(range(rows), pa.int64())})


def fresh(scratch, name, rows, **kw):
    path = os.path.join(scratch, name)
    shutil.rmtree(path, ignore_errors=True)
    lance.write_dataset(table(rows), path, **kw)
    return path


def only_deletion_file(path):
    files = sorted(glob.glob(os.path.join(path, "_deletions", "*")))
    assert len(files) == 1, files
    return files[0]


def deletion_case(out, scratch, name, rows, predicate, expect_suffix, expect_count):
    path = fresh(scratch, name, rows)
    lance.dataset(path).delete(predicate)
    src = only_deletion_file(path)
    assert src.endswith(expect_suffix), src
    frag = lance.dataset(path).get_fragments()[0].metadata
    assert frag.deletion_file.num_deleted_rows == expect_count, frag
    dst = os.path.join(out, name + expect_suffix)
    shutil.copyfile(src, dst)
    print(f"{name}: rows={rows} delete '{predicate}' -> {os.path.relpath(src, path)} "
          f"({os.path.getsize(src)} bytes, num_deleted_rows={expect_count})")


# --- a minimal protobuf walker, enough to pull IndexMetadata.fragment_bitmap out of a manifest.

def varint(buf, pos):
    value, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos


def fields(buf):
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 2:
            n, pos = varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, value


def fragment_bitmaps(dataset_path):
    manifests = glob.glob(os.path.join(dataset_path, "_versions", "*.manifest"))
    newest = min(manifests)  # V2 names: u64::MAX - version, so the smallest name is newest
    data = open(newest, "rb").read()
    manifest_pos = struct.unpack_from("<q", data, len(data) - 16)[0]
    n = struct.unpack_from("<I", data, manifest_pos)[0]
    manifest = data[manifest_pos + 4:manifest_pos + 4 + n]
    section_pos = dict(fields(manifest))[6]  # Manifest.index_section
    n = struct.unpack_from("<I", data, section_pos)[0]
    section = data[section_pos + 4:section_pos + 4 + n]
    out = []
    for number, index in fields(section):
        if number == 1:  # IndexSection.indices
            out.append(dict(fields(index)).get(5, b""))  # IndexMetadata.fragment_bitmap
    return out


def index_case(out, scratch, name, fragments, drop_fragment=None):
    rows_per_fragment = 10
    path = fresh(scratch, name, fragments * rows_per_fragment,
                 max_rows_per_file=rows_per_fragment)
    if drop_fragment is not None:
        lo = drop_fragment * rows_per_fragment
        lance.dataset(path).delete(f"id >= {lo} AND id < {lo + rows_per_fragment}")
    ds = lance.dataset(path)
    ds.create_scalar_index("id", "BTREE")
    ds = lance.dataset(path)
    ids = sorted(f.fragment_id for f in ds.get_fragments())
    (bitmap,) = fragment_bitmaps(path)
    dst = os.path.join(out, name + ".bin")
    open(dst, "wb").write(bitmap)
    print(f"{name}: fragments {ids} -> fragment_bitmap {bitmap.hex()} ({len(bitmap)} bytes)")


def threshold_probe(scratch, count):
    """Which form one delete of exactly `count` rows produces (printed, not stored)."""
    path = fresh(scratch, f"probe_{count}", 20000)
    lance.dataset(path).delete(f"id < {count}")
    print(f"probe: one delete of {count} rows -> {os.path.basename(only_deletion_file(path))}")


def main():
    out = sys.argv[1]
    scratch = sys.argv[2] if len(sys.argv) > 2 else "/tmp/lance14_deletions_scratch"
    os.makedirs(out, exist_ok=True)
    os.makedirs(scratch, exist_ok=True)
    print(f"lance {lance.__version__}, pyarrow {pa.__version__}")
    deletion_case(out, scratch, "arrow_scattered", 20000, "id < 10 OR id = 1234", ".arrow", 11)
    deletion_case(out, scratch, "arrow_one", 20000, "id = 19999", ".arrow", 1)
    deletion_case(out, scratch, "arrow_zstd", 20000, "id < 2000", ".arrow", 2000)
    deletion_case(out, scratch, "bin_bitset", 20000, "id >= 10000 AND id < 16000", ".bin", 6000)
    deletion_case(out, scratch, "bin_three_containers", 150000,
                  "id < 5001 OR id IN (70000, 70001, 140000)", ".bin", 5004)
    for count in (4999, 5000, 5001):
        threshold_probe(scratch, count)
    index_case(out, scratch, "index_fragments_0_to_2", 3)
    index_case(out, scratch, "index_fragments_0_to_3", 4)
    index_case(out, scratch, "index_fragments_gap", 5, drop_fragment=1)


if __name__ == "__main__":
    main()
