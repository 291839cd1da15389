// ConcurrentScalableBloomFilter: the plain filter's answers from one thread, and no false
// negatives, bounded fill and rates under target from many threads at once.
//
// These tests also run under ThreadSanitizer (scripts/test.sh, build-tsan), so their sizes
// stay at 10^5..10^6 operations.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <unistd.h>
#endif

#include "segbloom/concurrent_filter.hpp"
#include "segbloom/segbloom.hpp"
#include "support/rate_checks.hpp"
#include "support/stats.hpp"
#include "support/stored_double_hashing.hpp"

using namespace segbloom;
using segbloom::test::absent_key;
using segbloom::test::present_key;

namespace {

// Runs body(t) on `threads` threads and joins them.
template <class Body>
void run_threads(unsigned threads, Body body) {
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(body, t);
  for (auto& th : pool) th.join();
}

// Keys 0..n-1 with every fifth one repeated from earlier: exercises the "already
// reported" paths as well as new keys.
std::uint64_t mixed_key(std::uint64_t i, std::uint64_t salt) {
  return i % 5 == 4 ? present_key(i / 3, salt) : present_key(i, salt);
}

// Largest number of set cells a slice may hold past half full when T threads write
// (detail/concurrent_slice.hpp): (S - 1) (B + k) + T k, B = max(1, bits / 2^16), S the
// stripes in use (min(T, kCountStripes); T for up to 16 threads, which each hold their own).
std::uint64_t overshoot_bound(const SliceShape& shape, unsigned threads) {
  const std::uint64_t b = std::max<std::uint64_t>(1, shape.bits >> 16);
  const std::uint64_t stripes = std::min<unsigned>(threads, detail::kCountStripes);
  return (stripes - 1) * (b + shape.probes) + threads * std::uint64_t{shape.probes};
}

// Inserts that return false ("probably there already") when `streams` x `per_stream`
// distinct keys, present_key(i, first_salt + t), go one by one, round robin, into a plain
// filter: the false positives at insert time a concurrent run of the same keys should
// have, up to the interleaving. A growing filter runs well under its target, so this,
// not the target, is the bound that sees a broken filter.
std::uint64_t plain_false_repeats(const Options& o, unsigned streams, std::uint64_t per_stream,
                                  std::uint64_t first_salt) {
  ScalableBloomFilter plain(o);
  std::uint64_t repeats = 0;
  for (std::uint64_t i = 0; i < per_stream; ++i) {
    for (unsigned t = 0; t < streams; ++t) repeats += !plain.insert(present_key(i, first_salt + t));
  }
  return repeats;
}

// 6 sigma of the difference of two such counts (each about Poisson), plus a margin for
// where the interleaving opens each slice.
double repeats_bound(std::uint64_t reference) {
  const double r = static_cast<double>(reference);
  return 1.1 * r + 6 * std::sqrt(2 * r) + 20;
}

// insert_many's groups (insert_group, set_group) taken for a scope even where no hardware
// transaction is (detail::group_writes_without_transactions): their logic then runs on
// every CPU and under ThreadSanitizer, set_group writing key by key.
class GroupWritesForced {
 public:
  explicit GroupWritesForced(bool on) : was_(detail::group_writes_without_transactions.exchange(on)) {}
  ~GroupWritesForced() { detail::group_writes_without_transactions.store(was_); }
  GroupWritesForced(const GroupWritesForced&) = delete;
  GroupWritesForced& operator=(const GroupWritesForced&) = delete;

 private:
  bool was_;
};

}  // namespace

TEST_CASE("from one thread the concurrent filter gives the plain filter's answers and bits",
          "[concurrent]") {
  Options o;
  o.capacity = 1000;
  o.false_positive_rate = 0.01;
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  INFO("layout " << static_cast<int>(o.layout));
  std::uint64_t salt = 1;
  SECTION("growing mode, several slice openings") { salt = 2; }
  SECTION("window mode, many rotations") {
    o.max_slices = 4;
    o.capacity = 2000;
    salt = 3;
  }
  SECTION("a window of one slice: one live slice, cleared when full") {
    o.max_slices = 1;
    salt = 4;
  }
  SECTION("a window of 25-item slices at 2.5e-4: triple hashing where classic") {
    o.max_slices = 4;
    o.capacity = 100;
    o.false_positive_rate = 0.001;
    salt = 5;
  }
  ScalableBloomFilter plain(o);
  ConcurrentScalableBloomFilter concurrent(o);
  if (o.capacity == 100) {
    CHECK((plain.slices().front().shape().probing == Probing::triple_hashing) == (o.layout == Layout::classic));
  }
  std::uint64_t disagreements = 0;
  for (std::uint64_t i = 0; i < 60'000; ++i) {
    // Every 7th insert repeats the key of an earlier insert (i / 2, or the one before it
    // when i / 2 was itself a repeat), held by the newest slice, an older one, or none any
    // more: an insert of a key already there returns false in both filters.
    std::uint64_t index = i;
    if (i % 7 == 6) index = i / 2 - (i / 2 % 7 == 6 ? 1 : 0);
    const std::uint64_t key = mixed_key(index, salt);
    disagreements += plain.insert(key) != concurrent.insert(key);
    if (i % 10'000 == 9'999) {
      INFO("after " << i + 1 << " inserts");
      CHECK(concurrent.to_plain() == plain);
      CHECK(concurrent.size() == plain.size());
      CHECK(concurrent.slice_count() == plain.slice_count());
      CHECK(concurrent.rotations() == plain.rotations());
      CHECK(concurrent.estimated_false_positive_rate() == plain.estimated_false_positive_rate());
    }
  }
  CHECK(disagreements == 0);
  if (o.max_slices == 0) {
    CHECK(plain.slice_count() >= 5);
  } else {
    CHECK(plain.rotations() >= 20);
  }
  std::uint64_t answers_differ = 0;
  for (std::uint64_t i = 0; i < 100'000; ++i) {
    const std::uint64_t key = absent_key(i, salt);
    answers_differ += plain.contains(key) != concurrent.contains(key);
  }
  CHECK(answers_differ == 0);
}

TEST_CASE("a key the full newest slice holds is not new and opens no slice in either filter",
          "[concurrent]") {
  // An insert asks the newest slice first, also a full one, as the plain filter's does
  // (insert_opening): a key it holds is not new and opens no slice.
  Options o;
  o.capacity = 1000;
  o.false_positive_rate = 0.01;
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  o.max_slices = GENERATE(0u, 1u);
  INFO("layout " << static_cast<int>(o.layout) << ", max_slices " << o.max_slices);
  ScalableBloomFilter plain(o);
  ConcurrentScalableBloomFilter concurrent(o);
  const auto full = [](const FilterStats& stats) {
    return 2 * stats.slices.back().set_cells >= stats.slices.back().bits;
  };
  std::uint64_t i = 0;
  while (!full(concurrent.stats())) {
    const std::uint64_t key = mixed_key(i++, 5);
    REQUIRE(plain.insert(key) == concurrent.insert(key));
  }
  REQUIRE(full(plain.stats()));
  REQUIRE(concurrent.slice_count() == 1);
  REQUIRE(concurrent.rotations() == 0);
  const std::uint64_t held = mixed_key(i - 1, 5);  // in the full newest slice
  CHECK_FALSE(plain.insert(held));
  CHECK_FALSE(concurrent.insert(held));
  CHECK(concurrent.slice_count() == 1);
  CHECK(concurrent.rotations() == 0);
  CHECK(concurrent.to_plain() == plain);
  // A new key opens the next slice (growing) or recycles the only one (a window of one).
  std::uint64_t fresh = i;
  while (plain.contains(mixed_key(fresh, 5))) ++fresh;  // skip false positives
  CHECK(plain.insert(mixed_key(fresh, 5)));
  CHECK(concurrent.insert(mixed_key(fresh, 5)));
  CHECK(concurrent.slice_count() == (o.max_slices == 0 ? 2 : 1));
  CHECK(concurrent.rotations() == (o.max_slices == 0 ? 0 : 1));
  CHECK(concurrent.to_plain() == plain);
}

