#!/usr/bin/env python3
"""Ratios to LevelDB taken within each process, for hosts too noisy for one run's medians.

On some shared VMs a process runs in a fast or a slow mode for its whole life (its memory
placement), and spells of load last minutes, so two rows of one `scripts/bench.sh` run can
differ by 1.7x with the same code. Here each of N processes runs segbloom's and LevelDB's
rows for 10^6 keys at p = 1 % (and the floors), repetitions shuffled; each ratio
LevelDB / segbloom is taken within one process, and the table gives the median of the N
ratios with their range, beside the median times.

Usage: scripts/bench_paired.py [--processes N] [--bench PATH]
  (default 8 processes of build-bench/bench/segbloom_bench: run scripts/bench.sh once first
  to build it; about 25 s a process)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

OPS = ["insert", "insert_batched", "lookup_positive", "lookup_negative",
       "lookup_positive_batched", "lookup_negative_batched"]
FILTER = ("^BM_(segbloom|segbloom-blocked|leveldb)_(insert|lookup).*/(u64|str16)/1000000/10000$"
          "|^BM_floor_.*1000000")


def run_process(bench, out):
    subprocess.run([bench, f"--benchmark_filter={FILTER}", "--benchmark_repetitions=3",
                    "--benchmark_report_aggregates_only=true",
                    "--benchmark_enable_random_interleaving=true", "--benchmark_min_time=0.1",
                    f"--benchmark_out={out}", "--benchmark_out_format=json"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times = {}
    for b in json.load(open(out))["benchmarks"]:
        if b.get("aggregate_name") == "median" and "items_per_second" in b:
            times[b["run_name"]] = 1e9 / b["items_per_second"]
    return times


def span(values, fmt):
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}-{fmt.format(max(values))}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--bench", default="build-bench/bench/segbloom_bench")
    args = parser.parse_args()
    if not os.access(args.bench, os.X_OK):
        sys.exit(f"bench_paired.py: {args.bench} not found; run scripts/bench.sh once to build it")
    with tempfile.TemporaryDirectory() as tmp:
        runs = [run_process(args.bench, os.path.join(tmp, f"p{i}.json")) for i in range(args.processes)]

    print(f"Medians of {len(runs)} processes, [lowest-highest]; ns per operation; "
          "ratio = LevelDB / segbloom within each process.\n")
    print("| op | keys | impl | segbloom ns | leveldb ns | leveldb/segbloom |")
    print("|---|---|---|---:|---:|---:|")
    for op in OPS:
        for keys in ["u64", "str16"]:
            peer = f"BM_leveldb_{op}/{keys}/1000000/10000"
            for impl in ["segbloom", "segbloom-blocked"]:
                own = f"BM_{impl}_{op}/{keys}/1000000/10000"
                paired = [r for r in runs if own in r and peer in r]
                if not paired:
                    continue
                print(f"| {op} | {keys} | {impl} | {span([r[own] for r in paired], '{:.1f}')} | "
                      f"{span([r[peer] for r in paired], '{:.1f}')} | "
                      f"{span([r[peer] / r[own] for r in paired], '{:.2f}x')} |")
    print("\n| floor | ns |")
    print("|---|---:|")
    for name in sorted({n for r in runs for n in r if n.startswith("BM_floor_")}):
        print(f"| {name} | {span([r[name] for r in runs if name in r], '{:.1f}')} |")


if __name__ == "__main__":
    main()
