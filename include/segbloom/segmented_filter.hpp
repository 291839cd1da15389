// segbloom: the segmented scalable Bloom filter, written once for every cell type and
// probing scheme.
//
// A filter is a list of slices, oldest first. Writes go to the newest slice; once half
// of its cells are set, the next write opens a new slice (growing mode) or clears the
// oldest and reuses it as the newest (window mode). Reads check every slice.
//
// Rates. Growing mode gives slice i the rate p_i = p (1 - r) r^i, so the compound rate
// 1 - prod(1 - p_i) <= sum p_i < p however many slices are added (Almeida et al.,
// "Scalable Bloom Filters", 2007). Window mode gives each of its W slices p / W. Since a
// slice stops taking writes at half fill, where its rate is (1/2)^k_i <= p_i, the
// bound holds at every load.
//
// Thread safety: const member functions never modify the filter, so any number of
// threads may read one filter at once while nobody writes. Writes need exclusive access.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "segbloom/detail/batch.hpp"
#include "segbloom/hashing.hpp"
#include "segbloom/options.hpp"
#include "segbloom/sizing.hpp"
#include "segbloom/slice.hpp"

namespace segbloom {

// Statistics of one slice.
struct SliceStats {
  std::uint64_t capacity = 0;             // items it takes before it fills
  double false_positive_rate = 0;         // its target p_i
  unsigned probes = 0;                    // k_i
  std::uint64_t bits = 0;                 // m_i (cells)
  std::uint64_t items = 0;                // items written to it
  std::uint64_t set_cells = 0;            // cells set (non-zero)
  double fill_ratio = 0;                  // set_cells / bits
  double estimated_false_positive_rate = 0;  // fill_ratio^k
  std::uint64_t memory_bytes = 0;
};

// Statistics of a whole filter.
struct FilterStats {
  std::uint64_t size = 0;
  std::uint64_t memory_bytes = 0;
  std::uint64_t rotations = 0;  // window mode: slices cleared and reused so far
  double estimated_false_positive_rate = 0;
  std::vector<SliceStats> slices;  // oldest first
};

// Tag for the constructor that rebuilds a filter from stored parts (deserialization).
struct FromParts {
  explicit FromParts() = default;
};
inline constexpr FromParts from_parts{};

template <class Cells, class Scheme>
class SegmentedFilter {
 public:
  using slice_type = Slice<Cells, Scheme>;
  using Digest = typename Scheme::Digest;

  // Throws std::invalid_argument when `options` are out of range (see options.hpp).
  explicit SegmentedFilter(const Options& options = {}) : options_(checked(options)) {
    slices_.emplace_back(shape_of(0));
  }

  // Rebuilds a filter from its parts, as stored. Checks that the parts are consistent
  // (options valid, 1 to max slices, each slice's cells match its shape) and throws
  // std::invalid_argument naming what is not.
  SegmentedFilter(FromParts, const Options& options, std::vector<slice_type> slices,
                  std::uint64_t rotations)
      : options_(checked(options)), slices_(std::move(slices)), rotations_(rotations) {
    check_parts();
  }

  // --- Writes -------------------------------------------------------------------

  // Test-and-set: when some slice already reports the key, returns false; otherwise
  // sets the key's cells in the newest slice and returns true.
  // Growing mode writes nothing for a key already reported. Window mode, where old
  // slices are recycled, copies a key reported only by an older slice into the newest
  // one (and still returns false), so that every key among the most recent
  // capacity * (W-1) / W inserts stays found, whether or not its insert returned true.
  // Throws std::length_error when a growing filter would need more than 64 slices.
  template <Key K>
  bool insert(const K& key) {
    return insert_digest(digest(key));
  }

  bool insert_digest(const Digest& d) {
    const bool seen = contains_before_newest(d);
    if (seen && options_.max_slices == 0) return false;
    if (!slices_.back().full()) {
      // One pass over the newest slice: setting no new bit means it held the key.
      return slices_.back().add_if_new(d) && !seen;
    }
    if (slices_.back().contains(d)) return false;  // full: test before opening a slice
    writable_slice().add(d);
    return !seen;
  }

