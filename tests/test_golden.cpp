// Golden values: the exact cells a few fixed keys set. A change of hashing, probing or
// sizing would make stored filters answer wrongly, so it must fail here first.
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "segbloom/segbloom.hpp"
#include "segbloom/transition_serialization.hpp"
#include "segbloom/transition_view.hpp"
#include "support/golden_specs.hpp"
#include "support/transition_golden.hpp"
#include "support/corruption.hpp"

using namespace segbloom;

namespace {

template <class K>
std::vector<std::uint64_t> cells_of(const K& key, const Options& o) {
  ScalableBloomFilter f(o);
  f.insert(key);
  std::vector<std::uint64_t> cells;
  const auto words = f.slices().front().cells().words();
  for (std::uint64_t i = 0; i < words.size() * 64; ++i) {
    if ((words[i / 64] >> (i % 64)) & 1) cells.push_back(i);
  }
  return cells;
}

std::string show(const std::vector<std::uint64_t>& v) {
  std::string s;
  for (auto x : v) s += std::to_string(x) + ", ";
  return s;
}

}  // namespace

TEST_CASE("golden cells for fixed keys and options", "[golden]") {
  // Recorded from this code when the classic format was first saved (format version 1:
  // XXH3-128 of the key's little-endian bytes, start and step by multiply-shift, enhanced
  // double hashing) and never regenerated: a change here breaks every stored filter.
  Options o;
  o.capacity = 2000;
  o.false_positive_rate = 0.001;
  // First slice of a growing filter: p_0 = 0.001 * (1 - 0.8) = 2e-4, so k = 13.
  const SliceShape shape = slice_shape(o, 0);
  CHECK(shape.bits == 38464);
  CHECK(shape.probes == 13);
  INFO("key 4711 sets " << show(cells_of(std::uint64_t{4711}, o)));
  CHECK(cells_of(std::uint64_t{4711}, o) ==
        std::vector<std::uint64_t>{471, 4747, 4907, 9033, 13287, 17603, 17605, 21831, 26139, 26182,
                                   30380, 34674, 34771});
  CHECK(cells_of(std::string_view{"video:abc"}, o) ==
        std::vector<std::uint64_t>{3270, 7690, 10990, 12114, 15354, 16541, 19729, 20970, 24114,
                                   25400, 28508, 32910, 37319});
  Options s = o;
  s.seed = 42;
  s.max_slices = 4;  // window slices: 500 items at 2.5e-4, k = 12
  CHECK(slice_shape(s, 0).bits == 9152);
  CHECK(slice_shape(s, 0).probes == 12);
  CHECK(cells_of(std::uint32_t{7}, s) ==
        std::vector<std::uint64_t>{581, 849, 1502, 2425, 3351, 4281, 5216, 6157, 7105, 8061, 8813,
                                   9026});
}

// The transition blob written before the pattern floor (support/golden_specs.hpp,
// kLegacyGoldenDir): loads as it is, answers for every key, saves the same bytes, and
// its view agrees.
TEST_CASE("golden transition blob written before the pattern floor", "[golden][transition]") {
  using Golden = segbloom::test::TransitionGolden;
  using Pair = TransitionFilter<ScalableBloomFilter>;
  using segbloom::test::present_key;
  std::ifstream in(std::string(SEGBLOOM_TEST_DATA) + "/" + segbloom::test::kLegacyGoldenDir + "/" + Golden::kFile,
                   std::ios::binary);
  REQUIRE(in.good());
  const std::string blob{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  ManualClock clock(Golden::kStart + 86400);
  const Pair loaded = from_bytes<Pair>(blob, {}, clock);
  ManualClock build_clock;
  CHECK_FALSE(loaded == Golden::build(build_clock));  // today's sizing plans it otherwise
  CHECK(to_bytes(loaded) == blob);
  CHECK(loaded.in_transition());
  std::uint64_t missing = 0, mismatches = 0;
  const TransitionView view(blob, {}, clock);
  for (std::uint64_t i = 0; i < Golden::kBefore; ++i) missing += !loaded.contains(present_key(i, Golden::kSaltBefore));
  for (std::uint64_t i = 0; i < Golden::kDuring; ++i) missing += !loaded.contains(present_key(i, Golden::kSaltDuring));
  for (std::uint64_t i = 0; i < 2000; ++i) mismatches += view.contains(present_key(i, 99)) != loaded.contains(present_key(i, 99));
  CHECK(missing == 0);
  CHECK(mismatches == 0);
}

// The golden transition blob (support/transition_golden.hpp): loads, answers and saves
// as when it was written, its period ends on schedule, and every truncation and bit
// flip of it is refused.
TEST_CASE("golden transition blob", "[golden][transition]") {
  using Golden = segbloom::test::TransitionGolden;
  using Pair = TransitionFilter<ScalableBloomFilter>;
  using segbloom::test::present_key;
  std::ifstream in(std::string(SEGBLOOM_TEST_DATA) + "/" + Golden::kFile, std::ios::binary);
  REQUIRE(in.good());
  const std::string blob{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};

  ManualClock build_clock;
  const Pair rebuilt = Golden::build(build_clock);
  ManualClock clock(Golden::kStart + 86400);
  const Pair loaded = from_bytes<Pair>(blob, {}, clock);
  CHECK(loaded == rebuilt);
  CHECK(to_bytes(loaded) == blob);  // saving again gives the same bytes
  CHECK(loaded.in_transition());
  CHECK(loaded.transition_ends_at() == Golden::kEndsAt);
  REQUIRE(loaded.previous() != nullptr);
  CHECK(loaded.previous()->slice_count() == 3);
  std::uint64_t missing = 0;
  for (std::uint64_t i = 0; i < Golden::kBefore; ++i) missing += !loaded.contains(present_key(i, Golden::kSaltBefore));
  for (std::uint64_t i = 0; i < Golden::kDuring; ++i) missing += !loaded.contains(present_key(i, Golden::kSaltDuring));
  CHECK(missing == 0);
  const TransitionView view(blob, {}, clock);
  std::uint64_t mismatches = 0;
  for (std::uint64_t i = 0; i < 2000; ++i) {
    for (const std::uint64_t salt : {Golden::kSaltBefore, Golden::kSaltDuring, std::uint64_t{99}}) {
      mismatches += view.contains(present_key(i, salt)) != loaded.contains(present_key(i, salt));
    }
  }
  CHECK(mismatches == 0);

  // At the end of the period the previous filter is gone; the new keys stay.
  clock.set(Golden::kEndsAt);
  const Pair after = from_bytes<Pair>(blob, {}, clock);
  CHECK(after.previous() == nullptr);
  CHECK(after.current() == rebuilt.current());
  CHECK_FALSE(TransitionView(blob, {}, clock).in_transition());
  missing = 0;
  for (std::uint64_t i = 0; i < Golden::kDuring; ++i) missing += !after.contains(present_key(i, Golden::kSaltDuring));
  CHECK(missing == 0);

  std::uint64_t refused = 0;
  for (std::size_t n = 0; n < blob.size(); ++n) {
    try {
      (void)from_bytes<Pair>(std::string_view(blob.data(), n), {}, clock);
    } catch (const FormatError&) {
      ++refused;
    }
  }
  CHECK(refused == blob.size());
  refused = 0;
  test::for_each_bit_flip(blob, [&](const std::string& flipped) {
    try {
      (void)from_bytes<Pair>(flipped, {}, clock);
    } catch (const FormatError&) {
      ++refused;
    }
  });
  CHECK(refused == blob.size() * 8);
}
