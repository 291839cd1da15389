// segbloom: a filter whose options are changing, kept as the pair (previous, current).
//
// When a filter's options change (say the target rate goes from 0.1 % to 0.01 %), its
// keys cannot be moved into a filter of the new shape: a Bloom filter does not hold
// them. So a new filter is opened beside the old one. For a transition period both
// answer reads and only the new one takes writes; once the period is over the old one
// is dropped, and with it every key that was only in it.
//
//   segbloom::ManualClock clock;                    // or the system clock (the default)
//   segbloom::ScalableBloomFilter old_filter = ...; // p = 0.1 %
//   segbloom::Options next = old_filter.options();
//   next.false_positive_rate = 0.0001;
//   auto seen = segbloom::TransitionFilter<segbloom::ScalableBloomFilter>::begin(
//       std::move(old_filter), next, std::chrono::days(7), clock);
//   seen.insert(std::uint64_t{4711});      // written to the new filter only
//   seen.contains(std::uint64_t{42});      // either filter; the old one for 7 days only
//
// F is any segmented filter kind: ScalableBloomFilter, CountingBloomFilter,
// LevelDbCompatibleFilter. Serialization: transition_serialization.hpp (Cereal archives
// and the envelope, kinds 4, 5, 6); lookups straight from a blob: transition_view.hpp.
//
// Guarantees, with the period measured by the filter's Clock (clock.hpp) in wall-clock
// seconds, so that it goes on across serialization and machines:
//  - No false negatives for a key inserted since the transition began: insert always
//    writes to the current filter, which is never dropped.
//  - A key held by the previous filter is found until transition_ends_at(), and not
//    after (unless the current filter holds it too); a timed previous filter forgets its
//    keys on its own schedule meanwhile (the pair's writes expire its slices). A
//    previous filter whose period is over never answers, even before it is dropped
//    (contains ignores it; the next insert, finish_if_due() or a load drops it).
//  - False-positive rate: during the period at most p_previous + p_current (a lookup is
//    positive when either filter is); after it, the current filter's own p.
//  - Both filters have the same seed (Options::seed), so each key is hashed once for
//    both: begin and change_options refuse a change of seed (std::invalid_argument).
//
// Thread safety: as the filters (const member functions never modify the pair, so any
// number of readers, or one writer). The clock must outlive the filter.
#pragma once

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "segbloom/clock.hpp"
#include "segbloom/detail/batch.hpp"
#include "segbloom/detail/lookup_slices.hpp"
#include "segbloom/hashing.hpp"
#include "segbloom/options.hpp"
#include "segbloom/segmented_filter.hpp"

namespace segbloom {

// The default transition period: 7 days.
inline constexpr std::chrono::seconds kDefaultTransitionPeriod{std::int64_t{7} * 86400};

// Longest accepted transition period: 100 years (as Options::slice_lifetime).
inline constexpr std::chrono::seconds kMaxTransitionPeriod{std::int64_t{100} * 365 * 86400};

// A segmented filter kind: derived from SegmentedFilter<Cells, Scheme>.
template <class F>
concept SegmentedFilterKind =
    std::derived_from<F, SegmentedFilter<typename F::slice_type::cells_type,
                                         typename F::slice_type::scheme_type>>;

namespace detail {

inline void check_transition_period(std::chrono::seconds period) {
  if (period < std::chrono::seconds{0} || period > kMaxTransitionPeriod) {
    throw std::invalid_argument("segbloom: transition period of " +
                                std::to_string(period.count()) +
                                " s is out of range; allowed: [0, 100 years] in seconds");
  }
}

// When a transition begun at `now` for `period` (checked) ends. A pair reads its clock as
// filters do (filter_time: within [0, kLatestTime]), so the end is within [0, kLatestTime +
// period], what the loaders take (transition_end_in_range): a clock past the year 36800 keeps
// the previous filter answering until its reading is, as it expires no timed slice, rather
// than end the period at once or write a pair its loader refuses.
inline UnixSeconds transition_end(UnixSeconds now, std::chrono::seconds period) noexcept {
  return now + static_cast<UnixSeconds>(period.count());
}

// Whether a pair with a previous filter can end at `ends_at` after `period` (checked): an
// end past kLatestTime + period kept the previous filter answering, and change_options
// throwing, for good (accepted until 3 Dec 2026, INT64_MAX included).
inline bool transition_end_in_range(UnixSeconds ends_at, std::chrono::seconds period) noexcept {
  return ends_at >= 0 && ends_at <= kLatestTime + static_cast<UnixSeconds>(period.count());
}

}  // namespace detail

template <SegmentedFilterKind F>
class TransitionFilter {
 public:
  using filter_type = F;
  using Digest = typename F::Digest;

