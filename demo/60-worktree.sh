#!/usr/bin/env bash
# cc-worktree + cc-confine: a conversation gets a copy-on-write clone of a repo
# on a reflink XFS image (root), a filesystem without reflink is refused, and
# a file tool's paths are confined to the agent's workdir and repos/.
set -euo pipefail
work=$(mktemp -d /tmp/cc-demo-worktree.XXXXXX)
cleanup() {
  mountpoint -q "$work/xfs" 2>/dev/null && umount "$work/xfs"
  # main runs in a pipeline's subshell: find the loop device by its image
  [ -f "$work/xfs.img" ] && losetup -j "$work/xfs.img" -O NAME -n | while read -r d; do losetup -d "$d"; done
  rm -rf "$work"
}
trap cleanup EXIT
say() { printf '\n\033[36m$ %s\033[0m\n' "$*"; }
summary() { python3 -c '
import json, sys
j = json.load(sys.stdin)
r = j["repos"][0]
print("backend=%s  repo=%s  files=%s  bytes=%s" % (j["backend"], r["name"], r.get("files", "-"), r.get("bytes", "-")))
for a in j["agents"]: print("agent %s: workdir=%s roots=%s" % (a["name"], a["workdir"], a["roots"]))'; }

make_repo() {
  mkdir -p "$1/src"
  git -C "$1" init -q
  echo 'int main(void) { return 0; }' > "$1/src/main.c"
  echo '# app' > "$1/README.md"
  head -c 64M /dev/zero | tr '\0' 'x' > "$1/assets.bin"
  git -C "$1" add -A
  git -C "$1" -c user.name=demo -c user.email=demo@example.invalid commit -qm init
}

main() {
if [ "$(id -u)" -eq 0 ] && command -v mkfs.xfs >/dev/null && losetup -f >/dev/null 2>&1; then
  truncate -s 512M "$work/xfs.img"
  mkfs.xfs -q -m reflink=1 "$work/xfs.img"
  dev=$(losetup -f --show "$work/xfs.img")
  mkdir -p "$work/xfs"
  mkdir -p "$work/xfs" && mount "$dev" "$work/xfs"
  d=$work/xfs
  make_repo "$d/app"
  mkdir "$d/data"
  sync; before=$(df --output=used -B1 "$d" | tail -1)
  say "cc-worktree create --data-dir $d/data --conversation c1 --repo $d/app --agent a1 --agent a2"
  cc-worktree create --data-dir "$d/data" --conversation c1 --repo "$d/app" --agent a1 --agent a2 | summary
  sync; after=$(df --output=used -B1 "$d" | tail -1)
  echo "disk used by the clone of a $(du -sh --apparent-size "$d/app" | cut -f1) repo: $(( (after - before) / 1024 )) KiB (df on the XFS image)"
  conv=$d/data/conversations/c1
  say "echo edit >> repos/app/README.md   # in the conversation"
  echo "edited by the agent" >> "$conv/repos/app/README.md"
  echo "conversation: $(tail -1 "$conv/repos/app/README.md")   registered repo: $(tail -1 "$d/app/README.md")"
  workdir=$conv/agents/a1 roots=$conv/repos
else
  echo "(not root or no loop device: skipping the reflink clone; confinement runs on a plain directory)"
  mkdir -p "$work/plain/agents/a1" "$work/plain/repos/app/src"
  echo 'int main(void) { return 0; }' > "$work/plain/repos/app/src/main.c"
  workdir=$work/plain/agents/a1 roots=$work/plain/repos
fi

say "cc-worktree create on a filesystem without reflink ($(stat -f -c %T /tmp)): refused, nothing left"
mkdir -p "$work/plain-data" "$work/plainrepo" && git -C "$work/plainrepo" init -q
cc-worktree create --data-dir "$work/plain-data" --conversation c1 --repo "$work/plainrepo" || echo "exit $?; left behind: $(ls -A "$work/plain-data" | wc -l) entries"

ln -s /etc "$workdir/etc-link"
say "cc-confine --workdir agents/a1 --root repos -- notes.md ../../repos/app/src/main.c etc-link/shadow /proc/self/root/etc"
cc-confine --workdir "$workdir" --root "$roots" -- notes.md ../../repos/app/src/main.c etc-link/shadow /proc/self/root/etc \
  || echo "exit $?"
say "cc-confine --open-read etc-link/shadow"
cc-confine --workdir "$workdir" --root "$roots" --open-read etc-link/shadow || echo "exit $?"
say "echo note | cc-confine --open-write notes.md"
echo "a note" | cc-confine --workdir "$workdir" --root "$roots" --open-write notes.md

if [ -n "${dev:-}" ]; then
  say "cc-worktree destroy --data-dir $d/data --conversation c1"
  cc-worktree destroy --data-dir "$d/data" --conversation c1
fi
}
echo "(paths below: \$W = $work)"
main 2>&1 | sed "s|$work|\$W|g"
