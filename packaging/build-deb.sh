#!/usr/bin/env bash
# `make deb`: build a real binary .deb with dpkg-buildpackage from a clean
# export of the tracked tree (so local build directories never leak in).
# The package lands in packaging/out/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/cc-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/cc"
# Tracked files, including uncommitted edits, without build trees.
(cd "$root" && git ls-files -z --cached --others --exclude-standard) |
  (cd "$root" && xargs -0 cp --parents -t "$work/cc" 2>/dev/null || true)
echo "make deb: building in $work/cc (dpkg-buildpackage -b; each step below, the whole log on failure)"
# Progress: dpkg-buildpackage's and debhelper's steps and ninja's [n/N]
# counter, as they happen; everything goes to the log.
set +e
(cd "$work/cc" && dpkg-buildpackage -us -uc -b 2>&1) | tee "$work/build.log" |
  grep --line-buffered -E '^(dpkg-buildpackage: info:|   dh_[a-z_]+|\[[0-9]+/[0-9]+\] )' |
  sed -u -E 's/^\[([0-9]+\/[0-9]+)\] .* -o ([^ ]+).*$/  [\1] \2/; s/^\[([0-9]+\/[0-9]+)\] .*$/  [\1] (another step)/; s/^/make deb: /'
built=${PIPESTATUS[0]}
set -e
if [ "$built" != 0 ] || ! ls "$work"/cc_*.deb >/dev/null 2>&1; then
  tail -n 40 "$work/build.log" >&2
  echo "make deb: dpkg-buildpackage failed (log above)" >&2
  exit 1
fi
# The package as dpkg will see it: the operator's policy is a conffile
# (kept across upgrades, asked about when changed), the shipped default and
# the helpers are where the installed tools look.
deb=$(ls "$work"/cc_*.deb | head -n1)
contents=$(dpkg-deb -c "$deb")
conffiles=$(dpkg-deb -I "$deb" conffiles 2>/dev/null || true)
bad=0
for f in ./etc/cc/policy.json ./usr/share/cc/policy/default.json ./usr/libexec/cc/cc-vm-kernel ./usr/libexec/cc/cc-wrap-init; do
  grep -q " $f\$" <<<"$contents" || { echo "make deb: the package has no $f" >&2; bad=1; }
done
grep -qx /etc/cc/policy.json <<<"$conffiles" || { echo "make deb: /etc/cc/policy.json is not a conffile (conffiles: ${conffiles:-none})" >&2; bad=1; }
[ "$bad" = 0 ] || exit 1
echo "make deb: checked: /etc/cc/policy.json is a conffile; the default policy and the helpers are in place"
mkdir -p "$root/packaging/out"
cp "$work"/cc_*.deb "$root/packaging/out/"
ls "$root"/packaging/out/cc_*.deb
