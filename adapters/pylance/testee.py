#!/usr/bin/env python3
"""pylance 14.0.2 as a lance-conformance testee (protocol 1, spec/conformance.md).

Reads one JSON request per line on stdin and writes one JSON response per line on stdout.
Everything is answered through pylance's public API:

- open:      lance.dataset(path, version=N) and the fragments' metadata;
- scan:      to_table(columns=[...] + the two lineage columns, with_row_id, with_row_address);
- lineage:   FragmentMetadata.to_json() (row_id_meta, *_version_meta, data files);
- query:     to_table(filter=SQL, use_scalar_index=False) and
             to_table(nearest={..., "use_index": False}): the corpus ships index metadata but
             no index files, so only Lance's flat path can answer; the final rows are judged.

Not declared, because pylance's public API does not expose them: `exclusion` (exclusion sets
and the reconciliation lists) and `error-codes` (Lance's errors carry messages, not the
reference's codes; classes are derived from the message, see CLASSES below).
"""

import json
import math
import os
import re
import sys
import traceback

# Release builds of Lance 14 refuse manifests with overlays without this variable.
os.environ.setdefault("LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES", "1")

import lance  # noqa: E402
import pyarrow as pa  # noqa: E402

PROTOCOL = 1
LINEAGE_COLUMNS = ["_row_created_at_version", "_row_last_updated_at_version"]
CAPABILITIES = [
    "overlays",
    "sparse-overlays",
    "stable-row-ids",
    "deletions",
    "spilled-lineage",
    "nested-fields",
    "lineage-placement",
    "scalar-query",
    "vector-query",
]

# Error class from Lance's message, first match wins; anything else is `invalid`. Lance 14 has
# no error classes of its own, so each pattern names the Lance message it maps and why.
CLASSES = [
    # "Not supported: This dataset cannot be read by this version of Lance ... Flags: N"
    ("unsupported_feature", re.compile(r"Not supported|cannot be read by this version", re.I)),
    # "Encountered corrupt file ...: failed to deserialize overlay coverage bitmap"
    ("malformed", re.compile(r"corrupt file|failed to deserialize|failed to decode|protobuf", re.I)),
    # "overlay per-field coverage has 1 bitmaps but field position 1 was requested": the
    # coverage list is shorter than the field list, which the spec calls malformed [OVL-SHAPE-3].
    ("malformed", re.compile(r"per-field coverage has \d+ bitmaps", re.I)),
]


class Refused(Exception):
    """Lance refused the data: reported as an `error` response."""


def classify(message):
    for cls, pattern in CLASSES:
        if pattern.search(message):
            return cls
    return "invalid"


