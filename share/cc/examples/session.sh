#!/usr/bin/env bash
# One agent session end to end with the cc tools, as an agent server runs it:
#   1. cc-probe once: the host must offer the native backend;
#   2. cc-worktree: a copy-on-write clone of the registered repository for
#      this conversation (the registered checkout itself stays read-only);
#   3. cc-pushgate: the session's push gateway, with a per-push credential
#      from --token-command that the agent never sees;
#   4. cc-egress: one proxy pair for the whole session (allowlist: the
#      gateway's port and --allow-file entries);
#   5. per line of TASK_FILE (standing in for the agent CLI's Bash tool
#      calls): cc-classify decides, as the CLI's hook would; what it allows
#      runs under cc-wrap with events;
#   6. teardown: the gateway is stopped with SIGTERM (it revokes what it
#      minted), --revoke-command runs, every process started here is gone,
#      and with --destroy the conversation is removed.
#
# Usage:
#   session.sh --repo DIR --data-dir DIR --conversation ID \
#              --upstream BASE_URL --upstream-repo OWNER/NAME --token-command CMD \
#              [--agent NAME] [--policy FILE] [--allow-file FILE] [--approver CMD] \
#              [--revoke-command CMD] [--run-as UID[:GID]] [--out DIR] [--destroy] TASK_FILE
#
# --repo is the registered checkout; its origin names the upstream
# repository (for example https://github.com/OWNER/NAME.git). --data-dir
# must be on a filesystem with reflink (XFS made with reflink=1, btrfs).
# Run by root, the conversation is handed to --run-as (default 65534), the
# uid the sandboxed commands run as. Everything the session writes (events,
# the gateway's and the proxy's JSON lines, a summary) goes to --out.
# Exit status: 0 when every task line that was allowed ran and exited 0,
# 1 when one did not, 2 for bad arguments, 125 when a tool failed to start.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo= data= conv= upstream= upstream_repo= token_cmd= agent=a1 policy=$here/policy.json allow_file=
approver= revoke_cmd= run_as=65534 out= destroy=0 task=
usage() { echo "session.sh: $1 (see the comment at the top of $0)" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --repo) repo=$2; shift 2 ;;
    --data-dir) data=$2; shift 2 ;;
    --conversation) conv=$2; shift 2 ;;
    --upstream) upstream=$2; shift 2 ;;
    --upstream-repo) upstream_repo=$2; shift 2 ;;
    --token-command) token_cmd=$2; shift 2 ;;
    --agent) agent=$2; shift 2 ;;
    --policy) policy=$2; shift 2 ;;
    --allow-file) allow_file=$2; shift 2 ;;
    --approver) approver=$2; shift 2 ;;
    --revoke-command) revoke_cmd=$2; shift 2 ;;
    --run-as) run_as=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --destroy) destroy=1; shift ;;
    -*) usage "unknown option '$1'" ;;
    *) [ -z "$task" ] || usage "one TASK_FILE only"; task=$1; shift ;;
  esac
done
for v in repo data conv upstream upstream_repo token_cmd task; do
  [ -n "${!v}" ] || usage "missing --${v//_/-}"
done
[ -r "$task" ] || usage "cannot read TASK_FILE '$task'"
[ -r "$policy" ] || usage "cannot read --policy '$policy'"
out=${out:-$(mktemp -d /tmp/cc-session.XXXXXX)}
mkdir -p "$out/run"
chmod 755 "$out" "$out/run"
log() { printf 'session: %s\n' "$*" | tee -a "$out/summary.txt" >&2; }

pids=()
teardown() {
  local rc=$?
  # The gateway first, with SIGTERM: it finishes pushes in flight and
  # revokes every token it minted before it exits.
  if [ -n "${gw_pid:-}" ] && kill -0 "$gw_pid" 2>/dev/null; then
    kill -TERM "$gw_pid" 2>/dev/null || true
    wait "$gw_pid" 2>/dev/null || true
  fi
  if [ -n "$revoke_cmd" ]; then
    if CC_SESSION_OUT=$out $revoke_cmd; then log "revoked: $revoke_cmd"; else log "revoke command failed: $revoke_cmd"; rc=1; fi
  fi
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  local left=
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
  if [ -n "$left" ]; then log "still running:$left"; rc=1; else log "teardown: no process of the session is left"; fi
  if [ "$destroy" = 1 ] && [ -f "$out/conversation.json" ]; then
    cc-worktree destroy --data-dir "$data" --conversation "$conv" > "$out/destroy.json" && log "conversation $conv destroyed"
  fi
  exit "$rc"
}
trap teardown EXIT

# 1. The backend, probed once for the whole session.
cc-probe --json > "$out/probe.json" || { log "cc-probe failed"; exit 125; }
backend=$(jq -r .backend "$out/probe.json")
[ "$backend" = native ] || { log "no native sandbox backend here (cc-probe says '$backend')"; exit 125; }
log "backend: native ($(jq -c .layers.missing "$out/probe.json") missing layers)"

