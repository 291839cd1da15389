// segbloom: when the slices of a timed filter expire (Options::slice_lifetime), written
// once for the filter (segmented_filter.hpp) and the zero-copy view (filter_view.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "segbloom/clock.hpp"

namespace segbloom::detail {

// The number of oldest slices that have expired at `now`, of `count` slices whose open
// times opened_at(0..count-1) are oldest first. Slice i stopped taking writes at
// min(opened_at(i + 1), opened_at(i) + lifetime) (the newest: at opened_at + lifetime
// at the latest) and expires `lifetime` after that. Open times are at most 2^40 and
// lifetime at most 100 years, so no sum overflows.
template <class OpenedAt>
std::size_t expired_slices(std::size_t count, std::int64_t lifetime, UnixSeconds now,
                           OpenedAt&& opened_at) {
  std::size_t n = 0;
  for (; n < count; ++n) {
    std::int64_t closed = opened_at(n) + lifetime;
    if (n + 1 < count) closed = std::min<std::int64_t>(closed, opened_at(n + 1));
    if (now < closed + lifetime) break;
  }
  return n;
}

}  // namespace segbloom::detail
