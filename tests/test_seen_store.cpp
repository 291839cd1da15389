// SeenStore: per-user filters in a real store. Semantics on every backend, corrupt blobs,
// concurrency (threads; processes through Redis), a SIGKILLed writer, eviction.
#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "segbloom/counting_bloom_filter.hpp"
#include "segbloom/filter_view.hpp"
#include "segbloom/memory_backend.hpp"
#include "segbloom/scalable_bloom_filter.hpp"
#include "segbloom/seen_store.hpp"
#include "segbloom/serialization.hpp"
#include "support/stats.hpp"
#include "support/store_harness.hpp"
#include "support/store_ids.hpp"
#if SEGBLOOM_STORE_HAVE_LEVELDB
#include "segbloom/leveldb_backend.hpp"
#include "support/leveldb_raw.hpp"
#endif
#if SEGBLOOM_STORE_HAVE_REDIS
#include "segbloom/redis_backend.hpp"
#endif

using namespace segbloom;
using segbloom::test::absent_key;
using segbloom::test::binomial_lower;
using segbloom::test::binomial_upper;
using segbloom::test::Child;
using segbloom::test::present_key;
using segbloom::test::TempDir;

namespace {

#if SEGBLOOM_STORE_HAVE_REDIS
std::string unique_prefix(const std::string& test) {
  return "segbloom-test:" + std::to_string(::getpid()) + ":" + test + ":" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ":";
}

// A Redis backend on the tests' server, or null (after a warning) when there is none.
std::shared_ptr<StoreBackend> test_redis(const std::string& test, RedisConfig config = {}) {
  const std::string socket = segbloom::test::redis_socket_for_tests();
  if (socket.empty()) {
    WARN("redis-server not available and SEGBLOOM_REDIS_SOCKET unset: Redis test skipped");
    return nullptr;
  }
  config.unix_socket = socket;
  config.key_prefix = unique_prefix(test);
  return make_redis_backend(config);
}
#endif

// The backends SeenStore is tested on: name and a factory (null when unavailable).
struct BackendCase {
  std::string name;
  std::function<std::shared_ptr<StoreBackend>(const std::string& dir)> make;
};

std::vector<BackendCase> backend_cases() {
  std::vector<BackendCase> cases;
  cases.push_back({"memory", [](const std::string&) { return make_memory_backend(); }});
#if SEGBLOOM_STORE_HAVE_LEVELDB
  cases.push_back({"leveldb", [](const std::string& dir) {
                     return make_leveldb_backend({.path = dir + "/db"});
                   }});
  cases.push_back({"memory+leveldb (tiny budget)", [](const std::string& dir) {
                     return make_memory_backend({.byte_budget = 8 * 1024,
                                                 .backing = make_leveldb_backend({.path = dir + "/db"}),
                                                 .shards = 2});
                   }});
#endif
#if SEGBLOOM_STORE_HAVE_REDIS
  cases.push_back({"redis", [](const std::string&) { return test_redis("semantics"); }});
#endif
  return cases;
}

std::vector<std::uint64_t> keys(std::uint64_t n, std::uint64_t salt, bool present) {
  std::vector<std::uint64_t> out(n);
  for (std::uint64_t i = 0; i < n; ++i) out[i] = present ? present_key(i, salt) : absent_key(i, salt);
  return out;
}

// Writes raw bytes under a user's key, as a corrupted store would hold them.
void overwrite_raw(StoreBackend& backend, const std::string& user, const std::string& bytes) {
  std::uint64_t version = 0;
  backend.read(user, [&](std::string_view, std::uint64_t v) { version = v; });
  REQUIRE(backend.write(user, bytes, version) != 0);
}

std::string raw_bytes(StoreBackend& backend, const std::string& user) {
  std::string out;
  backend.read(user, [&](std::string_view b, std::uint64_t) { out.assign(b); });
  return out;
}

bool is_subsequence(const std::vector<std::uint64_t>& sub, const std::vector<std::uint64_t>& of) {
  std::size_t j = 0;
  for (const std::uint64_t x : of) j += (j < sub.size() && sub[j] == x);
  return j == sub.size();
}

// Same predicate for every store failure checked below: the documented code().
auto has_code(StoreErrc code) {
  return Catch::Predicate<StoreError>([code](const StoreError& e) { return e.code() == code; },
                                      "code() == StoreErrc(" + std::to_string(int(code)) + ")");
}

// The contract of seen_store.hpp on one backend.
void check_semantics(StoreBackend& backend_ref, const std::shared_ptr<StoreBackend>& backend) {
  SeenStore store({.backend = backend});
  const auto seen = keys(2000, 1, true);
  const auto fresh = keys(2000, 1, false);  // never marked

  // A user never written has seen nothing; order and duplicates are kept.
  const std::vector<std::uint64_t> some{seen[3], seen[1], seen[3]};
  CHECK(store.filter_unseen("alice", some) == some);
  CHECK(store.stats().loads == 0);

  store.mark_seen("alice", seen);
  CHECK(store.stats().stores == 1);

  // No false negative: every marked id is reported seen.
  CHECK(store.filter_unseen("alice", seen).empty());
  CHECK(store.stats().loads >= 1);

  // Unmarked ids come back in their order, minus false positives.
  std::vector<std::uint64_t> mixed, fresh_part;
  for (std::size_t i = 0; i < 2000; ++i) {
    mixed.push_back(fresh[i]);
    mixed.push_back(seen[i]);
    fresh_part.push_back(fresh[i]);
  }
  CHECK(is_subsequence(store.filter_unseen("alice", mixed), fresh_part));

  // The answers are exactly those of the stored filter, and its false positives stay
  // within the target and its own estimate (5 % model slack, as check_rate allows).
  // alice's filter (2 000 items, slices of 1 250) estimates ~1.3e-4: 4 * 10^6 never-marked
  // ids expect ~500 hits, so the 6-sigma bounds sit within ~1.4x of the estimate.
  const auto stored = from_bytes<ScalableBloomFilter>(raw_bytes(backend_ref, "alice"));
  constexpr std::uint64_t kChunk = 1'000'000, kChunks = 4;  // chunks keep memory flat
  std::uint64_t false_positives = 0, chunks_agreeing = 0;
  std::vector<std::uint64_t> unseen;  // of the first chunk, for take_unseen below
  for (std::uint64_t c = 0; c < kChunks; ++c) {
    std::vector<std::uint64_t> chunk(kChunk), expected_unseen;
    for (std::uint64_t i = 0; i < kChunk; ++i) {
      chunk[i] = absent_key(c * kChunk + i, 1);
      if (!stored.contains(chunk[i])) expected_unseen.push_back(chunk[i]);
    }
    auto answer = store.filter_unseen("alice", chunk);
    chunks_agreeing += answer == expected_unseen;  // compared here: Catch would print 10^6 ids
    false_positives += kChunk - answer.size();
    if (c == 0) unseen = std::move(answer);
  }
  const std::uint64_t trials = kChunk * kChunks;
  const double estimate = stored.estimated_false_positive_rate();
  INFO("false positives " << false_positives << " of " << trials << ", estimate " << estimate);
  CHECK(chunks_agreeing == kChunks);
  CHECK(estimate <= 0.001);
  CHECK(double(false_positives) <= binomial_upper(trials, 0.001));
  CHECK(double(false_positives) <= binomial_upper(trials, estimate * 1.05));
  CHECK(double(false_positives) >= binomial_lower(trials, estimate * 0.95));

  // Users are separate; a 64-bit user id is the same user as its decimal string.
  CHECK(store.filter_unseen("bob", some) == some);
  store.mark_seen(std::uint64_t{42}, std::span<const std::uint64_t>(seen.data(), 10));
  CHECK(store.filter_unseen("42", std::span<const std::uint64_t>(seen.data(), 10)).empty());

  // String item ids.
  const std::vector<std::string> videos{"v-intro", "v-cats", "v-news"};
  store.mark_seen("carol", std::span<const std::string>(videos.data(), 2));
  CHECK(store.filter_unseen("carol", videos) == std::vector<std::string>{"v-news"});

  // take_unseen: the first `limit` unseen, without duplicates, recorded as seen. The
  // candidates: a seen id, then four ids the filter was just found not to hold (alice
  // has not changed since), the first one twice.
  REQUIRE(unseen.size() >= 4);
  const std::vector<std::uint64_t> candidates{seen[0], unseen[0], unseen[0], unseen[1],
                                              unseen[2], unseen[3]};
  const auto page = store.take_unseen("alice", candidates, 2);
  CHECK(page == std::vector<std::uint64_t>{unseen[0], unseen[1]});
  CHECK(store.filter_unseen("alice", page).empty());
  // The other two, unless the page's two items made one of them a false positive (they
  // do not: the ids are fixed, so this is the same every run).
  const auto rest = store.take_unseen("alice", candidates);
  CHECK(rest == std::vector<std::uint64_t>{unseen[2], unseen[3]});
  CHECK(store.filter_unseen("alice", candidates).empty());  // all taken now
  const std::uint64_t stores_before = store.stats().stores;
  CHECK(store.take_unseen("alice", candidates).empty());
  CHECK(store.stats().stores == stores_before);  // nothing taken, nothing written

  // forget: the user has seen nothing again.
  store.forget("alice");
  CHECK(store.filter_unseen("alice", some) == some);

  // The stored blob is a checked envelope of a ScalableBloomFilter with the options.
  store.flush();
  const std::string blob = raw_bytes(backend_ref, "carol");
  const auto loaded = from_bytes<ScalableBloomFilter>(blob);
  CHECK(loaded.options() == default_seen_filter_options());
  CHECK(loaded.contains(std::string("v-intro")));
}

}  // namespace

