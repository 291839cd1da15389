#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "segbloom/detail/popcount.hpp"
#include "segbloom/segbloom.hpp"
#include "support/stats.hpp"

using namespace segbloom;
using segbloom::test::absent_key;
using segbloom::test::present_key;

namespace {

Options small_options(std::uint32_t max_slices = 0) {
  Options o;
  o.capacity = 2000;
  o.false_positive_rate = 0.01;
  o.max_slices = max_slices;
  return o;
}

std::string string_key(std::uint64_t i) { return "video:" + std::to_string(present_key(i)); }

}  // namespace

TEST_CASE("the README example works", "[filter]") {
  Options opts;
  opts.capacity = 2000;
  opts.false_positive_rate = 0.001;
  ScalableBloomFilter seen(opts);
  CHECK(seen.insert(std::uint64_t{4711}));
  CHECK_FALSE(seen.insert(std::uint64_t{4711}));
  CHECK(seen.contains(std::uint64_t{4711}));
  CHECK(seen.insert(std::string_view{"video:abc"}));
  CHECK(seen.contains(std::string{"video:abc"}));
  CHECK(seen.contains("video:abc"));
  CHECK(seen.size() == 2);
  CHECK(seen.slice_count() == 1);
}

TEST_CASE("no false negatives: a million integer keys across many slices, growing mode",
          "[filter][no-false-negatives]") {
  ScalableBloomFilter f(small_options());
  constexpr std::uint64_t n = 1'000'000;
  std::uint64_t inserted = 0;
  for (std::uint64_t i = 0; i < n; ++i) inserted += f.insert(present_key(i));
  CHECK(f.slice_count() >= 8);  // 2000 * (1 + 2 + ... + 2^8) < 10^6: many slices
  CHECK(f.size() == inserted);
  std::uint64_t missing = 0;
  for (std::uint64_t i = 0; i < n; ++i) missing += !f.contains(present_key(i));
  CHECK(missing == 0);
}

TEST_CASE("no false negatives: a million string keys, and the same bytes as every string type",
          "[filter][no-false-negatives]") {
  ScalableBloomFilter f(small_options());
  constexpr std::uint64_t n = 1'000'000;
  for (std::uint64_t i = 0; i < n; ++i) f.insert(string_key(i));
  std::uint64_t missing = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::string key = string_key(i);
    missing += !f.contains(std::string_view(key));
    if (i % 1000 == 0) {
      // std::string, string_view, const char* and a byte span of the same bytes agree.
      missing += !f.contains(key);
      missing += !f.contains(key.c_str());
      missing += !f.contains(std::span<const char>(key.data(), key.size()));
      missing += !f.contains(std::as_bytes(std::span<const char>(key.data(), key.size())));
    }
  }
  CHECK(missing == 0);
  CHECK(f.slice_count() >= 8);
}

TEMPLATE_TEST_CASE("no false negatives for every integer width", "[filter][no-false-negatives]",
                   std::uint8_t, std::int16_t, std::uint32_t, std::int64_t, std::uint64_t) {
  ScalableBloomFilter f(small_options(4));
  std::mt19937_64 rng(42);
  std::vector<TestType> keys(20000);
  for (auto& k : keys) k = static_cast<TestType>(rng());
  for (auto k : keys) f.insert(k);
  // Window of 4 slices holding 2000 items: only the most recent 1500 are guaranteed.
  std::size_t missing = 0;
  for (std::size_t i = keys.size() - 1500; i < keys.size(); ++i) missing += !f.contains(keys[i]);
  CHECK(missing == 0);
}

TEST_CASE("no false negatives: a million keys in window mode, the recent window",
          "[filter][no-false-negatives][window]") {
  for (std::uint32_t w : {2u, 5u, 16u}) {
    Options o = small_options(w);
    o.capacity = 50'000;
    ScalableBloomFilter f(o);
    std::vector<std::uint64_t> recent;  // keys whose insert returned true, last first
    const std::uint64_t guaranteed = o.capacity * (w - 1) / w;
    for (std::uint64_t i = 0; i < 1'000'000; ++i) f.insert(present_key(i, w));
    CHECK(f.rotations() > 0);
    CHECK(f.slice_count() == w);
    std::uint64_t missing = 0;
    for (std::uint64_t i = 1'000'000 - guaranteed; i < 1'000'000; ++i) {
      missing += !f.contains(present_key(i, w));
    }
    INFO("window " << w);
    CHECK(missing == 0);
  }
}

