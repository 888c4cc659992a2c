#!/usr/bin/env bash
# Fuzz smoke: each libFuzzer target is built (clang, build-fuzz next to the
# build directory, as `make fuzz` makes it) and run for a few seconds on its
# corpus, so a target that stops compiling, or crashes at once, fails here
# rather than the next time someone fuzzes. Without clang++, or without a
# fuzz build and CC_FUZZ_SMOKE=1, it is skipped (exit 77, with the reason);
# CC_FUZZ_SMOKE=0 skips it on purpose.
set -u
src=${CC_SOURCE_DIR:?}
build=${CC_BIN_DIR:?}
seconds=${CC_FUZZ_SECONDS:-3}
if [ "${CC_FUZZ_SMOKE:-1}" = 0 ]; then echo "skipped: CC_FUZZ_SMOKE=0"; exit 77; fi
if ! command -v clang++ >/dev/null; then echo "skipped: clang++ is not installed (make deps fuzz installs it)"; exit 77; fi
fuzz="$build-fuzz"
# Building every target with clang and the sanitizers takes minutes on a
# small machine: done here only where the fuzz build exists (make fuzz) or
# when asked (CC_FUZZ_SMOKE=1). The corpus replay (fuzz-replay-*) runs always.
if [ ! -f "$fuzz/build.ninja" ] && [ "${CC_FUZZ_SMOKE:-}" != 1 ]; then
  echo "skipped: no clang fuzz build yet (make fuzz once, or CC_FUZZ_SMOKE=1); the corpus replay ran with the ordinary build"
  exit 77
fi
if [ ! -f "$fuzz/build.ninja" ]; then
  CXX=clang++ meson setup "$fuzz" "$src" -Dfuzz=true -Dtests=false -Db_lundef=false >/dev/null || {
    echo "FAIL: meson setup of $fuzz with clang++"; exit 1; }
fi
if ! ninja -C "$fuzz" > "$fuzz/smoke-build.log" 2>&1; then
  grep -E "error|FAILED" "$fuzz/smoke-build.log" | head -20
  echo "FAIL: the fuzz targets do not build (log: $fuzz/smoke-build.log)"
  exit 1
fi
fail=0 ran=0
for t in "$fuzz"/fuzz/fuzz_*; do
  [ -x "$t" ] && [ -f "$t" ] || continue
  name=$(basename "$t" | sed 's/^fuzz_//')
  corpus="$src/fuzz/corpus/$name"
  work=$(mktemp -d /tmp/cc-fuzz-smoke.XXXXXX)
  args=(-max_total_time="$seconds" -rss_limit_mb=2048 -artifact_prefix="$work/")
  [ -f "$src/fuzz/$name.dict" ] && args+=(-dict="$src/fuzz/$name.dict")
  # A copy of the corpus: what the run adds stays out of the source tree.
  [ -d "$corpus" ] && cp -r "$corpus/." "$work/"
  if "$t" "${args[@]}" "$work" > "$work.log" 2>&1; then
    echo "ok   $(basename "$t"): $(grep -Eo 'DONE +cov: [0-9]+' "$work.log" | tail -1) (${seconds} s)"
    ran=$((ran + 1))
  else
    echo "FAIL $(basename "$t"): $(grep -E 'ERROR|SUMMARY|deadly signal' "$work.log" | head -3)"
    fail=$((fail + 1))
  fi
  rm -rf "$work" "$work.log"
done
[ "$ran" -gt 0 ] || [ "$fail" -gt 0 ] || { echo "FAIL: no fuzz target was built"; exit 1; }
echo "$ran passed, $fail failed"
[ "$fail" = 0 ]
