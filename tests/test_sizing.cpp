#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <tuple>
#include <thread>

#include "segbloom/sizing.hpp"
#include "support/size_memo_checks.hpp"

using namespace segbloom;
using segbloom::test::check_memo_answers_as_search;

TEST_CASE("bits per element and probes match hand-computed values", "[sizing]") {
  // bpe = -ln p / ln^2 2; k = ceil(ln 2 * bpe) = ceil(-log2 p).
  CHECK(bits_per_element(0.01) == Approx(9.5851).epsilon(1e-4));
  CHECK(bits_per_element(0.001) == Approx(14.3776).epsilon(1e-4));
  CHECK(bits_per_element(0.5) == Approx(1.4427).epsilon(1e-4));
  CHECK(probes_for_rate(0.01) == 7);
  CHECK(probes_for_rate(0.001) == 10);
  CHECK(probes_for_rate(0.0001) == 14);
  CHECK(probes_for_rate(0.5) == 1);
  CHECK(probes_for_rate(0.9) == 1);
  // Exact powers of two are not bumped up by rounding noise.
  CHECK(probes_for_rate(0.125) == 3);
  CHECK(probes_for_rate(1.0 / 1024) == 10);
  CHECK(probes_for_rate(0.124) == 4);
}

TEST_CASE("textbook bits round up to whole 64-bit words", "[sizing]") {
  // 1000 items at 1 %: ceil(9585.06) = 9586 -> 150 words = 9600 bits.
  CHECK(textbook_bits(1000, 0.01) == 9600);
  // 2000 items at 0.1 %: ceil(28755.17) = 28756 -> 450 words = 28800 bits.
  CHECK(textbook_bits(2000, 0.001) == 28800);
  CHECK(textbook_bits(1, 0.5) == 64);
}

TEST_CASE("capacity bits put the half-full point beyond capacity", "[sizing]") {
  for (std::uint64_t n : {1ull, 10ull, 200ull, 2000ull, 100000ull, 10000000ull}) {
    for (unsigned k : {1u, 7u, 10u, 20u}) {
      const std::uint64_t m = capacity_bits(n, k);
      INFO("n = " << n << ", k = " << k << ", m = " << m);
      CHECK(m % 64 == 0);
      CHECK(m >= 64);
      // Expected fill at n items is below one half ...
      CHECK(expected_fill(n, k, m) < 0.5);
      // ... and the size is never wasteful: within 12 % of the n k / ln 2 point (or one
      // word for tiny slices).
      const double half_point_bits = static_cast<double>(n) * k / std::log(2.0);
      CHECK(static_cast<double>(m) <= std::max(half_point_bits * 1.12, half_point_bits + 64 * 8));
    }
  }
  // Large slices need almost no margin: within 0.2 % of n k / ln 2.
  CHECK(static_cast<double>(capacity_bits(10000000, 7)) <=
        10000000 * 7 / std::log(2.0) * 1.002);
}

