#!/usr/bin/env python3
"""pylance as a lance-conformance testee (protocol 1, spec/conformance.md).

    testee.py              serve the protocol on stdin/stdout
    testee.py --describe   print what this pylance and this environment support, as JSON

Reads one JSON request per line on stdin and writes one JSON response per line on stdout.
Everything is answered through pylance's public API:

- open:      lance.dataset(path, version=N) and the fragments' metadata;
- scan:      to_table(columns=[...] + the two lineage columns, with_row_id, with_row_address);
- lineage:   FragmentMetadata.to_json() (row_id_meta, *_version_meta, data files);
- query:     scanner(filter=SQL) and scanner(nearest={...}) with Lance's defaults, so Lance
             answers through the index files the corpus ships (BTree, IVF_FLAT) wherever it
             can; the final rows are judged, and each answer carries Lance's plan
             (explain_plan(True)) and whether the named index is in it (see plan_of), so the
             runner can fail a query that should have used the index and ran flat.

For pylance 14.x the same process is also a writer (spec/conformance.md §7): `write`, `prepare`
and `commit` are answered by writer.py, which declares the `write:` words it implements (the
overlay words only when the overlay gate is on); adapters/pylance/run.sh --writer runs it.

Capabilities are measured, not assumed. Which reader feature flags a Lance build understands
depends on its release and, for unstable features, on environment variables that Lance reads
itself (see GATES). At start the testee writes a tiny dataset with the installed pylance, sets
reader bit 64 (overlays) or 2048 (spilled lineage) in a copy of its manifest, and declares the
capability only when Lance reads that copy. The testee never sets a gate: the environment it
was started in decides, and adapters/pylance/run.sh --gates on|off sets or clears them.

Not declared, because pylance's public API does not expose them: `exclusion` (exclusion sets
and the reconciliation lists) and `error-codes` (Lance's errors carry messages, not the
reference's codes; classes are derived from the message, see CLASSES below).

How Lance failures are reported:
- an exception Lance raises while reading is a refusal: an `error` response with a class;
- a Lance panic (pyo3's PanicException, a BaseException; or "Task was aborted" when the panic
  happened in a background thread) and a Lance "internal error" (Lance's own words for a bug of
  its own, e.g. "All fragments must have row ids" from 11.x/12.x on a spilled manifest) are
  not verdicts on the data: they are reported as `errored`, so the check is an error (a crash
  of the reader), never a pass of a negative case (see CRASHES);
- any other Python exception is a bug of this adapter, also reported as `errored`.
"""

import importlib.metadata
import json
import math
import os
import re
import shutil
import sys
import tempfile
import traceback
import warnings

warnings.filterwarnings("ignore")  # pyarrow/lance deprecation chatter must not reach stdout

try:
    import lance  # noqa: E402
    import pyarrow as pa  # noqa: E402
except BaseException as e:  # noqa: BLE001 - a set-up problem: report it and exit 2
    sys.stderr.write(f"testee.py: cannot import pylance/pyarrow with {sys.executable}: {type(e).__name__}: {e}\n")
    sys.exit(2)

# writer.py imports nothing from here; testee.py hands it its helpers (writer.set_helpers).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import writer  # noqa: E402
from manifest_bytes import with_varint_field  # noqa: E402

PROTOCOL = 1
LINEAGE_COLUMNS = ["_row_created_at_version", "_row_last_updated_at_version"]

# Reader feature flags whose support decides a data capability, and the environment variable
# (if any) that gates the flag in Lance's release builds. Measured on the PyPI wheels
# (adapters/pylance/README.md has the table and how it was measured):
#
#   bit 64, overlays:          unknown up to 8.0.1; 9.0.0 .. 14.0.2 understand it only when
#                              LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES is set (to anything,
#                              even "0" or "": Lance tests presence, not value)
#   bit 2048, spilled lineage: unknown up to 12.0.0; 13.0.0 understands it only when
#                              LANCE_ENABLE_UNSTABLE_SPILLED_ROW_LINEAGE is set; 14.0.0 and
#                              14.0.2 understand it with no gate
#   bit 128, covered index metadata: unknown up to 10.0.0; 11.0.0 .. 14.0.2 understand it,
#                              with no gate
#
# `since`/`gated_until` are only the fallback when the measurement at start cannot be made.
GATES = [
    {
        "capability": "overlays",
        "bit": 64,
        "env": "LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES",
        "since": (9, 0, 0),
        "gated_until": None,  # gated in every release measured
    },
    {
        "capability": "spilled-lineage",
        "bit": 2048,
        "env": "LANCE_ENABLE_UNSTABLE_SPILLED_ROW_LINEAGE",
        "since": (13, 0, 0),
        "gated_until": (14, 0, 0),  # gated in 13.x, not from 14.0.0 on
    },
    {
        "capability": "covered-index-metadata",
        "bit": 128,
        "env": None,
        "since": (11, 0, 0),
        "gated_until": (11, 0, 0),  # never gated
    },
]