# 2. The conversation's copy of the repository.
cc-worktree create --data-dir "$data" --conversation "$conv" --repo "$repo" --agent "$agent" \
  > "$out/conversation.json" || { log "cc-worktree create failed"; exit 125; }
conv_dir=$(jq -r .path "$out/conversation.json")
work=$(jq -r .repos[0].path "$out/conversation.json")
agent_dir=$(jq -r .agents[0].workdir "$out/conversation.json")
log "conversation $conv: $work ($(jq -r .backend "$out/conversation.json"))"

# 3. The push gateway, with the credential source the agent never sees.
cc-pushgate --upstream "$upstream" --repo "$upstream_repo" --policy "$policy" \
  --token-command "$token_cmd" --agent "$agent" --conversation "$conv" \
  > "$out/pushgate.jsonl" 2> "$out/pushgate.err" &
gw_pid=$!
pids+=("$gw_pid")
for _ in $(seq 100); do [ -s "$out/pushgate.jsonl" ] && break; sleep 0.05; done
gw_url=$(head -n1 "$out/pushgate.jsonl" | jq -r '.url // empty')
[ -n "$gw_url" ] || { log "cc-pushgate did not start: $(head -c 300 "$out/pushgate.err")"; exit 125; }
gw_hostport=${gw_url#http://}; gw_hostport=${gw_hostport%%/*}
# The agent-side git configuration, written from outside (the sandbox may
# not write .git/config). Inside, git reaches the gateway through the
# session's proxy, so the gateway's own 'proxy = ""' is dropped (the
# section's extraHeader, the session's secret, stays; the file is 0600).
(umask 077 && cc-pushgate git-config --url "$gw_url" > "$work/.git/cc-pushgate.config")
git config -f "$work/.git/cc-pushgate.config" --unset "http.http://$gw_hostport/.proxy" 2>/dev/null || true
git -C "$work" config --add include.path cc-pushgate.config
git -C "$work" config user.name "agent $agent"
git -C "$work" config user.email "$agent@agents.invalid"
log "push gateway: $gw_url"

# Run by root, the commands run as --run-as: the conversation becomes theirs.
if [ "$(id -u)" -eq 0 ]; then
  chown -R "$run_as" "$conv_dir"
fi

# The SandboxSpec, from cc-worktree's answer (one jq line).
jq --arg s "session-$conv-$$" --arg agent "$agent" --arg repo "$(cd "$repo" && pwd)" --arg gw "$gw_hostport" \
  '{sessionId: $s, workspaceId: .conversation, conversationId: .conversation, agentId: $agent, mode: "chat",
    bindMounts: [{hostPath: (.path + "/repos")}, {hostPath: .agents[0].workdir}, {hostPath: $repo, readOnly: true}],
    guestWorkdir: .repos[0].path, protectedPaths: [$repo], egressAllowlist: [$gw]}' \
  "$out/conversation.json" > "$out/spec.json"

# 4. One cc-egress for the session; every cc-wrap launch hands it its listeners.
egress_args=(--spec "$out/spec.json" --unix-dir "$out/run" --fd-inbox "$out/run/inbox.sock")
[ -n "$allow_file" ] && egress_args+=(--allow-file "$allow_file")
cc-egress "${egress_args[@]}" > "$out/egress.jsonl" 2> "$out/egress.err" &
pids+=("$!")
for _ in $(seq 100); do [ -s "$out/egress.jsonl" ] && break; sleep 0.05; done
head -n1 "$out/egress.jsonl" > "$out/ready.json"
jq -e '.event == "ready"' "$out/ready.json" > /dev/null || { log "cc-egress did not start: $(head -c 300 "$out/egress.err")"; exit 125; }

# 5. The agent's tool calls: classified as the CLI's hook would, then run.
classify_args=(--mode chat --policy "$policy")
[ -n "$approver" ] && classify_args+=(--approver "$approver")
status=0 n=0
while IFS= read -r line || [ -n "$line" ]; do
  case $line in ''|'#'*) continue ;; esac
  n=$((n + 1))
  verdict=$(cc-classify "${classify_args[@]}" -- "$line" 2>/dev/null) || true
  # No answer at all (a crash) is a deny, as it is for the hook.
  decision=$(jq -r '.decision // "deny"' <<< "${verdict:-null}" 2>/dev/null) || decision=deny
  if [ "$decision" != allow ]; then
    log "task $n: $decision: $line ($(jq -r '.reason // "no answer"' <<< "${verdict:-null}" 2>/dev/null))"
    continue
  fi
  rc=0
  cc-wrap --quiet --spec "$out/spec.json" --egress "$out/ready.json" --events -- bash -c "$line" \
    > "$out/task-$n.jsonl" 2>> "$out/wrap.err" || rc=$?
  cat "$out/task-$n.jsonl" >> "$out/events.jsonl"
  log "task $n: allow: $line -> exit $rc"
  [ "$rc" -eq 0 ] || status=1
done < "$task"
exit "$status"
