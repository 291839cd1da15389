// segbloom: the counting segmented filter, which supports removal.
//
//   segbloom::Options opts;
//   opts.capacity = 2000;
//   opts.false_positive_rate = 0.001;
//   segbloom::CountingBloomFilter shown(opts);
//   shown.insert(std::uint64_t{4711});           // the user saw video 4711
//   shown.remove(std::uint64_t{4711});           // ... and skipped it: eligible again
//   segbloom::ScalableBloomFilter serving = shown.to_plain();  // a quarter of the memory
//
// Same Options, modes (growing and window), slice sizing, half-full trigger (a slice
// is full when half of its counters are non-zero), hashing and key types as
// ScalableBloomFilter; each bit becomes a 4-bit counter (counter_cells.hpp), so a
// counting filter takes 4x the memory of the plain filter at the same options.
//
// Semantics.
// - insert(key) counts: inserting a key twice needs two removes before it is gone.
//   Returns true when no slice reported the key before (it is new), false otherwise.
// - insert_if_absent(key) is the plain filter's test-and-set: when the key is
//   (probably) present it changes nothing and returns false.
// - remove(key): when some slice reports the key, decrements the key's counters in
//   the oldest slice that reports it, counts one item less there and returns true;
//   when no slice reports it, returns false and changes nothing (but that, as every
//   write of a timed filter, it first drops the expired slices; so does
//   insert_if_absent).
// - contains(key): some slice reports the key (all k of its counters non-zero).
// - count_estimate(key): the minimum of the key's counters, summed over slices; at
//   least the key's count while no counter saturated (15 per slice at most).
//
// Where a key's count lives. A key's whole count is kept in one slice, its "holder":
// the oldest slice that reports it. insert adds to the holder when there is one, and
// opens the key in the newest (writable) slice otherwise; remove takes from the holder.
// Why the oldest, and not the newest, slice: only the newest slice ever gets a counter
// 0 -> 1; older slices only lose non-zero counters. So once a key is counted in slice
// h, no slice older than h can start to report it, and h stays its oldest reporter
// while its count is positive. remove therefore always decrements the slice that holds
// the key's own increments, whatever other slices report it falsely, and removing an
// inserted key never takes another key's counter below that key's own count: no
// false negatives, in either mode. (Decrementing the newest reporter instead would,
// with probability up to the false-positive rate per remove, decrement a newer slice
// that only falsely reports the key, and lose keys of that slice.) Adding to a slice
// that already reports the key sets no new counter, so it does not fill the slice or
// raise its false-positive rate.
//
// Window mode. A key is forgotten when the slice holding its count is recycled. A key
// that is opened in the newest slice (insert returned true) stays found, until it is
// removed as often as inserted, through at least the next capacity * (W-1) / W keys
// opened, as in the plain filter. Unlike the plain filter, inserting a key already
// held by an older slice does not copy it into the newest slice: it adds to its count
// where it is, and the key is forgotten with that slice. (Copying would leave the
// count in two slices, and no remove could then tell a slice that holds the key from
// one that reports it falsely; exact removal wins over refreshing.) insert_if_absent
// follows the same rule: it changes nothing for a key any slice reports.
//
// Time windows (Options::slice_lifetime = L), likewise: a key is forgotten when the slice
// holding its count expires. A key opened in the newest slice at time t stays found while
// the clock reads less than t + L; inserting it again adds to its count where it is and
// does not extend that (the plain filter copies it forward).
//
// Removing what was not inserted. A filter cannot tell a false positive from a member:
// remove of a key that some slice falsely reports (or of a key removed more often than
// inserted, or of a key whose slice was recycled but another slice falsely reports)
// returns true and decrements counters that belong to other keys, which can then be
// reported absent. Remove only keys you inserted; a key no slice reports is safe to
// remove (false, no change).
//
// Saturation. A counter that reaches 15 stays at 15 (see counter_cells.hpp), so a
// remove never takes it down and never loses a key that shares it; the key inserted 15
// or more times may stay reported after all its removes. saturated_counters() and
// stats().saturated_counters count them.
//
// Thread safety: as SegmentedFilter (any number of readers, or one writer).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "segbloom/bit_cells.hpp"
#include "segbloom/counter_cells.hpp"
#include "segbloom/probing.hpp"
#include "segbloom/scalable_bloom_filter.hpp"
#include "segbloom/segmented_filter.hpp"