def lance_call(fn, *args, **kwargs):
    """Runs a pylance call; any exception it raises is Lance refusing the data."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - every Lance failure is a verdict on the data
        raise Refused(str(e)) from e


# ---------------------------------------------------------------- typed values (expected/)

def type_name(t):
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_int32(t):
        return "int32"
    if pa.types.is_int64(t):
        return "int64"
    if pa.types.is_uint64(t):
        return "uint64"
    if pa.types.is_float32(t):
        return "float32"
    if pa.types.is_float64(t):
        return "float64"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "utf8"
    if pa.types.is_fixed_size_list(t):
        return f"fixed_size_list<float32,{t.list_size}>"
    if pa.types.is_struct(t):
        return "struct"
    return str(t)


def float_text(x):
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(float(x))


def tag(t, v):
    name = type_name(t)
    if v is None:
        return {"type": name, "value": None}
    if name in ("int64", "uint64"):
        return {"type": name, "value": str(v)}
    if name in ("float32", "float64"):
        return {"type": name, "value": float_text(v)}
    if name.startswith("fixed_size_list"):
        return {"type": name, "value": [None if x is None else float_text(x) for x in v]}
    if name == "struct":
        return {"type": name, "value": {f.name: tag(f.type, v.get(f.name)) for f in t}}
    return {"type": name, "value": v}


def uint(v):
    return {"type": "uint64", "value": str(v)}


# ---------------------------------------------------------------- requests

class Testee:
    def __init__(self):
        self.cached = None  # ((path, version), dataset)

    def dataset(self, req):
        key = (req["dataset"], req["version"])
        if self.cached is None or self.cached[0] != key:
            ds = lance_call(lance.dataset, req["dataset"], version=req["version"])
            self.cached = (key, ds)
        return self.cached[1]

    def open(self, req):
        ds = self.dataset(req)
        lance_call(ds.get_fragments)
        return {"version": ds.version}

    def scan(self, req):
        ds = self.dataset(req)
        names = req.get("columns") or [f.name for f in ds.schema]
        table = lance_call(
            ds.to_table,
            columns=names + LINEAGE_COLUMNS,
            with_row_id=True,
            with_row_address=True,
        )
        types = [ds.schema.field(n).type for n in names]
        rows = []
        for r in table.to_pylist():
            addr = r["_rowaddr"]
            rows.append(
                {
                    "fragment": addr >> 32,
                    "offset": addr & 0xFFFFFFFF,
                    "_rowid": uint(r["_rowid"]),
                    "_row_created_at_version": uint(r["_row_created_at_version"]),
                    "_row_last_updated_at_version": uint(r["_row_last_updated_at_version"]),
                    "values": [tag(t, r[n]) for n, t in zip(names, types)],
                }
            )
        columns = [{"name": n, "type": type_name(t)} for n, t in zip(names, types)]
        return {"columns": columns, "rows": rows}

    def lineage(self, req):
        ds = self.dataset(req)
        fragment = lance_call(ds.get_fragment, req["fragment"])
        if fragment is None:
            raise Refused(f"no fragment {req['fragment']}")
        meta = fragment.metadata.to_json()

        def column_file(field_id):
            for f in meta.get("files", []):
                if field_id in f.get("fields", []):
                    return "data/" + f["path"]
            return ""

        def placement(value, field_id):
            if value is None:
                return {"placement": "absent"}
            if value == "Column" or (isinstance(value, dict) and ("column" in value or "Column" in value)):
                return {"placement": "column", "file": column_file(field_id)}
            return {"placement": "inline"}

        return {
            "fragment": meta["id"],
            "physical_rows": meta["physical_rows"],
            "row_ids": placement(meta.get("row_id_meta"), -3),
            "created_at": placement(meta.get("created_at_version_meta"), -4),
            "last_updated_at": placement(meta.get("last_updated_at_version_meta"), -5),
        }

    def query(self, req):
        ds = self.dataset(req)
        q = req["query"]
        hits = []
        if q.get("where") is not None:
            table = lance_call(
                ds.to_table,
                columns=[],
                filter=sql(q["where"]),
                with_row_address=True,
                use_scalar_index=False,
            )
            for addr in sorted(table.column("_rowaddr").to_pylist()):
                hits.append({"fragment": addr >> 32, "offset": addr & 0xFFFFFFFF})
            return {"kind": "scalar", "final": hits}
        column = lance_call(ds.list_indices)
        index = next((i for i in column if i["name"] == q["index"]), None)
        if index is None:
            raise Refused(f"no index {q['index']}")
        vector = [float(x) for x in q["vector"]["value"]]
        table = lance_call(
            ds.to_table,
            columns=[],
            nearest={"column": index["fields"][0], "q": vector, "k": int(q["k"]), "use_index": False, "metric": "l2"},
            with_row_address=True,
        )
        for r in table.to_pylist():
            addr = r["_rowaddr"]
            hits.append(
                {
                    "fragment": addr >> 32,
                    "offset": addr & 0xFFFFFFFF,
                    "distance": {"type": "float32", "value": float_text(r["_distance"])},
                }
            )
        return {"kind": "vector", "final": hits}


def ident(name):
    return ".".join(f"`{part}`" for part in name.split("."))


def literal(t):
    v, name = t["value"], t["type"]
    if v is None:
        return "NULL"
    if name == "bool":
        return "TRUE" if v else "FALSE"
    if name in ("float32", "float64"):
        sql_type = "FLOAT" if name == "float32" else "DOUBLE"
        return f"CAST('{v}' AS {sql_type})"
    if name in ("int32", "int64", "uint64"):
        return str(v)
    if name == "utf8":
        return "'" + v.replace("'", "''") + "'"
    raise ValueError(f"no SQL literal for {name}")


def sql(p):
    if "and" in p:
        return "(" + " AND ".join(sql(x) for x in p["and"]) + ")"
    if "or" in p:
        return "(" + " OR ".join(sql(x) for x in p["or"]) + ")"
    field, op = ident(p["field"]), p["op"]
    if op == "is_null":
        return f"({field} IS NULL)"
    if op == "is_not_null":
        return f"({field} IS NOT NULL)"
    if op == "in":
        return f"({field} IN ({', '.join(literal(x) for x in p['value'])}))"
    return f"({field} {op} {literal(p['value'])})"


def handle(testee, req):
    seq = req.get("seq", 0)
    cmd = req.get("cmd")
    try:
        if cmd == "start":
            result = {
                "protocol": PROTOCOL,
                "implementation": {
                    "name": "pylance",
                    "version": lance.__version__,
                    "language": "python",
                    "homepage": "https://github.com/lancedb/lance",
                },
                "capabilities": CAPABILITIES,
            }
        elif cmd in ("open", "scan", "lineage", "query"):
            result = getattr(testee, cmd)(req)
        elif cmd == "stop":
            result = {}
        else:
            return {"seq": seq, "unsupported": {"reason": f"command {cmd!r} is not implemented"}}
    except Refused as e:
        message = str(e)
        return {"seq": seq, "error": {"class": classify(message), "message": message}}
    except Exception as e:  # noqa: BLE001 - a bug of this adapter, not a verdict
        return {"seq": seq, "errored": {"message": f"{type(e).__name__}: {e}", "detail": traceback.format_exc()}}
    return {"seq": seq, "result": result}


def main():
    testee = Testee()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except ValueError as e:
            resp = {"seq": 0, "errored": {"message": f"not JSON: {e}"}}
        else:
            resp = handle(testee, req)
        sys.stdout.write(json.dumps(resp) + "\n")
        sys.stdout.flush()
        if isinstance(req, dict) and req.get("cmd") == "stop":
            break


if __name__ == "__main__":
    main()
