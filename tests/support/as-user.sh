#!/usr/bin/env bash
# Run a test binary as an unprivileged user, because real users are not root.
# As root: copy the built tools, the test binary and share/cc into a directory
# that user can read (the build tree may sit under a 0700 home), then run the
# binary there with setpriv as uid/gid 65534 (nobody). As a normal user: just
# run it. The Catch2 summary file is written back where `make test` reads it.
set -euo pipefail
test_bin=$1; shift
if [ "$(id -u)" -ne 0 ]; then exec "$test_bin" "$@"; fi

stage=$(mktemp -d /tmp/cc-as-user.XXXXXX)
trap 'rm -rf "$stage"' EXIT
chmod 0755 "$stage"
mkdir -p "$stage/bin" "$stage/summary"
for tool in "$CC_BIN_DIR"/cmd/cc-*/cc-*; do
  [ -x "$tool" ] && [ -f "$tool" ] && cp "$tool" "$stage/bin/"
done
for tool in "$CC_BIN_DIR"/tests/sandbox/cc-test-* "$CC_BIN_DIR"/tests/probe/cc-test-*; do  # test probes (cc-test-syscall, ...)
  [ -x "$tool" ] && [ -f "$tool" ] && cp "$tool" "$stage/bin/"
done
cp "$test_bin" "$stage/test"
cp -r "$CC_DATA_DIR" "$stage/share"
chmod -R a+rX "$stage"
chmod 0777 "$stage/summary"

export CC_BIN_DIR="$stage/bin" CC_DATA_DIR="$stage/share" CC_TEST_SUMMARY_DIR_REAL="$CC_TEST_SUMMARY_DIR"
export CC_TEST_SUMMARY_DIR="$stage/summary" CC_AS_USER=1 HOME="$stage/home"
mkdir -p "$HOME" && chown 65534:65534 "$HOME"
cd "$stage"
rc=0
setpriv --reuid=65534 --regid=65534 --clear-groups --reset-env -- \
  env CC_BIN_DIR="$CC_BIN_DIR" CC_DATA_DIR="$CC_DATA_DIR" CC_TEST_SUMMARY_DIR="$CC_TEST_SUMMARY_DIR" \
      CC_TEST_ID="$CC_TEST_ID" CC_AS_USER=1 CC_SOURCE_DIR="${CC_SOURCE_DIR:-}" HOME="$HOME" \
      CC_MICROVM_DIR="${CC_MICROVM_DIR:-}" \
      PATH=/usr/local/bin:/usr/bin:/bin TMPDIR=/tmp \
  "$stage/test" "$@" || rc=$?
mkdir -p "$CC_TEST_SUMMARY_DIR_REAL"
cp "$stage/summary/"* "$CC_TEST_SUMMARY_DIR_REAL/" 2>/dev/null || true
exit $rc
