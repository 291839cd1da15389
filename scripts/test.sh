#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what is missing,
# builds and runs every test, then again under AddressSanitizer and
# UndefinedBehaviorSanitizer, the concurrent tests under ThreadSanitizer and built with
# clang, then runs the fuzz targets for a bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/install-deps.sh

jobs=$(nproc)
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1

# The Redis store tests ([store][redis]) run against a real redis-server on a Unix socket
# in a temporary directory, stopped when this script exits, however it exits.
source scripts/local-redis.sh
start_local_redis segbloom-redis
export SEGBLOOM_REDIS_SOCKET="$redis_socket"

source scripts/setup-build.sh
suites_passed=0
run_suite() {  # run_suite BUILD_DIR [meson setup options...]
  local dir=$1
  shift
  setup_build "$dir" gcc "$@"
  ninja -C "$dir" -j "$jobs"
  # `meson test` passes (exit 0, "No tests defined.") when there are none.
  if [[ $(meson introspect --tests "$dir") == "[]" ]]; then
    echo "segbloom: $dir defines no tests" >&2
    exit 1
  fi
  meson test -C "$dir" --print-errorlogs --num-processes 1 --no-rebuild
  suites_passed=$((suites_passed + 1))
}

echo "== segbloom: tests (debugoptimized)"
run_suite build-test -Dbenchmarks=true

echo "== segbloom: tests under AddressSanitizer + UndefinedBehaviorSanitizer"
run_suite build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=false

echo "== segbloom: concurrent tests under ThreadSanitizer"
# Only the test binary is built, and only the [concurrent] tests and the memory cache's,
# [memory-cache] (its shards' locks, loads, write-backs and removals off them), run (1-2 minutes).
# (-w NoTests: Catch2 fails a run where a tag matches no test, instead of passing it.)
setup_build build-tsan gcc -Db_sanitize=thread -Db_lundef=false -Dbenchmarks=false
ninja -C build-tsan -j "$jobs" tests/segbloom_tests
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/segbloom_tests -w NoTests "[concurrent],[memory-cache]"
suites_passed=$((suites_passed + 1))

echo "== segbloom: concurrent and blocked tests built with clang"
# The kernels' inline assembly (hardware transactions, vector loads) meets a second
# compiler's register allocation: only the test binary, its SIMD- and RTM-dependent tags
# (3-4 minutes).
setup_build build-clang clang -Dbenchmarks=false
ninja -C build-clang -j "$jobs" tests/segbloom_tests
build-clang/tests/segbloom_tests -w NoTests "[concurrent],[blocked]"
SEGBLOOM_SIMD=avx2 build-clang/tests/segbloom_tests -w NoTests "[concurrent],[blocked]"
SEGBLOOM_RTM=off build-clang/tests/segbloom_tests -w NoTests "[concurrent]"
suites_passed=$((suites_passed + 1))

echo "== segbloom: fuzzing the loaders"
bash scripts/fuzz.sh  # with bash: fuzz.sh without its execute bit runs too, a missing one fails
suites_passed=$((suites_passed + 1))

echo "segbloom: ${suites_passed} passed, 0 failed"
