"""The lineage lengths a pylance writer reports with each commit (spec/conformance.md §7.3,
`lineage_lengths`): for every fragment a commit wrote, the byte length of the inline encoding of
each lineage sequence, measured as Lance measures it when it decides to spill ([LIN-ENC-6]).

An inline sequence's length is read from the manifest Lance wrote (the bytes of its `inline_*`
arm), so it is exact. A spilled one left no inline bytes; its length is recomputed here the way
Lance 14.0.2's compaction computes it (/work/shared/notes/lance14-facts.md §6): each source
fragment's stored sequence (decoded from the manifest the compaction read) is masked by the
rows it deleted, a segment that lost rows being re-encoded by Lance's segment encoder
(`U64Segment::from_iter`: Range when there are no holes, else the cheapest of RangeWithHoles,
RangeWithBitmap and SortedArray, ties in that order) and a version run's span keeping its
offsets (not renumbered); the pieces are concatenated in source order, and row-id Ranges that
touch are merged (`RowIdSequence::extend`). Only a compaction into one output fragment whose
sources keep their sequences inline is recomputed; any other spilled sequence is left out of the
report (the kit then judges it only by what its bytes decide).

Nothing here allocates from a length it has not checked against the bytes it holds: every
length comes from a buffer already read."""

import os
import struct


# ---------------------------------------------------------------- protobuf, by hand

