#include <catch2/catch.hpp>

#include <cstdint>
#include <deque>
#include <new>
#include <optional>
#include <vector>

#include "segbloom/segbloom.hpp"
#include "support/flaky_cells.hpp"
#include "support/stats.hpp"

using namespace segbloom;
using segbloom::test::present_key;

TEST_CASE("window mode remembers the most recent capacity*(W-1)/W items at every moment",
          "[window]") {
  Options o;
  o.capacity = 3000;
  o.false_positive_rate = 0.01;
  o.max_slices = 3;
  ScalableBloomFilter f(o);
  const std::uint64_t guaranteed = o.capacity * (o.max_slices - 1) / o.max_slices;
  std::deque<std::uint64_t> recent;  // keys whose insert returned true, newest last
  std::uint64_t missing = 0;
  for (std::uint64_t i = 0; i < 60'000; ++i) {
    const std::uint64_t key = present_key(i, 3);
    if (f.insert(key)) {
      recent.push_back(key);
      if (recent.size() > guaranteed) recent.pop_front();
    }
    if (i % 997 == 0) {
      for (auto k : recent) missing += !f.contains(k);
    }
  }
  CHECK(missing == 0);
  CHECK(f.rotations() >= 15);
}

TEST_CASE("window mode keeps memory bounded and recycles the oldest slice", "[window]") {
  Options o;
  o.capacity = 1000;
  o.max_slices = 4;
  ScalableBloomFilter f(o);
  std::uint64_t i = 0;
  while (f.slice_count() < 4) f.insert(present_key(i++));
  const std::uint64_t bytes = f.memory_bytes();
  // Fill until the first rotation: the oldest slice is cleared and becomes the newest.
  const auto second_words_before = std::vector<std::uint64_t>(f.slices()[1].cells().words().begin(),
                                                              f.slices()[1].cells().words().end());
  while (f.rotations() == 0) f.insert(present_key(i++));
  CHECK(f.slice_count() == 4);
  CHECK(f.slices().back().items() == 1);  // the insert that rotated went to the recycled slice
  // Cleared before it: its cells hold that one key's probes only (a half-full slice had
  // thousands set).
  CHECK(f.slices().back().cells().set_count() <= f.slices().back().shape().probes);
  CHECK(f.slices().back().cells().set_count() >= 1);
  // What was the second-oldest slice is now the oldest, untouched.
  CHECK(std::vector<std::uint64_t>(f.slices().front().cells().words().begin(),
                                   f.slices().front().cells().words().end()) == second_words_before);
  for (int round = 0; round < 20'000; ++round) f.insert(present_key(i++));
  CHECK(f.memory_bytes() == bytes);
  CHECK(f.slice_count() == 4);
  // Each slice closes once half its cells are set: the insert that got it there set at
  // most k of them.
  for (const auto& slice : f.slices()) {
    const SliceShape& shape = slice.shape();
    CHECK(2 * slice.cells().set_count() <= shape.bits + 2 * shape.probes);
  }
}

TEST_CASE("a window of one slice forgets everything at each rotation but the newest",
          "[window]") {
  Options o;
  o.capacity = 500;
  o.max_slices = 1;
  ScalableBloomFilter f(o);
  std::uint64_t i = 0;
  while (f.rotations() == 0) f.insert(present_key(i++));
  CHECK(f.size() == 1);
  CHECK(f.contains(present_key(i - 1)));
  // The keys before it are gone: found only as false positives of a slice holding one key.
  std::uint64_t still_found = 0;
  for (std::uint64_t j = 0; j + 1 < i; ++j) still_found += f.contains(present_key(j));
  INFO(still_found << " of " << i - 1 << " earlier keys found");
  CHECK(i > 300);
  // The slice's estimate (its fill and its pattern floor) puts the expected count far below
  // 1: a Poisson bound, where binomial_upper's floor of about 19 would pass a rotation that
  // left half the old words set (about 4 of these keys found).
  CHECK(still_found <= segbloom::test::poisson_upper(static_cast<double>(i - 1) * f.estimated_false_positive_rate()));
}

TEST_CASE("window rotation replaces a slice stored under an earlier sizing by one of today's shape",
          "[window]") {
  // A stored slice may differ from today's plan by the loaders' tolerance (an earlier
  // version's sizing); reusing it would keep the old size for ever.
  Options o;
  o.capacity = 2000;
  o.false_positive_rate = 0.001;
  o.max_slices = 4;
  const SliceShape planned = ScalableBloomFilter::planned_shape(o, 0);
  SliceShape older = planned;
  older.bits -= 128;
  std::vector<ScalableBloomFilter::slice_type> slices;
  slices.emplace_back(older);
  ScalableBloomFilter f(from_parts, o, std::move(slices), 0);
  std::uint64_t i = 0;
  while (f.rotations() < 2) f.insert(present_key(i++, 5));
  REQUIRE(f.slice_count() == 4);
  for (const auto& slice : f.slices()) CHECK(slice.shape() == planned);
  for (std::uint64_t j = i - 500; j < i; ++j) CHECK(f.contains(present_key(j, 5)));
}

TEST_CASE("an insert that cannot allocate the slice replacing a stored one leaves the window as it was",
          "[window]") {
  // A full window whose oldest slice was stored under an earlier sizing: the rotation must
  // allocate its replacement. If that fails, the insert throws std::bad_alloc and changes
  // nothing (README, "Guarantees"): not the order of the slices, nor the rotation count.
  Options o;
  o.capacity = 2000;
  o.false_positive_rate = 0.001;
  o.max_slices = 3;
  const SliceShape planned = test::FlakyFilter::planned_shape(o, 0);
  SliceShape older = planned;
  older.bits -= 128;
  std::vector<test::FlakyFilter::slice_type> slices;
  slices.emplace_back(older);
  test::FlakyFilter f(from_parts, o, std::move(slices), 0);
  std::uint64_t i = 0;
  while (f.slice_count() < 3) f.insert(present_key(i++, 6));
  REQUIRE(!(f.slices().front().shape() == planned));
  // Inserts go on until one must rotate: with allocations failing, that one throws.
  std::optional<test::FlakyFilter> before;
  bool threw = false;
  {
    const test::FailingAllocations failing;
    for (; i < 100'000 && !threw; ++i) {
      before.emplace(f);
      try {
        f.insert(present_key(i, 6));
      } catch (const std::bad_alloc&) {
        threw = true;
      }
    }
  }
  REQUIRE(threw);
  CHECK(f == *before);
  CHECK(f.rotations() == 0);
  // Allocations work again: the same insert rotates, replacing the stored slice.
  CHECK(f.insert(present_key(i - 1, 6)));
  CHECK(f.rotations() == 1);
  for (const auto& slice : f.slices()) CHECK(slice.shape() == planned);
  CHECK(f.contains(present_key(i - 1, 6)));
  CHECK(f.contains(present_key(i - 2, 6)));
}
