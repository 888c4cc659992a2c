#!/usr/bin/env python3
"""Live cc-classify output validates against its schemas: every row of
cases.tsv in every mode through --jsonl, and hook answers, so the schemas
cannot drift from the code."""
import json
import os
import subprocess
import sys

import jsonschema

root = os.environ["CC_SOURCE_DIR"]
tool = os.path.join(os.environ["CC_BIN_DIR"], "cmd", "cc-classify", "cc-classify")
schemas = os.path.join(os.environ["CC_DATA_DIR"], "schema")
result = jsonschema.Draft202012Validator(json.load(open(os.path.join(schemas, "classify-result.schema.json"))))
request = jsonschema.Draft202012Validator(json.load(open(os.path.join(schemas, "classify-request.schema.json"))))
hook = jsonschema.Draft202012Validator(json.load(open(os.path.join(schemas, "classify-hook-output.schema.json"))))

lines = []
for row in open(os.path.join(root, "tests", "classify", "cases.tsv"), encoding="utf-8"):
    if not row.strip() or row.startswith("#"):
        continue
    cmd = row.rstrip("\n").split("\t", 3)[3].replace("\u21b5", "\n")
    for mode in ("chat", "plan", "review", "orchestrate"):
        lines.append({"cmd": cmd, "mode": mode, "id": len(lines)})
failed = 0
for req in lines[:5]:
    for e in request.iter_errors(req):
        print(f"FAIL request example {req}: {e.message}")
        failed += 1
out = subprocess.run([tool, "--jsonl"], input="\n".join(json.dumps(l) for l in lines) + "\n",
                     capture_output=True, text=True)
answers = [json.loads(l) for l in out.stdout.splitlines()]
if out.returncode != 0 or len(answers) != len(lines):
    print(f"FAIL --jsonl: status {out.returncode}, {len(answers)} answers for {len(lines)} lines")
    failed += 1
for a in answers:
    for e in result.iter_errors(a):
        print(f"FAIL result for id {a.get('id')}: {e.message}")
        failed += 1
        break
spec = os.path.join(schemas, "..", "policy", "default.json")  # any readable file stands in for a SandboxSpec
checked = 0
for proto, extra in (("claude", []), ("claude", ["--emit-ask"]), ("claude", ["--wrap-with", spec]),
                     ("codex", []), ("codex", ["--wrap-with", spec]), ("gemini", []), ("gemini", ["--wrap-with", spec])):
    for cmd in ("git push", "ls", "sudo id", "echo 'x"):
        if proto == "gemini":
            payload = {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command", "tool_input": {"command": cmd}}
        else:
            payload = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": cmd}}
        h = subprocess.run([tool, "--hook", proto] + extra, input=json.dumps(payload), capture_output=True, text=True)
        if h.returncode != 0:
            print(f"FAIL --hook {proto} {extra} for {cmd!r}: status {h.returncode}")
            failed += 1
            continue
        if not h.stdout and proto == "codex" and not extra:
            continue  # codex: an allow is no output
        checked += 1
        for e in hook.iter_errors(json.loads(h.stdout)):
            print(f"FAIL --hook {proto} {extra} output for {cmd!r}: {e.message}")
            failed += 1
if checked < 25:
    print(f"FAIL only {checked} hook answers were checked")
    failed += 1
print(f"{'FAIL' if failed else 'ok  '} {len(answers)} results and {checked} hook answers checked against the schemas")
sys.exit(1 if failed else 0)
