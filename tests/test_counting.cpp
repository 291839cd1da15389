// The counting filter: packed counters, counting insert and remove, saturation,
// false-positive rate, conversion to the plain filter.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "segbloom/segbloom.hpp"
#include "support/rate_checks.hpp"
#include "support/stats.hpp"

using namespace segbloom;
using segbloom::test::absent_key;
using segbloom::test::binomial_lower;
using segbloom::test::binomial_upper;
using segbloom::test::present_key;

namespace {

// A reference to the counting filter's base must not offer the base's test-and-set insert,
// which would count a key in a second slice and break exact removal.
template <class F>
concept InsertsThrough = requires(F& f, std::uint64_t key, std::span<const std::uint64_t> keys) {
  f.insert(key);
  f.insert_many(keys);
};
static_assert(!InsertsThrough<SegmentedFilter<CounterCells, DoubleHashingScheme>>);
static_assert(!InsertsThrough<SegmentedFilter<BitCells, DoubleHashingScheme>>);
static_assert(InsertsThrough<CountingBloomFilter>);
static_assert(InsertsThrough<ScalableBloomFilter>);
static_assert(InsertsThrough<LevelDbCompatibleFilter>);

}  // namespace

namespace {

Options counting_options(std::uint64_t capacity, double p, std::uint32_t max_slices = 0) {
  Options o;
  o.capacity = capacity;
  o.false_positive_rate = p;
  o.max_slices = max_slices;
  return o;
}

// The cells a key's k probes visit in one slice, in probe order (repeats kept).
std::vector<std::uint64_t> probe_cells(const CountingBloomFilter& f, std::size_t slice,
                                       std::uint64_t key) {
  std::vector<std::uint64_t> cells;
  f.slices()[slice].probe(f.digest(key), [&](std::uint64_t c) {
    cells.push_back(c);
    return true;
  });
  return cells;
}

// Every slice is all zero, with no items, as a freshly opened slice of its shape.
bool all_slices_fresh(const CountingBloomFilter& f) {
  for (const auto& s : f.slices()) {
    if (!(s == CountingBloomFilter::slice_type(s.shape()))) return false;
  }
  return true;
}

// The counts kept on every mark/unmark equal a recount of the stored words.
bool counts_match_recount(const CountingBloomFilter& f) {
  for (const auto& s : f.slices()) {
    if (!(CounterCells::from_words(s.cells().words()) == s.cells())) return false;
  }
  return true;
}

// Random interleaving of counting inserts (new keys and keys already in) and removes,
// checked against an exact model. Each live key records the generation of the slice
// that holds its count (slice j has generation rotations() + j): exact when its insert
// opened it in the newest slice, and a lower bound (the oldest slice then alive) when
// its first insert found it reported already. A key is guaranteed while its count is
// positive and that generation is still in the filter; those are the only keys removed.
struct Interleaving {
  struct Entry {
    std::uint32_t count = 0;
    std::uint64_t generation = 0;
    std::size_t index = 0;  // in `live`
  };

  CountingBloomFilter& f;
  std::mt19937_64 rng;
  std::unordered_map<std::uint64_t, Entry> entries;
  std::vector<std::uint64_t> live;  // keys with an entry
  std::uint64_t next_key = 0;
  std::uint64_t salt;
  std::uint64_t wrong_insert = 0;   // a guaranteed key was reported new
  std::uint64_t wrong_remove = 0;   // a guaranteed key's remove returned false
  std::uint64_t missing = 0;        // a guaranteed key not found
  std::uint64_t undercount = 0;     // count_estimate below min(count, 15)
  std::uint64_t removes = 0;
  std::uint64_t reinserts = 0;
  std::uint64_t if_absent = 0;      // insert_if_absent calls that counted a key
  ManualClock* clock = nullptr;     // timed filters: moved on 1 s every `tick` operations
  std::uint64_t tick = 0;
  bool with_batches = false;        // 3 % of the operations are insert_many of 8 keys
  std::uint64_t batches = 0;

  Interleaving(CountingBloomFilter& filter, std::uint64_t seed)
      : f(filter), rng(seed), salt(seed) {}

  bool guaranteed(const Entry& e) const { return e.generation >= f.rotations(); }

  void forget(std::uint64_t key) {
    const std::size_t i = entries.at(key).index;
    live[i] = live.back();
    entries.at(live[i]).index = i;
    live.pop_back();
    entries.erase(key);
  }

  // The key's entry while the filter must still hold it; an entry whose holder may have
  // gone (recycled or expired) is forgotten, and null returned.
  Entry* guaranteed_entry(std::uint64_t key) {
    const auto it = entries.find(key);
    if (it == entries.end()) return nullptr;
    if (guaranteed(it->second)) return &it->second;
    forget(key);
    return nullptr;
  }

  void insert(std::uint64_t key) {
    Entry* const entry = guaranteed_entry(key);
    const bool opened = f.insert(key);
    if (entry != nullptr) {
      wrong_insert += opened;
      ++entry->count;
      ++reinserts;
      return;
    }
    add(key, opened ? f.rotations() + f.slice_count() - 1 : f.rotations());
  }

  // A key counted once, in the slice opened as number `generation` or a later one.
  void add(std::uint64_t key, std::uint64_t generation) {
    Entry e;
    e.count = 1;
    e.generation = generation;
    e.index = live.size();
    live.push_back(key);
    entries.emplace(key, e);
  }

