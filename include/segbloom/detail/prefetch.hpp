// segbloom: a prefetch hint that the compiler keeps.
//
// GCC 12 counts __builtin_prefetch as free of side effects, so a function whose only
// work is prefetching counts as having none, and calls to it are deleted: until
// 26 Nov 2026 blocked::prefetch_group compiled to nothing, and batched lookups of
// blocked filters prefetched nothing (clang kept it). An asm volatile statement is a
// side effect the compiler must keep, and so is every call of a function that has one.
#pragma once

#include <cstdint>

namespace segbloom::detail {

// The rule of every prefetch of a batch, in either layout (the batch loops ask it before
// calling Slice::prefetch, ConcurrentSlice::prefetch or blocked::prefetch_group, once per
// slice): only slices of kPrefetchMinBytes or more are prefetched. A smaller one stays in a core's L2 (2 MiB on the Sapphire Rapids
// machine of the first measurements) once warm, and a prefetch of a line already there
// only costs: blocked batched lookups at 10^6 keys (1.26 MB), 3.7 -> 4.5 ns a key with
// every key prefetched; classic ones 6.2 -> 5.75 ns without their first line prefetched
// (each measured alternating builds).
inline constexpr std::uint64_t kPrefetchMinBytes = std::uint64_t{2} << 20;
inline bool worth_prefetching(std::uint64_t slice_bytes) noexcept {
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
