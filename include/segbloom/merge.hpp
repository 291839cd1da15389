// segbloom: the union of two filters of the same kind and options.
//
//   segbloom::ScalableBloomFilter a(opts), b(opts);
//   ...                                            // inserts on two machines
//   segbloom::ScalableBloomFilter both = segbloom::merged(a, b);
//   // both.contains(k) for every key a or b contains
//
// For every SegmentedFilter kind (ScalableBloomFilter, CountingBloomFilter,
// LevelDbCompatibleFilter, and kinds derived the same way). Slice by slice: the result
// has max(slice counts) slices; a slice present in both inputs becomes the union of the
// two (bit cells: OR of the words; 4-bit counters: per-counter sum, saturating at 15); a
// slice present in one input is copied. Slices are paired oldest first in growing mode
// (slice i of each has the shape of slice i), newest first in window mode and in timed
// filters (Options::slice_lifetime > 0), where the oldest slices are the ones recycled or
// expired: pairing the newest keeps the most recent keys of both in the slices that go
// last. Items: the sum (an upper bound: a key in both inputs counts twice). Rotations:
// the larger of the two. Open times (timed filters): the later of the pair, so a slice of
// the union stops taking writes and expires no earlier than either input's slice did
// (min(opened_{i+1}, opened_i + L) + L grows with every open time), and no key is
// forgotten sooner than in its input.
//
// Window mode: the union's window runs over the keys of both. When the merge leaves its
// newest slice full (the two newest together at its full point), W - 1 full slices are
// newer than its oldest, and the next insert recycles that, as in any window: the keys of
// both inputs' oldest slices go after one insert, where in an input they lasted until its
// own newest slice filled. Not refused: such a union is within the rate guarantee, and a
// filter whose newest slice is full, merged with an empty one, forgets the same way at the
// next insert as it would alone. Where the inputs' oldest keys must last, merge while
// their newest slices hold less, or insert into one filter.
//
// Guarantee: merged(a, b).contains(k) whenever a.contains(k) or b.contains(k). Each
// slice of the union is at least as full as the inputs' slices, so its false-positive
// rate is at least as high: hence the rate check below.
//
// Counting filters. A counter of the union is the sum of the inputs' counters, so
// remove(k) of a key k inserted into one input takes back exactly what k added, as long
// as k's holder (the oldest slice reporting it, counting_bloom_filter.hpp) is the same
// slice as in its input. It is, unless an older slice of the union falsely reports k
// because of the other input's keys: with probability at most that slice's
// false-positive rate, remove(k) then decrements that older slice, as a remove of a
// falsely reported key does. Single-slice filters (and keys held by slice 0) are exact.
//
// The result uses a's clock (Clock, clock.hpp).
//
// Throws std::invalid_argument (the inputs are not changed) when
//  - the options differ (any field, seed included: different seeds hash keys to
//    different cells, so a union would answer for neither); the message names the first
//    field that differs;
//  - paired slices differ in shape (size, probes, capacity, rate, layout or sequence
//    index). Filters made with the same options differ so where one was stored before
//    triple hashing (its double-hashing slice against today's triple-hashing one), when
//    restored from edited parts, and in timed growing mode, where the newest slices are
//    paired but each slice's size follows its sequence index: there the live slices must
//    have the same indices from the newest back (e.g. both opened a second slice, or
//    neither; pairing by index instead could make an input's newest slice a closed one in
//    the union, and forget its keys sooner);
//  - the union would break the filter's rate guarantee: the filters hold too much
//    together. The check (detail::rate_bound) bounds the rate the union reaches at
//    any later load, from the estimated rate of each slice, fill_i^k_i (plus the
//    classic layout's pattern floor, n_i / m_i^2, or for LevelDB's 32-bit hash n_i / 2^32
//    where that is larger: Slice::estimated_false_positive_rate):
//        sum over closed slices of fill_i^k_i (window mode: of max(fill_i^k_i, r_i),
//        r_i the rate its own inserts take it to, within p_i: rotation refills it)
//      + max(fill^k, p_newest) for the newest slice (it takes writes up to its share)
//      + the shares p_j of the slices still to open (growing mode: p minus the shares
//        of the slices present; window mode: p / W for each of the W - n missing ones),
//    and refuses when it exceeds Options::false_positive_rate. So the union's current
//    rate, the sum of fill_i^k_i, is below the target too, and stays there as it
//    grows: a slice filled beyond its share by the merge must be paid for by closed
//    slices below theirs. In window mode only their room above r_i pays: rotation
//    refills a closed slice to r_i while the overfull one lives on, so a closed slice
//    below r_i (a counting filter's removes) pays nothing more (counted at its current
//    rate, W 2 at p = 1 %: a slice emptied by removes let the union's newest merge at
//    1.9x its share, and one rotation later it measured 1.35 %). Each input alone
//    passes (a slice closes at half fill, where (1/2)^k_i <= p_i, or earlier where its
//    pattern floor needs it, and the shares sum to p), so does any union that fits in
//    the first slice's capacity; a union that pushes a closed or full slice past its share
//    passes only while the other closed slices' unused shares cover it; two filters
//    near their capacity, with different keys, never do. Insert into one filter instead, or merge
//    filters that hold less. (Timed filters: a closed slice that
//    expires returns its share to slices opened later, so there the bound holds until
//    the union's first expiry.)
//  - a slice of the union would be past the fill its own inserts reach (its full count
//    plus the k - 1 cells of the insert that fills it, detail::reach_cells_of), in a kind
//    whose estimate reads low (Scheme::kEstimateReadsLow: LevelDbCompatibleFilter). For
//    LevelDB's probing the measured rate is up to 2.5x fill^k at the full point, and its
//    two extra probes pay for that there, leaving a full slice at a quarter of its share
//    or less by the model; the bound above would take that margin for room and let a
//    slice fill on to where the factor was never measured (window of 4 at p = 1 %, the
//    union's newest slice at fill 0.63: bound 0.008, measured 1.44 %). Within that fill
//    a slice is where the filter's own guarantee covers it (measured 0.43 % at 0.46). So
//    newest slices merge while 1 - (1 - fill_a)(1 - fill_b) stays within about half.
// Kinds cannot differ: both arguments have the type F.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "segbloom/bit_cells.hpp"
#include "segbloom/counter_cells.hpp"
#include "segbloom/options.hpp"
#include "segbloom/segmented_filter.hpp"