  // Inserts every key in order; `inserted`, if not empty, must have keys.size()
  // elements and receives each insert's result. Returns the number inserted. Same
  // results as inserting one by one; faster, because each group of keys is hashed and
  // prefetched before it is inserted.
  template <Key K>
  std::size_t insert_many(std::span<const K> keys, std::span<bool> inserted = {}) {
    detail::check_batch_output(keys.size(), inserted.size(), true);
    std::size_t count = 0;
    for_each_prefetched(keys, [&](std::size_t i, const Digest& d) {
      count += detail::record(inserted, i, insert_digest(d));
    });
    return count;
  }

  // Back to the state of a new filter with the same options (one empty slice).
  void clear() {
    slices_.erase(slices_.begin() + 1, slices_.end());
    slices_.front() = slice_type(shape_of(0));
    rotations_ = 0;
  }

  // --- Reads --------------------------------------------------------------------

  // True when the key is (probably) in the filter; never false for an inserted key
  // that window rotation has not dropped.
  template <Key K>
  bool contains(const K& key) const {
    return contains_digest(digest(key));
  }

  bool contains_digest(const Digest& d) const noexcept {
    return slices_.back().contains(d) || contains_before_newest(d);
  }

  // found[i] = contains(keys[i]); `found` must have keys.size() elements. Returns the
  // number found. Keys are taken in groups of 16: hashed, then the line each lookup
  // reads first is prefetched in every slice, then they are answered, so that up to
  // 16 x slices memory reads overlap instead of following one another.
  template <Key K>
  std::size_t contains_many(std::span<const K> keys, std::span<bool> found) const {
    detail::check_batch_output(keys.size(), found.size(), false);
    std::size_t count = 0;
    for_each_prefetched(keys, [&](std::size_t i, const Digest& d) {
      count += detail::record(found, i, contains_digest(d));
    });
    return count;
  }

  // The digest every operation computes once per key.
  template <Key K>
  Digest digest(const K& key) const {
    return Scheme::hash(key, options_.seed);
  }

  // --- Statistics ---------------------------------------------------------------

  // Items held: keys written to the slices now in the filter. In growing mode, exactly
  // the inserts that returned true; in window mode, items of recycled slices are gone
  // and a key refreshed from an older slice counts again.
  std::uint64_t size() const noexcept {
    std::uint64_t total = 0;
    for (const auto& s : slices_) total += s.items();
    return total;
  }

  std::size_t slice_count() const noexcept { return slices_.size(); }

  // Heap bytes of the cell arrays plus the filter's own bookkeeping.
  std::uint64_t memory_bytes() const noexcept {
    std::uint64_t total = sizeof(*this) + slices_.capacity() * sizeof(slice_type);
    for (const auto& s : slices_) total += s.memory_bytes();
    return total;
  }

  // 1 - prod(1 - fill_i^k_i) from the actual fill of each slice.
  double estimated_false_positive_rate() const noexcept {
    double rate = 0;
    for (const auto& s : slices_) rate = combine_rates(rate, s.estimated_false_positive_rate());
    return rate;
  }

  std::uint64_t rotations() const noexcept { return rotations_; }
  const Options& options() const noexcept { return options_; }
  const std::vector<slice_type>& slices() const noexcept { return slices_; }

  FilterStats stats() const {
    FilterStats stats;
    stats.size = size();
    stats.memory_bytes = memory_bytes();
    stats.rotations = rotations_;
    stats.estimated_false_positive_rate = estimated_false_positive_rate();
    for (const auto& s : slices_) {
      const SliceShape& shape = s.shape();
      stats.slices.push_back({shape.capacity, shape.false_positive_rate, shape.probes, shape.bits,
                              s.items(), s.cells().set_count(), s.fill_ratio(),
                              s.estimated_false_positive_rate(), s.memory_bytes()});
    }
    return stats;
  }

  friend bool operator==(const SegmentedFilter& a, const SegmentedFilter& b) noexcept {
    return a.options_ == b.options_ && a.rotations_ == b.rotations_ && a.slices_ == b.slices_;
  }