# Capabilities that do not depend on a flag: every pylance measured reads deletions, stable
# row ids and struct fields, and answers lineage and queries through the calls listed above.
BASE_CAPABILITIES = ["stable-row-ids", "deletions", "nested-fields", "lineage-placement", "scalar-query", "vector-query"]

# Index words (spec/conformance.md §3): the index kinds this pylance uses as the kit stores
# them, so that its index-path checks and damage to their files are judged. Every release
# measured uses the kit's IVF_FLAT index; a BTree of index_version 1 (the version the kit, like
# Lance 14 on a table with stable row ids, writes) is used from 14.0.0 on: 8.0.1, 12.0.0 and
# 13.0.0 ignore it with the warning 'has version 1, which is not supported (<=0)' and answer on
# the flat path, which a reader without `btree-index` may do (spec/indices.md, Differences).
INDEX_WORDS = [("vector-index", (0, 0, 0)), ("btree-index", (14, 0, 0))]

# Error class from Lance's message, first match wins; anything else is `invalid`. Lance has
# no error classes of its own, so each pattern names the Lance message it maps and why.
CLASSES = [
    # "Not supported: This dataset cannot be read by this version of Lance ... Flags: N"
    ("unsupported_feature", re.compile(r"Not supported|cannot be read by this version", re.I)),
    # "Encountered corrupt file ...: failed to deserialize overlay coverage bitmap"
    ("malformed", re.compile(r"corrupt file|failed to deserialize|failed to decode|protobuf", re.I)),
    # "overlay per-field coverage has 1 bitmaps but field position 1 was requested": the
    # coverage list is shorter than the field list, which the spec calls malformed [OVL-SHAPE-3].
    ("malformed", re.compile(r"per-field coverage has \d+ bitmaps", re.I)),
    # "LanceError(IO): file size is too small" and "... does not have sufficient data, len: N":
    # the manifest file is shorter than its own footer or length prefix says, so its bytes
    # cannot be decoded, which the spec calls malformed [DS-FRAME-1, DS-FRAME-2].
    ("malformed", re.compile(r"file size is too small|does not have sufficient data", re.I)),
    # "Invalid user input: DataOverlayFile is missing its data_file" (or "its coverage"): a
    # required message field is absent from the manifest, which the spec calls malformed
    # [OVL-LAYOUT-6].
    ("malformed", re.compile(r"DataOverlayFile is missing its", re.I)),
    # "file does not appear to be a Lance file (invalid magic: ...)": the bytes of a file the
    # manifest references (an index file cut short) do not end in a Lance footer, which the
    # spec calls malformed [IDX-READ-1].
    ("malformed", re.compile(r"does not appear to be a Lance file", re.I)),
]

# Failures that are Lance breaking, not Lance refusing the data; each is reported as `errored`.
CRASHES = [
    # Lance's wording for a failure it considers its own bug ("Encountered internal error.
    # Please file a bug report at ..."), e.g. 11.x/12.x on a manifest with a spilled lineage
    # column arm: "All fragments must have row ids".
    ("Lance internal error", re.compile(r"Encountered internal error", re.I)),
    # A panic in one of Lance's background threads reaches Python as "RuntimeError: Task was
    # aborted" (the panic message itself goes to stderr), e.g. 8.0.1 on a reversed row id range.
    ("Lance panicked in a background task", re.compile(r"Task was aborted", re.I)),
]


def crash_kind(message):
    for kind, pattern in CRASHES:
        if pattern.search(message):
            return kind
    return None


class Refused(Exception):
    """Lance refused the data: reported as an `error` response."""


class Crashed(Exception):
    """Lance panicked or reported an internal error: reported as `errored`."""

    def __init__(self, message, detail=None):
        super().__init__(message)
        self.detail = detail


def is_panic(e):
    # pyo3_runtime.PanicException derives from BaseException, not Exception, and is not
    # importable under a stable name, so it is recognised by its type name.
    return type(e).__name__ == "PanicException"


def classify(message):
    for cls, pattern in CLASSES:
        if pattern.search(message):
            return cls
    return "invalid"


