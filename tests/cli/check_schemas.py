#!/usr/bin/env python3
"""Every schema in share/cc/schema is a valid draft 2020-12 schema and
validates each of its own examples. Also checks that the live output of
cc-probe --json validates against probe.schema.json, so the schema cannot
drift from the code."""
import glob
import json
import os
import subprocess
import sys

import jsonschema

share = os.environ["CC_DATA_DIR"]
failed = 0
schemas = sorted(glob.glob(os.path.join(share, "schema", "*.schema.json")))
if not schemas:
    print("no schemas found", file=sys.stderr)
    sys.exit(1)
by_name = {}
for path in schemas:
    name = os.path.basename(path)
    with open(path) as f:
        schema = json.load(f)
    by_name[name] = schema
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        print(f"FAIL {name}: not a valid schema: {e.message}")
        failed += 1
        continue
    examples = schema.get("examples", [])
    if not examples:
        print(f"FAIL {name}: has no examples")
        failed += 1
    v = jsonschema.Draft202012Validator(schema)
    for i, ex in enumerate(examples):
        errs = list(v.iter_errors(ex))
        if errs:
            print(f"FAIL {name}: examples[{i}]: {errs[0].message}")
            failed += 1
    print(f"ok   {name} ({len(examples)} examples)")

bin_dir = os.environ["CC_BIN_DIR"]
probe = os.path.join(bin_dir, "cmd", "cc-probe", "cc-probe")
if "probe.schema.json" in by_name and os.path.exists(probe):
    for args in (["--json"], ["--json", "--diagnose"], ["--json", "--backend", "docker"]):
        out = subprocess.run([probe] + args, capture_output=True, text=True).stdout
        errs = list(jsonschema.Draft202012Validator(by_name["probe.schema.json"]).iter_errors(json.loads(out)))
        if errs:
            print(f"FAIL cc-probe {' '.join(args)} output: {errs[0].message}")
            failed += 1
        else:
            print(f"ok   cc-probe {' '.join(args)} output matches probe.schema.json")
# The example session's files validate against the schemas of what they are.
for example, schema_name in (("spec.json", "sandbox-spec.schema.json"), ("policy.json", "policy.schema.json")):
    path = os.path.join(share, "examples", example)
    errs = list(jsonschema.Draft202012Validator(by_name[schema_name]).iter_errors(json.load(open(path))))
    if errs:
        print(f"FAIL examples/{example}: {errs[0].message}")
        failed += 1
    else:
        print(f"ok   examples/{example} matches {schema_name}")
sys.exit(1 if failed else 0)
