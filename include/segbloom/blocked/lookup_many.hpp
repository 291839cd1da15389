// segbloom: a batch of lookups against a filter's blocked slices (both filters'
// contains_many): keys hashed in groups ahead of the group kernel (lookup_group.hpp) that
// answers them, and when to prefetch.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "segbloom/blocked/lookup_group.hpp"
#include "segbloom/detail/batch.hpp"
#include "segbloom/detail/prefetch.hpp"

namespace segbloom::blocked {

// How far ahead lookup_many hashes keys when it prefetches: 2 groups of kGroup (64) keys. Memory at
// random needs about 30 reads in flight to reach its limit: the limit loop on an AMD
// EPYC (Zen 5), 128 MB, a line in 6.9 / 5.3 / 3.7 / 3.0 ns at 16 / 32 / 64 / 128 lines
// ahead. Lookups at 10^8 keys (BM_large_blocked/batched:1, alternating builds), groups
// of 16 keys 2 / 4 / 6 / 8 / 12 groups ahead: 7.7, 5.6, 4.9, 4.7-4.9, 4.9-5.3 ns a key
// with the keys made in the timed loop (0.64 ns of each), 4.2-4.4 with them read from
// an array; 128 keys ahead in groups of 32 / 64: 3.96-3.99 / 3.81-3.92 ns (fewer calls
// of the hash and the kernel), 192 in groups of 64: 3.93-4.12 ns. One group of 16 ahead
// with a group's prefetches all at once, until 27 Nov 2026: 9.6-10.2 ns. Without
// prefetches: groups of detail::kLookupGroup (16 until 29 Nov 2026, 32 since: 0.86-0.93 of
// the time at 10^4 keys on the Zen 5), one ahead (more only cost: 10^6 keys, 2.83 -> 2.98 ns).
inline constexpr std::size_t kPrefetchGroupsAhead = 2;

// From this size of the slices together, the blocks of the groups hashed before the first
// is answered (the first 128 keys, in every slice) are prefetched twice: as each group is
// hashed, and again just before the first group is answered. On an AMD EPYC Zen 3 guest
// (28 Nov 2026) many of the first prefetches of a call did not bring their line in time: of
// a burst of 96 or 128 random lines, those past about the 64th came from memory again when
// read 5 us later. One process alternating with one prefetch, medians of the per-round
// ratios (ranges over 2-4 runs of 30-40 rounds), one slice: 10^8 keys at 32 / 64 / 128 /
// 256 / 512 / 2048 keys a call 0.76-0.79 / 0.69-0.70 / 0.66-0.78 / 0.77-0.80 / 0.86-0.89 /
// 0.96-0.98 (so not only bursts past 64 lines gain); 10^7 keys (12.6 MB) at 128 / 256 / 512
// / 2048: 0.61 / 0.77 / 0.92 / 1.00; 10^6 keys (1.26 MB, from L3): 1.02-1.07 at 128, 0.98-1.01
// from 512. The floor lies between those two sizes; where exactly the second prefetch stops
// paying was not measured. One prefetch, whether as each group is hashed (as before) or only
// just before the first answer, gained nothing; shorter first bursts (groups of 16 two ahead)
// gained about as much on the Zen 3 but are slower where bursts are kept (the Zen 5 figures
// above).
inline constexpr std::uint64_t kPrefetchTwiceMinBytes = std::uint64_t{8} << 20;

// Answers n keys against the blocked slices slices[0, count) (newest first, taken once for
// the whole batch; count <= kMaxBlockedSlices) with the kernel lookup_group_for picks, and
// returns how many were found. hash(start, len, digests) writes the digests of keys
// [start, start + len). found[i] = some slice holds key i; then also(digests, len,
// group_found) may add what other slices hold (the plain filter's classic ones) and
// returns how many it added. When the slices together are at least the size from which a
// blocked slice is prefetched (detail::worth_prefetching: the core's L2 size, at most
// 2 MiB), keys go in
// groups of kGroup, hashed kPrefetchGroupsAhead groups ahead, and the kernel prefetches
// their blocks in every slice as it works (Lookahead; in slices of kPrefetchTwiceMinBytes
// or more together, the first groups' blocks are prefetched twice); otherwise in groups of
// detail::kLookupGroup, hashed one group ahead. Every slice, not only those as large as L2
// on their own: small slices that fit in L2 alone do not once the others' lines stream
// through it, and a prefetch of a line that is still there costs one instruction. Until
// 28 Nov 2026 only slices as large as L2 were; BM_batch_negative's 6 slices (37 KB to
// 1.4 MB, 2.7 MB in all) on an AMD EPYC Zen 3 (L2 512 KiB, the 4 smallest 597 KB
// together), in one process, alternating: 7 of 7 series faster, medians 48.2 / 48.9 /
// 46.7 / 49.7 / 48.6 / 55.6 / 56.6 -> 46.5 / 46.0 / 45.9 / 47.0 / 43.6 / 54.1 / 54.4 ns.
template <class Loads, class Hash, class Also>
std::size_t lookup_many(const SliceRef* slices, std::size_t count, std::size_t n, bool* found, Hash&& hash,
                        Also&& also) {
  std::uint64_t bytes = 0;
  for (std::size_t s = 0; s < count; ++s) bytes += slices[s].blocks * kBlockBytes;
  const std::size_t prefetched_count = detail::worth_prefetching(bytes, detail::PrefetchedLines::block, detail::BatchOp::lookup) ? count : 0;
  const bool first_groups_twice = bytes >= kPrefetchTwiceMinBytes;
  const LookupGroupFn lookup = lookup_group_for<Loads>(slices, count, prefetched_count);
  std::size_t hits = 0;
  const auto walk = [&]<bool kPrefetch>() {
    constexpr std::size_t kAhead = kPrefetch ? kPrefetchGroupsAhead : 1;
    constexpr std::size_t kGroupSize = kPrefetch ? kGroup : detail::kLookupGroup;
    std::array<std::span<const Digest128>, kAhead> first_groups{};  // hashed before any answer
    std::size_t first_count = 0;
    detail::for_each_group_ahead<Digest128, kAhead, kGroupSize>(
        n,
        [&](std::size_t start, std::size_t len, Digest128* digests, bool first) {
          hash(start, len, digests);
          if constexpr (kPrefetch) {
            if (first) {  // the first kAhead groups: first_count stays below kAhead
              prefetch_group(slices, count, digests, len);
              first_groups[first_count++] = {digests, len};
            }
          }
        },
        [&](std::size_t start, std::size_t len, const Digest128* digests, std::span<const Digest128> later) {
          // Nothing to prefetch: an empty Lookahead. GCC compiles each kernel's loop twice,
          // for keys to prefetch and for none, and this picks the second (at the avx2 cap, 6
          // slices, 12.0-12.4 -> 10.5-10.8 ns a key; 4 % slower at AVX-512:
          // bench/results/design-notes.md, "SIMD").
          Lookahead ahead;
          if constexpr (kPrefetch) {
            if (start == 0 && first_groups_twice) {  // their blocks again (kPrefetchTwiceMinBytes)
              for (const auto& group : first_groups) prefetch_group(slices, count, group.data(), group.size());
            }
            ahead = {slices, count, later.data(), later.size()};
          }
          hits += lookup(slices, count, digests, len, found + start, ahead);
          hits += also(digests, len, found + start);
        });
  };
  if (prefetched_count != 0) {
    walk.template operator()<true>();
  } else {
    walk.template operator()<false>();
  }
  return hits;
}

}  // namespace segbloom::blocked
