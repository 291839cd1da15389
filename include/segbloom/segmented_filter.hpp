// segbloom: the segmented scalable Bloom filter, written once for every cell type and
// probing scheme.
//
// A filter is a list of slices, oldest first. Writes go to the newest slice; once half
// of its cells are set (a little fewer in small classic slices: full_cells, sizing.hpp),
// the next write opens a new slice (growing mode) or clears the oldest and reuses it as
// the newest (window mode). Reads check every slice.
//
// Rates. Growing mode gives slice i the rate p_i = p (1 - r) r^i, so the compound rate
// 1 - prod(1 - p_i) <= sum p_i < p however many slices are added (Almeida et al.,
// "Scalable Bloom Filters", 2007). Window mode gives each of its W slices p / W. Since a
// slice stops taking writes at half fill, where its rate is (1/2)^k_i <= p_i (or where
// its probe-pattern floor needs it earlier), the bound holds at every load.
//
// Time windows (Options::slice_lifetime = L > 0). Each slice records when it was opened
// (Slice::opened_at, wall-clock seconds from the filter's Clock). The newest slice stops
// taking writes once it is full or L has passed since it opened; a slice expires L after
// it stopped taking writes: slice i < newest at min(opened_{i+1}, opened_i + L) + L, the
// newest at opened + 2 L. Writes first drop expired slices (the oldest ones; when every
// slice expired, the filter starts again from one empty slice), so memory holds at most
// about two lifetimes of items. Reads never consult the clock: an expired slice answers
// until the next write or expire(). A growing filter opens each new slice at the
// smallest sequence index i no live slice uses (SliceShape::index): rates stay distinct
// terms of p (1 - r) r^i, so the compound rate stays below p, and sizes stay bounded.
//
// Thread safety: const member functions never modify the filter, so any number of
// threads may read one filter at once while nobody writes. Writes need exclusive access.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "segbloom/clock.hpp"
#include "segbloom/detail/batch.hpp"
#include "segbloom/detail/expiry.hpp"
#include "segbloom/detail/lookup_slices.hpp"
#include "segbloom/detail/slices_by_layout.hpp"
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
  double estimated_false_positive_rate = 0;  // fill_ratio^k + the probes' pattern floor (scheme_rate_at_fill)
  std::uint64_t memory_bytes = 0;
  std::uint32_t index = 0;                // place in the growing sequence (window: 0)
  UnixSeconds opened_at = 0;              // timed filters: when it opened (else 0)
  Probing probing = Probing::scheme;      // triple_hashing: probes by triple hashing (sizing.hpp)
};

// Statistics of a whole filter.
struct FilterStats {
  std::uint64_t size = 0;
  std::uint64_t memory_bytes = 0;
  std::uint64_t rotations = 0;  // slices cleared and reused (window) or expired so far
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
  // `clock` (which must outlive the filter) times slices when options.slice_lifetime > 0.
  explicit SegmentedFilter(const Options& options = {}, const Clock& clock = system_clock())
      : options_(checked(options)), clock_(&clock) {
    slices_.emplace_back(shape_of(0));
    slices_.back().set_opened_at(time_now());
  }

  // Rebuilds a filter from its parts, as stored. Checks that the parts are consistent
  // (options valid, 1 to max slices, each slice's cells match its shape, distinct
  // sequence indices, open times in range and non-decreasing, oldest first) and throws
  // std::invalid_argument naming what is not.
  SegmentedFilter(FromParts, const Options& options, std::vector<slice_type> slices,
                  std::uint64_t rotations, const Clock& clock = system_clock())
      : options_(checked(options)), slices_(std::move(slices)), rotations_(rotations), clock_(&clock) {
    check_parts();
  }

  // The clock that times slices (Options::slice_lifetime); must outlive the filter. A
  // loaded filter has the system clock until this is called.
  void set_clock(const Clock& clock) noexcept { clock_ = &clock; }
  const Clock& clock() const noexcept { return *clock_; }

  // --- Writes -------------------------------------------------------------------

