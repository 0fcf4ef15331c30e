#!/usr/bin/env python3
"""Produce Lance 14.0.2 row-lineage byte samples for lance-reference's tests.

Runs a few small scenarios with pylance 14.0.2 (stable row ids on), and after each commit of
interest reads the newest manifest file directly, walks its protobuf by hand (no generated code,
no protobuf library) and records, per fragment, the raw bytes of:

  DataFragment.inline_row_ids                  (field 5, a serialized RowIdSequence)
  DataFragment.inline_last_updated_at_versions (field 7, a RowDatasetVersionSequence)
  DataFragment.inline_created_at_versions      (field 9, a RowDatasetVersionSequence)

with the per-row values decoded by this script's own small decoder (one value per physical row,
deleted rows included) and the fragment's deleted offsets. Value lists are stored as arithmetic
runs `[first, count, step]` to keep the file small. As an independent check, the live rows' `_rowid`,
`_row_created_at_version` and `_row_last_updated_at_version` are scanned through Lance itself
and must agree with the decoded values at the same physical offsets.

Usage:  python extract_lance14.py OUT.json     (needs `pip install pylance==14.0.2`)
Deterministic: fixed data, no randomness; only temporary directory names vary.
"""

import json
import os
import struct
import sys
import tempfile

import lance
import pyarrow as pa


# ---------------------------------------------------------------- protobuf walking

