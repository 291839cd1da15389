// segbloom: a batch of lookups over a list of slices, written once for every filter that
// answers contains_many: the plain filters (SegmentedFilter asks its slices), a transition
// pair (TransitionFilter asks both filters' slices together: a key is in the pair when a
// slice of either holds it, and both filters share one seed), the concurrent filter (its
// live slices, read with relaxed loads: ConcurrentSlice) and the views of stored filters
// (FilterView, TransitionView: slices over the blob's cells, read in place).
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
// - otherwise (LevelDB's probing; counting slices of which some are blocked; a view's
//   counters) key by key, newest slice first, each group of kBatchGroup keys hashed and
//   prefetched ahead.
// A slice type says which of these it can take: kBlockable and slice_ref() (the blocked
// kernels, reading blocks with its BlockLoads), kGroupTest, kScreenable.
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
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ranges>
#include <span>
#include <type_traits>

#include "segbloom/blocked.hpp"
#include "segbloom/detail/batch.hpp"
#include "segbloom/detail/prefetch.hpp"
#include "segbloom/detail/screened_lookup.hpp"
#include "segbloom/detail/slices_by_layout.hpp"
#include "segbloom/options.hpp"
#include "segbloom/slice.hpp"

namespace segbloom::detail {

// Pointers to slices, oldest first, as lookup_slices takes them: a filter's, a
// transition pair's previous then current filter's, or a concurrent filter's live ones.
template <class SliceT, std::size_t kCapacity = kMaxAskedSlices>
class SliceList {
 public:
  void add(const SliceT& slice) noexcept {
    assert(size_ < kCapacity);
    at_[size_++] = &slice;
  }
  template <std::ranges::range Slices>
  void add(const Slices& slices) noexcept {
    for (const SliceT& s : slices) add(s);
  }
  std::span<const SliceT* const> span() const noexcept { return {at_, size_}; }

 private:
  const SliceT* at_[kCapacity];
  std::size_t size_ = 0;
};

// Slices made for one batch, at most kCapacity, and the list of them: a view's (FilterView,
// TransitionView), built by value over a blob's cells. SliceT must not own its cells. The
// storage is left uninitialised until a slice is added (a request's batch takes a few
// microseconds; an array of std::optional measured 1.05x on BM_request_view_batch_500).
// Neither copied nor moved: the list points into the storage.
template <class SliceT, std::size_t kCapacity>
class HeldSlices {
  static_assert(std::is_trivially_copyable_v<SliceT> && std::is_trivially_destructible_v<SliceT>);

 public:
  HeldSlices() noexcept {}  // held_ uninitialised
  HeldSlices(const HeldSlices&) = delete;
  HeldSlices& operator=(const HeldSlices&) = delete;

  void add(const SliceT& slice) noexcept { list_.add(*std::construct_at(&held_[list_.span().size()].slice, slice)); }
  std::span<const SliceT* const> span() const noexcept { return list_.span(); }

 private:
  union Held {
    Held() noexcept {}
    SliceT slice;
  };
  Held held_[kCapacity];
  SliceList<SliceT, kCapacity> list_;
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

// Prefetches the lines of n keys in every slice of `slices` (slices, or pointers to them)
// worth it for a batch of `op`s (Slice::worth_prefetching, decided per slice, not per key).
template <class Slices, class Digest>
void prefetch_group(const Slices& slices, BatchOp op, const Digest* digests, std::size_t n) noexcept {
  for (const auto& element : slices) {
    const auto& slice = slice_of(element);
    if (!slice.worth_prefetching(op)) continue;
    slice.prefetch(digests, n);
  }
}

// Hashes `count` keys in groups of kGroupSize (hash(start, n, digests)), prefetches each
// group's lines in `slices` (prefetch_group) one group ahead (for_each_group_ahead), then
// calls use(start, n, digests) per group. For lookups here, for inserts in
// SegmentedFilter, CountingBloomFilter and TransitionFilter.
template <class Digest, std::size_t kGroupSize, class Slices, class Hash, class Use>
void for_each_group_prefetched(const Slices& slices, BatchOp op, std::size_t count, Hash& hash, Use&& use) {
  for_each_group_ahead<Digest, 1, kGroupSize>(
      count,
      [&](std::size_t start, std::size_t n, Digest* digests, bool) {
        hash(start, n, digests);
        prefetch_group(slices, op, static_cast<const Digest*>(digests), n);
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
  using Digest = typename SliceT::Digest;
  // Slices the blocked kernels can read (bit slices of 128-bit digests), and slices whose
  // classic layout answers a group at once (the XXH3 scheme's bits or packed counters).
  constexpr bool kMayBeBlocked = SliceT::kBlockable && requires(const SliceT& s) { s.slice_ref(); };
  if (slices.empty()) {  // a view whose slices have all expired
    std::fill_n(found, count, false);
    return 0;
  }
  const auto is_classic = [](const SliceT* s) { return s->shape().layout == Layout::classic; };
  if constexpr (kMayBeBlocked) {
    if (!std::all_of(slices.begin(), slices.end(), is_classic)) {
      const SlicesByLayout all(0, slices.size(), [slices](std::size_t s) -> const SliceT& { return *slices[s]; });
      return blocked::lookup_many<typename SliceT::BlockLoads>(
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
    // Lookups change no slice: the slices worth prefetching are picked once per batch.
    SliceList<SliceT> prefetched;
    for (const SliceT* s : slices) {
      if (s->worth_prefetching(BatchOp::lookup)) prefetched.add(*s);
    }
    std::size_t hits = 0;
    for_each_group_prefetched<Digest, kLookupGroup>(
        prefetched.span(), BatchOp::lookup, count, hash, [&](std::size_t start, std::size_t n, const Digest* digests) {
          hits += answer_newest_first(slices.size(), [&](std::size_t s, bool only_missing) {
            return slices[s]->contains_group(digests, n, found + start, only_missing);
          });
        });
    return hits;
  };
  if constexpr (kMayBeBlocked && SliceT::kGroupTest) {
    return by_groups();
  } else {
    if constexpr (SliceT::kGroupTest) {
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
