// segbloom: a batch of lookups over a list of slices, written once for the plain filters
// (SegmentedFilter::contains_many asks its slices) and a transition pair
// (TransitionFilter::contains_many asks both filters' slices together: a key is in the
// pair when a slice of either holds it, and both filters share one seed).
//
// The path depends on the slices:
// - any blocked slice: blocked/lookup_many.hpp's group kernel tests each key's block in
//   every blocked slice and prefetches the blocks of keys further on; classic slices (a
//   growing filter's tightest slices may fall back to classic, one filter of a pair may be
//   classic) are then asked, a group per slice in one call, only about the keys no
//   blocked slice holds;
// - all classic, of a scheme with a group test (the XXH3 one): groups of kLookupGroup
//   keys ask the slices newest first, each slice the group in one call
//   (Slice::contains_group: 8 keys at a time in vectors on AVX-512 CPUs, 4 on AVX2), an
//   older slice only about the keys no newer one holds, each group's lines prefetched
//   one group ahead in every slice large enough (Slice::worth_prefetching); slices too
//   large for the cache together screen each key's first two probes before reading the
//   others instead (worth_screening, detail/screened_lookup.hpp);
// - otherwise (LevelDB's probing; counting slices of which some are blocked) key by key,
//   newest slice first, each group of kBatchGroup keys hashed and prefetched ahead.
//
// Measured for the classic group path when it came (alternating builds, medians): one
// slice, 10^6 u64 keys, p = 1 %, batched negatives 5.5-6.0 -> 5.1-5.3 ns, 10^7 keys
// 9.7-10.0 -> 8.3-9.1 ns; grown filters, which asked each key's slices in turn until
// 28 Nov 2026 (Zen 3, 5 processes each): a user's filter of 3 slices in cache
// (BM_user_filter, 512 absent keys a call) 36.4 -> 25.3 ns, 6 slices of 10^6 keys
// (BM_batch_negative) 188 -> 122 ns, one slice 17.4 -> 17.8 (within this host's spread);
// present keys of the user's filter 1.09x, an older slice testing the keys a newer one
// missed after the group rather than right after it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "segbloom/bit_cells.hpp"
#include "segbloom/blocked.hpp"
#include "segbloom/detail/batch.hpp"
#include "segbloom/detail/prefetch.hpp"
#include "segbloom/detail/screened_lookup.hpp"
#include "segbloom/detail/slices_by_layout.hpp"
#include "segbloom/options.hpp"
#include "segbloom/slice.hpp"

namespace segbloom::detail {

// Pointers to slices, oldest first, as lookup_slices takes them: a filter's, or a
// transition pair's previous then current filter's.
template <class SliceT>
class SliceList {
 public:
  template <class Slices>
  void add(const Slices& slices) noexcept {  // at most kMaxSlices: a filter's
    for (const SliceT& s : slices) at_[size_++] = &s;
  }
  std::span<const SliceT* const> span() const noexcept { return {at_, size_}; }

