#!/usr/bin/env bash
# cc-egress terminating TLS (--intercept) against the same host through a
# plain CONNECT tunnel, on 127.0.0.1: a Node HTTPS origin (its own test CA,
# trusted with --upstream-ca), curl as the client. Figures, median of 5:
#  1. 2,000 short requests (1 KiB answers) on one kept-alive connection;
#  2. a 256 MiB download;
#  3. a fresh connection's first request (20 runs): the time the second TLS
#     handshake and the minted certificate add;
#  4. the proxy's memory for 200 kept-alive intercepted connections, idle
#     between requests.
set -uo pipefail
source "$(dirname "$0")/common.sh"
bench_needs 35-intercept node openssl curl python3
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/ca.key" -out "$dir/ca.pem" \
  -days 2 -subj "/CN=bench CA" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/o.key" -out "$dir/o.csr" -subj "/CN=o" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > "$dir/ext"
openssl x509 -req -in "$dir/o.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -out "$dir/o.pem" \
  -days 2 -extfile "$dir/ext" 2>/dev/null
node "$root/bench/origin.js" "$dir/o.key" "$dir/o.pem" > "$dir/port" & pids+=($!)
for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
port=$(cat "$dir/port")

# Not in a subshell: the PIDs must reach the clean-up.
start_egress() {  # $1: name; rest: extra options
  local n=$1; shift
  mkfifo "$dir/$n.in"
  sleep 3600 > "$dir/$n.in" & pids+=($!)
  "$egress" --no-baseline --allow "127.0.0.1:*" --exit-with-stdin "$@" < "$dir/$n.in" > "$dir/$n.out" 2>"$dir/$n.err" & pids+=($!)
  for _ in $(seq 100); do [ -s "$dir/$n.out" ] && break; sleep 0.05; done
}
proxy_of() { head -n1 "$dir/$1.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["http"])'; }
start_egress plain
start_egress icpt --intercept 127.0.0.1 --upstream-ca "$dir/ca.pem" --ca-cert-out "$dir/session-ca.pem"
plain=$(proxy_of plain) && icpt=$(proxy_of icpt) || { cat "$dir"/*.err; echo "35-intercept: cc-egress did not start"; exit 1; }
url="https://127.0.0.1:$port"
# curl with one connection for every URL it is given.
urls=()
for _ in $(seq 2000); do urls+=("$url/small"); done
run_short() {  # $1: proxy, $2: CA file -> seconds
  /usr/bin/time -f %e curl -s -o /dev/null -x "http://$1" --cacert "$2" "${urls[@]}" 2>&1 >/dev/null | tail -1
}
run_big() { curl -s -o /dev/null -x "http://$1" --cacert "$2" -w '%{speed_download}\n' "$url/big"; }
run_first() { curl -s -o /dev/null -x "http://$1" --cacert "$2" -w '%{time_total}\n' "$url/small"; }
: > "$dir/s"; : > "$dir/b"; : > "$dir/f"
for _ in 1 2 3 4 5; do
  echo "plain $(run_short "$plain" "$dir/ca.pem")" >> "$dir/s"
  echo "icpt $(run_short "$icpt" "$dir/session-ca.pem")" >> "$dir/s"
  echo "plain $(run_big "$plain" "$dir/ca.pem")" >> "$dir/b"
  echo "icpt $(run_big "$icpt" "$dir/session-ca.pem")" >> "$dir/b"
done
for _ in $(seq 20); do
  echo "plain $(run_first "$plain" "$dir/ca.pem")" >> "$dir/f"
  echo "icpt $(run_first "$icpt" "$dir/session-ca.pem")" >> "$dir/f"
done
pick() { awk -v k="$1" '$1==k {print $2}' "$2" | median; }
sp=$(pick plain "$dir/s"); si=$(pick icpt "$dir/s")
bp=$(pick plain "$dir/b"); bi=$(pick icpt "$dir/b")
fp=$(pick plain "$dir/f"); fi_=$(pick icpt "$dir/f")
printf 'intercepted vs plain CONNECT, 2,000 short requests on one connection (median of 5): %.0f vs %.0f req/s: ratio %.2f\n' \
  "$(echo "2000/$si" | bc -l)" "$(echo "2000/$sp" | bc -l)" "$(echo "$sp/$si" | bc -l)"
printf 'intercepted vs plain CONNECT, 256 MiB download (median of 5): %.0f vs %.0f MB/s: ratio %.2f\n' \
  "$(echo "$bi/1000000" | bc -l)" "$(echo "$bp/1000000" | bc -l)" "$(echo "$bi/$bp" | bc -l)"
printf 'a fresh connection'"'"'s first request (median of 20): intercepted %.1f ms, plain CONNECT %.1f ms: %.1f ms added\n' \
  "$(echo "$fi_*1000" | bc -l)" "$(echo "$fp*1000" | bc -l)" "$(echo "($fi_-$fp)*1000" | bc -l)"

# 4. Idle intercepted connections: each has had one request and waits for
# its next; the proxy's RSS before and with all 200 open.
ipid=$(head -n1 "$dir/icpt.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
r0=$(awk '/VmRSS/ {print $2}' "/proc/$ipid/status")
python3 - "${icpt##*:}" "$port" "$dir/session-ca.pem" > "$dir/idle" <<'PY' & pids+=($!)
import socket, ssl, sys, time
proxy, port, ca = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
held = []
for _ in range(200):
    s = socket.create_connection(("127.0.0.1", proxy))
    s.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    if b" 200 " not in s.recv(200):
        sys.exit("CONNECT refused")
    t = ctx.wrap_socket(s, server_hostname="127.0.0.1")
    t.sendall(f"GET /small HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    got = b""
    while b"\r\n\r\n" not in got:
        got += t.recv(65536)
    held.append(t)
print("open", flush=True)
time.sleep(30)
PY
for _ in $(seq 300); do grep -q open "$dir/idle" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
r1=$(awk '/VmRSS/ {print $2}' "/proc/$ipid/status")
printf '200 kept-alive intercepted connections, idle between requests: RSS %s KiB -> %s KiB: %.0f KiB each\n' \
  "$r0" "$r1" "$(echo "($r1-$r0)/200" | bc -l)"
