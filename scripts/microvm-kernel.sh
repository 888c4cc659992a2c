#!/usr/bin/env bash
# The microvm backend's guest kernel, from Debian's own package, without
# installing a kernel on the host: `apt-get download` + `dpkg-deb -x` into a
# scratch directory, then the image and the few modules the guest init loads
# are copied to DEST (default build/microvm):
#
#   DEST/vmlinuz           the kernel image as Debian ships it (a bzImage)
#   DEST/vmlinux           the same kernel uncompressed (PVH entry): preferred
#                          by cc-wrap, it saves the guest the decompression
#   DEST/version           its release (uname -r inside the guest)
#   DEST/modules/*.ko      virtio-mmio, virtio-serial, virtio-net, 9p (without
#                          their signatures and BTF when objcopy is there)
#   DEST/modules/order     one file name a line, dependencies first
#
# The flavour is linux-image-amd64 (the generic one), not -cloud-amd64: the
# cloud flavour builds no 9p at all (CONFIG_NET_9P unset), and sharing with
# virtio-9p needs no helper daemon (virtiofs needs one virtiofsd per share and
# a shared-memory backend). Both flavours build virtio-mmio and virtio as
# modules, so the initramfs carries them either way.
# Idempotent: quiet when DEST already holds the package's version.
#
# Installed as libexec/cc/cc-vm-kernel, its default DEST is the data
# directory the installed cc-wrap looks in (PREFIX/share/cc/microvm, derived
# from where it is installed): run it once, as root, after installing.
set -euo pipefail

self=$(readlink -f "$0" 2>/dev/null || echo "$0")
case $self in
  */libexec/cc/cc-vm-kernel) default_dest="${self%/libexec/cc/cc-vm-kernel}/share/cc/microvm" ;;
  */cc-vm-kernel) default_dest= ;;  # installed elsewhere: DEST must be given
  *) default_dest=build/microvm ;;
esac
build=0
case ${1:-} in
  -h|--help)
    echo "usage: $(basename "$0") [--build] [DEST]"
    echo "Fetches Debian's linux-image-amd64 (not installed on the host) and puts the guest kernel of"
    echo "cc-wrap's microvm backend in DEST (default $default_dest): vmlinuz, vmlinux, version,"
    echo "modules/. Needs apt-get, apt-cache and dpkg-deb; writing DEST may need root."
    echo "--build: instead, build a kernel for the backend from Debian's linux-source-6.1 (every"
    echo "driver the guest uses built in, no ACPI, no PCI: a cold boot in about half the time)."
    echo "Needs linux-source-6.1, gcc, make, flex, bison, bc and libelf-dev; about 5 minutes on 2 CPUs."
    exit 0 ;;
  --build) build=1; shift ;;
  -*) echo "$(basename "$0"): unknown option '$1' (usage: $(basename "$0") [--build] [DEST])" >&2; exit 2 ;;
esac
dest=${1:-$default_dest}
[ -n "$dest" ] || { echo "$(basename "$0"): give DEST (cc-wrap looks in DATADIR/cc/microvm)" >&2; exit 2; }

