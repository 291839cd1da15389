// segbloom: lookups straight from a stored envelope, without loading the filter.
//
// The request path of a seen-items service: fetch a user's blob, check a few hundred
// candidates, drop it. FilterView checks the whole blob once (exactly as from_bytes
// does: header, checksum, every field), then answers contains from the blob's own bytes:
// no copy of the cells, no allocation, on any host (cells are read as the little-endian
// words they are stored as, by unaligned loads). It answers exactly as the filter
// from_bytes would return, with the same lookups: a blocked slice's SIMD kernels and a
// classic slice's word-wise probes, reading the blob in place (blocked::StoredLoads).
//
//   std::string blob = store.get(user);               // to_bytes(filter), earlier
//   segbloom::FilterView seen(blob);                  // throws FormatError when corrupt
//   for (auto& video : candidates) if (!seen.contains(video.id)) show(video);
//
// Any registered kind (filter_kinds.hpp); kind() tells which. The view borrows the blob:
// it must stay alive and unchanged while the view is used. Read-only, so any number of
// threads may use one view at once.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "segbloom/blocked.hpp"
#include "segbloom/clock.hpp"
#include "segbloom/detail/batch.hpp"
#include "segbloom/detail/slices_by_layout.hpp"
#include "segbloom/envelope.hpp"
#include "segbloom/errors.hpp"
#include "segbloom/filter_kinds.hpp"
#include "segbloom/hashing.hpp"
#include "segbloom/options.hpp"
#include "segbloom/probing.hpp"
#include "segbloom/sizing.hpp"
#include "segbloom/slice.hpp"

namespace segbloom {

class FilterView {
 public:
  // Checks `blob` (one envelope of any registered kind) and keeps pointers into it.
  // Throws FormatError naming what is wrong, for every blob from_bytes refuses.
  explicit FilterView(std::string_view blob, const LoadLimits& limits = {});

  // The same, for a filter with Options::slice_lifetime: slices that have expired by
  // clock.now() (which the filter's next write would drop) never answer.
  FilterView(std::string_view blob, const LoadLimits& limits, const Clock& clock);

  // True when the key is (probably) in the stored filter: the stored filter's answer.
  template <Key K>
  bool contains(const K& key) const {
    bool found = false;
    visit_kind(FilterKinds{}, kind_, [&]<class F>() { found = contains_as<F>(key); });
    return found;
  }

  // found[i] = contains(keys[i]); `found` must have keys.size() elements (else
  // std::invalid_argument). Returns the number found. Keys are hashed a group at a
  // time (several at once), then each group asks the slices newest first, an older
  // slice only about the keys no newer one holds, as SegmentedFilter::contains_many: a
  // filter with a blocked slice through blocked::lookup_many (groups of 32, or of 64 with
  // prefetches when its slices are larger than L2; classic slices after it), others 32
  // keys at a time (detail::kLookupGroup), without prefetches.
  template <Key K>
  std::size_t contains_many(std::span<const K> keys, std::span<bool> found) const {
    detail::check_batch_output(keys.size(), found.size(), false);
    std::size_t count = 0;
    visit_kind(FilterKinds{}, kind_, [&]<class F>() { count = contains_many_as<F>(keys, found); });
    return count;
  }

  std::uint8_t kind() const noexcept { return kind_; }
  const Options& options() const noexcept { return options_; }
  std::size_t slice_count() const noexcept { return count_; }
  std::uint64_t rotations() const noexcept { return rotations_; }
  // Items held, as the stored filter's size().
  std::uint64_t size() const noexcept {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < count_; ++i) total += slices_[i].items;
    return total;
  }

 private:
  struct StoredSlice {
    SliceShape shape;
    const unsigned char* cells = nullptr;  // inside the blob
    std::uint64_t items = 0;
    UnixSeconds opened_at = 0;  // timed filters
  };

  // Slice i as the kind's own Slice (its layout and probing scheme) over a read-only
  // view of the stored cells, so that a view answers with the filter's own code.
  template <class F>
  auto slice_as(std::size_t i) const noexcept {
    using View = typename CellsLayout<typename F::slice_type::cells_type>::View;
    return Slice<View, typename F::slice_type::scheme_type>(slices_[i].shape, View{slices_[i].cells},
                                                             slices_[i].items);
  }

  // Newest slice first, as SegmentedFilter::contains.
  template <class F, class K>
  bool contains_as(const K& key) const {
    const auto digest = F::slice_type::scheme_type::hash(key, options_.seed);
    for (std::size_t i = count_; i-- > first_;) {
      if (slice_as<F>(i).contains(digest)) return true;
    }
    return false;
  }

  template <class F, class K>
  std::size_t contains_many_as(std::span<const K> keys, std::span<bool> found) const {
    using Scheme = typename F::slice_type::scheme_type;
    if (first_ == count_) {  // every slice expired
      std::fill(found.begin(), found.end(), false);
      return 0;
    }
    if constexpr (std::is_same_v<typename F::slice_type::cells_type, BitCells> && F::slice_type::kBlockable) {
      for (std::size_t s = first_; s < count_; ++s) {
        if (slices_[s].shape.layout == Layout::blocked) return contains_many_blocked<F>(keys, found);
      }
    }
    std::size_t count = 0;
    typename Scheme::Digest digests[detail::kLookupGroup];
    for (std::size_t start = 0; start < keys.size(); start += detail::kLookupGroup) {
      const std::size_t n = std::min(detail::kLookupGroup, keys.size() - start);
      hash_group<Scheme>(keys, start, n, options_.seed, digests);
      count += detail::answer_newest_first(count_ - first_, [&](std::size_t s, bool only_missing) {
        return slice_as<F>(first_ + s).contains_group(digests, n, found.data() + start, only_missing);
      });
    }
    return count;
  }

  // As SegmentedFilter::contains_many (detail::lookup_slices) when a slice is blocked: the
  // blocked slices, newest first, in blocked/lookup_group.hpp's group kernels (reading the
  // blob in place through StoredLoads), then the classic ones about the keys those do not hold.
  template <class F, class K>
  std::size_t contains_many_blocked(std::span<const K> keys, std::span<bool> found) const {
    using Scheme = typename F::slice_type::scheme_type;
    const detail::SlicesByLayout all(first_, count_, [this](std::size_t s) { return slice_as<F>(s); });
    return blocked::lookup_many<blocked::StoredLoads>(
        all.refs(), all.blocked_count(), keys.size(), found.data(),
        [&](std::size_t start, std::size_t n, Digest128* digests) {
          hash_group<Scheme>(keys, start, n, options_.seed, digests);
        },
        [&](const Digest128* digests, std::size_t n, bool* group_found) {
          return all.ask_classic(digests, n, group_found);
        });
  }

  template <class F>
  void parse(std::string_view payload, const LoadLimits& limits);

  std::array<StoredSlice, kMaxSlices> slices_{};  // oldest first
  std::size_t count_ = 0;
  std::size_t first_ = 0;  // slices before it expired (timed filters viewed with a clock)
  Options options_;
  std::uint64_t rotations_ = 0;
  std::uint8_t kind_ = 0;
};

}  // namespace segbloom
