#!/usr/bin/env bash
# cc-pushgate: wall time of pushing a 200 MB pack through the gateway against
# straight to the same upstream (median of RUNS each, alternating, each push
# into a fresh bare repo), and the gateway's peak RSS (VmHWM) while relaying
# packs of 50 MB and 500 MB. Upstream: lighttpd + git http-backend on
# 127.0.0.1 (demo/pushgate-rig.sh). Bounded: 2*RUNS + 2 pushes.
set -euo pipefail
RUNS=${RUNS:-3}
root=${CC_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
. "$root/demo/pushgate-rig.sh"
for t in lighttpd git cc-pushgate python3; do
  command -v "$t" >/dev/null || { echo "skipped: needs $t"; exit 0; }
done
work=$(mktemp -d /var/tmp/cc-bench-pushgate.XXXXXX)
gw=
cleanup() { [ -n "$gw" ] && kill "$gw" 2>/dev/null && wait "$gw" 2>/dev/null; rig_stop; rm -rf "$work"; }
trap cleanup EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 HOME=$work
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY

rig_start "$work/upstream"
echo "$RIG_WRITE_TOKEN" > "$work/token"; chmod 600 "$work/token"
echo '{"version": 1, "rules": [{"action": "push", "decision": "allow"}]}' > "$work/policy.json"
# The verdict depends on the kind: every update of an existing branch gets the ancestry check.
echo '{"version": 1, "rules": [{"action": "push", "kinds": ["force"], "decision": "deny"}, {"action": "push", "decision": "allow"}]}' \
  > "$work/policy-force.json"

# A repo whose one commit holds MB megabytes of incompressible data (50 MB files).
make_repo() {
  local dir=$1 mb=$2 i=0
  git init -q -b main "$dir"
  git -C "$dir" config core.compression 0
  git -C "$dir" config core.bigFileThreshold 1m
  while [ $((i * 50)) -lt "$mb" ]; do
    dd if=/dev/urandom of="$dir/blob$i" bs=1M count=50 status=none
    i=$((i + 1))
  done
  git -C "$dir" add . && git -C "$dir" commit -qm "$mb MB"
}

start_gateway() {  # [policy file]
  cc-pushgate --upstream "$RIG_URL" --repo bench/r --policy "${1:-$work/policy.json}" --token-file "$work/token" \
    --mirror-dir "$work/mirrors" \
    > "$work/events" 2> "$work/gateway.err" &
  gw=$!
  # The ready line, once it is whole (the file may hold part of it).
  gw_url=
  for _ in $(seq 600); do
    gw_url=$(head -n1 "$work/events" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["url"])' 2>/dev/null) && break
    gw_url=
    sleep 0.1
  done
  # (Also called in a subshell, where the EXIT trap does not see $gw: stop it here.)
  [ -n "$gw_url" ] || { echo "cc-pushgate did not start: $(cat "$work/gateway.err")" >&2; kill "$gw"; exit 1; }
}
stop_gateway() { kill "$gw"; wait "$gw" 2>/dev/null || true; gw=; }

push_time() {  # repo url -> seconds
  local t0 t1
  rig_repo "$work/upstream" bench/r
  t0=$(date +%s.%N)
  git -C "$1" push -q "$2" HEAD:refs/heads/main 2>"$work/push.err" || { cat "$work/push.err" >&2; return 1; }
  t1=$(date +%s.%N)
  awk "BEGIN { printf \"%.3f\", $t1 - $t0 }"
}
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
direct_url() { echo "http://x-access-token:$RIG_WRITE_TOKEN@${RIG_URL#http://}/bench/r.git"; }

if [ -z "${ONLY_ANCESTRY:-}" ]; then  # ONLY_ANCESTRY=1: the ancestry-check figures alone
make_repo "$work/r200" 200
start_gateway
# Alternate the two paths and also keep each pair's ratio: on a shared machine
# the load drifts between runs, and a pair sees nearly the same load.
via=() direct=() ratios=()
for _ in $(seq "$RUNS"); do
  v=$(push_time "$work/r200" "${gw_url}github.com/bench/r.git")
  d=$(push_time "$work/r200" "$(direct_url)")
  via+=("$v") direct+=("$d") ratios+=("$(awk "BEGIN { printf \"%.3f\", $v / $d }")")
done
hwm200=$(awk '/VmHWM/ { print $2 }' "/proc/$gw/status")
cpu200=$(awk '{ printf "%.2f s", ($14 + $15) / 100 }' "/proc/$gw/stat")
stop_gateway
m_via=$(median "${via[@]}")
m_direct=$(median "${direct[@]}")
echo "200 MB push, median of $RUNS: via gateway ${m_via} s (runs: ${via[*]}), direct ${m_direct} s (runs: ${direct[*]})"
echo "ratio of medians gateway/direct: $(awk "BEGIN { printf \"%.3f\", $m_via / $m_direct }"); median of per-pair ratios: $(median "${ratios[@]}") (pairs: ${ratios[*]}; target <= 1.15)"
echo "gateway CPU for $RUNS x 200 MB: $cpu200; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "gateway peak RSS relaying 200 MB: $((hwm200 / 1024)) MiB"
rm -rf "$work/r200"

for mb in 50 500; do
  make_repo "$work/r$mb" "$mb"
  start_gateway
  t=$(push_time "$work/r$mb" "${gw_url}github.com/bench/r.git")
  hwm=$(awk '/VmHWM/ { print $2 }' "/proc/$gw/status")
  stop_gateway
  echo "gateway peak RSS relaying $mb MB: $((hwm / 1024)) MiB (VmHWM ${hwm} kB; push took ${t} s; target < 32 MiB, flat)"
  rm -rf "$work/r$mb"
done
fi

# The ancestry check (force told from fast-forward): a 200 MB fast-forward of
# an existing branch straight to the upstream (direct), and through the
# gateway with a policy that needs the check (on) and with one that does not
# (off); interleaved, median of RUNS. Each run starts from a fresh upstream
# repo holding only the base commit. The goal: on/direct at most 1.2.
make_repo "$work/ff" 1
base=$(git -C "$work/ff" rev-parse HEAD)
for i in 0 1 2 3; do dd if=/dev/urandom of="$work/ff/big$i" bs=1M count=50 status=none; done
git -C "$work/ff" add . && git -C "$work/ff" commit -qm "200 MB on top"
update_time() {  # policy file, or "direct" -> seconds
  local t0 t1 url
  rig_repo "$work/upstream" bench/r
  git -C "$work/ff" push -q "$(direct_url)" "$base:refs/heads/main" 2>"$work/push.err" || { cat "$work/push.err" >&2; return 1; }
  if [ "$1" = direct ]; then
    url=$(direct_url)
  else
    start_gateway "$1"
    url="${gw_url}github.com/bench/r.git"
  fi
  t0=$(date +%s.%N)
  git -C "$work/ff" push -q "$url" HEAD:refs/heads/main 2>"$work/push.err" || { cat "$work/push.err" >&2; return 1; }
  t1=$(date +%s.%N)
  if [ "$1" != direct ]; then
    awk '/VmHWM/ { print $2 }' "/proc/$gw/status" >> "$work/hwm-$(basename "$1" .json)"
    # The gateway's CPU and its waited-for children's (index-pack, git), in ticks.
    awk '{ print $14 + $15 + $16 + $17 }' "/proc/$gw/stat" >> "$work/cpu-$(basename "$1" .json)"
    stop_gateway
  fi
  awk "BEGIN { printf \"%.3f\", $t1 - $t0 }"
}
on=() off=() dir=() dratios=() fratios=()
for _ in $(seq "$RUNS"); do
  a=$(update_time "$work/policy-force.json")
  grep -q '"ancestryChecked":true' "$work/events" || { echo "the check did not run" >&2; exit 1; }
  b=$(update_time "$work/policy.json")
  c=$(update_time direct)
  on+=("$a") off+=("$b") dir+=("$c")
  fratios+=("$(awk "BEGIN { printf \"%.3f\", $a / $b }")") dratios+=("$(awk "BEGIN { printf \"%.3f\", $a / $c }")")
done
m_on=$(median "${on[@]}")
m_off=$(median "${off[@]}")
m_dir=$(median "${dir[@]}")
echo "200 MB fast-forward, median of $RUNS interleaved: via gateway with the ancestry check ${m_on} s (runs: ${on[*]}), via gateway without it ${m_off} s (runs: ${off[*]}), direct ${m_dir} s (runs: ${dir[*]})"
echo "ratio check on/direct: $(awk "BEGIN { printf \"%.3f\", $m_on / $m_dir }") (goal <= 1.2); median of per-round ratios: $(median "${dratios[@]}") (rounds: ${dratios[*]})"
echo "ratio check on/off: $(awk "BEGIN { printf \"%.3f\", $m_on / $m_off }"); median of per-round ratios: $(median "${fratios[@]}") (rounds: ${fratios[*]})"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
tick=$(getconf CLK_TCK)
echo "gateway CPU (with its children) per 200 MB fast-forward, median: check on $(median $(cat "$work/cpu-policy-force") | awk -v t="$tick" '{ printf "%.2f", $1 / t }') s, off $(median $(cat "$work/cpu-policy") | awk -v t="$tick" '{ printf "%.2f", $1 / t }') s"
echo "gateway peak RSS (VmHWM) for the 200 MB fast-forward: check on $(sort -n "$work/hwm-policy-force" | tail -n1) kB, off $(sort -n "$work/hwm-policy" | tail -n1) kB (highest of the runs)"
echo "mirror disk after the runs: $(du -sk "$work/mirrors" | cut -f1) kB (old tips only; quarantines removed)"
