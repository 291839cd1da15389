// segbloom: a prefetch hint that the compiler keeps.
//
// GCC 12 counts __builtin_prefetch as free of side effects, so a function whose only
// work is prefetching counts as having none, and calls to it are deleted: until
// 26 Nov 2026 blocked::prefetch_group compiled to nothing, and batched lookups of
// blocked filters prefetched nothing (clang kept it). An asm volatile statement is a
// side effect the compiler must keep, and so is every call of a function that has one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>  // __get_cpuid: the L2 size, without <unistd.h>'s names in users' code
#endif

namespace segbloom::detail {

// The rule of every prefetch of a batch: prefetch only what is too large to stay in a
// core's L2 once warm, since a prefetch of a line already there only costs (and, for
// batched lookups of classic slices, only what is too large for half the L3: below). The batch
// loops ask it once per slice, before calling Slice::prefetch or ConcurrentSlice::prefetch
// (one exception: the concurrent insert_many prefetches the newest slice whatever its size
// while other threads write, since their writes move its lines between the cores);
// blocked::lookup_many asks it once for all its blocked slices together and then
// prefetches in all of them or none (slices that fit in L2 alone do not beside the
// others' traffic: see there). Where that size lies depends on the layout:
//   - blocked bit slices, one prefetch a key: from the core's L2 size, asked of the CPU
//     once (blocked_prefetch_min_for). The same 1.26 MB slice (10^6 keys at p = 1 %),
//     batched lookups, alternating builds: on the Sapphire Rapids machine of the first
//     measurements (L2 2 MiB), 3.7 -> 4.5 ns a key with its blocks prefetched; on the AMD
//     EPYC (Zen 5, L2 1 MiB), 2.70-2.74 -> 2.23-2.27 ns; on an AMD EPYC Zen 3 (L2 512 KiB),
//     6 processes each, medians 12.6 -> 11.3 ns (negatives), 11.7 -> 10.3 ns (positives).
//   - classic slices, k prefetches a key, each a step of the probe sequence, and blocked
//     counting slices (a 4-line block, one line prefetched): kPrefetchMinBytes (2 MiB) or
//     more. The same 1.26 MB classic slice with its k lines prefetched: Sapphire Rapids,
//     5.75 -> 6.2 ns (first line only); AMD EPYC, 5.35 -> 8.6 ns; the Zen 3 (L2 512 KiB),
//     negatives 18.3 -> 26.7 ns, positives 27.1 -> 28.8 ns. Batched lookups of classic
//     slices, since the thirty-first round: from half the L3 counted (at most 64 MiB of
//     it: classic_lookup_prefetch_min_for, kLevel3CapBytes).
//     Group inserts into a classic slice in vectors, since the thirty-sixth round: the
//     marks prefetch their own lines from the L2 size, the walk from half the L3 counted
//     (group_insert_prefetch).
inline constexpr std::uint64_t kPrefetchMinBytes = std::uint64_t{2} << 20;

// The size from which blocked bit slices are prefetched, for an L2 of `level2_bytes` per
// core (0: unknown): the L2 size, at most kPrefetchMinBytes; kPrefetchMinBytes when unknown
// (the rule as measured before the L2 size was asked).
constexpr std::uint64_t blocked_prefetch_min_for(std::uint64_t level2_bytes) noexcept {
  return level2_bytes == 0 ? kPrefetchMinBytes : std::min(level2_bytes, kPrefetchMinBytes);
}

// The core's L2 size in bytes, 0 where the CPU does not say (x86-64: CPUID leaf
// 0x80000006, ECX bits 31..16 in KiB, which AMD and Intel CPUs both report).
inline std::uint64_t level2_cache_bytes() noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000006u, &eax, &ebx, &ecx, &edx) != 0) return std::uint64_t{ecx >> 16} << 10;
#endif
  return 0;
}

// blocked_prefetch_min_for this CPU (asked once per process).
inline std::uint64_t blocked_prefetch_min_bytes() noexcept {
  static const std::uint64_t bytes = blocked_prefetch_min_for(level2_cache_bytes());
  return bytes;
}