TEST_CASE("the pattern floor closes small classic slices a little before half full", "[sizing][floor]") {
  // Capacity 2 000 at 0.1 % in a window of 8: slices of 250 items at p_i = 1.25e-4, k 13,
  // where (1/2)^13 = 1.22e-4 and the floor ln 2 / (k m) = 1.05e-5 at half fill.
  Options o;
  o.capacity = 2000;
  o.false_positive_rate = 0.001;
  o.max_slices = 8;
  const SliceShape s = slice_shape(o, 0);
  REQUIRE(s.probes == 13);
  const double f = classic_full_fill(s.false_positive_rate, s.probes, s.bits);
  INFO("bits " << s.bits << ", full fill " << f);
  CHECK(f < 0.5);
  CHECK(f >= 0.48);
  // After the insert that fills it (up to k - 1 cells past f) the rate, fill^k plus the
  // floor of the items that fill holds (-m ln(1 - fill) / k), is p_i.
  const double m = static_cast<double>(s.bits);
  const double after = f + (s.probes - 1) / m;
  const double items_after = -std::log1p(-after) * m / s.probes;
  CHECK(std::pow(after, s.probes) + items_after / (m * m) == Approx(s.false_positive_rate).epsilon(1e-9));
  CHECK(full_cells(s) == static_cast<std::uint64_t>(std::ceil(f * m)));
  // It still takes its capacity first, with the six-sigma margin of capacity_bits.
  CHECK(expected_fill(s.capacity, s.probes, s.bits) < f);
  const double a = static_cast<double>(s.capacity) * s.probes / m;  // the set count's sd
  const double sd = std::sqrt(m * std::exp(-a) * (1 - (1 + a) * std::exp(-a)));
  CHECK(expected_fill(s.capacity, s.probes, s.bits) * m + 6 * sd <= f * m + 1);
  // The estimate counts the floor: n / m^2 on top of fill^k.
  CHECK(slice_rate_at_fill(s, 0.4, 200) == Approx(std::pow(0.4, 13) + 200 / (m * m)));
  CHECK(pattern_floor(200, s.bits) == Approx(200 / (m * m)));

  // Slices that need it get at most 1/16 more bits than capacity_bits, which the loaders
  // tolerate: filters stored before this sizing still load.
  for (const auto& [capacity, rate, window] : {std::tuple{2000u, 1e-4, 8u}, std::tuple{500u, 1e-4, 4u},
                                               std::tuple{300u, 1e-3, 4u}, std::tuple{100u, 1e-2, 4u}}) {
    Options small;
    small.capacity = capacity;
    small.false_positive_rate = rate;
    small.max_slices = window;
    const SliceShape shape = slice_shape(small, 0);
    const std::uint64_t before = capacity_bits(shape.capacity, shape.probes);
    INFO("capacity " << capacity << ", p " << rate << ": " << before << " -> " << shape.bits << " bits");
    CHECK(shape.bits >= before);
    CHECK(shape.bits <= before + before / 16);
    CHECK(full_cells(shape) <= shape.bits / 2);
    CHECK(expected_fill(shape.capacity, shape.probes, shape.bits) * static_cast<double>(shape.bits) <
          static_cast<double>(full_cells(shape)));
  }

  // Untouched: large slices, the blocked layout, and floors too large to pay for at a fill
  // of 0.48 or more (3 000 items at 2e-11: the floor is 10^-7 at half fill).
  Options big = o;
  big.capacity = 80'000;
  CHECK(full_cells(slice_shape(big, 0)) == slice_shape(big, 0).bits / 2);
  Options blocked = o;
  blocked.layout = Layout::blocked;
  CHECK(full_cells(slice_shape(blocked, 0)) == slice_shape(blocked, 0).bits / 2);
  Options extreme;
  extreme.capacity = 3000;
  extreme.false_positive_rate = 1e-10;
  const SliceShape e = slice_shape(extreme, 0);
  CHECK(classic_full_fill(e.false_positive_rate, e.probes, e.bits) == 0.5);
  CHECK(e.bits == capacity_bits(e.capacity, e.probes));
  // ... which probes by triple hashing instead, full at half there.
  CHECK(needs_triple_hashing(e.false_positive_rate, e.probes, e.bits));
  CHECK(e.probing == Probing::triple_hashing);
  CHECK(full_cells(e) == e.bits / 2);
  CHECK(slice_shape(o, 0).probing == Probing::scheme);
  CHECK(slice_shape(big, 0).probing == Probing::scheme);
}

