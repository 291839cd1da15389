// segbloom: lookups straight from a stored envelope, without loading the filter.
//
// The request path of a seen-items service: fetch a user's blob, check a few hundred
// candidates, drop it. FilterView checks the whole blob once (as from_bytes does: header,
// checksum, every field), then answers contains from the blob's own bytes:
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
#include "segbloom/detail/lookup_slices.hpp"
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
  // Throws FormatError naming what is wrong, for every blob from_bytes refuses but one: a
  // bit slice counting fewer items than its set cells need (set / k): that needs the set
  // bits of every cell array counted, a second pass over the blob after the checksum's,
  // which from_bytes makes as it copies the cells and the view does not. Its answers do not
  // depend on the count; size() reports it as stored.
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
  // std::invalid_argument). Returns the number found. The stored slices answer in the
  // loaded filter's batch path (detail::lookup_slices), read in place: blocked slices
  // through blocked::lookup_many (prefetching blocks when they are larger than L2), classic
  // ones after them; classic bit slices a group of detail::kLookupGroup keys at a time,
  // newest first, an older slice only about the keys no newer one holds; counting and
  // LevelDB-format slices key by key.
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
    // Its full point (full_cells), planned once here: a Slice made at each lookup would
    // plan it per slice per key (up to 107x a loaded filter's contains at 21 slices, whose
    // shapes overflow the sizing's memo, until 2 Dec 2026).
    std::uint64_t full_cells = 0;
  };

  // The kind's own Slice (its layout and probing scheme) over a read-only view of stored
  // cells, so that a view answers with the filter's own code.
  template <class F>
  using SliceAs = Slice<typename CellsLayout<typename F::slice_type::cells_type>::View,
                        typename F::slice_type::scheme_type>;

  // Slice i as a SliceAs<F>.
  template <class F>
  SliceAs<F> slice_as(std::size_t i) const noexcept {
    const StoredSlice& s = slices_[i];
    return SliceAs<F>(s.shape, typename SliceAs<F>::cells_type{s.cells}, s.items, detail::PlannedFullCells{s.full_cells});
  }

  // Newest slice first, as SegmentedFilter::contains.
  template <class F, class K>
  bool contains_as(const K& key) const {
    return contains_digest_as<F>(F::slice_type::scheme_type::hash(key, options_.seed));
  }

  // Whether the key whose digest (the kind's, under this view's seed) is `digest` is in the
  // view, newest slice first. TransitionView asks both its views with one digest: they share
  // one seed.
  template <class F>
  bool contains_digest_as(const typename F::slice_type::Digest& digest) const noexcept {
    for (std::size_t i = count_; i-- > first_;) {
      if (slice_as<F>(i).contains(digest)) return true;
    }
    return false;
  }

  template <class F, class K>
  std::size_t contains_many_as(std::span<const K> keys, std::span<bool> found) const {
    const FilterView* const self[] = {this};
    return contains_many_in<F>(self, keys, found);
  }

  // As SegmentedFilter::contains_many (detail::lookup_slices) over the slices that answer
  // of `views` (oldest filter first, null ones skipped; all of kind F with one seed), each a
  // Slice over the blob's cells (slice_as). One view, or a TransitionView's two.
  template <class F, class K, std::size_t kViews>
  static std::size_t contains_many_in(const FilterView* const (&views)[kViews], std::span<const K> keys,
                                      std::span<bool> found) {
    detail::HeldSlices<SliceAs<F>, kViews * kMaxSlices> held;
    for (const FilterView* view : views) {
      if (view == nullptr) continue;
      for (std::size_t s = view->first_; s < view->count_; ++s) held.add(view->slice_as<F>(s));
    }
    const std::uint64_t seed = views[kViews - 1]->options_.seed;
    return detail::lookup_slices(held.span(), keys.size(), found.data(),
                                 [keys, seed](std::size_t start, std::size_t n, auto* digests) {
                                   hash_group<typename F::slice_type::scheme_type>(keys, start, n, seed, digests);
                                 });
  }

  friend class TransitionView;  // one digest a key for both filters (contains_digest_as, contains_many_in)

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