// One cache as CPUID's deterministic cache parameters describe it (leaf 4 on Intel,
// 0x8000001D on AMD, the same layout): its size in bytes when EAX names a unified cache of
// `level` (type 3 in bits 4-0, the level in bits 7-5), else 0. Ways (EBX bits 31-22),
// partitions (21-12) and line size (11-0), each minus one, times the sets (ECX, minus one).
constexpr std::uint64_t unified_cache_bytes(unsigned eax, unsigned ebx, unsigned ecx, unsigned level) noexcept {
  if ((eax & 31) != 3 || ((eax >> 5) & 7) != level) return 0;
  return std::uint64_t{((ebx >> 22) & 1023) + 1} * (((ebx >> 12) & 1023) + 1) * ((ebx & 4095) + 1) *
         (std::uint64_t{ecx} + 1);
}

// The size of the L3 cache this core shares, 0 where the CPU does not say: the
// deterministic cache parameters of the vendor's leaf (Intel: leaf 4; AMD: 0x8000001D,
// which needs the TOPOEXT flag), as Linux reads them. Not leaf 0x80000006's L3 field, nor
// glibc's sysconf(_SC_LEVEL3_CACHE_SIZE): on the AMD EPYC (Zen 5) KVM guest of 29 Nov
// 2026 both said 384 MiB (the whole socket's), where the cache one core shares is 32 MiB
// (leaf 0x8000001D: 16 ways, 64-byte lines, 32768 sets).
inline std::uint64_t level3_cache_bytes() noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return 0;
  const unsigned max_basic = eax;
  const bool intel = ebx == 0x756e6547u && edx == 0x49656e69u && ecx == 0x6c65746eu;  // "GenuineIntel"
  const bool amd = ebx == 0x68747541u && edx == 0x69746e65u && ecx == 0x444d4163u;    // "AuthenticAMD"
  unsigned leaf = 0;
  if (intel && max_basic >= 4) {
    leaf = 4;
  } else if (amd && static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) >= 0x8000001Du &&  // int in clang
             __get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) != 0 && (ecx >> 22 & 1) != 0) {  // TOPOEXT
    leaf = 0x8000001Du;
  } else {
    return 0;
  }
  for (unsigned index = 0; index < 16; ++index) {
    __cpuid_count(leaf, index, eax, ebx, ecx, edx);
    if ((eax & 31) == 0) break;  // no more caches
    if (const std::uint64_t bytes = unified_cache_bytes(eax, ebx, ecx, 3); bytes != 0) return bytes;
  }
#endif
  return 0;
}

