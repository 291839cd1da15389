// The golden transition blob tests/data/transition_scalable.sgbf: what it holds and the
// rule that built it, shared by the generator (tests/make_golden.cpp) and the test that
// loads it (tests/test_golden.cpp).
//
// A ScalableBloomFilter (capacity 64, p = 1 %, seed 3) holding present_key(i, 4000) for
// i < kBefore (it grows to 3 slices), moved at kTransitionGoldenStart to capacity 128,
// p = 0.1 % for kDefaultTransitionPeriod (7 days); then, a day later,
// present_key(i, 4001) for i < kDuring written to the pair.
#pragma once

#include <chrono>
#include <cstdint>

#include "segbloom/clock.hpp"
#include "segbloom/transition_filter.hpp"
#include "segbloom/scalable_bloom_filter.hpp"
#include "support/golden_specs.hpp"
#include "support/stats.hpp"

namespace segbloom::test {

struct TransitionGolden {
  static constexpr const char* kFile = "transition_scalable.sgbf";
  static constexpr UnixSeconds kStart = 1'767'225'600;  // 2026-01-01 00:00:00 UTC
  static constexpr UnixSeconds kEndsAt = kStart + kDefaultTransitionPeriod.count();
  static constexpr std::uint64_t kBefore = 300;
  static constexpr std::uint64_t kDuring = 100;
  static constexpr std::uint64_t kSaltBefore = 4000;
  static constexpr std::uint64_t kSaltDuring = 4001;

  // Builds the pair by its rule; leaves `clock` one day after kStart. The pair keeps a
  // pointer to `clock`.
  static TransitionFilter<ScalableBloomFilter> build(ManualClock& clock) {
    clock.set(kStart);
    ScalableBloomFilter before(golden_options(64, 0.01, 0, 3), clock);
    for (std::uint64_t i = 0; i < kBefore; ++i) before.insert(present_key(i, kSaltBefore));
    auto pair = TransitionFilter<ScalableBloomFilter>::begin(
        std::move(before), golden_options(128, 0.001, 0, 3), kDefaultTransitionPeriod, clock);
    clock.advance(std::chrono::hours(24));
    for (std::uint64_t i = 0; i < kDuring; ++i) pair.insert(present_key(i, kSaltDuring));
    return pair;
  }
};

}  // namespace segbloom::test