TEST_CASE("batched lookups of classic filters answer like single ones", "[filter][batch]") {
  // contains_many's path for classic slices (each group asks them newest first, a slice's
  // fields read once per group, older slices only about keys not found yet): every answer,
  // false positives included, as contains gives it, for one slice, a filter grown to 4
  // slices (present keys in each), a window that has recycled slices, and a filter grown
  // from slices of 8 items, whose first ones probe by triple hashing (sizing.hpp).
  struct Case {
    const char* name;
    std::uint64_t capacity, items;
    std::uint32_t max_slices;
    std::size_t slices;
  };
  for (const Case c : {Case{"one slice", 20000, 20000, 1, 1}, Case{"grown", 2000, 20000, 0, 4},
                       Case{"window", 8000, 20000, 4, 4}, Case{"grown from 8 items", 8, 20000, 0, 12}}) {
    INFO(c.name);
    Options o;
    o.capacity = c.capacity;
    o.false_positive_rate = 0.01;
    o.max_slices = c.max_slices;
    ScalableBloomFilter f(o);
    for (std::uint64_t i = 0; i < c.items; ++i) f.insert(present_key(i));
    REQUIRE(f.slice_count() == c.slices);
    REQUIRE((c.max_slices == 4) == (f.rotations() > 0));  // the window has recycled slices
    const auto triple = [](const auto& s) { return s.shape().probing == Probing::triple_hashing; };
    REQUIRE(std::any_of(f.slices().begin(), f.slices().end(), triple) == (c.capacity == 8));
    REQUIRE_FALSE(std::all_of(f.slices().begin(), f.slices().end(), triple));
    for (const auto& s : f.slices()) REQUIRE(s.shape().layout == Layout::classic);
    std::vector<std::uint64_t> probe;  // not a multiple of the group size: a short last group
    for (std::uint64_t i = 0; i < 200003; ++i) probe.push_back(i % 4 == 0 ? present_key(i % c.items) : absent_key(i));
    std::unique_ptr<bool[]> found(new bool[probe.size()]);
    for (std::size_t i = 0; i < probe.size(); ++i) found[i] = !f.contains(probe[i]);  // every answer must be written
    const std::size_t hits =
        f.contains_many(std::span<const std::uint64_t>(probe), std::span<bool>(found.get(), probe.size()));
    std::size_t expected = 0, false_positives = 0, present = 0;
    for (std::size_t i = 0; i < probe.size(); ++i) {
      const bool single = f.contains(probe[i]);
      REQUIRE(found[i] == single);
      expected += single;
      false_positives += single && i % 4 != 0;
      present += single && i % 4 == 0;
    }
    CHECK(hits == expected);
    CHECK(false_positives > 300);  // both answers occur for absent keys (about 0.3-1 % of 150 000)
    CHECK(present > 10000);        // and keys found, in every slice but a recycled one
    // Short batches around the group size, each from a different offset.
    constexpr std::size_t g = detail::kLookupGroup;
    std::size_t offset = 0;
    for (const std::size_t length : {std::size_t{1}, g - 1, g, g + 1, 2 * g - 1, 2 * g + 1}) {
      INFO("batch of " << length);
      const std::span<const std::uint64_t> batch(probe.data() + offset, length);
      for (std::size_t i = 0; i < length; ++i) found[i] = !f.contains(batch[i]);
      std::size_t batch_expected = 0, batch_mismatches = 0;
      const std::size_t batch_hits = f.contains_many(batch, std::span<bool>(found.get(), length));
      for (std::size_t i = 0; i < length; ++i) {
        batch_expected += f.contains(batch[i]);
        batch_mismatches += found[i] != f.contains(batch[i]);
      }
      CHECK(batch_mismatches == 0);
      CHECK(batch_hits == batch_expected);
      offset += length;
    }
  }
}