TEST_CASE("SeenStore: the contract on every backend", "[store]") {
  for (const BackendCase& c : backend_cases()) {
    DYNAMIC_SECTION(c.name) {
      TempDir dir;
      auto backend = c.make(dir.path());
      if (backend) check_semantics(*backend, backend);
    }
  }
}

TEST_CASE("SeenStore: options are checked", "[store]") {
  CHECK_THROWS_AS(SeenStore({.lock_stripes = 0}), std::invalid_argument);
  CHECK_THROWS_AS(SeenStore({.max_retries = 0}), std::invalid_argument);
  SeenStoreOptions bad;
  bad.filter.false_positive_rate = 2;
  CHECK_THROWS_AS(SeenStore(bad), std::invalid_argument);
  SeenStore defaults;  // a standalone memory backend
  CHECK(defaults.backend().name() == "memory");
  CHECK(defaults.options().filter.max_slices == 8);
}

TEST_CASE("SeenStore: a user's filter keeps the last items of its window", "[store]") {
  SeenStoreOptions options;
  options.filter.capacity = 800;  // small window: slices of 100 items
  SeenStore store(options);
  const auto ids = keys(5000, 7, true);
  for (std::size_t i = 0; i < ids.size(); i += 100) {
    store.mark_seen("dave", std::span<const std::uint64_t>(ids.data() + i, 100));
  }
  // The most recent capacity * (W-1) / W = 700 are always remembered.
  CHECK(store.filter_unseen("dave", std::span<const std::uint64_t>(ids.data() + 4300, 700)).empty());
  // Old ones are forgotten: only false positives (at most the target rate) are reported seen.
  const auto old = store.filter_unseen("dave", std::span<const std::uint64_t>(ids.data(), 1000));
  CHECK(double(old.size()) >= 1000 - binomial_upper(1000, options.filter.false_positive_rate));
}

