#!/usr/bin/env bash
# cc-probe and cc-wrap inside a real, rootful Podman container, the agent
# server's user being 65534 (no image is pulled: --rootfs over a directory
# assembled here, the host's /usr and /etc read-only). Under Podman's
# defaults cc-probe names what refuses the sandbox and the setting that
# lifts it, and cc-wrap starts nothing; with the documented settings (the
# default seccomp profile adapted by cc-probe --container-seccomp, and
# unmask=ALL) cc-wrap runs the command under its layers, and a write that
# succeeds in the same container without cc-wrap is refused.
# Root only (rootful Podman); skipped (77) with the reason where Podman is
# not installed or cannot start a container on this host.
set -u
bin=${CC_BIN_DIR:?} data=${CC_DATA_DIR:?}
[ "$(id -u)" = 0 ] || { echo "skipped: a rootful Podman container needs root"; exit 77; }
command -v podman >/dev/null || { echo "skipped: podman is not installed (make deps test installs it)"; exit 77; }
base=/usr/share/containers/seccomp.json
[ -r "$base" ] || { echo "skipped: no $base (Podman's default seccomp profile, package containers-common)"; exit 77; }

w=$(mktemp -d /tmp/cc-podman.XXXXXX)
chmod 0755 "$w"
trap 'rm -rf "$w"' EXIT
pass=0 fail=0
ok() { if eval "$1"; then pass=$((pass + 1)); else echo "FAIL: $2"; fail=$((fail + 1)); fi; }

# The container's root: the host's /usr and /etc are bound read-only over
# these; the tools, their data and an empty configuration directory are
# copied in (the build tree may not be readable by uid 65534).
root=$w/rootfs
mkdir -p "$root"/{usr,etc,proc,sys,dev,tmp,run,root,var/tmp,cc/bin,cc/etc,work/ws}
for l in bin lib lib64 sbin; do ln -s "usr/$l" "$root/$l"; done
chmod 1777 "$root/tmp"
for t in cc-probe cc-wrap cc-egress; do cp "$bin/cmd/$t/$t" "$root/cc/bin/"; done
cp "$bin/cmd/cc-wrap/cc-wrap-init" "$root/cc/bin/"
cp -r "$data" "$root/cc/share"
chmod -R a+rX "$root/cc"
chown 65534:65534 "$root/work" "$root/work/ws"
"$bin/cmd/cc-probe/cc-probe" --container-seccomp "$base" > "$w/cc-seccomp.json" || { echo "FAIL: --container-seccomp"; exit 1; }
printf '%s\n' '{"sessionId": "s1", "workspaceId": "ws", "guestWorkdir": "/work/ws",' \
  ' "bindMounts": [{"hostPath": "/work/ws"}], "egressAllowlist": []}' > "$root/cc/spec.json"
chmod 0644 "$root/cc/spec.json"

common=(--log-level=error run --rm --ulimit nofile=4096:4096 --ulimit nproc=4096:4096
        -v /usr:/usr:ro -v /etc:/etc:ro --workdir /work/ws
        -e CC_DATA_DIR=/cc/share -e CC_CONFIG_DIR=/cc/etc -e PATH=/cc/bin:/usr/bin:/bin)
# The OCI runtime that starts a container here: Podman's default (crun), else
# runc with its own tmpfs on /sys/fs/cgroup (crun refuses hybrid cgroups, and
# runc cannot mount them inside this machine's container). Said either way.
runtime=()
if out=$(timeout 60 podman "${common[@]}" --rootfs "$root" /bin/true 2>&1); then
  echo "note: Podman's default OCI runtime starts containers here"
elif command -v runc >/dev/null &&
     out2=$(timeout 60 podman --runtime runc "${common[@]}" --mount type=tmpfs,destination=/sys/fs/cgroup --rootfs "$root" /bin/true 2>&1); then
  runtime=(--runtime runc)
  common+=(--mount type=tmpfs,destination=/sys/fs/cgroup)
  echo "note: runc with a tmpfs on /sys/fs/cgroup (the default runtime: ${out//$'\n'/ })"
else
  echo "skipped: Podman cannot start a container on this host: ${out//$'\n'/ } ${out2:-}"
  exit 77
fi
pod() { timeout 120 podman "${runtime[@]}" "${common[@]}" --user 65534:65534 "$@"; }
pod_root() { timeout 120 podman "${runtime[@]}" "${common[@]}" "$@"; }
documented=(--security-opt "seccomp=$w/cc-seccomp.json" --security-opt unmask=ALL)

# The attack, in the documented container without cc-wrap: uid 65534 writes
# outside the workspace (a file the host will run or read later).
rm -f "$root/work/planted"
out=$(pod "${documented[@]}" --rootfs "$root" sh -c 'echo planted > /work/planted; echo rc=$?' 2>&1)
ok '[ "$out" = "rc=0" ] && [ "$(cat "$root/work/planted")" = planted ]' "without cc-wrap the write lands ($out)"
rm -f "$root/work/planted"