namespace segbloom {

// FilterStats plus the saturated counters.
struct CountingFilterStats : FilterStats {
  std::uint64_t saturated_counters = 0;              // over all slices
  std::vector<std::uint64_t> saturated_per_slice;    // oldest first, as `slices`
};

class CountingBloomFilter : public SegmentedFilter<CounterCells, DoubleHashingScheme> {
  using Base = SegmentedFilter<CounterCells, DoubleHashingScheme>;

 public:
  using Base::Base;  // (options) and (from_parts, options, slices, rotations)

  // --- Writes -------------------------------------------------------------------

  // Counts one more of `key` in its holder, or in the newest slice when no slice
  // reports it. Returns true in the latter case (the key was new).
  // Throws std::length_error when a growing filter would need more than 64 slices.
  template <Key K>
  bool insert(const K& key) {
    return insert_digest(digest(key));
  }

  bool insert_digest(const Digest& d) {
    const UnixSeconds now = time_now();
    expire_at(now);  // timed filters: a holder must not be an expired slice
    const std::size_t holder = oldest_holder(d);
    if (holder != kNone) {
      mutable_slices()[holder].add(d);
      return false;
    }
    open_writable(now).add(d);
    return true;
  }

  // Test-and-set: false and no change when the key is (probably) present; otherwise
  // inserts it (count 1) and returns true.
  template <Key K>
  bool insert_if_absent(const K& key) {
    return insert_if_absent_digest(digest(key));
  }

  bool insert_if_absent_digest(const Digest& d) {
    const UnixSeconds now = time_now();
    expire_at(now);
    if (contains_digest(d)) return false;
    open_writable(now).add(d);
    return true;
  }

  // Counting insert of every key in order; `inserted`, if not empty, must have
  // keys.size() elements and receives each insert's result (std::invalid_argument
  // otherwise). Returns the number of keys that were new. Same results and counters as
  // inserting one by one; faster, because each group of keys is hashed and prefetched
  // before it is inserted, and the newest slice takes a group at once while it has room
  // for all of it (insert_group).
  template <Key K>
  std::size_t insert_many(std::span<const K> keys, std::span<bool> inserted = {}) {
    detail::check_batch_output(keys.size(), inserted.size(), true);
    std::size_t count = 0;
    auto hash = hasher(keys);
    for_each_group_prefetched(insert_op(), keys.size(), hash, [&](std::size_t start, std::size_t n, const Digest* d) {
      if (insert_group(d, n, inserted, start, count)) return;
      for (std::size_t i = 0; i < n; ++i) count += detail::record(inserted, start + i, insert_digest(d[i]));
    });
    return count;
  }

  // Takes one count of `key` from its holder (the oldest slice reporting it) and
  // returns true; returns false and changes nothing when no slice reports it.
  template <Key K>
  bool remove(const K& key) {
    return remove_digest(digest(key));
  }

  bool remove_digest(const Digest& d) {
    expire();
    const std::size_t holder = oldest_holder(d);
    if (holder == kNone) return false;
    slice_type& slice = mutable_slices()[holder];
    CounterCells& cells = slice.cells();
    slice.probe(d, [&cells](std::uint64_t cell) {
      cells.unmark(cell);  // a counter the key hits twice was incremented twice
      return true;
    });
    if (slice.items() > 0) slice.set_items(slice.items() - 1);
    return true;
  }

  // --- Reads (contains, contains_many: as SegmentedFilter) ----------------------

  // Sum over slices of the minimum of the key's k counters. 0 exactly when
  // contains(key) is false; otherwise at least the key's count (unless saturated), and
  // more when other keys share all of its counters in some slice.
  template <Key K>
  std::uint32_t count_estimate(const K& key) const {
    return count_estimate_digest(digest(key));
  }

  std::uint32_t count_estimate_digest(const Digest& d) const {
    std::uint32_t total = 0;
    for (const auto& slice : slices()) {
      std::uint32_t least = CounterCells::kSaturated;
      slice.probe(d, [&](std::uint64_t cell) {
        least = std::min(least, slice.cells().value(cell));
        return least != 0;
      });
      total += least;
    }
    return total;
  }