TEST_CASE("SeenStore: corrupt blobs, policy reset", "[store]") {
  for (const BackendCase& c : backend_cases()) {
    DYNAMIC_SECTION(c.name) {
      TempDir dir;
      auto backend = c.make(dir.path());
      if (!backend) continue;
      SeenStore store({.backend = backend, .on_corrupt = CorruptBlobPolicy::reset});
      const auto ids = keys(100, 3, true);
      store.mark_seen("erin", ids);
      store.mark_seen("frank", ids);

      // One flipped bit in the payload (checksum), and plain garbage.
      std::string blob = raw_bytes(*backend, "erin");
      blob[blob.size() / 2] = static_cast<char>(blob[blob.size() / 2] ^ 0x10);
      overwrite_raw(*backend, "erin", blob);
      overwrite_raw(*backend, "frank", "not a filter");

      // Read path: treated as a new user, counted, and replaced by an empty filter.
      CHECK(store.filter_unseen("erin", ids) == ids);
      CHECK(store.stats().corrupt_blobs == 1);
      CHECK_NOTHROW(from_bytes<ScalableBloomFilter>(raw_bytes(*backend, "erin")));
      CHECK(store.filter_unseen("erin", ids) == ids);  // empty now, not corrupt again
      CHECK(store.stats().corrupt_blobs == 1);

      // Write path: the new items land on an empty filter written over the bad blob.
      store.mark_seen("frank", std::span<const std::uint64_t>(ids.data(), 10));
      CHECK(store.stats().corrupt_blobs == 2);
      CHECK(store.filter_unseen("frank", std::span<const std::uint64_t>(ids.data(), 10)).empty());
      CHECK_NOTHROW(from_bytes<ScalableBloomFilter>(raw_bytes(*backend, "frank")));

      // A valid envelope of another kind is refused as well, on both paths.
      CountingBloomFilter counting(default_seen_filter_options());
      counting.insert_many(std::span<const std::uint64_t>(ids));
      overwrite_raw(*backend, "erin", to_bytes(counting));
      CHECK(store.filter_unseen("erin", ids) == ids);
      CHECK(store.stats().corrupt_blobs == 3);
      overwrite_raw(*backend, "erin", to_bytes(counting));
      store.mark_seen("erin", std::span<const std::uint64_t>(ids.data(), 1));
      CHECK(store.stats().corrupt_blobs == 4);
      CHECK_NOTHROW(from_bytes<ScalableBloomFilter>(raw_bytes(*backend, "erin")));
    }
  }
}

TEST_CASE("SeenStore: corrupt blobs, policy throw", "[store]") {
  for (const BackendCase& c : backend_cases()) {
    DYNAMIC_SECTION(c.name) {
      TempDir dir;
      auto backend = c.make(dir.path());
      if (!backend) continue;
      SeenStore store({.backend = backend, .on_corrupt = CorruptBlobPolicy::throw_error});
      const auto ids = keys(100, 4, true);
      store.mark_seen("gina", ids);
      std::string blob = raw_bytes(*backend, "gina");
      blob.resize(blob.size() - 1);  // truncated
      overwrite_raw(*backend, "gina", blob);

      const auto is_corrupt = Catch::Predicate<StoreError>([](const StoreError& e) {
        return e.code() == StoreErrc::corrupt &&
               std::string(e.what()).find("'gina'") != std::string::npos;
      });
      CHECK_THROWS_MATCHES(store.filter_unseen("gina", ids), StoreError, is_corrupt);
      CHECK_THROWS_MATCHES(store.mark_seen("gina", ids), StoreError, is_corrupt);
      CHECK_THROWS_MATCHES(store.take_unseen("gina", ids, 1), StoreError, is_corrupt);
      CHECK(store.stats().corrupt_blobs == 3);
      CHECK(raw_bytes(*backend, "gina") == blob);  // left as it was, for inspection
      // Other users are unaffected; forget() clears the bad one.
      store.mark_seen("hank", ids);
      CHECK(store.filter_unseen("hank", ids).empty());
      store.forget("gina");
      CHECK(store.filter_unseen("gina", ids) == ids);
    }
  }
}

namespace {

// A backend that passes everything to another, except that before the first
// compare-and-set of a key it runs `interleave` (another writer's update, landing
// between this writer's read and write). Makes a conflict happen deterministically.
class InterleavingBackend final : public StoreBackend {
 public:
  InterleavingBackend(std::shared_ptr<StoreBackend> inner, std::function<void()> interleave)
      : inner_(std::move(inner)), interleave_(std::move(interleave)) {}
  bool read(std::string_view key, Visitor visit) override { return inner_->read(key, visit); }
  std::uint64_t write(std::string_view key, std::string_view bytes, std::uint64_t expected) override {
    if (interleave_) std::exchange(interleave_, nullptr)();
    return inner_->write(key, bytes, expected);
  }
  void remove(std::string_view key) override { inner_->remove(key); }
  BackendStats stats() const override { return inner_->stats(); }
  std::string name() const override { return "interleaving+" + inner_->name(); }