 private:
  const SliceT* at_[kMaxAskedSlices];
  std::size_t size_ = 0;
};

// The slice an element of a list of slices names: the slice, or the one it points to.
template <class SliceT>
const SliceT& slice_of(const SliceT& slice) noexcept {
  return slice;
}
template <class SliceT>
const SliceT& slice_of(const SliceT* slice) noexcept {
  return *slice;
}

// Hashes `count` keys in groups of kGroupSize (hash(start, n, digests)) and prefetches
// each group's lines (Slice::prefetch) in every slice of `slices` (slices, or pointers to
// them) worth it for a batch of `op`s (Slice::worth_prefetching, decided per slice, not
// per key), one group ahead (for_each_group_ahead), then calls use(start, n, digests) per
// group. For lookups here, for inserts in SegmentedFilter and CountingBloomFilter.
template <class Digest, std::size_t kGroupSize, class Slices, class Hash, class Use>
void for_each_group_prefetched(const Slices& slices, BatchOp op, std::size_t count, Hash& hash, Use&& use) {
  for_each_group_ahead<Digest, 1, kGroupSize>(
      count,
      [&](std::size_t start, std::size_t n, Digest* digests, bool) {
        hash(start, n, digests);
        for (const auto& element : slices) {
          const auto& slice = slice_of(element);
          if (!slice.worth_prefetching(op)) continue;
          for (std::size_t i = 0; i < n; ++i) slice.prefetch(digests[i]);
        }
      },
      [&use](std::size_t start, std::size_t n, const Digest* digests, std::span<const Digest>) {
        use(start, n, digests);
      });
}

// found[i] = whether a slice of `slices` (oldest first, 1 to kMaxAskedSlices of them)
// holds key i, for i < count; returns how many keys are found. hash(start, n, out) writes
// the digests of keys start .. start + n - 1 (as the filter's digest()).
template <class SliceT, class Hash>
std::size_t lookup_slices(std::span<const SliceT* const> slices, std::size_t count, bool* found, Hash&& hash) {
  using Cells = typename SliceT::cells_type;
  using Scheme = typename SliceT::scheme_type;
  using Digest = typename SliceT::Digest;
  // Bit slices that may be blocked (the XXH3 scheme's), and slices of a scheme with a group
  // test (the XXH3 one) over bits or packed counters.
  constexpr bool kMayBeBlocked = SliceT::kBlockable && std::is_same_v<Cells, BitCells>;
  constexpr bool kGroupTest = (std::is_same_v<Cells, BitCells> || PackedCounterWords<Cells>) &&
                              requires(const Digest* d, bool* f) {
                                Scheme::all_set_many([](std::uint64_t) { return std::uint64_t{0}; }, d, 1, 64, 1u, f, false);
                              };
  const auto is_classic = [](const SliceT* s) { return s->shape().layout == Layout::classic; };
  if constexpr (kMayBeBlocked) {
    if (!std::all_of(slices.begin(), slices.end(), is_classic)) {
      const SlicesByLayout all(0, slices.size(), [slices](std::size_t s) -> const SliceT& { return *slices[s]; });
      return blocked::lookup_many<blocked::PlainLoads>(
          all.refs(), all.blocked_count(), count, found, hash,
          [&all](const Digest* digests, std::size_t n, bool* group_found) {
            return all.ask_classic(digests, n, group_found);
          });
    }
  }
  // All classic from here on.
  const auto by_groups = [&] {
    if constexpr (SliceT::kScreenable) {
      if (worth_screening(slices)) return screened_lookup<SliceT, Digest>(slices, count, found, hash);
    }
    std::size_t hits = 0;
    for_each_group_prefetched<Digest, kLookupGroup>(
        slices, BatchOp::lookup, count, hash, [&](std::size_t start, std::size_t n, const Digest* digests) {
          hits += answer_newest_first(slices.size(), [&](std::size_t s, bool only_missing) {
            return slices[s]->contains_group(digests, n, found + start, only_missing);
          });
        });
    return hits;
  };
  if constexpr (kMayBeBlocked && kGroupTest) {
    return by_groups();
  } else {
    if constexpr (kGroupTest) {
      if (std::all_of(slices.begin(), slices.end(), is_classic)) return by_groups();
    }
    std::size_t hits = 0;  // key by key
    for_each_group_prefetched<Digest, kBatchGroup>(
        slices, BatchOp::lookup, count, hash, [&](std::size_t start, std::size_t n, const Digest* digests) {
          for (std::size_t i = 0; i < n; ++i) {
            bool hit = false;
            for (std::size_t s = slices.size(); s-- > 0 && !hit;) hit = slices[s]->contains(digests[i]);
            hits += found[start + i] = hit;
          }
        });
    return hits;
  }
}

}  // namespace segbloom::detail
