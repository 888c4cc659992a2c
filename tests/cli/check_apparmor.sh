#!/usr/bin/env bash
# cc-apparmor-setup: the bubblewrap AppArmor profile goes in only where the
# restriction is on and no other profile attaches to /usr/bin/bwrap; install
# loads it, remove takes back only what install put there. Stand-ins for the
# sysctl, /etc/apparmor.d, /var/lib/cc and apparmor_parser. Then the profile
# itself: bwrap keeps the namespace and its capabilities, its children are
# stacked with a profile that refuses every capability.
set -u
src=${CC_SOURCE_DIR:?}
setup="$src/share/cc/apparmor/cc-apparmor-setup"
profile="$src/share/cc/apparmor/cc-bwrap"
w=$(mktemp -d /tmp/cc-apparmor.XXXXXX)
trap 'rm -rf "$w"' EXIT
pass=0 fail=0
ok() { if eval "$1"; then pass=$((pass + 1)); else echo "FAIL: $2"; fail=$((fail + 1)); fi; }

mkdir -p "$w/apparmor.d" "$w/state"
printf '#!/bin/sh\necho "$*" >> %s/parser.log\n' "$w" > "$w/parser"
chmod +x "$w/parser"
export CC_APPARMOR_SYSCTL="$w/sysctl" CC_APPARMOR_DIR="$w/apparmor.d" CC_APPARMOR_STATE="$w/state" CC_APPARMOR_PARSER="$w/parser"

# The restriction off: nothing to do.
echo 0 > "$w/sysctl"
out=$("$setup" check); rc=$?
ok '[ $rc = 0 ] && [ "$out" = "cc-apparmor-setup: AppArmor does not restrict unprivileged user namespaces here: no profile needed" ]' "restriction off: check ($rc: $out)"
"$setup" install >/dev/null
ok '[ ! -e "$w/apparmor.d/cc-bwrap" ] && [ ! -e "$w/parser.log" ]' "restriction off: install put nothing in place"

# The restriction on, no profile for bwrap: check says what install does; install does it.
echo 1 > "$w/sysctl"
out=$("$setup" check); rc=$?
ok '[ $rc = 1 ] && [[ "$out" == "cc-apparmor-setup: would install $profile as $w/apparmor.d/cc-bwrap and load it"* ]]' "restriction on: check ($rc: $out)"
out=$("$setup" install); rc=$?
ok '[ $rc = 0 ] && [ "$out" = "cc-apparmor-setup: installed and loaded $w/apparmor.d/cc-bwrap" ]' "install ($rc: $out)"
ok 'cmp -s "$profile" "$w/apparmor.d/cc-bwrap" && [ "$(stat -c %a "$w/apparmor.d/cc-bwrap")" = 644 ]' "install: the profile, mode 0644"
ok '[ "$(cat "$w/parser.log")" = "-r -W $w/apparmor.d/cc-bwrap" ] && [ -e "$w/state/apparmor-cc-bwrap" ]' "install: loaded, marker kept"
out=$("$setup" check); rc=$?
ok '[ $rc = 0 ] && [ "$out" = "cc-apparmor-setup: $w/apparmor.d/cc-bwrap is in place" ]' "installed: check ($rc: $out)"

# remove: unloaded and deleted, marker gone.
: > "$w/parser.log"
out=$("$setup" remove); rc=$?
ok '[ $rc = 0 ] && [ ! -e "$w/apparmor.d/cc-bwrap" ] && [ ! -e "$w/state/apparmor-cc-bwrap" ]' "remove ($rc: $out)"
ok '[ "$(cat "$w/parser.log")" = "-R $w/apparmor.d/cc-bwrap" ]' "remove: unloaded first"

# A profile cc-bwrap someone else wrote (no marker) is not removed.
echo "# the administrator's" > "$w/apparmor.d/cc-bwrap"
"$setup" remove >/dev/null
ok '[ "$(cat "$w/apparmor.d/cc-bwrap")" = "# the administrator'"'"'s" ]' "remove leaves a profile it did not install"
rm -f "$w/apparmor.d/cc-bwrap"

# Another profile attaches to /usr/bin/bwrap (a distribution's): left to it.
printf 'abi <abi/4.0>,\nprofile bwrap /usr/bin/bwrap flags=(unconfined) {\n  userns,\n}\n' > "$w/apparmor.d/bwrap"
out=$("$setup" install); rc=$?
ok '[ $rc = 0 ] && [ "$out" = "cc-apparmor-setup: a profile for /usr/bin/bwrap is already there ($w/apparmor.d/bwrap): left to it" ]' "other profile: install ($rc: $out)"
ok '[ ! -e "$w/apparmor.d/cc-bwrap" ]' "other profile: nothing installed"
rm -f "$w/apparmor.d/bwrap"
printf '/usr/bin/bwrap flags=(unconfined) {\n  userns,\n}\n' > "$w/apparmor.d/usr.bin.bwrap"
out=$("$setup" check); rc=$?
ok '[ $rc = 0 ] && [[ "$out" == *"already there ($w/apparmor.d/usr.bin.bwrap)"* ]]' "other profile by path only: check ($rc: $out)"
rm -f "$w/apparmor.d/usr.bin.bwrap"

# Bad use: exit 2.
"$setup" frobnicate 2>/dev/null; rc=$?
ok '[ $rc = 2 ]' "unknown command: exit 2 ($rc)"

# The profile: bwrap (and only bwrap) gets user namespaces and capabilities;
# what it runs is stacked with cc-bwrap-child, which denies every capability.
ok 'grep -qE "^profile cc-bwrap /usr/bin/bwrap flags=\(attach_disconnected,mediate_deleted\) \{$" "$profile"' "profile attaches to /usr/bin/bwrap"
ok '[ "$(grep -c "^  allow userns,$" "$profile")" = 2 ] && grep -q "^  allow capability,$" "$profile"' "bwrap: userns and capabilities"
ok 'grep -q "^  allow px /\*\* -> cc-bwrap//&cc-bwrap-child,$" "$profile"' "bwrap: its children stacked with cc-bwrap-child"
ok 'sed -n "/^profile cc-bwrap-child/,/^}/p" "$profile" | grep -q "^  audit deny capability,$"' "cc-bwrap-child: every capability denied"
ok '! sed -n "/^profile cc-bwrap-child/,/^}/p" "$profile" | grep -q "allow capability"' "cc-bwrap-child: no capability allowed"
ok 'sed -n "/^profile cc-bwrap-child/,/^}/p" "$profile" | grep -q "^  allow pix /\*\* -> &cc-bwrap-child,$"' "cc-bwrap-child: what it runs stays stacked"
# Where apparmor_parser knows AppArmor 4's rules (abi/4.0), it must compile.
if command -v apparmor_parser >/dev/null && [ -e /etc/apparmor.d/abi/4.0 ]; then
  ok 'apparmor_parser -Q -K "$profile" >/dev/null 2>&1' "apparmor_parser compiles the profile"
else
  echo "note: no apparmor_parser with AppArmor 4 rules here: the profile is checked by its text only"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
