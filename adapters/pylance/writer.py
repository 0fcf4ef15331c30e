"""pylance as a lance-conformance writer: the `write`, `prepare` and `commit` commands
(spec/conformance.md §7), answered by testee.py through this module.

Every step is one Lance commit made through pylance's public API:

- create:        lance.write_dataset(data_storage_version=V, enable_stable_row_ids=...);
                 with `config` or `indices`, see "hand-built commits" below;
- append:        LanceFragment.create + LanceOperation.Append (so `prepare` can hold it);
- overlay:       the value file written by lance.file.LanceFileWriter (version=V), committed
                 with LanceOperation.DataOverlay (dense: one offset set; sparse: one per field);
- delete:        LanceDataset.delete(SQL): `_rowaddr IN (...)` for offsets, the typed
                 predicate as SQL (testee.sql) for `where`;
- build_index:   create_index_uncommitted ("BTREE"; "IVF_FLAT" with one partition and metric
                 l2, Lance's exact vector index) on the version the build reads (`built_from`),
                 committed with LanceOperation.CreateIndex;
- rewrite_rows:  lance.optimize.Compaction.plan with every other fragment excluded, its one
                 task executed, committed as LanceOperation.Rewrite (see rewrite_rows);
- update_rows:   LanceOperation.Update: the moved rows taken by address, written to one new
                 fragment that carries their row ids (RowIdSequence), and deleted where they were;
- update:        LanceDataset.update({field: typed SQL literal}, where=the typed predicate as SQL);
- rewrite_columns: LanceFragment.update_columns(rows keyed by _rowaddr, with_offsets=True),
                 committed as LanceOperation.Update(update_mode="rewrite_columns",
                 updated_fragment_offsets={fragment: the matched offsets});
- merge_insert:  LanceDataset.merge_insert(on).when_matched_update_all()
                 .when_not_matched_insert_all().execute(rows);
- restore:       lance.dataset(path, version=V).restore();
- set_config:    LanceOperation.UpdateConfig;
- add_fields:    LanceDataset.add_columns(pyarrow fields): all-NULL columns, no data written;
                 with `fill`, LanceDataset.add_columns({field: typed SQL literal}) (a backfill),
                 then the unfilled fields as pyarrow fields;
- drop_fields:   LanceDataset.drop_columns;
- commit_prepared (the kit's own files, spec/conformance.md §7.4): `overlay` is
                 LanceOperation.DataOverlay of DataOverlayFile(DataFile(...), offsets) with no
                 committed_version (Lance stamps it); `merge` is LanceOperation.Merge of every
                 fragment's FragmentMetadata, the named fragments' `overlays` replaced by the
                 transaction's list (committed_version as the caller states it), and the schema
                 as it is; `append` is LanceOperation.Append of FragmentMetadata(id 0, the
                 kit's DataFiles, physical_rows), Lance assigning ids, row ids and lineage;
                 `delete` is LanceOperation.Delete of the named fragments' FragmentMetadata
                 with the kit's DeletionFile (see prepared_operation);
- commit_retry:  `prepare` writes the files and builds the operation on `read_version`;
                 `commit` is LanceDataset.commit(dir, operation, read_version=that version),
                 after the conflicting commit landed, so Lance's own conflict resolver rebases it.

V is the request's `data_file_version` (spec/conformance.md §7.1), "2.0" when it names none;
appends, rewrites and updates pass it to Lance too (data_storage_version=V), so every data file
a commit writes is in V.

Not declared, because Lance 14.0.2 has no API that makes them (adapters/pylance/README.md):
`write:compact-overlays` (merging some of a fragment's overlays) and `write:fold` (folding a
fragment's overlays into a new base file of the same fragment).

Hand-built commits. Lance cannot create a table with config entries or with indices in one
commit: write_dataset takes neither, and an index is built over a committed version. For a
`create` that has them, Lance makes the history itself (write_dataset, then one CreateIndex
commit of every index built on version 1, then one UpdateConfig commit), and the adapter then
keeps only Lance's last manifest, with its version field changed to 1 and stored under version
1's name; the earlier manifests are removed. Every byte but the version number is Lance's.

Refusals. A step the adapter or Lance will not commit is answered with `error`, class
`refused`; Lance's own message is the message. A step the adapter cannot express with Lance's
API is answered `unsupported`, with the reason.
"""

import json
import os
import re
import uuid

import lance
import lineage_lengths
import pyarrow as pa
from manifest_bytes import with_varint_field
from lance import LanceOperation as Op
from lance.file import LanceFileWriter
from lance.fragment import DataFile, DeletionFile, FragmentMetadata

# Filled in by testee.py (set_helpers): its Lance-call wrapper and its SQL translation, so the
# reader and the writer classify Lance failures and spell predicates the same way.
H = {}

# The data file version every file is written in when the run asks for none
# (spec/conformance.md §7.1: `data_file_version` in `write` and `prepare`).
DEFAULT_STORAGE_VERSION = "2.0"


def set_helpers(**helpers):
    H.update(helpers)


def with_struct_ancestors(fields, leaves, coverage):
    """The fields a value file lists for `leaves`: each leaf with its struct ancestors, in
    schema order. Adds to `coverage` each struct's coverage, the union of its covered
    children's."""
    listed = []
    for name in sorted(leaves, key=lambda n: fields.get(n)["id"]):
        for a in fields.ancestors(name) + [name]:
            if a not in listed:
                listed.append(a)
    listed.sort(key=lambda n: fields.order.index(n))
    for name in listed:
        if name not in leaves:  # a struct: covers what its covered children cover
            kids = [n for n in leaves if n.startswith(name + ".")]
            coverage[name] = sorted(set().union(*[set(coverage[k]) for k in kids]))
    return listed


