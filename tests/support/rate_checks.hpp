// Test support: the false-positive checks every filter kind shares.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>

#include "support/stats.hpp"

namespace segbloom::test {

inline constexpr std::uint64_t kAbsentTrials = 1'000'000;

// Hits among `trials` keys never inserted (absent_key stream under `salt`).
template <class Filter>
std::uint64_t count_false_positives(const Filter& f, std::uint64_t salt,
                                    std::uint64_t trials = kAbsentTrials) {
  std::uint64_t hits = 0;
  for (std::uint64_t i = 0; i < trials; ++i) hits += f.contains(absent_key(i, salt));
  return hits;
}

// The measured rate is under `target` (1e-9 binomial quantile), agrees both ways with
// the filter's own estimate from its fill (5 % model slack for probe dependence), and
// the estimate itself is under target.
template <class Filter>
void check_rate(const Filter& f, double target, std::uint64_t salt) {
  const std::uint64_t hits = count_false_positives(f, salt);
  const double estimate = f.estimated_false_positive_rate();
  INFO("hits " << hits << " of " << kAbsentTrials << ", target " << target << ", estimate "
               << estimate << ", slices " << f.slice_count());
  CHECK(static_cast<double>(hits) <= binomial_upper(kAbsentTrials, target));
  CHECK(static_cast<double>(hits) <= binomial_upper(kAbsentTrials, estimate * 1.05));
  CHECK(static_cast<double>(hits) >= binomial_lower(kAbsentTrials, estimate * 0.95));
  CHECK(estimate <= target);
}

}  // namespace segbloom::test