def lance_call(fn, *args, **kwargs):
    """Runs a pylance call; an exception it raises is Lance refusing the data, unless it is a
    panic or another crash (CRASHES)."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - every Lance failure is a verdict on the data...
        message = str(e)
        kind = crash_kind(message)  # ...except Lance breaking (CRASHES)
        if kind:
            raise Crashed(f"{kind}: {message}", traceback.format_exc()) from e
        raise Refused(message) from e
    except BaseException as e:
        if is_panic(e):
            raise Crashed(f"Lance panicked: {e}", traceback.format_exc()) from e
        raise


# ---------------------------------------------------------------- what this pylance supports

def pylance_version():
    try:
        return importlib.metadata.version("pylance")
    except importlib.metadata.PackageNotFoundError:
        return getattr(lance, "__version__", "unknown")


def version_tuple(text):
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def probe_flags(bits):
    """{bit: True (read) | False (refused as unsupported) | None (no answer)} for a dataset the
    installed pylance writes, with each bit set in its reader flags."""
    root = tempfile.mkdtemp(prefix="pylance-testee-probe-")
    try:
        base = os.path.join(root, "base")
        lance_call(lance.write_dataset, pa.table({"x": pa.array([1, 2], pa.int64())}), base)
        manifests = [os.path.join(d, f) for d in (os.path.join(base, "_versions"), base)
                     for f in os.listdir(d) if f.endswith(".manifest")]
        out = {}
        for bit in bits:
            copy = os.path.join(root, f"bit-{bit}")
            shutil.copytree(base, copy)
            for m in manifests:
                target = os.path.join(copy, os.path.relpath(m, base))
                with open(m, "rb") as f:
                    data = f.read()
                with open(target, "wb") as f:
                    f.write(with_varint_field(data, 9, bit))  # reader_feature_flags
            try:
                lance_call(lambda: lance.dataset(copy).to_table())
                out[bit] = True
            except Refused as e:
                out[bit] = False if classify(str(e)) == "unsupported_feature" else None
            except Crashed:
                out[bit] = None
        lance_call(lambda: lance.dataset(base).to_table())  # the unpatched dataset must read
        return out, None
    except Exception as e:  # noqa: BLE001 - the probe is best effort; the table is the fallback
        return {}, f"{type(e).__name__}: {e}"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def describe():
    version = pylance_version()
    vt = version_tuple(version)
    probed, probe_error = probe_flags([g["bit"] for g in GATES])
    capabilities = list(BASE_CAPABILITIES)
    capabilities += [word for word, since in INDEX_WORDS if vt >= since]
    gates = []
    for g in GATES:
        env_set = g["env"] is not None and g["env"] in os.environ
        known = vt >= g["since"]
        gated = known and (g["gated_until"] is None or vt < g["gated_until"])
        expected = known and (env_set or not gated)
        measured = probed.get(g["bit"])
        understood = expected if measured is None else measured
        if measured is not None and measured != expected:
            sys.stderr.write(
                f"testee.py: pylance {version} {'reads' if measured else 'refuses'} reader bit {g['bit']}"
                f" ({g['env']} {'set' if env_set else 'unset'}), which the table in testee.py does not"
                " predict; the measurement wins\n"
            )
        gates.append({
            "capability": g["capability"],
            "bit": g["bit"],
            "env": g["env"] if gated else None,
            "env_set": env_set,
            "understood": understood,
            "measured": measured is not None,
        })
        if understood:
            capabilities.append(g["capability"])
            if g["capability"] == "overlays":
                capabilities.append("sparse-overlays")
    capabilities += writer.words(vt, "overlays" in capabilities)
    return {
        "implementation": {
            "name": "pylance",
            "version": version,
            "language": "python",
            "homepage": "https://github.com/lancedb/lance",
        },
        "capabilities": capabilities,
        "gates": gates,
        "probe_error": probe_error,
        "python": sys.executable,
    }


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
        self.writer = writer.Writer()

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
            scanner = lance_call(
                ds.scanner,
                columns=[],
                filter=sql(q["where"]),
                with_row_address=True,
            )
            plan = plan_of(scanner, ds, q["index"], vector=False)
            table = lance_call(scanner.to_table)
            for addr in sorted(table.column("_rowaddr").to_pylist()):
                hits.append({"fragment": addr >> 32, "offset": addr & 0xFFFFFFFF})
            return {"kind": "scalar", "final": hits, "plan": plan}
        column = lance_call(ds.list_indices)
        index = next((i for i in column if i["name"] == q["index"]), None)
        if index is None:
            raise Refused(f"no index {q['index']}")
        vector = [float(x) for x in q["vector"]["value"]]
        nearest = {"column": index["fields"][0], "q": vector, "k": int(q["k"]), "metric": "l2"}
        try:
            scanner = lance_call(ds.scanner, columns=[], nearest=nearest, with_row_address=True)
            plan = plan_of(scanner, ds, q["index"], vector=True)
            rows = lance_call(scanner.to_table).to_pylist()
        except Refused as e:
            # Releases up to 8.0.1 cannot return _rowaddr from a vector search; they return
            # _rowid, which a plain scan maps to the row's address.
            if "No field named _rowaddr" not in str(e):
                raise
            by_id = lance_call(ds.scanner, columns=[], nearest=nearest, with_row_id=True)
            plan = plan_of(by_id, ds, q["index"], vector=True)
            rows = lance_call(by_id.to_table).to_pylist()
            ids = lance_call(
                lambda: ds.to_table(columns=[], with_row_id=True, with_row_address=True)
            ).to_pylist()
            addr_of = {r["_rowid"]: r["_rowaddr"] for r in ids}
            for r in rows:
                r["_rowaddr"] = addr_of[r["_rowid"]]
        for r in rows:
            addr = r["_rowaddr"]
            hits.append(
                {
                    "fragment": addr >> 32,
                    "offset": addr & 0xFFFFFFFF,
                    "distance": {"type": "float32", "value": float_text(r["_distance"])},
                }
            )
        return {"kind": "vector", "final": hits, "plan": plan}


def plan_of(scanner, ds, index_name, vector):
    """Lance's physical plan for a query, and whether an index on the named index's key is in
    it.

    Lance names the index it searches in the plan: a BTree as `ScalarIndexQuery:
    query=[...]@<name>(BTree)`, a vector index as `ANNSubIndex: name=<name>`. A plan without
    one answered on the flat path (the filter evaluated on every row, or a full KNN). Lance
    picks the index itself, so when two indices share a key (a case naming the second one)
    either counts as the index path. When an overlay is newer than the index the plan also has
    a `UnionExec` whose other branch reads the excluded rows (`OneShotStream:
    columns=[result,discriminant,fragments_covered]`); the text is passed on whole for the
    check's detail."""
    text = lance_call(scanner.explain_plan, True)
    indices = lance_call(ds.list_indices)
    named = next((i for i in indices if i["name"] == index_name), None)
    names = [index_name]
    if named is not None:
        names += [i["name"] for i in indices if i["fields"][:1] == named["fields"][:1] and i["name"] != index_name]
    if vector:
        used = any(f"ANNSubIndex: name={n}," in text for n in names)
    else:
        used = any(f"@{n}(" in text for n in names)
    return {"index": used, "text": text}


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


