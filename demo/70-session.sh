#!/usr/bin/env bash
# A complete agent session, as an agent server runs it, with the example that
# ships in the package (share/cc/examples/session.sh, installed under
# /usr/share/doc/cc/examples): probe, a copy-on-write conversation, the push
# gateway, one cc-egress, the classifier before every tool call, cc-wrap with
# events, teardown.
set -uo pipefail
if [ "$(id -u)" -ne 0 ] || ! command -v mkfs.xfs >/dev/null || ! losetup -f >/dev/null 2>&1; then
  echo "(the session example needs root, mkfs.xfs and a loop device for its reflink filesystem; scene skipped)"
  exit 0
fi
w=$(mktemp -d /tmp/cc-demo-session.XXXXXX)
chmod 755 "$w"
. "$CC_ROOT/demo/session-rig.sh"
trap 'session_teardown "$w"; rm -rf "$w"' EXIT
export HOME=$w GIT_CONFIG_GLOBAL=$w/gitconfig GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
git config --global user.name operator; git config --global user.email operator@example.invalid
session_setup "$w" > /dev/null || exit 1
say() { printf '\n\033[36m$ %s\033[0m\n' "$*"; }
say "cat task      # the agent's tool calls"
cat "$w/task"
say "session.sh --repo app --data-dir data --conversation c1 --upstream \$UPSTREAM --upstream-repo acme/app \\
    --token-command bin/token --approver bin/approve --revoke-command bin/revoke --out out --destroy task"
bash "$CC_ROOT/share/cc/examples/session.sh" --repo "$SESSION_APP" --data-dir "$w/xfs/data" --conversation c1 \
  --upstream "$RIG_URL" --upstream-repo acme/app --token-command "$w/bin/token" \
  --approver "$w/bin/approve" --revoke-command "$w/bin/revoke" --out "$w/out" --destroy "$w/task" 2>&1 |
  sed "s|$w/||g"
say "jq -j 'select(.event == \"stderr\") | .text' out/task-4.jsonl   # the bare 'git push' reached main"
jq -j 'select(.event == "stderr") | .text' "$w/out/task-4.jsonl" | sed "s|$w/||g"
say "git ls-remote upstream"
git ls-remote "http://reader:$RIG_READ_TOKEN@${RIG_URL#http://}/acme/app.git"
echo "registered checkout README: $(cat "$SESSION_APP/README")"
