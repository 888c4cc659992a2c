#!/usr/bin/env bash
# Build one static C program with musl-gcc (Debian's musl-tools), for
# cc-wrap-init. musl's wrapper hides /usr/include, so the kernel's UAPI
# headers (linux/, asm/, asm-generic/) are offered through a directory of
# links made here, and nothing else of glibc's headers can leak in.
# usage: musl-static.sh MUSL_GCC OUT WORKDIR -- CFLAGS... SOURCES...
set -euo pipefail
musl_gcc=$1 out=$2 work=$3
shift 3
[ "${1:-}" = "--" ] && shift
multiarch=$("$musl_gcc" -print-multiarch 2>/dev/null || true)
asm=/usr/include/${multiarch:-x86_64-linux-gnu}/asm
[ -d "$asm" ] || asm=/usr/include/asm
for d in /usr/include/linux /usr/include/asm-generic "$asm"; do
  [ -d "$d" ] || { echo "musl-static.sh: kernel headers missing: $d (linux-libc-dev)" >&2; exit 1; }
done
mkdir -p "$work/uapi"
ln -sfn /usr/include/linux "$work/uapi/linux"
ln -sfn /usr/include/asm-generic "$work/uapi/asm-generic"
ln -sfn "$asm" "$work/uapi/asm"
exec "$musl_gcc" -static -isystem "$work/uapi" "$@" -o "$out"
