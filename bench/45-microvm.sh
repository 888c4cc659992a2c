#!/usr/bin/env bash
# The microvm backend, whole process, on this host:
#  0. `cc-wrap --backend microvm -- true` restored from a snapshot against a
#     cold boot (--vm-boot cold), medians of RUNS interleaved, and where a
#     restored run spends its time; with a kernel built for the backend
#     (make vm-kernel-built, or CC_MICROVM_BUILT=DIR), its cold and restored
#     boots against Debian's kernel;
#  1. `cc-wrap --backend microvm --vm-boot cold -- true` (boot, run, power off, report) against
#     `cc-wrap -- true` (native), and the guest-side time the guest kernel
#     reports when the command starts (/proc/uptime inside: kernel entry to
#     the command's first instruction, the part KVM would shorten most);
#  2. the VM monitor's resident memory while an idle command runs;
#  3. file I/O on the shared workdir (virtio-9p) against native: a build-like
#     loop (create, read back and remove 300 small files) and `git status` in
#     a 300-file repository, both timed inside.
# The accelerator is VM_ACCEL (default tcg: on the machine these figures were
# taken on, KVM is present but unusable, so TCG is asked for explicitly).
# Medians of RUNS (default 7) interleaved rounds.
set -euo pipefail
RUNS=${RUNS:-7}
ACCEL=${VM_ACCEL:-tcg}
command -v cc-wrap >/dev/null || { echo "skipped: cc-wrap not on PATH"; exit 0; }
command -v qemu-system-x86_64 >/dev/null || { echo "skipped: no qemu-system-x86_64"; exit 0; }
w=$(mktemp -d /tmp/cc-bench-vm.XXXXXX)
trap 'rm -rf "$w"' EXIT
chmod 755 "$w"
mkdir -p "$w/work"
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
now_ms() { date +%s%N | awk '{printf "%.1f\n", $1/1e6}'; }
cat > "$w/spec.json" <<JSON
{"sessionId": "bench-vm", "workspaceId": "ws", "mode": "chat", "bindMounts": [{"hostPath": "$w/work"}],
 "guestWorkdir": "$w/work", "egressAllowlist": []}
JSON
git -C "$w/work" init -q
for i in $(seq 300); do echo "$i" > "$w/work/src$i.c"; done
git -C "$w/work" add -A && git -C "$w/work" -c user.name=b -c user.email=b@b commit -qm init
[ "$(id -u)" -eq 0 ] && chown -R 65534:65534 "$w/work"
export CC_VM_SNAPSHOT_DIR="$w/snapshots"
snap=(cc-wrap --quiet --spec "$w/spec.json" --backend microvm --vm-accel "$ACCEL" --drop-filename-denies)
vm=("${snap[@]}" --vm-boot cold)
native=(cc-wrap --quiet --spec "$w/spec.json" --backend native --drop-filename-denies)
if ! "${vm[@]}" -- true 2>"$w/err"; then
  echo "skipped: the microvm backend cannot run here: $(head -n1 "$w/err")"
  exit 0
fi
echo "host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); accelerator $ACCEL"

# 0. Snapshot restore against cold boot. The first run saves the snapshot.
a=$(now_ms); "${snap[@]}" -- true; b=$(now_ms)
printf 'first run (template boot, save, restore): %.0f ms; snapshot %s MB\n' "$(echo "$b - $a" | bc)" \
  "$(du -m "$w"/snapshots/*.snap | awk '{print $1}')"
: > "$w/t.restore"; : > "$w/t.cold"
for _ in $(seq "$RUNS"); do
  a=$(now_ms); "${snap[@]}" -- true; b=$(now_ms); echo "$b - $a" | bc >> "$w/t.restore"
  a=$(now_ms); "${vm[@]}" -- true; b=$(now_ms); echo "$b - $a" | bc >> "$w/t.cold"
done
r=$(median < "$w/t.restore"); c=$(median < "$w/t.cold")
printf 'boot to a finished true (median of %d): restored %.0f ms, cold %.0f ms (%.2fx the time)\n' "$RUNS" "$r" "$c" "$(echo "$r / $c" | bc -l)"
# A kernel built for the backend (make vm-kernel-built), when there:
# interleaved with Debian's, cold and restored.
built=${CC_MICROVM_BUILT:-$(cd "$(dirname "$0")/.." && pwd)/build/microvm-built}
if [ -f "$built/modules/builtin" ]; then
  : > "$w/t.bcold"; : > "$w/t.dcold"; : > "$w/t.brestore"
  CC_VM_SNAPSHOT_DIR="$w/snapshots-built" CC_MICROVM_DIR="$built" "${snap[@]}" -- true
  for _ in $(seq "$RUNS"); do
    a=$(now_ms); CC_MICROVM_DIR="$built" "${vm[@]}" -- true; b=$(now_ms); echo "$b - $a" | bc >> "$w/t.bcold"
    a=$(now_ms); "${vm[@]}" -- true; b=$(now_ms); echo "$b - $a" | bc >> "$w/t.dcold"
    a=$(now_ms); CC_VM_SNAPSHOT_DIR="$w/snapshots-built" CC_MICROVM_DIR="$built" "${snap[@]}" -- true; b=$(now_ms)
    echo "$b - $a" | bc >> "$w/t.brestore"
  done
  bc_=$(median < "$w/t.bcold"); dc=$(median < "$w/t.dcold"); br=$(median < "$w/t.brestore")
  printf 'kernel built for the backend (%s), median of %d: cold %.0f ms against Debian'"'"'s %.0f ms (%.2fx); restored %.0f ms\n' \
    "$(cat "$built/version")" "$RUNS" "$bc_" "$dc" "$(echo "$bc_ / $dc" | bc -l)" "$br"
