// Allocation failures, every one in turn: an operation runs again and again on a fresh
// object, its 1st, 2nd, ... allocation failing (failing_new.hpp), until it runs without
// reaching the failing one. After each run the object is checked against what the
// operation promises when it throws std::bad_alloc: nothing lost, nothing half done, and
// the object usable afterwards. (AddressSanitizer's leak check, in the sanitized builds,
// adds: nothing leaked on the way out.)
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "failing_new.hpp"
#include "segbloom/memory_backend.hpp"
#include "segbloom/seen_store.hpp"
#include "segbloom/segbloom.hpp"
#include "support/read_string.hpp"

using namespace segbloom;
using segbloom::test::FailNthAllocation;
using segbloom::test::read_string;

namespace {

// The failure points an operation was tried at: all its allocations, and of those the
// ones through posix_memalign (cell arrays).
struct Points {
  std::uint64_t all = 0;
  std::uint64_t aligned = 0;
};

// Runs op(state) on make()'s fresh state with its n-th allocation failing, for n = 1, 2, ...
// until op makes fewer than n; check(state, threw) after each run. Returns the allocations
// op made when none failed (the failure points tried).
template <class Make, class Op, class Check>
Points fail_each_allocation(Make make, Op op, Check check) {
  for (std::uint64_t n = 1; n <= 100000; ++n) {
    auto state = make();
    bool threw = false;
    Points made;
    {
      FailNthAllocation failing(n);
      try {
        op(state);
      } catch (const std::bad_alloc&) {
        threw = true;
      }
      made = {failing.allocations(), failing.aligned_allocations()};
    }
    INFO("allocation " << n << " failing" << (threw ? ", std::bad_alloc thrown" : ", caught inside"));
    check(state, threw);
    if (made.all < n) {
      CHECK_FALSE(threw);
      return made;
    }
  }
  FAIL("more than 100 000 allocations");
  return {};
}

// ---- the memory cache in front of a backing store ------------------------------------

// Keys past the strings' inline buffer (15 bytes), so that every copy of one allocates.
std::string user(char c) { return std::string("user-with-a-long-name-") + c; }
const std::vector<std::string> kUsers = {user('0'), user('1'), user('2'), user('3'), user('n'), user('x')};

struct Cache {
  std::shared_ptr<StoreBackend> backing;
  std::shared_ptr<StoreBackend> cache;
  std::map<std::string, std::string> truth;  // what every read returns; absent: "<absent>"
  std::uint64_t k3_version = 0;

  std::string expected(const std::string& key) const {
    const auto it = truth.find(key);
    return it == truth.end() ? "<absent>" : it->second;
  }
};

// Three 900-byte blobs fit a shard: user 0 has been evicted to the backing store, user 1
// is dirty and least recently used (the next eviction writes it back), 2 and 3 are clean.
// Users n and x have never been stored.
Cache make_cache() {
  Cache s;
  s.backing = make_memory_backend({.shards = 1});
  const std::uint64_t entry = user('0').size() + 900 + kEntryOverheadBytes;
  s.cache = make_memory_backend({.byte_budget = 3 * entry, .backing = s.backing, .shards = 1});
  for (char c : {'0', '1', '2', '3'}) {
    REQUIRE(s.cache->write(user(c), std::string(900, c), 0) != 0);
    s.truth[user(c)] = std::string(900, c);
  }
  s.cache->flush();
  std::uint64_t version = 0;
  read_string(*s.cache, user('1'), &version);
  REQUIRE(s.cache->write(user('1'), std::string(900, 'A'), version) != 0);
  s.truth[user('1')] = std::string(900, 'A');
  read_string(*s.cache, user('2'));
  read_string(*s.cache, user('3'), &s.k3_version);
  REQUIRE(s.cache->stats().entries == 3);
  return s;
}

// Every user reads as the truth, from the cache and, once flushed, from the backing
// store; each takes a write at the version it reads; removing them all leaves the cache
// empty with its byte count at zero (a count left short wraps around).
void check_cache(Cache& s) {
  for (const std::string& key : kUsers) CHECK(read_string(*s.cache, key) == s.expected(key));
  s.cache->flush();
  for (const std::string& key : kUsers) CHECK(read_string(*s.backing, key) == s.expected(key));
  for (const std::string& key : kUsers) {
    std::uint64_t version = 0;
    read_string(*s.cache, key, &version);
    CHECK(s.cache->write(key, "again", version) != 0);
  }
  for (const std::string& key : kUsers) s.cache->remove(key);
  const BackendStats stats = s.cache->stats();
  CHECK(stats.entries == 0);
  CHECK(stats.bytes == 0);
  CHECK(s.backing->stats().entries == 0);
}

}  // namespace