 private:
  std::shared_ptr<StoreBackend> inner_;
  std::function<void()> interleave_;
};

// A backend that passes everything to another, each compare-and-set after a pause of
// `pause`: the thread sleeps between its read and its write, so the other threads run
// inside that window even when the machine is busy and they would otherwise run one
// after the other within a time slice (with the memory backend a whole round of writes
// takes microseconds).
class PausingWrites final : public StoreBackend {
 public:
  PausingWrites(std::shared_ptr<StoreBackend> inner, std::chrono::microseconds pause)
      : inner_(std::move(inner)), pause_(pause) {}
  bool read(std::string_view key, Visitor visit) override { return inner_->read(key, visit); }
  std::uint64_t write(std::string_view key, std::string_view bytes, std::uint64_t expected) override {
    std::this_thread::sleep_for(pause_);
    return inner_->write(key, bytes, expected);
  }
  void remove(std::string_view key) override { inner_->remove(key); }
  BackendStats stats() const override { return inner_->stats(); }
  std::string name() const override { return "pausing+" + inner_->name(); }

 private:
  std::shared_ptr<StoreBackend> inner_;
  std::chrono::microseconds pause_;
};

}  // namespace

TEST_CASE("SeenStore: a write that lost the race is retried, nothing is lost", "[store]") {
  for (const BackendCase& c : backend_cases()) {
    DYNAMIC_SECTION(c.name) {
      TempDir dir;
      auto shared = c.make(dir.path());
      if (!shared) continue;
      // Two stores (two "servers") on one backend; B's update lands inside A's.
      SeenStore b({.backend = shared});
      const auto ids_a = keys(50, 5, true);
      const auto ids_b = keys(50, 6, true);
      b.mark_seen("ivy", std::span<const std::uint64_t>(ids_b.data(), 1));  // ivy exists
      auto racing = std::make_shared<InterleavingBackend>(shared, [&] { b.mark_seen("ivy", ids_b); });
      SeenStore a({.backend = racing});
      a.mark_seen("ivy", ids_a);
      CHECK(a.stats().conflicts_retried == 1);
      CHECK(a.stats().stores == 1);
      CHECK(a.filter_unseen("ivy", ids_a).empty());
      CHECK(a.filter_unseen("ivy", ids_b).empty());  // B's update survived A's write
    }
  }
}

TEST_CASE("SeenStore: a corrupt blob met only by a write's retry is counted under either policy",
          "[store]") {
  // The first attempt reads a valid blob; before its compare-and-set another writer stores
  // garbage, so the retry meets the corrupt blob. Until 4 Dec 2026 only the first attempt
  // counted corruption: the reset (or the StoreErrc::corrupt thrown) went uncounted.
  for (const BackendCase& c : backend_cases()) {
    for (const CorruptBlobPolicy policy : {CorruptBlobPolicy::reset, CorruptBlobPolicy::throw_error}) {
      const bool reset = policy == CorruptBlobPolicy::reset;
      DYNAMIC_SECTION(c.name << (reset ? ", reset" : ", throw")) {
        TempDir dir;
        auto shared = c.make(dir.path());
        if (!shared) continue;
        const auto old_ids = keys(20, 7, true);
        const auto new_ids = keys(5, 8, true);
        SeenStore({.backend = shared}).mark_seen("jade", old_ids);
        auto racing = std::make_shared<InterleavingBackend>(
            shared, [&] { overwrite_raw(*shared, "jade", "garbage from a broken writer"); });
        SeenStore store({.backend = racing, .on_corrupt = policy});
        if (reset) {
          store.mark_seen("jade", new_ids);
          CHECK(store.filter_unseen("jade", new_ids).empty());
          CHECK(store.filter_unseen("jade", old_ids) == old_ids);  // the history went with the blob
        } else {
          CHECK_THROWS_MATCHES(store.mark_seen("jade", new_ids), StoreError, has_code(StoreErrc::corrupt));
          CHECK(raw_bytes(*shared, "jade") == "garbage from a broken writer");  // left for inspection
        }
        CHECK(store.stats().conflicts_retried == 1);
        CHECK(store.stats().corrupt_blobs == 1);
      }
    }
  }
}

TEST_CASE("SeenStore: writers that always lose give up with StoreErrc::conflict", "[store]") {
  auto shared = make_memory_backend();
  SeenStore other({.backend = shared});
  other.mark_seen("jack", keys(1, 8, true));
  // Every write of `a` is preceded by one from `other`.
  class AlwaysInterleaving final : public StoreBackend {
   public:
    AlwaysInterleaving(std::shared_ptr<StoreBackend> inner, SeenStore& other)
        : inner_(std::move(inner)), other_(other) {}
    bool read(std::string_view key, Visitor visit) override { return inner_->read(key, visit); }
    std::uint64_t write(std::string_view key, std::string_view bytes, std::uint64_t expected) override {
      other_.mark_seen(std::string(key), keys(1, ++n_, true));
      return inner_->write(key, bytes, expected);
    }
    void remove(std::string_view key) override { inner_->remove(key); }
    BackendStats stats() const override { return inner_->stats(); }
    std::string name() const override { return "always-interleaving"; }

   private:
    std::shared_ptr<StoreBackend> inner_;
    SeenStore& other_;
    std::uint64_t n_ = 100;
  };
  SeenStore a({.backend = std::make_shared<AlwaysInterleaving>(shared, other), .max_retries = 3});
  CHECK_THROWS_MATCHES(a.mark_seen("jack", keys(5, 9, true)), StoreError,
                       Catch::Predicate<StoreError>(
                           [](const StoreError& e) { return e.code() == StoreErrc::conflict; }));
  CHECK(a.stats().conflicts_retried == 2);
}

