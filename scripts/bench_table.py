#!/usr/bin/env python3
"""Turns Google Benchmark JSON output of segbloom_bench into Markdown tables.

Usage: bench_table.py [--full] [--note TEXT]... RESULT.json...

Benchmarks named BM_<impl>_<op>/<keys>/<items>/<p in ppm> (bench/bench_filter.cpp) with
impl in segbloom, leveldb, libbloom go into a speed table (median ns/op side by side,
ratio = peer time / segbloom time, so > 1 means segbloom is faster; segbloom and
segbloom-blocked are both compared with each peer) and an accuracy
table (bits per key, probes, measured false-positive rate). Every other benchmark is
listed in a generic section: name, median time and its counters.

ns/op is 1e9 / items_per_second (CPU time; an insert row is the time to build a whole
filter divided by its items) when a benchmark reports items, its CPU time otherwise: the
median aggregate of its repetitions where there is one, else its one run, and the tables
say which.

Issue 8's targets: a row a target needs and does not have (not selected, failed, or the
memory limit not in the same JSON file, i.e. process, as the 10^8-key rows) is a line
"missing: ..." (also on stderr); with --full (a run of every benchmark) any missing row
makes the exit status 1.
"""

import argparse
import json
import math
import re
import sys
from datetime import datetime, timezone

CORE = re.compile(
    r"^BM_(?P<impl>segbloom|segbloom-blocked|leveldb|libbloom)_(?P<op>insert(?:_batched)?|"
    r"lookup_positive(?:_batched)?|lookup_negative(?:_batched)?)"
    r"/(?P<keys>[a-z0-9]+)/(?P<items>\d+)/(?P<ppm>\d+)$"
)
OWN = ["segbloom", "segbloom-blocked"]  # the classic layout and Options::layout = blocked
PEERS = ["leveldb", "libbloom"]
IMPLS = OWN + PEERS
OPS = ["insert", "insert_batched", "lookup_positive", "lookup_negative",
       "lookup_positive_batched", "lookup_negative_batched"]
STANDARD_FIELDS = {
    "name", "family_index", "per_family_instance_index", "run_name", "run_type",
    "repetitions", "repetition_index", "threads", "aggregate_name", "aggregate_unit",
    "real_time", "cpu_time", "time_unit", "iterations", "error_occurred", "error_message",
    "label", "items_per_second", "bytes_per_second",
}
TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def load(paths):
    """All runs, each with "_file" (the file it came from: one process), and the context of
    the first file."""
    runs, context = [], {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        context = context or data.get("context", {})
        for run in data.get("benchmarks", []):
            run["_file"] = path
            runs.append(run)
    return runs, context


def row_name(run):
    """A run's name, without the "/iterations:N" Google Benchmark inserts for a fixed count
    (bench_concurrent.cpp's insert rows), so that a row keeps one name across runs."""
    return re.sub(r"/iterations:\d+", "", run.get("run_name", run["name"]))


def medians(runs):
    """One row per benchmark: its median aggregate, else its error, else its first run;
    "_stat" says which ("median", "error", "single")."""
    rank = {}
    chosen = {}
    for run in runs:
        name = row_name(run)
        if run.get("run_type") == "aggregate":
            if run.get("aggregate_name") != "median":
                continue
            score = 3
        else:
            score = 2 if run.get("error_occurred") else 1
        if score > rank.get(name, 0):
            rank[name] = score
            chosen[name] = run
    for name, run in chosen.items():
        run["_stat"] = {3: "median", 2: "error", 1: "single"}[rank[name]]
    return chosen


def statistic(rows, marked=True):
    """What the rows' times are: medians of how many repetitions, or single runs (marked:
    the table marks those with mark())."""
    reps = sorted({int(r.get("repetitions", 0)) for r in rows if r.get("_stat") == "median"})
    singles = sum(r.get("_stat") == "single" for r in rows)
    span = f"{reps[0]}" if len(reps) == 1 else f"{reps[0]}-{reps[-1]}" if reps else ""
    if not singles:
        return f"median of {span} repetitions" if reps else "median"
    if not reps:
        return "one run each (no repetitions: not a median)"
    if not marked:
        return f"median of {span} repetitions, but {singles} rows of one run (not a median)"
    return f"median of {span} repetitions; †: one run, not a median"


def mark(row, mixed):
    """"†" after a single run's time in a table of medians."""
    return "†" if mixed and row is not None and row.get("_stat") == "single" else ""


def ns_per_op(row):
    if row.get("items_per_second"):
        return 1e9 / row["items_per_second"]
    return row.get("cpu_time", 0.0) * TO_NS.get(row.get("time_unit", "ns"), 1.0)


def fmt_ns(value):
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}"