if [ "$build" = 1 ]; then
  # The configuration: next to this script in the source tree, or in the
  # data directory it was installed with.
  case $self in
    */libexec/cc/cc-vm-kernel) fragment="${self%/libexec/cc/cc-vm-kernel}/share/cc/microvm-kernel.config" ;;
    *) fragment="$(dirname "$self")/../share/cc/microvm-kernel.config" ;;
  esac
  [ -f "$fragment" ] || { echo "microvm-kernel.sh: no $fragment" >&2; exit 1; }
  src=${CC_LINUX_SOURCE:-$( (ls /usr/src/linux-source-*.tar.xz 2>/dev/null || true) | sort -V | tail -n1)}
  if [ -z "$src" ] || [ ! -f "$src" ]; then
    echo "microvm-kernel.sh: --build needs Debian's kernel source (apt-get install linux-source-6.1 flex bison bc libelf-dev)" >&2
    exit 1
  fi
  for tool in make gcc flex bison bc; do
    command -v "$tool" >/dev/null || { echo "microvm-kernel.sh: --build needs $tool" >&2; exit 1; }
  done
  stamp="$(sha256sum "$fragment" | cut -c1-16) $(basename "$src") $(stat -c %s "$src")"
  if [ -f "$dest/built" ] && [ "$(cat "$dest/built")" = "$stamp" ] && [ -f "$dest/vmlinux" ]; then
    exit 0
  fi
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  echo "cc microvm: building the guest kernel from $src (a few minutes)" >&2
  tar -xf "$src" -C "$scratch"
  tree=$(ls -d "$scratch"/linux-source-* | head -n1)
  out="$scratch/out"
  make -s -C "$tree" O="$out" tinyconfig >/dev/null || { echo "microvm-kernel.sh: make tinyconfig failed" >&2; exit 1; }
  "$tree/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "$fragment" >/dev/null 2>&1 ||
    { echo "microvm-kernel.sh: merging $fragment failed" >&2; exit 1; }
  # (its "override" warnings are the merge's, not news)
  make -s -C "$tree" O="$out" olddefconfig >/dev/null 2>&1 || { echo "microvm-kernel.sh: make olddefconfig failed" >&2; exit 1; }
  # Every option the fragment sets must have survived (a dependency that
  # was not met drops it quietly).
  while IFS= read -r line; do
    case $line in
      CONFIG_*=*) grep -qxF "$line" "$out/.config" || { echo "microvm-kernel.sh: $line did not take" >&2; exit 1; } ;;
      "# CONFIG_"*" is not set")
        opt=${line#\# }
        opt=${opt%% *}
        if grep -q "^$opt=y" "$out/.config"; then echo "microvm-kernel.sh: $opt is set" >&2; exit 1; fi ;;
    esac
  done < "$fragment"
  make -s -C "$tree" O="$out" -j"$(nproc)" vmlinux >/dev/null
  release=$(make -s -C "$tree" O="$out" kernelrelease)
  tmp="$dest.new"
  rm -rf "$tmp"
  mkdir -p "$tmp/modules"
  cp "$out/vmlinux" "$tmp/vmlinux"
  cp "$out/.config" "$tmp/config"
  echo "$release" > "$tmp/version"
  : > "$tmp/modules/order"
  echo "every driver the guest uses is built into this kernel (microvm-kernel.sh --build)" > "$tmp/modules/builtin"
  echo "$stamp" > "$tmp/built"
  rm -rf "$dest"
  mv "$tmp" "$dest"
  echo "cc microvm: guest kernel $release built in $dest" >&2
  exit 0
fi
flavour=${CC_MICROVM_FLAVOUR:-amd64}
want=(virtio_mmio virtio_console failover net_failover virtio_net 9pnet_virtio 9p)

for tool in apt-get apt-cache dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "microvm-kernel.sh: needs $tool (a Debian host)" >&2; exit 1; }
done
# The metapackage names the current kernel package.
meta=linux-image-$flavour
pkg=$(apt-cache depends "$meta" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n1)
if [ -z "$pkg" ]; then
  # A fresh image may have no package lists yet.
  if [ "$(id -u)" -eq 0 ]; then as_root=(); else as_root=(sudo); fi
  "${as_root[@]}" apt-get update -qq >/dev/null
  pkg=$(apt-cache depends "$meta" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n1)
fi
if [ -z "$pkg" ]; then
  echo "microvm-kernel.sh: apt-cache knows no $meta" >&2
  exit 1
