// Test support: the false-positive checks every filter kind shares.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>

#include "support/stats.hpp"

namespace segbloom::test {

inline constexpr std::uint64_t kAbsentTrials = 1'000'000;

// Absent keys to look up when the filter's rate is about `estimate`. A growing filter runs
// well under its target (slice 0 is built for 0.2 p), so a fixed 10^6 lookups at p = 0.1 %
// expect about 120 hits, and the 1e-9 bound (6 sigma) would let a filter at 1.8x its model
// pass. Aiming at 10 000 expected hits puts 6 sigma at 6 % of the count; the cap keeps a
// check of a filter at 10^-4 under a second (3 * 10^7 lookups: 3 000 hits, 6 sigma = 11 %).
inline std::uint64_t absent_trials_for(double estimate) {
  constexpr double kHitsWanted = 10'000;
  if (!(estimate > 0)) return kAbsentTrials;
  const double wanted = kHitsWanted / estimate;
  return static_cast<std::uint64_t>(std::clamp(wanted, 1e6, 3e7));
}

// Hits among `trials` keys never inserted (absent_key stream under `salt`).
template <class Filter>
std::uint64_t count_false_positives(const Filter& f, std::uint64_t salt,
                                    std::uint64_t trials = kAbsentTrials) {
  std::uint64_t hits = 0;
  for (std::uint64_t i = 0; i < trials; ++i) hits += f.contains(absent_key(i, salt));
  return hits;
}

// The measured rate is under `target` (1e-9 binomial quantile), agrees both ways with
// `estimate`, the filter's own from its fill (5 % model slack for probe dependence), and
// the estimate itself is under target. For filters whose estimate comes from elsewhere
// (a concurrent filter's snapshot).
template <class Filter>
void check_rate_against(const Filter& f, double target, double estimate, std::uint64_t salt) {
  const std::uint64_t trials = absent_trials_for(estimate);
  // Fewer expected hits and the checks below stop meaning much (the lower bound goes to 0):
  // a case at so low a rate needs a count of its own.
  REQUIRE(static_cast<double>(trials) * estimate >= 30);
  const std::uint64_t hits = count_false_positives(f, salt, trials);
  INFO("hits " << hits << " of " << trials << ", target " << target << ", estimate "
               << estimate << ", slices " << f.slice_count());
  CHECK(static_cast<double>(hits) <= binomial_upper(trials, target));
  CHECK(static_cast<double>(hits) <= binomial_upper(trials, estimate * 1.05));
  CHECK(static_cast<double>(hits) >= binomial_lower(trials, estimate * 0.95));
  CHECK(estimate <= target);
}

template <class Filter>
void check_rate(const Filter& f, double target, std::uint64_t salt) {
  check_rate_against(f, target, f.estimated_false_positive_rate(), salt);
}

}  // namespace segbloom::test
