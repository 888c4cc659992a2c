#!/usr/bin/env bash
# make lint: clang-tidy with the repository's .clang-tidy over every source
# file the build directory compiles (lib, cmd, tests, fuzz; bench too in a
# -Dbench=true build), through its compile_commands.json. A finding is an
# error (WarningsAsErrors), so the run ends non-zero and names the file.
#
#   scripts/lint.sh [BUILD] [REGEX]   REGEX narrows the files (a path regex)
#
# It parses every translation unit again: minutes on two cores. It is not
# part of make test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
filter=${2:-}
jobs=${LINT_JOBS:-$(nproc)}
command -v run-clang-tidy >/dev/null || { echo "make lint: run-clang-tidy not found (Debian package clang-tidy)" >&2; exit 1; }
[ -f "$build/compile_commands.json" ] || { echo "make lint: no $build/compile_commands.json (run make build first)" >&2; exit 1; }
# The generated classify data (build/lib/...) is excluded: it is one large
# string table, not code anyone writes.
files="^$root/(lib|cmd|tests|fuzz|bench)/.*\\.cpp\$"
[ -n "$filter" ] && files="^$root/.*($filter)"
# run-clang-tidy prints each invocation before its output; keep the findings.
run-clang-tidy -p "$build" -quiet -j "$jobs" "$files" 2>&1 |
  { grep -vE '^(/usr/bin/)?clang-tidy(-[0-9]+)? |^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' || true; }
