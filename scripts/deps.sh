#!/usr/bin/env bash
# Install every Debian package cc needs to build, test, benchmark and package.
# Idempotent: quiet when everything is present. apt-get as root, sudo otherwise.
set -euo pipefail

packages=(
  # build
  g++ meson ninja-build pkg-config
  libcli11-dev nlohmann-json3-dev libcurl4-openssl-dev libc-ares-dev libidn2-dev
  libunistring-dev  # libunistring.a: cc-egress links libidn2 statically
  libboost-dev libboost-filesystem-dev libssl-dev zlib1g-dev
  catch2 libbenchmark-dev
  # sandbox backend
  bubblewrap socat
  libseccomp-dev  # cc-wrap: the seccomp layer and the write supervisor
  # real peers used by tests, demo and benchmarks
  git curl jq lighttpd openssl netcat-openbsd openssh-client
  xfsprogs util-linux iproute2 man-db groff-base
  clang python3 python3-jsonschema procps hyperfine strace
  time  # /usr/bin/time: peak RSS in bench/20-classify.sh
  # benchmarks only (bench/30-egress.sh compares cc-egress with them; no test uses them)
  tinyproxy microsocks
  # packaging
  dpkg-dev debhelper fakeroot
)

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