TEST_CASE("SeenStore: a user's filter that takes no more items is StoreErrc::full and nothing is stored",
          "[store]") {
  // Growing mode, 1 item a slice, no growth: the 65th item would need a 65th slice.
  Options tiny;
  tiny.capacity = 1;
  tiny.growth = 1;
  tiny.max_slices = 0;
  auto backend = make_memory_backend();
  SeenStore store({.backend = backend, .filter = tiny});
  const auto first = keys(40, 21, true);
  store.mark_seen("erin", first);
  CHECK(store.filter_unseen("erin", first).empty());
  const auto more = keys(1000, 22, true);  // more than 64 such slices hold
  const std::string history = raw_bytes(*backend, "erin");
  const std::uint64_t stores_before = store.stats().stores;
  // Until 1 Dec 2026 the filter's std::length_error escaped the store.
  CHECK_THROWS_MATCHES(store.mark_seen("erin", more), StoreError, has_code(StoreErrc::full));
  CHECK_THROWS_MATCHES(store.take_unseen("erin", more, 1000), StoreError, has_code(StoreErrc::full));
  // Nothing was stored: the blob is byte for byte the one before the failed calls.
  CHECK(store.stats().stores == stores_before);
  CHECK(raw_bytes(*backend, "erin") == history);
  CHECK(store.filter_unseen("erin", first).empty());
  // So the ids of `more` reported seen are exactly that filter's false positives, and few.
  const auto stored = from_bytes<ScalableBloomFilter>(history);
  std::uint64_t false_positives = 0;
  for (const auto id : more) false_positives += stored.contains(id);
  const auto unseen_more = store.filter_unseen("erin", more);
  CHECK(unseen_more.size() == more.size() - false_positives);
  CHECK(double(false_positives) <= binomial_upper(more.size(), tiny.false_positive_rate));
}

TEST_CASE("SeenStore: a write whose blob would pass max_blob_bytes is StoreErrc::full and nothing is stored",
          "[store]") {
  // Until 2 Dec 2026 such a blob was stored, and the next read took it for corrupt: under
  // the default policy the user's whole history was reset.
  constexpr std::uint64_t kMaxBlob = 8 << 10;  // the default filter grows a ~2.9 KB slice every 1 250 items
  auto backend = make_memory_backend();
  SeenStore store({.backend = backend, .max_blob_bytes = kMaxBlob});
  const auto ids = keys(5000, 23, true);
  constexpr std::size_t kBatch = 250;
  std::size_t marked = 0;
  bool refused = false;
  while (!refused && marked < ids.size()) {
    const std::span<const std::uint64_t> batch(ids.data() + marked, kBatch);
    const std::string before = raw_bytes(*backend, "kim");
    try {
      store.mark_seen("kim", batch);
      marked += kBatch;
      CHECK(raw_bytes(*backend, "kim").size() <= kMaxBlob);
    } catch (const StoreError& e) {
      CHECK(e.code() == StoreErrc::full);
      CHECK(std::string(e.what()).find("max_blob_bytes") != std::string::npos);
      CHECK(raw_bytes(*backend, "kim") == before);  // nothing stored
      refused = true;
    }
  }
  REQUIRE(refused);
  CHECK(marked >= 2 * 1250);  // two slices fit
  const std::span<const std::uint64_t> next(ids.data() + marked, kBatch);
  CHECK_THROWS_MATCHES(store.take_unseen("kim", next), StoreError, has_code(StoreErrc::full));
  // Everything marked before is still seen, and the stored blob is not corrupt.
  CHECK(store.filter_unseen("kim", std::span<const std::uint64_t>(ids.data(), marked)).empty());
  CHECK(store.stats().corrupt_blobs == 0);
  // A limit that not even a new user's empty filter fits is refused at construction.
  const std::uint64_t empty_filter = to_bytes(ScalableBloomFilter(default_seen_filter_options())).size();
  CHECK_THROWS_AS(SeenStore({.max_blob_bytes = empty_filter - 1}), std::invalid_argument);
  CHECK_NOTHROW(SeenStore({.max_blob_bytes = empty_filter}));
}

TEST_CASE("SeenStore: threads on shared and separate users lose nothing", "[store]") {
  for (const BackendCase& c : backend_cases()) {
    DYNAMIC_SECTION(c.name) {
      TempDir dir;
      auto backend = c.make(dir.path());
      if (!backend) continue;
      SeenStore store({.backend = backend, .lock_stripes = 16});
      constexpr int kThreads = 6, kOps = 60, kUsers = 10;
      std::vector<std::thread> pool;
      for (int t = 0; t < kThreads; ++t) {
        pool.emplace_back([&, t] {
          for (int i = 0; i < kOps; ++i) {
            const auto op = segbloom::test::MarkOp::make(0, t, i, kUsers);
            if (i % 3 == 0) {
              store.take_unseen(op.user, op.ids);
            } else {
              store.mark_seen(op.user, op.ids);
            }
            store.filter_unseen(op.user + 1, op.ids);  // readers in between
          }
        });
      }
      for (auto& t : pool) t.join();
      for (int t = 0; t < kThreads; ++t) {
        for (int i = 0; i < kOps; ++i) {
          const auto op = segbloom::test::MarkOp::make(0, t, i, kUsers);
          CHECK(store.filter_unseen(op.user, op.ids).empty());
        }
      }
    }
  }
}