// The size from which batched lookups prefetch a classic slice's k lines (the plain and
// counting filters screen their keys instead where worth_screening, below, says so: several
// slices from this size in all, one slice from twice it), for an L3 of `level3_bytes` (0:
// unknown): half the L3 counted (at most kLevel3CapBytes of it, below), at least
// kPrefetchMinBytes; kPrefetchMinBytes when unknown (the rule before the thirty-first
// round). Unknown rather than leaf 0x80000006's L3 where the deterministic leaf names none:
// on the AMD EPYC Zen 5 guest of 2 Dec 2026 (leaf 0x8000001D empty, 0x80000006 saying
// 508 MiB) that size, capped, measured 2.3-2.6x the time of this fallback for batched
// lookups of one 12.6 MB slice (10^7 keys, screened by the fallback), though 0.63x for
// six classic slices of 2.5 MB in all (bench/results/l3-fallback-2026-12-02.md). Inserts keep
// kPrefetchMinBytes (but a classic slice's group inserts in vectors: group_insert_prefetch).
// A classic prefetch computes the key's k positions a second time (a scalar multiply and
// fold a probe) and prefetches lines a negative mostly never reads (it stops after 4 or 5);
// the lookups themselves, 8 keys a vector or key by key, have several keys' reads in
// flight at once anyway. So while the slice stays in L3 the prefetch only costs, and
// beyond L3 it pays. Decided per slice, like the other rules: a filter whose classic
// slices are each under the threshold but together larger than the L3 is not prefetched.
// Prefetching every slice of such filters instead (thirty-second round, a scratch program,
// rule / all alternating, 3 processes each, best of 5 contains_many passes over 2*10^6
// keys) measured no better: a window of 4 slices of 8.1 MB (32.5 MB) negatives 1.00,
// positives 0.87; 8 slices of 6.8 MB (54 MB) 1.23 and 1.06; a filter grown to 5 slices
// (58.6 MB, the largest 31.7 MB, prefetched either way) 1.07 and 0.99; 4 slices of 2.0 MB
// (8.1 MB) 0.98-0.99. Such filters read about 4 lines of every slice per negative from
// memory (102 ns a key at 32.5 MB), and prefetching all k adds to that traffic; the
// blocked layout reads one line a slice (the same window blocked: 13 ns). Half the L3 was
// measured on the Zen 5 (an Intel CPU: the cap below). Measured on the
// AMD EPYC Zen 5 (L3 32 MiB), one binary, the threshold from an environment variable,
// alternating processes, 3 each, batched lookups without the prefetch / with it: 10^7
// u64 and str16 keys at p = 1 % (12.6 MB) 0.68-0.71 (u64 negatives 8.8 -> 6.1 ns), the
// concurrent filter 0.71-0.74; a counting filter of 10^6 keys (6.5 MB) 0.81 (negatives)
// and 1.00 (positives); 10^7 keys at p = 0.1 % (18 MB) 0.96-1.07; 10^8 keys at 1 %
// (126 MB) 1.35-1.47. Inserts, which read and write the lines, gain from the prefetch
// at 12.6 MB (without it 1.16-1.18x, the counting filter's 1.19x).
//
// The L3 counted is at most kLevel3CapBytes (thirty-eighth round). Intel CPUs report in
// leaf 4 the L3 of the whole socket, which every core of a shared host draws on: 260 MiB on
// the Intel Xeon (Emerald Rapids, 2 vCPUs of a KVM host) of 30 Nov 2026, where half of it
// put the one-slice filter of 10^8 keys (126 MB) under the rule, so that its batched
// negatives, neither prefetched nor screened, took as long as lookups one key at a time.
// Measured there, one binary taking the L3 size from an environment variable, alternating,
// 2 processes each, u64 keys at p = 1 %, against the uncapped rule (negatives, positives):
//   - 10^8 keys: screened 0.46-0.65 (negatives 54-64 -> 29-35 ns) and 0.95-1.15 (7 lines a
//     key at the memory's limit either way); prefetched, not screened, 1.11 and 0.93;
//   - 4 x 10^7 keys (50 MB): screened 0.66 and 1.09; prefetched, not screened, 1.14 and 0.97;
//   - 10^7 keys at p = 0.1 % (18 MB): prefetched 1.63-1.68 and 1.17-1.18; screened 0.92-0.93
//     and 1.34-1.36;
//   - 10^7 keys at p = 1 % (12.6 MB): prefetched 1.43-1.47 and 1.30-1.34.
// With a cap C, one slice screens from C and is prefetched from C / 2. 64 MiB screens the
// 10^8-key filter and keeps the 18 MB one out of the prefetch band; one-slice filters of
// 32-64 MiB are prefetched on such a CPU, the 50 MB one at 1.14 and 0.97. A cap low enough
// to screen 50 MB (under 48 MiB) would prefetch one-slice filters of about 20-45 MB instead
// (not measured), nearer in size to the 18 MB one whose prefetch cost 1.63-1.68. A CPU
// that reports less (the Zen 5's 32 MiB) is unchanged; one that truly has more per core
// (AMD's 96 MiB V-Cache dies) is capped too.
inline constexpr std::uint64_t kLevel3CapBytes = std::uint64_t{64} << 20;

constexpr std::uint64_t classic_lookup_prefetch_min_for(std::uint64_t level3_bytes) noexcept {
  return std::max(kPrefetchMinBytes, std::min(level3_bytes, kLevel3CapBytes) / 2);
}

// classic_lookup_prefetch_min_for this CPU (asked once per process).
inline std::uint64_t classic_lookup_prefetch_min_bytes() noexcept {
  static const std::uint64_t bytes = classic_lookup_prefetch_min_for(level3_cache_bytes());
  return bytes;
}

