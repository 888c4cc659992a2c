# cc-classify as a process: start-up of one line (target < 3 ms median), --jsonl
# batch throughput (target 100,000 lines/s, answers included), and peak memory
# on a 1 MiB line. Figures taken while other work runs are noisy: the load
# average is printed with them.
# (-i: exit statuses 10 and 11 are answers, not failures.)
set -eu
command -v hyperfine >/dev/null || { echo "hyperfine missing (make deps)"; exit 1; }
root=${CC_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Baselines: /bin/true (dynamically linked, like most programs) and a static
# empty C program (the floor for any process on this machine: fork, exec,
# exit). cc-classify is linked fully static, so the second is its yardstick.
baselines=('true')
if command -v cc >/dev/null && printf 'int main(void){return 0;}\n' > "$tmp/empty.c" &&
   cc -O2 -static -o "$tmp/empty-static" "$tmp/empty.c" 2>/dev/null; then
  baselines+=("$tmp/empty-static")
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
hyperfine -N -i --warmup 30 --runs 500 --export-json "$tmp/h.json" \
  "${baselines[@]}" "cc-classify 'git push origin main'" "cc-classify --mode plan 'ls -la | grep x'" >/dev/null 2>&1
python3 - "$tmp/h.json" "${#baselines[@]}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
res = d["results"]
true = res[0]["median"]
static = res[1]["median"] if int(sys.argv[2]) > 1 else None
for r in res:
    name = "static empty C program" if r["command"].endswith("/empty-static") else r["command"]
    ratio = f"{r['median']/true:.2f}x true" + (f", {r['median']/static:.2f}x static empty" if static else "")
    print(f"{name:<45} median {r['median']*1000:.2f} ms  (min {r['min']*1000:.2f}; {ratio})")
PY
python3 - "$root/tests/classify/cases.tsv" "$tmp/batch.jsonl" <<'PY'
import json, sys
rows = [l.rstrip("\n").split("\t", 3)[3].replace("\u21b5", "\n") for l in open(sys.argv[1], encoding="utf-8")
        if l.strip() and not l.startswith("#")]
with open(sys.argv[2], "w") as f:
    for i in range(100000):
        f.write(json.dumps({"cmd": rows[i % len(rows)]}) + "\n")
PY
for run in 1 2 3 4 5; do
  s=$(date +%s.%N); cc-classify --jsonl < "$tmp/batch.jsonl" > "$tmp/out.jsonl"; e=$(date +%s.%N)
  echo "$s $e"
done | python3 -c '
import sys, statistics
t = [float(e) - float(s) for s, e in (l.split() for l in sys.stdin)]
m = statistics.median(t)
print(f"--jsonl, 100000 lines (cases.tsv repeated): median {m:.2f} s of 5 runs = {100000/m:,.0f} lines/s")'
[ "$(wc -l < "$tmp/out.jsonl")" -eq 100000 ] || echo "WARNING: not every line answered"
python3 - "$tmp/big.jsonl" <<'PY'
import json, sys
line = ""
while len(line) < (1 << 20):
    line += 'echo "chunk $(date +%s)" >> /tmp/out.log && '
open(sys.argv[1], "w").write(json.dumps({"cmd": line + "true"}) + "\n")
PY
echo '{"cmd":"git push"}' > "$tmp/small.jsonl"
small=$( { /usr/bin/time -f %M cc-classify --jsonl < "$tmp/small.jsonl" > /dev/null; } 2>&1 )
big=$( { /usr/bin/time -f %M cc-classify --jsonl < "$tmp/big.jsonl" > /dev/null; } 2>&1 )
s=$(date +%s.%N); cc-classify --jsonl < "$tmp/big.jsonl" > /dev/null; e=$(date +%s.%N)
echo "peak RSS: one short line ${small} KiB; one 1 MiB line (~23,000 sub-commands) ${big} KiB; that line took $(python3 -c "print(f'{($e-$s)*1000:.0f}')") ms"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
