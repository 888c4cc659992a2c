#!/usr/bin/env bash
# cc-egress: one session's proxy pair lets an allowed host through, refuses
# the rest in each protocol's own words, and logs every connection as JSON.
set -euo pipefail
dir=$(mktemp -d)
eg=; web=
cleanup() { [ -n "$eg" ] && kill "$eg" 2>/dev/null; [ -n "$web" ] && kill "$web" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy

echo '$ cc-egress --check api.github.com:443 METADATA.GOOGLE.INTERNAL. 0251.0376.0251.0376 example.com'
cc-egress --check api.github.com:443 METADATA.GOOGLE.INTERNAL. 0251.0376.0251.0376 example.com |
  python3 -c 'import json,sys
for l in sys.stdin:
    j = json.loads(l)
    print("  %-5s  %-28s %s" % (j["decision"], j["host"], j["rule"]))' || true

# A local origin stands in for the internet (loopback only).
python3 "$CC_ROOT/tests/net/origin.py" 0 > "$dir/port" 2>/dev/null & web=$!
for _ in $(seq 50); do [ -s "$dir/port" ] && break; sleep 0.1; done
port=$(cat "$dir/port")

echo
echo '$ cc-egress --no-baseline --allow "127.0.0.1:*" &   # loopback must be named (it is refused otherwise), with its ports'
cc-egress --no-baseline --allow '127.0.0.1:*' > "$dir/out" 2> "$dir/err" & eg=$!
for _ in $(seq 50); do [ -s "$dir/out" ] && break; sleep 0.1; done
head -n 1 "$dir/out" | cut -c1-150
ready=$(head -n 1 "$dir/out")
http=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["http"])' "$ready")
socks=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["socks"])' "$ready")

echo
echo "\$ curl -x http://$http http://127.0.0.1:$port/hello"
curl -sS -x "http://$http" "http://127.0.0.1:$port/hello"
echo "\$ curl -x http://$http http://169.254.169.254/latest/meta-data/"
curl -sS -x "http://$http" "http://169.254.169.254/latest/meta-data/" -w '  (HTTP %{http_code})\n'
echo "\$ curl --socks5-hostname $socks https://evil.test/"
curl -sS --socks5-hostname "$socks" https://evil.test/ 2>&1 | sed 's/^/  /' || true

kill -TERM "$eg"; wait "$eg" || true; eg=
echo
echo 'connection log (stdout, one JSON line each):'
tail -n +2 "$dir/out" | python3 -c 'import json,sys
for l in sys.stdin:
    j = json.loads(l)
    target = "%s:%s" % (j.get("host", "?"), j.get("port", ""))
    print("  %-12s %-22s %-5s %s" % (j["proto"], target, j["decision"], j["rule"]))'