fi
release=${pkg#linux-image-}
if [ -f "$dest/version" ] && [ "$(cat "$dest/version")" = "$release" ] && [ -f "$dest/vmlinuz" ] && [ -f "$dest/vmlinux" ] &&
   { [ -f "$dest/modules/stripped" ] || ! command -v objcopy >/dev/null; }; then
  exit 0
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
echo "cc microvm: fetching $pkg (guest kernel, not installed on the host)" >&2
# apt-get download writes into the current directory; as root it wants the
# directory readable by _apt, else it warns and downloads unsandboxed.
chmod 755 "$scratch"
(cd "$scratch" && apt-get download -qq "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
deb=$(ls "$scratch"/*.deb 2>/dev/null | head -n1)
[ -n "$deb" ] || { echo "microvm-kernel.sh: apt-get download $pkg gave no package" >&2; exit 1; }
dpkg-deb -x "$deb" "$scratch/x"
moddir="$scratch/x/lib/modules/$release"
[ -f "$scratch/x/boot/vmlinuz-$release" ] || { echo "microvm-kernel.sh: $pkg has no /boot/vmlinuz-$release" >&2; exit 1; }

# Each module with its dependencies first (the .modinfo "depends=" field;
# no depmod needed on the host).
declare -A path_of=() done_=()
while IFS= read -r f; do
  b=$(basename "$f"); b=${b%%.ko*}
  path_of[$b]=$f; path_of[${b//-/_}]=$f
done < <(find "$moddir/kernel" -name '*.ko*')
order=()
add() {
  local m=${1//-/_}
  [ -n "${done_[$m]:-}" ] && return
  local f=${path_of[$m]:-}
  [ -n "$f" ] || { echo "microvm-kernel.sh: $pkg has no module $m (built in?)" >&2; return; }
  local deps
  deps=$(tr '\0' '\n' < "$f" | sed -n 's/^depends=//p' | head -n1)
  local d
  for d in ${deps//,/ }; do add "$d"; done
  done_[$m]=1
  order+=("$f")
}
for m in "${want[@]}"; do add "$m"; done

tmp="$dest.new"
rm -rf "$tmp"
mkdir -p "$tmp/modules"
cp "$scratch/x/boot/vmlinuz-$release" "$tmp/vmlinuz"
cp "$scratch/x/boot/config-$release" "$tmp/config"
: > "$tmp/modules/order"
for f in "${order[@]}"; do
  case $f in
    *.ko) cp "$f" "$tmp/modules/" ;;
    *) echo "microvm-kernel.sh: $f is compressed; the guest init loads plain .ko files" >&2; exit 1 ;;
  esac
  basename "$f" >> "$tmp/modules/order"
done
# At load the guest kernel hashes each module for its signature check and
# parses its BTF type information: under TCG about half a second for these
# twelve. Neither is of use in the guest (nothing there enforces module
# signatures: no Secure Boot, no lockdown; nothing there reads BTF), so both
# are removed when objcopy is there (binutils): objcopy rewrites the ELF
# without the .BTF sections and without the signature appended after it.
# The guest kernel then notes the unsigned modules as a taint, quietly.
if command -v objcopy >/dev/null; then
  for f in "$tmp"/modules/*.ko; do
    objcopy --remove-section=.BTF --remove-section=.BTF.ext "$f" "$f.stripped"
    mv "$f.stripped" "$f"
  done
  echo "signature and .BTF removed by objcopy" > "$tmp/modules/stripped"
fi
# The image is a bzImage whose payload is xz-compressed: under TCG the guest
# spends seconds decompressing it. The kernel also has a PVH entry point
# (CONFIG_PVH), so the monitor can load the uncompressed ELF directly:
# vmlinux, next to vmlinuz, is what cc-wrap uses when it is there.
if grep -q '^CONFIG_PVH=y' "$tmp/config"; then
  off=$(grep -abo $'\xfd7zXZ\x00' "$tmp/vmlinuz" | head -n1 | cut -d: -f1 || true)
  if [ -n "$off" ] && command -v xz >/dev/null; then
    tail -c +"$((off + 1))" "$tmp/vmlinuz" | xz -dc 2>/dev/null > "$tmp/vmlinux" || true
    # Trailing data after the xz stream makes xz complain; the ELF is whole.
    if [ "$(head -c 4 "$tmp/vmlinux" | od -An -tx1 | tr -d ' ')" != 7f454c46 ]; then rm -f "$tmp/vmlinux"; fi
  fi
fi
echo "$release" > "$tmp/version"
rm -rf "$dest"
mv "$tmp" "$dest"
echo "cc microvm: guest kernel $release in $dest ($(wc -l < "$dest/modules/order") modules)" >&2