else
  echo "kernel built for the backend: none in $built (make vm-kernel-built)"
fi
# Where a restored run's time goes, without tracing it (a tracer slows the
# monitor several times over): the same sandbox with no VM, the monitor's
# version probe cc-wrap makes, and run as root the private copy of the
# snapshot the monitor's uid reads; the rest is the monitor's own: its start,
# the restore, the plan, the command and the power-off.
: > "$w/t.nat0"; : > "$w/t.ver"; : > "$w/t.copy"
for _ in $(seq "$RUNS"); do
  a=$(now_ms); cc-wrap --quiet --spec "$w/spec.json" --backend native --drop-filename-denies -- true; b=$(now_ms); echo "$b - $a" | bc >> "$w/t.nat0"
  a=$(now_ms); qemu-system-x86_64 --version >/dev/null; b=$(now_ms); echo "$b - $a" | bc >> "$w/t.ver"
  a=$(now_ms); cp "$w"/snapshots/*.snap "$w/copy"; b=$(now_ms); rm -f "$w/copy"; echo "$b - $a" | bc >> "$w/t.copy"
done
n0=$(median < "$w/t.nat0"); v0=$(median < "$w/t.ver"); c0=$(median < "$w/t.copy")
[ "$(id -u)" -eq 0 ] || c0=0
printf 'a restored run, by part (medians of %d): the sandbox without a VM %.0f ms; the monitor'"'"'s version probe %.0f ms; the snapshot'"'"'s private copy (root only) %.0f ms; the monitor (start, restore, plan, command, power-off) the remaining %.0f ms\n' \
  "$RUNS" "$n0" "$v0" "$c0" "$(echo "$r - $n0 - $v0 - $c0" | bc -l)"

: > "$w/t.vm"; : > "$w/t.native"; : > "$w/t.guest"
for _ in $(seq "$RUNS"); do
  a=$(now_ms); "${vm[@]}" -- true; b=$(now_ms); echo "$b - $a" | bc >> "$w/t.vm"
  a=$(now_ms); "${native[@]}" -- true; b=$(now_ms); echo "$b - $a" | bc >> "$w/t.native"
  "${vm[@]}" -- cat /proc/uptime | awk '{print $1 * 1000}' >> "$w/t.guest"
done
printf 'cold boot (median of %d): cc-wrap --backend microvm --vm-boot cold --vm-accel %s -- true %.0f ms; native %.0f ms; guest kernel start to the command (guest /proc/uptime) %.0f ms\n' \
  "$RUNS" "$ACCEL" "$(median < "$w/t.vm")" "$(median < "$w/t.native")" "$(median < "$w/t.guest")"

# 2. Memory: the monitor's VmRSS while `sleep` idles in the guest.
"${vm[@]}" -- sleep 8 & wrap=$!
rss=""
for _ in $(seq 150); do
  sleep 0.1
  q=$(ps -eo pid=,comm= | awk '$2 ~ /^qemu-system/ {print $1}' | while read -r p; do
        a=$p; while [ "$a" -gt 1 ]; do [ "$a" = "$wrap" ] && { echo "$p"; break; }; a=$(awk '{print $4}' "/proc/$a/stat" 2>/dev/null || echo 1); done
      done | head -n1)
  if [ -n "$q" ]; then sleep 4; rss=$(awk '/^VmRSS/ {print $2}' "/proc/$q/status"); break; fi
done
wait "$wrap" || true
[ -n "$rss" ] && printf 'memory: the VM monitor (guest %s MiB) resident while the guest idles: %.0f MiB\n' 256 "$(echo "$rss/1024" | bc -l)"

# A script timed inside (so boot is left out), RUNS interleaved rounds in the
# (restored) VM and native: its lines in $w/NAME.vm and $w/NAME.native.
inside() {
  : > "$w/$1.vm"; : > "$w/$1.native"
  for _ in $(seq "$RUNS"); do
    "${snap[@]}" -- sh -c "$2" >> "$w/$1.vm"
    "${native[@]}" -- sh -c "$2" >> "$w/$1.native"
  done
}

# 3. Shared-workdir I/O.
inside io 's=$(date +%s%N); for i in $(seq 300); do echo data > t$i.o; done; cat t*.o >/dev/null; rm -f t*.o; m=$(date +%s%N); git status --porcelain >/dev/null; e=$(date +%s%N); echo $(( (m-s)/1000000 )) $(( (e-m)/1000000 ))'
printf 'workdir I/O (median of %d): 300 files create+read+remove: microvm %s ms, native %s ms; git status (300 files): microvm %s ms, native %s ms\n' \
  "$RUNS" "$(awk '{print $1}' "$w/io.vm" | median)" "$(awk '{print $1}' "$w/io.native" | median)" \
  "$(awk '{print $2}' "$w/io.vm" | median)" "$(awk '{print $2}' "$w/io.native" | median)"

# 4. 50 MB read through the share against native.
head -c $((50 * 1024 * 1024)) /dev/urandom > "$w/work/big.bin"
[ "$(id -u)" -eq 0 ] && chown 65534:65534 "$w/work/big.bin"
inside rd 's=$(date +%s%N); cat big.bin > /dev/null; e=$(date +%s%N); echo $(( (e-s)/1000000 ))'
v=$(median < "$w/rd.vm"); n=$(median < "$w/rd.native")
printf '50 MB read (median of %d, second read: the host page cache is warm): microvm %s ms (%.0f MB/s), native %s ms (%.0f MB/s)\n' \
  "$RUNS" "$v" "$(echo "50 * 1000 / ($v + 0.5)" | bc -l)" "$n" "$(echo "50 * 1000 / ($n + 0.5)" | bc -l)"