TEST_CASE("slices whose floor closing early cannot pay for probe by triple hashing", "[sizing][floor]") {
  // 1 000 items at 0.01 % in a window of 8: 125-item slices at 1.25e-5, k 17, where double
  // hashing's rate at half fill, (1/2)^k plus its floor ln 2 / (k m), is 1.6x the share.
  Options o;
  o.capacity = 1000;
  o.false_positive_rate = 1e-4;
  o.max_slices = 8;
  const SliceShape s = slice_shape(o, 0);
  INFO("bits " << s.bits << ", k " << s.probes);
  REQUIRE(s.probes == 17);
  CHECK(needs_triple_hashing(s.false_positive_rate, s.probes, capacity_bits(s.capacity, s.probes)));
  CHECK(s.probing == Probing::triple_hashing);
  // Its estimate has no n / m^2 term.
  CHECK(slice_rate_at_fill(s, 0.4, 100) == Approx(std::pow(0.4, 17)));
  // Full where the insert that fills it (up to k - 1 cells past the full point) leaves it
  // within its share, and sized to take its capacity before that, six sigma out.
  for (const auto& [capacity, rate, window] :
       {std::tuple{1000u, 1e-4, 8u}, std::tuple{100u, 1e-3, 4u}, std::tuple{16u, 1e-6, 8u},
        std::tuple{1932u, 1e-6, 1u}, std::tuple{80'000u, 1e-8, 1u},
        // Rates that need more than the 255 probes a slice takes: it closes below half full.
        std::tuple{1000u, 1e-100, 1u}, std::tuple{100'000u, 1e-300, 1u}, std::tuple{2u, 5e-324, 1u}}) {
    Options small;
    small.capacity = capacity;
    small.false_positive_rate = rate;
    small.max_slices = window;
    const SliceShape shape = slice_shape(small, 0);
    const double m = static_cast<double>(shape.bits);
    const std::uint64_t full = full_cells(shape);
    INFO("capacity " << capacity << ", p " << rate << ": " << shape.bits << " bits, k " << shape.probes
                     << ", full at " << full << ", capacity_bits " << capacity_bits(shape.capacity, shape.probes));
    CHECK(shape.probing == Probing::triple_hashing);
    CHECK(std::pow((static_cast<double>(full) + shape.probes - 1) / m, shape.probes) <=
          shape.false_positive_rate * (1 + 1e-9));
    const double a = static_cast<double>(shape.capacity) * shape.probes / m;
    const double sd = std::sqrt(m * std::exp(-a) * (1 - (1 + a) * std::exp(-a)));
    CHECK(expected_fill(shape.capacity, shape.probes, shape.bits) * m + 6 * sd <= static_cast<double>(full) + 1);
  }
  // Where k was clamped below -log2 p_i the slice closes at p_i^(1 / k), k - 1 cells before.
  CHECK(triple_full_fill(1e-100, 255, std::uint64_t{1} << 20) ==
        Approx(std::pow(1e-100, 1.0 / 255) - 254.0 / (1 << 20)));
  CHECK(triple_full_fill(1e-100, 255, std::uint64_t{1} << 20) < 0.41);
  CHECK(triple_full_fill(0.5, 1, 64) == 0.5);
}

TEST_CASE("capacity bits from the per-thread memo match the search", "[sizing]") {
  check_memo_answers_as_search(capacity_bits);
  // An empty slot is not an answer: 0 items, 0 probes still take the search's one word.
  std::uint64_t first = 0, again = 0;  // a fresh thread's memo; checked on this thread
  std::thread([&] {
    first = capacity_bits(0, 0);
    again = capacity_bits(0, 0);
  }).join();
  CHECK(first == 64);
  CHECK(again == 64);
  // The classic and blocked searches keep memos of their own: the same (items, probes)
  // asked of both, blocked first, gives each its own size (classic 2 000 items at k = 7
  // is not a multiple of 512 bits).
  std::uint64_t classic_alone = 0, classic_after = 0, blocked = 0;
  std::thread([&] { classic_alone = capacity_bits(2000, 7); }).join();
  std::thread([&] {
    blocked = blocked_capacity_bits(2000, 7);
    classic_after = capacity_bits(2000, 7);
  }).join();
  CHECK(classic_after == classic_alone);
  CHECK(blocked != classic_alone);
}

TEST_CASE("rates at fill and compound rates", "[sizing]") {
  CHECK(rate_at_fill(0.5, 10) == Approx(1.0 / 1024));
  CHECK(rate_at_fill(0.5, 7) == Approx(1.0 / 128));
  CHECK(rate_at_fill(0.0, 7) == 0.0);
  double acc = 0;
  acc = combine_rates(acc, 0.01);
  acc = combine_rates(acc, 0.02);
  CHECK(acc == Approx(1 - 0.99 * 0.98));
}

TEST_CASE("slice shapes in growing and window mode", "[sizing]") {
  Options o;
  o.capacity = 1000;
  o.false_positive_rate = 0.01;
  o.growth = 2;
  o.tightening = 0.5;
  const SliceShape s0 = slice_shape(o, 0);
  CHECK(s0.capacity == 1000);
  CHECK(s0.false_positive_rate == Approx(0.005));
  CHECK(s0.probes == 8);
  CHECK(s0.bits == capacity_bits(1000, 8));
  const SliceShape s3 = slice_shape(o, 3);
  CHECK(s3.capacity == 8000);
  CHECK(s3.false_positive_rate == Approx(0.01 * 0.5 * 0.125));
  CHECK(s3.probes == 11);

  // The rates of all slices of a growing filter sum to less than the target.
  double sum = 0;
  for (std::uint32_t i = 0; i < 20; ++i) sum += slice_shape(o, i).false_positive_rate;
  // Slice 30 would be 2^30 times the first: too large to represent, so it throws.
  CHECK_THROWS_AS(slice_shape(o, 30), std::length_error);
  CHECK(sum < o.false_positive_rate);

  o.max_slices = 4;
  const SliceShape w = slice_shape(o, 0);
  CHECK(w.capacity == 250);
  CHECK(w.false_positive_rate == Approx(0.0025));
  CHECK(w.probes == 9);
  CHECK(slice_shape(o, 3) == w);

  // The LevelDB format clamps k.
  o.false_positive_rate = 1e-12;
  CHECK(slice_shape(o, 0, 30).probes == 30);
}
