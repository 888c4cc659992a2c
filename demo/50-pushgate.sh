#!/usr/bin/env bash
# cc-pushgate: the agent's git pushes to "GitHub"; the gateway asks the policy
# per ref, pushes the allowed branch upstream with a write token the agent
# never sees, and git itself prints the rejection of main.
set -euo pipefail
. "$CC_ROOT/demo/pushgate-rig.sh"
work=$(mktemp -d /tmp/cc-demo-pushgate.XXXXXX)
gw=
cleanup() { [ -n "$gw" ] && kill "$gw" 2>/dev/null && wait "$gw" 2>/dev/null; rig_stop; rm -rf "$work"; }
trap cleanup EXIT
say() { printf '\n\033[36m$ %s\033[0m\n' "$*"; }
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 HOME=$work
export GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=agent@example.invalid GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=agent@example.invalid

rig_start "$work/upstream"
rig_repo "$work/upstream" acme/app
echo "$RIG_WRITE_TOKEN" > "$work/write-token"; chmod 600 "$work/write-token"
cat > "$work/policy.json" <<'JSON'
{"version": 1, "rules": [
  {"action": "push", "refs": ["main"], "decision": "deny", "reason": "main is released by CI"},
  {"action": "push", "modes": ["chat"], "decision": "allow"}]}
JSON
cat "$work/policy.json"

say "cc-pushgate --upstream $RIG_URL --repo acme/app --policy policy.json --token-file write-token &"
cc-pushgate --upstream "$RIG_URL" --repo acme/app --policy "$work/policy.json" \
  --token-file "$work/write-token" > "$work/events" 2> "$work/gateway.err" &
gw=$!
for _ in $(seq 50); do [ -s "$work/events" ] && break; sleep 0.1; done
url=$(head -n1 "$work/events" | python3 -c 'import json,sys; print(json.load(sys.stdin)["url"])')
echo "ready at $url"

git init -q -b main "$work/app"
cd "$work/app"
echo hello > README && git add README && git commit -qm "first"
git remote add origin https://github.com/acme/app.git
say "cc-pushgate git-config --url $url > pushgate.config; git config --add include.path ..."
(umask 077; cc-pushgate git-config --url "$url" > "$work/pushgate.config")
grep -E 'url|pushInsteadOf|proxy' "$work/pushgate.config"
git config --add include.path "$work/pushgate.config"

say "git push origin HEAD:feature/login      # allowed"
git push origin HEAD:feature/login 2>&1 || true
say "git push origin main                    # denied by the policy"
git push origin main 2>&1 || echo "(git exit status $?)"

say "the gateway's JSON lines (one per push)"
tail -n +2 "$work/events" | python3 -c '
import json, sys
for line in sys.stdin:
    j = json.loads(line)
    for r in j.get("refs", []):
        print("%-8s %-24s %-5s %s" % (j["result"], r["ref"], r["decision"], r["reason"]))'
say "upstream now has"
git ls-remote "http://reader:$RIG_READ_TOKEN@${RIG_URL#http://}/acme/app.git"
grep -q "$RIG_WRITE_TOKEN" "$work/events" "$work/gateway.err" && { echo "token leaked" >&2; exit 1; }
echo "(the write token appears in neither the gateway's output nor the agent's config)"