  // insert_many of 8 keys, each new or inserted before, judged key by key in order (the
  // batch gives one insert's result per key). Slices may open during the call, so its new
  // keys get the generations of before it: lower bounds, guaranteed for less time.
  void insert_batch() {
    std::array<std::uint64_t, 8> keys;
    for (auto& k : keys) k = (rng() & 1) != 0 || live.empty() ? present_key(next_key++, salt) : live[rng() % live.size()];
    std::array<bool, 8> opened{};
    const std::uint64_t rotations = f.rotations(), newest = rotations + f.slice_count() - 1;
    f.insert_many(std::span<const std::uint64_t>(keys), std::span<bool>(opened));
    ++batches;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (Entry* const entry = guaranteed_entry(keys[i])) {
        wrong_insert += opened[i];
        ++entry->count;
        continue;
      }
      add(keys[i], opened[i] ? newest : rotations);
    }
  }

  // The test-and-set: a key present (guaranteed or falsely reported) keeps its count.
  void insert_if_absent(std::uint64_t key) {
    const Entry* const entry = guaranteed_entry(key);
    const bool opened = f.insert_if_absent(key);
    if (entry != nullptr) {
      wrong_insert += opened;
      return;
    }
    if (!opened) return;  // falsely reported: nothing counted
    ++if_absent;
    add(key, f.rotations() + f.slice_count() - 1);
  }

  void remove_random() {
    if (live.empty()) return;
    const std::uint64_t key = live[rng() % live.size()];
    Entry& e = entries.at(key);
    if (!guaranteed(e)) {  // its slice was recycled: forgotten, not ours to remove
      forget(key);
      return;
    }
    wrong_remove += !f.remove(key);
    ++removes;
    if (--e.count == 0) forget(key);
  }

  void run(std::uint64_t operations) {
    for (std::uint64_t op = 0; op < operations; ++op) {
      if (clock != nullptr && op % tick == tick - 1) {
        // Expired slices dropped now, as the next write would: the guarantees above are
        // judged by the rotations before each call.
        clock->advance(std::chrono::seconds(1));
        f.expire();
      }
      const std::uint64_t r = rng() % 100;
      if (r < 35 || live.empty()) {
        insert(present_key(next_key++, salt));
      } else if (r < 39) {
        insert_if_absent(r < 37 ? present_key(next_key++, salt) : live[rng() % live.size()]);
      } else if (r < 55) {
        insert(live[rng() % live.size()]);
      } else if (with_batches && r < 58) {
        insert_batch();
      } else {
        remove_random();
      }
      if (op % 100'000 == 99'999) verify();
    }
    verify();
  }

  void verify() {
    for (const auto& [key, e] : entries) {
      if (!guaranteed(e)) continue;
      missing += !f.contains(key);
      undercount += f.count_estimate(key) < std::min<std::uint32_t>(e.count, 15);
    }
  }

  std::uint64_t live_count() const {
    std::uint64_t total = 0;
    for (const auto& [key, e] : entries) total += e.count;
    return total;
  }
};

}  // namespace

TEST_CASE("the README example of the counting filter works", "[counting]") {
  Options opts;
  opts.capacity = 2000;
  opts.false_positive_rate = 0.001;
  CountingBloomFilter shown(opts);
  CHECK(shown.insert(std::uint64_t{4711}));
  CHECK(shown.remove(std::uint64_t{4711}));
  CHECK_FALSE(shown.contains(std::uint64_t{4711}));
  CHECK(shown.insert("video:abc"));
  CHECK_FALSE(shown.insert("video:abc"));
  CHECK(shown.remove("video:abc"));
  CHECK(shown.contains("video:abc"));
  CHECK(shown.count_estimate("video:abc") == 1);
  const ScalableBloomFilter serving = shown.to_plain();
  CHECK(serving.contains("video:abc"));
  CHECK_FALSE(serving.contains(std::uint64_t{4711}));
}

// --- CounterCells -------------------------------------------------------------------

TEST_CASE("counter cells: layout, mark, unmark, saturation and exact counts", "[counting]") {
  CounterCells c(128);
  CHECK(c.size() == 128);
  CHECK(c.memory_bytes() == 64);  // half a byte per counter
  CHECK(c.words().size() == 8);
  CHECK_THROWS_AS(CounterCells(100), std::invalid_argument);

  // Counter i is bits 4*(i%16) .. +3 of word i/16.
  CHECK(c.mark(0));
  CHECK_FALSE(c.mark(0));
  CHECK(c.mark(15));
  CHECK(c.mark(16));
  CHECK(c.mark(37));
  CHECK(c.words()[0] == 0x1000000000000002ull);
  CHECK(c.words()[1] == 0x0000000000000001ull);
  CHECK(c.words()[2] == 0x0000000000100000ull);
  CHECK(c.value(0) == 2);
  CHECK(c.value(37) == 1);
  CHECK(c.value(36) == 0);
  CHECK(c.set_count() == 4);
  CHECK(c.test(15));
  CHECK_FALSE(c.test(14));

  CHECK_FALSE(c.unmark(0));  // 2 -> 1
  CHECK(c.unmark(0));        // 1 -> 0
  CHECK_FALSE(c.unmark(0));  // stays 0
  CHECK(c.value(0) == 0);
  CHECK(c.set_count() == 3);
  CHECK(c.value(1) == 0);  // neighbours untouched

  // Saturation at 15: no carry into counter 16, never decremented again.
  for (int i = 0; i < 14; ++i) c.mark(15);
  CHECK(c.value(15) == 15);
  CHECK(c.saturated_count() == 1);
  CHECK_FALSE(c.mark(15));
  CHECK(c.value(15) == 15);
  CHECK(c.value(16) == 1);
  CHECK(c.value(14) == 0);
  CHECK_FALSE(c.unmark(15));
  CHECK(c.value(15) == 15);
  CHECK(c.saturated_count() == 1);
  CHECK(c.set_count() == 3);

  // from_words recounts both counts.
  const CounterCells copy = CounterCells::from_words(c.words());
  CHECK(copy == c);
  CHECK(copy.set_count() == 3);
  CHECK(copy.saturated_count() == 1);
  CHECK(CounterCells::from_words(std::vector<std::uint64_t>{~0ull, 0x0F0F}).saturated_count() == 18);

  c.clear();
  CHECK(c.set_count() == 0);
  CHECK(c.saturated_count() == 0);
  CHECK(c == CounterCells(128));
}

