#!/usr/bin/env bash
# cc-egress whole-process figures, side by side with tinyproxy (HTTP) and
# microsocks (SOCKS5), all on 127.0.0.1 against lighttpd serving a sparse
# 1 GiB file. Bounded: 3 runs per transfer path, 2,000 short requests per
# path with 1, 4 and 16 concurrent clients (BENCH_CLIENTS), 1,000 tunnels.
# Prints medians and ratios.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${CC_BUILD:-$root/build-bench}
load=$build/bench/egress_load
egress=$(command -v cc-egress || echo "$build/cmd/cc-egress/cc-egress")
export CC_DATA_DIR=${CC_DATA_DIR:-$root/share/cc}
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
for p in lighttpd tinyproxy microsocks curl python3; do
  command -v "$p" >/dev/null || { echo "30-egress: $p not installed; skipped"; exit 0; }
done
[ -x "$load" ] || { echo "30-egress: $load not built; skipped"; exit 0; }

dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

mkdir -p "$dir/www"
truncate -s 1G "$dir/www/big"
head -c 1024 /dev/zero > "$dir/www/small"
web=$(free_port)
cat > "$dir/lighttpd.conf" <<CONF
server.document-root = "$dir/www"
server.bind = "127.0.0.1"
server.port = $web
server.errorlog = "$dir/lighttpd.err"
server.max-connections = 4096
server.max-fds = 16384
server.max-keep-alive-requests = 1000
mimetype.assign = ("" => "application/octet-stream")
CONF
lighttpd -D -f "$dir/lighttpd.conf" & pids+=($!)
wait_port "$web" || { echo "30-egress: lighttpd did not start"; exit 1; }

"$egress" --no-baseline --allow "127.0.0.1:*" > "$dir/egress.out" 2> "$dir/egress.err" & eg=$!; pids+=($eg)
for _ in $(seq 100); do [ -s "$dir/egress.out" ] && break; sleep 0.05; done
ready=$(head -n 1 "$dir/egress.out")
eh=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["http"].split(":")[1])' "$ready")
es=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["socks"].split(":")[1])' "$ready")
sleep 0.3
idle_rss=$(rss "$eg")

tp=$(free_port)
printf 'Port %s\nListen 127.0.0.1\nTimeout 600\nMaxClients 2048\nAllow 127.0.0.1\nLogLevel Critical\nDisableViaHeader Yes\nConnectPort %s\n' "$tp" "$web" > "$dir/tinyproxy.conf"
tinyproxy -d -c "$dir/tinyproxy.conf" > /dev/null 2>&1 & tpid=$!; pids+=($tpid)
ms=$(free_port)
microsocks -i 127.0.0.1 -p "$ms" > /dev/null 2>&1 & mpid=$!; pids+=($mpid)
# The floor any user-space relay pays for the second TCP hop on this host:
# bench/splice_ceiling.cpp, blocking splice(2), no policy, no event loop.
ceiling=$build/bench/splice_ceiling
sc=""
if [ -x "$ceiling" ]; then
  "$ceiling" > "$dir/ceiling.out" & scpid=$!; pids+=($scpid)
  for _ in $(seq 100); do [ -s "$dir/ceiling.out" ] && break; sleep 0.05; done
  sc=$(head -n 1 "$dir/ceiling.out")
  # The same with no user space in the path (BPF sockmap redirect; root only).
  "$ceiling" --sockmap > "$dir/sockmap.out" 2> "$dir/sockmap.err" & smpid=$!; pids+=($smpid)
  for _ in $(seq 100); do [ -s "$dir/sockmap.out" ] || [ -s "$dir/sockmap.err" ] && break; sleep 0.05; done
  sm=$(head -n 1 "$dir/sockmap.out")
fi
wait_port "$tp" && wait_port "$ms" || { echo "30-egress: a peer proxy did not start"; exit 1; }

