// segbloom: lookups straight from a stored envelope, without loading the filter.
//
// The request path of a seen-items service: fetch a user's blob, check a few hundred
// candidates, drop it. FilterView checks the whole blob once (exactly as from_bytes
// does: header, checksum, every field), then answers contains from the blob's own bytes:
// no copy of the cells, no allocation, on any host (cells are read byte-wise as the
// little-endian words they are stored as). It answers exactly as the filter from_bytes
// would return.
//
//   std::string blob = store.get(user);               // to_bytes(filter), earlier
//   segbloom::FilterView seen(blob);                  // throws FormatError when corrupt
//   for (auto& video : candidates) if (!seen.contains(video.id)) show(video);
//
// Any registered kind (filter_kinds.hpp); kind() tells which. The view borrows the blob:
// it must stay alive and unchanged while the view is used. Read-only, so any number of
// threads may use one view at once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "segbloom/clock.hpp"
#include "segbloom/envelope.hpp"
#include "segbloom/errors.hpp"
#include "segbloom/filter_kinds.hpp"
#include "segbloom/hashing.hpp"
#include "segbloom/options.hpp"
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
  // std::invalid_argument). Returns the number found.
  template <Key K>
  std::size_t contains_many(std::span<const K> keys, std::span<bool> found) const {
    if (found.size() != keys.size()) {
      throw std::invalid_argument("segbloom: output span has " + std::to_string(found.size()) +
                                  " elements for " + std::to_string(keys.size()) + " keys");
    }
    std::size_t count = 0;
    visit_kind(FilterKinds{}, kind_, [&]<class F>() {
      for (std::size_t i = 0; i < keys.size(); ++i) {
        found[i] = contains_as<F>(keys[i]);
        count += found[i];
      }
    });
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
  struct SliceRef {
    SliceShape shape;
    const unsigned char* cells = nullptr;  // inside the blob
    std::uint64_t items = 0;
    UnixSeconds opened_at = 0;  // timed filters
  };

  // Newest slice first, as SegmentedFilter::contains. Each slice is the kind's own Slice
  // (its layout and probing scheme) over a read-only view of the stored cells.
  template <class F, class K>
  bool contains_as(const K& key) const {
    using Scheme = typename F::slice_type::scheme_type;
    using View = typename CellsLayout<typename F::slice_type::cells_type>::View;
    const auto digest = Scheme::hash(key, options_.seed);
    for (std::size_t i = count_; i-- > first_;) {
      const Slice<View, Scheme> slice(slices_[i].shape, View{slices_[i].cells}, slices_[i].items);
      if (slice.contains(digest)) return true;
    }
    return false;
  }

  template <class F>
  void parse(std::string_view payload, const LoadLimits& limits);

  std::array<SliceRef, kMaxSlices> slices_{};  // oldest first
  std::size_t count_ = 0;
  std::size_t first_ = 0;  // slices before it expired (timed filters viewed with a clock)
  Options options_;
  std::uint64_t rotations_ = 0;
  std::uint8_t kind_ = 0;
};

}  // namespace segbloom