# Podman's defaults: the namespaces are allowed, the host name is not, and
# then the masked /proc; cc-probe names both fixes, cc-wrap starts nothing.
out=$(pod --rootfs "$root" cc-probe --diagnose --json 2>&1); rc=$?
bw=$(printf '%s' "$out" | python3 -c 'import json,sys; c={x["name"]:x for x in json.load(sys.stdin)["diagnostics"]["checks"]}; print(c["bwrap"]["status"]); print(c["bwrap"]["detail"]); print(c["bwrap"]["hint"]); print(c["confinement"]["detail"])' 2>&1)
ok '[ $rc = 1 ]' "defaults: cc-probe --diagnose exits 1 ($rc)"
ok '[ "$(sed -n 1p <<<"$bw")" = fail ]' "defaults: the bwrap check fails ($bw)"
ok '[ "$(sed -n 2p <<<"$bw")" = "bwrap exited 1: bwrap: Can'"'"'t set hostname to cc-sandbox: Operation not permitted" ]' "defaults: the refusal named ($bw)"
ok '[[ "$(sed -n 3p <<<"$bw")" == "inside podman; a seccomp filter (Seccomp: 2); masked /proc ("*"no CAP_SYS_ADMIN stops it: a seccomp profile that allows the sandbox'"'"'s sethostname: cc-probe --container-seccomp DEFAULT.json > cc-seccomp.json"*"then docker/podman run --security-opt seccomp=cc-seccomp.json; and then podman run --security-opt unmask=ALL" ]]' "defaults: the hint gives both settings ($bw)"
ok '[[ "$(sed -n 4p <<<"$bw")" == "inside podman; a seccomp filter (Seccomp: 2); masked /proc"* ]]' "defaults: the confinement read ($bw)"
out=$(pod --rootfs "$root" cc-wrap --spec /cc/spec.json -- sh -c 'echo ran > /work/ws/ran' 2>&1); rc=$?
# (bubblewrap's own status 1, or 125 when cc-wrap's proxy set-up found the
# sandbox already gone: which comes first is a race; nothing runs either way.)
ok '[[ $rc = 1 || $rc = 125 ]] && [[ "$out" == *"bwrap: Can'"'"'t set hostname to cc-sandbox: Operation not permitted"* ]] && [ ! -e "$root/work/ws/ran" ]' "defaults: cc-wrap runs nothing ($rc: $out)"

# The seccomp profile alone: now the masked /proc, and only its setting.
out=$(pod --security-opt "seccomp=$w/cc-seccomp.json" --rootfs "$root" cc-probe --diagnose --json 2>&1); rc=$?
bw=$(printf '%s' "$out" | python3 -c 'import json,sys; c={x["name"]:x for x in json.load(sys.stdin)["diagnostics"]["checks"]}; print(c["bwrap"]["detail"]); print(c["bwrap"]["hint"])' 2>&1)
ok '[ $rc = 1 ] && [ "$(sed -n 1p <<<"$bw")" = "bwrap exited 1: bwrap: Can'"'"'t mount proc on /newroot/proc: Operation not permitted" ]' "profile only: the masked /proc refuses ($rc: $bw)"
ok '[[ "$(sed -n 2p <<<"$bw")" == *" stops it: podman run --security-opt unmask=ALL" ]]' "profile only: its fix ($bw)"

# The documented settings: every required check passes, and cc-wrap runs the
# command under its layers; the write that landed above is refused.
out=$(pod "${documented[@]}" --rootfs "$root" cc-probe --diagnose 2>&1); rc=$?
ok '[ $rc = 0 ] && [[ "$out" == *"backend native: every required check passed"* ]]' "documented: cc-probe passes ($rc: $out)"
# (stdout and stderr apart: the two streams reach the test as two pipes.)
out=$(pod "${documented[@]}" --rootfs "$root" cc-wrap --quiet --spec /cc/spec.json -- \
      sh -c 'echo hello > note.txt; cat note.txt; grep "^Seccomp:" /proc/self/status; echo planted > /work/planted; echo rc=$?' 2>"$w/err"); rc=$?
err=$(cat "$w/err")
ok '[ $rc = 0 ]' "documented: cc-wrap exits with the command's status ($rc: $out $err)"
ok '[ "$(cat "$root/work/ws/note.txt" 2>/dev/null)" = hello ]' "documented: the workspace is written ($out $err)"
ok '[ "$out" = $'"'"'hello\nSeccomp:\t2\nrc=2'"'"' ]' "documented: the command runs under a filter, the write fails ($out)"
ok '[[ "$err" == *"sh: 1: cannot create /work/planted: Permission denied"* ]] && [ ! -e "$root/work/planted" ]' "documented: the write outside the workspace is refused ($err)"

# The agent server as the container's root (no CAP_SYS_ADMIN, no
# CAP_SYS_PTRACE): the sandbox runs as the workspace's owner, and cc-wrap
# still makes the proxy listeners in its namespaces (as that uid).
out=$(pod_root "${documented[@]}" --rootfs "$root" cc-wrap --quiet --spec /cc/spec.json -- \
      sh -c 'echo from-root > note2.txt; cat /proc/self/status | grep "^Uid:"' 2>&1); rc=$?
ok '[ $rc = 0 ] && [ "$(cat "$root/work/ws/note2.txt" 2>/dev/null)" = from-root ]' "container root: cc-wrap runs the command ($rc: $out)"
ok '[ "$(stat -c %u "$root/work/ws/note2.txt" 2>/dev/null)" = 65534 ]' "container root: as the workspace's owner ($out)"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
