#!/usr/bin/env python3
"""Ratios to LevelDB taken within each process, for hosts too noisy for one run's medians.

On some shared VMs a process runs in a fast or a slow mode for its whole life (its memory
placement), and spells of load last minutes, so two rows of one `scripts/bench.sh` run can
differ by 1.7x with the same code. Here each of N processes runs segbloom's and LevelDB's
rows for 10^6 keys at p = 1 % (and the floors), repetitions shuffled; each ratio
LevelDB / segbloom is taken within one process, and the table gives the median of the N
ratios with their range, beside the median times.

With --concurrent, the same for the concurrent filter's scaling instead: each process runs
the 1-thread and 2-thread rows of bench_concurrent.cpp for one number of keys (10^6 and
10^7 in turn, N processes each), shuffled, with BM_machine_scaling (two threads that share
nothing) and BM_shared_writes (locked ORs into one shared array), and each ratio 2 threads / 1 thread (items per second) is taken within that
process. Pairing removes the differences between processes, not the
host's changes over the seconds between two rows: a ratio above 2x means the 1-thread row
was slowed, and BM_machine_scaling's row shows how far the host moved such ratios.

Usage: scripts/bench_paired.py [--processes N] [--bench PATH] [--concurrent]
  (default 8 processes of build-bench/bench/segbloom_bench: run scripts/bench.sh once first
  to build it; about 25 s a process; with --concurrent 2N processes of 20-40 s)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from bench_table import row_name

OPS = ["insert", "insert_batched", "lookup_positive", "lookup_negative",
       "lookup_positive_batched", "lookup_negative_batched"]
FILTER = ("^BM_(segbloom|segbloom-blocked|leveldb)_(insert|lookup).*/(u64|str16)/1000000/10000$"
          "|^BM_floor_.*1000000")


# op: the row's name before its layout tag ("-blocked") and after it.
CONCURRENT_OPS = {"insert": ("BM_concurrent", "_insert"),
                  "insert_many": ("BM_concurrent_batched", "_insert"),
                  "lookup_positive": ("BM_concurrent", "_lookup_positive"),
                  "lookup_negative": ("BM_concurrent", "_lookup_negative")}
CONCURRENT_FILTER = ("^BM_concurrent(_batched)?(-blocked)?_insert/u64/{items}/10000/"
                     "|^BM_concurrent(-blocked)?_lookup_(positive|negative)/u64/{items}/10000/"
                     "|^BM_machine_scaling/|^BM_shared_writes/")


ERRORS = "_errors"  # run_process's key for the rows that failed in a process, with their errors


def run_process(bench, out, bench_filter=FILTER):
    subprocess.run([bench, f"--benchmark_filter={bench_filter}", "--benchmark_repetitions=3",
                    "--benchmark_report_aggregates_only=true",
                    "--benchmark_enable_random_interleaving=true", "--benchmark_min_time=0.1",
                    f"--benchmark_out={out}", "--benchmark_out_format=json"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times = {}
    for b in json.load(open(out))["benchmarks"]:
        if b.get("aggregate_name") == "median" and "items_per_second" in b:
            times[row_name(b)] = 1e9 / b["items_per_second"]
        elif b.get("error_occurred"):  # no median: missing from this process, with the reason
            times.setdefault(ERRORS, {})[row_name(b)] = b.get("error_message", "error")
    return times


def names_of(run):
    return {n for n in run if n != ERRORS}


def report_missing(runs, names, label=""):
    """A line per row of `names` that some of `runs` (processes) lack: which processes, and
    the error where the process reported one. Rows no process has are listed too."""
    lines = []
    for name in sorted(names):
        lacking = [i for i, r in enumerate(runs) if name not in r]
        if not lacking:
            continue
        errors = sorted({runs[i].get(ERRORS, {}).get(name) for i in lacking} - {None})
        lines.append(f"missing: {name}{label} in {len(lacking)} of {len(runs)} processes "
                     f"(#{', #'.join(str(i) for i in lacking)})"
                     + (f"; error: {'; '.join(errors)}" if errors else ""))
    if lines:
        print()
        for line in lines:
            print(line)


def span(values, fmt):
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}-{fmt.format(max(values))}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--bench", default="build-bench/bench/segbloom_bench")
    parser.add_argument("--concurrent", action="store_true",
                        help="the concurrent filter's 2-thread / 1-thread scaling instead")
    args = parser.parse_args()
    if not os.access(args.bench, os.X_OK):
        sys.exit(f"bench_paired.py: {args.bench} not found; run scripts/bench.sh once to build it")
    if args.concurrent:
        concurrent_scaling(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        runs = [run_process(args.bench, os.path.join(tmp, f"p{i}.json")) for i in range(args.processes)]

    print(f"Medians of {len(runs)} processes, [lowest-highest]; ns per operation; "
          "ratio = LevelDB / segbloom within each process; processes: how many had both rows "
          "(the others are listed as missing below).\n")
    print("| op | keys | impl | segbloom ns | leveldb ns | leveldb/segbloom | processes |")
    print("|---|---|---|---:|---:|---:|---:|")
    expected = set()
    for op in OPS:
        for keys in ["u64", "str16"]:
            peer = f"BM_leveldb_{op}/{keys}/1000000/10000"
            expected.add(peer)
            for impl in ["segbloom", "segbloom-blocked"]:
                own = f"BM_{impl}_{op}/{keys}/1000000/10000"
                expected.add(own)
                paired = [r for r in runs if own in r and peer in r]
                if not paired:
                    print(f"| {op} | {keys} | {impl} | - | - | - | 0 of {len(runs)} |")
                    continue
                print(f"| {op} | {keys} | {impl} | {span([r[own] for r in paired], '{:.1f}')} | "
                      f"{span([r[peer] for r in paired], '{:.1f}')} | "
                      f"{span([r[peer] / r[own] for r in paired], '{:.2f}x')} | {len(paired)} of {len(runs)} |")
    print("\n| floor | ns | processes |")
    print("|---|---:|---:|")
    floors = {n for r in runs for n in names_of(r) if n.startswith("BM_floor_")}
    floors |= {n for r in runs for n in r.get(ERRORS, {}) if n.startswith("BM_floor_")}
    for name in sorted(floors):
        have = [r[name] for r in runs if name in r]
        print(f"| {name} | {span(have, '{:.1f}') if have else '-'} | {len(have)} of {len(runs)} |")
    report_missing(runs, expected | floors)


def concurrent_scaling(args):
    """One table row per operation, layout and size: 2-thread / 1-thread, paired by process."""
    sizes = [1000000, 10000000]
    runs = {items: [] for items in sizes}
    with tempfile.TemporaryDirectory() as tmp:
        # One size per process (the lookup rows' data is built once per size; 10^7 keys take
        # seconds), the sizes in turn, so that both columns span the same stretch of time.
        for i in range(args.processes):
            for items in sizes:
                runs[items].append(run_process(args.bench, os.path.join(tmp, f"c{items}-{i}.json"),
                                               CONCURRENT_FILTER.format(items=items)))

    print(f"Medians of {args.processes} processes per size, [lowest-highest]; M operations/s "
          "(all threads, real time); scaling = 2 threads / 1 thread within each process; "
          "processes >= 1.6x: of those that had both rows (the others are listed as missing below).\n")
    print("| op | layout | keys | 1 thread | 2 threads | scaling | processes >= 1.6x |")
    print("|---|---|---|---:|---:|---:|---:|")
    expected = {items: set() for items in sizes}
    for op, (prefix, suffix) in CONCURRENT_OPS.items():
        for layout, infix in [("classic", ""), ("blocked", "-blocked")]:
            for items in sizes:
                name = f"{prefix}{infix}{suffix}/u64/{items}/10000/real_time/threads:"
                expected[items] |= {name + "1", name + "2"}
                print_scaling(f"{op} | {layout} | 10^{len(str(items)) - 1}", name, runs[items])
    # The machine at the moment (BM_machine_scaling: nothing shared), from every process.
    print_scaling("nothing shared (`BM_machine_scaling`) | |", "BM_machine_scaling/real_time/threads:",
                  [r for items in sizes for r in runs[items]])
    # Locked ORs into random lines of one shared 1.28 MB array, without and with a look ahead.
    for ahead in (0, 16):
        print_scaling(f"locked `OR`s into a shared 1.28 MB array, {ahead} keys ahead (`BM_shared_writes`) | |",
                      f"BM_shared_writes/ahead:{ahead}/real_time/threads:", [r for items in sizes for r in runs[items]])
    controls = {f"BM_machine_scaling/real_time/threads:{n}" for n in (1, 2)}
    controls |= {f"BM_shared_writes/ahead:{a}/real_time/threads:{n}" for a in (0, 16) for n in (1, 2)}
    for items in sizes:
        report_missing(runs[items], expected[items] | controls, f" (the processes of 10^{len(str(items)) - 1} keys)")


def print_scaling(label, name, runs):
    """A table row for the runs (processes) that have both name + "1" and name + "2"."""
    paired = [r for r in runs if name + "1" in r and name + "2" in r]
    if not paired:
        print(f"| {label} | - | - | - | 0 of 0 (none of {len(runs)} processes had both rows) |")
        return
    # run_process gives ns per item over all threads: M ops/s = 1000 / ns.
    one = [1000 / r[name + "1"] for r in paired]
    two = [1000 / r[name + "2"] for r in paired]
    scaling = [t / o for o, t in zip(one, two)]
    print(f"| {label} | {span(one, '{:.1f}')} | {span(two, '{:.1f}')} | {span(scaling, '{:.2f}x')} | "
          f"{sum(x >= 1.6 for x in scaling)} of {len(scaling)}"
          f"{'' if len(paired) == len(runs) else f' ({len(runs)} processes)'} |")


if __name__ == "__main__":
    main()