TEST_CASE("batch operations answer like single ones", "[filter][batch]") {
  ScalableBloomFilter single(small_options());
  ScalableBloomFilter batched(small_options());
  std::vector<std::uint64_t> keys;
  for (std::uint64_t i = 0; i < 20000; ++i) keys.push_back(present_key(i % 15000));
  std::unique_ptr<bool[]> inserted(new bool[keys.size()]);
  const std::size_t count = batched.insert_many(std::span<const std::uint64_t>(keys),
                                                std::span<bool>(inserted.get(), keys.size()));
  std::size_t expected = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const bool r = single.insert(keys[i]);
    expected += r;
    REQUIRE(inserted[i] == r);
  }
  CHECK(count == expected);
  CHECK(batched == single);

  std::vector<std::uint64_t> probe;
  for (std::uint64_t i = 0; i < 5000; ++i) probe.push_back(i % 2 ? present_key(i) : absent_key(i));
  std::unique_ptr<bool[]> found(new bool[probe.size()]);
  for (std::size_t i = 0; i < probe.size(); ++i) found[i] = !single.contains(probe[i]);  // must be overwritten
  const std::size_t hits = batched.contains_many(std::span<const std::uint64_t>(probe),
                                                 std::span<bool>(found.get(), probe.size()));
  std::size_t expected_hits = 0;
  for (std::size_t i = 0; i < probe.size(); ++i) {
    REQUIRE(found[i] == single.contains(probe[i]));
    expected_hits += found[i];
  }
  CHECK(hits == expected_hits);

  std::vector<std::string> strings{"a", "bb", "ccc"};
  std::vector<std::string_view> views(strings.begin(), strings.end());
  CHECK(batched.insert_many(std::span<const std::string_view>(views)) == 3);
  bool out[3];
  CHECK(batched.contains_many(std::span<const std::string_view>(views), std::span<bool>(out)) == 3);

  bool wrong[2];
  CHECK_THROWS_AS(batched.contains_many(std::span<const std::string_view>(views), std::span<bool>(wrong)),
                  std::invalid_argument);
}

TEST_CASE("16-byte array keys are their bytes, batched or not, in both layouts", "[filter][batch]") {
  // Batches of std::array<char, 16> take the 8-key AVX-512 hash (where the CPU has it);
  // the filter must answer exactly as for the same bytes given one by one as strings.
  std::mt19937_64 rng(16);
  std::vector<std::array<char, 16>> ids(30000);
  for (auto& id : ids) {
    for (auto& c : id) c = static_cast<char>(static_cast<unsigned char>(rng()));
  }
  const auto as_string = [](const std::array<char, 16>& id) { return std::string_view(id.data(), id.size()); };
  for (const Layout layout : {Layout::classic, Layout::blocked}) {
    Options o = small_options();
    o.layout = layout;
    ScalableBloomFilter batched(o), single(o);
    const std::span<const std::array<char, 16>> written(ids.data(), 20000);  // grows to several slices
    std::unique_ptr<bool[]> inserted(new bool[written.size()]);
    batched.insert_many(written, std::span<bool>(inserted.get(), written.size()));
    for (std::size_t i = 0; i < written.size(); ++i) REQUIRE(inserted[i] == single.insert(as_string(written[i])));
    CHECK(batched.slice_count() > 1);
    CHECK(batched == single);
    std::unique_ptr<bool[]> found(new bool[ids.size()]);
    for (std::size_t i = 0; i < ids.size(); ++i) found[i] = !single.contains(as_string(ids[i]));  // must be overwritten
    batched.contains_many(std::span<const std::array<char, 16>>(ids), std::span<bool>(found.get(), ids.size()));
    std::size_t false_negatives = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      REQUIRE(found[i] == single.contains(as_string(ids[i])));
      REQUIRE(found[i] == batched.contains(ids[i]));
      false_negatives += i < written.size() && !found[i];
    }
    CHECK(false_negatives == 0);
  }
}

TEST_CASE("an empty batch answers nothing and writes nothing", "[filter][batch]") {
  for (const Layout layout : {Layout::classic, Layout::blocked}) {
    Options o = small_options();
    o.layout = layout;
    ScalableBloomFilter f(o);
    f.insert(std::uint64_t{1});
    CHECK(f.contains_many(std::span<const std::uint64_t>(), std::span<bool>()) == 0);
    CHECK(f.insert_many(std::span<const std::uint64_t>()) == 0);
    CHECK(f.size() == 1);
  }
}