// Whether batched lookups of classic slices taking `classic_bytes` in all, the largest
// `largest_slice_bytes`, screen each key's first probes before reading the rest
// (detail/screened_lookup.hpp, where it is measured): from half the L3 counted
// (classic_lookup_prefetch_min_bytes) over all the slices, which are read together; from
// the whole L3 counted where one slice holds all but what fits in the core's L2 (a filter
// of one slice, or a transition pair whose new filter is still small): between the two,
// one slice reads from L3, and its present keys took 1.3-1.5x the time screened, its
// absent ones 0.6-0.7.
inline bool worth_screening(std::uint64_t classic_bytes, std::uint64_t largest_slice_bytes) noexcept {
  const std::uint64_t half_level3 = classic_lookup_prefetch_min_bytes();
  const bool as_one_slice = classic_bytes - largest_slice_bytes < blocked_prefetch_min_bytes();
  return classic_bytes >= (as_one_slice ? 2 * half_level3 : half_level3);
}

// What a batch does with the lines it prefetches: reads them (lookup), inserts key by key
// (insert), or marks a group of keys at once in a classic slice, in vectors (group_insert:
// SegmentedFilter::insert_group's newest slice; group_insert_prefetch).
enum class BatchOp : unsigned char { lookup, insert, group_insert };

// Who prefetches the lines of a classic slice's group inserts in vectors (Slice::mark_group,
// detail::mark_many_avx512): nobody while the slice is under the core's L2 size; from there
// to half the L3 counted, the marks themselves (by_marks): each call computes 8 keys'
// positions before it marks the 8 before them and prefetches their lines from those
// positions, one instruction a probe, where the walk ahead computes each key's k positions
// a second time, in scalar code, to prefetch them; from half the L3 counted, the walk ahead (by_walk), whose
// lead of a group memory needs (8 keys proved too short). Until the thirty-sixth round the
// walk prefetched them from kPrefetchMinBytes. Measured on the AMD EPYC Zen 5:
// bench/results/design-notes.md, "Batched inserts into a classic slice", and history.md;
// on the Intel Xeon of 30 Nov 2026 the marks' prefetch within its 2 MiB L2 measured 1.23-1.37x the time of none,
// and at 50 MB the walk the same as the marks (1.00).
enum class GroupInsertPrefetch : unsigned char { none, by_marks, by_walk };

inline GroupInsertPrefetch group_insert_prefetch(std::uint64_t slice_bytes) noexcept {
  if (slice_bytes >= classic_lookup_prefetch_min_bytes()) return GroupInsertPrefetch::by_walk;
  return slice_bytes >= blocked_prefetch_min_bytes() ? GroupInsertPrefetch::by_marks : GroupInsertPrefetch::none;
}

// What a batch prefetches of a slice for each key: its block (a blocked slice of bits, one
// line), its block's first line (a blocked counting slice, 4 lines a block), or the lines
// of its k probes (a classic slice).
enum class PrefetchedLines : unsigned char { block, block_first_line, probe_lines };

inline bool worth_prefetching(std::uint64_t slice_bytes, PrefetchedLines lines, BatchOp op) noexcept {
  switch (lines) {
    case PrefetchedLines::block:
      return slice_bytes >= blocked_prefetch_min_bytes();
    case PrefetchedLines::probe_lines:
      if (op == BatchOp::lookup) return slice_bytes >= classic_lookup_prefetch_min_bytes();
      if (op == BatchOp::group_insert) return group_insert_prefetch(slice_bytes) == GroupInsertPrefetch::by_walk;
      break;
    case PrefetchedLines::block_first_line:
      break;
  }
  return slice_bytes >= kPrefetchMinBytes;
}

// Starts loading the line holding p into every cache level, for a read. p need not be
// dereferenceable: a prefetch never faults.
inline void prefetch(const void* p) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#elif defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p);
  asm volatile("" : : "r"(p));  // keeps this function, and so the builtin, in its callers
#else
  (void)p;
#endif
}

}  // namespace segbloom::detail
