#!/usr/bin/env python3
"""JSON leaves the tools only through cc::json::write (lib/cc/core/json_writer):
nlohmann's dump(), its operator<< and to_string() throw on bytes that are not
UTF-8, and the tools write bytes an adversary chose. Fails naming each call
found anywhere else in the product's sources (lib, cmd, fuzz, bench); tests
are left out, they write their own fixtures."""
import os
import re
import sys

root = os.environ.get("CC_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
allowed = {os.path.join("lib", "cc", "core", "json_writer.cpp")}
pattern = re.compile(r"\.dump\s*\(|->dump\s*\(|nlohmann::to_string\s*\(|\bjson::to_string\s*\(")
found = 0
files = 0
for top in ("lib", "cmd", "fuzz", "bench"):
    for dirpath, _, names in os.walk(os.path.join(root, top)):
        for name in names:
            if not name.endswith((".cpp", ".hpp", ".h", ".c")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            files += 1
            if rel in allowed:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    code = line.split("//", 1)[0]
                    if pattern.search(code):
                        print(f"FAIL {rel}:{n}: JSON written without cc::json::write: {line.strip()}")
                        found += 1
if files == 0:
    print("no sources found under", root)
    sys.exit(1)
print(f"{'ok  ' if found == 0 else 'FAIL'} {files} source files, {found} direct dump() call(s)")
sys.exit(1 if found else 0)
