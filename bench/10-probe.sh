# Whole-process start-up cost of cc-probe (no --diagnose: it spawns nothing),
# against `true` as the floor. Median of hyperfine runs.
set -eu
command -v hyperfine >/dev/null || { echo "hyperfine missing (make deps)"; exit 1; }
out=$(mktemp)
hyperfine -N --warmup 20 --runs 300 --export-json "$out" \
  'true' "cc-probe --json" "cc-probe" >/dev/null 2>&1
python3 - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    print(f"{r['command']:<20} median {r['median']*1000:.2f} ms  (min {r['min']*1000:.2f}, max {r['max']*1000:.2f})")
PY
n=$(strace -f -qq -e trace=clone,clone3,fork,vfork cc-probe --json 2>&1 >/dev/null | grep -cE 'clone|fork' || true)
echo "child processes started by 'cc-probe --json': $n"
rm -f "$out"
