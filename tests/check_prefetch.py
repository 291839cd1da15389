#!/usr/bin/env python3
"""Fails unless the code compiled from codegen_prefetch.cpp still prefetches: the
function segbloom_codegen_prefetch_group; the batched lookups of the plain filter's
contains_many (detail/lookup_slices.hpp, functions of their own: the classic group
walk, whose name holds for_each_group_prefetched over Slice pointers, and the screened
lookup) and of the concurrent filter's (its classic group walk and screened lookup); a
transition pair's classic group walk (lookup_slices over both filters, named by the
pair's contains_many); the single-slice AVX-512 and AVX2 kernels that prefetch later
keys while they work (both load policies), the portable group kernel (a prefetch in its
one-slice loop or its loop over several slices: one function, so this cannot tell
which), and the concurrent filter's insert_many and contains_many (their group walks,
functions of their own), and the classic layout's k-line prefetches of both filters on
their own, and the group inserts into a classic slice in vectors (detail::mark_many_avx512,
for bits, every instance by k, and for counters). A function passes with a prefetch instruction of its own or in a function it
calls (the group walks call detail::prefetch_group once per group; a classic slice's
prefetch_probes calls its probe(), which GCC may keep out of line as a local clone).
Usage: OBJDUMP FILE."""
import re
import subprocess
import sys

objdump, path = sys.argv[1], sys.argv[2]
text = subprocess.run([objdump, "-d", "-r", "-C", "--no-show-raw-insn", path], check=True,
                      capture_output=True, text=True).stdout
functions = {}  # demangled name -> its instruction lines
calls = {}  # demangled name -> the functions it calls (relocations of its call instructions)
current = None
for line in text.splitlines():
    header = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
    if header:
        current = header.group(1)
        functions.setdefault(current, [])
        calls.setdefault(current, set())
    elif current is not None:
        functions[current].append(line)
        callee = re.match(r"^\s+[0-9a-f]+: R_X86_64_PLT32\s+(.+)-0x4$", line)
        if callee:
            calls[current].add(callee.group(1))
        # A call within the object file (a local clone, such as GCC's ".isra" ones) has no
        # relocation: objdump names its target.
        local = re.match(r"^\s+[0-9a-f]+:\s+call\s+[0-9a-f]+ <(.+)>$", line)
        if local:
            calls[current].add(local.group(1))


def prefetches(name):
    """A prefetch instruction in the function, or in one it calls (prefetch_group, which the
    group walks call once per group)."""
    def has(n):
        return any(re.search(r"\tprefetch", l) for l in functions.get(n, []))
    return has(name) or any(has(callee) for callee in calls.get(name, ()))

checks = {"segbloom_codegen_prefetch_group": r"^segbloom_codegen_prefetch_group$",
          # The plain filter's parts, named by its key hasher; the pair's, by its contains_many.
          "classic group walk": r"for_each_group_prefetched<segbloom::Digest128, 32ul, std::span<segbloom::Slice<segbloom::BitCells.*SegmentedFilter<segbloom::BitCells, segbloom::DoubleHashingScheme>::hasher<",
          "screened lookup": r"screened_lookup<segbloom::Slice<segbloom::BitCells.*SegmentedFilter<segbloom::BitCells, segbloom::DoubleHashingScheme>::hasher<",
          "concurrent screened lookup": r"screened_lookup<segbloom::detail::ConcurrentSlice<",
          "concurrent classic group walk": r"for_each_group_prefetched<segbloom::Digest128, 32ul, std::span<segbloom::detail::ConcurrentSlice<",
          "transition classic group walk": r"for_each_group_prefetched<segbloom::Digest128, 32ul, .*TransitionFilter<segbloom::ScalableBloomFilter>::contains_many<",
          "lookup_pairs_avx512<true>": r"::lookup_pairs_avx512<true, segbloom::blocked::PlainLoads>\(",
          "concurrent lookup_pairs_avx512<true>": r"::lookup_pairs_avx512<true, segbloom::detail::RelaxedLoads>\(",
          "lookup_one_avx2<true>": r"::lookup_one_avx2<true, segbloom::blocked::PlainLoads>\(",
          "concurrent lookup_one_avx2<true>": r"::lookup_one_avx2<true, segbloom::detail::RelaxedLoads>\(",
          "lookup_group_portable": r"::lookup_group_portable<segbloom::blocked::PlainLoads>\(",
          "concurrent insert_many": r"ConcurrentScalableBloomFilter::insert_many<",
          "concurrent contains_many": r"ConcurrentScalableBloomFilter::contains_many<",
          "classic prefetch_probes": r"^segbloom_codegen_classic_prefetch$",
          "concurrent classic prefetch_probes": r"^segbloom_codegen_concurrent_classic_prefetch$",
          "counters' marks": r"mark_many_avx512<0u, segbloom::Slice<segbloom::CounterCells, "}
# Kernels with one instance per k (detail/fixed_probes.hpp: k = 1..16, and 0 for k at run
# time): every instance must prefetch.
# The pattern's group is K; clones GCC may split off ("[clone .cold]") are not instances.
every_instance = {"set_many's marks": (r"mark_many_avx512<(\d+)u, segbloom::DoubleHashingScheme::set_many\(", 17)}
failed = []
for label, pattern in checks.items():
    names = [name for name in functions if re.search(pattern, name)]
    if not names:
        sys.exit(f"check_prefetch: no function matching {pattern!r} in {path}")
    if not any(prefetches(name) for name in names):
        failed.append(label)
for label, (pattern, count) in every_instance.items():
    by_k = {}
    for name in functions:
        match = re.search(pattern, name)
        if match and "[clone" not in name:
            by_k[int(match.group(1))] = name
    missing = sorted(set(range(count)) - set(by_k))
    if missing:
        sys.exit(f"check_prefetch: no instance for K = {missing} of {pattern!r} in {path}")
    failed += [f"{label}, K = {k}" for k, name in sorted(by_k.items()) if not prefetches(name)]
checks.update(every_instance)
if failed:
    sys.exit(f"check_prefetch: no prefetch instruction left in {failed}")
print("check_prefetch: prefetches present in", ", ".join(checks))
