// segbloom: the argument check and result loop every filter's batch calls share.
#pragma once

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

}  // namespace segbloom::detail
