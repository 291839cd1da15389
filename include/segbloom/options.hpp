// segbloom: options shared by every filter kind.
//
// A filter is a list of slices. `Options` says how large the first slice is, which
// false-positive rate the whole filter must keep, and how the filter behaves once a
// slice is full: grow (open larger, tighter slices forever) or rotate (keep a window
// of `max_slices` slices and clear the oldest).
#pragma once

#include <chrono>
#include <cstdint>

namespace segbloom {

// How a slice lays out its cells.
enum class Layout : std::uint8_t {
  // k probes anywhere in the slice: the exact textbook sizing, k cache lines per lookup.
  classic = 0,
  // All k probes of a key inside one 512-bit (64-byte) block: one cache line per
  // lookup per slice, sized with the blocked rate formula (see sizing.hpp), at some
  // extra memory for the same rate. Plain filters (bit cells, XXH3 hashing) only.
  blocked = 1,
};

struct Options {
  // Items the filter takes before it first has to grow (growing mode) or rotate
  // (window mode). In window mode it is split evenly over the `max_slices` slices.
  // Range: [1, 2^48]; in window mode at least `max_slices`.
  std::uint64_t capacity = 1000;

  // Target false-positive rate of the whole filter, at every load. Range: (0, 1).
  // The compound rate 1 - prod(1 - p_i) over all slices never exceeds it.
  double false_positive_rate = 0.001;

  // 0: growing mode (the default), slices are added as needed.
  // W > 0: window mode, at most W slices of capacity / W items at rate p / W each;
  // when all W are full the oldest is cleared and reused. Range: [0, 64].
  std::uint32_t max_slices = 0;

  // Growing mode: slice i+1 takes `growth` times the items of slice i. Range: [1, 16].
  double growth = 2.0;

  // Growing mode: slice i+1 has `tightening` times the rate of slice i. Range: (0, 1).
  // 0.8 keeps memory lowest at 10-100x capacity with growth 2 (see README, "Sizing").
  double tightening = 0.8;

  // Selects an independent hash family. Filters only answer for each other (merge,
  // equality) when their seeds match.
  std::uint64_t seed = 0;

  // Cell layout of every slice; classic (the default) or blocked.
  Layout layout = Layout::classic;

  // Time window. 0 (the default): slices never expire. L > 0: a slice takes writes for
  // at most L after it was opened, and is dropped (growing mode) or cleared for reuse
  // (window mode) once L has passed since it stopped taking writes. So every key
  // inserted within the last L is found, and a key is forgotten at most 2 L after its
  // last insert. With max_slices, whichever limit comes first rotates. Times come from
  // the filter's Clock (clock.hpp). Range: [0, 100 years].
  std::chrono::seconds slice_lifetime{0};

  friend bool operator==(const Options&, const Options&) = default;
};

// Throws std::invalid_argument naming the first parameter out of range.
void validate(const Options& options);

// Hard limit on the number of slices in either mode. In growing mode with growth 2 it
// is never reached (2^64 times the capacity); with growth 1 it bounds query cost.
inline constexpr std::uint32_t kMaxSlices = 64;

// Longest accepted Options::slice_lifetime: 100 years.
inline constexpr std::chrono::seconds kMaxSliceLifetime{std::int64_t{100} * 365 * 86400};

// Largest accepted capacity: keeps every slice size exactly representable in a double.
inline constexpr std::uint64_t kMaxCapacity = std::uint64_t{1} << 48;

}  // namespace segbloom