url="http://127.0.0.1:$web/big"
hz=$(getconf CLK_TCK)
declare -A speed cpu
transfer() {  # name pid curl-args...
  local name=$1 pid=$2; shift 2
  local runs=() c0 c1
  c0=$([ "$pid" = - ] && echo 0 || cpu_ticks "$pid")
  for _ in 1 2 3; do
    runs+=("$(curl -s -o /dev/null -w '%{speed_download}' "$@" "$url")")
  done
  c1=$([ "$pid" = - ] && echo 0 || cpu_ticks "$pid")
  speed[$name]=$(printf '%s\n' "${runs[@]}" | median | awk '{printf "%.0f", $1/1048576}')
  cpu[$name]=$(awk -v t=$((c1 - c0)) -v hz="$hz" 'BEGIN {printf "%.2f", t/hz/3}')
}
echo "cc-egress: $(head -n 1 "$dir/egress.out" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j.get("threads", 1), "event loop(s)")'); $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
# BENCH_SHORT_ONLY=1: only the short-request figures (no 1 GiB transfers, no
# tunnel memory), for comparing two builds quickly.
if [ "${BENCH_SHORT_ONLY:-0}" != 1 ]; then
echo "1 GiB transfers (median of 3, MiB/s; proxy CPU seconds per GiB):"
transfer direct - 
transfer egress-connect "$eg" -p -x "http://127.0.0.1:$eh"
transfer egress-socks5 "$eg" --socks5-hostname "127.0.0.1:$es"
transfer egress-absolute "$eg" -x "http://127.0.0.1:$eh"
transfer tinyproxy-connect "$tpid" -p -x "http://127.0.0.1:$tp"
transfer tinyproxy-absolute "$tpid" -x "http://127.0.0.1:$tp"
transfer microsocks-socks5 "$mpid" --socks5-hostname "127.0.0.1:$ms"
paths=(direct egress-connect egress-socks5 egress-absolute tinyproxy-connect tinyproxy-absolute microsocks-socks5)
if [ -n "$sc" ]; then transfer splice-ceiling "$scpid" -p -x "http://$sc"; paths+=(splice-ceiling); fi
if [ -n "${sm:-}" ]; then transfer sockmap-ceiling "$smpid" -p -x "http://$sm"; paths+=(sockmap-ceiling); fi
for k in "${paths[@]}"; do
  printf '  %-20s %7s MiB/s  %5sx direct  cpu %s s/GiB\n' "$k" "${speed[$k]}" \
    "$(awk -v a="${speed[$k]}" -v b="${speed[direct]}" 'BEGIN {printf "%.2f", a/b}')" "${cpu[$k]}"
done
printf '  ratios: egress CONNECT / tinyproxy CONNECT %.2fx; egress SOCKS5 / microsocks %.2fx\n' \
  "$(awk -v a="${speed[egress-connect]}" -v b="${speed[tinyproxy-connect]}" 'BEGIN {print a/b}')" \
  "$(awk -v a="${speed[egress-socks5]}" -v b="${speed[microsocks-socks5]}" 'BEGIN {print a/b}')"
[ -n "$sc" ] && printf '  egress CONNECT / splice ceiling (bare splice relay, the cost of the hop itself) %.2fx\n' \
  "$(awk -v a="${speed[egress-connect]}" -v b="${speed[splice-ceiling]}" 'BEGIN {print a/b}')"
[ -n "$sc" ] && [ -z "${sm:-}" ] && echo "  sockmap ceiling (in-kernel redirect, no user space in the path): skipped: $(head -c 200 "$dir/sockmap.err")"
fi