TEST_CASE("SeenStore: one store per thread on a shared backend meets conflicts and loses nothing",
          "[store]") {
  // Servers in one process: each thread has its own SeenStore (so no per-user lock is
  // shared) over one backend, and writers of one user race on its compare-and-set. Each
  // write pauses 200 us before it reaches the backend, so the threads' calls overlap on a
  // busy machine too (without it, 40 rounds under load could pass with no conflict: the
  // threads ran one after another). Rounds run until some write has lost a race (or 40
  // rounds), so the retry path is exercised.
  for (const BackendCase& c : backend_cases()) {
    DYNAMIC_SECTION(c.name) {
      TempDir dir;
      auto backend = c.make(dir.path());
      if (!backend) continue;
      constexpr int kThreads = 4, kOps = 40, kUsers = 4;
      const auto pausing = std::make_shared<PausingWrites>(backend, std::chrono::microseconds(200));
      std::vector<std::unique_ptr<SeenStore>> stores;
      for (int t = 0; t < kThreads; ++t) {
        stores.push_back(std::make_unique<SeenStore>(SeenStoreOptions{.backend = pausing}));
      }
      const auto conflicts = [&] {
        std::uint64_t sum = 0;
        for (const auto& store : stores) sum += store->stats().conflicts_retried;
        return sum;
      };
      int rounds = 0;
      while (rounds < 40 && conflicts() == 0) {
        std::vector<std::thread> pool;
        for (int t = 0; t < kThreads; ++t) {
          pool.emplace_back([&, t, round = rounds] {
            for (int i = 0; i < kOps; ++i) {
              const auto op = segbloom::test::MarkOp::make(round, t, i, kUsers);
              if (i % 2 == 0) {
                stores[t]->take_unseen(op.user, op.ids);
              } else {
                stores[t]->mark_seen(op.user, op.ids);
              }
            }
          });
        }
        for (auto& t : pool) t.join();
        ++rounds;
      }
      INFO(rounds << " rounds, " << conflicts() << " writes retried");
      CHECK(conflicts() > 0);
      CHECK(backend->stats().write_conflicts >= conflicts());
      SeenStore reader({.backend = backend});
      for (int round = 0; round < rounds; ++round) {
        for (int t = 0; t < kThreads; ++t) {
          for (int i = 0; i < kOps; ++i) {
            const auto op = segbloom::test::MarkOp::make(round, t, i, kUsers);
            CHECK(reader.filter_unseen(op.user, op.ids).empty());
          }
        }
      }
    }
  }
}

TEST_CASE("SeenStore: eviction far below the working set keeps every history", "[store]") {
  // 400 users of 300 items (a ~3 KB blob each, 1.2 MB in all) through a 32 KB cache.
  auto check_backing = [](const std::shared_ptr<StoreBackend>& backing) {
    constexpr int kUsers = 400;
    constexpr std::uint64_t kBudget = 32 * 1024;
    auto cache = make_memory_backend({.byte_budget = kBudget, .backing = backing, .shards = 4});
    SeenStore store({.backend = cache});
    for (int round = 0; round < 3; ++round) {
      for (int user = 0; user < kUsers; ++user) {
        const auto ids = keys(100, std::uint64_t(user) * 16 + std::uint64_t(round), true);
        store.mark_seen(std::uint64_t(user), ids);
      }
    }
    const SeenStoreStats s = store.stats();
    CHECK(s.users_cached < kUsers / 4);
    CHECK(s.backend.evictions > 0);
    CHECK(s.backend.backing_stores > 0);
    CHECK(s.backend.backing_loads > 0);
    for (int user = 0; user < kUsers; ++user) {
      for (int round = 0; round < 3; ++round) {
        CHECK(store.filter_unseen(std::uint64_t(user),
                                  keys(100, std::uint64_t(user) * 16 + std::uint64_t(round), true))
                  .empty());
      }
    }
    // Everything reaches the backing store at flush.
    store.flush();
    SeenStore direct({.backend = backing});
    int complete = 0;
    std::uint64_t costliest = 0;  // the largest entry: key + blob + kEntryOverheadBytes
    for (int user = 0; user < kUsers; ++user) {
      complete += direct.filter_unseen(std::uint64_t(user), keys(100, std::uint64_t(user) * 16 + 2, true)).empty();
      const std::string key = std::to_string(user);
      costliest = std::max<std::uint64_t>(costliest, key.size() + raw_bytes(*backing, key).size() + kEntryOverheadBytes);
    }
    CHECK(complete == kUsers);
    // The budget: evict() keeps each of the 4 shards within its share (kBudget / 4) unless
    // its newest blob alone is larger, which it then holds alone. Here a blob (~3 KB) is
    // well under the 8 KiB share, so the budget holds with no slack at all.
    REQUIRE(costliest > kEntryOverheadBytes);
    CHECK(s.bytes_held <= 4 * std::max(kBudget / 4, costliest));
  };
  SECTION("backed by memory") { check_backing(make_memory_backend()); }
#if SEGBLOOM_STORE_HAVE_LEVELDB
  SECTION("backed by LevelDB") {
    TempDir dir;
    check_backing(make_leveldb_backend({.path = dir / "db"}));
  }
#endif
#if SEGBLOOM_STORE_HAVE_REDIS
  SECTION("backed by Redis") {
    if (auto redis = test_redis("eviction")) check_backing(redis);
  }
#endif
}

TEST_CASE("SeenStore: standalone memory forgets evicted users, as documented", "[store]") {
  SeenStore store({.backend = make_memory_backend({.byte_budget = 16 * 1024, .shards = 1})});
  const auto ids = keys(10, 11, true);
  for (int user = 0; user < 50; ++user) store.mark_seen(std::uint64_t(user), ids);
  CHECK(store.filter_unseen(std::uint64_t{49}, ids).empty());  // recent: kept
  CHECK(store.filter_unseen(std::uint64_t{0}, ids) == ids);     // evicted: forgotten
}