TEST_CASE("the concurrent filter's batch calls answer like its single ones", "[concurrent][batch]") {
  Options o;
  o.capacity = 5000;
  o.false_positive_rate = 0.01;
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  INFO("layout " << static_cast<int>(o.layout));
  SECTION("growing mode") {}
  SECTION("window mode, W = 3: the slots walked round-robin") {
    o.max_slices = 3;
    o.capacity = 12'000;
  }
  SECTION("window mode, W = 1") {
    o.max_slices = 1;
    o.capacity = 5'000;
  }
  SECTION("window mode, W = 64 (every slot)") {
    o.max_slices = 64;
    o.capacity = 64 * 300;
  }
  SECTION("blocked slices, then classic ones (their rate below the blocked floor)") {
    // Slice i has the rate 7e-6 * 0.3^i: from the 4th slice on it falls back to classic.
    o.false_positive_rate = 1e-5;
    o.tightening = 0.3;
    o.capacity = 2000;
  }
  SECTION("window mode, 25-item slices at 2.5e-4: triple hashing where classic") {
    o.max_slices = 4;
    o.capacity = 100;
    o.false_positive_rate = 0.001;
  }
  ConcurrentScalableBloomFilter batched(o), single(o);
  std::vector<std::uint64_t> keys(100'003);  // not a multiple of the group size
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = mixed_key(i % 90'000, 7);  // repeats too
  std::unique_ptr<bool[]> flags(new bool[keys.size()]);
  // Compares the batch call's flags with single calls: {answers that differ, single trues}.
  const auto against_single = [&flags](std::size_t n, auto&& single_call) {
    std::size_t differ = 0, trues = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const bool answer = single_call(i);
      trues += answer;
      differ += flags[i] != answer;
    }
    return std::pair{differ, trues};
  };
  const std::size_t count = batched.insert_many(std::span<const std::uint64_t>(keys),
                                                std::span<bool>(flags.get(), keys.size()));
  const auto [insert_differ, inserted] =
      against_single(keys.size(), [&](std::size_t i) { return single.insert(keys[i]); });
  CHECK(insert_differ == 0);
  CHECK(count == inserted);
  CHECK(batched.to_plain() == single.to_plain());
  // Several slices prefetched and tested (a window of 1: one, often recycled).
  CHECK(batched.slice_count() >= (o.max_slices == 1 ? 1u : 3u));
  if (o.max_slices != 0) CHECK(batched.rotations() >= 10);
  std::vector<std::uint64_t> probes(50'000);
  // Present probes from keys a window still holds: of the last size() inserts, each went
  // into a slice opened before it, and the oldest live slice was opened before them all.
  const std::size_t recent = o.max_slices != 0 ? static_cast<std::size_t>(batched.size()) : keys.size();
  REQUIRE(recent > 0);
  for (std::size_t i = 0; i < probes.size(); ++i) {
    probes[i] = i % 2 ? keys[keys.size() - 1 - (i / 2) % recent] : absent_key(i, 7);
  }
  const std::size_t found = batched.contains_many(std::span<const std::uint64_t>(probes),
                                                  std::span<bool>(flags.get(), probes.size()));
  const auto [lookup_differ, hits] =
      against_single(probes.size(), [&](std::size_t i) { return single.contains(probes[i]); });
  CHECK(lookup_differ == 0);
  CHECK(found == hits);
  std::size_t missed = 0;  // the odd probes are keys the filter still holds
  for (std::size_t i = 1; i < probes.size(); i += 2) missed += !flags[i];
  CHECK(missed == 0);
}

TEST_CASE("insert_many's keys written several to a transaction answer as insert() would, repeats too",
          "[concurrent][batch]") {
  // insert_many writes up to kKeysPerTransaction keys in one hardware transaction where the
  // CPU has RTM (ConcurrentScalableBloomFilter::insert_group): a key repeated within those,
  // or whose cells the keys before it in the same transaction set, must answer false as it
  // would one by one, and count no item. Small slices (capacity 40, or 4 x 10 in a window)
  // and keys that repeat 1-3 times in a row or a few keys apart make both common; the many
  // slices opened check that groups stop where a slice fills as single inserts do. Run
  // again with groups forced where no transaction is taken (GroupWritesForced): the same
  // tests, set_group writing key by key.
  const bool forced = GENERATE(false, true);
  const GroupWritesForced groups(forced);
  if (!segbloom::detail::kWriteInTransaction && !forced) {
    WARN("no hardware transactions here (no RTM, SEGBLOOM_RTM=off or ThreadSanitizer): insert_many goes "
         "key by key in this run, and in groups without transactions in the next");
  }
  Options o;
  o.capacity = 40;
  o.false_positive_rate = 0.05;
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  o.max_slices = GENERATE(0u, 4u);
  INFO("layout " << static_cast<int>(o.layout) << ", max_slices " << o.max_slices << ", groups forced " << forced);
  std::vector<std::uint64_t> keys;
  std::uint64_t next = 0;
  for (std::uint64_t i = 0; keys.size() < 20'000; ++i) {
    const std::uint64_t key = mixed_key(next++, 11);
    for (std::uint64_t r = 0; r <= i % 3; ++r) keys.push_back(key);  // 1-3 times in a row
    if (i % 5 == 0 && keys.size() >= 4) keys.push_back(keys[keys.size() - 4]);  // again, a few keys on
  }
  ConcurrentScalableBloomFilter batched(o);
  ScalableBloomFilter plain(o);
  std::unique_ptr<bool[]> flags(new bool[keys.size()]);
  const std::size_t count =
      batched.insert_many(std::span<const std::uint64_t>(keys), std::span<bool>(flags.get(), keys.size()));
  std::size_t differ = 0, inserted = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const bool answer = plain.insert(keys[i]);
    inserted += answer;
    differ += flags[i] != answer;
  }
  CHECK(differ == 0);
  CHECK(count == inserted);
  CHECK(inserted < keys.size() / 2);  // most keys are repeats or held
  CHECK(batched.to_plain() == plain);
  if (o.max_slices == 0) {
    CHECK(batched.slice_count() >= 8);
    std::uint64_t lost = 0;
    for (const std::uint64_t key : keys) lost += !batched.contains(key);
    CHECK(lost == 0);
  } else {
    CHECK(batched.rotations() >= 50);
  }
}

namespace {

// Keys insert_many writes in one group (one transaction where RTM is).
constexpr std::uint64_t kKeysPerGroup = detail::ConcurrentSlice<DoubleHashingScheme>::kKeysPerTransaction;

// What after_group_write_for_tests runs (the hook is a plain function pointer): the first
// time, it inserts new keys one by one into `filter` until W slices have opened, so that the
// slot the group just wrote has been recycled and cleared.
struct RecycleAfterWrite {
  static inline ConcurrentScalableBloomFilter* filter = nullptr;
  static inline unsigned calls = 0;
  static inline std::uint64_t next_key = 0;
  static std::uint64_t opened() { return filter->slice_count() + filter->rotations(); }
  static void hook() {
    if (calls++ != 0) return;
    const std::uint64_t until = opened() + filter->options().max_slices;
    while (opened() < until) filter->insert(present_key(next_key++, 77));
  }
  // Installs the hook for `f` for the guard's life: removed even when a check throws, so
  // that no later test calls it with a filter gone.
  struct Installed {
    explicit Installed(ConcurrentScalableBloomFilter& f) {
      filter = &f;
      calls = 0;
      detail::after_group_write_for_tests.store(&hook);
    }
    ~Installed() {
      detail::after_group_write_for_tests.store(nullptr);
      filter = nullptr;
    }
    Installed(const Installed&) = delete;
    Installed& operator=(const Installed&) = delete;
  };
};

}  // namespace

TEST_CASE("a window's group whose slot is recycled between its write and its check is written again",
          "[concurrent][batch]") {
  // insert_group, window mode: after writing a group it checks whether a slice opened
  // meanwhile, and if one did writes each key again through insert_loop, answer kept. Here
  // the hook opens W slices right after the first group's write, so the slot written is
  // cleared and reused: without that check its keys would be lost at once.
  const GroupWritesForced groups(true);
  Options o;
  o.capacity = 400;  // 4 slices of 100
  o.false_positive_rate = 0.01;
  o.max_slices = 4;
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  INFO("layout " << (o.layout == Layout::blocked ? "blocked" : "classic"));
  ConcurrentScalableBloomFilter f(o);
  std::vector<std::uint64_t> keys;  // one group's worth, all new to an empty filter
  for (std::uint64_t i = 0; i < kKeysPerGroup; ++i) keys.push_back(present_key(i, 78));
  std::unique_ptr<bool[]> flags(new bool[keys.size()]);
  std::size_t count = 0;
  {
    const RecycleAfterWrite::Installed hook(f);
    count = f.insert_many(std::span<const std::uint64_t>(keys), std::span<bool>(flags.get(), keys.size()));
  }
  REQUIRE(RecycleAfterWrite::calls == 1);  // the group was written: the path was taken
  CHECK(f.rotations() >= 1);
  std::size_t answered_new = 0, lost = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    answered_new += flags[i];
    lost += !f.contains(keys[i]);
  }
  CHECK(lost == 0);
  CHECK(answered_new == keys.size());  // all new: written again, still answered true once
  CHECK(count == keys.size());
}