def handle(testee, req, described):
    seq = req.get("seq", 0)
    cmd = req.get("cmd")
    try:
        if cmd == "start":
            result = {
                "protocol": PROTOCOL,
                "implementation": described["implementation"],
                "capabilities": described["capabilities"],
            }
        elif cmd in ("open", "scan", "lineage", "query"):
            result = getattr(testee, cmd)(req)
        elif cmd in ("write", "prepare", "commit", "commit_prepared"):
            if not any(w.startswith("write:") for w in described["capabilities"]):
                return {"seq": seq, "unsupported": {"reason": f"pylance {described['implementation']['version']} is not set up as a writer (adapters/pylance/writer.py: 14.x only)"}}
            member, result = writer.answer(testee.writer, cmd, req)
            if member != "result":
                return {"seq": seq, member: result}
        elif cmd == "stop":
            result = {}
        else:
            return {"seq": seq, "unsupported": {"reason": f"command {cmd!r} is not implemented"}}
    except Refused as e:
        message = str(e)
        return {"seq": seq, "error": {"class": classify(message), "message": message}}
    except Crashed as e:
        return {"seq": seq, "errored": {"message": str(e), "detail": e.detail or ""}}
    except Exception as e:  # noqa: BLE001 - a bug of this adapter, not a verdict
        return {"seq": seq, "errored": {"message": f"{type(e).__name__}: {e}", "detail": traceback.format_exc()}}
    except BaseException as e:
        # A panic outside lance_call (a property, to_json, ...) is still a Lance crash.
        if not is_panic(e):
            raise
        return {"seq": seq, "errored": {"message": f"Lance panicked: {e}", "detail": traceback.format_exc()}}
    return {"seq": seq, "result": result}


def main():
    writer.set_helpers(lance_call=lance_call, Refused=Refused, Crashed=Crashed, sql=sql,
                       literal=literal)
    if sys.argv[1:] == ["--describe"]:
        print(json.dumps(describe(), indent=2))
        return
    if sys.argv[1:]:
        sys.stderr.write(__doc__)
        sys.exit(2)
    described = describe()
    sys.stderr.write(
        f"testee.py: pylance {described['implementation']['version']}, capabilities: "
        f"{', '.join(described['capabilities'])}\n"
    )
    testee = Testee()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except ValueError as e:
            req = None
            resp = {"seq": 0, "errored": {"message": f"not JSON: {e}"}}
        else:
            resp = handle(testee, req, described)
        sys.stdout.write(json.dumps(resp) + "\n")
        sys.stdout.flush()
        if isinstance(req, dict) and req.get("cmd") == "stop":
            break


if __name__ == "__main__":
    main()