namespace segbloom {
namespace detail {

// Per-counter saturating sum of 16 packed 4-bit counters (counter_cells.hpp layout).
// Even and odd counters are summed separately in 8-bit lanes, where a sum of two
// counters (at most 30) cannot carry into the next lane; bit 4 of a lane is set exactly
// when the sum is >= 16, and that lane is then forced to 15.
inline std::uint64_t saturating_add_counters(std::uint64_t a, std::uint64_t b) noexcept {
  constexpr std::uint64_t kLow = 0x0F0F0F0F0F0F0F0Full;
  constexpr std::uint64_t kCarry = 0x1010101010101010ull;
  const auto lanes = [](std::uint64_t x, std::uint64_t y) {
    const std::uint64_t sum = (x & kLow) + (y & kLow);
    const std::uint64_t over = (sum & kCarry) >> 4;  // 1 in each lane that reached 16
    return (sum | (over * 0xF)) & kLow;
  };
  return lanes(a, b) | (lanes(a >> 4, b >> 4) << 4);
}

inline BitCells union_cells(const BitCells& a, const BitCells& b) {
  const auto x = a.words();
  const auto y = b.words();
  std::vector<std::uint64_t> words(x.size());
  for (std::size_t i = 0; i < words.size(); ++i) words[i] = x[i] | y[i];
  return BitCells::from_words(words);
}

inline CounterCells union_cells(const CounterCells& a, const CounterCells& b) {
  const auto x = a.words();
  const auto y = b.words();
  std::vector<std::uint64_t> words(x.size());
  for (std::size_t i = 0; i < words.size(); ++i) words[i] = saturating_add_counters(x[i], y[i]);
  return CounterCells::from_words(words);
}

// The first field in which two Options differ, as "name a vs b"; empty when equal.
inline std::string first_difference(const Options& a, const Options& b) {
  std::ostringstream out;
  out.precision(17);
  if (a.capacity != b.capacity) {
    out << "capacity " << a.capacity << " vs " << b.capacity;
  } else if (a.false_positive_rate != b.false_positive_rate) {
    out << "false_positive_rate " << a.false_positive_rate << " vs " << b.false_positive_rate;
  } else if (a.max_slices != b.max_slices) {
    out << "max_slices " << a.max_slices << " vs " << b.max_slices;
  } else if (a.growth != b.growth) {
    out << "growth " << a.growth << " vs " << b.growth;
  } else if (a.tightening != b.tightening) {
    out << "tightening " << a.tightening << " vs " << b.tightening;
  } else if (a.seed != b.seed) {
    out << "seed " << a.seed << " vs " << b.seed;
  } else if (a.layout != b.layout) {
    out << "layout " << static_cast<int>(a.layout) << " vs " << static_cast<int>(b.layout);
  } else if (a.slice_lifetime != b.slice_lifetime) {
    out << "slice_lifetime " << a.slice_lifetime.count() << " s vs " << b.slice_lifetime.count() << " s";
  } else if (!(a == b)) {
    out << "an option";  // a field added to Options after this function
  }
  return out.str();
}

// The highest false-positive rate a filter with these options and slices (oldest
// first, the last taking writes) reaches at any later load, by the slices' estimated
// rates: see "the union would break the filter's rate guarantee" above.
template <class SliceT>
double rate_bound(const Options& options, const std::vector<SliceT>& slices) {
  const bool window = options.max_slices != 0;
  double bound = 0;
  double shares = 0;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const SliceShape& shape = slices[i].shape();
    const double rate = slices[i].estimated_false_positive_rate();
    const double share = shape.false_positive_rate;
    if (i + 1 == slices.size()) {
      bound += std::max(rate, share);
    } else if (window) {
      // Rotation refills a closed slice as the newest, up to where its own inserts take it
      // (within its share, as the newest is counted): one below that (a counting filter's
      // removes) pays for nothing.
      using Scheme = typename SliceT::scheme_type;
      const double refilled = scheme_rate_at_cells<Scheme>(shape, reach_cells_of<Scheme>(shape));
      bound += std::max(rate, std::min(refilled, share));
    } else {
      bound += rate;
    }
    shares += share;
  }
  const double p = options.false_positive_rate;
  if (options.max_slices == 0) {
    bound += std::max(0.0, p - shares);
  } else if (slices.size() < options.max_slices) {
    bound += static_cast<double>(options.max_slices - slices.size()) * (p / options.max_slices);
  }
  return bound;
}

// Schemes whose estimate, fill^k, reads low (LevelDbScheme): rated only up to the fill
// their own inserts reach.
template <class Scheme>
constexpr bool estimate_reads_low() {
  if constexpr (requires { Scheme::kEstimateReadsLow; }) {
    return Scheme::kEstimateReadsLow;
  } else {
    return false;
  }
}

}  // namespace detail