TEST_CASE("growth opens a slice exactly when half the bits are set", "[filter][growth]") {
  // Or at full_cells, a little before half, where the pattern floor needs it (sizing.hpp):
  // 2 000 items at 0.1 % in a window of 8, slices of 250 items at 1.25e-4.
  // Triple-hashed slices also stop short of half where the insert that fills them needs
  // room: 100 items at 0.1 % in a window of 4, 25-item slices at 2.5e-4 (k 12).
  Options o = small_options();
  o.capacity = 1000;
  const int kind = GENERATE(0, 1, 2);  // half full; floored double hashing; triple hashing
  const bool floored = kind != 0;
  if (kind == 1) {
    o.capacity = 2000;
    o.false_positive_rate = 0.001;
    o.max_slices = 8;
  } else if (kind == 2) {
    o.capacity = 100;
    o.false_positive_rate = 0.001;
    o.max_slices = 4;
  }
  const std::uint64_t full = full_cells(slice_shape(o, 0));
  const std::uint64_t half = slice_shape(o, 0).bits / 2;
  INFO("kind " << kind << ": full at " << full << " cells, half " << half);
  CHECK((full < half) == floored);
  CHECK((slice_shape(o, 0).probing == Probing::triple_hashing) == (kind == 2));
  ScalableBloomFilter f(o);
  std::uint64_t i = 0;
  std::uint64_t set_before_last = 0;
  std::uint64_t set_at_open = 0;
  while (f.slice_count() == 1) {
    set_before_last = set_at_open;
    set_at_open = f.slices().front().cells().set_count();
    f.insert(present_key(i++));
  }
  // The insert that opened slice 1 came when slice 0 had reached its full point ...
  CHECK(set_at_open >= full);
  // ... and the insert before it still found slice 0 below it.
  CHECK(set_before_last < full);
  // Slice 0 never got another bit once it was full.
  CHECK(f.slices().front().cells().set_count() == set_at_open);
  // It took at least its capacity first.
  CHECK(f.slices().front().items() >= slice_shape(o, 0).capacity);
  // The set-bit count kept on insert equals a recount.
  for (const auto& s : f.slices()) {
    std::uint64_t recount = 0;
    for (auto w : s.cells().words()) recount += static_cast<std::uint64_t>(std::popcount(w));
    CHECK(recount == s.cells().set_count());
  }
}

TEST_CASE("set bits are counted as std::popcount counts them", "[filter][cells]") {
  // detail::popcount64 and count_bits run the POPCNT instruction where the CPU has it.
  std::mt19937_64 rng(0x9c0c);
  std::vector<std::uint64_t> words = {0, 1, ~std::uint64_t{0}, std::uint64_t{1} << 63, 0x5555555555555555};
  for (int i = 0; i < 1000; ++i) words.push_back(rng() & rng());  // sparse
  for (int i = 0; i < 1000; ++i) words.push_back(rng() | rng());  // dense
  std::uint64_t expected_total = 0;
  for (const std::uint64_t w : words) {
    const auto expected = static_cast<unsigned>(std::popcount(w));
    REQUIRE(detail::popcount64(w) == expected);
    expected_total += expected;
  }
  CHECK(detail::count_bits(words) == expected_total);
}

TEST_CASE("every slice takes at least its capacity before it fills", "[filter][growth]") {
  for (double p : {0.1, 0.01, 0.001}) {
    for (std::uint32_t w : {0u, 8u}) {
     for (Layout layout : {Layout::classic, Layout::blocked}) {
      Options o;
      o.layout = layout;
      o.capacity = 4000;
      o.false_positive_rate = p;
      o.max_slices = w;
      ScalableBloomFilter f(o);
      std::uint64_t i = 0;
      while (f.slice_count() < 6 && f.rotations() == 0) f.insert(present_key(i++, 7));
      for (std::size_t s = 0; s + 1 < f.slice_count(); ++s) {
        INFO("p = " << p << ", window " << w << ", slice " << s << ", layout "
                    << static_cast<int>(layout));
        CHECK(f.slices()[s].items() >= f.slices()[s].shape().capacity);
      }
     }
    }
  }
}

