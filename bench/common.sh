# Sourced by the whole-process bench scripts: where the tools are (on PATH,
# else the bench build), the proxy variables unset, a scratch directory and
# the clean-up of what a script starts (append each PID to `pids`).
#   bench_needs NAME PROGRAM...   skips the script (exit 0) when one is missing
root=$(cd "$(dirname "${BASH_SOURCE[1]}")/.." && pwd)
build=${CC_BUILD:-$root/build-bench}
egress=$(command -v cc-egress || echo "$build/cmd/cc-egress/cc-egress")
wrap=$(command -v cc-wrap || echo "$build/cmd/cc-wrap/cc-wrap")
export CC_DATA_DIR=${CC_DATA_DIR:-$root/share/cc}
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
bench_needs() {
  local name=$1 p
  shift
  for p in "$@"; do
    command -v "$p" >/dev/null || { echo "$name: $p not installed; skipped"; exit 0; }
  done
}
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
