#!/usr/bin/env bash
# Runs segbloom's benchmarks (beside LevelDB's built-in Bloom filter and libbloom) in a
# release build and prints a Markdown table of median ns/op, ratios to each peer,
# false-positive rates and issue 8's targets (met / not met); writes it to
# bench/results/latest.md too, and the plot of lookup time against filter size to
# bench/results/lookup_vs_size.svg (scripts/bench_plot.py), each only when made in full.
# A full run with a target's row missing prints "missing: ..." and fails.
#
# Usage: scripts/bench.sh [benchmark_filter_regex]      (default: every benchmark)
#   e.g. scripts/bench.sh 'lookup_.*/u64/'
# A filtered run writes to bench/results/filtered/ instead (latest.md, JSON, plot), so
# the full run's files stay as they were.
# Environment: BENCH_REPETITIONS (default 5), BENCH_LARGE_REPETITIONS (default 3: the
# 10^7- and 10^8-item cases, whose every run takes seconds; 10^8 needs about 5 GB),
# BENCH_CPP_ARGS (compiler flags for segbloom's side, e.g. -march=x86-64-v4: the build
# goes to build-bench-<flags> and the results to bench/results/<flags>/; the peers are
# Debian's libraries either way), BENCH_BUILD_DIR (default build-bench, or the one just
# named), BENCH_MIN_TIME (CPU seconds per run,
# default 0.1: a lookup run still makes millions of lookups), BENCH_INTERLEAVE (default 1:
# the repetitions of the benchmarks up to 10^6 items run in one shuffled order, and
# those of each 10^7- or 10^8-key data set in another, so a spell of load from another
# job lands on a few repetitions of many rows, which their medians drop, rather than on
# every repetition of the few rows that happen to run then; 0 runs each benchmark's
# repetitions back to back). Google Benchmark counts
# CPU time, so a busy machine stretches the wall time: with 0.25 s the whole run took
# 21 minutes on 2 cores at load average 10-12.
set -euo pipefail
cd "$(dirname "$0")/.."

filter=${1:-.}
repetitions=${BENCH_REPETITIONS:-5}
large_repetitions=${BENCH_LARGE_REPETITIONS:-3}
min_time=${BENCH_MIN_TIME:-0.1}
interleave=${BENCH_INTERLEAVE:-1}
cpp_args=${BENCH_CPP_ARGS:-}
tag=$(printf '%s' "$cpp_args" | tr -c 'A-Za-z0-9.-' '-' | sed 's/^-*//; s/-*$//')
dir=${BENCH_BUILD_DIR:-build-bench${tag:+-$tag}}
results=bench/results${tag:+/$tag}

scripts/install-deps.sh

# Build output goes to stderr: stdout carries only the table.
# Every option the results depend on, given explicitly and applied with `meson configure`,
# so that a build directory set up earlier with others (a debug build, tests, a sanitizer,
# LTO) gets these: until 2 Dec 2026 only the first four were passed, to `meson setup
# --reconfigure`, which in Meson 1.0 keeps the old values of b_* options and *_link_args
# (and -Dcpp_args= would not clear earlier cpp_args).
# setup_build (scripts/setup-build.sh) also sets up again a directory made with another
# compiler: the table names g++'s version.
setup_args=(-Dbuildtype=release -Dtests=false -Dbenchmarks=true "-Dcpp_args=$cpp_args"
  -Db_ndebug=if-release -Db_sanitize=none -Db_lto=false -Db_pgo=off -Db_coverage=false
  -Dfuzz=false -Ddefault_library=shared -Dcpp_std=c++20 -Dcpp_link_args=)
source scripts/setup-build.sh
setup_build "$dir" gcc "${setup_args[@]}" >&2
ninja -C "$dir" -j "$(nproc)" >&2
bench=$dir/bench/segbloom_bench