TEST_CASE("statistics, copy, move, clear and equality", "[filter]") {
  ScalableBloomFilter f(small_options());
  for (std::uint64_t i = 0; i < 10000; ++i) f.insert(present_key(i));
  const FilterStats stats = f.stats();
  CHECK(stats.size == f.size());
  CHECK(stats.slices.size() == f.slice_count());
  std::uint64_t bytes = 0;
  for (const auto& s : stats.slices) {
    CHECK(s.fill_ratio == Approx(static_cast<double>(s.set_cells) / s.bits));
    CHECK(s.fill_ratio <= 0.5 + 64.0 / s.bits);
    CHECK(s.estimated_false_positive_rate <= s.false_positive_rate);
    CHECK(s.memory_bytes >= s.bits / 8);
    bytes += s.memory_bytes;
  }
  CHECK(f.memory_bytes() >= bytes);
  CHECK(f.memory_bytes() < bytes + 8192);
  CHECK(f.estimated_false_positive_rate() > 0);
  CHECK(f.estimated_false_positive_rate() < 0.01);

  ScalableBloomFilter copy = f;
  CHECK(copy == f);
  copy.insert(absent_key(1));
  CHECK_FALSE(copy == f);
  ScalableBloomFilter moved = std::move(copy);
  CHECK(moved.contains(absent_key(1)));

  f.clear();
  CHECK(f.size() == 0);
  CHECK(f.slice_count() == 1);
  CHECK(f == ScalableBloomFilter(small_options()));
  CHECK_FALSE(f.contains(present_key(1)));
}

TEST_CASE("seeds select independent hash families", "[filter][hashing]") {
  Options a = small_options();
  Options b = a;
  b.seed = 12345;
  ScalableBloomFilter fa(a), fb(b);
  for (std::uint64_t i = 0; i < 1000; ++i) {
    fa.insert(present_key(i));
    fb.insert(present_key(i));
  }
  // Same keys, same shape: the set cells of the two first slices overlap as two
  // independent random sets would, about m * fill_a * fill_b (with one hash, entirely).
  const auto& sa = fa.slices().front();
  const auto& sb = fb.slices().front();
  REQUIRE(sa.shape() == sb.shape());
  std::uint64_t both = 0;
  for (std::size_t w = 0; w < sa.cells().words().size(); ++w) {
    both += static_cast<std::uint64_t>(std::popcount(sa.cells().words()[w] & sb.cells().words()[w]));
  }
  const double q = sa.fill_ratio() * sb.fill_ratio();
  INFO(both << " cells set in both, " << sa.cells().set_count() << " and " << sb.cells().set_count() << " set");
  CHECK(static_cast<double>(both) <= segbloom::test::binomial_upper(sa.shape().bits, q));
  CHECK(static_cast<double>(both) >= segbloom::test::binomial_lower(sa.shape().bits, q));
  for (std::uint64_t i = 0; i < 1000; ++i) CHECK(fb.contains(present_key(i)));
}

TEST_CASE("a batch group's flags are counted and combined 8 at a time as a loop per key would",
          "[filter][batch]") {
  // detail/batch.hpp: bool flags handled as the bytes of 64-bit words. Random patterns,
  // every length 0-40 for count_true (whole words and tails), and all of a 16-key group.
  std::mt19937_64 rng(40);
  for (int round = 0; round < 200; ++round) {
    bool a[detail::kBatchGroup], b[detail::kBatchGroup], out[detail::kBatchGroup];
    bool long_flags[40];
    for (bool& f : a) f = rng() % 2;
    for (bool& f : b) f = rng() % 3 == 0;
    for (bool& f : long_flags) f = rng() % 2;
    const std::size_t n = round % 41;
    std::size_t expected = 0;
    for (std::size_t i = 0; i < n; ++i) expected += long_flags[i];
    REQUIRE(detail::count_true(long_flags, n) == expected);

    std::size_t expected_and_not = 0;
    for (std::size_t i = 0; i < detail::kBatchGroup; ++i) expected_and_not += a[i] && !b[i];
    REQUIRE(detail::count_true_and_not(a, b) == expected_and_not);

    const bool always = round % 2 == 1;
    detail::set_not_or(b, always, out);
    for (std::size_t i = 0; i < detail::kBatchGroup; ++i) REQUIRE(out[i] == (!b[i] || always));
  }
  bool all[16];
  std::fill(std::begin(all), std::end(all), true);
  CHECK(detail::count_true(all, 16) == 16);
  CHECK(detail::count_true(all, 9) == 9);
}