 protected:
  // insert, insert_digest and insert_many are public in ScalableBloomFilter and
  // LevelDbCompatibleFilter (`using`). They are not public here, so that code holding a
  // SegmentedFilter reference to a CountingBloomFilter cannot call this test-and-set on
  // it: that would count a key in a second slice and break exact removal (the counting
  // filter has its own insert).

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
    const UnixSeconds now = time_now();
    expire_at(now);
    // (A filter of one slice has no older one to ask: without the call, per-key inserts at
    // 10^6 keys 8.9-9.1 -> 8.5-8.6 ns blocked, 13.1-13.8 -> 13.0-13.3 ns classic.)
    const bool seen = slices_.size() > 1 && contains_before_newest(d);
    if (seen && !refreshes_older_keys()) return false;
    if (takes_writes(slices_.back(), now)) {
      // One pass over the newest slice: setting no new bit means it held the key.
      return slices_.back().add_if_new(d) && !seen;
    }
    return insert_opening(d, seen, now);
  }

  // Inserts every key in order; `inserted`, if not empty, must have keys.size()
  // elements and receives each insert's result. Returns the number inserted. Same
  // results and cells as inserting one by one; faster, because each group of keys is
  // hashed and prefetched before it is inserted, and a newest bit slice takes a group at
  // once while it has room for all of it (insert_group).
  template <Key K>
  std::size_t insert_many(std::span<const K> keys, std::span<bool> inserted = {}) {
    detail::check_batch_output(keys.size(), inserted.size(), true);
    std::size_t count = 0;
    auto hash = hasher(keys);
    for_each_group_prefetched(insert_op(), keys.size(), hash, [&](std::size_t start, std::size_t n, const Digest* digests) {
      if (insert_group(digests, n, inserted, start, count)) return;
      for (std::size_t i = 0; i < n; ++i) {
        count += detail::record(inserted, start + i, insert_digest(digests[i]));
      }
    });
    return count;
  }

 public:
  // Back to the state of a new filter with the same options (one empty slice).
  void clear() {
    slices_.erase(slices_.begin() + 1, slices_.end());
    slices_.front() = slice_type(shape_of(0));
    slices_.front().set_opened_at(time_now());
    rotations_ = 0;
  }

  // Drops the slices whose lifetime is over (see the top of this file) as of the
  // clock's now; every write does this first. Returns the number dropped or cleared
  // (also counted in rotations()). Without Options::slice_lifetime: does nothing.
  std::size_t expire() { return expire_at(time_now()); }

  // --- Reads --------------------------------------------------------------------

  // True when the key is (probably) in the filter; never false for an inserted key
  // that window rotation has not dropped.
  template <Key K>
  bool contains(const K& key) const {
    return contains_digest(digest(key));
  }

  // (The size test spares a one-slice filter's negative lookups the set-up of the loop
  // over older slices: per key at 10^6 keys, blocked 6.2 -> 5.9 ns, classic 10.0 -> 9.7 ns.
  // It is read before the newest slice is asked, unconditionally, so that a loop of
  // lookups reads it once instead of once per negative.)
  bool contains_digest(const Digest& d) const noexcept {
    const bool has_older = slices_.size() > 1;
    return slices_.back().contains(d) || (has_older && contains_before_newest(d));
  }

  // found[i] = contains(keys[i]); `found` must have keys.size() elements. Returns the
  // number found. Keys are hashed a group at a time (several at once), then the groups
  // ask the slices in the way that suits them (detail/lookup_slices.hpp): blocked slices
  // through the blocked group kernel, which prefetches the blocks of keys further on
  // (classic ones, if any, asked after it); classic slices a group per slice in one call,
  // their lines prefetched one group ahead, or, half the L3 or more in all (one slice, or
  // one and less than L2 beside it: the L3; at most 64 MiB of L3 counted), each key's first
  // two probes screened before the others are read (detail/screened_lookup.hpp); so that
  // many memory reads overlap instead of following one another.
  template <Key K>
  std::size_t contains_many(std::span<const K> keys, std::span<bool> found) const {
    detail::check_batch_output(keys.size(), found.size(), false);
    detail::SliceList<slice_type> list;
    list.add(slices_);
    return detail::lookup_slices(list.span(), keys.size(), found.data(), hasher(keys));
  }

 private:
  // Slices [0, end) as a batch of keys asks them (detail::SlicesByLayout).
  auto group_slices(std::size_t end) const noexcept {
    return detail::SlicesByLayout(0, end, [this](std::size_t s) -> const slice_type& { return slices_[s]; });
  }

 public:

  // The digest every operation computes once per key.
  template <Key K>
  Digest digest(const K& key) const {
    return Scheme::hash(key, options_.seed);
  }

  // out[i] = digest(keys[start + i]) for i < n: a batch's group of digests, several at once
  // where the scheme can, the keys further on prefetched (hash_group).
  template <Key K>
  void digest_group(std::span<const K> keys, std::size_t start, std::size_t n, Digest* out) const {
    hash_group<Scheme>(keys, start, n, options_.seed, out);
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
                              s.estimated_false_positive_rate(), s.memory_bytes(), shape.index,
                              s.opened_at(), shape.probing});
    }
    return stats;
  }

  friend bool operator==(const SegmentedFilter& a, const SegmentedFilter& b) noexcept {
    return a.options_ == b.options_ && a.rotations_ == b.rotations_ && a.slices_ == b.slices_;
  }

 protected:
  // The clock's time for a timed filter; 0 (never read) for any other.
  UnixSeconds time_now() const noexcept { return timed() ? detail::filter_time(*clock_) : 0; }

  // Drops the slices expired at `now` (nothing without a lifetime); returns how many.
  std::size_t expire_at(UnixSeconds now) { return timed() ? expire_timed(now) : 0; }

  // The slice that takes the next write, for a caller that has just called
  // expire_at(now): the newest, or, when it is closed (full, or past its lifetime), a new
  // slice (growing mode, or a window not yet complete) or the recycled oldest (window).
  slice_type& open_writable(UnixSeconds now) {
    return takes_writes(slices_.back(), now) ? slices_.back() : open_slice(now);
  }

  // Whether a batch group of n writes can go to the newest slice at once with the results
  // of writing the keys one by one: no lifetime (no slice expires between two keys), and
  // room in the newest slice for all n (none of them opens a slice: Slice::has_room_for).
  bool group_fits_newest(std::size_t n) const noexcept { return !timed() && slices_.back().has_room_for(n); }

  // What insert_many's groups do (detail::BatchOp): insert_group takes them where the slices
  // take a group of writes, unless the filter is timed (group_fits_newest).
  detail::BatchOp insert_op() const noexcept {
    return slice_type::kGroupWrites && !timed() ? detail::BatchOp::group_insert : detail::BatchOp::insert;
  }

  std::vector<slice_type>& mutable_slices() noexcept { return slices_; }

  // Hashes `count` keys in groups of kGroupSize (hash(start, n, digests); hasher(keys) for
  // keys) and prefetches each group's lines in every slice worth it for a batch of `op`s,
  // one group ahead, then calls use(start, n, digests) per group
  // (detail::for_each_group_prefetched).
  template <std::size_t kGroupSize = detail::kBatchGroup, class Hash, class Use>
  void for_each_group_prefetched(detail::BatchOp op, std::size_t count, Hash& hash, Use&& use) const {
    detail::for_each_group_prefetched<Digest, kGroupSize>(slices_, op, count, hash, use);
  }

  // The digest source of a batch of keys: digest_group over them.
  template <Key K>
  auto hasher(std::span<const K> keys) const noexcept {
    return [this, keys](std::size_t start, std::size_t n, Digest* out) { digest_group(keys, start, n, out); };
  }

 private:
  bool timed() const noexcept { return options_.slice_lifetime.count() > 0; }

  // Slices that are recycled (window) or expire (timed) must not hold a key's only copy:
  // an insert of a key only an older slice reports writes it into the newest again.
  bool refreshes_older_keys() const noexcept { return options_.max_slices != 0 || timed(); }

  // The newest slice takes writes until it is full or (timed) its lifetime has passed.
  bool takes_writes(const slice_type& s, UnixSeconds now) const noexcept {
    return !s.full() && !(timed() && now >= s.opened_at() + options_.slice_lifetime.count());
  }

  // Growing mode: the smallest sequence index no live slice uses (slices.size() when
  // nothing expired). Throws std::length_error past kMaxSlices.
  std::uint32_t next_index() const {
    std::uint64_t used = 0;
    for (const auto& s : slices_) used |= std::uint64_t{1} << s.shape().index;
    const auto index = static_cast<std::uint32_t>(std::countr_one(used));
    if (index >= kMaxSlices) {
      throw std::length_error("segbloom: a growing filter reached " + std::to_string(kMaxSlices) +
                              " slices; raise Options::capacity or Options::growth");
    }
    return index;
  }

  // The rare parts of writes, out of line so that the common insert stays small.

  // insert_digest once the newest slice is closed: test it before opening a slice (a
  // closed slice of a timed filter expires, so a key it holds is copied on as well).
  [[gnu::noinline]] bool insert_opening(const Digest& d, bool seen, UnixSeconds now) {
    const bool in_newest = slices_.back().contains(d);
    if (in_newest && !timed()) return false;
    open_slice(now).add(d);
    return !seen && !in_newest;
  }

  // insert_digest for the n keys of a batch group at once, where that changes nothing:
  // no lifetime, and a newest bit slice with room for all n (so none of them opens a
  // slice). The older slices, which do not change meanwhile, are asked about the group
  // first, as contains_many asks them (blocked ones in one kernel call, classic ones a
  // group per slice); then the newest slice takes the keys to be written at once
  // (Slice::add_group_if_new: blocked::set_group, or DoubleHashingScheme::set_many).
  // Results go to inserted[start + i] and are counted in `count`. Returns false, having
  // done nothing, in any other case.
  bool insert_group(const Digest* digests, std::size_t n, std::span<bool> inserted, std::size_t start,
                    std::size_t& count) {
    if constexpr (slice_type::kGroupWrites) {
      if (!group_fits_newest(n)) return false;
      slice_type& newest = slices_.back();
      const bool refresh = refreshes_older_keys();
      bool seen[detail::kBatchGroup] = {};
      bool write[detail::kBatchGroup];  // all set by set_not_or
      bool changed[detail::kBatchGroup] = {};
      if (slices_.size() > 1) {
        const auto older = group_slices(slices_.size() - 1);
        if (older.blocked_count() == 0) {  // no kernel to call for blocked slices
          older.ask_classic(digests, n, seen);
        } else {
          older.answer(blocked::lookup_group_for<blocked::PlainLoads>(older.refs(), older.blocked_count(), 0),
                       digests, n, seen);
        }
      }
      // Over the whole arrays, 8 keys at a time (detail/batch.hpp); past n, seen and changed
      // stay false.
      detail::set_not_or(seen, refresh, write);
      newest.add_group_if_new(digests, n, write, changed);
      if (inserted.empty()) {
        count += detail::count_true_and_not(changed, seen);
      } else {
        for (std::size_t i = 0; i < n; ++i) count += detail::record(inserted, start + i, changed[i] && !seen[i]);
      }
      return true;
    } else {
      return false;
    }
  }

  // Opens the next slice: a new one (growing mode, or a window not yet complete) or the
  // recycled oldest (window).
  [[gnu::noinline]] slice_type& open_slice(UnixSeconds now) {
    const std::uint32_t window = options_.max_slices;
    const UnixSeconds newest_opened = slices_.back().opened_at();
    if (window == 0 || slices_.size() < window) {
      slices_.emplace_back(shape_of(window == 0 ? next_index() : 0));
    } else {
      // A slice stored under an earlier sizing (within the loaders' tolerance) is replaced
      // by one of today's shape rather than reused, so a stored window ends up sized as new.
      // Allocated first: an insert that throws changes nothing.
      std::optional<slice_type> replacement;
      if (const SliceShape planned = shape_of(0); !(slices_.front().shape() == planned)) {
        replacement.emplace(planned);
      }
      std::rotate(slices_.begin(), slices_.begin() + 1, slices_.end());
      if (replacement) {
        slices_.back() = std::move(*replacement);
      } else {
        slices_.back().clear();
      }
      ++rotations_;
    }
    // 0 without a lifetime. Never before the slice it closes opened: the close time of a
    // slice is the next one's open time, and a clock that stepped back (or another
    // server's, behind this one) would otherwise end its keys' lifetime before they were
    // written. Keys written ahead of the clock that opens the next slice still lose up to
    // that gap; the format stores no write times.
    slices_.back().set_opened_at(std::max(now, newest_opened));
    return slices_.back();
  }

  [[gnu::noinline]] std::size_t expire_timed(UnixSeconds now) {
    const std::size_t n =
        detail::expired_slices(slices_.size(), options_.slice_lifetime.count(), now,
                               [this](std::size_t i) { return slices_[i].opened_at(); });
    if (n == 0) return 0;
    if (n == slices_.size()) {  // everything expired: start again from one empty slice
      slice_type first(shape_of(0));  // first: a write that throws changes nothing
      first.set_opened_at(now);
      slices_.erase(slices_.begin() + 1, slices_.end());
      slices_.front() = std::move(first);
    } else {
      slices_.erase(slices_.begin(), slices_.begin() + static_cast<std::ptrdiff_t>(n));
    }
    rotations_ += n;
    return n;
  }

  // Checks every slice but the newest, newest first. Out of line, so that contains() stays
  // small enough for GCC to inline into a caller's loop (it did not: a call per key, six
  // registers saved), and given the digest by value, so that a one-slice lookup does not
  // store it for this call. Per-key negative lookups at 10^6 keys: one blocked slice 3.9 ->
  // 3.65 ns; 6 blocked slices 19.5 -> 15.2 ns, 14.3 by value; 6 classic slices 31.5 -> 33.1
  // ns, 31.2 by value.
  __attribute__((noinline)) bool contains_before_newest(Digest d) const noexcept {
    const slice_type* const oldest = slices_.data();
    for (const slice_type* s = oldest + slices_.size() - 1; s-- != oldest;) {
      if (s->contains(d)) return true;
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
      if (shape.probing != Probing::scheme &&
          (shape.probing != Probing::triple_hashing || !slice_type::kBlockable || shape.layout != Layout::classic)) {
        throw std::invalid_argument(where + "probing " + std::to_string(static_cast<unsigned>(shape.probing)) +
                                    " unknown, or triple hashing outside a classic slice of XXH3 digests");
      }
      if (shape.capacity == 0 || !(shape.false_positive_rate > 0 && shape.false_positive_rate < 1)) {
        throw std::invalid_argument(where + "capacity or rate out of range");
      }
      const UnixSeconds opened = slices_[i].opened_at();
      if (opened < 0 || opened > kMaxOpenTime || (!timed() && opened != 0)) {
        throw std::invalid_argument(where + "open time " + std::to_string(opened) +
                                    " out of range [0, 2^40]" +
                                    (timed() ? "" : " (0 without a slice lifetime)"));
      }
      // open_slice never opens a slice before the newest: see detail::check_timed_slice.
      if (i > 0 && opened < slices_[i - 1].opened_at()) {
        throw std::invalid_argument(where + "open time " + std::to_string(opened) + " before slice " +
                                    std::to_string(i - 1) + "'s " + std::to_string(slices_[i - 1].opened_at()) +
                                    "; open times never decrease from the oldest slice to the newest");
      }
    }
    // Growing mode: distinct sequence indices (the rate bound needs distinct terms).
    std::uint64_t used = 0;
    for (std::size_t i = 0; i < slices_.size() && options_.max_slices == 0; ++i) {
      const std::uint32_t index = slices_[i].shape().index;
      if (index >= kMaxSlices || ((used >> index) & 1) != 0) {
        throw std::invalid_argument("segbloom: slice " + std::to_string(i) + ": sequence index " +
                                    std::to_string(index) + " repeated or above 63");
      }
      used |= std::uint64_t{1} << index;
    }
  }

 public:
  // Latest accepted Slice::opened_at of a stored slice: 2^40 s, about year 36800.
  static constexpr UnixSeconds kMaxOpenTime = kLatestTime;

 private:

  Options options_;
  std::vector<slice_type> slices_;  // oldest first; never empty
  std::uint64_t rotations_ = 0;
  const Clock* clock_ = &system_clock();  // never null; not part of the filter's value
};

}  // namespace segbloom