TEST_CASE("allocation failures: a memory cache's write of a new user (with an eviction's write-back)",
          "[allocation]") {
  const auto points = fail_each_allocation(
      make_cache, [](Cache& s) { s.cache->write(user('n'), std::string(900, 'n'), 0); },
      [](Cache& s, bool threw) {
        // An eviction's failed write-back is caught inside (the write happened); only a
        // failure before the write changed anything throws.
        if (!threw) s.truth[user('n')] = std::string(900, 'n');
        check_cache(s);
      });
  CHECK(points.all >= 3);
}

TEST_CASE("allocation failures: a memory cache's write of a cached user", "[allocation]") {
  const auto points = fail_each_allocation(
      make_cache, [](Cache& s) { s.cache->write(user('3'), std::string(900, 'B'), s.k3_version); },
      [](Cache& s, bool threw) {
        if (!threw) s.truth[user('3')] = std::string(900, 'B');
        check_cache(s);
      });
  CHECK(points.all >= 1);
}

TEST_CASE("allocation failures: a memory cache's read that loads (and evicts)", "[allocation]") {
  const auto points = fail_each_allocation(
      make_cache,
      [](Cache& s) {
        std::string seen;
        s.cache->read(user('0'), [&](std::string_view bytes, std::uint64_t) { seen.assign(bytes); });
      },
      [](Cache& s, bool) { check_cache(s); });
  CHECK(points.all >= 3);
}

TEST_CASE("allocation failures: a memory cache's remove() and flush()", "[allocation]") {
  // A user not cached waits in the shard's list of keys in flight during the removal (a
  // copy of its key: an allocation).
  for (const std::string& key : {user('0'), user('x')}) {  // only in the backing store; nowhere
    DYNAMIC_SECTION("remove " << key) {
      const auto points = fail_each_allocation(
          make_cache, [&](Cache& s) { s.cache->remove(key); },
          [&](Cache& s, bool threw) {
            if (!threw) s.truth.erase(key);
            check_cache(s);
          });
      CHECK(points.all >= 1);
    }
  }
  SECTION("flush") {
    const auto points = fail_each_allocation(
        make_cache, [](Cache& s) { s.cache->flush(); }, [](Cache& s, bool) { check_cache(s); });
    CHECK(points.all >= 2);
  }
}

// ---- filters: an insert that opens a slice -------------------------------------------