TEST_CASE("counter cells: random marks and unmarks keep the counts exact", "[counting]") {
  CounterCells c(4096);
  std::vector<std::uint32_t> model(4096, 0);
  std::mt19937_64 rng(3);
  std::uint64_t wrong = 0;
  for (int op = 0; op < 200'000; ++op) {
    const std::uint64_t i = rng() % 4096 % (op < 100'000 ? 4096 : 64);  // later: hot cells
    const std::uint32_t v = model[i];
    if (rng() % 3 != 0) {
      wrong += c.mark(i) != (v == 0);
      if (v < 15) ++model[i];
    } else {
      wrong += c.unmark(i) != (v == 1);
      if (v > 0 && v < 15) --model[i];
    }
  }
  std::uint64_t set = 0;
  std::uint64_t saturated = 0;
  for (std::uint64_t i = 0; i < 4096; ++i) {
    wrong += c.value(i) != model[i];
    set += model[i] != 0;
    saturated += model[i] == 15;
  }
  CHECK(wrong == 0);
  CHECK(saturated > 0);
  CHECK(c.set_count() == set);
  CHECK(c.saturated_count() == saturated);
  CHECK(CounterCells::from_words(c.words()) == c);
  // nonzero_mask flags exactly the non-zero counters of a word.
  for (std::size_t w = 0; w < c.words().size(); ++w) {
    std::uint32_t expected = 0;
    for (unsigned j = 0; j < 16; ++j) expected |= std::uint32_t{model[w * 16 + j] != 0} << j;
    wrong += CounterCells::nonzero_mask(c.words()[w]) != expected;
  }
  CHECK(wrong == 0);
}

// --- Counting semantics ---------------------------------------------------------------

TEST_CASE("inserting twice needs two removes; insert_if_absent is test-and-set", "[counting]") {
  CountingBloomFilter f(counting_options(2000, 0.001));
  const std::uint64_t key = 4711;
  CHECK(f.insert(key));         // new
  CHECK_FALSE(f.insert(key));   // counted again
  CHECK(f.count_estimate(key) == 2);
  CHECK(f.size() == 2);
  CHECK(f.remove(key));
  CHECK(f.contains(key));
  CHECK(f.count_estimate(key) == 1);
  CHECK(f.remove(key));
  CHECK_FALSE(f.contains(key));
  CHECK(f.count_estimate(key) == 0);
  CHECK_FALSE(f.remove(key));
  CHECK(f == CountingBloomFilter(counting_options(2000, 0.001)));

  CHECK(f.insert_if_absent(std::string("video:abc")));
  CHECK_FALSE(f.insert_if_absent("video:abc"));
  CHECK(f.count_estimate(std::string_view("video:abc")) == 1);
  CHECK(f.remove("video:abc"));
  CHECK_FALSE(f.contains("video:abc"));

  std::vector<std::uint64_t> keys{1, 2, 1, 3};
  bool out[4];
  CHECK(f.insert_many(std::span<const std::uint64_t>(keys), std::span<bool>(out)) == 3);
  CHECK(out[0]);
  CHECK_FALSE(out[2]);
  CHECK(f.count_estimate(std::uint64_t{1}) == 2);
  bool wrong_size[3];
  CHECK_THROWS_AS(f.insert_many(std::span<const std::uint64_t>(keys), std::span<bool>(wrong_size)),
                  std::invalid_argument);
}

TEST_CASE("no false negatives: a million random inserts and removes, growing mode",
          "[counting][no-false-negatives]") {
  CountingBloomFilter f(counting_options(1000, 0.01));
  Interleaving run(f, 101);
  run.run(1'000'000);
  INFO("slices " << f.slice_count() << ", live keys " << run.live.size() << ", removes "
                 << run.removes << ", reinserts " << run.reinserts);
  CHECK(f.slice_count() >= 6);
  CHECK(run.removes > 300'000);
  CHECK(run.wrong_insert == 0);
  CHECK(run.wrong_remove == 0);
  CHECK(run.missing == 0);
  CHECK(run.undercount == 0);
  CHECK(f.size() == run.live_count());  // growing mode forgets nothing
  CHECK(counts_match_recount(f));
}

TEST_CASE("no false negatives: random inserts and removes in time windows",
          "[counting][no-false-negatives][lifetime]") {
  // Slices close by fill or after a lifetime (600 s: 30 000 operations) and expire a
  // lifetime later; a key is guaranteed until the slice holding its count expires.
  using namespace std::chrono_literals;
  for (std::uint32_t w : {0u, 4u}) {
    ManualClock clock;
    Options o = counting_options(8000, 0.01, w);
    o.slice_lifetime = 600s;
    CountingBloomFilter f(o, clock);
    Interleaving run(f, 300 + w);
    run.clock = &clock;
    run.tick = 50;
    run.with_batches = true;
    run.run(600'000);
    INFO("window " << w << ", rotations " << f.rotations() << ", slices " << f.slice_count()
                   << ", live keys " << run.live.size() << ", removes " << run.removes);
    CHECK(f.rotations() >= 15);
    CHECK(run.removes > 50'000);
    CHECK(run.if_absent > 5'000);
    CHECK(run.batches > 15'000);
    CHECK(run.wrong_insert == 0);
    CHECK(run.wrong_remove == 0);
    CHECK(run.missing == 0);
    CHECK(run.undercount == 0);
    CHECK(counts_match_recount(f));
  }
}

TEST_CASE("no false negatives: a million random inserts and removes, window mode",
          "[counting][no-false-negatives][window]") {
  for (std::uint32_t w : {2u, 4u}) {
    CountingBloomFilter f(counting_options(8000, 0.01, w));
    Interleaving run(f, 200 + w);
    run.run(1'000'000);
    INFO("window " << w << ", rotations " << f.rotations() << ", live keys " << run.live.size()
                   << ", removes " << run.removes);
    CHECK(f.rotations() >= 50);
    CHECK(f.slice_count() == w);
    CHECK(run.removes > 200'000);
    CHECK(run.wrong_insert == 0);
    CHECK(run.wrong_remove == 0);
    CHECK(run.missing == 0);
    CHECK(run.undercount == 0);
    CHECK(counts_match_recount(f));
  }
}

TEST_CASE("window mode keeps every opened key through the next capacity*(W-1)/W opened keys",
          "[counting][window]") {
  Options o = counting_options(3000, 0.01, 3);
  CountingBloomFilter f(o);
  const std::uint64_t guaranteed = o.capacity * (o.max_slices - 1) / o.max_slices;
  std::vector<std::uint64_t> opened;
  std::uint64_t missing = 0;
  for (std::uint64_t i = 0; i < 60'000; ++i) {
    const std::uint64_t key = present_key(i, 9);
    if (f.insert(key)) opened.push_back(key);
    if (i % 3 == 0) f.insert(key);  // a second count stays in the same slice
    if (i % 997 == 0) {
      const std::size_t from = opened.size() > guaranteed ? opened.size() - guaranteed : 0;
      for (std::size_t j = from; j < opened.size(); ++j) missing += !f.contains(opened[j]);
    }
  }
  CHECK(missing == 0);
  CHECK(f.rotations() >= 15);
}

TEST_CASE("window mode: a key's further inserts count in the slice that holds it",
          "[counting][window]") {
  CountingBloomFilter f(counting_options(2000, 0.01, 2));
  const std::uint64_t key = absent_key(1);
  REQUIRE(f.insert(key));
  const std::vector<std::uint64_t> cells = probe_cells(f, 0, key);
  std::uint64_t i = 0;
  while (f.slice_count() < 2) f.insert(present_key(i++, 5));
  REQUIRE(f.rotations() == 0);
  // The key is in the older slice: a new insert counts there, not in the newest.
  CHECK_FALSE(f.insert(key));
  std::uint32_t least = 15;
  for (auto c : cells) least = std::min(least, f.slices()[0].cells().value(c));
  CHECK(least >= 2);
  CHECK(f.count_estimate(key) >= 2);
  // Both counts go with that slice when it is recycled; removing then is not ours to do.
  while (f.rotations() == 0) f.insert(present_key(i++, 5));
  for (auto c : cells) CHECK(f.slices().back().cells().value(c) <= 1);  // recycled slice
}

TEST_CASE("insert then remove of the same keys returns every counter to zero",
          "[counting][undo]") {
  SECTION("one slice: the filter equals a fresh one") {
    const Options o = counting_options(5000, 0.01);
    CountingBloomFilter f(o);
    std::vector<std::uint64_t> keys;
    for (std::uint64_t i = 0; i < 3000; ++i) {
      for (std::uint64_t m = 0; m <= i % 2; ++m) keys.push_back(present_key(i, 1));
    }
    std::mt19937_64 rng(5);
    std::shuffle(keys.begin(), keys.end(), rng);
    for (auto k : keys) f.insert(k);
    REQUIRE(f.slice_count() == 1);
    REQUIRE(f.saturated_counters() == 0);
    CHECK(f.size() == keys.size());
    std::shuffle(keys.begin(), keys.end(), rng);
    std::uint64_t failed = 0;
    for (auto k : keys) failed += !f.remove(k);
    CHECK(failed == 0);
    CHECK(f == CountingBloomFilter(o));
  }
  SECTION("many slices, growing and window mode: every slice is fresh again") {
    for (std::uint32_t w : {0u, 8u}) {
      CountingBloomFilter f(counting_options(w == 0 ? 1000 : 16'000, 0.01, w));
      std::vector<std::uint64_t> keys;
      for (std::uint64_t i = 0; i < 12'000; ++i) {
        for (std::uint64_t m = 0; m <= i % 2; ++m) keys.push_back(present_key(i, 2));
      }
      std::mt19937_64 rng(6 + w);
      std::shuffle(keys.begin(), keys.end(), rng);
      for (auto k : keys) f.insert(k);
      INFO("window " << w << ", slices " << f.slice_count());
      REQUIRE(f.slice_count() >= 4);
      REQUIRE(f.rotations() == 0);
      REQUIRE(f.saturated_counters() == 0);
      std::shuffle(keys.begin(), keys.end(), rng);
      std::uint64_t failed = 0;
      for (auto k : keys) failed += !f.remove(k);
      CHECK(failed == 0);
      CHECK(f.size() == 0);
      CHECK(all_slices_fresh(f));
    }
  }
}

TEST_CASE("saturation: a counter at 15 never goes down and other keys stay found",
          "[counting][saturation]") {
  CountingBloomFilter f(counting_options(2000, 0.01));
  for (std::uint64_t i = 0; i < 1000; ++i) f.insert(present_key(i, 3));
  const std::uint64_t hot = absent_key(7);
  const std::vector<std::uint64_t> cells = probe_cells(f, 0, hot);
  const std::set<std::uint64_t> distinct(cells.begin(), cells.end());
  CHECK(f.saturated_counters() == 0);
  for (int i = 0; i < 40; ++i) f.insert(hot);
  CHECK(f.saturated_counters() == distinct.size());
  CHECK(f.stats().saturated_counters == distinct.size());
  CHECK(f.count_estimate(hot) == 15);
  std::uint64_t below = 0;
  for (int i = 0; i < 60; ++i) {  // more removes than inserts: the counters stay put
    CHECK(f.remove(hot));
    for (auto c : cells) below += f.slices()[0].cells().value(c) < 15;
  }
  CHECK(below == 0);
  CHECK(f.contains(hot));  // documented: a key inserted 15+ times stays reported
  std::uint64_t missing = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) missing += !f.contains(present_key(i, 3));
  CHECK(missing == 0);
  // Removing every other key leaves the saturated counters and the hot key as they are.
  for (std::uint64_t i = 0; i < 1000; ++i) CHECK(f.remove(present_key(i, 3)));
  CHECK(f.saturated_counters() == distinct.size());
  CHECK(f.slices()[0].cells().set_count() == distinct.size());
  CHECK(f.contains(hot));
}

TEST_CASE("removing a key the filter reports absent returns false and changes nothing",
          "[counting][remove]") {
  CountingBloomFilter f(counting_options(2000, 0.05));
  for (std::uint64_t i = 0; i < 1500; ++i) f.insert(present_key(i, 4));
  const CountingBloomFilter before = f;
  std::uint64_t tried = 0;
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < 20'000; ++i) {
    const std::uint64_t key = absent_key(i, 4);
    if (f.contains(key)) continue;
    ++tried;
    wrong += f.remove(key);
    if (i % 100 == 0) wrong += !(f == before);
  }
  CHECK(tried > 19'000);
  CHECK(wrong == 0);
  CHECK(f == before);
}

TEST_CASE("removing a false positive decrements its counters like a member (documented)",
          "[counting][remove]") {
  // The filter cannot tell a false positive from a member: remove takes one count from
  // the key's k counters in the oldest slice reporting it. Keys that then lose a counter
  // to zero are the only ones that can disappear; inserting the key again undoes it.
  CountingBloomFilter f(counting_options(2000, 0.05));
  std::vector<std::uint64_t> members;
  for (std::uint64_t i = 0; i < 2000; ++i) {
    members.push_back(present_key(i, 8));
    f.insert(members.back());
  }
  REQUIRE(f.slice_count() == 1);
  std::uint64_t fp = 0;
  std::vector<std::uint64_t> cells;
  for (std::uint64_t i = 0;; ++i) {
    fp = absent_key(i, 8);
    if (!f.contains(fp)) continue;
    cells = probe_cells(f, 0, fp);
    if (std::set<std::uint64_t>(cells.begin(), cells.end()).size() == cells.size()) break;
  }
  const CountingBloomFilter before = f;
  CHECK(f.remove(fp));
  CHECK(f.size() == before.size() - 1);
  std::set<std::uint64_t> zeroed;
  for (auto c : cells) {
    const std::uint32_t was = before.slices()[0].cells().value(c);
    CHECK(f.slices()[0].cells().value(c) == was - 1);
    if (was == 1) zeroed.insert(c);
  }
  std::uint64_t lost = 0;
  std::uint64_t lost_elsewhere = 0;
  for (auto k : members) {
    if (f.contains(k)) continue;
    ++lost;
    bool shares = false;
    for (auto c : probe_cells(f, 0, k)) shares |= zeroed.count(c) != 0;
    lost_elsewhere += !shares;
  }
  INFO("members lost by removing a false positive: " << lost);
  CHECK(lost_elsewhere == 0);
  // Every insert counts in its k counters (a key found already too), so a counter at 1
  // counted one member: each zeroed counter loses at most that one.
  CHECK(lost <= zeroed.size());
  f.insert(fp);
  CHECK(f == before);
}

// --- Rates, statistics, conversion ------------------------------------------------------

namespace {

using segbloom::test::check_rate;
}  // namespace

TEST_CASE("false-positive rate: same bits as the plain filter, same binomial bounds",
          "[counting][false-positives]") {
  const Options o = counting_options(10'000, 0.01);
  CountingBloomFilter counting(o);
  ScalableBloomFilter plain(o);
  std::uint64_t inserted = 0;
  for (std::uint64_t load : {1u, 8u}) {
    while (inserted < o.capacity * load) {
      const std::uint64_t key = present_key(inserted++, 12);
      CHECK(counting.insert(key) == plain.insert(key));
    }
    INFO("load " << load << "x");
    // Distinct keys in growing mode: the non-zero counters are exactly the plain bits.
    const ScalableBloomFilter converted = counting.to_plain();
    REQUIRE(converted.slice_count() == plain.slice_count());
    for (std::size_t s = 0; s < plain.slice_count(); ++s) {
      CHECK(converted.slices()[s].cells() == plain.slices()[s].cells());
    }
    check_rate(counting, o.false_positive_rate, 40 + load);
  }
}

TEST_CASE("false-positive rate stays under target through removals, both modes",
          "[counting][false-positives]") {
  for (std::uint32_t w : {0u, 4u}) {
    CountingBloomFilter f(counting_options(20'000, 0.01, w));
    // 24 rounds: insert 10 000 keys, remove every other one that was opened (insert
    // returned true; in window mode those are guaranteed for the next 15 000 opened).
    // 12x capacity inserted, about 6x kept.
    std::uint64_t next = 0;
    std::uint64_t failed = 0;
    std::uint64_t removed = 0;
    for (int round = 0; round < 24; ++round) {
      std::vector<std::uint64_t> opened;
      for (std::uint64_t i = 0; i < 10'000; ++i) {
        const std::uint64_t key = present_key(next++, 14);
        if (f.insert(key)) opened.push_back(key);
      }
      for (std::size_t i = 0; i < opened.size(); i += 2) {
        failed += !f.remove(opened[i]);
        ++removed;
      }
    }
    CHECK(removed > 110'000);
    CHECK(failed == 0);
    INFO("window " << w);
    if (w != 0) CHECK(f.rotations() > 0);
    check_rate(f, 0.01, 60 + w);
  }
}

TEST_CASE("statistics count saturated counters and half a byte per counter",
          "[counting][stats]") {
  const Options o = counting_options(5000, 0.01);
  CountingBloomFilter f(o);
  for (std::uint64_t i = 0; i < 30'000; ++i) f.insert(present_key(i, 15));
  for (int i = 0; i < 20; ++i) f.insert(std::uint64_t{42});
  const CountingFilterStats stats = f.stats();
  CHECK(stats.size == f.size());
  CHECK(stats.slices.size() == f.slice_count());
  CHECK(stats.saturated_per_slice.size() == f.slice_count());
  CHECK(stats.saturated_counters == f.saturated_counters());
  CHECK(stats.saturated_counters > 0);
  std::uint64_t saturated = 0;
  std::uint64_t cell_bytes = 0;
  for (std::size_t i = 0; i < stats.slices.size(); ++i) {
    const SliceStats& s = stats.slices[i];
    CHECK(s.set_cells == f.slices()[i].cells().set_count());
    CHECK(s.memory_bytes >= s.bits / 2);  // 4 bits a counter ...
    CHECK(s.memory_bytes < s.bits / 2 + 64);  // ... up to one cache line of rounding
    CHECK(s.fill_ratio <= 0.5 + 64.0 / static_cast<double>(s.bits));
    saturated += stats.saturated_per_slice[i];
    cell_bytes += s.memory_bytes;
  }
  CHECK(saturated == stats.saturated_counters);
  CHECK(f.memory_bytes() >= cell_bytes);
  CHECK(f.memory_bytes() < cell_bytes + 8192);

  ScalableBloomFilter plain(o);
  for (std::uint64_t i = 0; i < 30'000; ++i) plain.insert(present_key(i, 15));
  const double ratio = static_cast<double>(f.memory_bytes()) / static_cast<double>(plain.memory_bytes());
  CHECK(ratio > 3.9);
  CHECK(ratio < 4.0);
}

TEST_CASE("conversion to the plain filter answers identically on a million keys",
          "[counting][to-plain]") {
  for (std::uint32_t w : {0u, 5u}) {
    CountingBloomFilter f(counting_options(20'000, 0.01, w));
    std::mt19937_64 rng(31 + w);
    for (std::uint64_t i = 0; i < 200'000; ++i) {
      f.insert(present_key(i, 16));
      if (rng() % 4 == 0) f.insert(present_key(i, 16));
      if (rng() % 3 == 0) f.remove(present_key(rng() % (i + 1), 16));
    }
    const ScalableBloomFilter plain = f.to_plain();
    INFO("window " << w << ", slices " << f.slice_count() << ", rotations " << f.rotations());
    CHECK(plain.options() == f.options());
    CHECK(plain.rotations() == f.rotations());
    CHECK(plain.size() == f.size());
    REQUIRE(plain.slice_count() == f.slice_count());
    for (std::size_t s = 0; s < f.slice_count(); ++s) {
      CHECK(plain.slices()[s].shape() == f.slices()[s].shape());
      CHECK(plain.slices()[s].cells().set_count() == f.slices()[s].cells().set_count());
    }
    std::uint64_t differ = 0;
    std::uint64_t found = 0;
    for (std::uint64_t i = 0; i < 1'000'000; ++i) {
      // Half absent keys, half among the 20 000 inserted last.
      const std::uint64_t key =
          i % 2 ? present_key(200'000 - 1 - i / 2 % 20'000, 16) : absent_key(i, 16);
      const bool c = f.contains(key);
      differ += c != plain.contains(key);
      found += c;
    }
    CHECK(differ == 0);
    CHECK(found > 250'000);
    CHECK(plain.memory_bytes() * 3 < f.memory_bytes());
  }
}

TEST_CASE("batched lookups of a counting filter answer as contains, at every SIMD level", "[counting][batch]") {
  // contains_many against contains key by key, and against the plain filter of the same
  // cells (to_plain, whose batches take the bit kernel): classic slices go through
  // DoubleHashingScheme::all_set_many<4> (8 keys at a time on AVX-512 CPUs, 4 on AVX2; the
  // suite runs at each SIMD cap), blocked ones key by key. Growing mode (4 slices, k 7 to
  // 10) and window mode (recycled slices), keys inserted twice and removed, batch lengths
  // around the groups and their vectors.
  for (const Layout layout : {Layout::classic, Layout::blocked}) {
    for (const std::uint32_t window : {0u, 4u}) {
      Options o = counting_options(3000, 0.01, window);
      o.layout = layout;
      CountingBloomFilter f(o);
      std::mt19937_64 rng(53 + window);
      for (std::uint64_t i = 0; i < 30'000; ++i) {
        f.insert(present_key(i, 18));
        if (rng() % 4 == 0) f.insert(present_key(i, 18));
        if (rng() % 3 == 0) f.remove(present_key(rng() % (i + 1), 18));
      }
      INFO("layout " << static_cast<int>(layout) << ", window " << window << ", slices " << f.slice_count());
      REQUIRE(f.slice_count() >= 4);
      const ScalableBloomFilter plain = f.to_plain();
      std::vector<std::uint64_t> keys;
      for (std::uint64_t i = 0; i < 20'000; ++i) {  // half absent, half among the 2000 inserted last
        keys.push_back(i % 2 ? present_key(30'000 - 1 - i / 2 % 2000, 18) : absent_key(i, 18));
      }
      std::unique_ptr<bool[]> found(new bool[keys.size()]), found_plain(new bool[keys.size()]);
      std::uint64_t mismatches = 0, count_mismatches = 0, positives = 0, offset = 0;
      for (const std::size_t length : {1, 3, 4, 7, 8, 9, 31, 32, 33, 100, 4099, 15000}) {
        const std::span<const std::uint64_t> batch(keys.data() + offset, length);
        std::fill(found.get(), found.get() + length, true);  // every answer must be written
        const std::size_t count = f.contains_many(batch, std::span<bool>(found.get(), length));
        const std::size_t plain_count = plain.contains_many(batch, std::span<bool>(found_plain.get(), length));
        std::size_t expected_count = 0;
        for (std::size_t i = 0; i < length; ++i) {
          const bool expected = f.contains(batch[i]);
          mismatches += (found[i] != expected) + (found_plain[i] != expected);
          expected_count += expected;
        }
        count_mismatches += (count != expected_count) + (plain_count != expected_count);
        positives += expected_count;
        offset += length;
      }
      CHECK(mismatches == 0);
      CHECK(count_mismatches == 0);
      CHECK(positives > offset / 4);      // most present keys are still there
      CHECK(positives < offset * 3 / 4);  // and the absent ones are not
    }
  }
}

TEST_CASE("a counting filter rebuilt from its words and parts is equal", "[counting][parts]") {
  CountingBloomFilter f(counting_options(1000, 0.01, 3));
  for (std::uint64_t i = 0; i < 5000; ++i) f.insert(present_key(i % 3000, 17));
  for (int i = 0; i < 16; ++i) f.insert(std::uint64_t{9});
  std::vector<CountingBloomFilter::slice_type> parts;
  for (const auto& s : f.slices()) {
    parts.emplace_back(s.shape(), CounterCells::from_words(s.cells().words()), s.items());
  }
  const CountingBloomFilter rebuilt(from_parts, f.options(), parts, f.rotations());
  CHECK(rebuilt == f);
  CHECK(rebuilt.saturated_counters() == f.saturated_counters());
  parts.front() = CountingBloomFilter::slice_type(parts.front().shape(), CounterCells(64), 0);
  CHECK_THROWS_AS(CountingBloomFilter(from_parts, f.options(), parts, 0), std::invalid_argument);
}

TEST_CASE("the blocked layout counts, removes and converts like the classic one",
          "[counting][blocked]") {
  Options o = counting_options(2000, 0.01);
  o.layout = Layout::blocked;
  CountingBloomFilter f(o);
  REQUIRE(f.slices().front().shape().layout == Layout::blocked);
  Interleaving run(f, 303);
  run.run(300'000);
  INFO("slices " << f.slice_count() << ", removes " << run.removes);
  CHECK(f.slice_count() >= 4);
  CHECK(run.wrong_insert == 0);
  CHECK(run.wrong_remove == 0);
  CHECK(run.missing == 0);
  CHECK(run.undercount == 0);
  CHECK(f.size() == run.live_count());
  const ScalableBloomFilter plain = f.to_plain();
  std::uint64_t differ = 0;
  for (std::uint64_t i = 0; i < 200'000; ++i) {
    const std::uint64_t key = i % 2 ? present_key(i / 2, 303) : absent_key(i, 303);
    differ += f.contains(key) != plain.contains(key);
  }
  CHECK(differ == 0);
}

TEST_CASE("batched counting inserts give one-by-one inserts' results and counters, at every SIMD level",
          "[counting][batch]") {
  // insert_many against insert key by key, compared batch by batch (results, counts, and
  // whole filters: every counter, item count, set and saturated count). While the newest
  // slice has room for a group of 16, the group goes in at once (insert_group: classic
  // newest slices through DoubleHashingScheme::mark_many, 8 keys' positions at a time on
  // AVX-512 CPUs; the suite runs at each SIMD cap); groups that could fill it, and timed
  // filters (whose slices here close and expire between batches), go key by key. Slices of
  // 40 keys make many keys' probe steps reach m (those keys go one by one in the vector
  // path). A slice of 250 000 keys (1.6 MB of counters) has its marks prefetch their lines
  // where the core's L2 is smaller (detail::group_insert_prefetch; on AVX-512 CPUs). The
  // stream mixes new keys, keys repeated within a group, keys held by older slices, removes
  // between batches, and one key inserted 20 times in a batch (saturated counters).
  using namespace std::chrono_literals;
  struct Mode {
    std::uint64_t capacity;
    std::uint32_t window;
    std::chrono::seconds lifetime;
  };
  for (const Layout layout : {Layout::classic, Layout::blocked}) {
    for (const Mode mode : {Mode{2000, 0, 0s}, Mode{2000, 4, 0s}, Mode{2000, 0, 30s}, Mode{2000, 3, 30s},
                            Mode{40, 0, 0s}, Mode{250'000, 0, 0s}}) {
      Options o = counting_options(mode.capacity, 0.01, mode.window);
      o.layout = layout;
      o.slice_lifetime = mode.lifetime;
      ManualClock clock_single, clock_batched, clock_unspanned;
      // `unspanned` takes the same batches without an output span (only their count).
      CountingBloomFilter single(o, clock_single), batched(o, clock_batched), unspanned(o, clock_unspanned);
      std::mt19937_64 rng(71 + mode.capacity + mode.window + static_cast<std::uint64_t>(mode.lifetime.count()));
      std::vector<std::uint64_t> history;  // every key inserted so far
      std::uint64_t next = 0, result_mismatches = 0, count_mismatches = 0, filter_mismatches = 0, news = 0;
      std::size_t most_slices = 0;
      std::uint64_t saturated = 0;
      constexpr std::size_t b = detail::kBatchGroup;
      for (const std::size_t length : {std::size_t{1}, b - 1, b, b + 1, 2 * b + 7, std::size_t{100}, std::size_t{999},
                                       std::size_t{4000}, std::size_t{7}, std::size_t{3000}, std::size_t{64},
                                       std::size_t{5000}}) {
        std::vector<std::uint64_t> keys;
        for (std::size_t i = 0; i < length; ++i) {
          const std::uint64_t r = rng() % 10;
          if (r < 6 || history.empty()) {
            keys.push_back(present_key(next++, 72));
          } else if (r < 8 && !keys.empty()) {
            keys.push_back(keys[rng() % keys.size()]);  // again, often in the same group
          } else {
            keys.push_back(history[rng() % history.size()]);  // often held by an older slice
          }
        }
        if (length == 100) keys.insert(keys.begin() + 40, 20, std::uint64_t{424242});
        std::unique_ptr<bool[]> inserted(new bool[keys.size()]);
        std::fill(inserted.get(), inserted.get() + keys.size(), true);  // every result must be written
        const std::size_t count =
            batched.insert_many(std::span<const std::uint64_t>(keys), std::span<bool>(inserted.get(), keys.size()));
        const std::size_t count_unspanned = unspanned.insert_many(std::span<const std::uint64_t>(keys));
        std::size_t expected_count = 0;
        for (std::size_t i = 0; i < keys.size(); ++i) {
          const bool expected = single.insert(keys[i]);
          result_mismatches += inserted[i] != expected;
          expected_count += expected;
        }
        news += expected_count;
        count_mismatches += count != expected_count;
        count_mismatches += count_unspanned != expected_count;
        filter_mismatches += !(batched == single);
        filter_mismatches += !(unspanned == single);
        most_slices = std::max(most_slices, single.slice_count());
        saturated = std::max(saturated, single.saturated_counters());
        history.insert(history.end(), keys.begin(), keys.end());
        for (int i = 0; i < 50; ++i) {  // removes of inserted keys, the same on both
          const std::uint64_t key = history[rng() % history.size()];
          const bool removed = single.remove(key);
          count_mismatches += removed != batched.remove(key);
          count_mismatches += removed != unspanned.remove(key);
        }
        clock_single.advance(10s);
        clock_batched.advance(10s);
        clock_unspanned.advance(10s);
      }
      INFO("layout " << static_cast<int>(layout) << ", capacity " << mode.capacity << ", window " << mode.window
                     << ", lifetime "
                     << mode.lifetime.count() << " s, slices " << single.slice_count() << ", rotations "
                     << single.rotations());
      CHECK(result_mismatches == 0);
      CHECK(count_mismatches == 0);
      CHECK(filter_mismatches == 0);
      if (mode.capacity <= 2000) CHECK(most_slices >= 3);  // groups met older slices, slices opened mid-batch
      if (mode.window != 0 || mode.lifetime.count() != 0) CHECK(single.rotations() > 0);  // slices recycled or expired
      CHECK(saturated > 0);     // the key inserted 20 times
      CHECK(news > history.size() / 3);        // most keys were new; the rest were not
      CHECK(news < history.size());
    }
  }
}