declare -A rate cpureq runs_of ticks
one_run() {  # name mode port pid clients
  local c0 c1 r
  c0=$([ "$4" = - ] && echo 0 || cpu_ticks "$4")
  r=$("$load" rate "$2" "$3" "$web" /small 2000 "$5" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["perSecond"] if j["errors"]==0 else 0)')
  c1=$([ "$4" = - ] && echo 0 || cpu_ticks "$4")
  runs_of[$1]="${runs_of[$1]:-} $r"
  ticks[$1]=$(( ${ticks[$1]:-0} + c1 - c0 ))
}
report() {
  rate[$1]=$(printf '%s\n' ${runs_of[$1]} | median)
  cpureq[$1]=$(awk -v t="${ticks[$1]}" -v hz="$hz" -v n=$((2000 * runs)) 'BEGIN {printf "%.0f", t/hz/n*1e6}')
  printf '  %-22s %8.0f req/s   proxy cpu %4s us/req   (runs:%s)\n' "$1" "${rate[$1]}" "${cpureq[$1]}" "${runs_of[$1]}"
}
# BENCH_CLIENTS: the concurrent clients of each short-request run (default: 1, 4, then 16).
# BENCH_RUNS: runs per path (default 5; this machine's noise made 3 too few).
runs=${BENCH_RUNS:-5}
for clients in ${BENCH_CLIENTS:-1 4 16}; do
  echo "short requests (1 KiB, new connection each, 2,000 per path, $clients client(s); median of $runs runs,"
  echo "                each cc-egress run followed by its peer's so both see the same load; proxy CPU"
  echo "                from /proc utime+stime over all $((2000 * runs)) requests, the steadier figure):"
  echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  for _ in $(seq "$runs"); do one_run "direct/$clients" direct 0 - "$clients"; done
  report "direct/$clients"
  for pair in "egress-absolute http $eh $eg tinyproxy-absolute $tp $tpid" \
              "egress-connect connect $eh $eg tinyproxy-connect $tp $tpid" \
              "egress-socks5 socks $es $eg microsocks-socks5 $ms $mpid"; do
    set -- $pair
    for _ in $(seq "$runs"); do one_run "$1/$clients" "$2" "$3" "$4" "$clients"; one_run "$5/$clients" "$2" "$6" "$7" "$clients"; done
    report "$1/$clients"; report "$5/$clients"
  done
  echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '  ratios (req/s, %s client(s)): egress / tinyproxy absolute-form %.2fx; CONNECT %.2fx; egress SOCKS5 / microsocks %.2fx\n' \
    "$clients" \
    "$(awk -v a="${rate[egress-absolute/$clients]}" -v b="${rate[tinyproxy-absolute/$clients]}" 'BEGIN {print a/b}')" \
    "$(awk -v a="${rate[egress-connect/$clients]}" -v b="${rate[tinyproxy-connect/$clients]}" 'BEGIN {print a/b}')" \
    "$(awk -v a="${rate[egress-socks5/$clients]}" -v b="${rate[microsocks-socks5/$clients]}" 'BEGIN {print a/b}')"
  printf '  proxy CPU per request (lower is better, %s client(s)): egress / tinyproxy absolute-form %.2fx; CONNECT %.2fx; egress SOCKS5 / microsocks %.2fx\n' \
    "$clients" \
    "$(awk -v a="${cpureq[egress-absolute/$clients]}" -v b="${cpureq[tinyproxy-absolute/$clients]}" 'BEGIN {print a/b}')" \
    "$(awk -v a="${cpureq[egress-connect/$clients]}" -v b="${cpureq[tinyproxy-connect/$clients]}" 'BEGIN {print a/b}')" \
    "$(awk -v a="${cpureq[egress-socks5/$clients]}" -v b="${cpureq[microsocks-socks5/$clients]}" 'BEGIN {print a/b}')"
done

[ "${BENCH_SHORT_ONLY:-0}" = 1 ] && exit 0
echo "memory:"
printf '  cc-egress idle RSS: %s KiB\n' "$idle_rss"
for mode in connect socks; do
  port=$([ $mode = connect ] && echo "$eh" || echo "$es")
  printf '  1,000 %s tunnels: %s\n' "$mode" "$("$load" tunnels "$mode" "$port" "$web" /small 1000 "$eg")"
done
printf '  cc-egress RSS after the run: %s KiB\n' "$(rss "$eg")"
kill -TERM "$eg"; wait "$eg"; echo "  cc-egress exit on SIGTERM: $?"