namespace {

enum class Edge { opens, rotates };

// A filter's state as bytes: its blob (a concurrent filter's through its plain copy).
template <class F>
std::string bytes_of(const F& filter) {
  if constexpr (std::is_same_v<F, ConcurrentScalableBloomFilter>) {
    return to_bytes(filter.to_plain());
  } else {
    return to_bytes(filter);
  }
}

// The first key (0, 1, 2, ...) whose insert opens a new slice of a filter made by make(),
// or rotates its window.
template <class Make>
std::uint64_t first_key_that(Edge edge, Make make) {
  auto filter = make();
  for (std::uint64_t key = 0; key < 10'000'000; ++key) {
    const std::size_t slices = filter->slice_count();
    const std::uint64_t rotations = filter->rotations();
    filter->insert(key);
    if (edge == Edge::opens ? filter->slice_count() != slices : filter->rotations() != rotations) return key;
  }
  FAIL("no such key");
  return 0;
}

// An insert that opens a slice (growing) or reuses one (window) leaves the filter as it was
// when it throws (byte for byte), and holds the key when it returns; every earlier key is
// found either way (but those a rotation forgets), and a later insert succeeds. The
// allocations that fail are the list of slices' (operator new) and the new slice's cells
// (posix_memalign), at least one of each where a slice opens.
template <class F>
void check_insert_at(Edge at, const Options& options) {
  const auto make = [&] { return std::make_unique<F>(options); };
  const std::uint64_t edge = first_key_that(at, make);
  const auto make_full = [&] {
    auto filter = make();
    for (std::uint64_t key = 0; key < edge; ++key) filter->insert(key);
    return filter;
  };
  const std::string before = bytes_of(*make_full());
  const auto points = fail_each_allocation(
      make_full, [&](std::unique_ptr<F>& filter) { filter->insert(edge); },
      [&](std::unique_ptr<F>& filter, bool threw) {
        if (threw) {
          CHECK(bytes_of(*filter) == before);
        } else {
          CHECK(filter->contains(edge));
        }
        std::uint64_t lost = 0;
        const std::uint64_t first = at == Edge::opens ? 0 : edge / 2;  // a rotation forgets the oldest slice
        for (std::uint64_t key = first; key < edge; ++key) lost += !filter->contains(key);
        CHECK(lost == 0);
        filter->insert(edge);
        CHECK(filter->contains(edge));
      });
  if (at == Edge::opens) {
    CHECK(points.all > points.aligned);
    CHECK(points.aligned >= 1);
  }
}

}  // namespace

TEST_CASE("allocation failures: an insert that opens a slice leaves the filter as it was", "[allocation]") {
  const Options growing{.capacity = 200, .false_positive_rate = 0.01};
  SECTION("classic") { check_insert_at<ScalableBloomFilter>(Edge::opens, growing); }
  SECTION("blocked") {
    Options blocked = growing;
    blocked.layout = Layout::blocked;
    check_insert_at<ScalableBloomFilter>(Edge::opens, blocked);
  }
  SECTION("counting") { check_insert_at<CountingBloomFilter>(Edge::opens, growing); }
  SECTION("LevelDB-compatible") { check_insert_at<LevelDbCompatibleFilter>(Edge::opens, growing); }
  SECTION("window") {
    Options window = growing;
    window.max_slices = 4;
    check_insert_at<ScalableBloomFilter>(Edge::opens, window);
    // Reusing the oldest slice clears it in place: it may allocate nothing.
    check_insert_at<ScalableBloomFilter>(Edge::rotates, window);
  }
  SECTION("concurrent") {
    check_insert_at<ConcurrentScalableBloomFilter>(Edge::opens, growing);
    Options blocked = growing;
    blocked.layout = Layout::blocked;
    check_insert_at<ConcurrentScalableBloomFilter>(Edge::opens, blocked);
  }
}