  // A filter with these options and no transition. Throws std::invalid_argument when
  // the options are out of range (options.hpp).
  explicit TransitionFilter(const Options& options = {}, const Clock& clock = system_clock())
      : current_(F(options, clock)), clock_(&clock) {}

  // `current` alone, no transition.
  explicit TransitionFilter(F current, const Clock& clock = system_clock())
      : current_(std::move(current)), clock_(&clock) {
    current_.set_clock(clock);
  }

  // Rebuilds a pair from stored parts (deserialization), exactly as given: a previous
  // filter whose period is over is kept (it never answers). Throws std::invalid_argument
  // when the parts do not fit: period outside [0, 100 years], seeds that differ, ends_at
  // outside [0, 2^40 + period] with a previous filter, or ends_at / period not 0 without
  // one.
  TransitionFilter(FromParts, F current, std::optional<F> previous, UnixSeconds ends_at,
                   std::chrono::seconds period, const Clock& clock)
      : current_(std::move(current)),
        previous_(std::move(previous)),
        ends_at_(ends_at),
        period_(period),
        clock_(&clock) {
    detail::check_transition_period(period_);
    if (previous_) {
      if (!detail::transition_end_in_range(ends_at_, period_)) {
        throw std::invalid_argument("segbloom: transition end time " + std::to_string(ends_at_) +
                                    " out of range; allowed: [0, 2^40 + period]");
      }
      check_same_seed(previous_->options(), current_.options());
      previous_->set_clock(clock);
    } else if (ends_at_ != 0 || period_.count() != 0) {
      throw std::invalid_argument(
          "segbloom: a transition end time or period without a previous filter");
    }
    current_.set_clock(clock);
  }

  // The seen-store's lazy move: `previous` keeps answering reads until
  // clock.now() >= clock.now() at this call + period; a new, empty filter with options
  // `next` takes every write. A period of 0 drops `previous` at once. `next` is not
  // compared with the previous filter's options (change_options is the call that
  // skips a change to the same options). Throws
  // std::invalid_argument when `next` is out of range, its seed differs from the
  // previous filter's, or the period is outside [0, 100 years]; `previous` is then left
  // as it was (moved from only once nothing can throw). An lvalue is copied.
  static TransitionFilter begin(F&& previous, const Options& next,
                                std::chrono::seconds period = kDefaultTransitionPeriod,
                                const Clock& clock = system_clock()) {
    detail::check_transition_period(period);
    check_same_seed(previous.options(), next);
    TransitionFilter pair(F(next, clock), clock);  // may throw: `previous` untouched yet
    previous.set_clock(clock);
    pair.previous_.emplace(std::move(previous));
    pair.period_ = period;
    pair.ends_at_ = detail::transition_end(detail::filter_time(clock), period);
    pair.finish_if_due();
    return pair;
  }
  static TransitionFilter begin(const F& previous, const Options& next,
                                std::chrono::seconds period = kDefaultTransitionPeriod,
                                const Clock& clock = system_clock()) {
    return begin(F(previous), next, period, clock);
  }

