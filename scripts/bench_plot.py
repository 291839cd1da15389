#!/usr/bin/env python3
"""Draws lookup time against filter size from segbloom_bench JSON output, as an SVG.

Usage: bench_plot.py [--out FILE.svg] [--keys u64] [--ppm 10000] RESULT.json...

Reads the rows BM_<impl>_lookup_{negative,positive}[_batched]/<keys>/<items>/<ppm>
(bench/bench_filter.cpp), takes each benchmark's median (ns per lookup = 1e9 /
items_per_second), and draws two panels, negative and positive lookups: one line per
implementation (classic, blocked, LevelDB, libbloom; solid: one lookup per call, dashed:
segbloom's contains_many), x = items in the filter (log scale), y = ns per lookup (log).
Only the Python standard library.
"""

import argparse
import json
import math
import os
import re
import sys

ROW = re.compile(r"^BM_(?P<impl>segbloom|segbloom-blocked|leveldb|libbloom)_lookup_"
                 r"(?P<kind>negative|positive)(?P<batched>_batched)?/(?P<keys>[a-z0-9]+)/"
                 r"(?P<items>\d+)/(?P<ppm>\d+)$")
SERIES = [  # (impl, batched, label, colour, dashed)
    ("segbloom", False, "segbloom classic", "#1f77b4", False),
    ("segbloom", True, "segbloom classic, contains_many", "#1f77b4", True),
    ("segbloom-blocked", False, "segbloom blocked", "#d62728", False),
    ("segbloom-blocked", True, "segbloom blocked, contains_many", "#d62728", True),
    ("leveldb", False, "LevelDB built-in filter", "#2ca02c", False),
    ("libbloom", False, "libbloom", "#9467bd", False),
]


def medians(paths):
    rows = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        for run in data.get("benchmarks", []):
            if run.get("error_occurred") or not run.get("items_per_second"):
                continue
            name = run.get("run_name", run["name"])
            if run.get("run_type") == "aggregate":
                if run.get("aggregate_name") == "median":
                    rows[name] = run
            elif name not in rows:
                rows[name] = run
    return rows


def points(rows, keys, ppm):
    """{(kind, impl, batched): [(items, ns)]}"""
    out = {}
    for name, run in rows.items():
        m = ROW.match(name)
        if not m or m["keys"] != keys or int(m["ppm"]) != ppm:
            continue
        key = (m["kind"], m["impl"], bool(m["batched"]))
        out.setdefault(key, []).append((int(m["items"]), 1e9 / run["items_per_second"]))
    for v in out.values():
        v.sort()
    return out


def svg(data, keys, ppm, title_note):
    width, height = 980, 470
    panel_w, panel_h = 380, 300
    left = [80, 560]
    top = 70
    all_items = [x for v in data.values() for x, _ in v]
    all_ns = [y for v in data.values() for _, y in v]
    if not all_items:
        raise SystemExit("bench_plot.py: no lookup rows for these keys and p")
    x0, x1 = math.floor(math.log10(min(all_items))), math.ceil(math.log10(max(all_items)))
    if x1 == x0:
        x1 += 1
    y0 = math.floor(math.log10(min(all_ns)) * 2) / 2
    y1 = math.ceil(math.log10(max(all_ns)) * 2) / 2
    if y1 == y0:
        y1 += 0.5

    def px(panel, items):
        return left[panel] + (math.log10(items) - x0) / (x1 - x0) * panel_w

    def py(ns):
        return top + panel_h - (math.log10(ns) - y0) / (y1 - y0) * panel_h

    e = []
    e.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">')
    e.append(f'<rect width="{width}" height="{height}" fill="white"/>')
    e.append(f'<text x="{width / 2}" y="24" text-anchor="middle" font-size="16">Lookup time against '
             f'filter size ({keys} keys, p = {ppm / 1e4:g} %)</text>')
    e.append(f'<text x="{width / 2}" y="44" text-anchor="middle" fill="#555">{title_note}</text>')
    ticks_y = []
    for decade in range(math.floor(y0), math.ceil(y1) + 1):
        for mult in (1, 2, 5):
            v = mult * 10 ** decade
            if y0 <= math.log10(v) <= y1 + 1e-9:
                ticks_y.append(v)
    for panel, kind in enumerate(("negative", "positive")):
        lx = left[panel]
        e.append(f'<text x="{lx + panel_w / 2}" y="{top - 8}" text-anchor="middle" font-size="14">'
                 f'{kind} lookups</text>')
        e.append(f'<rect x="{lx}" y="{top}" width="{panel_w}" height="{panel_h}" fill="none" stroke="#333"/>')
        for d in range(x0, x1 + 1):
            x = px(panel, 10 ** d)
            e.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + panel_h}" stroke="#ddd"/>')
            e.append(f'<text x="{x:.1f}" y="{top + panel_h + 16}" text-anchor="middle">10<tspan '
                     f'dy="-5" font-size="9">{d}</tspan></text>')
        for v in ticks_y:
            y = py(v)
            e.append(f'<line x1="{lx}" y1="{y:.1f}" x2="{lx + panel_w}" y2="{y:.1f}" stroke="#eee"/>')
            e.append(f'<text x="{lx - 6}" y="{y + 4:.1f}" text-anchor="end">{v:g}</text>')
        e.append(f'<text x="{lx + panel_w / 2}" y="{top + panel_h + 36}" text-anchor="middle">'
                 f'items in the filter</text>')
        e.append(f'<text x="{lx - 50}" y="{top + panel_h / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 {lx - 50} {top + panel_h / 2})">ns per lookup (median)</text>')
        for impl, batched, label, colour, dashed in SERIES:
            pts = data.get((kind, impl, batched))
            if not pts:
                continue
            path = " ".join(f"{px(panel, x):.1f},{py(y):.1f}" for x, y in pts)
            dash = ' stroke-dasharray="6,4"' if dashed else ""
            e.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
            for x, y in pts:
                e.append(f'<circle cx="{px(panel, x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}">'
                         f'<title>{label}: {x} items, {y:.1f} ns</title></circle>')
    ly = top + panel_h + 56
    for i, (impl, batched, label, colour, dashed) in enumerate(SERIES):
        x = 80 + (i % 3) * 300
        y = ly + (i // 3) * 18
        dash = ' stroke-dasharray="6,4"' if dashed else ""
        e.append(f'<line x1="{x}" y1="{y - 4}" x2="{x + 30}" y2="{y - 4}" stroke="{colour}" stroke-width="2"{dash}/>')
        e.append(f'<text x="{x + 36}" y="{y}">{label}</text>')
    e.append("</svg>")
    return "\n".join(e) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench/results/lookup_vs_size.svg")
    parser.add_argument("--keys", default="u64")
    parser.add_argument("--ppm", type=int, default=10000)
    parser.add_argument("--note", default="", help="a line under the title (machine, date)")
    parser.add_argument("results", nargs="+")
    args = parser.parse_args()
    data = points(medians(args.results), args.keys, args.ppm)
    # The SVG is made first (svg() exits when there is nothing to plot), then written beside
    # the output and renamed over it: a failed run leaves the old file as it was.
    text = svg(data, args.keys, args.ppm, args.note)
    tmp = f"{args.out}.tmp.{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, args.out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    sys.stderr.write(f"bench_plot.py: wrote {args.out}\n")


if __name__ == "__main__":
    main()
