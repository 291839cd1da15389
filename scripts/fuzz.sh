#!/usr/bin/env bash
# Fuzzes the loaders (from_bytes, FilterView, bare Cereal archives) of every filter kind
# under AddressSanitizer and UndefinedBehaviorSanitizer, each target for a bounded time
# (SEGBLOOM_FUZZ_SECONDS, default 19: 76 s in all over 4 targets), seeded with the golden blobs of
# tests/data and the inputs of tests/fuzz/regressions (blobs that once failed a target's own
# checks). Fails on the first crash; the crashing input is left in build-fuzz/ and
# must become a regression test (tests/test_serialization.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=build-fuzz
seconds=${SEGBLOOM_FUZZ_SECONDS:-19}
source scripts/setup-build.sh
setup_build "$dir" clang -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false -Dtests=false \
  -Dbenchmarks=false
ninja -C "$dir" -j "$(nproc)" tests/fuzz/fuzz_from_bytes_scalable tests/fuzz/fuzz_from_bytes_counting \
  tests/fuzz/fuzz_from_bytes_leveldb tests/fuzz/fuzz_from_bytes_transition

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$PWD/tests/fuzz/ubsan.supp
export ASAN_OPTIONS=detect_leaks=1
for kind in scalable counting leveldb transition; do
  corpus="$dir/corpus/$kind"
  mkdir -p "$corpus"
  echo "== fuzz_from_bytes_$kind: ${seconds} s"
  log="$dir/fuzz_from_bytes_$kind.log"
  if ! (cd "$dir" && "tests/fuzz/fuzz_from_bytes_$kind" -max_total_time="$seconds" \
          -rss_limit_mb=2048 -print_final_stats=1 "corpus/$kind" ../tests/data \
          ../tests/fuzz/regressions) >"$log" 2>&1; then
    cat "$log"
    echo "fuzz: fuzz_from_bytes_$kind failed; its input is in $dir (crash-*, leak-*, timeout-*)" >&2
    exit 1
  fi
  grep -E "^(Done|stat::number_of_executed_units)" "$log" || tail -n 3 "$log"
done
echo "fuzz: every target ran ${seconds} s without a crash"