#if SEGBLOOM_STORE_HAVE_LEVELDB
TEST_CASE("SeenStore on LevelDB: histories survive reopening", "[store]") {
  TempDir dir;
  const auto ids = keys(1000, 12, true);
  {
    SeenStore store({.backend = make_leveldb_backend({.path = dir / "db"})});
    for (int user = 0; user < 20; ++user) store.mark_seen(std::uint64_t(user), ids);
  }
  SeenStore store({.backend = make_leveldb_backend({.path = dir / "db"})});
  for (int user = 0; user < 20; ++user) CHECK(store.filter_unseen(std::uint64_t(user), ids).empty());
}

TEST_CASE("SeenStore on LevelDB: a value without a version of the backend's is reset as corrupt", "[store]") {
  // A LevelDB value too short for the 8-byte version, or whose version field is 0, was not
  // written by the backend: it reads whole, as foreign, so SeenStore finds it corrupt and
  // handles it by policy, even when a filter follows the 8 bytes (until 4 Dec 2026 a field of
  // 0 read as version 0 of the bytes after it).
  const auto ids = keys(50, 13, true);
  ScalableBloomFilter filter(default_seen_filter_options());
  for (const std::uint64_t id : ids) filter.insert(id);
  const std::vector<std::string> foreign = {"abc", std::string(8, '\0') + "garbage",
                                            std::string(8, '\0') + to_bytes(filter)};
  for (const bool cached : {false, true}) {
    for (const CorruptBlobPolicy policy : {CorruptBlobPolicy::reset, CorruptBlobPolicy::throw_error}) {
      const bool reset = policy == CorruptBlobPolicy::reset;
      DYNAMIC_SECTION((cached ? "memory+leveldb" : "leveldb") << (reset ? ", reset" : ", throw")) {
        TempDir dir;
        std::vector<std::pair<std::string, std::string>> values;
        for (std::size_t i = 0; i < foreign.size(); ++i) {
          values.emplace_back("r" + std::to_string(i), foreign[i]);
          values.emplace_back("w" + std::to_string(i), foreign[i]);
        }
        segbloom::test::put_raw_leveldb(dir / "db", values);
        const auto disk = make_leveldb_backend({.path = dir / "db"});
        const auto backend = cached ? make_memory_backend({.backing = disk}) : disk;
        SeenStore store({.backend = backend, .on_corrupt = policy});
        const std::span<const std::uint64_t> first(ids.data(), 5);
        for (std::size_t i = 0; i < foreign.size(); ++i) {
          INFO("foreign value " << i);
          const std::string reader = "r" + std::to_string(i), writer = "w" + std::to_string(i);
          if (reset) {
            // Read path: a user with no history, whose value is replaced by an empty filter.
            CHECK(store.filter_unseen(reader, ids) == ids);
            CHECK_NOTHROW(from_bytes<ScalableBloomFilter>(raw_bytes(*backend, reader)));
            // Write path: the new items land on an empty filter written over the value.
            store.mark_seen(writer, first);
            CHECK(store.filter_unseen(writer, first).empty());
            CHECK(store.filter_unseen(writer, ids).size() == ids.size() - first.size());
          } else {
            CHECK_THROWS_MATCHES(store.filter_unseen(reader, ids), StoreError, has_code(StoreErrc::corrupt));
            CHECK_THROWS_MATCHES(store.mark_seen(writer, first), StoreError, has_code(StoreErrc::corrupt));
            CHECK(raw_bytes(*backend, writer) == foreign[i]);  // left as it was, for inspection
          }
          CHECK(store.stats().corrupt_blobs == 2 * (i + 1));
        }
        // The cache's resets reach LevelDB: a write-back expecting the foreign version matches.
        store.flush();
        for (std::size_t i = 0; i < foreign.size() && reset; ++i) {
          CHECK_NOTHROW(from_bytes<ScalableBloomFilter>(raw_bytes(*disk, "w" + std::to_string(i))));
        }
      }
    }
  }
}

namespace {

// Starts a crash-writer, SIGKILLs it after `acks` acknowledged batches, and returns the
// batches acknowledged (user -> first ids) in all and before its last flush.
struct CrashRun {
  std::map<int, std::vector<std::uint64_t>> acked, flushed;
  int exit_status = 0;
};

CrashRun crash_writer(const std::string& path, int users, int flush_every, int acks) {
  CrashRun run;
  Child writer({SEGBLOOM_STORE_WORKER, "crash-writer", path, std::to_string(users),
                std::to_string(flush_every)},
               false, true);
  std::map<int, std::vector<std::uint64_t>> pending;  // acked since the last flush
  std::string line;
  int seen = 0;
  auto take = [&](const std::string& l) {
    if (l == "flushed") {
      for (auto& [user, firsts] : pending) {
        run.flushed[user].insert(run.flushed[user].end(), firsts.begin(), firsts.end());
      }
      pending.clear();
      return;
    }
    int user = 0;
    unsigned long long first = 0;
    REQUIRE(std::sscanf(l.c_str(), "ack %d %llu", &user, &first) == 2);
    run.acked[user].push_back(first);
    pending[user].push_back(first);
    ++seen;
  };
  while (seen < acks && writer.read_line(line)) take(line);
  writer.kill(SIGKILL);  // in the middle of its next batch
  run.exit_status = writer.wait();
  while (writer.read_line(line)) take(line);  // acknowledged before it died
  return run;
}

bool batch_seen(SeenStore& store, int user, std::uint64_t first) {
  std::vector<std::uint64_t> batch(segbloom::test::kCrashBatch);
  for (std::size_t j = 0; j < batch.size(); ++j) batch[j] = segbloom::test::crash_id(user, first + j);
  return store.filter_unseen(std::uint64_t(user), batch).empty();
}

}  // namespace