# The selected benchmarks, split: 10^7- and 10^8-item cases get fewer repetitions.
mapfile -t names < <("$bench" --benchmark_list_tests --benchmark_filter="$filter")
if ((${#names[@]} == 0)); then
  echo "bench.sh: no benchmark matches '$filter'" >&2
  exit 1
fi
# The large ones are grouped by data set ("u64/10000000", ...; "other"), each group run on
# its own, so that shuffling never makes a data set of 10^7-10^8 keys be built twice.
# BM_memory_limit runs in the group of BM_large_blocked ("limit"), in the same process and
# repetitions: bench_table.py divides the one by the other only within one JSON file. (Until
# 2 Dec 2026 the limit ran with the regular benchmarks, another process.)
regular=()
declare -A large=()
for name in "${names[@]}"; do
  if [[ $name =~ /((u64|str16)/(10000000|100000000))(/|$) ]]; then
    large[${BASH_REMATCH[1]}]+="$name"$'\n'
  elif [[ $name =~ ^(BM_large_|BM_memory_limit/) ]]; then
    large[limit]+="$name"$'\n'
  elif [[ $name =~ /(10000000|100000000)(/|$) ]]; then
    large[other]+="$name"$'\n'
  else
    regular+=("$name")
  fi
done

# A filtered run writes its table, JSON and plot to $results/filtered/, never over the full
# run's $results/latest.md and lookup_vs_size.svg (tracked files: a filtered run used to
# replace them with a partial table).
full=0
[[ $filter == . ]] && full=1
if ((full)); then
  out_dir=$results
else
  out_dir=$results/filtered
fi
mkdir -p "$out_dir"
((full)) || rm -f "$out_dir"/latest-*.json "$out_dir/latest.md" "$out_dir/lookup_vs_size.svg"
# The run's JSON goes to a staging directory and replaces the last run's only once the
# table is made, so that a failed run leaves latest.md and its JSON as they were.
stage=$out_dir/.run.$$
mkdir -p "$stage"
trap 'rm -rf "$stage"' EXIT
outputs=()

# run_group OUT REPETITIONS SHUFFLE NAME... : runs exactly these benchmarks (an anchored
# alternation of their names, regex characters escaped), their repetitions in shuffled
# order if SHUFFLE is 1; progress goes to stderr.
run_group() {
  local out=$1 reps=$2 shuffle=$3
  shift 3
  (($#)) || return 0
  local escaped=() name
  for name in "$@"; do
    escaped+=("$(printf '%s' "$name" | sed 's/[][\.*^$+?(){}|\\]/\\&/g')")
  done
  local regex
  regex="^($(IFS='|'; echo "${escaped[*]}"))\$"
  echo "== segbloom_bench: $# benchmarks x $reps repetitions" >&2
  "$bench" --benchmark_filter="$regex" \
    --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
    --benchmark_min_time="$min_time" \
    --benchmark_enable_random_interleaving="$( ((shuffle)) && echo true || echo false)" \
    --benchmark_format=console --benchmark_out="$out" --benchmark_out_format=json >&2
  outputs+=("$out")
}

start=$(date +%s)
run_group "$stage/latest-regular.json" "$repetitions" "$interleave" "${regular[@]+"${regular[@]}"}"
for group in $(printf '%s\n' "${!large[@]}" | sort); do
  mapfile -t group_names < <(printf '%s' "${large[$group]}")
  run_group "$stage/latest-large-${group//\//-}.json" "$large_repetitions" "$interleave" "${group_names[@]}"
done
elapsed=$(($(date +%s) - start))

# The table goes to stdout and, only when bench_table.py succeeds, to latest.md (written
# beside it, then renamed): in a full run a target row that is missing is an error.
notes=(--note "Command: \`${cpp_args:+BENCH_CPP_ARGS='$cpp_args' }scripts/bench.sh${1:+ '$1'}\` (${repetitions} repetitions, ${large_repetitions} for 10^7-10^8 items, ${min_time} s each$( ((interleave)) && echo ', in shuffled order'); ${elapsed} s in all)."
  --note "Compiler: $(c++ --version | head -n 1); flags for segbloom: -O3 ${cpp_args:-(no -march: SIMD chosen at run time)}."
  --note "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg).")
((full)) && notes+=(--full)
((full)) || notes+=(--note "A filtered run: this table, its JSON and plot are in $out_dir/; $results/latest.md and $results/lookup_vs_size.svg are the last full run's.")
table_tmp=$stage/latest.md
status=0
python3 scripts/bench_table.py "${notes[@]}" "${outputs[@]}" >"$table_tmp" || status=$?
cat "$table_tmp"
if ((status)); then
  echo "bench.sh: bench_table.py failed (exit $status; 'missing:' lines above): $out_dir/latest.md not written" >&2
  exit "$status"
fi
rm -f "$out_dir"/latest-*.json
mv "$stage"/latest-*.json "$out_dir"/
outputs=("${outputs[@]/#$stage\//$out_dir/}")
mv "$table_tmp" "$out_dir/latest.md"
echo "bench.sh: wrote $out_dir/latest.md and the JSON beside it" >&2
# bench_plot.py writes its SVG only when it has rows to plot; a filtered run may have none.
if ! python3 scripts/bench_plot.py --out "$out_dir/lookup_vs_size.svg" \
  --note "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%Y-%m-%d); medians, CPU time" \
  "${outputs[@]}" >&2; then
  if ((full)); then
    echo "bench.sh: bench_plot.py failed: $out_dir/lookup_vs_size.svg not written" >&2
    exit 1
  fi
  echo "bench.sh: no plot for this filtered run" >&2
fi
