// segbloom: what every filter's batch calls share: the argument check, the result loop,
// and the walk over a batch in groups, one group ahead.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>

namespace segbloom::detail {

// Throws std::invalid_argument unless `out` has one element per key (or is empty where
// the output is `optional`).
inline void check_batch_output(std::size_t keys, std::size_t out, bool optional) {
  if (out != keys && !(optional && out == 0)) {
    throw std::invalid_argument("segbloom: output span has " + std::to_string(out) +
                                " elements for " + std::to_string(keys) + " keys");
  }
}

// Records one batch result: out[i] = result when `out` is not empty; returns result as
// a count (0 or 1) to add up.
inline std::size_t record(std::span<bool> out, std::size_t i, bool result) noexcept {
  if (!out.empty()) out[i] = result;
  return result ? 1 : 0;
}

// The group size of batched calls: 16 keys are hashed, then their lines prefetched in
// every slice (16 x slices reads in flight), then answered.
inline constexpr std::size_t kBatchGroup = 16;

// Walks `count` keys in groups of kBatchGroup, one group ahead: prepare(start, n, digests)
// hashes the n keys from `start` into `digests` and prefetches their lines; then
// use(start, n, digests) answers them, by which time the next group has been prepared,
// so its lines arrive while this one is worked on. `use` may change the filter (inserts):
// a prefetch is only a hint.
template <class Digest, class Prepare, class Use>
void for_each_group_ahead(std::size_t count, Prepare&& prepare, Use&& use) {
  std::array<Digest, kBatchGroup> groups[2];
  const auto size_at = [count](std::size_t start) { return std::min(kBatchGroup, count - start); };
  if (count != 0) prepare(std::size_t{0}, size_at(0), groups[0].data());
  for (std::size_t start = 0, g = 0; start < count; start += kBatchGroup, ++g) {
    const std::size_t next = start + kBatchGroup;
    if (next < count) prepare(next, size_at(next), groups[(g + 1) & 1].data());
    use(start, size_at(start), static_cast<const Digest*>(groups[g & 1].data()));
  }
}

}  // namespace segbloom::detail