class WriteRefused(Exception):
    """The step is not committed: an `error` response with class `refused`."""


class WriteUnsupported(Exception):
    """Lance's API cannot make this step: an `unsupported` response."""


def words(version_tuple, overlays_understood):
    """The `write:` words this pylance implements (DataOverlay exists from 9.0.0 on, but the
    adapter is measured and maintained for 14.x only: older releases declare none). The overlay
    words need the overlay gate: with it unset, Lance still commits a DataOverlay (and sets
    feature bit 64), but then neither reads nor writes that dataset again, so a history cannot
    go on past its first overlay."""
    if version_tuple[:1] != (14,) or not hasattr(Op, "DataOverlay"):
        return []
    overlay = (["write:overlay", "write:sparse-overlay", "write:prepared-commit"]
               if overlays_understood else [])
    return [
        "write:create",
        "write:append",
        *overlay,
        "write:delete",
        "write:btree-index",
        "write:vector-index",
        "write:rewrite-rows",
        "write:update-rows",
        "write:update",
        "write:rewrite-columns",
        "write:merge-insert",
        "write:restore",
        "write:commit-retry",
        "write:set-config",
        "write:add-fields",
        "write:drop-fields",
        # Bit 2048 is stable in 14.x: Lance reads and carries column arms (facts sheet §7).
        "write:spilled-lineage",
    ]


def call(fn, *args, **kwargs):
    """A pylance call; Lance refusing is a refusal of the step, Lance crashing stays a crash."""
    try:
        return H["lance_call"](fn, *args, **kwargs)
    except H["Refused"] as e:
        raise WriteRefused(f"Lance refused: {e}") from e


# ---------------------------------------------------------------- types and values

