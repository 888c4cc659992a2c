#!/usr/bin/env bash
# Install the Debian packages a make target needs (only those).
# Idempotent: quiet when everything is present. apt-get as root, sudo otherwise.
set -euo pipefail

# What each make target needs (usage: deps.sh [build|demo|test|bench|deb|fuzz|microvm|lint|all]):
build=(
  g++ meson ninja-build pkg-config
  libcli11-dev nlohmann-json3-dev libcurl4-openssl-dev libc-ares-dev libidn2-dev
  libunistring-dev  # libunistring.a: cc-egress links libidn2 statically
  libboost-dev libboost-filesystem-dev libssl-dev zlib1g-dev
  libseccomp-dev  # cc-wrap: the seccomp layer and the write supervisor
  libicu-dev      # cc-pushgate: ref names as a reader sees them (confusables)
  musl-tools      # cc-wrap-init: a static musl binary (its start is on every launch)
  catch2          # the test binaries are part of the default build
)
# What the tools run at run time (and `make install` users need).
runtime=(bubblewrap socat git)
# The demo's scenes: a local web server and upstream, JSON on the command
# line, a reflink filesystem for cc-worktree.
demo=(curl jq lighttpd python3 xfsprogs util-linux)
# The test tiers: real peers (TLS servers, netcat, ssh), network namespaces,
# schema and man-page checks, and a real container runtime (Podman, with runc
# beside crun for hosts whose cgroups crun refuses).
test=(openssl netcat-openbsd openssh-client iproute2 procps man-db groff-base python3-jsonschema podman runc)
# The microvm backend: the VM monitor (qemu -M microvm). The guest kernel is
# not installed: scripts/microvm-kernel.sh extracts Debian's into build/microvm.
microvm=(qemu-system-x86)
# A guest kernel built for the backend (make vm-kernel-built): the source and
# what building it takes. Not part of make test (five minutes on two CPUs).
vmkernel=(linux-source-6.1 build-essential flex bison bc libelf-dev)
# Benchmarks: the peers measured against, and the timers.
bench=(libbenchmark-dev tinyproxy microsocks hyperfine strace time)
deb=(dpkg-dev debhelper fakeroot)
fuzz=(clang)
# make format and make lint (.clang-format, .clang-tidy).
lint=(clang-format clang-tidy)

case ${1:-all} in
  build) packages=("${build[@]}") ;;
  demo|install) packages=("${build[@]}" "${runtime[@]}" "${demo[@]}") ;;
  test) packages=("${build[@]}" "${runtime[@]}" "${demo[@]}" "${test[@]}" "${microvm[@]}") ;;
  bench) packages=("${build[@]}" "${runtime[@]}" "${demo[@]}" "${bench[@]}" "${microvm[@]}") ;;
  microvm) packages=("${microvm[@]}") ;;
  vmkernel) packages=("${microvm[@]}" "${vmkernel[@]}") ;;
  format) packages=(clang-format) ;;
  lint) packages=("${build[@]}" "${lint[@]}") ;;
  deb) packages=("${build[@]}" "${deb[@]}") ;;
  fuzz|asan) packages=("${build[@]}" "${runtime[@]}" "${demo[@]}" "${test[@]}" "${fuzz[@]}") ;;
  all) packages=("${build[@]}" "${runtime[@]}" "${demo[@]}" "${test[@]}" "${microvm[@]}" "${bench[@]}" "${deb[@]}" "${fuzz[@]}" "${lint[@]}") ;;
  *) echo "deps.sh: unknown target '$1' (build, demo, test, bench, deb, fuzz, microvm, vmkernel, format, lint or all)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then as_root=(); else as_root=(sudo); fi
echo "cc deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq >/dev/null
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
