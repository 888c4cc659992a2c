# cc-wrap: an agent's command under bubblewrap: a refused write, its violation
# event, and an allowed and a denied request through the session's proxy.
set -u
if ! command -v cc-egress >/dev/null; then
  echo "(cc-egress is not built: a native dispatch launch needs its proxy; scene skipped)"
  exit 0
fi
d=$(mktemp -d /tmp/cc-demo-wrap.XXXXXX)
srv= eg=
cleanup() { for p in $srv $eg; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$d"; }
trap cleanup EXIT
mkdir -p "$d/agents/a1/work" "$d/repos/app" "$d/site"
git -c init.defaultBranch=main init -q "$d/agents/a1/work"
echo "original checkout" > "$d/repos/app/README"
echo "hello from a local server" > "$d/site/index.html"
# Run by root, cc-wrap never runs the command as root: it becomes the owner of
# the working directory (else nobody). The demo gives its tree to nobody.
# (mktemp made $d 0700: opened so that uid can pass through it.)
if [ "$(id -u)" -eq 0 ]; then chown -R 65534:65534 "$d/agents" "$d/repos"; chmod 755 "$d"; fi

# A local web server on 127.0.0.1 (an allowed destination).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$d/site" "$port" >/dev/null 2>&1 &
srv=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.05; done
cat > "$d/spec.json" <<JSON
{"sessionId": "demo-1", "workspaceId": "ws", "mode": "chat",
 "bindMounts": [{"hostPath": "$d/agents/a1/work"}, {"hostPath": "$d/repos"}],
 "guestWorkdir": "$d/agents/a1/work",
 "protectedPaths": ["$d/repos/app"],
 "egressAllowlist": ["127.0.0.1:*"]}
JSON

echo "\$ cc-wrap --spec spec.json --events -- sh -c 'echo ok > notes.txt; echo K=1 > .env; echo evil > repos/app/README; echo x > .git/hooks/pre-commit'"
echo "  # the standard policy: writes are judged when they happen, by cc-wrap's write supervisor"
cc-wrap --spec "$d/spec.json" --events -- \
  sh -c "echo ok > notes.txt && echo wrote notes.txt; echo K=1 > .env; echo evil > $d/repos/app/README; echo x > .git/hooks/pre-commit" 2>/dev/null |
  jq -c 'if .event == "starting" then {event, backend: .plan.backend, layers: .plan.layers}
         elif .event == "violation" then {event, syscall, path, rule, source, errno}
         elif .event == "exit" then {event, exitCode, endedBy, writeSupervisor} else del(.sessionId, .seq) end'
echo "host: notes.txt = $(cat "$d/agents/a1/work/notes.txt"); .env exists: $([ -e "$d/agents/a1/work/.env" ] && echo yes || echo no); repos/app/README = $(cat "$d/repos/app/README")"
echo
echo "\$ cc-wrap ... -- curl -sS http://127.0.0.1:$port/"
cc-wrap --spec "$d/spec.json" -- curl -sS --max-time 5 -o - -w ' [HTTP %{http_code}]\n' "http://127.0.0.1:$port/" 2>&1 |
  grep -v '^cc-wrap: '
echo "\$ cc-wrap ... -- curl -sS http://example.com/     # cc-egress refuses it; cc-wrap says so"
cc-wrap --spec "$d/spec.json" -- curl -sS --max-time 5 -o /dev/null -w '[HTTP %{http_code}]\n' "http://example.com/" 2>&1 |
  grep -v '^cc-wrap: no backend\|^cc-wrap: note'
echo "\$ cc-wrap ... --events -- curl -sS http://example.com/   # the same refusal as a violation event"
cc-wrap --spec "$d/spec.json" --events -- curl -sS --max-time 5 -o /dev/null -w '[HTTP %{http_code}]\n' \
  "http://example.com/" 2>/dev/null | jq -c 'select(.event == "stdout" or .event == "violation" or .event == "exit") | del(.sessionId, .raw)'
echo
echo "\$ cc-egress --spec spec.json --fd-inbox eg/inbox.sock > eg.out &   # one cc-egress for the whole session"
mkdir -p "$d/eg"
cc-egress --spec "$d/spec.json" --fd-inbox "$d/eg/inbox.sock" > "$d/eg.out" 2>/dev/null &
eg=$!
for _ in $(seq 100); do [ -s "$d/eg.out" ] && break; sleep 0.05; done
head -n 1 "$d/eg.out" > "$d/ready.json"
echo "\$ cc-wrap ... --egress ready.json --events -- curl -sS http://example.com/   # its refusal is still this run's violation"
cc-wrap --spec "$d/spec.json" --egress "$d/ready.json" --events -- \
  curl -sS --max-time 5 -o /dev/null "http://example.com/" 2>/dev/null | jq -c 'select(.event == "violation") | del(.sessionId, .raw)'
echo "eg.out (the operator's log): $(jq -c 'select(.event == "connection") | {host, decision, rule}' "$d/eg.out")"
echo
echo "\$ cc-wrap ... -- curl http://127.0.0.1:$port/ --noproxy '*'   # the namespace has only loopback"
cc-wrap --spec "$d/spec.json" -- curl -sS --max-time 3 --noproxy '*' "http://127.0.0.1:$port/" 2>&1 | grep -v '^cc-wrap: '
echo
echo "\$ cc-wrap --spec spec.json --print -- true | jq '{backend, proxy: .proxy.transport, denies: [.denies[] | select(.enforcement[0] | test(\"read-only bind over\"))| .rule]}'"
cc-wrap --spec "$d/spec.json" --print -- true 2>/dev/null |
  jq -c '{backend, proxy: .proxy.transport, denies: [.denies[] | select(.enforcement | any(test("over the writable"))) | .rule]}'
echo
echo "\$ cc-wrap --spec spec.json --print -- true | jq -c '.identity, .layers, [.seccomp.rules[].syscall] | unique'"
cc-wrap --spec "$d/spec.json" --print -- true 2>/dev/null |
  jq -c '{hostUid: .identity.hostUid, switchedFromRoot: .identity.switchedFromRoot}, .layers, ([.seccomp.rules[].syscall] | unique | join(" "))'
echo "\$ cc-wrap ... -- sh -c 'id -u; unshare -U true; cat core_pattern > core_pattern'   # never host root"
cc-wrap --spec "$d/spec.json" -- sh -c 'id -u; unshare -U true; v=$(cat /proc/sys/kernel/core_pattern); echo "$v" > /proc/sys/kernel/core_pattern' 2>&1 |
  grep -v '^cc-wrap: no backend\|^cc-wrap: note'
