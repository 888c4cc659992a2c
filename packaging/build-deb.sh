#!/usr/bin/env bash
# `make deb`: build a real binary .deb with dpkg-buildpackage from a clean
# export of the tracked tree (so local build directories never leak in).
# The package lands in packaging/out/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/cc-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/cc"
# Tracked files, including uncommitted edits, without build trees.
(cd "$root" && git ls-files -z --cached --others --exclude-standard) |
  (cd "$root" && xargs -0 cp --parents -t "$work/cc" 2>/dev/null || true)
(cd "$work/cc" && dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1) || {
  tail -n 40 "$work/build.log" >&2
  echo "make deb: dpkg-buildpackage failed (log above)" >&2
  exit 1
}
mkdir -p "$root/packaging/out"
cp "$work"/cc_*.deb "$root/packaging/out/"
ls "$root"/packaging/out/cc_*.deb
