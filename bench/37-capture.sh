#!/usr/bin/env bash
# cc-wrap --capture against the proxy path, through the same cc-egress and
# the same sandbox: a Node HTTP origin on 127.0.0.1, clients inside one
# cc-wrap run. Captured: the client connects to the origin's address as if
# there were no proxy; proxy: the same client sends CONNECT to 127.0.0.1:3128
# first. Rounds alternate between the two paths. Figures, median of 5:
#  1. connection set-up: 200 fresh connections, each one 1 KiB request
#     (Python sockets, so both paths have the same client);
#  2. a 256 MiB download with curl (--noproxy '*' against -p -x).
set -uo pipefail
source "$(dirname "$0")/common.sh"
bench_needs 37-capture node curl python3 bwrap
chmod 755 "$dir"

ORIGIN_CLOSE=1 node "$root/bench/origin.js" > "$dir/port" & pids+=($!)
for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
port=$(cat "$dir/port")

mkfifo "$dir/eg.in"
sleep 3600 > "$dir/eg.in" & pids+=($!)
"$egress" --no-baseline --allow "127.0.0.1:$port" --fd-inbox "$dir/inbox.sock" --exit-with-stdin --quiet \
  < "$dir/eg.in" > "$dir/eg.out" 2>"$dir/eg.err" & pids+=($!)
for _ in $(seq 100); do [ -s "$dir/eg.out" ] && break; sleep 0.05; done
head -n1 "$dir/eg.out" > "$dir/ready.json"
chmod 644 "$dir/ready.json"
printf '{"sessionId":"bench","workspaceId":"bench","egressAllowlist":["127.0.0.1:%s"]}\n' "$port" > "$dir/spec.json"
chmod 644 "$dir/spec.json"

cat > "$dir/client.py" <<'PY'
import socket, statistics, subprocess, sys, time
port = int(sys.argv[1])
def one(proxied):
    if proxied:
        s = socket.create_connection(("127.0.0.1", 3128))
        s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (port, port))
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(4096)
    else:
        s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /small HTTP/1.1\r\nHost: o\r\n\r\n")
    got = 0
    while True:
        d = s.recv(65536)
        if not d:
            break
        got += len(d)
    s.close()
    assert got > 1024
def setup(proxied, n=200):
    t = time.perf_counter()
    for _ in range(n):
        one(proxied)
    return (time.perf_counter() - t) / n * 1000
def bulk(proxied):
    args = ["curl", "-sS", "-o", "/dev/null", "-w", "%{speed_download}"]
    args += ["-p", "-x", "http://127.0.0.1:3128"] if proxied else ["--noproxy", "*"]
    out = subprocess.run(args + ["http://127.0.0.1:%d/big" % port], capture_output=True, text=True, check=True).stdout
    return float(out) / 1e6
for what, f in (("setup_ms", setup), ("bulk_MBps", bulk)):
    cap, prox = [], []
    f(False), f(True)  # warm-up
    for _ in range(5):
        cap.append(f(False))
        prox.append(f(True))
    c, p = statistics.median(cap), statistics.median(prox)
    print("%s captured %.3f proxy %.3f ratio %.2f" % (what, c, p, c / p))
PY
echo "cc-wrap --capture against the proxy path (same cc-egress, same sandbox; median of 5, rounds interleaved)"
"$wrap" --spec "$dir/spec.json" --egress "$dir/ready.json" --capture 2>"$dir/wrap.err" -- \
  python3 -c "$(cat "$dir/client.py")" "$port" | while read -r what _ c _ p _ r; do
  case $what in
    setup_ms) printf '  connection set-up + one 1 KiB request: captured %.3f ms, proxy %.3f ms (%.2fx the time)\n' "$c" "$p" "$r" ;;
    bulk_MBps) printf '  256 MiB download: captured %.0f MB/s, proxy %.0f MB/s (%.2fx)\n' "$c" "$p" "$r" ;;
  esac
done
[ "${PIPESTATUS[0]}" = 0 ] || { echo "37-capture: the sandboxed client failed:"; tail -n 5 "$dir/wrap.err"; }