  // --- Statistics (size, memory_bytes, ...: as SegmentedFilter) -----------------

  // Counters stuck at 15, over all slices.
  std::uint64_t saturated_counters() const noexcept {
    std::uint64_t total = 0;
    for (const auto& slice : slices()) total += slice.cells().saturated_count();
    return total;
  }

  CountingFilterStats stats() const {
    CountingFilterStats out;
    static_cast<FilterStats&>(out) = Base::stats();
    for (const auto& slice : slices()) {
      out.saturated_per_slice.push_back(slice.cells().saturated_count());
      out.saturated_counters += slice.cells().saturated_count();
    }
    return out;
  }

  // --- Conversion ---------------------------------------------------------------

  // The plain filter with the same options, slices, shapes, item counts and rotations,
  // where each counter > 0 becomes a set bit: it answers contains() exactly as this
  // filter does, in a quarter of the memory (for read-only serving; its inserts are
  // the plain filter's). A slice whose removes left it fewer items than its set cells
  // need (at least set / k) counts that many instead, which its loaders require.
  ScalableBloomFilter to_plain() const {
    std::vector<ScalableBloomFilter::slice_type> plain;
    plain.reserve(slices().size());
    std::vector<std::uint64_t> bits;
    for (const auto& slice : slices()) {
      const std::span<const std::uint64_t> counters = slice.cells().words();
      // Bit word j holds counters 64j .. 64j+63 = counter words 4j .. 4j+3.
      bits.assign(counters.size() / 4, 0);
      for (std::size_t w = 0; w < counters.size(); ++w) {
        bits[w / 4] |= std::uint64_t{CounterCells::nonzero_mask(counters[w])} << (16 * (w % 4));
      }
      BitCells cells = BitCells::from_words(bits);
      // A remove uncounts a key but may leave its cells set (saturated counters, or a key
      // removed that only looked present): a bit slice counts at least what its bits need,
      // as its loaders require (detail::fewest_items).
      const std::uint64_t items = std::max(slice.items(), detail::fewest_items(cells.set_count(), slice.shape().probes));
      plain.emplace_back(slice.shape(), std::move(cells), items, slice.opened_at());
    }
    return ScalableBloomFilter(from_parts, options(), std::move(plain), rotations(), clock());
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  // Index of the oldest slice that reports the key, or kNone.
  std::size_t oldest_holder(const Digest& d) const noexcept {
    const auto& all = slices();
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i].contains(d)) return i;
    }
    return kNone;
  }

  // insert_digest for the n keys of a batch group at once, where that changes nothing
  // (group_fits_newest: no lifetime, and room in the newest slice for all n). The older
  // slices are asked about the group oldest first (a group per slice, Slice::contains_group),
  // and a key's holder takes its count at once: adding to a slice that reports a key never
  // changes what it reports, so the answers of the group's later keys stand. The other
  // keys go to the newest slice in one call (Slice::add_group: a classic slice through
  // Scheme::mark_many, 8 keys' positions at a time in vectors; a blocked one key by key);
  // a key is new when it set a clear counter there (a newest slice that already reports it
  // is its holder). Results go to inserted[start + i] and are counted in `count`. Returns
  // false, having done nothing, in any other case.
  bool insert_group(const Digest* digests, std::size_t n, std::span<bool> inserted, std::size_t start,
                    std::size_t& count) {
    if (!group_fits_newest(n)) return false;
    auto& all = mutable_slices();
    const std::size_t newest = all.size() - 1;
    bool write[detail::kBatchGroup];
    bool held[detail::kBatchGroup] = {};
    bool changed[detail::kBatchGroup];
    std::fill_n(write, n, true);
    for (std::size_t s = 0; s < newest; ++s) {
      all[s].contains_group(digests, n, held, true);
      for (std::size_t i = 0; i < n; ++i) {
        if (held[i] && write[i]) {
          write[i] = false;
          all[s].add(digests[i]);
        }
      }
    }
    all[newest].add_group(digests, n, write, changed);
    if (inserted.empty()) {
      count += detail::count_true(changed, n);
    } else {
      for (std::size_t i = 0; i < n; ++i) count += detail::record(inserted, start + i, changed[i]);
    }
    return true;
  }
};

}  // namespace segbloom