def varint(buf, pos):
    value, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def fields(buf):
    """Yield (field_number, wire_type, value) for one message; value is int or bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, pos = varint(buf, pos)
        elif wt == 2:
            n, pos = varint(buf, pos)
            v = bytes(buf[pos:pos + n])
            pos += n
        elif wt == 1:
            v = bytes(buf[pos:pos + 8])
            pos += 8
        elif wt == 5:
            v = bytes(buf[pos:pos + 4])
            pos += 4
        else:
            raise ValueError(f"wire type {wt}")
        yield num, wt, v


def first(buf, num, default=None):
    for n, _, v in fields(buf):
        if n == num:
            return v
    return default


# ---------------------------------------------------------------- lineage decoding

def decode_array(buf):
    for n, _, v in fields(buf):
        if n in (1, 2):  # u16 / u32: base=1, offsets=2
            width = 2 if n == 1 else 4
            base = first(v, 1, 0)
            raw = first(v, 2, b"")
            fmt = "<H" if width == 2 else "<I"
            return [base + struct.unpack_from(fmt, raw, i)[0] for i in range(0, len(raw), width)]
        if n == 3:  # u64: values=2
            raw = first(v, 2, b"")
            return [struct.unpack_from("<Q", raw, i)[0] for i in range(0, len(raw), 8)]
    raise ValueError("EncodedU64Array without an arm")


def decode_segment(buf):
    for n, _, v in fields(buf):
        if n == 1:
            return "range", list(range(first(v, 1, 0), first(v, 2, 0)))
        if n == 2:
            holes = set(decode_array(first(v, 3, b"")))
            return "range_with_holes", [x for x in range(first(v, 1, 0), first(v, 2, 0)) if x not in holes]
        if n == 3:
            start, end, bm = first(v, 1, 0), first(v, 2, 0), first(v, 3, b"")
            return "range_with_bitmap", [start + i for i in range(end - start) if bm[i // 8] >> (i % 8) & 1]
        if n == 4:
            return "sorted_array", decode_array(v)
        if n == 5:
            return "array", decode_array(v)
    raise ValueError("U64Segment without an arm")


def decode_row_ids(buf):
    kinds, values = [], []
    for n, _, v in fields(buf):
        if n == 1:
            kind, vals = decode_segment(v)
            kinds.append(kind)
            values.extend(vals)
    return kinds, values


def decode_versions(buf):
    kinds, values = [], []
    for n, _, v in fields(buf):
        if n == 1:
            kind, span = decode_segment(first(v, 1, b""))
            kinds.append(kind)
            values.extend([first(v, 2, 0)] * len(span))
    return kinds, values


# ---------------------------------------------------------------- manifest reading

def newest_manifest(uri):
    d = os.path.join(uri, "_versions")
    names = [n for n in os.listdir(d) if n.endswith(".manifest")]
    # V2 names: u64::MAX - version, zero padded; the smallest name is the newest version.
    return os.path.join(d, sorted(names)[0])


def manifest_fragments(path):
    data = open(path, "rb").read()
    assert data[-4:] == b"LANC"
    pos = struct.unpack_from("<q", data, len(data) - 16)[0]
    n = struct.unpack_from("<I", data, pos)[0]
    manifest = data[pos + 4:pos + 4 + n]
    out = []
    for num, _, v in fields(manifest):
        if num == 2:
            frag = {"id": first(v, 1, 0), "physical_rows": first(v, 4, 0)}
            for fnum, name in ((5, "row_ids"), (9, "created_at"), (7, "last_updated_at")):
                raw = first(v, fnum)
                if raw is not None:
                    frag[name] = raw
            out.append(frag)
    return out


# ---------------------------------------------------------------- compact value lists

def runs(values):
    """Arithmetic runs [first, count, step] whose concatenation is `values` (keeps the JSON small)."""
    out, i = [], 0
    while i < len(values):
        step = values[i + 1] - values[i] if i + 1 < len(values) else 0
        j = i + 1
        while j < len(values) and values[j] - values[j - 1] == step:
            j += 1
        out.append([values[i], j - i, step])
        i = j
    return out


# ---------------------------------------------------------------- scenarios

def table(ids):
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([i * 10 for i in ids], pa.int64())})


def live_lineage(ds):
    """Map (fragment id, offset) -> (rowid, created, updated) for live rows, from Lance scans."""
    t = ds.to_table(columns=["_rowid", "_rowaddr", "_row_created_at_version", "_row_last_updated_at_version"])
    out = {}
    for rid, addr, c, u in zip(*(t.column(i).to_pylist() for i in range(4))):
        out[(addr >> 32, addr & 0xFFFFFFFF)] = (rid, c, u)
    return out


def snapshot(ds, scenario, step, samples):
    uri = ds.uri
    frags = manifest_fragments(newest_manifest(uri))
    live = live_lineage(ds)
    for frag in frags:
        for kind in ("row_ids", "created_at", "last_updated_at"):
            raw = frag.get(kind)
            if raw is None:
                continue
            if kind == "row_ids":
                segs, values = decode_row_ids(raw)
            else:
                segs, values = decode_versions(raw)
            assert len(values) == frag["physical_rows"], (scenario, step, kind)
            col = {"row_ids": 0, "created_at": 1, "last_updated_at": 2}[kind]
            for (fid, off), vals in live.items():
                if fid == frag["id"]:
                    assert values[off] == vals[col], (scenario, step, kind, off, values[off], vals)
            live_offsets = {off for (fid, off) in live if fid == frag["id"]}
            samples.append({
                "name": f"{scenario}/{step}/frag{frag['id']}/{kind}",
                "scenario": scenario,
                "step": step,
                "dataset_version": ds.version,
                "fragment": frag["id"],
                "physical_rows": frag["physical_rows"],
                "deleted": runs([o for o in range(frag["physical_rows"]) if o not in live_offsets]),
                "sequence": kind,
                "segments": segs,
                "hex": raw.hex(),
                "values": runs(values),
            })


def run(out_path):
    samples = []
    root = tempfile.mkdtemp(prefix="lance14-lineage-")

    def fresh(name, ids, **kw):
        return lance.write_dataset(table(ids), os.path.join(root, name), enable_stable_row_ids=True, **kw)

    # append: a new fragment gets one Range and uniform versions.
    ds = fresh("append", list(range(10)))
    snapshot(ds, "append", "v1_create", samples)
    ds = lance.write_dataset(table(list(range(10, 15))), ds.uri, mode="append")
    snapshot(ds, "append", "v2_append", samples)

    # bitmap: 10 of 100 rows deleted, then compacted together with a small appended fragment.
    ds = fresh("bitmap", list(range(100)))
    ds = lance.write_dataset(table(list(range(100, 120))), ds.uri, mode="append")
    ds.delete("id % 10 = 2 AND id < 100")
    snapshot(ds, "bitmap", "v3_delete", samples)
    ds.optimize.compact_files(materialize_deletions_threshold=0.0)
    ds = lance.dataset(ds.uri)
    snapshot(ds, "bitmap", "v4_compact", samples)

    # holes: 3 of 1000 rows deleted, compacted.
    ds = fresh("holes", list(range(1000)))
    ds.delete("id IN (10, 20, 995)")
    snapshot(ds, "holes", "v2_delete", samples)
    ds.optimize.compact_files(materialize_deletions_threshold=0.0)
    ds = lance.dataset(ds.uri)
    snapshot(ds, "holes", "v3_compact", samples)

    # sorted_u16: every 50th of 1000 rows kept, compacted.
    ds = fresh("sorted_u16", list(range(1000)))
    ds.delete("id % 50 != 0")
    snapshot(ds, "sorted_u16", "v2_delete", samples)
    ds.optimize.compact_files(materialize_deletions_threshold=0.0)
    ds = lance.dataset(ds.uri)
    snapshot(ds, "sorted_u16", "v3_compact", samples)

    # sorted_u32: every 5000th of 100000 rows kept, compacted (span > 65535).
    ds = fresh("sorted_u32", list(range(100000)))
    ds.delete("id % 5000 != 0")
    snapshot(ds, "sorted_u32", "v2_delete", samples)
    ds.optimize.compact_files(materialize_deletions_threshold=0.0)
    ds = lance.dataset(ds.uri)
    snapshot(ds, "sorted_u32", "v3_compact", samples)

    # update: rows moved out of two fragments by a row-moving update, then everything compacted.
    ds = fresh("update", list(range(10)))
    ds = lance.write_dataset(table(list(range(10, 20))), ds.uri, mode="append")
    ds.update({"v": "v + 1"}, where="id IN (5, 15)")
    ds = lance.dataset(ds.uri)
    snapshot(ds, "update", "v3_update", samples)
    ds.update({"v": "v + 1"}, where="id IN (3, 4, 12)")
    ds = lance.dataset(ds.uri)
    snapshot(ds, "update", "v4_update", samples)
    ds.optimize.compact_files(materialize_deletions_threshold=0.0)
    ds = lance.dataset(ds.uri)
    snapshot(ds, "update", "v5_compact", samples)

    # merge_insert: matched rows arrive in reverse order.
    ds = fresh("merge", list(range(20)))
    src = table([17, 11, 4, 2])
    ds.merge_insert("id").when_matched_update_all().execute(src)
    ds = lance.dataset(ds.uri)
    snapshot(ds, "merge", "v2_merge", samples)
    ds.optimize.compact_files(materialize_deletions_threshold=0.0)
    ds = lance.dataset(ds.uri)
    snapshot(ds, "merge", "v3_compact", samples)

    # merge_insert with inserts: old ids plus fresh ids become ONE segment (partial ids).
    ds = fresh("upsert", list(range(20)))
    src = table([25, 17, 11, 30, 4, 2])
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    ds = lance.dataset(ds.uri)
    snapshot(ds, "upsert", "v2_upsert", samples)

    doc = {
        "producer": f"pylance {lance.__version__}",
        "script": "reference/tests/data/lineage/extract_lance14.py",
        "samples": samples,
    }
    with open(out_path, "w") as f:
        # One sample per line: readable diffs, small file.
        f.write('{"producer": %s,\n "script": %s,\n "samples": [\n' % (json.dumps(doc["producer"]), json.dumps(doc["script"])))
        f.write(",\n".join("  " + json.dumps(x, separators=(",", ":")) for x in samples))
        f.write("\n ]}\n")


if __name__ == "__main__":
    run(sys.argv[1])
