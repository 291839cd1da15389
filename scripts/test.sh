#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what is missing,
# builds and runs every test, then again under AddressSanitizer and
# UndefinedBehaviorSanitizer, then runs the fuzz targets for a bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/install-deps.sh

jobs=$(nproc)
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1

suites_passed=0
run_suite() {  # run_suite BUILD_DIR [meson setup options...]
  local dir=$1
  shift
  if [[ -f "$dir/build.ninja" ]]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
  ninja -C "$dir" -j "$jobs"
  meson test -C "$dir" --print-errorlogs --num-processes 1 --no-rebuild
  suites_passed=$((suites_passed + 1))
}

echo "== segbloom: tests (debugoptimized)"
run_suite build-test -Dbenchmarks=true

echo "== segbloom: tests under AddressSanitizer + UndefinedBehaviorSanitizer"
run_suite build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=false

if [[ -x scripts/fuzz.sh ]]; then
  echo "== segbloom: fuzzing the loaders"
  scripts/fuzz.sh
  suites_passed=$((suites_passed + 1))
fi

echo "segbloom: ${suites_passed} passed, 0 failed"