def _varint(b, i):
    value = shift = 0
    while True:
        if i >= len(b):
            raise ValueError("truncated varint")
        byte = b[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def fields(message):
    """The (number, wire type, value) of every field of a message: varints as ints,
    length-delimited fields as bytes."""
    out, i = [], 0
    while i < len(message):
        key, i = _varint(message, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(message, i)
        elif wire == 2:
            n, i = _varint(message, i)
            if i + n > len(message):
                raise ValueError("a field runs past its message")
            value, i = message[i:i + n], i + n
        elif wire == 1:
            value, i = message[i:i + 8], i + 8
        elif wire == 5:
            value, i = message[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        out.append((number, wire, value))
    return out


def varint_len(v):
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def scalar(number, value):
    """A varint field as proto3 writes it: left out when 0."""
    return 0 if value == 0 else varint_len(number << 3) + varint_len(value)


def nested(number, length):
    """A length-delimited field of `length` bytes (an empty message is still written)."""
    return varint_len(number << 3) + varint_len(length) + length


def blob(number, length):
    """A bytes field as proto3 writes it: left out when empty."""
    return 0 if length == 0 else nested(number, length)


# ---------------------------------------------------------------- Lance's encoder

def encoded_array_len(values):
    """`EncodedU64Array::from(values)`: U16 or U32 offsets from the minimum, else U64."""
    if not values:
        return nested(3, 0)
    lo, hi = min(values), max(values)
    if hi - lo <= 0xFFFF:
        return nested(1, scalar(1, lo) + blob(2, 2 * len(values)))
    if hi - lo <= 0xFFFFFFFF:
        return nested(2, scalar(1, lo) + blob(2, 4 * len(values)))
    return nested(3, blob(2, 8 * len(values)))


def segment_len(values):
    """The U64Segment message `U64Segment::from_iter(values)` makes."""
    if any(b < a for a, b in zip(values, values[1:])):
        return nested(5, encoded_array_len(values))
    if not values:
        return nested(1, 0)
    lo, hi, count = min(values), max(values), len(values)
    span = hi - lo + 1
    if span == count:
        return nested(1, scalar(1, lo) + scalar(2, hi + 1))
    holes, bitmap, sorted_ = 24 + 4 * (span - count), 24 + -(-span // 8), 24 + 2 * count
    bounds = scalar(1, lo) + scalar(2, hi + 1)
    if holes <= bitmap and holes <= sorted_:
        present = set(values)
        missing = [v for v in range(lo, hi + 1) if v not in present]
        return nested(2, bounds + nested(3, encoded_array_len(missing)))
    if bitmap <= sorted_:
        return nested(3, bounds + blob(3, -(-span // 8)))
    return nested(4, encoded_array_len(values))


def is_range(values):
    return bool(values) and values == list(range(values[0], values[-1] + 1))


# ---------------------------------------------------------------- stored sequences

def _array_values(message):
    for number, _, value in fields(message):
        inner = dict((n, v) for n, _, v in fields(value))
        if number in (1, 2):
            width = 2 if number == 1 else 4
            base, raw = inner.get(1, 0), inner.get(2, b"")
            if len(raw) % width:
                raise ValueError("offsets not a multiple of their width")
            fmt = "<H" if width == 2 else "<I"
            return [base + struct.unpack_from(fmt, raw, k)[0] for k in range(0, len(raw), width)]
        if number == 3:
            raw = inner.get(2, b"")
            if len(raw) % 8:
                raise ValueError("u64 values not a multiple of 8 bytes")
            return [struct.unpack_from("<Q", raw, k)[0] for k in range(0, len(raw), 8)]
    raise ValueError("an EncodedU64Array with no width")


def segment_values(message):
    """The values of a stored U64Segment message."""
    for number, _, value in fields(message):
        if number in (4, 5):
            return _array_values(value)
        inner = {}
        for n, _, v in fields(value):
            inner[n] = v
        start, end = inner.get(1, 0), inner.get(2, 0)
        if end < start or end - start > len(message) * 8 * 1024 + (1 << 20):
            # A stored range is never longer than the rows a fragment can hold; this bound
            # only keeps a damaged message from making a huge list.
            raise ValueError("an implausible range")
        if number == 1:
            return list(range(start, end))
        if number == 2:
            holes = set(_array_values(inner.get(3, b"")))
            return [v for v in range(start, end) if v not in holes]
        if number == 3:
            bitmap = inner.get(3, b"")
            return [start + k for k in range(end - start) if bitmap[k // 8] >> (k % 8) & 1]
    raise ValueError("a U64Segment with no kind")


def row_id_segments(message):
    """A stored RowIdSequence as its segments: (values, stored U64Segment length)."""
    return [(segment_values(v), len(v)) for n, _, v in fields(message) if n == 1]


def version_runs(message):
    """A stored RowDatasetVersionSequence as its runs: (span values, stored span length,
    version)."""
    runs = []
    for n, _, run in fields(message):
        if n != 1:
            continue
        inner = {}
        for k, _, v in fields(run):
            inner[k] = v
        span = inner.get(1, b"")
        runs.append((segment_values(span), len(span), inner.get(2, 0)))
    return runs


# ---------------------------------------------------------------- manifests

def manifest_path(path, version):
    versions = os.path.join(path, "_versions")
    v2 = os.path.join(versions, f"{(1 << 64) - 1 - version:020d}.manifest")
    return v2 if os.path.exists(v2) else os.path.join(versions, f"{version}.manifest")


# DataFragment: id 1, physical_rows 4; lineage arms (inline, column) per sequence.
ARMS = {"row_ids": (5, 12), "last_updated_at": (7, 13), "created_at": (9, 14)}


def fragments(path, version):
    """Every fragment of a version: {id: {"physical_rows": n, sequence: ("inline", bytes) |
    ("column", None)}} (a sequence missing from a fragment is absent)."""
    with open(manifest_path(path, version), "rb") as f:
        data = f.read()
    if len(data) < 16 or data[-4:] != b"LANC":
        raise ValueError("no LANC footer")
    (pos,) = struct.unpack("<Q", data[-16:-8])
    if pos + 4 > len(data):
        raise ValueError("manifest position past the end")
    (length,) = struct.unpack("<I", data[pos:pos + 4])
    message = data[pos + 4:pos + 4 + length]
    out = {}
    for number, _, value in fields(message):
        if number != 2:
            continue
        frag = {"physical_rows": 0}
        fid = 0
        for n, _, v in fields(value):
            if n == 1:
                fid = v
            elif n == 4:
                frag["physical_rows"] = v
            for name, (inline, column) in ARMS.items():
                if n == inline:
                    frag[name] = ("inline", v)
                elif n == column:
                    frag[name] = ("column", None)
        out[fid] = frag
    return out


# ---------------------------------------------------------------- a compaction's measure

def masked_row_ids(sources):
    """Lance's row-id sequence for one output fragment of `sources` (each: stored bytes, the
    set of its physical offsets that survive): the length of its inline encoding."""
    pieces = []
    for stored, live in sources:
        offset = 0
        for values, stored_len in row_id_segments(stored):
            kept = [v for k, v in enumerate(values) if offset + k in live]
            if len(kept) == len(values):
                pieces.append((values, stored_len))
            elif kept:
                pieces.append((kept, segment_len(kept)))
            offset += len(values)
    merged = []
    for values, length in pieces:
        if merged and is_range(merged[-1][0]) and is_range(values) and merged[-1][0][-1] + 1 == values[0]:
            joined = merged[-1][0] + values
            merged[-1] = (joined, segment_len(joined))
        else:
            merged.append((values, length))
    return sum(nested(1, length) for _, length in merged)


def masked_versions(sources):
    """Lance's version sequence for one output fragment of `sources` (stored bytes, surviving
    offsets): spans masked, keeping their offsets, and concatenated."""
    total = 0
    for stored, live in sources:
        offset = 0
        for span, span_len, version in version_runs(stored):
            count = len(span)
            kept = [v for k, v in enumerate(span) if offset + k in live]
            offset += count
            if not kept:
                continue
            length = span_len if len(kept) == count else segment_len(kept)
            total += nested(1, nested(1, length) + scalar(2, version))
    return total


def reply(path, read_version, new_version, compaction=None):
    """The `lineage_lengths` of the commit that made `new_version` on `read_version`.
    `compaction`, for a compaction, is the list of its source fragment ids (in order) with the
    physical offsets of each that survive: {id: set(offsets)}."""
    before = fragments(path, read_version) if read_version else {}
    after = fragments(path, new_version)
    written = [fid for fid in after if fid not in before]
    out = []
    for fid in written:
        frag = after[fid]
        entry = {"fragment": fid}
        for name in ("row_ids", "created_at", "last_updated_at"):
            arm = frag.get(name)
            if arm is None:
                continue
            if arm[0] == "inline":
                entry[name] = len(arm[1])
                continue
            measured = recomputed(name, before, compaction, len(written))
            if measured is not None:
                entry[name] = measured
        out.append(entry)
    return out


def recomputed(name, before, compaction, outputs):
    """A spilled sequence's length as Lance's compaction measured it, or None where this
    module does not recompute it (module docs)."""
    if not compaction or outputs != 1:
        return None
    sources = []
    for fid, live in compaction.items():
        arm = before.get(fid, {}).get(name)
        if arm is None or arm[0] != "inline":
            return None
        sources.append((arm[1], live))
    return masked_row_ids(sources) if name == "row_ids" else masked_versions(sources)
