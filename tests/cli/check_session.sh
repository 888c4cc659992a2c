#!/usr/bin/env bash
# The complete session example (share/cc/examples/session.sh) against a real
# smart-HTTP upstream on 127.0.0.1 (lighttpd + git http-backend): a commit
# works, an own-branch push lands upstream, a push that reaches main is
# rejected in git's words, a host off the allowlist is refused, the
# registered checkout is untouched, the credential never reaches the agent,
# the revoke hook runs and nothing is left running.
# Needs root (a loop-mounted XFS image with reflink for cc-worktree): else
# it is skipped (status 77) and says why.
set -uo pipefail
root=$CC_SOURCE_DIR
export PATH="$CC_BIN_DIR/cmd/cc-probe:$CC_BIN_DIR/cmd/cc-worktree:$CC_BIN_DIR/cmd/cc-pushgate:$CC_BIN_DIR/cmd/cc-egress:$CC_BIN_DIR/cmd/cc-wrap:$CC_BIN_DIR/cmd/cc-classify:$PATH"
export GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
if [ "$(id -u)" -ne 0 ] || ! command -v mkfs.xfs >/dev/null || ! losetup -f >/dev/null 2>&1; then
  echo "skip: the session needs root, mkfs.xfs and a free loop device (a reflink filesystem for cc-worktree)"
  exit 77
fi
failed=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; failed=$((failed + 1)); fi; }

w=$(mktemp -d /tmp/cc-session-test.XXXXXX)
chmod 755 "$w"
cleanup() {
  session_teardown "$w"
  [ -n "${KEEP:-}" ] || rm -rf "$w"
}
trap cleanup EXIT
export CC_ROOT=$root
. "$root/demo/session-rig.sh"
export HOME=$w GIT_CONFIG_GLOBAL=$w/gitconfig
git config --global user.name operator; git config --global user.email operator@example.invalid

session_setup "$w" || exit 1
app=$SESSION_APP first=$SESSION_FIRST

bash "$root/share/cc/examples/session.sh" --repo "$app" --data-dir "$w/xfs/data" --conversation c1 \
  --upstream "$RIG_URL" --upstream-repo acme/app --token-command "$w/bin/token" --agent a1 \
  --approver "$w/bin/approve" --revoke-command "$w/bin/revoke" --out "$w/out" --destroy "$w/task" \
  > "$w/session.out" 2>&1
rc=$?
cat "$w/out/summary.txt"
out=$w/out
upstream_ls=$(git ls-remote "http://reader:$RIG_READ_TOKEN@${RIG_URL#http://}/acme/app.git")
stderr_of() { jq -j 'select(.event == "stderr") | .text' "$out/task-$1.jsonl"; }
stdout_of() { jq -j 'select(.event == "stdout") | .text' "$out/task-$1.jsonl"; }
exit_of() { jq -r 'select(.event == "exit") | .exitCode' "$out/task-$1.jsonl"; }

check "session exits 1 (some task lines failed, as planned)" '[ "$rc" -eq 1 ]'
check "the commit inside the sandbox works" '[ "$(exit_of 2)" = 0 ]'
check "the own-branch push exits 0" '[ "$(exit_of 3)" = 0 ]'
check "upstream has the agent's branch" 'grep -q "refs/heads/agent/a1/c1/login" <<< "$upstream_ls"'
check "upstream main is unchanged" 'grep -q "^$first	refs/heads/main" <<< "$upstream_ls"'
check "the push that reached main is rejected in git's words" \
  'stderr_of 4 | grep -q "! \[remote rejected\] main -> main"'
check "the classifier denies the explicit push to main (task 7 never runs)" \
  'grep -q "task 7: deny: git push origin HEAD:main" "$out/summary.txt" && [ ! -e "$out/task-7.jsonl" ]'
check "the approver was asked about both other pushes" '[ "$(wc -l < "$w/questions.jsonl")" -eq 2 ]'
check "a host off the allowlist is refused (403 and a network violation)" \
  '[ "$(stdout_of 5)" = 403 ] && jq -s -e "any(.[]; .event == \"violation\" and .action == \"network\" and .target == \"example.com:80\")" "$out/task-5.jsonl" > /dev/null'
check "the registered checkout is untouched (bash: Read-only file system, exit 1)" \
  '[ "$(cat "$app/README")" = original ] && [ "$(exit_of 6)" = 1 ] && stderr_of 6 | grep -q "$app/README: Read-only file system"'
check "the write token reaches neither the events nor the gateway's output" \
  '! grep -rq "$RIG_WRITE_TOKEN" "$out"/*.jsonl "$out/pushgate.err"'
check "the revoke hook ran" '[ -e "$w/revoked" ]'
check "teardown left no process of the session" 'grep -q "no process of the session is left" "$out/summary.txt"'
check "nothing of the session runs any more" '! pgrep -f "$out/" > /dev/null'
check "the conversation is destroyed" '[ ! -e "$w/xfs/data/conversations/c1" ]'
[ "$failed" -eq 0 ] || { echo "--- session output"; cat "$w/session.out"; }
exit $((failed > 0))