def fmt_ratio(peer, own):
    if peer is None or own is None or own == 0:
        return "-"
    return f"{peer / own:.2f}x"


def fmt_rate(value):
    return "-" if value is None else f"{100 * value:.3f} %"


def fmt_items(items):
    exponent = len(str(items)) - 1
    return f"10^{exponent}" if items == 10**exponent else str(items)


def counters(row):
    return {k: v for k, v in row.items()
            if k not in STANDARD_FIELDS and not k.startswith("_") and isinstance(v, (int, float))}


def machine(context):
    model, flags = "unknown CPU", ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "unknown CPU":
                    model = value.strip()
                if key.strip() == "flags" and not flags:
                    flags = value
    except OSError:
        pass
    parts = [model]
    if " hypervisor" in flags:
        parts.append("virtual machine")
    if context.get("num_cpus"):
        parts.append(f"{context['num_cpus']} cores")
    if context.get("mhz_per_cpu"):
        parts.append(f"{context['mhz_per_cpu']} MHz")
    caches = []
    for cache in context.get("caches", []):
        size = cache.get("size", 0)
        label = f"L{cache.get('level')}{'d' if cache.get('type') == 'Data' else ''}"
        if cache.get("type") == "Instruction":
            continue
        caches.append(f"{label} {size // 1024} KiB" if size < 1 << 20 else f"{label} {size >> 20} MiB")
    if caches:
        parts.append(", ".join(caches))
    return "; ".join(parts)


def per_second(row):
    """items_per_second of a row (None when missing or failed)."""
    if row is None or row.get("error_occurred") or not row.get("items_per_second"):
        return None
    return row["items_per_second"]