TEST_CASE("the concurrent filter's batches over classic slices large enough to prefetch answer like single ones",
          "[concurrent][batch]") {
  // Slices of 2 MiB or more have their k lines prefetched a group ahead; every batch length
  // around the group boundaries answers as single lookups do, with one slice and with two
  // (the older one asked only about the keys the newer one misses).
  Options o;
  o.capacity = 2'500'000;
  o.false_positive_rate = 0.01;
  ConcurrentScalableBloomFilter f(o);
  std::vector<std::uint64_t> keys(3'000'000);
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = present_key(i, 12);
  const std::span<const std::uint64_t> all(keys);
  for (const std::size_t inserted : {std::size_t{2'000'000}, keys.size()}) {  // 1 slice, then 2
    f.insert_many(all.subspan(0, inserted));
    REQUIRE(f.slice_count() == (inserted > o.capacity ? 2u : 1u));
    for (const auto& slice : f.stats().slices) REQUIRE(slice.memory_bytes >= detail::kPrefetchMinBytes);
    std::vector<std::uint64_t> probe;
    for (std::uint64_t i = 0; i < 60'000; ++i) probe.push_back(i % 2 ? absent_key(i, 12) : keys[i * 37 % inserted]);
    std::unique_ptr<bool[]> found(new bool[probe.size()]);
    std::uint64_t mismatches = 0, missed = 0, offset = 0;
    constexpr std::size_t g = detail::kLookupGroup;
    for (const std::size_t length : {std::size_t{1}, g - 1, g, g + 1, 2 * g - 1, 2 * g + 1, std::size_t{1000}, std::size_t{4099},
                                     std::size_t{50000}}) {
      const std::span<const std::uint64_t> batch(probe.data() + offset, length);
      for (std::size_t i = 0; i < length; ++i) found[i] = !f.contains(batch[i]);  // every answer must be written
      const std::size_t count = f.contains_many(batch, std::span<bool>(found.get(), length));
      std::size_t expected_count = 0;
      for (std::size_t i = 0; i < length; ++i) {
        const bool expected = f.contains(batch[i]);
        mismatches += expected != found[i];
        expected_count += expected;
        missed += (offset + i) % 2 == 0 && !found[i];  // probe's even entries were inserted
      }
      CHECK(count == expected_count);
      offset += length;
    }
    CHECK(mismatches == 0);
    CHECK(missed == 0);
  }
}

TEST_CASE("the concurrent filter answers an empty batch with nothing", "[concurrent][batch]") {
  for (const Layout layout : {Layout::classic, Layout::blocked}) {
    Options o;
    o.capacity = 1000;
    o.false_positive_rate = 0.01;
    o.layout = layout;
    ConcurrentScalableBloomFilter f(o);
    f.insert(std::uint64_t{1});
    CHECK(f.contains_many(std::span<const std::uint64_t>(), std::span<bool>()) == 0);
    CHECK(f.insert_many(std::span<const std::uint64_t>()) == 0);
    CHECK(f.contains(std::uint64_t{1}));
  }
}

TEST_CASE("a plain filter converts to a concurrent one and back, and both go on alike",
          "[concurrent]") {
  Options o;
  o.capacity = 500;
  o.false_positive_rate = 0.001;
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  SECTION("growing mode") {}
  SECTION("window mode") { o.max_slices = 3; }
  ScalableBloomFilter plain(o);
  for (std::uint64_t i = 0; i < 5'000; ++i) plain.insert(present_key(i, 5));
  ConcurrentScalableBloomFilter concurrent(plain);
  CHECK(concurrent.to_plain() == plain);
  CHECK(concurrent.size() == plain.size());
  std::uint64_t disagreements = 0;
  for (std::uint64_t i = 5'000; i < 20'000; ++i) {
    disagreements += plain.insert(mixed_key(i, 5)) != concurrent.insert(mixed_key(i, 5));
  }
  CHECK(disagreements == 0);
  CHECK(concurrent.to_plain() == plain);
}

TEST_CASE("a window stored under an earlier sizing takes today's shape as its slots recycle",
          "[concurrent]") {
  // A blob from before triple hashing (1 Dec 2026 and earlier) holds double-hashing slices
  // where today's plan triple-hashes. The plain filter replaces such a slice when its window
  // recycles it; so does the concurrent one (replace_slot), which keeps the old slice, that
  // calls may still be reading, until clear(). 25-item slices at 2.5e-4 keep their bits
  // (only the probing differs); 10-item slices at 10^-8 were 512 bits and are 640 now.
  Options o;
  o.max_slices = 4;
  std::tie(o.capacity, o.false_positive_rate) =
      GENERATE(std::make_tuple(std::uint64_t{100}, 0.001), std::make_tuple(std::uint64_t{40}, 4e-8));
  INFO("capacity " << o.capacity << ", rate " << o.false_positive_rate);
  const SliceShape planned = ScalableBloomFilter::planned_shape(o, 0);
  REQUIRE(planned.probing == Probing::triple_hashing);
  const ScalableBloomFilter stored = test::with_double_hashing_first_slice<ScalableBloomFilter>(o);
  const std::uint64_t new_filter_bytes = ConcurrentScalableBloomFilter(o).memory_bytes();
  // What the stored slice takes in a concurrent filter: its cells and counting stripes.
  const std::uint64_t stored_bytes = ConcurrentScalableBloomFilter(stored).stats().slices[0].memory_bytes;

  SECTION("from one thread: the plain filter's bits and shapes all along") {
    ScalableBloomFilter plain = stored;
    ConcurrentScalableBloomFilter concurrent(plain);
    REQUIRE(concurrent.stats().slices[0].probing == Probing::scheme);
    CHECK(concurrent.memory_bytes() == sizeof(concurrent) + stored_bytes);
    // Until the window is complete and recycles slot 0, nothing is retired.
    std::uint64_t i = 0;
    while (concurrent.rotations() == 0) {
      CHECK(plain.insert(present_key(i, 61)) == concurrent.insert(present_key(i, 61)));
      ++i;
    }
    CHECK(concurrent.to_plain() == plain);
    // The slice retired is the stored one: what the filter holds grew by exactly its bytes
    // over what the same slices of today's shape take.
    const FilterStats now = concurrent.stats();
    REQUIRE(now.slices.size() == o.max_slices);
    std::uint64_t live_bytes = 0;
    for (const SliceStats& s : now.slices) {
      CHECK(s.probing == Probing::triple_hashing);
      CHECK(s.bits == planned.bits);
      live_bytes += s.memory_bytes;
    }
    CHECK(concurrent.memory_bytes() == sizeof(concurrent) + live_bytes + stored_bytes);
    CHECK(now.memory_bytes == concurrent.memory_bytes());
    // Later rotations clear in place: nothing more is retired.
    const std::uint64_t after_first = concurrent.memory_bytes();
    for (const std::uint64_t stop = i + 20 * o.capacity; i < stop; ++i) {
      CHECK(plain.insert(present_key(i, 61)) == concurrent.insert(present_key(i, 61)));
    }
    CHECK(concurrent.rotations() > 3 * o.max_slices);
    CHECK(concurrent.memory_bytes() == after_first);
    CHECK(concurrent.to_plain() == plain);
    // clear() frees the retired slice too: back to a new filter's memory.
    concurrent.clear();
    CHECK(concurrent.memory_bytes() == new_filter_bytes);
  }

  SECTION("2 writers through the replacements: each key found until W - 1 openings after its insert") {
    // Every slot of the window stored, so the first W rotations each retire one while the
    // other writer reads and writes. The promise checked: a key is found while fewer than
    // W - 1 slices have opened since its insert began. Under ThreadSanitizer (build-tsan)
    // this also checks that a new slice reaches the other thread through the slot's release
    // store, and that no call reads a retired slice after it is freed (a version that freed it
    // at once failed 3 runs of 3 there).
    const ScalableBloomFilter window = test::with_double_hashing_window<ScalableBloomFilter>(o);
    const std::uint64_t window_bytes = ConcurrentScalableBloomFilter(window).memory_bytes();
    for (int round = 0; round < 25; ++round) {
      INFO("round " << round);
      ConcurrentScalableBloomFilter concurrent(window);
      REQUIRE(concurrent.slice_count() == o.max_slices);
      std::atomic<unsigned> ready{0};
      std::uint64_t misses[2] = {}, checks[2] = {};
      run_threads(2, [&](unsigned t) {
        ready.fetch_add(1);
        while (ready.load() < 2) std::this_thread::yield();
        for (std::uint64_t i = 0; i < 3 * o.capacity; ++i) {
          const std::uint64_t key = present_key(i, 1000 * round + t);
          const std::uint64_t before = concurrent.rotations();
          concurrent.insert(key);
          bool found = false;
          if (t == 0) {
            found = concurrent.contains(key);
          } else {  // through the batch path's snapshot of the slots
            concurrent.contains_many(std::span<const std::uint64_t>(&key, 1), std::span<bool>(&found, 1));
          }
          if (concurrent.rotations() - before < o.max_slices - 1) {
            misses[t] += !found;
            ++checks[t];
          }
        }
      });
      CHECK(misses[0] + misses[1] == 0);
      CHECK(checks[0] + checks[1] >= 3 * o.capacity);
      REQUIRE(concurrent.rotations() >= o.max_slices);
      std::uint64_t live_bytes = 0;
      for (const SliceStats& s : concurrent.stats().slices) {
        CHECK(s.probing == Probing::triple_hashing);
        live_bytes += s.memory_bytes;
      }
      // Each stored slice retired once: a full window of today's slices beside the stored one.
      CHECK(concurrent.memory_bytes() == live_bytes + window_bytes);
    }
  }
}

TEST_CASE("from one thread a timed concurrent filter gives the plain filter's answers and bits",
          "[concurrent][lifetime]") {
  // Options::slice_lifetime: slices close at half full or a lifetime after opening, and
  // expire a lifetime after closing; both filters on one ManualClock, through growth (or
  // window rotation), expiry of the oldest slices, and idle spells that expire them all.
  using namespace std::chrono_literals;
  Options o;
  o.capacity = 400;
  o.false_positive_rate = 0.01;
  o.slice_lifetime = 100s;
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  o.max_slices = GENERATE(0u, 3u);
  INFO("layout " << static_cast<int>(o.layout) << ", window " << o.max_slices);
  ManualClock clock;
  ScalableBloomFilter plain(o, clock);
  ConcurrentScalableBloomFilter concurrent(o, clock);
  std::uint64_t disagreements = 0, checkpoints = 0;
  std::size_t most_slices = 0;
  for (std::uint64_t i = 0; i < 30'000; ++i) {
    disagreements += plain.insert(mixed_key(i, 80)) != concurrent.insert(mixed_key(i, 80));
    // 13 s every 97 inserts (slices close by fill and by time), and a 250 s idle spell
    // every 7 000 (every slice expires).
    if (i % 97 == 96) clock.advance(13s);
    if (i % 7'000 == 6'999) {
      clock.advance(250s);
      CHECK(plain.expire() == concurrent.expire());
    }
    most_slices = std::max(most_slices, concurrent.slice_count());
    if (i % 1'000 == 999) {
      ++checkpoints;
      CHECK(concurrent.to_plain() == plain);
      CHECK(concurrent.rotations() == plain.rotations());
      CHECK(concurrent.size() == plain.size());
      std::uint64_t differ = 0;
      for (std::uint64_t j = 0; j < 2'000; ++j) {
        differ += plain.contains(mixed_key(i - j % 1'000, 80)) != concurrent.contains(mixed_key(i - j % 1'000, 80));
        differ += plain.contains(absent_key(j, 81)) != concurrent.contains(absent_key(j, 81));
      }
      CHECK(differ == 0);
    }
  }
  CHECK(disagreements == 0);
  CHECK(checkpoints == 30);
  CHECK(most_slices >= 3);
  CHECK(plain.rotations() > 20);
  // Statistics and the round trip through the plain filter keep the open times.
  const FilterStats mine = concurrent.stats(), theirs = plain.stats();
  REQUIRE(mine.slices.size() == theirs.slices.size());
  for (std::size_t s = 0; s < mine.slices.size(); ++s) {
    CHECK(mine.slices[s].opened_at == theirs.slices[s].opened_at);
    CHECK(mine.slices[s].index == theirs.slices[s].index);
  }
  ConcurrentScalableBloomFilter again(plain);
  CHECK(again.to_plain() == plain);
  clock.advance(1'000s);
  CHECK(again.expire() == plain.expire());
  CHECK(again.to_plain() == plain);
  concurrent.clear();
  plain.clear();
  CHECK(concurrent.to_plain() == plain);
}

#if defined(__linux__)  // elsewhere the filter keeps its expired slices' pages (README)
TEST_CASE("a timed concurrent filter gives its expired slices' pages back and takes them again",
          "[concurrent][lifetime]") {
  // After a burst the plain filter frees its expired slices. The concurrent one cannot (other
  // threads may be reading them) and keeps each for its slot's next opening, but gives its
  // whole pages back to the kernel (AlignedWords::release_pages, whose own test watches the
  // pages with mincore); memory_bytes() counts them without. Slices of 20 000 items and more
  // at 4 KiB pages (24 KB and up: each has whole pages to give), as many more as pages are larger.
  using namespace std::chrono_literals;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  Options o;
  o.capacity = 20'000 * std::max<std::uint64_t>(1, page / 4096);
  o.false_positive_rate = 0.01;
  o.slice_lifetime = 100s;
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  INFO("layout " << static_cast<int>(o.layout));
  ManualClock clock;
  ScalableBloomFilter plain(o, clock);
  ConcurrentScalableBloomFilter concurrent(o, clock);
  std::uint64_t i = 0, disagreements = 0;
  const auto burst_to = [&](std::size_t slices) {
    while (concurrent.slice_count() < slices) {
      disagreements += plain.insert(present_key(i, 95)) != concurrent.insert(present_key(i, 95));
      ++i;
    }
  };
  // A burst opens 4 slices at one time; 150 s later the 3 closed ones have expired.
  burst_to(4);
  const std::uint64_t peak = concurrent.memory_bytes();
  const FilterStats before = concurrent.stats();
  REQUIRE(before.slices.size() == 4);
  std::uint64_t expired_cells = 0;
  for (std::size_t s = 0; s < 3; ++s) expired_cells += before.slices[s].bits / 8;
  clock.advance(150s);
  CHECK(concurrent.expire() == 3);
  CHECK(plain.expire() == 3);
  CHECK(concurrent.slice_count() == 1);
  // Each expired slice keeps at most two partial pages of cells (and its counting stripes).
  const std::uint64_t after = concurrent.memory_bytes();
  CHECK(after + expired_cells <= peak + 3 * 2 * page);
  CHECK(after >= concurrent.stats().slices[0].memory_bytes);
  CHECK(concurrent.to_plain() == plain);

  // A second burst opens slices in the expired ones' slots again (the smallest free sequence
  // indices), each cleared first: the plain filter's bits, and the peak's memory again.
  const std::uint64_t second = i;
  burst_to(4);
  CHECK(disagreements == 0);
  CHECK(concurrent.memory_bytes() == peak);
  CHECK(concurrent.to_plain() == plain);
  std::uint64_t missed = 0, differ = 0;
  for (std::uint64_t j = second; j < i; ++j) missed += !concurrent.contains(present_key(j, 95));
  for (std::uint64_t j = 0; j < 20'000; ++j) differ += plain.contains(absent_key(j, 96)) != concurrent.contains(absent_key(j, 96));
  CHECK(missed == 0);
  CHECK(differ == 0);
}
#endif

TEST_CASE("timed concurrent filter from 2 writers: every key of the last lifetime is found",
          "[concurrent][lifetime]") {
  // The time-window promise under concurrency: a key inserted at time t is found while the
  // clock reads less than t + L. Writer 0 moves the clock on (1 s every 40 inserts; slices
  // close by time about every 3 000 inserts and by fill at 2 000 keys a slice); each writer
  // asks for its recent keys every 64 inserts, by contains (writer 0) or contains_many
  // (writer 1). Under ThreadSanitizer (build-tsan) this also checks the timed paths' races.
  using namespace std::chrono_literals;
  Options o;
  o.capacity = 4'000;
  o.false_positive_rate = 0.01;
  o.slice_lifetime = 75s;
  o.max_slices = GENERATE(0u, 4u);
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  INFO("window " << o.max_slices << ", layout " << static_cast<int>(o.layout));
  ManualClock clock;
  ConcurrentScalableBloomFilter f(o, clock);
  constexpr std::uint64_t kPerThread = 30'000;
  const std::int64_t lifetime = o.slice_lifetime.count();
  // Window mode also drops keys by count: those among the last capacity (W - 1) / W inserts
  // (95 % of it, for inserts in flight) are the ones promised.
  const std::uint64_t kept = o.max_slices == 0 ? UINT64_MAX : o.capacity * (o.max_slices - 1) / o.max_slices * 95 / 100;
  std::atomic<std::uint64_t> started{0};
  std::uint64_t misses[2] = {}, checks[2] = {};
  run_threads(2, [&](unsigned t) {
    std::deque<std::tuple<std::uint64_t, UnixSeconds, std::uint64_t>> recent;  // key, time, stamp
    for (std::uint64_t i = 0; i < kPerThread; ++i) {
      if (t == 0 && i % 40 == 39) clock.advance(1s);
      const std::uint64_t key = present_key(i, 90 + t);
      recent.emplace_back(key, clock.now(), started.fetch_add(1));  // read before: never too late
      f.insert(key);
      if (i % 64 != 63) continue;
      std::vector<std::uint64_t> asked;
      for (const auto& entry : recent) asked.push_back(std::get<0>(entry));
      std::unique_ptr<bool[]> answers(new bool[asked.size()]);
      if (t == 1) f.contains_many(std::span<const std::uint64_t>(asked), std::span<bool>(answers.get(), asked.size()));
      std::size_t j = 0;
      for (const auto& [k, at, stamp] : recent) {
        const bool found = t == 1 ? answers[j++] : f.contains(k);
        // Judged by the clock and the count after the answer.
        if (clock.now() < at + lifetime && started.load() - stamp < kept) {
          misses[t] += !found;
          ++checks[t];
        }
      }
      while (!recent.empty() && (clock.now() >= std::get<1>(recent.front()) + lifetime ||
                                 started.load() - std::get<2>(recent.front()) >= kept)) {
        recent.pop_front();
      }
    }
  });
  INFO("rotations " << f.rotations() << ", checks " << checks[0] + checks[1]);
  CHECK(misses[0] + misses[1] == 0);
  CHECK(checks[0] + checks[1] >= kPerThread);
  CHECK(f.rotations() >= 5);
  // Slices past their lifetime are gone: memory stays bounded by the live slices.
  CHECK(f.slice_count() <= (o.max_slices == 0 ? 8u : o.max_slices));
}

// A stored copy (to_plain) closes each slice at the next one's open time; the concurrent
// filter closes it at the clock read after the opening is published. Both must be the same
// reading, or the copy expires a slice (and keys written into it meanwhile) earlier. A
// clock that ticks a second at every read tells them apart.
TEST_CASE("a timed concurrent filter and its stored copy expire on one schedule", "[concurrent][lifetime]") {
  using namespace std::chrono_literals;
  struct TickingClock final : Clock {
    mutable std::atomic<UnixSeconds> time{1'000'000};
    std::atomic<bool> ticking{true};
    UnixSeconds now() const noexcept override { return ticking ? time.fetch_add(1) + 1 : time.load(); }
  } clock;
  Options o;
  o.capacity = 500;
  o.false_positive_rate = 0.01;
  o.slice_lifetime = 1'000'000s;  // slices close by fill only
  o.max_slices = GENERATE(0u, 4u);
  INFO("window " << o.max_slices);
  ConcurrentScalableBloomFilter f(o, clock);
  std::uint64_t next = 0;
  while (f.slice_count() < 3) f.insert(present_key(next++, 95));
  clock.ticking = false;
  const ScalableBloomFilter stored = f.to_plain();
  ManualClock manual;
  // At each time a slice of the copy expires, and a second before it, the two drop the same.
  std::vector<UnixSeconds> times;
  for (std::size_t i = 0; i + 1 < stored.slices().size(); ++i) {
    const UnixSeconds expires = stored.slices()[i + 1].opened_at() + o.slice_lifetime.count();
    times.push_back(expires - 1);
    times.push_back(expires);
  }
  std::uint64_t mismatches = 0, copy_dropped = 0;
  for (const UnixSeconds t : times) {
    clock.time = t;
    manual.set(t);
    ScalableBloomFilter copy = stored;
    copy.set_clock(manual);
    copy.expire();
    f.expire();
    mismatches += copy.slice_count() != f.slice_count();
    copy_dropped = std::max<std::uint64_t>(copy_dropped, copy.rotations() - stored.rotations());
  }
  CHECK(copy_dropped >= 1);
  CHECK(mismatches == 0);
}

TEST_CASE("the concurrent filter rejects what the plain filter rejects", "[concurrent]") {
  Options bad;
  bad.false_positive_rate = 1.5;
  CHECK_THROWS_AS(ConcurrentScalableBloomFilter(bad), std::invalid_argument);
  Options blocked;
  blocked.layout = Layout::blocked;  // accepted: both layouts
  CHECK_NOTHROW(ConcurrentScalableBloomFilter(blocked));

  SECTION("a window filter whose rotations disagree with its slice count") {
    Options o;
    o.max_slices = 4;
    std::vector<ScalableBloomFilter::slice_type> slices;
    slices.emplace_back(slice_shape(o, 0));
    slices.emplace_back(slice_shape(o, 0));
    const ScalableBloomFilter odd(from_parts, o, std::move(slices), 3);
    CHECK_THROWS_AS(ConcurrentScalableBloomFilter(odd), std::invalid_argument);
  }

  SECTION("rotation counts up to the most the concurrent filter holds (2^58 - 65)") {
    // The count shares a word with the newest slot: a larger one is refused, the last
    // rotation it has room for still finds the right slots, and the next one throws.
    Options o;
    o.max_slices = 3;
    o.capacity = 300;
    const std::uint64_t most = (~std::uint64_t{0} >> 6) - kMaxSlices;
    const auto window_at = [&o](std::uint64_t rotations) {
      std::vector<ScalableBloomFilter::slice_type> slices;
      for (int s = 0; s < 3; ++s) slices.emplace_back(slice_shape(o, 0));
      return ScalableBloomFilter(from_parts, o, std::move(slices), rotations);
    };
    CHECK_THROWS_AS(ConcurrentScalableBloomFilter(window_at(most + 1)), std::invalid_argument);
    ConcurrentScalableBloomFilter concurrent(window_at(most - 1));
    REQUIRE(concurrent.rotations() == most - 1);
    std::uint64_t inserted = 0;
    bool threw = false;
    for (; inserted < 10'000 && !threw; ++inserted) {
      try {
        concurrent.insert(present_key(inserted, 11));
      } catch (const std::length_error&) {
        threw = true;
        --inserted;  // that insert did not complete
      }
    }
    CHECK(threw);
    CHECK(concurrent.rotations() == most);
    REQUIRE(inserted >= 200);
    std::uint64_t missing = 0;  // the window's promise: the last capacity (W - 1) / W keys
    for (std::uint64_t i = inserted - 200; i < inserted; ++i) missing += !concurrent.contains(present_key(i, 11));
    CHECK(missing == 0);
  }

  SECTION("a growing filter that would exceed 64 slices throws at the plain filter's insert") {
    Options o;
    o.capacity = 1;
    o.growth = 1.0;
    o.false_positive_rate = 0.5;
    o.tightening = 0.99;
    ScalableBloomFilter plain(o);
    ConcurrentScalableBloomFilter concurrent(o);
    std::uint64_t plain_threw_at = 0, concurrent_threw_at = 0;
    for (std::uint64_t i = 1; i < 100'000 && plain_threw_at == 0; ++i) {
      try {
        plain.insert(i);
      } catch (const std::length_error&) {
        plain_threw_at = i;
      }
    }
    for (std::uint64_t i = 1; i < 100'000 && concurrent_threw_at == 0; ++i) {
      try {
        concurrent.insert(i);
      } catch (const std::length_error&) {
        concurrent_threw_at = i;
      }
    }
    CHECK(plain_threw_at != 0);
    CHECK(concurrent_threw_at == plain_threw_at);
    CHECK(concurrent.slice_count() == kMaxSlices);
    CHECK(concurrent.to_plain() == plain);
  }

  SECTION("output spans of the wrong size") {
    ConcurrentScalableBloomFilter f;
    const std::vector<std::uint64_t> keys{1, 2, 3};
    bool out[2];
    CHECK_THROWS_AS(f.contains_many(std::span<const std::uint64_t>(keys), std::span<bool>(out)),
                    std::invalid_argument);
    CHECK_THROWS_AS(f.insert_many(std::span<const std::uint64_t>(keys), std::span<bool>(out)),
                    std::invalid_argument);
    bool all[3];
    CHECK(f.insert_many(std::span<const std::uint64_t>(keys), std::span<bool>(all)) == 3);
    CHECK(f.contains_many(std::span<const std::uint64_t>(keys), std::span<bool>(all)) == 3);
  }
}

TEST_CASE("4 writers and a reader, growing mode: no false negatives during or after",
          "[concurrent]") {
  constexpr unsigned kWriters = 4;
  constexpr std::uint64_t kPerThread = 100'000;
  Options o;
  o.capacity = 10'000;  // 40x capacity in all: 6 slices, 5 openings under contention
  o.false_positive_rate = 0.01;
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  INFO("layout " << static_cast<int>(o.layout));
  ConcurrentScalableBloomFilter f(o);

  std::atomic<std::uint64_t> progress[kWriters] = {};  // keys inserted, published by writers
  std::atomic<unsigned> writers_done{0};
  std::uint64_t own_misses[kWriters] = {}, reported_new[kWriters] = {};
  std::uint64_t reader_misses = 0, reader_checks = 0, reader_batches = 0;

  run_threads(kWriters + 1, [&](unsigned t) {
    if (t == kWriters) {  // the reader: keys other threads have published must be found
      std::uint64_t round = 0;
      std::vector<std::uint64_t> batch;
      while (writers_done.load(std::memory_order_acquire) < kWriters) {
        // Rounds go through the writers in turn; every other turn asks in one batch the
        // newest keys of all 4 (contains_many, which reads the live slices once as it
        // begins, while slices open around it), the others key by key.
        const std::uint64_t r = round++;
        const unsigned w = static_cast<unsigned>(r % kWriters);
        const bool batched = (r / kWriters) % 2 == 0;
        const std::uint64_t published = progress[w].load(std::memory_order_acquire);
        for (std::uint64_t i = published; i-- > 0 && published - i <= 64;) {
          if (batched) {
            batch.push_back(present_key(i, 100 + w));
          } else {
            reader_misses += !f.contains(present_key(i, 100 + w));
            ++reader_checks;
          }
        }
        if (batched && w == kWriters - 1 && !batch.empty()) {
          std::unique_ptr<bool[]> found(new bool[batch.size()]);
          const std::size_t hits =
              f.contains_many(std::span<const std::uint64_t>(batch), std::span<bool>(found.get(), batch.size()));
          for (std::size_t i = 0; i < batch.size(); ++i) reader_misses += !found[i];
          reader_misses += batch.size() - hits;
          reader_checks += batch.size();
          ++reader_batches;
          batch.clear();
        }
      }
      return;
    }
    for (std::uint64_t i = 0; i < kPerThread; ++i) {
      const std::uint64_t key = present_key(i, 100 + t);
      reported_new[t] += f.insert(key);
      own_misses[t] += !f.contains(key);
      if (i % 64 == 63) progress[t].store(i + 1, std::memory_order_release);
    }
    writers_done.fetch_add(1, std::memory_order_release);
  });

  std::uint64_t misses = 0, inserted = 0;
  for (unsigned t = 0; t < kWriters; ++t) {
    CHECK(own_misses[t] == 0);
    inserted += reported_new[t];
    for (std::uint64_t i = 0; i < kPerThread; ++i) misses += !f.contains(present_key(i, 100 + t));
  }
  CHECK(reader_misses == 0);
  CHECK(reader_checks > 0);
  CHECK(reader_batches > 0);
  CHECK(misses == 0);
  CHECK(f.slice_count() >= 5);
  // Distinct keys: every insert reported false was a false positive at that moment; about
  // as many as the same keys through a plain filter.
  const std::uint64_t total = kWriters * kPerThread;
  const std::uint64_t reference = plain_false_repeats(o, kWriters, kPerThread, 100);
  INFO("reported old " << total - inserted << ", plain filter " << reference);
  CHECK(static_cast<double>(total - inserted) <= repeats_bound(reference));
  // Growing mode: size() counts exactly the inserts that returned true.
  CHECK(f.size() == inserted);
  CHECK(f.to_plain().size() == inserted);
}

TEST_CASE("2 threads inserting the same keys: each new key is reported new at least once",
          "[concurrent]") {
  constexpr std::uint64_t kKeys = 200'000;
  Options o;
  o.capacity = 20'000;
  o.false_positive_rate = 0.01;
  ConcurrentScalableBloomFilter f(o);
  std::vector<char> reported[2] = {std::vector<char>(kKeys), std::vector<char>(kKeys)};
  run_threads(2, [&](unsigned t) {
    for (std::uint64_t i = 0; i < kKeys; ++i) reported[t][i] = f.insert(present_key(i, 7));
  });
  std::uint64_t neither = 0, both = 0, missing = 0, true_returns = 0;
  for (std::uint64_t i = 0; i < kKeys; ++i) {
    neither += !reported[0][i] && !reported[1][i];
    both += reported[0][i] && reported[1][i];
    true_returns += reported[0][i] + reported[1][i];
    missing += !f.contains(present_key(i, 7));
  }
  INFO("neither " << neither << ", both " << both);
  CHECK(missing == 0);
  // A key reported new by neither thread was a false positive before either wrote it:
  // about as many as the plain filter reports for the same keys once each.
  const std::uint64_t reference = plain_false_repeats(o, 1, kKeys, 7);
  INFO("plain filter " << reference);
  CHECK(static_cast<double>(neither) <= repeats_bound(reference));
  CHECK(f.size() == true_returns);
}

TEST_CASE("window mode through many rotations: each thread's recent keys stay found",
          "[concurrent]") {
  constexpr unsigned kThreads = 4;
  constexpr std::uint64_t kPerThread = 50'000;
  Options o;
  o.capacity = 4'000;  // 4 slices of 1 000: about 200 rotations in all
  o.false_positive_rate = 0.01;
  o.max_slices = 4;
  // Blocked too: its batches read the slices through the group kernels' relaxed loads,
  // which ThreadSanitizer (build-tsan) checks here against the inserts racing with them.
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  // Through insert_many too, 32 keys a call: written several to a hardware transaction
  // where the CPU has RTM, and checked again when a slice opened meanwhile (insert_group);
  // and with groups forced where no transaction is taken (GroupWritesForced).
  const std::tuple<bool, bool> mode = GENERATE(table<bool, bool>({{false, false}, {true, false}, {true, true}}));
  const bool batched = std::get<0>(mode), forced = std::get<1>(mode);  // (clang 14 cannot capture bindings)
  const GroupWritesForced groups(forced);
  INFO("layout " << (o.layout == Layout::blocked ? "blocked" : "classic") << (batched ? ", insert_many" : "")
                 << (forced ? ", groups forced" : ""));
  ConcurrentScalableBloomFilter f(o);
  // The plain filter's promise: a key stays through the next capacity * (W-1)/W writes.
  // Inserts are stamped with a global count of inserts started, read as the insert
  // starts; a key must be found while fewer than 95 % of that many inserts started after
  // its own (the 5 % covers inserts that write nothing, at rate <= p / W, and a few
  // inserts in flight that write twice).
  const std::uint64_t guaranteed = o.capacity * (o.max_slices - 1) / o.max_slices;
  const std::uint64_t limit = guaranteed * 95 / 100;
  std::atomic<std::uint64_t> started{0};
  std::uint64_t misses[kThreads] = {}, checks[kThreads] = {};

  run_threads(kThreads, [&](unsigned t) {
    std::deque<std::pair<std::uint64_t, std::uint64_t>> recent;  // (key, stamp), oldest first
    std::vector<std::uint64_t> batch;
    for (std::uint64_t i = 0; i < kPerThread; ++i) {
      const std::uint64_t key = present_key(i, 200 + t);
      recent.emplace_back(key, started.fetch_add(1));  // stamped before: never too late
      if (!batched) {
        f.insert(key);
      } else if (batch.push_back(key); batch.size() == 32) {  // 128 is a multiple: none pending below
        f.insert_many(std::span<const std::uint64_t>(batch));
        batch.clear();
      }
      if (i % 128 != 127) continue;
      // Odd threads ask in one batch (contains_many, its slices read once per call), even
      // ones key by key; each answer is judged against the stamp after it was given.
      std::vector<std::uint64_t> asked;
      for (const auto& entry : recent) asked.push_back(entry.first);
      std::unique_ptr<bool[]> answers(new bool[asked.size()]);
      if (t % 2 == 1) {
        f.contains_many(std::span<const std::uint64_t>(asked), std::span<bool>(answers.get(), asked.size()));
      }
      std::size_t j = 0;
      for (const auto& [k, stamp] : recent) {
        const bool found = t % 2 == 1 ? answers[j++] : f.contains(k);
        if (started.load() - stamp < limit) {
          misses[t] += !found;
          ++checks[t];
        }
      }
      const std::uint64_t now = started.load();
      while (!recent.empty() && now - recent.front().second >= limit) recent.pop_front();
    }
  });

  std::uint64_t all_misses = 0, all_checks = 0;
  for (unsigned t = 0; t < kThreads; ++t) {
    all_misses += misses[t];
    all_checks += checks[t];
  }
  INFO("checks " << all_checks << ", rotations " << f.rotations());
  CHECK(all_misses == 0);
  CHECK(all_checks >= kPerThread);
  CHECK(f.rotations() >= 150);
  CHECK(f.slice_count() == o.max_slices);
}

TEST_CASE("copies and statistics taken while a window rotates agree with themselves", "[concurrent]") {
  // to_plain() and stats() read the live slices and the rotation count from one reading:
  // a copy whose count says "rotated" must hold all W slices, or the constructor from a
  // plain filter and the loaders refuse it. Slices of 20 items rotate every few
  // microseconds here, while a second thread copies (under ThreadSanitizer, build-tsan,
  // the copies' reads race with the inserts' writes only through atomics). A version that
  // read the count twice went unnoticed in 3 runs: it takes two openings between the two
  // reads, about a copier preempted mid-copy; the check is for what such a copy would be.
  Options o;
  o.capacity = 40;
  o.max_slices = 2;
  o.false_positive_rate = 0.01;
  ConcurrentScalableBloomFilter f(o);
  std::atomic<bool> done{false};
  std::uint64_t copies = 0, refused = 0, mismatched = 0;
  run_threads(2, [&](unsigned t) {
    if (t == 0) {
      for (std::uint64_t i = 0; i < 200'000; ++i) f.insert(present_key(i, 95));
      done.store(true);
      return;
    }
    while (!done.load()) {
      const ScalableBloomFilter copy = f.to_plain();
      try {
        const ConcurrentScalableBloomFilter again(copy);
      } catch (const std::invalid_argument&) {
        ++refused;
      }
      const FilterStats stats = f.stats();
      mismatched += stats.rotations != 0 && stats.slices.size() != o.max_slices;
      ++copies;
    }
  });
  INFO(copies << " copies, rotations " << f.rotations());
  CHECK(copies > 100);
  CHECK(refused == 0);
  CHECK(mismatched == 0);
  CHECK(f.rotations() > 1'000);
}

TEST_CASE("a window of one slice from 2 threads: inserts race with the clearing of the only slot",
          "[concurrent]") {
  // No key outlives its slice here (W - 1 = 0 further openings), so what is checked is the
  // filter's shape and counts; under ThreadSanitizer (build-tsan) also that inserts into
  // the only live slice race with its clearing in place only through atomics.
  constexpr std::uint64_t kPerThread = 40'000;
  Options o;
  o.capacity = 1'000;
  o.false_positive_rate = 0.01;
  o.max_slices = 1;
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  // insert_many, 16 keys a call: insert_group (groups forced without transactions too)
  const std::tuple<bool, bool> mode = GENERATE(table<bool, bool>({{false, false}, {true, false}, {true, true}}));
  const bool batched = std::get<0>(mode), forced = std::get<1>(mode);  // (clang 14 cannot capture bindings)
  const GroupWritesForced groups(forced);
  INFO("layout " << (o.layout == Layout::blocked ? "blocked" : "classic") << (batched ? ", insert_many" : "")
                 << (forced ? ", groups forced" : ""));
  ConcurrentScalableBloomFilter f(o);
  std::uint64_t new_keys[2] = {};
  run_threads(2, [&](unsigned t) {
    std::uint64_t batch[16];
    for (std::uint64_t i = 0; i < kPerThread; ++i) {
      if (!batched) {
        new_keys[t] += f.insert(present_key(i, 300 + t));
      } else if (batch[i % 16] = present_key(i, 300 + t); i % 16 == 15) {  // 16 divides kPerThread
        new_keys[t] += f.insert_many(std::span<const std::uint64_t>(batch));
      }
    }
  });
  INFO("rotations " << f.rotations());
  CHECK(f.slice_count() == 1);
  CHECK(f.rotations() >= 2 * kPerThread / o.capacity / 2);  // a slice takes about 1 200 keys
  // Nearly every key is new (a false positive at <= p says otherwise), and the slice
  // holds the items written since its last clearing: fewer than it takes.
  CHECK(new_keys[0] + new_keys[1] >= 2 * kPerThread * 95 / 100);
  CHECK(f.size() <= 2 * o.capacity);
}

TEST_CASE("after concurrent filling the rate stays under target and slices close at half full",
          "[concurrent]") {
  constexpr unsigned kThreads = 4;
  Options o;
  o.capacity = 10'000;
  o.false_positive_rate = 0.01;
  std::uint64_t per_thread = 0;
  SECTION("growing mode, 20x capacity") { per_thread = 50'000; }
  SECTION("window mode, 20x capacity") {
    o.max_slices = 4;
    per_thread = 50'000;
  }
  ConcurrentScalableBloomFilter f(o);
  run_threads(kThreads, [&](unsigned t) {
    for (std::uint64_t i = 0; i < per_thread; ++i) f.insert(present_key(i, 300 + t));
  });

  const ScalableBloomFilter snapshot = f.to_plain();
  const auto& slices = snapshot.slices();
  REQUIRE(slices.size() >= 4);
  // Every slice but the newest was closed once full: at least half of its cells set
  // (growing mode: counts are exact), and at most the documented overshoot past half.
  for (std::size_t i = 0; i + 1 < slices.size(); ++i) {
    const SliceShape& shape = slices[i].shape();
    const std::uint64_t set = slices[i].cells().set_count();
    INFO("slice " << i << ": " << set << " of " << shape.bits << " cells set");
    CHECK(set <= shape.bits / 2 + overshoot_bound(shape, kThreads));
    if (o.max_slices == 0) CHECK(2 * set >= shape.bits);
  }

  segbloom::test::check_rate_against(f, o.false_positive_rate, snapshot.estimated_false_positive_rate(), 300);
}

TEST_CASE("stats() of the concurrent filter are the plain filter's", "[concurrent]") {
  Options o;
  o.capacity = 2000;
  o.false_positive_rate = 0.01;
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  SECTION("growing mode") {}
  SECTION("window mode") { o.max_slices = 3; }
  ConcurrentScalableBloomFilter f(o);
  ScalableBloomFilter plain(o);
  for (std::uint64_t i = 0; i < 30'000; ++i) {
    f.insert(present_key(i, 40));
    plain.insert(present_key(i, 40));
  }
  const FilterStats mine = f.stats(), theirs = plain.stats();
  CHECK(mine.size == theirs.size);
  CHECK(mine.rotations == theirs.rotations);
  CHECK(mine.memory_bytes == f.memory_bytes());
  CHECK(mine.estimated_false_positive_rate == theirs.estimated_false_positive_rate);
  CHECK(mine.estimated_false_positive_rate == f.estimated_false_positive_rate());
  REQUIRE(mine.slices.size() == theirs.slices.size());
  REQUIRE(mine.slices.size() >= 3);
  for (std::size_t s = 0; s < mine.slices.size(); ++s) {
    const SliceStats& a = mine.slices[s];
    const SliceStats& b = theirs.slices[s];
    INFO("slice " << s);
    CHECK(a.capacity == b.capacity);
    CHECK(a.false_positive_rate == b.false_positive_rate);
    CHECK(a.probes == b.probes);
    CHECK(a.bits == b.bits);
    CHECK(a.items == b.items);
    CHECK(a.set_cells == b.set_cells);
    CHECK(a.fill_ratio == b.fill_ratio);
    CHECK(a.estimated_false_positive_rate == b.estimated_false_positive_rate);
    CHECK(a.memory_bytes >= b.memory_bytes);
  }
}

TEST_CASE("clear() empties the concurrent filter, which then goes on like a new one",
          "[concurrent]") {
  Options o;
  o.capacity = 1000;
  o.false_positive_rate = 0.01;
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  SECTION("growing mode") {}
  SECTION("window mode") { o.max_slices = 4; }
  ConcurrentScalableBloomFilter f(o);
  // Filled from two threads, then cleared once they are joined (clear needs exclusive use).
  run_threads(2, [&f](unsigned t) {
    for (std::uint64_t i = 0; i < 20'000; ++i) f.insert(present_key(i, 60 + t));
  });
  REQUIRE(f.slice_count() > 1);
  f.clear();
  CHECK(f.size() == 0);
  CHECK(f.slice_count() == 1);
  CHECK(f.rotations() == 0);
  CHECK(f.estimated_false_positive_rate() == 0);
  CHECK(f.to_plain() == ScalableBloomFilter(o));
  std::uint64_t found = 0;
  for (std::uint64_t i = 0; i < 20'000; ++i) found += f.contains(present_key(i, 60));
  CHECK(found == 0);  // an empty filter reports nothing
  // Afterwards it takes the same bits as a new plain filter fed the same keys.
  ScalableBloomFilter plain(o);
  std::uint64_t disagreements = 0;
  for (std::uint64_t i = 0; i < 10'000; ++i) {
    disagreements += plain.insert(mixed_key(i, 61)) != f.insert(mixed_key(i, 61));
  }
  CHECK(disagreements == 0);
  CHECK(f.to_plain() == plain);
}

TEST_CASE("writer threads hold distinct counting stripes, given back when they exit", "[concurrent]") {
  using segbloom::detail::stripes_held;
  using segbloom::detail::this_thread_stripe;
  const std::uint32_t before = stripes_held.load();  // this thread may hold one
  // 20 threads one after another: each gives its stripe back on exit, so all take the
  // same one (round-robin dealing would have given 16 different ones).
  std::vector<unsigned> one_by_one;
  for (int t = 0; t < 20; ++t) {
    std::thread([&one_by_one] { one_by_one.push_back(this_thread_stripe()); }).join();
  }
  CHECK(std::all_of(one_by_one.begin(), one_by_one.end(), [&](unsigned s) { return s == one_by_one[0]; }));
  CHECK(stripes_held.load() == before);

  // Live threads: each holds a stripe of its own until it exits. 15 + 2 threads at once
  // (this thread may hold a 16th stripe): the first 16 - (held before) take the free
  // stripes, all different; the others share, and the mask stays full meanwhile.
  constexpr int kLive = 17;
  const int free_before = static_cast<int>(detail::kHeldStripes) - std::popcount(before);
  std::vector<unsigned> live(kLive);
  std::atomic<int> taken{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kLive; ++t) {
    threads.emplace_back([&, t] {
      live[static_cast<std::size_t>(t)] = this_thread_stripe();
      taken.fetch_add(1);
      while (!done.load()) std::this_thread::yield();  // hold the stripe until checked
    });
    while (taken.load() < t + 1) std::this_thread::yield();  // one at a time: a known order
  }
  const std::uint32_t while_live = stripes_held.load();
  done = true;
  for (std::thread& t : threads) t.join();
  std::vector<unsigned> owners(live.begin(), live.begin() + free_before);
  std::sort(owners.begin(), owners.end());
  CHECK(std::adjacent_find(owners.begin(), owners.end()) == owners.end());
  for (unsigned s : owners) CHECK((before >> s & 1u) == 0);  // free ones, not this thread's
  for (unsigned s : owners) CHECK(s < detail::kHeldStripes);
  // The others share: never a held stripe, whose thread counts without atomic adds.
  for (std::size_t t = static_cast<std::size_t>(free_before); t < live.size(); ++t) {
    CHECK(live[t] >= detail::kHeldStripes);
    CHECK(live[t] < detail::kCountStripes);
  }
  CHECK(while_live == (std::uint32_t{1} << detail::kHeldStripes) - 1);
  CHECK(stripes_held.load() == before);  // all given back
}

namespace {

// A one-slice filter's counts after threads wrote it: the set cells its stripes and shared
// counter add up to must be its words' popcount, and its items the inserts that returned
// true. (Exact once the writers are done; no slice opened, no clear() raced.)
void check_counts_exact(const ConcurrentScalableBloomFilter& f, std::uint64_t written) {
  const FilterStats stats = f.stats();
  REQUIRE(stats.slices.size() == 1);
  const ScalableBloomFilter plain = f.to_plain();  // its cells recounted from the words
  CHECK(stats.slices[0].set_cells == plain.slices()[0].cells().set_count());
  CHECK(stats.slices[0].items == written);
}

Options counted_options() {
  Options o;
  o.capacity = 2'000'000;
  o.false_positive_rate = 0.01;
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  return o;
}

}  // namespace

TEST_CASE("48 writer threads at once, on held and on shared stripes, lose no count", "[concurrent]") {
  // Held stripes count with a plain load and store, shared ones with atomic adds; either
  // way a slice's counts must match its bits and the inserts that wrote. 48 threads alive
  // at once: at most 16 hold a stripe, and the 32 or more others share the 16 shared
  // stripes, two or more to one.
  constexpr unsigned kThreads = 48;
  constexpr std::uint64_t kPerThread = 10'000;
  ConcurrentScalableBloomFilter f(counted_options());
  std::atomic<std::uint64_t> written{0};
  std::atomic<unsigned> ready{0};
  std::vector<unsigned> stripes(kThreads);
  run_threads(kThreads, [&](unsigned t) {
    stripes[t] = detail::this_thread_stripe();
    ready.fetch_add(1);
    while (ready.load() < kThreads) std::this_thread::yield();  // all alive before any writes
    std::uint64_t mine = 0;
    for (std::uint64_t i = 0; i < kPerThread; ++i) mine += f.insert(present_key(i, 700 + t));
    written.fetch_add(mine);
  });
  std::vector<unsigned> shared;
  for (unsigned s : stripes) {
    if (s >= detail::kHeldStripes) shared.push_back(s);
  }
  std::sort(shared.begin(), shared.end());
  REQUIRE(shared.size() >= kThreads - detail::kHeldStripes);
  REQUIRE(std::adjacent_find(shared.begin(), shared.end()) != shared.end());  // some shared by two
  check_counts_exact(f, written.load());
  CHECK(written.load() > kThreads * kPerThread * 99 / 100);
}

TEST_CASE("4 writer threads through insert_many lose no key and no count", "[concurrent][batch]") {
  // insert_many prefetches the newest slice's lines while other writers live
  // (detail::other_writer_threads) even where the slice is too small to be worth it alone
  // (here about 300 KB, under any L2 and kPrefetchMinBytes): 4 writers at once, in calls of
  // 1000 keys, into one slice; every key found after, and the slice's counts its bits.
  constexpr unsigned kThreads = 4;
  constexpr std::uint64_t kPerThread = 50'000;
  Options o;
  o.capacity = 250'000;  // 200 000 keys: one slice, not yet full
  o.false_positive_rate = 0.01;
  o.layout = GENERATE(Layout::classic, Layout::blocked);
  const bool forced = GENERATE(false, true);  // groups without transactions (GroupWritesForced)
  const GroupWritesForced groups(forced);
  INFO("layout " << (o.layout == Layout::blocked ? "blocked" : "classic") << (forced ? ", groups forced" : ""));
  ConcurrentScalableBloomFilter f(o);
  REQUIRE(f.memory_bytes() < std::size_t{1} << 20);
  std::atomic<std::uint64_t> written{0};
  std::atomic<unsigned> ready{0};
  std::atomic<unsigned> saw_others{0};
  run_threads(kThreads, [&](unsigned t) {
    const unsigned stripe = detail::this_thread_stripe();
    ready.fetch_add(1);
    while (ready.load() < kThreads) std::this_thread::yield();  // all hold a stripe
    saw_others.fetch_add(detail::other_writer_threads(stripe));
    std::vector<std::uint64_t> keys(1000);
    std::uint64_t mine = 0;
    for (std::uint64_t start = 0; start < kPerThread; start += keys.size()) {
      for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = present_key(start + i, 950 + t);
      mine += f.insert_many(std::span<const std::uint64_t>(keys));
    }
    written.fetch_add(mine);
  });
  REQUIRE(saw_others.load() == kThreads);  // the prefetch's condition held in every writer
  std::uint64_t misses = 0;
  for (unsigned t = 0; t < kThreads; ++t) {
    for (std::uint64_t i = 0; i < kPerThread; ++i) misses += !f.contains(present_key(i, 950 + t));
  }
  CHECK(misses == 0);
  check_counts_exact(f, written.load());
  CHECK(written.load() > kThreads * kPerThread * 99 / 100);
}

TEST_CASE("other_writer_threads sees another live holder of a stripe, not the caller's own", "[concurrent]") {
  using segbloom::detail::other_writer_threads;
  using segbloom::detail::this_thread_stripe;
  const unsigned own = this_thread_stripe();  // held by this thread from here on
  // Threads of earlier tests have exited and given their stripes back.
  CHECK_FALSE(other_writer_threads(own));
  std::atomic<bool> holding{false}, done{false};
  std::thread other([&] {
    (void)this_thread_stripe();
    holding = true;
    while (!done.load()) std::this_thread::yield();
  });
  while (!holding.load()) std::this_thread::yield();
  CHECK(other_writer_threads(own));
  // A caller on a shared stripe (all 16 held ones taken) counts every held one as another's.
  CHECK(other_writer_threads(detail::kHeldStripes));
  done = true;
  other.join();
  CHECK_FALSE(other_writer_threads(own));  // given back as it exited
}

TEST_CASE("writer threads in waves pass their held stripes on and lose no count", "[concurrent]") {
  // Each wave's threads exit (giving their stripes back) before the next wave's take them:
  // a new holder goes on from the count the last one left (release and acquire on the held
  // mask). One thread per wave then inserts again from a thread_local's destructor, after
  // its stripe went back: that goes to a shared stripe.
  constexpr unsigned kWaves = 4;
  constexpr unsigned kPerWave = 6;
  constexpr std::uint64_t kPerThread = 5'000;
  ConcurrentScalableBloomFilter f(counted_options());
  std::atomic<std::uint64_t> written{0};
  std::vector<unsigned> first_stripes;
  struct LateInsert {  // inserts one more key as its thread exits
    ConcurrentScalableBloomFilter* filter = nullptr;
    std::atomic<std::uint64_t>* written = nullptr;
    std::uint64_t key = 0;
    ~LateInsert() {
      if (filter != nullptr) written->fetch_add(filter->insert(key));
    }
  };
  for (unsigned wave = 0; wave < kWaves; ++wave) {
    std::vector<unsigned> stripes(kPerWave);
    std::atomic<unsigned> claimed{0};
    run_threads(kPerWave, [&, wave](unsigned t) {
      if (t == 0) {
        // Constructed before the thread's first insert claims a stripe, so destroyed after
        // the stripe's StripeRelease: its insert finds the stripe given back.
        thread_local LateInsert late;
        late.filter = &f;
        late.written = &written;
        late.key = present_key(wave, 900);
      }
      stripes[t] = detail::this_thread_stripe();
      claimed.fetch_add(1);
      while (claimed.load() < kPerWave) std::this_thread::yield();  // all hold one: 6 different ones
      std::uint64_t mine = 0;
      for (std::uint64_t i = 0; i < kPerThread; ++i) mine += f.insert(present_key(i, 800 + wave * kPerWave + t));
      written.fetch_add(mine);
    });
    for (unsigned s : stripes) CHECK(s < detail::kHeldStripes);
    std::sort(stripes.begin(), stripes.end());
    CHECK(std::adjacent_find(stripes.begin(), stripes.end()) == stripes.end());
    if (wave == 0) {
      first_stripes = stripes;
    } else {
      CHECK(stripes == first_stripes);  // the same (lowest free) stripes, passed on
    }
  }
  check_counts_exact(f, written.load());
  CHECK(written.load() > kWaves * kPerWave * kPerThread * 99 / 100);
}