 protected:
  // The slice that takes the next write: the newest, after opening a new slice (growing
  // mode) or recycling the oldest (window mode) when the newest is full.
  slice_type& writable_slice() {
    if (!slices_.back().full()) return slices_.back();
    const std::uint32_t window = options_.max_slices;
    if (window == 0 || slices_.size() < window) {
      if (window == 0 && slices_.size() >= kMaxSlices) {
        throw std::length_error("segbloom: a growing filter reached " +
                                std::to_string(kMaxSlices) +
                                " slices; raise Options::capacity or Options::growth");
      }
      slices_.emplace_back(shape_of(static_cast<std::uint32_t>(slices_.size())));
    } else {
      std::rotate(slices_.begin(), slices_.begin() + 1, slices_.end());
      slices_.back().clear();
      ++rotations_;
    }
    return slices_.back();
  }

  std::vector<slice_type>& mutable_slices() noexcept { return slices_; }

  // Hashes keys in groups, prefetches each group's first line in every slice, then
  // calls op(index, digest) in order.
  template <Key K, class Op>
  void for_each_prefetched(std::span<const K> keys, Op&& op) const {
    constexpr std::size_t kGroup = 16;
    Digest digests[kGroup];
    for (std::size_t start = 0; start < keys.size(); start += kGroup) {
      const std::size_t n = std::min(kGroup, keys.size() - start);
      for (std::size_t i = 0; i < n; ++i) digests[i] = digest(keys[start + i]);
      for (const auto& s : slices_) {
        for (std::size_t i = 0; i < n; ++i) s.prefetch(digests[i]);
      }
      for (std::size_t i = 0; i < n; ++i) op(start + i, digests[i]);
    }
  }

 private:
  // Checks every slice but the newest, newest first.
  bool contains_before_newest(const Digest& d) const noexcept {
    for (std::size_t i = slices_.size() - 1; i-- > 0;) {
      if (slices_[i].contains(d)) return true;
    }
    return false;
  }

  static const Options& checked(const Options& options) {
    validate(options);
    if (options.layout == Layout::blocked && !slice_type::kBlockable) {
      throw std::invalid_argument(
          "segbloom: Options::layout = blocked is out of range for this filter kind; allowed: "
          "classic (the blocked layout needs the 128-bit XXH3 digest)");
    }
    return options;
  }

  SliceShape shape_of(std::uint32_t index) const { return planned_shape(options_, index); }

 public:
  // The shape slice `index` (0 = oldest opened) of a filter with these options gets
  // (deserialization checks stored slices against it). Throws std::length_error when the
  // slice is beyond the representable size or the scheme's limits.
  static SliceShape planned_shape(const Options& options, std::uint32_t index) {
    SliceShape shape =
        slice_shape(options, options.max_slices == 0 ? index : 0, Scheme::kMaxProbes);
    // A scheme with a probing or limits of its own (LevelDB's format) may adjust the shape,
    // or refuse it by throwing std::length_error, which reaches insert's caller like the
    // slice limit does.
    if constexpr (requires { Scheme::adjust_shape(shape); }) shape = Scheme::adjust_shape(shape);
    return shape;
  }

 private:
  void check_parts() const {
    const std::size_t limit = options_.max_slices == 0 ? kMaxSlices : options_.max_slices;
    if (slices_.empty() || slices_.size() > limit) {
      throw std::invalid_argument("segbloom: " + std::to_string(slices_.size()) +
                                  " slices stored; allowed: 1 to " + std::to_string(limit));
    }
    for (std::size_t i = 0; i < slices_.size(); ++i) {
      const SliceShape& shape = slices_[i].shape();
      const std::string where = "segbloom: slice " + std::to_string(i) + ": ";
      if (shape.bits == 0 || shape.bits % 64 != 0 || slices_[i].cells().size() != shape.bits) {
        throw std::invalid_argument(where + "cell count disagrees with its declared size");
      }
      if (shape.probes < 1 || shape.probes > Scheme::kMaxProbes) {
        throw std::invalid_argument(where + "probe count " + std::to_string(shape.probes) +
                                    " outside [1, " + std::to_string(Scheme::kMaxProbes) + "]");
      }
      if (shape.capacity == 0 || !(shape.false_positive_rate > 0 && shape.false_positive_rate < 1)) {
        throw std::invalid_argument(where + "capacity or rate out of range");
      }
    }
  }

  Options options_;
  std::vector<slice_type> slices_;  // oldest first; never empty
  std::uint64_t rotations_ = 0;
};

}  // namespace segbloom
