#!/usr/bin/env bash
# cc-worktree create against cp -a and git worktree add, on a generated repo
# of 50,000 files / 1 GiB on a loop-mounted XFS image with reflink=1.
# Each method runs RUNS times (default 3); the time includes a final sync.
# Reports the median, the ratio to `cc-worktree create`, and the disk each
# copy used (df on the image, sampled after sync). Root only; bounded: one
# image, one repo, 4 methods x RUNS.
set -euo pipefail
RUNS=${RUNS:-3}
FILES=${FILES:-50000}
TOTAL_MIB=${TOTAL_MIB:-1024}
if [ "$(id -u)" -ne 0 ] || ! command -v mkfs.xfs >/dev/null || ! losetup -f >/dev/null 2>&1; then
  echo "skipped: needs root, mkfs.xfs and a free loop device"
  exit 0
fi
work=$(mktemp -d /var/tmp/cc-bench-worktree.XXXXXX)
cleanup() {
  mountpoint -q "$work/xfs" 2>/dev/null && umount "$work/xfs"
  [ -f "$work/xfs.img" ] && losetup -j "$work/xfs.img" -O NAME -n | while read -r d; do losetup -d "$d"; done
  rm -rf "$work"
}
trap cleanup EXIT
truncate -s 8G "$work/xfs.img"
mkfs.xfs -q -m reflink=1 "$work/xfs.img"
dev=$(losetup -f --show "$work/xfs.img")
mkdir "$work/xfs" && mount "$dev" "$work/xfs"
x=$work/xfs
calc() { awk "BEGIN { printf \"${2:-%.6f}\", $1 }"; }

# The repo: FILES files in directories of 100, TOTAL_MIB in all, random
# content (so nothing compresses or dedupes by accident), committed.
gen_start=$(date +%s.%N)
python3 - "$x/app" "$FILES" "$TOTAL_MIB" <<'EOF'
import os, sys
root, files, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) << 20
size = total // files
pool = os.urandom(size * 64)
for i in range(files):
    d = os.path.join(root, "d%03d" % (i // 100))
    if i % 100 == 0:
        os.makedirs(d, exist_ok=True)
    off = (i * 7919) % (len(pool) - size)
    with open(os.path.join(d, "f%05d.bin" % i), "wb") as f:
        f.write(os.urandom(16) + pool[off + 16:off + size])
EOF
git -C "$x/app" init -q
git -C "$x/app" -c core.compression=0 -c core.looseCompression=0 add -A
git -C "$x/app" -c user.name=bench -c user.email=bench@example.invalid commit -qm bench
sync
gen_end=$(date +%s.%N)
mkdir "$x/data"
echo "repo: $(find "$x/app" -path "$x/app/.git" -prune -o -type f -print | wc -l) files, $(du -s --apparent-size -BM "$x/app" --exclude=.git | cut -f1) of work tree, $(du -s -BM "$x/app/.git" | cut -f1) of .git; generated in $(calc "$gen_end - $gen_start" %.0f) s"

used() { df --output=used -B1 "$x" | tail -1; }
declare -A times disk
run() {  # run NAME CLEANUP-COMMAND... -- COMMAND...
  local name=$1; shift
  local cleanup=() cmd=()
  while [ "$1" != "--" ]; do cleanup+=("$1"); shift; done; shift
  cmd=("$@")
  local t=()
  for i in $(seq 1 "$RUNS"); do
    sync; local u0; u0=$(used)
    local s e; s=$(date +%s.%N)
    "${cmd[@]//@N@/$i}" >/dev/null
    sync
    e=$(date +%s.%N)
    t+=("$(calc "$e - $s" %.3f)")
    [ "$i" -eq 1 ] && disk[$name]=$(( ($(used) - u0) ))
    "${cleanup[@]//@N@/$i}" >/dev/null
  done
  times[$name]=$(printf '%s\n' "${t[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "$name: runs ${t[*]} s"
}

run "cc-worktree create" cc-worktree destroy --data-dir "$x/data" --conversation b@N@ -- \
    cc-worktree create --data-dir "$x/data" --conversation b@N@ --repo "$x/app" --agent a1
# du counts shared extents in full: show it once on a kept clone
cc-worktree create --data-dir "$x/data" --conversation keep --repo "$x/app" >/dev/null; sync
du_clone=$(du -s -BM "$x/data/conversations/keep" | cut -f1)
cc-worktree destroy --data-dir "$x/data" --conversation keep >/dev/null
run "cp -a" rm -rf "$x/cp@N@" -- cp -a "$x/app" "$x/cp@N@"
run "cp -a --reflink=never" rm -rf "$x/cpn@N@" -- cp -a --reflink=never "$x/app" "$x/cpn@N@"
run "git worktree add" git -C "$x/app" worktree remove --force "$x/wt@N@" -- \
    git -C "$x/app" worktree add -q --detach "$x/wt@N@" HEAD

base=${times["cc-worktree create"]}
echo
printf '%-24s %12s %10s %16s\n' method "median (s)" "x create" "disk used (MiB)"
for name in "cc-worktree create" "cp -a" "cp -a --reflink=never" "git worktree add"; do
  printf '%-24s %12.2f %10.2f %16.1f\n' "$name" "${times[$name]}" "$(calc "${times[$name]} / $base")" \
    "$(calc "${disk[$name]} / 1048576")"
done
echo "du -s of a reflink clone reports ${du_clone} (du counts shared extents in full; df above is what the disk lost)"
echo "note: coreutils $(cp --version | head -1 | awk '{print $NF}') cp -a reflinks by default (--reflink=auto); --reflink=never is the byte copy"
