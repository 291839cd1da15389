// segbloom: a prefetch hint that the compiler keeps.
//
// GCC 12 counts __builtin_prefetch as free of side effects, so a function whose only
// work is prefetching counts as having none, and calls to it are deleted: until
// 26 Nov 2026 blocked::prefetch_group compiled to nothing, and batched lookups of
// blocked filters prefetched nothing (clang kept it). An asm volatile statement is a
// side effect the compiler must keep, and so is every call of a function that has one.
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>  // __get_cpuid: the L2 size, without <unistd.h>'s names in users' code
#endif

namespace segbloom::detail {

// The rule of every prefetch of a batch: prefetch only what is too large to stay in a
// core's L2 once warm, since a prefetch of a line already there only costs. The batch
// loops ask it once per slice, before calling Slice::prefetch or ConcurrentSlice::prefetch;
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
//     negatives 18.3 -> 26.7 ns, positives 27.1 -> 28.8 ns.
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

// blocked: a blocked slice of bit cells (one line a key).
inline bool worth_prefetching(std::uint64_t slice_bytes, bool blocked) noexcept {
  return slice_bytes >= (blocked ? blocked_prefetch_min_bytes() : kPrefetchMinBytes);
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
