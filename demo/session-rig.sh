# Sourced by demo/70-session.sh and tests/cli/check_session.sh: what an agent
# server has before a session starts, all on this host. session_setup DIR
# makes, under DIR (which it expects to be 0755 and empty):
#   xfs/         a loop-mounted XFS image with reflink (cc-worktree's data)
#   xfs/app      the registered checkout, origin https://github.com/acme/app.git
#   upstream/    a smart-HTTP upstream on 127.0.0.1 (demo/pushgate-rig.sh) with main
#   bin/token    the per-push credential command; bin/revoke its revoke hook;
#   bin/approve  the person answering asks (allows all, logs the questions)
#   task         the agent's tool calls, one shell line each
# and sets SESSION_APP, SESSION_FIRST (main's commit). session_teardown DIR
# undoes the mount, the loop device and the upstream. Needs root.
. "$CC_ROOT/demo/pushgate-rig.sh"
SESSION_DEV=

session_setup() {
  local w=$1
  truncate -s 300M "$w/xfs.img"
  mkfs.xfs -q -m reflink=1 "$w/xfs.img"
  SESSION_DEV=$(losetup -f --show "$w/xfs.img")
  mkdir "$w/xfs" && mount "$SESSION_DEV" "$w/xfs"
  rig_start "$w/upstream" || return 1
  rig_repo "$w/upstream" acme/app

  # The registered checkout, its origin on "GitHub", main already upstream.
  local app=$w/xfs/app first
  git init -q -b main "$app"
  echo "original" > "$app/README"
  git -C "$app" add README && git -C "$app" commit -qm first
  git -C "$app" remote add origin https://github.com/acme/app.git
  git -C "$app" push -q "http://x-access-token:$RIG_WRITE_TOKEN@${RIG_URL#http://}/acme/app.git" main
  git -C "$app" config branch.main.remote origin
  git -C "$app" config branch.main.merge refs/heads/main
  first=$(git -C "$app" rev-parse HEAD)

  mkdir "$w/bin" "$w/xfs/data"
  printf '#!/bin/sh\necho %s\n' "$RIG_WRITE_TOKEN" > "$w/bin/token"
  printf '#!/bin/sh\ntouch %s/revoked\n' "$w" > "$w/bin/revoke"
  # The approver stands in for the person who answers the CLI's questions:
  # it allows every ask, so the gateway is what stops the push to main.
  printf '#!/bin/sh\ncat >> %s/questions.jsonl\necho allow\n' "$w" > "$w/bin/approve"
  chmod +x "$w/bin/"*
  cat > "$w/task" <<EOF
echo "agent line" >> README
git commit -qam "agent change"
git push origin HEAD:refs/heads/agent/a1/c1/login
git push
curl -sS --max-time 5 -o /dev/null -w '%{http_code}\n' http://example.com/
echo evil > $app/README
git push origin HEAD:main
EOF
  SESSION_APP=$app
  SESSION_FIRST=$first
}

session_teardown() {
  rig_stop
  mountpoint -q "$1/xfs" && umount "$1/xfs"
  [ -n "$SESSION_DEV" ] && losetup -d "$SESSION_DEV"
  SESSION_DEV=
}