  // Moves this pair to `next`: the current filter becomes the previous one (answering
  // for `period` from now) and a new filter with `next` takes the writes.
  // Returns false and changes nothing when `next` equals options() (no change to make;
  // a previous filter whose period is over is still dropped first).
  // A transition in progress is never cut short, since that would lose the keys only
  // its previous filter holds before their period is over: while in_transition(), a
  // change to other options throws std::logic_error naming the end time; retry after
  // it (a previous filter whose period is over is dropped first); that comes before the
  // check of `next` itself. Otherwise throws std::invalid_argument as begin.
  bool change_options(const Options& next, std::chrono::seconds period = kDefaultTransitionPeriod) {
    finish_if_due();
    if (next == current_.options()) return false;
    if (previous_) {
      throw std::logic_error("segbloom: a transition is in progress until " +
                             std::to_string(ends_at_) +
                             " (Unix seconds); options can change again from then on");
    }
    detail::check_transition_period(period);
    check_same_seed(current_.options(), next);
    F fresh = F(next, *clock_);  // may throw: nothing changed yet
    previous_.emplace(std::move(current_));
    current_ = std::move(fresh);
    period_ = period;
    ends_at_ = detail::transition_end(now(), period);
    finish_if_due();
    return true;
  }

  // Drops the previous filter when its period is over; returns true when it did.
  bool finish_if_due() {
    if (!previous_ || now() < ends_at_) return false;
    previous_.reset();
    ends_at_ = 0;
    period_ = std::chrono::seconds{0};
    return true;
  }

  // --- Writes -------------------------------------------------------------------

  // Drops a previous filter whose period is over (or the expired slices of a timed one
  // still answering: prepare_write), then F's insert on the current
  // filter. Returns false when either filter reported the key before (test-and-set, as
  // SegmentedFilter::insert; CountingBloomFilter's insert counts). A key reported only
  // by the previous filter is still written to the current one, so that it stays
  // found after the previous filter is dropped. Throws what F's insert throws
  // (std::length_error at the slice limit).
  template <Key K>
  bool insert(const K& key) {
    prepare_write();
    return insert_digest(current_.digest(key));
  }

  // Inserts every key in order, as insert; `inserted`, if not empty, must have
  // keys.size() elements (std::invalid_argument otherwise) and receives each result.
  // Returns the number of true results. Keys are hashed (once for both filters) and their
  // lines prefetched in both in groups, one group ahead. The clock is read once per call.
  template <Key K>
  std::size_t insert_many(std::span<const K> keys, std::span<bool> inserted = {}) {
    detail::check_batch_output(keys.size(), inserted.size(), true);
    prepare_write();
    // Each group hashed once for both filters; its lines prefetched one group ahead in the
    // current filter's slices worth it for inserts and in the previous one's (which
    // insert_digest only reads: is the key new?) worth it for lookups.
    const auto hash = [&](std::size_t start, std::size_t n, Digest* digests) {
      current_.digest_group(keys, start, n, digests);
      if (previous_) detail::prefetch_group(previous_->slices(), detail::BatchOp::lookup, static_cast<const Digest*>(digests), n);
    };
    std::size_t count = 0;
    detail::for_each_group_prefetched<Digest, detail::kBatchGroup>(
        current_.slices(), detail::BatchOp::insert, keys.size(), hash,
        [&](std::size_t start, std::size_t n, const Digest* digests) {
          for (std::size_t i = 0; i < n; ++i) count += detail::record(inserted, start + i, insert_digest(digests[i]));
        });
    return count;
  }

  // --- Reads --------------------------------------------------------------------

  // True when the current filter, or the previous one while its period lasts, reports
  // the key. Never false for a key inserted since the transition began.
  template <Key K>
  bool contains(const K& key) const {
    const Digest d = current_.digest(key);
    if (current_.contains_digest(d)) return true;
    return previous_ && now() < ends_at_ && previous_->contains_digest(d);
  }