TEST_CASE("allocation failures: insert_many across slices it opens loses no key", "[allocation]") {
  // A batch is not one insert: the keys before a failing slice stay inserted. What it
  // promises is each insert's: every key either in or not, none of the earlier lost, and
  // the filter whole (its blob loads to the same filter) and usable.
  const Options options{.capacity = 200, .false_positive_rate = 0.01};
  std::vector<std::uint64_t> earlier(300), batch(1000);
  std::iota(earlier.begin(), earlier.end(), 0);
  std::iota(batch.begin(), batch.end(), 1'000'000);
  const auto points = fail_each_allocation(
      [&] {
        auto filter = std::make_unique<ScalableBloomFilter>(options);
        filter->insert_many(std::span<const std::uint64_t>(earlier));
        return filter;
      },
      [&](std::unique_ptr<ScalableBloomFilter>& filter) { filter->insert_many(std::span<const std::uint64_t>(batch)); },
      [&](std::unique_ptr<ScalableBloomFilter>& filter, bool threw) {
        std::uint64_t lost = 0, batch_found = 0;
        for (const std::uint64_t key : earlier) lost += !filter->contains(key);
        for (const std::uint64_t key : batch) batch_found += filter->contains(key);
        CHECK(lost == 0);
        if (!threw) CHECK(batch_found == batch.size());
        CHECK(from_bytes<ScalableBloomFilter>(to_bytes(*filter)) == *filter);
        filter->insert_many(std::span<const std::uint64_t>(batch));
        for (const std::uint64_t key : batch) lost += !filter->contains(key);
        CHECK(lost == 0);
      });
  CHECK(points.aligned >= 1);  // the cells of each slice it opens
}

TEST_CASE("allocation failures: loading a blob throws std::bad_alloc or loads it whole", "[allocation]") {
  ScalableBloomFilter filter(Options{.capacity = 100, .false_positive_rate = 0.01});
  for (std::uint64_t key = 0; key < 1000; ++key) filter.insert(key);
  REQUIRE(filter.slice_count() > 3);
  const std::string blob = to_bytes(filter);
  const auto points = fail_each_allocation(
      [] { return std::optional<ScalableBloomFilter>(); },
      [&](std::optional<ScalableBloomFilter>& loaded) { loaded.emplace(from_bytes<ScalableBloomFilter>(blob)); },
      [&](std::optional<ScalableBloomFilter>& loaded, bool threw) {
        CHECK(loaded.has_value() == !threw);
        if (loaded) CHECK(to_bytes(*loaded) == blob);
      });
  CHECK(points.all >= 4);
  CHECK(points.aligned >= filter.slice_count());  // each slice's cells
}

// ---- the seen-store over the memory cache ---------------------------------------------

namespace {

struct Store {
  std::shared_ptr<StoreBackend> backing = make_memory_backend({.shards = 1});
  std::unique_ptr<SeenStore> store;
};

std::vector<std::uint64_t> items(std::uint64_t first, std::uint64_t count) {
  std::vector<std::uint64_t> out(count);
  std::iota(out.begin(), out.end(), first);
  return out;
}

}  // namespace

TEST_CASE("allocation failures: mark_seen records all the items or none, and loses nothing", "[allocation]") {
  const auto make = [] {
    Store s;
    auto cache = make_memory_backend({.byte_budget = 1 << 20, .backing = s.backing, .shards = 1});
    Options filter = default_seen_filter_options();
    // A window of 8 slices of 200: the first items fill 2, the new ones open more, and
    // marking them again (which moves them to the newest slice) still rotates none out.
    filter.capacity = 1600;
    s.store = std::make_unique<SeenStore>(SeenStoreOptions{.backend = cache, .filter = filter});
    s.store->mark_seen("alice", items(0, 300));
    return s;
  };
  const auto points = fail_each_allocation(
      make, [](Store& s) { s.store->mark_seen("alice", items(1000, 300)); },
      [](Store& s, bool threw) {
        CHECK(s.store->filter_unseen("alice", items(0, 300)).empty());
        const std::size_t unseen = s.store->filter_unseen("alice", items(1000, 300)).size();
        if (threw) {
          CHECK((unseen == 0 || unseen >= 295));  // all or none (a few false positives)
        } else {
          CHECK(unseen == 0);
        }
        s.store->mark_seen("alice", items(1000, 300));
        s.store->flush();
        SeenStore reopened(SeenStoreOptions{.backend = s.backing, .filter = s.store->options().filter});
        CHECK(reopened.filter_unseen("alice", items(0, 300)).empty());
        CHECK(reopened.filter_unseen("alice", items(1000, 300)).empty());
      });
  CHECK(points.all >= 10);
  CHECK(points.aligned >= 1);  // the cells of the slices it opens
}