TEST_CASE("insert_many without an output span counts what it reports with one", "[filter][batch]") {
  // Without a span, a group's count of new keys is taken 8 keys at a time
  // (detail::count_true_and_not); with one, key by key. Both must count what single inserts
  // return, in both layouts, growing (older slices' keys are not new) and window mode
  // (their keys are written again, and still not new), with keys repeated in and across
  // groups, and a last group of 7 keys (past them, the group's flags must stay false).
  for (const Layout layout : {Layout::classic, Layout::blocked}) {
    for (const std::uint32_t window : {0u, 3u}) {
      Options o;
      o.capacity = 2000;
      o.false_positive_rate = 0.01;
      o.layout = layout;
      o.max_slices = window;
      ScalableBloomFilter single(o), with_span(o), without(o);
      std::vector<std::uint64_t> keys;
      for (std::uint64_t i = 0; i < 12007; ++i) keys.push_back(i % 4 == 3 ? keys[i * 7 / 10] : present_key(i, 41));
      std::size_t expected = 0;
      for (const std::uint64_t k : keys) expected += single.insert(k);
      std::unique_ptr<bool[]> inserted(new bool[keys.size()]);
      const std::size_t counted_with = with_span.insert_many(std::span<const std::uint64_t>(keys),
                                                             std::span<bool>(inserted.get(), keys.size()));
      const std::size_t counted_without = without.insert_many(std::span<const std::uint64_t>(keys));
      INFO("layout " << static_cast<int>(layout) << ", window " << window);
      CHECK(single.slice_count() >= 3);
      CHECK(expected < keys.size() * 9 / 10);  // the repeats were not new
      CHECK(counted_with == expected);
      CHECK(counted_without == expected);
      CHECK(without == single);
      CHECK(with_span == single);
    }
  }
}

TEST_CASE("batched inserts close slices where single ones do, also a little before half full",
          "[filter][batch][floor]") {
  // insert_many writes groups at once only while the newest slice has room for all of them
  // before its full point (Slice::has_room_for), which small classic slices set a little
  // below half (sizing.hpp, full_cells): 250-item slices at 1.25e-4, and 3 000-item slices
  // at 10^-6, whose full point (0.488 of 87 000 bits) lies below where a group of 16
  // would stop by the half-full rule (bits / 2 - 15 k). Plain and counting filters.
  // And triple-hashed slices (the batch marks them key by key): 25-item slices at 2.5e-4.
  const int kind = GENERATE(0, 1, 2);
  const bool far_below_half = kind == 1;
  Options o;
  o.capacity = far_below_half ? 6000 : 2000;
  o.false_positive_rate = far_below_half ? 2e-6 : 0.001;
  o.max_slices = far_below_half ? 2 : 8;
  if (kind == 2) {
    o.capacity = 100;
    o.max_slices = 4;
  }
  const SliceShape shape = slice_shape(o, 0);
  INFO("kind " << kind << ": full at " << full_cells(shape) << " of " << shape.bits << " bits, k " << shape.probes);
  REQUIRE(full_cells(shape) < shape.bits / 2);
  CHECK((shape.probing == Probing::triple_hashing) == (kind == 2));
  if (kind != 2) CHECK((full_cells(shape) + 15 * shape.probes < shape.bits / 2) == far_below_half);
  std::vector<std::uint64_t> keys(30'000);
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = present_key(i, 77);
  ScalableBloomFilter batched(o), single(o);
  CountingBloomFilter counting_batched(o), counting_single(o);
  batched.insert_many(std::span<const std::uint64_t>(keys));
  counting_batched.insert_many(std::span<const std::uint64_t>(keys));
  for (const std::uint64_t k : keys) {
    single.insert(k);
    counting_single.insert(k);
  }
  CHECK(batched.rotations() > 2);
  CHECK(batched == single);
  CHECK(counting_batched == counting_single);
  for (const auto& slice : batched.slices()) {
    CHECK(slice.cells().set_count() < full_cells(slice.shape()) + slice.shape().probes);
  }
}
