#!/usr/bin/env python3
"""Validate every JSON line on stdin against a schema in share/cc/schema.

Usage: check_schema.py SCHEMA_FILE < lines. Exit 0 when all lines validate,
1 with the first error on stderr otherwise, 77 when jsonschema is missing.
"""
import json
import sys

try:
    from jsonschema import Draft202012Validator
except ImportError:
    print("python3-jsonschema is not installed", file=sys.stderr)
    sys.exit(77)

schema = json.load(open(sys.argv[1]))
validator = Draft202012Validator(schema)
count = 0
for line in sys.stdin:
    if not line.strip():
        continue
    errors = sorted(validator.iter_errors(json.loads(line)), key=str)
    if errors:
        print(f"line {count + 1}: {errors[0].message}", file=sys.stderr)
        sys.exit(1)
    count += 1
sys.exit(0 if count else 1)
