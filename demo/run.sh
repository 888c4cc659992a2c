#!/usr/bin/env bash
# End-to-end showcase of the real tools. Each demo/NN-<tool>.sh is one scene;
# they run in order with the built binaries first on PATH.
set -uo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$build" && pwd)
for d in "$build"/cmd/cc-*; do PATH="$d:$PATH"; done
export PATH CC_DATA_DIR="$root/share/cc" CC_ROOT="$root"
rc=0
for scene in "$root"/demo/[0-9][0-9]-*.sh; do
  [ -f "$scene" ] || continue
  printf '\n\033[1m== %s ==\033[0m\n' "$(basename "$scene" .sh)"
  bash "$scene" || { echo "scene $(basename "$scene") failed" >&2; rc=1; }
done
exit $rc
