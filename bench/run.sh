#!/usr/bin/env bash
# `make bench`: Google Benchmark micro-benchmarks, then each whole-process
# benchmark script bench/NN-*.sh. Figures go to stdout and bench/results/.
set -uo pipefail
build=$(cd "${1:-build-bench}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
for d in "$build"/cmd/cc-*; do PATH="$d:$PATH"; done
export PATH CC_DATA_DIR="$root/share/cc" CC_ROOT="$root" CC_BUILD="$build"
mkdir -p "$root/bench/results"
for b in "$build"/bench/bench_*; do
  [ -x "$b" ] && [ -f "$b" ] || continue
  echo "== $(basename "$b")"
  "$b" --benchmark_min_time=0.2 | tee "$root/bench/results/$(basename "$b").txt"
done
for s in "$root"/bench/[0-9][0-9]-*.sh; do
  [ -f "$s" ] || continue
  echo "== $(basename "$s")"
  bash "$s" | tee "$root/bench/results/$(basename "$s" .sh).txt"
done