  // found[i] = contains(keys[i]); `found` must have keys.size() elements
  // (std::invalid_argument otherwise). Returns the number found. The batch asks the
  // slices of both filters together, as one filter's batch asks its own
  // (SegmentedFilter::contains_many, detail/lookup_slices.hpp: group tests, the blocked
  // kernel, screens), each key hashed once (both filters have one seed). The clock is
  // read once per call.
  template <Key K>
  std::size_t contains_many(std::span<const K> keys, std::span<bool> found) const {
    detail::check_batch_output(keys.size(), found.size(), false);
    detail::SliceList<typename F::slice_type> list;
    if (const F* previous = answering_previous()) list.add(previous->slices());  // the older slices
    list.add(current_.slices());
    return detail::lookup_slices(list.span(), keys.size(), found.data(), [&](std::size_t start, std::size_t n, Digest* out) {
      current_.digest_group(keys, start, n, out);
    });
  }

  // --- The pair -----------------------------------------------------------------

  // A previous filter is held and its period is not over.
  bool in_transition() const noexcept { return answering_previous() != nullptr; }

  // When the previous filter stops answering (Unix seconds); 0 when none is held.
  UnixSeconds transition_ends_at() const noexcept { return ends_at_; }

  // The period the transition was begun with; 0 when no previous filter is held.
  std::chrono::seconds transition_period() const noexcept { return period_; }

  // The filter that takes the writes.
  const F& current() const noexcept { return current_; }

  // The previous filter while it is held (null when none), whether or not its period
  // is over: in_transition() tells whether it still answers.
  const F* previous() const noexcept { return previous_ ? &*previous_ : nullptr; }

  // The current filter's options (those of every new write).
  const Options& options() const noexcept { return current_.options(); }

  // Items held by the filters that answer: the current filter's size(), plus the
  // previous one's while in_transition() (a key in both counts twice).
  std::uint64_t size() const noexcept {
    const F* previous = answering_previous();
    return current_.size() + (previous ? previous->size() : 0);
  }

  // This object plus the heap memory of both filters (the previous one while held).
  std::uint64_t memory_bytes() const noexcept {
    std::uint64_t total = sizeof(*this) + (current_.memory_bytes() - sizeof(F));
    if (previous_) total += previous_->memory_bytes() - sizeof(F);
    return total;
  }

  const Clock& clock() const noexcept { return *clock_; }

  // The clock of the transition and of both filters; must outlive the filter.
  void set_clock(const Clock& clock) noexcept {
    clock_ = &clock;
    current_.set_clock(clock);
    if (previous_) previous_->set_clock(clock);
  }

  // Same filters (a previous one compared while held, due or not), end time and
  // period. Clocks are not compared.
  friend bool operator==(const TransitionFilter& a, const TransitionFilter& b) {
    return a.current_ == b.current_ && a.previous_ == b.previous_ && a.ends_at_ == b.ends_at_ &&
           a.period_ == b.period_;
  }

 private:
  // Before a write: finish_if_due(), then the previous filter's expired slices are
  // dropped (a timed one's: expire()), as a write to it would drop them. It takes no
  // writes, so without this its expired slices would answer for the whole period, where a
  // view (TransitionView) skips them. Loads and finish_if_due() leave them, as a plain
  // filter's load does.
  void prepare_write() {
    if (!finish_if_due() && previous_) previous_->expire();
  }

  bool insert_digest(const Digest& d) {
    const bool in_previous = previous_ && previous_->contains_digest(d);
    const bool is_new = current_.insert_digest(d);  // always: the current filter must hold it
    return is_new && !in_previous;
  }

  // The clock as filters read it (detail::filter_time), for the end time and its tests.
  UnixSeconds now() const noexcept { return detail::filter_time(*clock_); }

  const F* answering_previous() const noexcept {
    return previous_ && now() < ends_at_ ? &*previous_ : nullptr;
  }

  static void check_same_seed(const Options& previous, const Options& next) {
    if (previous.seed != next.seed) {
      throw std::invalid_argument("segbloom: a transition keeps the seed: the previous filter has seed " +
                                  std::to_string(previous.seed) + ", the new options " +
                                  std::to_string(next.seed));
    }
  }

  F current_;
  std::optional<F> previous_;
  UnixSeconds ends_at_ = 0;                // previous_ answers while now() < ends_at_
  std::chrono::seconds period_{0};
  const Clock* clock_;
};

}  // namespace segbloom