def arrow_type(spec):
    t = spec["type"]
    simple = {
        "bool": pa.bool_(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "uint64": pa.uint64(),
        "float32": pa.float32(),
        "float64": pa.float64(),
        "utf8": pa.string(),
    }
    if t in simple:
        return simple[t]
    m = re.fullmatch(r"fixed_size_list<float32,(\d+)>", t)
    if m:
        return pa.list_(pa.field("item", pa.float32()), int(m.group(1)))
    if t == "struct":
        return pa.struct([arrow_field(c) for c in spec.get("children", [])])
    raise WriteUnsupported(f"no Arrow type for {t!r}")


def arrow_field(spec):
    return pa.field(spec["name"], arrow_type(spec), nullable=spec.get("nullable", True))


def py_value(tagged):
    """The Python value of a tagged cell (spec/conformance.md §2.2)."""
    t, v = tagged["type"], tagged["value"]
    if v is None:
        return None
    if t in ("int64", "uint64"):
        return int(v)
    if t in ("float32", "float64"):
        return float(v)  # also "NaN", "inf", "-inf"
    if t.startswith("fixed_size_list"):
        return [None if x is None else float(x) for x in v]
    if t == "struct":
        return {name: py_value(child) for name, child in v.items()}
    return v


def table_of(schema, rows):
    """A table of `schema` holding `rows` (field name -> tagged value; a missing field is NULL)."""
    columns = {f.name: [] for f in schema}
    for row in rows:
        unknown = set(row) - set(columns)
        if unknown:
            raise WriteRefused(f"rows name fields the schema lacks: {sorted(unknown)}")
        for f in schema:
            columns[f.name].append(py_value(row[f.name]) if f.name in row else None)
    return pa.table({f.name: pa.array(columns[f.name], f.type) for f in schema}, schema=schema)


def generated_table(schema, n):
    """`generate_rows`: row i holds i in every integer top-level field, NULL elsewhere."""
    data = {}
    for f in schema:
        if pa.types.is_integer(f.type):
            data[f.name] = pa.array(range(n), f.type)
        else:
            data[f.name] = pa.nulls(n, f.type)
    return pa.table(data, schema=schema)


def rows_table(schema, step):
    if step.get("generate_rows") is not None:
        if step.get("rows"):
            raise WriteRefused("give `rows` or `generate_rows`, not both")
        return generated_table(schema, int(step["generate_rows"]))
    return table_of(schema, step.get("rows") or [])


SQL_TYPES = {
    "bool": "BOOLEAN",
    "int32": "INT",
    "int64": "BIGINT",
    "uint64": "BIGINT UNSIGNED",
    "float32": "FLOAT",
    "float64": "DOUBLE",
    "utf8": "VARCHAR",
}


def typed_literal(tagged):
    """A tagged cell as a SQL expression of exactly its type (update's SET values, add_columns'
    backfill expressions, whose type becomes the new column's)."""
    sql_type = SQL_TYPES.get(tagged["type"])
    if sql_type is None:
        raise WriteUnsupported(f"no SQL literal for a {tagged['type']} value")
    return f"CAST({H['literal'](tagged)} AS {sql_type})"


def offset_key(key):
    """The offsets an overlay cells key names: `"7"`, a range `"0..10"` (end exclusive), or
    every k-th offset of one, `"1..10/2"` (conformance-cases/README.md)."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:\.\.\s*(\d+)\s*(?:/\s*(\d+)\s*)?)?", key)
    if not m:
        raise WriteRefused(f"offset key {key!r} is not an offset, `a..b` or `a..b/k`")
    start = int(m.group(1))
    if m.group(2) is None:
        return [start]
    end, stride = int(m.group(2)), int(m.group(3) or 1)
    if stride == 0 or start >= end:
        raise WriteRefused(f"offset key {key!r} names no offsets")
    return list(range(start, end, stride))


# ---------------------------------------------------------------- Lance's schema

class Fields:
    """The dataset's fields by dotted name: Lance field id, Arrow field, parent name."""

    def __init__(self, ds):
        self.by_name = {}
        self.order = []  # dotted names in pre-order (field-id order for a Lance-made schema)
        ids = {}
        for f in ds.lance_schema.fields():
            self._lance(f, "", ids)

        def walk(field, prefix, parent):
            name = prefix + field.name
            self.by_name[name] = {"id": ids[name], "arrow": field, "parent": parent}
            self.order.append(name)
            if pa.types.is_struct(field.type):
                for child in field.type:
                    walk(child, name + ".", name)

        for f in ds.schema:
            walk(f, "", None)

    def _lance(self, f, prefix, ids):
        name = prefix + f.name()
        ids[name] = f.id()
        for c in f.children():
            self._lance(c, name + ".", ids)

    def get(self, name):
        if name not in self.by_name:
            raise WriteRefused(f"no field {name!r}")
        return self.by_name[name]

    def ancestors(self, name):
        out = []
        parent = self.get(name)["parent"]
        while parent is not None:
            out.append(parent)
            parent = self.by_name[parent]["parent"]
        return out[::-1]


def expected_ids(specs, start=0):
    """The ids the case gives its fields (explicit, or counted up in pre-order from `start`),
    as {dotted name: id}."""
    out = {}
    counter = [start]

    def walk(spec, prefix):
        fid = spec.get("id")
        if fid is None:
            fid = counter[0]
        counter[0] = max(counter[0], fid) + 1
        out[prefix + spec["name"]] = fid
        for c in spec.get("children", []):
            walk(c, prefix + spec["name"] + ".")

    for s in specs:
        walk(s, "")
    return out


def explicit_ids(specs, start=0):
    """Lance numbers new fields itself, counting up in pre-order from one above the highest id:
    a case that gives other ids cannot be written through its API."""
    def walk(spec, counter):
        if spec.get("id") is not None and spec["id"] != counter[0]:
            raise WriteUnsupported(
                f"field {spec['name']!r} has the explicit id {spec['id']}: Lance's API takes no field ids"
            )
        counter[0] += 1
        for c in spec.get("children", []):
            walk(c, counter)

    counter = [start]
    for s in specs:
        walk(s, counter)


def check_ids(ds, specs, start=0):
    """Lance numbers new fields itself; a case whose explicit ids differ cannot be written."""
    want = expected_ids(specs, start)
    have = Fields(ds)
    for name, fid in want.items():
        got = have.by_name.get(name, {}).get("id")
        if got != fid:
            raise WriteUnsupported(
                f"Lance numbered field {name!r} {got}, the case gives it id {fid}: Lance's API takes no field ids"
            )


def stable_row_ids(ds):
    """Whether the dataset has stable row ids: Lance records them in every fragment's
    row_id_meta (the manifest flag is not exposed)."""
    return all(f.metadata.row_id_meta is not None for f in ds.get_fragments()) and bool(ds.get_fragments())


# ---------------------------------------------------------------- manifests

def manifest_name(version):
    return f"{(1 << 64) - 1 - version:020d}.manifest"


def squash_to_version_one(path, last):
    """Keeps Lance's manifest of version `last` as version 1 and removes versions 1..last-1."""
    versions = os.path.join(path, "_versions")
    with open(os.path.join(versions, manifest_name(last)), "rb") as f:
        data = f.read()
    patched = with_varint_field(data, 3, 1)  # Manifest.version
    for v in range(1, last + 1):
        os.remove(os.path.join(versions, manifest_name(v)))
    with open(os.path.join(versions, manifest_name(1)), "wb") as f:
        f.write(patched)
    hint = os.path.join(versions, "latest_version_hint.json")
    if os.path.exists(hint):
        with open(hint, "w") as f:
            f.write('{"version":1}')


def clear_dir(path):
    """Empties a dataset directory the adapter created (a failed create leaves nothing)."""
    import shutil

    for entry in os.listdir(path):
        p = os.path.join(path, entry)
        if os.path.isdir(p):
            shutil.rmtree(p)
        else:
            os.remove(p)


# ---------------------------------------------------------------- the writer

class Writer:
    def __init__(self):
        self.prepared = {}
        self.next_token = 0
        self.storage_version = DEFAULT_STORAGE_VERSION
        # The sources of the compaction the current step runs ({fragment id: surviving
        # offsets}), for the reply's lineage lengths (lineage_lengths.reply).
        self.compaction = None

    def asked_version(self, req):
        """The data file version this request's files are written in."""
        self.storage_version = req.get("data_file_version") or DEFAULT_STORAGE_VERSION

    # ---- protocol commands

    def write(self, req):
        self.asked_version(req)
        step = req["step"]
        op = step.get("op")
        path = req["dataset"]
        read_version = int(req["read_version"])
        if op == "create":
            return {"version": self.create(path, read_version, step)}
        ds = self.at(path, read_version)
        handler = {
            "append": self.append,
            "overlay": self.overlay,
            "delete": self.delete,
            "build_index": self.build_index,
            "rewrite_rows": self.rewrite_rows,
            "update_rows": self.update_rows,
            "update": self.update,
            "rewrite_columns": self.rewrite_columns,
            "merge_insert": self.merge_insert,
            "restore": self.restore,
            "set_config": self.set_config,
            "add_fields": self.add_fields,
            "drop_fields": self.drop_fields,
        }.get(op)
        if handler is None:
            raise WriteUnsupported(
                f"`{op}`: Lance 14.0.2 has no API that makes this step (adapters/pylance/README.md)"
            )
        self.compaction = None
        new = handler(ds, step)
        if new.version != read_version + 1:
            raise H["Crashed"](
                f"Lance committed version {new.version} for one step on version {read_version}"
            )
        return self.committed(path, read_version, new.version)

    def committed(self, path, read_version, version):
        """A commit reply: the version, and the lineage lengths of the fragments it wrote
        (spec/conformance.md §7.3; lineage_lengths.py measures them as Lance does)."""
        lengths = lineage_lengths.reply(path, read_version, version, self.compaction)
        return {"version": version, "lineage_lengths": lengths}

    def prepare(self, req):
        self.asked_version(req)
        step = req["step"]
        ds = self.at(req["dataset"], int(req["read_version"]))
        if step.get("op") == "overlay":
            operation = Op.DataOverlay(self.overlay_groups(ds, step))
        elif step.get("op") == "append":
            operation = self.append_operation(ds, step)
        else:
            raise WriteUnsupported(f"prepare takes `overlay` or `append`, not `{step.get('op')}`")
        self.next_token += 1
        token = f"t{self.next_token}"
        self.prepared[token] = (req["dataset"], ds.version, operation)
        return {"transaction": token}

    def commit(self, req):
        token = req["transaction"]
        if token not in self.prepared:
            raise ValueError(f"no prepared transaction {token!r}")
        path, read_version, operation = self.prepared.pop(token)
        if path != req["dataset"]:
            raise ValueError(f"transaction {token!r} was prepared in {path}, not {req['dataset']}")
        new = call(lance.LanceDataset.commit, path, operation, read_version=read_version)
        self.compaction = None
        return self.committed(path, new.version - 1, new.version)

    def commit_prepared(self, req):
        ds = self.at(req["dataset"], int(req["read_version"]))
        new = self.commit_op(ds, prepared_operation(ds, req["transaction"]))
        if new.version != ds.version + 1:
            raise H["Crashed"](f"Lance committed version {new.version} on version {ds.version}")
        self.compaction = None
        return self.committed(req["dataset"], ds.version, new.version)

    # ---- helpers

    @staticmethod
    def at(path, read_version):
        ds = call(lance.dataset, path)
        if ds.version != read_version:
            raise WriteRefused(f"asked to build on version {read_version}, but the newest is {ds.version}")
        return ds

    @staticmethod
    def commit_op(ds, operation):
        return call(lance.LanceDataset.commit, ds.uri, operation, read_version=ds.version)

    # ---- create

    def create(self, path, read_version, step):
        if read_version != 0 or os.path.isdir(os.path.join(path, "_versions")):
            raise WriteRefused("`create` needs an empty directory")
        schema = pa.schema([arrow_field(f) for f in step["schema"]])
        table = rows_table(schema, step)
        stable = step.get("stable_row_ids", True)
        config = step.get("config") or {}
        indices = step.get("indices") or []
        explicit_ids(step["schema"])
        os.makedirs(path, exist_ok=True)
        try:
            # (write_dataset of no rows commits no fragment, as a `create` without rows asks)
            ds = call(
                lance.write_dataset, table, path, schema=schema,
                data_storage_version=self.storage_version, enable_stable_row_ids=stable,
            )
            check_ids(ds, step["schema"])
            if ds.version != 1:
                raise H["Crashed"](f"write_dataset created version {ds.version}")
            if indices:
                built = [self.index_segment(ds, spec["fields"], spec["kind"], spec["name"]) for spec in indices]
                ds = self.commit_op(ds, Op.CreateIndex(new_indices=built, removed_indices=[]))
            if config:
                ds = self.commit_op(ds, Op.UpdateConfig(config_updates=Op.UpdateMap(dict(config))))
            if ds.version != 1:
                squash_to_version_one(path, ds.version)
            return 1
        except BaseException:
            clear_dir(path)
            raise

    # ---- append

    def append_operation(self, ds, step):
        table = rows_table(ds.schema, step)
        if table.num_rows == 0:
            raise WriteUnsupported("an append of no rows: Lance writes no fragment for an empty table")
        fragments = call(
            lance.fragment.write_fragments, table, ds.uri, schema=ds.schema,
            data_storage_version=self.storage_version, max_rows_per_file=max(table.num_rows, 1),
        )
        if len(fragments) != 1:
            raise H["Crashed"](f"Lance wrote {len(fragments)} fragments for one append")
        return Op.Append(fragments)

    def append(self, ds, step):
        return self.commit_op(ds, self.append_operation(ds, step))

    # ---- overlays

    def overlay_groups(self, ds, step):
        fields = Fields(ds)
        specs = []
        if step.get("cells") is not None:
            specs.append({"fragment": step.get("fragment"), "shape": step.get("shape") or "auto",
                          "cells": step["cells"], "fields": step.get("fields")})
        for o in step.get("overlays") or []:
            specs.append({"fragment": o.get("fragment", step.get("fragment")), "shape": o["shape"],
                          "cells": o["cells"], "fields": o.get("fields")})
        if not specs:
            raise WriteRefused("an overlay step with no cells")
        groups = []  # one group per fragment, its overlays oldest first
        by_fragment = {}
        for spec in specs:
            if spec["fragment"] is None:
                raise WriteRefused("an overlay names no fragment")
            overlays = self.overlay_file(ds, fields, int(spec["fragment"]), spec["shape"],
                                         spec["cells"], spec.get("fields") or [])
            fid = int(spec["fragment"])
            if fid not in by_fragment:
                by_fragment[fid] = Op.DataOverlayGroup(fid, [])
                groups.append(by_fragment[fid])
            by_fragment[fid].overlays.extend(overlays)
        return groups

    def overlay(self, ds, step):
        return self.commit_op(ds, Op.DataOverlay(self.overlay_groups(ds, step)))

    @staticmethod
    def leaf_cells(fields, cells):
        """{leaf dotted name: {offset: python value}}; a struct cell stands for its children."""
        out = {}

        def put(name, offset, value, tagged_type):
            info = fields.get(name)
            if pa.types.is_struct(info["arrow"].type):
                if value is None:
                    for child in info["arrow"].type:
                        put(f"{name}.{child.name}", offset, None, None)
                else:
                    for child_name, child_value in value.items():
                        put(f"{name}.{child_name}", offset, child_value, None)
                return
            out.setdefault(name, {})[offset] = value

        for name, by_offset in cells.items():
            for key, tagged in by_offset.items():
                for offset in offset_key(key):
                    put(name, offset, py_value(tagged), tagged["type"])
        return out

    @staticmethod
    def current_values(ds, fragment_id, names, offsets):
        """The resolved values of dotted `names` at `offsets` of a fragment (None for a deleted
        row, whose cell no reader sees)."""
        tops = sorted({n.split(".")[0] for n in names})
        frag = call(ds.get_fragment, fragment_id)
        if frag is None:
            raise WriteRefused(f"no fragment {fragment_id}")
        table = call(frag.to_table, columns=tops, with_row_address=True)
        rows = {r["_rowaddr"] & 0xFFFFFFFF: r for r in table.to_pylist()}
        out = {}
        for n in names:
            parts = n.split(".")
            for o in offsets:
                v = rows.get(o)
                for p in parts:
                    v = None if v is None else v.get(p)
                out.setdefault(n, {})[o] = v
        return out

    def overlay_file(self, ds, fields, fragment_id, shape, cells, listed_fields):
        frag = call(ds.get_fragment, fragment_id)
        if frag is None:
            raise WriteRefused(f"no fragment {fragment_id}")
        physical = frag.metadata.physical_rows
        leaves = self.leaf_cells(fields, cells)
        # A leaf listed in `fields` without cells is a value column of its own: empty coverage
        # in a sparse overlay, the widened post-images in a dense one. (The order `fields` gives
        # is the reference's form; this writer lists columns in field-id order.)
        for name in listed_fields:
            if not pa.types.is_struct(fields.get(name)["arrow"].type):
                leaves.setdefault(name, {})
        for name, by_offset in leaves.items():
            bad = [o for o in by_offset if o < 0 or o >= physical]
            if bad:
                raise WriteRefused(f"{name}: offsets {bad} are past fragment {fragment_id}'s {physical} rows")
        sets = [frozenset(v) for v in leaves.values()]
        if shape == "auto":
            shape = "dense" if len(set(sets)) <= 1 else "sparse"
        if shape == "dense":
            union = sorted(set().union(*sets)) if sets else []
            missing = {n: [o for o in union if o not in v] for n, v in leaves.items()}
            widen = self.current_values(ds, fragment_id, [n for n, m in missing.items() if m],
                                        sorted({o for m in missing.values() for o in m}))
            for n, m in missing.items():
                for o in m:
                    leaves[n][o] = widen[n][o]  # the post-image: the cell's current value
            coverage = {n: union for n in leaves}
        elif shape == "sparse":
            coverage = {n: sorted(v) for n, v in leaves.items()}
        else:
            raise WriteRefused(f"unknown overlay shape {shape!r}")
        # The value file lists the covered leaves in field-id order, each struct ancestor before
        # its first descendant (the form Lance's own writers produce).
        listed = with_struct_ancestors(fields, leaves, coverage)
        lengths = {len(coverage[n]) for n in listed}
        if len(lengths) > 1:
            # LanceFileWriter writes record batches, whose columns all have one length, so one
            # value file cannot hold fields covering different numbers of offsets. The same
            # cells go into one sparse overlay per set of leaves sharing a coverage, all in this
            # commit: they cover disjoint fields, so every cell resolves, every row is stamped
            # and every index excludes exactly as from the one overlay the case describes (the
            # form is the writer's, spec/conformance.md §7.2).
            groups = {}
            for name in sorted(leaves, key=lambda n: fields.get(n)["id"]):
                groups.setdefault(tuple(coverage[name]), []).append(name)
            return [
                self.write_overlay(ds, fields, {n: leaves[n] for n in names},
                                   {n: coverage[n] for n in names}, "sparse")
                for names in groups.values()
            ]
        return [self.write_overlay(ds, fields, leaves, coverage, shape)]

    def write_overlay(self, ds, fields, leaves, coverage, shape):
        """The value file of `leaves` (dotted leaf name -> {offset: value}) covering `coverage`
        (name -> offsets), with their struct ancestors, and its DataOverlayFile."""
        coverage = dict(coverage)
        listed = with_struct_ancestors(fields, leaves, coverage)
        lengths = {len(coverage[n]) for n in listed}
        if len(lengths) > 1:
            raise WriteUnsupported(
                "struct children sharing a coverage whose struct position covers more offsets: "
                "lance.file.LanceFileWriter writes only columns of one length (missing API)"
            )
        count = lengths.pop() if lengths else 0

        def column(name, arrow_field):
            if pa.types.is_struct(arrow_field.type):
                kids = [c for c in arrow_field.type if f"{name}.{c.name}" in listed]
                children = [column(f"{name}.{c.name}", c) for c in kids]
                arr = pa.StructArray.from_arrays(children, fields=kids) if kids else pa.nulls(count, pa.struct([]))
                return arr
            values = [leaves[name][o] for o in coverage[name]]
            return pa.array(values, arrow_field.type)

        def prune(name, arrow_field):
            if pa.types.is_struct(arrow_field.type):
                kids = [prune(f"{name}.{c.name}", c) for c in arrow_field.type if f"{name}.{c.name}" in listed]
                return pa.field(arrow_field.name, pa.struct(kids), nullable=True)
            return pa.field(arrow_field.name, arrow_field.type, nullable=True)

        tops = [n for n in listed if "." not in n]
        file_schema = pa.schema([prune(n, fields.get(n)["arrow"]) for n in tops])
        arrays = [column(n, fields.get(n)["arrow"]) for n in tops]
        table = pa.Table.from_arrays(arrays, schema=file_schema)
        rel = f"overlay-{uuid.uuid4().hex}.lance"
        full = os.path.join(ds.uri, "data", rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        writer = call(LanceFileWriter, full, file_schema, version=self.storage_version)
        call(writer.write_batch, table)
        call(writer.close)
        # From 2.1 on a struct takes no column and has no entry in `fields` (only leaves do),
        # so its positions, and a sparse overlay's bitmaps for them, are left out.
        major, minor = (int(p) for p in self.storage_version.split("."))
        if (major, minor) >= (2, 1):
            listed = [n for n in listed if not pa.types.is_struct(fields.get(n)["arrow"].type)]
        data_file = DataFile(
            rel,
            [fields.get(n)["id"] for n in listed],
            list(range(len(listed))),
            major,
            minor,
            os.path.getsize(full),
        )
        offsets = coverage[listed[0]] if shape == "dense" else [coverage[n] for n in listed]
        return Op.DataOverlayFile(data_file, offsets)

    # ---- delete

    def delete(self, ds, step):
        if step.get("where") is not None:
            if step.get("offsets"):
                raise WriteRefused("give either `fragment` and `offsets`, or `where`")
            predicate = H["sql"](step["where"])
        else:
            if step.get("fragment") is None:
                raise WriteRefused("give either `fragment` and `offsets`, or `where`")
            fid = int(step["fragment"])
            addrs = ", ".join(str((fid << 32) | int(o)) for o in step.get("offsets") or [])
            if not addrs:
                raise WriteRefused("a delete of no offsets")
            predicate = f"_rowaddr IN ({addrs})"
        before = ds.version
        call(ds.delete, predicate)
        new = call(lance.dataset, ds.uri)
        if new.version == before:
            raise WriteRefused(f"Lance committed nothing for `{predicate}` (no live row matched)")
        return new

    # ---- indices

    @staticmethod
    def index_segment(ds, names, kind, name):
        if len(names) != 1:
            raise WriteUnsupported(f"an index over {len(names)} fields: Lance builds one-column indices")
        fragment_ids = [f.fragment_id for f in ds.get_fragments()]
        if kind == "btree":
            return call(ds.create_index_uncommitted, names[0], "BTREE", name=name,
                        fragment_ids=fragment_ids)
        if kind == "vector":
            return call(ds.create_index_uncommitted, names[0], "IVF_FLAT", name=name, metric="l2",
                        num_partitions=1, fragment_ids=fragment_ids)
        raise WriteUnsupported(f"index kind {kind!r}")

    def build_index(self, ds, step):
        built_from = step.get("built_from")
        source = ds if built_from is None else call(lance.dataset, ds.uri, version=int(built_from))
        index = self.index_segment(source, step["fields"], step["kind"], step["name"])
        op = Op.CreateIndex(new_indices=[index], removed_indices=[])
        return call(lance.LanceDataset.commit, ds.uri, op, read_version=source.version)

    # ---- rows

    def rewrite_rows(self, ds, step):
        """Lance's compaction, planned on exactly `fragments` (every other fragment excluded,
        every deletion materialized), its tasks executed, and their results committed as one
        LanceOperation.Rewrite. Compaction.commit / compact_files would first commit a
        ReserveFragments transaction of their own, a second version for one step; a Rewrite
        whose new fragments carry no ids gets them at its commit instead."""
        from lance.optimize import Compaction

        wanted = [int(f) for f in step["fragments"]]
        ids = [f.fragment_id for f in ds.get_fragments()]
        missing = [f for f in wanted if f not in ids]
        if missing:
            raise WriteRefused(f"no fragments {missing}")
        positions = sorted(ids.index(f) for f in wanted)
        if positions != list(range(positions[0], positions[0] + len(positions))):
            raise WriteRefused(f"fragments {wanted} are not adjacent in the manifest")
        live = sum(call(ds.get_fragment, f).count_rows() for f in wanted)
        per = step.get("rows_per_fragment")
        target = int(per) if per is not None else max(live, 1)
        options = dict(
            target_rows_per_fragment=target,
            excluded_fragment_ids=[f for f in ids if f not in wanted],
            materialize_deletions=True,
            materialize_deletions_threshold=0.0,
            data_storage_version=self.storage_version,
            num_threads=1,
        )
        if per is not None and int(per) < live:
            raise WriteUnsupported(
                f"rows_per_fragment {per} for {live} live rows: Lance 14.0.2's compaction writes each "
                "task's rows into one fragment whatever target_rows_per_fragment says, and takes no "
                "maximum rows per output file (missing API)"
            )
        plan = call(Compaction.plan, ds, options)
        # (CompactionTask.fragments cannot be used: pylance 14.0.2 fails to read back a planned
        # fragment that has overlays, KeyError 'offsets' in FragmentMetadata.from_json; the
        # task's own JSON names the fragments.)
        planned = sorted(f["id"] for t in plan.tasks for f in json.loads(t.json())["task"]["fragments"])
        if planned != sorted(wanted) or len(plan.tasks) != 1:
            raise WriteUnsupported(
                f"Lance's compaction planner makes {len(plan.tasks)} task(s) of fragments {planned}, "
                f"not one of {sorted(wanted)} (it rewrites only fragments it judges in need of "
                "compaction, and compacts a fragment with overlays on its own; missing API: a "
                "compaction of chosen fragments into one)"
            )
        self.compaction = {
            f: {a & 0xFFFFFFFF for a in call(ds.get_fragment(f).to_table, columns=[], with_row_address=True)
                .column("_rowaddr").to_pylist()}
            for f in sorted(wanted, key=ids.index)
        }
        results = [call(t.execute, ds) for t in plan.tasks]
        for r in results:
            for f in r.new_fragments:
                f.id = 0  # assigned at commit, from the dataset's next fragment id
        # (RewriteResult.original_fragments has the same from_json failure on fragments with
        # overlays; the old fragments are the dataset's own metadata, which is what a Rewrite
        # names.)
        tasks = [[f["id"] for f in json.loads(t.json())["task"]["fragments"]] for t in plan.tasks]
        groups = [
            Op.RewriteGroup(
                old_fragments=[call(ds.get_fragment, f).metadata for f in old],
                new_fragments=r.new_fragments,
            )
            for old, r in zip(tasks, results)
        ]
        return self.commit_op(ds, Op.Rewrite(groups=groups, rewritten_indices=[]))

    def update_rows(self, ds, step):
        fid = int(step["fragment"])
        offsets = [int(o) for o in step["offsets"]]
        if len(set(offsets)) != len(offsets):
            raise WriteRefused("an offset is listed twice")
        fields = Fields(ds)
        tops = [f.name for f in ds.schema]
        for name in step.get("set") or {}:
            if name not in tops:
                raise WriteRefused(f"no top-level field {name!r}")
        frag = call(ds.get_fragment, fid)
        if frag is None:
            raise WriteRefused(f"no fragment {fid}")
        table = call(frag.to_table, columns=tops, with_row_address=True, with_row_id=True)
        by_offset = {r["_rowaddr"] & 0xFFFFFFFF: r for r in table.to_pylist()}
        missing = [o for o in offsets if o not in by_offset]
        if missing:
            raise WriteRefused(f"fragment {fid} has no live row at offsets {missing}")
        picked = [by_offset[o] for o in offsets]
        sets = {k: py_value(v) for k, v in (step.get("set") or {}).items()}
        rows = [{n: (sets[n] if n in sets else r[n]) for n in tops} for r in picked]
        new_table = pa.Table.from_pylist(rows, schema=ds.schema)
        written = call(
            lance.fragment.write_fragments, new_table, ds.uri, schema=ds.schema,
            data_storage_version=self.storage_version, max_rows_per_file=max(len(rows), 1),
        )
        if len(written) != 1:
            raise H["Crashed"](f"Lance wrote {len(written)} fragments for one update")
        moved = written[0]
        if stable_row_ids(ds):
            from lance.fragment import RowIdSequence

            moved.row_id_meta = RowIdSequence([r["_rowid"] for r in picked]).to_inline_metadata()
        addrs = ", ".join(str((fid << 32) | o) for o in offsets)
        updated = call(frag.delete, f"_rowaddr IN ({addrs})")
        removed = [] if updated is not None else [fid]
        updated_list = [] if updated is None else [updated]
        modified = [fields.get(n)["id"] for n in sets]
        op = Op.Update(
            removed_fragment_ids=removed,
            updated_fragments=updated_list,
            new_fragments=[moved],
            fields_modified=modified,
            update_mode="rewrite_rows",
        )
        return self.commit_op(ds, op)

    def update(self, ds, step):
        """LanceDataset.update: Lance moves the matched rows to a new fragment itself."""
        sets = step.get("set") or {}
        if not sets:
            raise WriteRefused("an update that sets no field")
        tops = [f.name for f in ds.schema]
        for name in sets:
            if name not in tops:
                raise WriteRefused(f"no top-level field {name!r}")
        predicate = H["sql"](step["where"])
        before = ds.version
        result = call(ds.update, {n: typed_literal(v) for n, v in sets.items()}, where=predicate,
                      data_storage_version=self.storage_version)
        out = call(lance.dataset, ds.uri)
        if out.version == before:
            raise WriteRefused(f"Lance committed nothing for `{predicate}` ({result})")
        return out

    def rewrite_columns(self, ds, step):
        """LanceFragment.update_columns joined on _rowaddr, its matched offsets handed to the
        commit (LanceOperation.Update, rewrite_columns), which stamps those rows only."""
        fid = int(step["fragment"])
        offsets = [int(o) for o in step["offsets"]]
        if len(set(offsets)) != len(offsets):
            raise WriteRefused("an offset is listed twice")
        sets = step.get("set") or {}
        fields = Fields(ds)
        tops = [f.name for f in ds.schema]
        for name in sets:
            if name not in tops or pa.types.is_struct(fields.get(name)["arrow"].type):
                raise WriteRefused(f"{name!r} is not a top-level, non-struct field")
        frag = call(ds.get_fragment, fid)
        if frag is None:
            raise WriteRefused(f"no fragment {fid}")
        live = call(frag.to_table, columns=[], with_row_address=True)
        present = {a & 0xFFFFFFFF for a in live["_rowaddr"].to_pylist()}
        missing = [o for o in offsets if o not in present]
        if missing:
            raise WriteRefused(f"fragment {fid} has no live row at offsets {missing}")
        names = sorted(sets, key=lambda n: fields.get(n)["id"])
        data = {"_rowaddr": pa.array([(fid << 32) | o for o in offsets], pa.uint64())}
        for n in names:
            data[n] = pa.array([py_value(sets[n])] * len(offsets), fields.get(n)["arrow"].type)
        table = pa.table(data)
        meta, modified, matched = call(frag.update_columns, table, left_on="_rowaddr",
                                       with_offsets=True)
        op = Op.Update(
            updated_fragments=[meta],
            fields_modified=modified,
            update_mode="rewrite_columns",
            updated_fragment_offsets={fid: matched},
        )
        return self.commit_op(ds, op)

    def merge_insert(self, ds, step):
        on = step["on"]
        if on not in [f.name for f in ds.schema]:
            raise WriteRefused(f"no top-level field {on!r}")
        source = table_of(ds.schema, step.get("rows") or [])
        before = ds.version
        call(lambda: ds.merge_insert(on).when_matched_update_all()
             .when_not_matched_insert_all().execute(source))
        out = call(lance.dataset, ds.uri)
        if out.version != before + 1:
            raise H["Crashed"](f"merge_insert made {out.version - before} commits")
        return out

    def restore(self, ds, step):
        version = int(step["version"])
        if not 1 <= version < ds.version:
            raise WriteRefused(f"restore {version}: not a version older than {ds.version}")
        before = ds.version
        call(call(lance.dataset, ds.uri, version=version).restore)
        out = call(lance.dataset, ds.uri)
        if out.version != before + 1:
            raise H["Crashed"](f"restore made {out.version - before} commits")
        return out

    # ---- schema and config

    def set_config(self, ds, step):
        updates = {k: v for k, v in (step.get("set") or {}).items()}
        for k in step.get("unset") or []:
            if k in updates:
                raise WriteRefused(f"config key {k!r} is both set and unset")
            updates[k] = None
        if not updates:
            raise WriteRefused("a set_config step that changes nothing")
        return self.commit_op(ds, Op.UpdateConfig(config_updates=Op.UpdateMap(updates)))

    def add_fields(self, ds, step):
        start = max(Fields(ds).by_name[n]["id"] for n in Fields(ds).order) + 1 if ds.schema else 0
        new = pa.schema([arrow_field(f) for f in step["schema"]])
        explicit_ids(step["schema"], start)
        before = ds.version
        fill = step.get("fill") or {}
        if fill:
            # A backfill: Lance's add_columns with one SQL expression per field writes the new
            # columns for every row. Every added field must then be filled, in order: the
            # expressions form one commit, and Lance numbers the fields as they come.
            names = [f.name for f in new]
            if sorted(fill) != sorted(names):
                raise WriteUnsupported(
                    "an add_fields that backfills some of its fields and leaves others NULL: "
                    "Lance's add_columns takes either expressions or Arrow fields in one commit"
                )
            call(ds.add_columns, {n: typed_literal(fill[n]) for n in names})
        else:
            call(ds.add_columns, new)
        out = call(lance.dataset, ds.uri)
        if out.version != before + 1:
            raise H["Crashed"](f"add_columns made {out.version - before} commits")
        return out

    def drop_fields(self, ds, step):
        before = ds.version
        call(ds.drop_columns, list(step["fields"]))
        out = call(lance.dataset, ds.uri)
        if out.version != before + 1:
            raise H["Crashed"](f"drop_columns made {out.version - before} commits")
        return out


# ---------------------------------------------------------------- prepared commits (§7.4)

def prepared_data_file(f):
    """A transaction's data file as Lance's DataFile (the file is already in data/)."""
    return DataFile(
        f["path"], list(f["fields"]), list(f["column_indices"]),
        int(f["file_major_version"]), int(f["file_minor_version"]),
        int(f.get("file_size_bytes", 0)) or None,
    )


def prepared_overlay(o):
    """A transaction's overlay as Lance's DataOverlayFile (the value file is already in data/)."""
    data_file = prepared_data_file(o["file"])
    cov = o["coverage"]
    offsets = cov["dense"] if "dense" in cov else [list(c) for c in cov["sparse"]]
    try:
        return Op.DataOverlayFile(data_file, offsets, o.get("committed_version"))
    except ValueError as e:  # pylance's own argument check (a repeated offset, say)
        raise WriteRefused(f"pylance refused the overlay: {e}") from e


def prepared_operation(ds, transaction):
    """The Lance operation of a prepared commit: DataOverlay; a Merge of every fragment with
    the named fragments' overlay lists replaced; an Append of new fragments; a Delete giving the
    named fragments the kit's deletion files."""
    op = transaction["operation"]
    if op == "append":
        # id 0: Lance assigns the ids of appended fragments, and their row ids and lineage.
        return Op.Append([
            FragmentMetadata(0, [prepared_data_file(f) for f in frag["files"]], int(frag["physical_rows"]))
            for frag in transaction["fragments"]
        ])
    if op == "delete":
        files = {}
        for frag in transaction["fragments"]:
            d = frag["deletion_file"]
            files[int(frag["id"])] = DeletionFile(
                int(d["read_version"]), int(d["id"]), d["file_type"], int(d["num_deleted_rows"]), None)
        updated = []
        for frag in ds.get_fragments():
            meta = frag.metadata
            if meta.id in files:
                meta.deletion_file = files.pop(meta.id)
                updated.append(meta)
        if files:
            raise WriteRefused(f"no fragments {sorted(files)}")
        return Op.Delete(updated, [], "prepared deletion files")
    touched = {int(f["id"]): [prepared_overlay(o) for o in f["overlays"]] for f in transaction["fragments"]}
    if op == "overlay":
        return Op.DataOverlay([Op.DataOverlayGroup(fid, overlays) for fid, overlays in touched.items()])
    if op == "merge":
        fragments = []
        for frag in ds.get_fragments():
            meta = frag.metadata
            if meta.id in touched:
                meta.overlays = touched.pop(meta.id)
            fragments.append(meta)
        if touched:
            raise WriteRefused(f"no fragments {sorted(touched)}")
        return Op.Merge(fragments, ds.schema)
    raise WriteUnsupported(f"prepared operation {op!r}")


def answer(writer, cmd, req):
    """The protocol answer of a writer command: ("result", value), ("error", {...}) or
    ("unsupported", {...})."""
    try:
        return "result", getattr(writer, cmd)(req)
    except WriteRefused as e:
        return "error", {"class": "refused", "message": str(e)}
    except WriteUnsupported as e:
        return "unsupported", {"reason": str(e)}


if __name__ == "__main__":
    print(json.dumps(words((14, 0, 2))))
