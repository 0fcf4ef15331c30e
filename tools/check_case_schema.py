#!/usr/bin/env python3
"""Validates every conformance-cases/*/*/case.toml, read as JSON, against
spec/schemas/case.schema.json, the published schema of the case format.

The Rust tests check that the schema and the case parser know the same names; this checks the
whole structure (required keys, types, patterns, additionalProperties), which needs a full JSON
Schema validator (the `jsonschema` package). Exit status 1 names every case that fails.
"""
import glob
import json
import os
import sys
import tomllib

import jsonschema

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
with open(os.path.join(root, "spec/schemas/case.schema.json")) as f:
    schema = json.load(f)
validator = jsonschema.validators.validator_for(schema)(schema)
validator.check_schema(schema)
failed = 0
paths = sorted(glob.glob(os.path.join(root, "conformance-cases/*/*/case.toml")))
for path in paths:
    with open(path, "rb") as f:
        case = tomllib.load(f)
    errors = sorted(validator.iter_errors(case), key=lambda e: list(e.absolute_path))
    for e in errors[:3]:
        where = "/".join(str(p) for p in e.absolute_path) or "(top)"
        print(f"{os.path.relpath(path, root)}: {where}: {e.message}", file=sys.stderr)
    failed += bool(errors)
print(f"check_case_schema: {len(paths) - failed} of {len(paths)} case files valid")
sys.exit(1 if failed else 0)
