// segbloom: when the slices of a timed filter expire (Options::slice_lifetime), written
// once for the filter (segmented_filter.hpp) and the zero-copy view (filter_view.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "segbloom/clock.hpp"

namespace segbloom::detail {

// The number of oldest slices that have expired at `now`, of `count` slices, oldest
// first, slice i having stopped taking writes at closed_at(i): it expires `lifetime`
// after that.
template <class ClosedAt>
std::size_t expired_by_close(std::size_t count, std::int64_t lifetime, UnixSeconds now, ClosedAt&& closed_at) {
  std::size_t n = 0;
  while (n < count && now >= closed_at(n) + lifetime) ++n;
  return n;
}

// The same for slices whose open times are opened_at(0..count-1), oldest first. Slice i
// stopped taking writes at min(opened_at(i + 1), opened_at(i) + lifetime) (the newest: at
// opened_at + lifetime at the latest). Open times are at most 2^40 and lifetime at most
// 100 years, so no sum overflows.
template <class OpenedAt>
std::size_t expired_slices(std::size_t count, std::int64_t lifetime, UnixSeconds now,
                           OpenedAt&& opened_at) {
  return expired_by_close(count, lifetime, now, [&](std::size_t i) {
    std::int64_t closed = opened_at(i) + lifetime;
    if (i + 1 < count) closed = std::min<std::int64_t>(closed, opened_at(i + 1));
    return closed;
  });
}

}  // namespace segbloom::detail
