#!/usr/bin/env bash
# cc-wrap, whole process, on this host (127.0.0.1 only, bounded):
#  1. `cc-wrap -- true` against bare bwrap with the same binds (proxies handed
#     in with --egress), and with cc-wrap starting its own cc-egress;
#  2. a download from inside the sandbox through the proxy against the same
#     download made directly on the host (lighttpd on 127.0.0.1);
#  3. 100 MB of child output through --events, and cc-wrap's own peak RSS.
# Medians; RUNS (default 60) interleaved rounds for startup, 5 for the rest.
set -euo pipefail
RUNS=${RUNS:-60}
command -v cc-wrap >/dev/null || { echo "skipped: cc-wrap not on PATH"; exit 0; }
bwrap --ro-bind / / --unshare-all true 2>/dev/null || { echo "skipped: bubblewrap cannot create namespaces here"; exit 0; }
w=$(mktemp -d /tmp/cc-bench-wrap.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$w"; }
trap cleanup EXIT
mkdir -p "$w/work" "$w/rt" "$w/eg" "$w/site"
# Run by root, cc-wrap starts the sandbox as an unprivileged uid, which must
# pass through $w (mktemp made it 0700).
chmod 755 "$w"
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

web=$(port)
cat > "$w/spec.json" <<JSON
{"sessionId": "bench", "workspaceId": "ws", "bindMounts": [{"hostPath": "$w/work"}],
 "guestWorkdir": "$w/work", "egressAllowlist": ["127.0.0.1:*"]}
JSON

# Proxies handed in: a running cc-egress (fd inbox), or, without cc-egress,
# stand-in Unix sockets (then cc-wrap wires the socat bridge and says so).
if command -v cc-egress >/dev/null; then
  mkfifo "$w/eg.in"
  sleep 3600 > "$w/eg.in" & pids+=($!)
  cc-egress --spec "$w/spec.json" --unix-dir "$w/eg" --fd-inbox "$w/eg/inbox.sock" --exit-with-stdin \
    < "$w/eg.in" > "$w/eg.out" 2>/dev/null & pids+=($!)
  for _ in $(seq 100); do [ -s "$w/eg.out" ] && break; sleep 0.05; done
  head -n1 "$w/eg.out" | jq -c --arg inbox "$w/eg/inbox.sock" '. + (if has("fdInbox") then {} else {fdInbox: $inbox} end)' > "$w/ready.json"
  have_egress=1
else
  python3 - "$w/eg" <<'PY' & pids+=($!)
import socket, sys, time
ss = []
for n in ("http", "socks"):
    s = socket.socket(socket.AF_UNIX); s.bind(f"{sys.argv[1]}/{n}.sock"); s.listen(); ss.append(s)
time.sleep(3600)
PY
  for _ in $(seq 100); do [ -S "$w/eg/socks.sock" ] && break; sleep 0.05; done
  echo "{\"event\":\"ready\",\"httpUnix\":\"$w/eg/http.sock\",\"socksUnix\":\"$w/eg/socks.sock\"}" > "$w/ready.json"
  have_egress=0
  echo "note: cc-egress not on PATH: proxies are stand-ins, transport is the socat bridge, no download figures"
fi

# 1. Startup. Bare bwrap gets cc-wrap's own argv up to `--` (mask files made
# here, no status fd, no block fd, no seccomp filter) and runs true directly:
# cc-wrap's figure includes compiling and installing the filter, the switch
# from root and the init step that applies Landlock.
cc-wrap --spec "$w/spec.json" --egress "$w/ready.json" --drop-filename-denies --print -- true 2>/dev/null > "$w/plan.json"
transport=$(jq -r .proxy.transport "$w/plan.json")
mkdir -m 0 "$w/rt/mask-dir"; install -m 0 /dev/null "$w/rt/mask-file"
bare=$(jq -r --arg rt "$w/rt" '.runtimeDir as $planned | .argv | .[: index("--")] | map(if startswith($planned) then $rt + .[($planned | length):] else . end)
        | (index("--json-status-fd")) as $i | del(.[$i, $i+1])
        | (index("--block-fd")) as $b | (if $b then del(.[$b, $b+1]) else . end)
        | (index("--seccomp")) as $s | (if $s then del(.[$s, $s+1]) else . end) | join(" ")' "$w/plan.json")
# Interleaved (bare, handed, own, bare, ...) so load drift falls on all alike.
here=$(cd "$(dirname "$0")" && pwd)
wrapbin=$(command -v cc-wrap)
cmds=("bare=$bare -- /bin/true"
      "handed=$wrapbin --spec $w/spec.json --egress $w/ready.json --drop-filename-denies -- /bin/true"
      "std=$wrapbin --spec $w/spec.json --egress $w/ready.json -- /bin/true")
[ "$have_egress" = 1 ] && cmds+=("own=$wrapbin --spec $w/spec.json --drop-filename-denies -- /bin/true")
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$here/interleave.py" "$RUNS" "${cmds[@]}" > "$w/t1.json"
ms() { jq -r --arg n "$2" '.[$n].median_ms' "$1"; }
b=$(ms "$w/t1.json" bare); h=$(ms "$w/t1.json" handed)
printf 'startup (median of %d, interleaved): bare bwrap %.1f ms; cc-wrap -- true (proxies handed in, %s) %.1f ms: overhead %.1f ms\n' \
  "$RUNS" "$b" "$transport" "$h" "$(echo "$h - $b" | bc -l)"
sd=$(ms "$w/t1.json" std)
printf 'startup with the standard policy (the write supervisor'"'"'s filter, socket and thread included): %.1f ms: overhead %.1f ms over bare bwrap\n' \
  "$sd" "$(echo "$sd - $b" | bc -l)"
if [ "$have_egress" = 1 ]; then
  o=$(ms "$w/t1.json" own)
  printf 'startup with its own cc-egress (network on): %.1f ms: overhead %.1f ms over bare bwrap\n' "$o" "$(echo "$o - $b" | bc -l)"
fi
# The same as an unprivileged user (uid 65534): bubblewrap makes a user
# namespace, and cc-wrap's listeners come from a forked helper.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && [ "$have_egress" = 1 ]; then
  nob="$(command -v setpriv) --reuid=65534 --regid=65534 --clear-groups"
  chmod 755 "$w" "$w/rt"; chmod 777 "$w/work"
  userbare=$(echo "$bare" | sed 's/--unshare-pid/--unshare-user --unshare-pid/')
  if $nob $userbare -- /bin/true 2>/dev/null && $nob "$wrapbin" --spec "$w/spec.json" --drop-filename-denies -- /bin/true 2>/dev/null; then
    python3 "$here/interleave.py" "$RUNS" "bare=HOME=/ $nob $userbare -- /bin/true" \
      "own=HOME=/ $nob $wrapbin --spec $w/spec.json --drop-filename-denies -- /bin/true" > "$w/t2.json"
    ub=$(ms "$w/t2.json" bare); uo=$(ms "$w/t2.json" own)
    printf 'as uid 65534: bare bwrap %.1f ms; cc-wrap with its own cc-egress %.1f ms: overhead %.1f ms\n' "$ub" "$uo" "$(echo "$uo - $ub" | bc -l)"
  else
    echo "as uid 65534: skipped (bubblewrap or cc-wrap cannot run as that user here)"
  fi
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# 2. Download through the proxy vs direct (lighttpd, sendfile, 256 MiB).
if [ "$have_egress" = 1 ] && command -v lighttpd >/dev/null; then
  head -c 256M /dev/zero > "$w/site/blob"
  cat > "$w/lighttpd.conf" <<CONF
server.document-root = "$w/site"
server.bind = "127.0.0.1"
server.port = $web
server.errorlog = "$w/lighttpd.err"
CONF
  lighttpd -D -f "$w/lighttpd.conf" & pids+=($!)
  sleep 0.5
  url="http://127.0.0.1:$web/blob"
  for _ in 1 2 3 4 5; do curl -s -o /dev/null -w '%{speed_download}\n' --noproxy '*' "$url"; done | median > "$w/direct"
  for _ in 1 2 3 4 5; do
    cc-wrap --spec "$w/spec.json" --egress "$w/ready.json" --drop-filename-denies -- \
      curl -s -o /dev/null -w '%{speed_download}\n' "$url" 2>/dev/null
  done | median > "$w/proxied"
  d=$(cat "$w/direct"); p=$(cat "$w/proxied")
  printf 'download 256 MiB (median of 5): direct %.0f MB/s; inside through the proxy (%s) %.0f MB/s: ratio %.2f\n' \
    "$(echo "$d/1000000" | bc -l)" "$transport" "$(echo "$p/1000000" | bc -l)" "$(echo "$p/$d" | bc -l)"
fi

# 3. 100 MB of text (log lines) through --events, and peak RSS of cc-wrap itself.
for _ in 1 2 3 4 5; do
  /usr/bin/time -f '%e %M' -o "$w/t" cc-wrap --spec "$w/spec.json" --egress "$w/ready.json" --drop-filename-denies \
    --events -- sh -c 'yes "a typical line of build output, 48 bytes long" | head -c 100000000' > /dev/null 2>"$w/err"
  cat "$w/t"
done > "$w/ev"
secs=$(awk '{print $1}' "$w/ev" | median); rss=$(awk '{print $2}' "$w/ev" | median)
printf -- '--events 100 MB (median of 5): %.2f s = %.0f MB/s; cc-wrap peak RSS %.1f MiB\n' \
  "$secs" "$(echo "100/$secs" | bc -l)" "$(echo "$rss/1024" | bc -l)"

# 4. The write supervisor on and off: extracting a 20,000-file archive (every
# file a notified open), and a read-heavy walk of a source tree (read-only
# opens never leave the kernel). Interleaved, median of 5. The extraction is
# timed alone: the previous tree is removed and written back before each run,
# outside the timing. The same with the removal inside the sandbox (20,000
# more notified calls, unlinkat) is the second figure.
python3 - "$w/gen" <<'PY'
import os, sys
root = sys.argv[1]
for d in range(200):
    os.makedirs(f"{root}/d{d}", exist_ok=True)
    for f in range(100):
        with open(f"{root}/d{d}/f{f}.c", "w") as fh:
            fh.write("int f%d(void) { return %d; }\n" % (f, d) * 20)
PY
tar -C "$w" -cf "$w/work/t20k.tar" gen
cp -r "$w/gen" "$w/work/src"
search='grep -rc return src'
command -v rg >/dev/null && search='rg -c return src'
printf '%s\n' "cd $w/work && mkdir x && tar -C x -xf t20k.tar" > "$w/work/extract.sh"
printf '%s\n' "cd $w/work && rm -rf x && mkdir x && tar -C x -xf t20k.tar" > "$w/work/rm-extract.sh"
printf '%s\n' "cd $w/work && $search >/dev/null" > "$w/work/search.sh"
chmod -R a+rwX "$w/work"
if [ "$(id -u)" = 0 ]; then chown -R 65534:65534 "$w/work"; fi
python3 "$here/interleave.py" --before "rm -rf $w/work/x && sync" 5 \
  "x_on=$wrapbin --spec $w/spec.json --egress $w/ready.json -- sh $w/work/extract.sh" \
  "x_off=$wrapbin --spec $w/spec.json --egress $w/ready.json --no-write-supervisor --drop-filename-denies -- sh $w/work/extract.sh" \
  > "$w/t4.json"
python3 "$here/interleave.py" 5 \
  "x_on=$wrapbin --spec $w/spec.json --egress $w/ready.json -- sh $w/work/rm-extract.sh" \
  "x_off=$wrapbin --spec $w/spec.json --egress $w/ready.json --no-write-supervisor --drop-filename-denies -- sh $w/work/rm-extract.sh" \
  > "$w/t4r.json"
# The reads on their own, once the extractions' writeback is done: run
# right after an extraction, the first search of a round paid for flushing
# its 20,000 files.
rm -rf "$w/work/x"; sync
python3 "$here/interleave.py" 9 \
  "r_on=$wrapbin --spec $w/spec.json --egress $w/ready.json -- sh $w/work/search.sh" \
  "r_off=$wrapbin --spec $w/spec.json --egress $w/ready.json --no-write-supervisor --drop-filename-denies -- sh $w/work/search.sh" \
  > "$w/t5.json"
xon=$(ms "$w/t4.json" x_on); xoff=$(ms "$w/t4.json" x_off); ron=$(ms "$w/t5.json" r_on); roff=$(ms "$w/t5.json" r_off)
rxon=$(ms "$w/t4r.json" x_on); rxoff=$(ms "$w/t4r.json" x_off)
printf 'write supervisor, extract 20,000 files (median of 5): on %.0f ms, off %.0f ms: ratio %.2f\n' "$xon" "$xoff" "$(echo "$xon/$xoff" | bc -l)"
printf 'write supervisor, remove the previous tree and extract 20,000 files (median of 5): on %.0f ms, off %.0f ms: ratio %.2f\n' "$rxon" "$rxoff" "$(echo "$rxon/$rxoff" | bc -l)"
printf 'write supervisor, %s over 20,000 files (median of 9): on %.0f ms, off %.0f ms: ratio %.2f\n' "${search%% *}" "$ron" "$roff" "$(echo "$ron/$roff" | bc -l)"

# 5. One supervised call on its own: a tight loop of creating opens (each
# a notified call: judged, performed by the hand, the descriptor injected)
# against the same loop with the supervisor off and with no sandbox at all.
cat > "$w/work/opens.py" <<'PY'
import os, sys, time
os.chdir(sys.argv[1]); os.mkdir("o"); n = 5000
t = time.perf_counter_ns()
for i in range(n):
    os.close(os.open(f"o/f{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
print((time.perf_counter_ns() - t) / n / 1000)
PY
chmod a+r "$w/work/opens.py"
per_open() {  # $1: on, off or bare
  rm -rf "$w/work/o"
  case "$1" in
    on) "$wrapbin" --spec "$w/spec.json" --egress "$w/ready.json" -- python3 "$w/work/opens.py" "$w/work" 2>/dev/null ;;
    off) "$wrapbin" --spec "$w/spec.json" --egress "$w/ready.json" --no-write-supervisor --drop-filename-denies -- python3 "$w/work/opens.py" "$w/work" 2>/dev/null ;;
    bare) python3 "$w/work/opens.py" "$w/work" ;;
  esac
}
: > "$w/po"
for _ in 1 2 3 4 5; do for m in on off bare; do echo "$m $(per_open $m)" >> "$w/po"; done; done
rm -rf "$w/work/o"
pon=$(awk '$1=="on"{print $2}' "$w/po" | median); poff=$(awk '$1=="off"{print $2}' "$w/po" | median); pbare=$(awk '$1=="bare"{print $2}' "$w/po" | median)
printf 'one creating open in a loop (median of 5): supervised %.1f us, supervisor off %.1f us, unsandboxed %.1f us: %.1f us per supervised call\n' \
  "$pon" "$poff" "$pbare" "$(echo "$pon - $poff" | bc -l)"