def targets(core, rows, by_file, full):
    """Issue 8's targets, each with its measured ratio (same run) and met / not met; and
    the lines "missing: ..." for the rows they need that are not there."""
    lines = []
    missing = {}  # row (or what is missing) -> the targets that need it

    def row_ns(impl, op, keys, items=1000000, ppm=10000):
        cell = core.get((op, keys, items, ppm), {}).get(impl)
        if cell is None or cell.get("error_occurred"):
            return None
        return ns_per_op(cell)

    def ips(name):
        return per_second(rows.get(name))

    def complete(target, names):
        """Whether every row of `names` is there; those that are not are recorded as
        missing, in a full run always, else when some of them are there (a filter that
        selected none of a target's rows says nothing about it)."""
        absent = [n for n in names if ips(n) is None]
        if absent and (full or len(absent) < len(names)):
            for n in absent:
                row = rows.get(n)
                what = f"{n} (error: {row.get('error_message', '')})" if row and row.get("error_occurred") else n
                missing.setdefault(what, []).append(target)
        return not absent

    def floor_ns(name):
        rate = ips(name)
        return 1e9 / rate if rate else None

    # (target, measured text, ratio, bound, higher_is_better, target ns, floor ns): the
    # target ns is the time the target asks for; the floor (bench_floor.cpp) is the
    # hash plus the memory the operation must touch, so a target below it cannot be met.
    checks = []
    for keys in ("u64", "str16"):
        for own, layout, goals in (("segbloom", "classic", {"lookup_negative": 3, "lookup_positive": 2, "insert": 2}),
                                   ("segbloom-blocked", "blocked", {"insert": 5, "lookup_positive": 5, "lookup_negative": 5})):
            for op, bound in goals.items():
                for suffix in ("", "_batched"):
                    target = f"{own} {op + suffix}, {keys}: LevelDB / {own} >= {bound}"
                    if not complete(target, [f"BM_{impl}_{op + suffix}/{keys}/1000000/10000"
                                             for impl in ("leveldb", own)]):
                        continue
                    peer, mine = row_ns("leveldb", op + suffix, keys), row_ns(own, op + suffix, keys)
                    floor = None
                    if not suffix:
                        floor_name = f"BM_floor_{op}/{layout}/{keys}/1000000/10000"
                        if complete(target + " (its floor)", [floor_name]):
                            floor = floor_ns(floor_name)
                    checks.append((target, f"{peer:.1f} / {mine:.1f} ns", peer / mine, bound, True,
                                   peer / bound, floor))

    for keys in ("u64", "str16"):
        cells = core.get(("lookup_negative", keys, 1000000, 10000), {})
        mine, peer = cells.get("segbloom-blocked"), cells.get("leveldb")
        if not complete(f"segbloom-blocked FP rate, {keys}: LevelDB's / blocked's >= 1",
                        [f"BM_{impl}_lookup_negative/{keys}/1000000/10000" for impl in ("segbloom-blocked", "leveldb")]):
            continue
        if "fp_rate" in mine and "fp_rate" in peer and mine["fp_rate"] > 0:
            checks.append((f"segbloom-blocked FP rate, {keys}: LevelDB's / blocked's >= 1 "
                           f"(blocked {mine.get('bits_per_key', 0):.2f} bits/key, LevelDB {peer.get('bits_per_key', 0):.2f})",
                           f"{100 * peer['fp_rate']:.3f} % / {100 * mine['fp_rate']:.3f} %",
                           peer["fp_rate"] / mine["fp_rate"], 1, True, None, None))

    for layout, label in (("1", "blocked"), ("0", "classic")):
        target = f"6 slices / 1 slice, batched negative lookups ({label}) <= 2"
        if not complete(target, [f"BM_batch_negative/layout:{layout}/slices:{n}/batched:1" for n in (1, 6)]):
            continue
        one = ips(f"BM_batch_negative/layout:{layout}/slices:1/batched:1")
        six = ips(f"BM_batch_negative/layout:{layout}/slices:6/batched:1")
        floor = None
        if label == "blocked" and complete(target + " (its floor)", ["BM_floor_slices/slices:6"]):
            floor = floor_ns("BM_floor_slices/slices:6")
        checks.append((target, f"{1e9 / six:.1f} / {1e9 / one:.1f} ns", one / six, 2, False, 2e9 / one, floor))

    # 10^8 keys against the machine's limit, the fastest of the limit loop's prefetch
    # distances, taken from the same JSON file (process) as the 10^8-key row only: the two
    # are compared as the issue asks, in the same run.
    def keys_a_call(name):  # 512 in runs before the keys argument
        found = re.search(r"/keys:(\d+)", name)
        return int(found.group(1)) if found else 512

    limit_target = "10^8 keys blocked batched / random-line memory limit <= 1.5"
    large_names = sorted((n for n in rows if n.startswith("BM_large_blocked/batched:1")), key=keys_a_call)
    limit_files = sorted(f for f, file_rows in by_file.items()
                         if any(n.startswith("BM_memory_limit/") for n in file_rows))
    if full:
        complete(limit_target, [f"BM_large_blocked/batched:1/keys:{n}" for n in (512, 2048, 8192)])
    elif not large_names and limit_files:
        missing.setdefault("BM_large_blocked/batched:1/*", []).append(limit_target)
    # One row per batch size (keys a contains_many call).
    for name in large_names:
        large = ips(name)
        if large is None:
            complete(limit_target, [name])
            continue
        file = rows[name]["_file"]
        limits = [(per_second(r), n) for n, r in by_file[file].items() if n.startswith("BM_memory_limit/")]
        limits = [(v, n) for v, n in limits if v]
        if not limits:
            elsewhere = [f for f in limit_files if f != file]
            missing.setdefault(f"BM_memory_limit/* in {file}, the process of {name}"
                               + (f" (there only in {', '.join(elsewhere)}: a ratio across processes is "
                                  "not taken)" if elsewhere else ""), []).append(limit_target)
            continue
        limit, limit_name = max(limits)
        ahead = limit_name.split("ahead:")[1] if "ahead:" in limit_name else "?"
        checks.append((f"10^8 keys blocked batched ({keys_a_call(name)} keys a call) / random-line "
                       f"memory limit <= 1.5 (limit: {ahead} groups ahead, the fastest of {len(limits)}, "
                       "same process)",
                       f"{1e9 / large:.2f} / {1e9 / limit:.2f} ns", limit / large, 1.5, False, None, None))
    for items in ("1000000", "10000000"):
        for tag, label in (("", "classic"), ("-blocked", "blocked")):
            for op, base in (
                    ("insert", f"BM_concurrent{tag}_insert"),
                    ("insert_many", f"BM_concurrent_batched{tag}_insert"),
                    ("lookup_positive", f"BM_concurrent{tag}_lookup_positive"),
                    ("lookup_negative", f"BM_concurrent{tag}_lookup_negative")):
                base += f"/u64/{items}/10000/real_time/threads:"
                target = f"concurrent {op}, {label}, 10^{len(items) - 1} items: 2 threads / 1 thread >= 1.6"
                if complete(target, [base + "1", base + "2"]):
                    one, two = ips(base + "1"), ips(base + "2")
                    checks.append((target, f"{two / 1e6:.1f} / {one / 1e6:.1f} M ops/s", two / one, 1.6, True,
                                   None, None))
    # The controls printed under the targets.
    complete("control: BM_machine_scaling", [f"BM_machine_scaling/real_time/threads:{n}" for n in (1, 2)])
    complete("control: BM_shared_writes", [f"BM_shared_writes/ahead:{a}/real_time/threads:{n}"
                                           for a in (0, 16) for n in (1, 2)])
    complete("control: BM_concurrent_mixed", [f"BM_concurrent_mixed{tag}/u64/1000000/10000/writer:{w}/real_time"
                                              for tag in ("", "-blocked") for w in (0, 1)])
    complete("control: BM_core_to_core", ["BM_core_to_core/real_time/threads:2"])
    missing_lines = [f"missing: {what} (for: {'; '.join(dict.fromkeys(needed))})"
                     for what, needed in sorted(missing.items())]
    if not checks:
        if missing_lines:
            lines += ["### Targets of issue 8: rows missing", "", *(f"- {m}" for m in missing_lines), ""]
        return lines, missing_lines
    lines.append("### Targets of issue 8 (p = 1 %, 10^6 keys unless the row says otherwise, this run)")
    lines.append("")
    if missing_lines:
        lines += [*(f"- {m}" for m in missing_lines), ""]
    stats = statistic([rows[n] for n in rows if n.startswith(("BM_leveldb_", "BM_segbloom", "BM_batch_negative/",
                                                               "BM_large_blocked/", "BM_memory_limit/",
                                                               "BM_concurrent"))], marked=False)
    lines.append(f"Times and rates: {stats}.")
    lines.append("")
    lines.append("The floor (bench_floor.cpp): the key's hash plus the memory the operation must touch, "
                 "nothing else. A target that asks for less time than its floor cannot be met on this machine.")
    lines.append("")
    lines.append("| target | measured | ratio | met | target time | floor |")
    lines.append("|---|---|---:|---|---:|---|")
    for name, measured, ratio, bound, higher, target_ns, floor in checks:
        met = ratio >= bound if higher else ratio <= bound
        wanted = f"{target_ns:.1f} ns" if target_ns is not None else ""
        if floor is None:
            below = ""
        elif met or floor <= target_ns:
            below = f"{floor:.1f} ns"
        else:
            below = f"{floor:.1f} ns: above the target, not reachable here"
        lines.append(f"| {name} | {measured} | {ratio:.2f}x | {'met' if met else 'not met'} | {wanted} | {below} |")
    lines.append("")
    alone, both = ips("BM_machine_scaling/real_time/threads:1"), ips("BM_machine_scaling/real_time/threads:2")
    if alone and both:
        lines.append(f"Two threads that share nothing (`BM_machine_scaling`: a mix and a read of a private 1 MiB "
                     f"array per item): {both / alone:.2f}x one thread in this run. On two idle physical cores "
                     "such work would scale about 2x; below that, the host slowed its 2-thread row, above, its "
                     "1-thread row, as it may any 2-thread / 1-thread row above (bench_concurrent.cpp; "
                     "`scripts/bench_paired.py --concurrent` pairs the rows within processes).")
        lines.append("")
    writes = {ahead: (ips(f"BM_shared_writes/ahead:{ahead}/real_time/threads:1"),
                      ips(f"BM_shared_writes/ahead:{ahead}/real_time/threads:2")) for ahead in (0, 16)}
    if all(alone and both for alone, both in writes.values()):
        (alone0, both0), (alone16, both16) = writes[0], writes[16]
        lines.append(f"Locked `OR`s into random lines of one shared 1.28 MB array (`BM_shared_writes`), 2 threads / "
                     f"1 thread: {both0 / alone0:.2f}x without a prefetch, {both16 / alone16:.2f}x with the line of "
                     "the key 16 ahead prefetched, in this run: how far writes into a slice that fits in L2 scale on "
                     "this machine (a per-key `insert` cannot look ahead; `insert_many` prefetches a group of 16 "
                     "ahead).")
        lines.append("")
    mixed = []
    for tag, label in (("", "classic"), ("-blocked", "blocked")):
        alone = ips(f"BM_concurrent_mixed{tag}/u64/1000000/10000/writer:0/real_time")
        beside = ips(f"BM_concurrent_mixed{tag}/u64/1000000/10000/writer:1/real_time")
        if alone and beside:
            mixed.append(f"{label} {1e9 / alone:.1f} ns alone, {1e9 / beside:.1f} ns beside the writer "
                         f"({alone / beside:.2f}x the time)")
    if mixed:
        lines.append("Batched negative lookups into a window of 4 slices of 10^6 keys in all while another thread "
                     "inserts new keys (`BM_concurrent_mixed`, per key): " + "; ".join(mixed) + ".")
        lines.append("")
    handoffs = ips("BM_core_to_core/real_time/threads:2")
    if handoffs:
        lines.append(f"One cache line between the two threads' cores (`BM_core_to_core`): {1e9 / handoffs:.0f} ns "
                     "one way in this run. Two-thread inserts into a filter that fits in L2 move about half "
                     "their lines between the cores, so their scaling follows this number (bench_concurrent.cpp).")
        lines.append("")
    return lines, missing_lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--note", action="append", default=[], help="a line to print under the header")
    parser.add_argument("--full", action="store_true",
                        help="a run of every benchmark: a missing target row makes the exit status 1")
    parser.add_argument("results", nargs="+", help="Google Benchmark JSON files")
    args = parser.parse_args()

    runs, context = load(args.results)
    rows = medians(runs)
    by_file = {path: medians([r for r in runs if r["_file"] == path]) for path in args.results}

    core, generic = {}, []
    for name, row in sorted(rows.items()):
        m = CORE.match(name)
        if m:
            key = (m["op"], m["keys"], int(m["items"]), int(m["ppm"]))
            core.setdefault(key, {})[m["impl"]] = row
        else:
            generic.append((name, row))

    out = []
    date = context.get("date") or datetime.now(timezone.utc).isoformat(timespec="seconds")
    out.append("## segbloom benchmarks")
    out.append("")
    out.append(f"Machine: {machine(context)}.  ")
    load_avg = context.get("load_avg")
    if load_avg:
        out.append(f"Run: {date}; load average at start {', '.join(f'{x:.2f}' for x in load_avg)}.  ")
    else:
        out.append(f"Run: {date}.  ")
    if context.get("library_build_type") == "debug":
        out.append("Google Benchmark itself is Debian's build (it reports DEBUG; the timed code is ours, -O3).  ")
    for note in args.note:
        out.append(f"{note}  ")
    out.append("")

    if core:
        present = {impl for cells in core.values() for impl in cells}
        impls = [i for i in IMPLS if i in present]
        owns = [i for i in OWN if i in present]
        peers = [i for i in PEERS if i in present]
        pairs = [(peer, own) for own in owns for peer in peers]

        core_rows = [row for cells in core.values() for row in cells.values()]
        core_stat = statistic(core_rows)
        mixed = "†" in core_stat
        out.append(f"ns per operation, {core_stat} (lower is better); peer/own = peer ns / own ns "
                   "(above 1: segbloom is faster).")
        out.append("")
        head = ["op", "keys", "items", "p", *impls, *(f"{p}/{o}" for p, o in pairs)]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "|".join(["---"] * 4 + ["---:"] * (len(head) - 4)) + "|")

        def order(key):
            op, keys, items, ppm = key
            return (keys, items, -ppm, OPS.index(op))

        accuracy = {}
        for key in sorted(core, key=order):
            op, keys, items, ppm = key
            cells = core[key]
            times = {impl: (None if impl not in cells or cells[impl].get("error_occurred")
                            else ns_per_op(cells[impl])) for impl in impls}
            line = [op, keys, fmt_items(items), f"{ppm / 1e4:g} %"]
            for impl in impls:
                if impl in cells and cells[impl].get("error_occurred"):
                    line.append("error: " + cells[impl].get("error_message", ""))
                else:
                    line.append(fmt_ns(times[impl]) + mark(cells.get(impl), mixed))
            line += [fmt_ratio(times[p], times[o]) for p, o in pairs]
            out.append("| " + " | ".join(line) + " |")
            for impl, row in cells.items():
                if not row.get("error_occurred"):
                    accuracy.setdefault((keys, items, ppm), {})[impl] = row

        out.append("")
        out.append("Size and accuracy. The peers get segbloom's (classic) bits per key; LevelDB "
                   "takes an integer, round(segbloom's). segbloom-blocked is sized by its own rule "
                   "for the same p. k = probes; FP = measured false-positive rate over 10^6 "
                   "absent keys.")
        out.append("")
        head = ["keys", "items", "p", *(f"{i} bits/key (k)" for i in impls),
                *(f"{i} FP" for i in impls)]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "|".join(["---"] * 3 + ["---:"] * (len(head) - 3)) + "|")
        for (keys, items, ppm) in sorted(accuracy, key=lambda k: (k[0], k[1], -k[2])):
            cells = accuracy[(keys, items, ppm)]
            line = [keys, fmt_items(items), f"{ppm / 1e4:g} %"]
            for impl in impls:
                row = cells.get(impl)
                if row is None or "bits_per_key" not in row:
                    line.append("-")
                else:
                    line.append(f"{row['bits_per_key']:.2f} ({row.get('probes', 0):.0f})")
            line += [fmt_rate(cells[i].get("fp_rate")) if i in cells else "-" for i in impls]
            out.append("| " + " | ".join(line) + " |")

        # The aim of issue 2: lookups at least 2x both peers, FP rate no worse.
        out.append("")
        for peer, own in pairs:
            worst = None
            for key, cells in core.items():
                if not key[0].startswith("lookup") or own not in cells or peer not in cells:
                    continue
                if cells[own].get("error_occurred") or cells[peer].get("error_occurred"):
                    continue
                ratio = ns_per_op(cells[peer]) / ns_per_op(cells[own])
                if worst is None or ratio < worst[0]:
                    worst = (ratio, key)
            if worst:
                ratio, (op, keys, items, ppm) = worst
                out.append(f"Lowest lookup speed-up of {own} over {peer}: {ratio:.2f}x "
                           f"({op}, {keys}, {fmt_items(items)} items, p = {ppm / 1e4:g} %).  ")
        # Each rate is measured over fp_samples absent keys (binomial); a difference
        # within 3 standard errors is noise, not a worse filter.
        def significantly_above(mine, theirs):
            n_mine = mine.get("fp_samples", 1e6)
            n_theirs = theirs.get("fp_samples", 1e6)
            a, b = mine["fp_rate"], theirs["fp_rate"]
            error = math.sqrt(a * (1 - a) / n_mine + b * (1 - b) / n_theirs)
            return a - b > 3 * error

        for own in owns:
            fp_worse = []
            for (keys, items, ppm), cells in accuracy.items():
                mine = cells.get(own, {}).get("fp_rate")
                for peer in peers:
                    theirs = cells.get(peer, {}).get("fp_rate")
                    if mine is None or theirs is None or mine <= theirs:
                        continue
                    if not significantly_above(cells[own], cells[peer]):
                        continue
                    my_bits = cells[own].get("bits_per_key", 0)
                    their_bits = cells[peer].get("bits_per_key", 0)
                    fp_worse.append(f"{keys}/{fmt_items(items)}/{ppm / 1e4:g} % vs {peer} "
                                    f"({their_bits:.2f} bits/key against {my_bits:.2f})")
            out.append(f"{own}'s measured FP rate is above a peer's (by more than 3 standard "
                       "errors) in: "
                       + ("; ".join(sorted(fp_worse)) if fp_worse else "no case") + ".  ")
        out.append("")

    target_lines, missing = targets(core, rows, by_file, args.full)
    out.extend(target_lines)

    if generic:
        generic_stat = statistic([row for _, row in generic])
        mixed = "†" in generic_stat
        out.append("### Other benchmarks")
        out.append("")
        out.append(f"ns/op: {generic_stat}.")
        out.append("")
        out.append("| benchmark | ns/op | counters |")
        out.append("|---|---:|---|")
        for name, row in generic:
            if row.get("error_occurred"):
                out.append(f"| {name} | error: {row.get('error_message', '')} | |")
                continue
            extra = ", ".join(f"{k}={v:.4g}" for k, v in sorted(counters(row).items()))
            out.append(f"| {name} | {fmt_ns(ns_per_op(row))}{mark(row, mixed)} | {extra} |")
        out.append("")

    sys.stdout.write("\n".join(out) + "\n")
    for line in missing:
        sys.stderr.write(f"bench_table.py: {line}\n")
    if missing and args.full:
        sys.stderr.write(f"bench_table.py: {len(missing)} missing in a full run\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