template <class F>
concept MergeableFilter =
    std::derived_from<F, SegmentedFilter<typename F::slice_type::cells_type,
                                         typename F::slice_type::scheme_type>> &&
    std::constructible_from<F, FromParts, const Options&, std::vector<typename F::slice_type>,
                            std::uint64_t>;

// The union of `a` and `b` (see the top of this file). Throws std::invalid_argument
// when they may not be merged.
template <MergeableFilter F>
F merged(const F& a, const F& b) {
  using SliceT = typename F::slice_type;
  const Options& options = a.options();
  if (const std::string diff = detail::first_difference(options, b.options()); !diff.empty()) {
    throw std::invalid_argument("segbloom: merge refused: the filters' options differ (" + diff + ")");
  }
  const auto& xs = a.slices();
  const auto& ys = b.slices();
  const std::size_t count = std::max(xs.size(), ys.size());
  // Window mode and timed filters pair the newest slices: offsets from the front.
  const bool newest_first = options.max_slices != 0 || options.slice_lifetime.count() > 0;
  const std::size_t x_offset = newest_first ? count - xs.size() : 0;
  const std::size_t y_offset = newest_first ? count - ys.size() : 0;

  std::vector<SliceT> slices;
  slices.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const SliceT* x = i >= x_offset && i - x_offset < xs.size() ? &xs[i - x_offset] : nullptr;
    const SliceT* y = i >= y_offset && i - y_offset < ys.size() ? &ys[i - y_offset] : nullptr;
    if (x != nullptr && y != nullptr) {
      if (!(x->shape() == y->shape())) {
        throw std::invalid_argument("segbloom: merge refused: slice " + std::to_string(i) +
                                    " has different shapes in the two filters (sequence index " +
                                    std::to_string(x->shape().index) + " vs " +
                                    std::to_string(y->shape().index) + ", bits " +
                                    std::to_string(x->shape().bits) + " vs " +
                                    std::to_string(y->shape().bits) + ", probes " +
                                    std::to_string(x->shape().probes) + " vs " +
                                    std::to_string(y->shape().probes) + ", probing " +
                                    probing_name(x->shape().probing) + " vs " +
                                    probing_name(y->shape().probing) + ")");
      }
      slices.emplace_back(x->shape(), detail::union_cells(x->cells(), y->cells()),
                          x->items() + y->items(), std::max(x->opened_at(), y->opened_at()));
    } else {
      slices.push_back(x != nullptr ? *x : *y);
    }
  }
  // Past the fill its own inserts reach, such a slice's rate is unknown: its estimate
  // reads low by a factor measured only up to there.
  if constexpr (detail::estimate_reads_low<typename SliceT::scheme_type>()) {
    for (std::size_t i = 0; i < slices.size(); ++i) {
      const SliceT& s = slices[i];
      const std::uint64_t reach = detail::reach_cells_of<typename SliceT::scheme_type>(s.shape());
      if (s.cells().set_count() > reach) {
        throw std::invalid_argument("segbloom: merge refused: the filters hold too much together (slice " +
                                    std::to_string(i) + " of the union would have " +
                                    std::to_string(s.cells().set_count()) + " of its " +
                                    std::to_string(s.shape().bits) + " bits set, past the " + std::to_string(reach) +
                                    " its own inserts reach, beyond which its probing's rate is not known)");
      }
    }
  }
  // A relative margin for rounding: each input alone lands exactly on the target when
  // all its closed slices sit at their share.
  const double bound = detail::rate_bound(options, slices);
  if (bound > options.false_positive_rate * (1 + 1e-9)) {
    double now = 0;
    for (const SliceT& s : slices) now += s.estimated_false_positive_rate();
    std::ostringstream message;
    message.precision(3);
    message << "segbloom: merge refused: the filters hold too much together (the union's estimated "
               "false-positive rate "
            << now << " would reach " << bound << " as it fills, above the target "
            << options.false_positive_rate << ")";
    throw std::invalid_argument(message.str());
  }
  return F(from_parts, options, std::move(slices), std::max(a.rotations(), b.rotations()), a.clock());
}

}  // namespace segbloom
