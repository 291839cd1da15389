// False-positive rates, checked with fixed seeds and binomial bounds.
//
// Each check counts hits among N = 10^6 (or more) keys never inserted. The count is
// Binomial(N, q) for the filter's true rate q. "Rate <= target" passes when the count is
// below the 1e-9 upper quantile of Binomial(N, target): a correct filter (q <= target)
// fails with probability < 1e-9, while a filter 10 % over target at p = 1 % (mean
// 11 000 against a bound of about 10 600) fails almost surely. The estimate check
// compares the count with Binomial(N, estimated rate) both ways, so a filter whose
// bits do not behave like the model (too few or too many hits) is caught too.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "segbloom/segbloom.hpp"
#include "support/rate_checks.hpp"
#include "support/stats.hpp"

using namespace segbloom;
using segbloom::test::absent_key;
using segbloom::test::binomial_lower;
using segbloom::test::binomial_upper;
using segbloom::test::present_key;

using segbloom::test::check_rate;
using segbloom::test::count_false_positives;
constexpr std::uint64_t kAbsent = segbloom::test::kAbsentTrials;

TEST_CASE("growing mode keeps the compound rate under target at 1x, 8x and 64x capacity",
          "[false-positives][growing]") {
  for (const auto& [p, layout] : {std::pair{0.01, Layout::classic}, std::pair{0.001, Layout::classic},
                                  std::pair{0.01, Layout::blocked}, std::pair{0.001, Layout::blocked}}) {
    Options o;
    o.layout = layout;
    o.capacity = 10'000;
    o.false_positive_rate = p;
    ScalableBloomFilter f(o);
    std::uint64_t inserted = 0;
    for (std::uint64_t load : {1u, 8u, 64u}) {
      const std::uint64_t target_items = o.capacity * load;
      while (inserted < target_items) f.insert(present_key(inserted++, 11));
      INFO("p = " << p << ", layout " << static_cast<int>(layout) << ", load " << load << "x");
      check_rate(f, p, load * 1000 + static_cast<std::uint64_t>(1 / p));
    }
  }
}

TEST_CASE("window mode keeps the rate under target forever", "[false-positives][window]") {
  for (const auto& [w, layout] : {std::pair{4u, Layout::classic}, std::pair{10u, Layout::classic},
                                  std::pair{4u, Layout::blocked}}) {
    Options o;
    o.layout = layout;
    o.capacity = 20'000;
    o.false_positive_rate = 0.01;
    o.max_slices = w;
    ScalableBloomFilter f(o);
    std::uint64_t inserted = 0;
    for (std::uint64_t load : {1u, 8u, 64u}) {
      while (inserted < o.capacity * load) f.insert(present_key(inserted++, 13));
      INFO("window " << w << ", layout " << static_cast<int>(layout) << ", load " << load << "x");
      CHECK(f.slice_count() == w);
      check_rate(f, o.false_positive_rate, 77 + load + w);
    }
    CHECK(f.rotations() > 0);
  }
}

TEST_CASE("a single slice at its design load is within 15 % of its theoretical rate",
          "[false-positives][slice]") {
  // One window slice of n items. Sized to take n items before half-full, so at n items
  // its rate is (expected fill)^k, just under (1/2)^k <= p. For p = 0.1 % that is within
  // 3 % of p; for p = 1/128 it is p itself.
  for (double p : {0.001, 1.0 / 128, 0.01}) {
    Options o;
    o.capacity = 100'000;
    o.false_positive_rate = p;
    o.max_slices = 1;
    ScalableBloomFilter f(o);
    for (std::uint64_t i = 0; i < o.capacity; ++i) f.insert(present_key(i, 21));
    REQUIRE(f.slice_count() == 1);
    const SliceShape& shape = f.slices().front().shape();
    const double theory = rate_at_fill(expected_fill(o.capacity, shape.probes, shape.bits),
                                       shape.probes);
    const std::uint64_t trials = 4'000'000;
    const double measured =
        static_cast<double>(count_false_positives(f, 5, trials)) / static_cast<double>(trials);
    INFO("p = " << p << ", k = " << shape.probes << ", theory " << theory << ", measured "
                << measured);
    CHECK(theory <= p);
    CHECK(std::abs(measured - theory) <= 0.15 * theory);
    if (p == 0.001 || p == 1.0 / 128) CHECK(std::abs(measured - p) <= 0.15 * p);
  }
}

TEST_CASE("string keys have the same false-positive behaviour", "[false-positives][strings]") {
  Options o;
  o.capacity = 10'000;
  o.false_positive_rate = 0.01;
  ScalableBloomFilter f(o);
  for (std::uint64_t i = 0; i < 80'000; ++i) f.insert("item-" + std::to_string(i));
  std::uint64_t hits = 0;
  for (std::uint64_t i = 0; i < kAbsent; ++i) hits += f.contains("absent-" + std::to_string(i));
  CHECK(static_cast<double>(hits) <= binomial_upper(kAbsent, o.false_positive_rate));
  CHECK(static_cast<double>(hits) >=
        binomial_lower(kAbsent, f.estimated_false_positive_rate() * 0.95));
}
