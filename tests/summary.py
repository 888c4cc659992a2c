#!/usr/bin/env python3
"""Add up the test cases of every test binary into the closing line.

Each Catch2 binary writes "passed failed skipped" to CC_TEST_SUMMARY_DIR/<id>.
A registered test that wrote no summary (a crash, a script test) counts as one
test case, passed or failed by meson's verdict in testlog.json.
Prints `N passed, N failed, N skipped` alone on the last line.
"""
import json
import os
import sys

build = sys.argv[1]
summary_dir = os.path.join(build, "test-summary")
passed = failed = skipped = 0
seen = set()
log = os.path.join(build, "meson-logs", "testlog.json")
results = []
skip_lines = []
if os.path.exists(log):
    with open(log) as f:
        for line in f:
            line = line.strip()
            if line:
                results.append(json.loads(line))
for r in results:
    tid = r.get("env", {}).get("CC_TEST_ID") or r["name"]
    path = os.path.join(summary_dir, tid)
    verdict = r.get("result")
    if os.path.exists(path) and tid not in seen:
        seen.add(tid)
        p, fl, s = (int(x) for x in open(path).read().split())
        passed += p
        skipped += s
        failed += fl
        # The binary ran but exited non-zero without a failed case (crash at exit, sanitizer report).
        if verdict not in ("OK", "EXPECTEDFAIL") and fl == 0:
            failed += 1
    elif verdict in ("OK", "EXPECTEDFAIL"):
        passed += 1
    elif verdict == "SKIP":
        skipped += 1
        why = (r.get("stdout") or "").strip().splitlines()
        skip_lines.append(f"{r['name']}: {why[-1] if why else 'skipped'}")
    else:
        failed += 1
        print(f"failed without a summary: {r['name']} ({verdict})", file=sys.stderr)
# Every skip with its reason, so a skipped tier is never silent.
if os.path.isdir(summary_dir):
    for name in sorted(os.listdir(summary_dir)):
        if name.endswith(".skips"):
            for line in open(os.path.join(summary_dir, name)):
                skip_lines.append(f"{name[:-6]}: {line.strip()}")
for line in skip_lines:
    print("skipped " + line)
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or not results else 0)