TEST_CASE("SeenStore on LevelDB: a writer killed mid-batch loses no acknowledged batch",
          "[store]") {
  TempDir dir;
  const std::string path = dir / "db";
  const CrashRun run = crash_writer(path, 20, 0, 300);
  CHECK(run.exit_status == 128 + SIGKILL);
  // The store opens, every user's blob loads, and every acknowledged batch is there.
  // (Documented: at most the batch in flight when the process died is missing.)
  auto backend = make_leveldb_backend({.path = path});
  SeenStore store({.backend = backend, .on_corrupt = CorruptBlobPolicy::throw_error});
  for (int user = 0; user < 20; ++user) {
    const std::string blob = raw_bytes(*backend, std::to_string(user));
    REQUIRE(!blob.empty());
    CHECK_NOTHROW(from_bytes<ScalableBloomFilter>(blob));
  }
  std::size_t batches = 0, missing = 0;
  for (const auto& [user, firsts] : run.acked) {
    for (const auto first : firsts) {
      ++batches;
      missing += !batch_seen(store, user, first);
    }
  }
  CHECK(batches >= 300);
  CHECK(missing == 0);
  CHECK(store.stats().corrupt_blobs == 0);
}

TEST_CASE("SeenStore, cache before LevelDB: a killed writer loses at most the unflushed work",
          "[store]") {
  TempDir dir;
  const std::string path = dir / "db";
  const CrashRun run = crash_writer(path, 20, 40, 300);
  CHECK(run.exit_status == 128 + SIGKILL);
  auto backend = make_leveldb_backend({.path = path});
  SeenStore store({.backend = backend, .on_corrupt = CorruptBlobPolicy::throw_error});
  std::size_t flushed = 0, missing = 0;
  for (const auto& [user, firsts] : run.flushed) {
    for (const auto first : firsts) {
      ++flushed;
      missing += !batch_seen(store, user, first);
    }
  }
  CHECK(flushed >= 280);  // 300 acknowledged, flushed every 40
  CHECK(missing == 0);
  for (int user = 0; user < 20; ++user) {  // every stored blob loads
    const std::string blob = raw_bytes(*backend, std::to_string(user));
    if (!blob.empty()) CHECK_NOTHROW(from_bytes<ScalableBloomFilter>(blob));
  }
}
#endif

#if SEGBLOOM_STORE_HAVE_REDIS
TEST_CASE("SeenStore on Redis: 4 threads in each of 2 processes lose no update of 100 users",
          "[store][redis]") {
  const std::string socket = segbloom::test::redis_socket_for_tests();
  if (socket.empty()) {
    WARN("redis-server not available and SEGBLOOM_REDIS_SOCKET unset: skipped");
    return;
  }
  const std::string prefix = unique_prefix("lost-update");
  constexpr int kThreads = 4, kOps = 120, kUsers = 100;
  // Rounds run until the processes' writes have met (a compare-and-set lost to the other
  // process, then retried; a process's own threads share its per-user locks), or 40
  // rounds (one is most often enough; sanitizer builds start processes slower): without a conflict nothing raced, and the test would prove nothing. Round r's
  // processes are writers 2r and 2r + 1.
  std::uint64_t conflicts = 0;
  int rounds = 0;
  while (rounds < 40 && conflicts == 0) {
    std::vector<std::unique_ptr<Child>> workers;
    for (int process = 2 * rounds; process < 2 * rounds + 2; ++process) {
      workers.push_back(std::make_unique<Child>(
          std::vector<std::string>{SEGBLOOM_STORE_WORKER, "redis-marker", socket, prefix,
                                   std::to_string(process), std::to_string(kThreads),
                                   std::to_string(kOps), std::to_string(kUsers)},
          false, true));
    }
    for (auto& w : workers) {
      std::string line;
      REQUIRE(w->read_line(line));
      unsigned long long n = 0;
      REQUIRE(std::sscanf(line.c_str(), "conflicts %llu", &n) == 1);
      conflicts += n;
      CHECK(w->wait() == 0);
    }
    ++rounds;
  }
  INFO(rounds << " round(s), conflicts retried by the processes: " << conflicts);
  CHECK(conflicts > 0);
  RedisConfig config;
  config.unix_socket = socket;
  config.key_prefix = prefix;
  SeenStore store({.backend = make_redis_backend(config), .on_corrupt = CorruptBlobPolicy::throw_error});
  std::size_t marked = 0, missing = 0;
  std::set<std::uint64_t> users;
  for (int process = 0; process < 2 * rounds; ++process) {
    for (int t = 0; t < kThreads; ++t) {
      for (int i = 0; i < kOps; ++i) {
        const auto op = segbloom::test::MarkOp::make(process, t, i, kUsers);
        users.insert(op.user);
        marked += op.ids.size();
        missing += store.filter_unseen(op.user, op.ids).size();
      }
    }
  }
  CHECK(marked == 2u * unsigned(rounds) * kThreads * kOps * segbloom::test::MarkOp::kIds);
  CHECK(users.size() > 90);  // the writers really shared the users
  CHECK(missing == 0);
}

TEST_CASE("SeenStore on Redis: an unreachable server is a StoreError, not a hang", "[store][redis]") {
  TempDir dir;
  RedisConfig config;
  config.unix_socket = dir / "gone.sock";
  config.connect_timeout = std::chrono::milliseconds(100);
  CHECK_THROWS_MATCHES(SeenStore({.backend = make_redis_backend(config)}), StoreError,
                       Catch::Predicate<StoreError>(
                           [](const StoreError& e) { return e.code() == StoreErrc::unavailable; }));
}
#endif
