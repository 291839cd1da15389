// The blob-store backends under SeenStore: the compare-and-set contract on every backend,
// the memory backend's LRU budget and write-back, LevelDB's persistence and lock, and
// Redis against a real redis-server (scripts/test.sh starts one; see store_harness.hpp).
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "segbloom/memory_backend.hpp"
#include "segbloom/store_backend.hpp"
#include "support/read_string.hpp"
#include "support/store_harness.hpp"
#include "support/store_ids.hpp"
#if SEGBLOOM_STORE_HAVE_LEVELDB
#include "support/leveldb_raw.hpp"

#include "segbloom/leveldb_backend.hpp"
#endif
#if SEGBLOOM_STORE_HAVE_REDIS
#include <hiredis/hiredis.h>

#include "../src/store/redis_script.hpp"

#include "segbloom/redis_backend.hpp"
#endif

using namespace segbloom;
using segbloom::test::Child;
using segbloom::test::read_string;
using segbloom::test::TempDir;

namespace {

// Matches a StoreError carrying `code` (the documented failure, not just any StoreError).
auto has_code(StoreErrc code) {
  return Catch::Predicate<StoreError>([code](const StoreError& e) { return e.code() == code; },
                                      "code() == StoreErrc(" + std::to_string(int(code)) + ")");
}

// The memory backend's write-back gives up after this many refused attempts in a row
// (memory_backend.hpp; kWriteBackAttempts, private to src/store/memory_backend.cpp).
constexpr int kWriteBackAttempts = 64;

// The contract of store_backend.hpp, on any backend (a fresh one: its counters start at 0).
void check_compare_and_set(StoreBackend& b) {
  const std::string key = "user-a";
  CHECK(read_string(b, key) == "<absent>");
  CHECK(b.write(key, "x", 12345) == 0);  // absent key: only expected 0 matches

  const std::uint64_t v1 = b.write(key, "first", 0);
  REQUIRE(v1 != 0);
  std::uint64_t seen = 0;
  CHECK(read_string(b, key, &seen) == "first");
  CHECK(seen == v1);

  CHECK(b.write(key, "lost", 0) == 0);  // exists now
  const std::uint64_t v2 = b.write(key, "second", v1);
  REQUIRE(v2 != 0);
  CHECK(v2 != v1);
  CHECK(b.write(key, "stale", v1) == 0);  // a writer still holding v1 loses
  CHECK(read_string(b, key, &seen) == "second");
  CHECK(seen == v2);

  // Binary bytes, including NUL and 0xff, and an empty blob.
  const std::string binary("\0\x01\xff\x80zz\0", 7);
  const std::uint64_t v3 = b.write(key, binary, v2);
  REQUIRE(v3 != 0);
  CHECK(read_string(b, key) == binary);
  const std::uint64_t v4 = b.write("user-empty", "", 0);
  REQUIRE(v4 != 0);
  CHECK(read_string(b, "user-empty").empty());

  b.remove(key);
  CHECK(read_string(b, key) == "<absent>");
  CHECK(b.write(key, "again", v3) == 0);  // removed: the old version is gone
  CHECK(b.write(key, "again", 0) != 0);
  b.remove("never-written");  // no effect, no error
  // The counters saw each call above: 5 stores, and the 4 writes refused on purpose
  // (12345 on an absent key, 0 on an existing one, stale v1, v3 after remove).
  const BackendStats s = b.stats();
  CHECK(s.writes == 5);
  CHECK(s.write_conflicts == 4);
}

// Threads add 1 to counters by read / compare-and-set / retry: no increment is lost.
// Whether the threads' read/write pairs overlap (and so conflict) depends on scheduling,
// so the conflict count is not checked here; check_compare_and_set counts forced ones.
void check_no_lost_increments(StoreBackend& b, int threads, int increments) {
  constexpr int kKeys = 4;
  const std::uint64_t writes_before = b.stats().writes;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < increments; ++i) {
        const std::string key = "counter" + std::to_string((i + t) % kKeys);
        for (;;) {
          std::uint64_t value = 0, version = 0;
          b.read(key, [&](std::string_view bytes, std::uint64_t v) {
            value = std::stoull(std::string(bytes));
            version = v;
          });
          if (b.write(key, std::to_string(value + 1), version) != 0) break;
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  std::uint64_t total = 0;
  for (int k = 0; k < kKeys; ++k) total += std::stoull(read_string(b, "counter" + std::to_string(k)));
  CHECK(total == std::uint64_t(threads) * std::uint64_t(increments));
  // Exactly one stored write per increment: a refused write never counts as stored.
  CHECK(b.stats().writes - writes_before == std::uint64_t(threads) * std::uint64_t(increments));
}

}  // namespace

TEST_CASE("memory backend: compare-and-set contract", "[store][memory-cache]") {
  auto b = make_memory_backend();
  check_compare_and_set(*b);
  check_no_lost_increments(*b, 4, 500);
  CHECK(b->name() == "memory");
}

TEST_CASE("memory backend: options are checked", "[store][memory-cache]") {
  CHECK_THROWS_AS(make_memory_backend({.byte_budget = 0}), std::invalid_argument);
  CHECK_THROWS_AS(make_memory_backend({.shards = 0}), std::invalid_argument);
  CHECK_THROWS_AS(make_memory_backend({.shards = 5000}), std::invalid_argument);
}

TEST_CASE("memory backend standalone: the budget holds and eviction forgets", "[store][memory-cache]") {
  auto b = make_memory_backend({.byte_budget = 16 * 1024, .shards = 1});
  const std::string blob(1000, 'b');
  for (int i = 0; i < 100; ++i) REQUIRE(b->write("k" + std::to_string(i), blob, 0) != 0);
  const BackendStats s = b->stats();
  CHECK(s.bytes <= 16 * 1024);
  CHECK(s.entries < 100);
  CHECK(s.evictions == 100 - s.entries);
  CHECK(read_string(*b, "k99") == blob);      // most recent kept
  CHECK(read_string(*b, "k0") == "<absent>");  // oldest forgotten
}

TEST_CASE("memory backend: least recently used goes first", "[store][memory-cache]") {
  // Budget for 3 entries of this size in one shard.
  const std::string blob(1000, 'c');
  const std::uint64_t cost = 2 + blob.size() + kEntryOverheadBytes;
  auto b = make_memory_backend({.byte_budget = 3 * cost, .shards = 1});
  REQUIRE(b->write("k1", blob, 0) != 0);
  REQUIRE(b->write("k2", blob, 0) != 0);
  REQUIRE(b->write("k3", blob, 0) != 0);
  CHECK(read_string(*b, "k1") == blob);  // k1 is now the most recent; k2 the least
  REQUIRE(b->write("k4", blob, 0) != 0);
  CHECK(read_string(*b, "k2") == "<absent>");
  CHECK(read_string(*b, "k1") == blob);
  CHECK(read_string(*b, "k3") == blob);
  CHECK(read_string(*b, "k4") == blob);
}

TEST_CASE("memory backend in front of another: write-back on eviction and flush", "[store][memory-cache]") {
  auto disk = make_memory_backend({.byte_budget = std::uint64_t{1} << 30});  // stands in for a store
  auto cache = make_memory_backend({.byte_budget = 8 * 1024, .backing = disk, .shards = 2});
  CHECK(cache->name() == "memory+memory");
  std::vector<std::uint64_t> versions(200, 0);
  // Three rounds of updates over a working set 25 times the budget.
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 200; ++i) {
      const std::string key = "u" + std::to_string(i);
      std::uint64_t version = 0;
      std::string value = read_string(*cache, key, &version);
      if (round == 0) {
        CHECK(value == "<absent>");
        version = 0;
      } else {
        CHECK(value == std::string(900, char('a' + round - 1)) + key);
      }
      const std::uint64_t v = cache->write(key, std::string(900, char('a' + round)) + key, version);
      CHECK(v != 0);
    }
  }
  const BackendStats s = cache->stats();
  CHECK(s.bytes <= 8 * 1024);
  CHECK(s.evictions > 0);
  CHECK(s.backing_stores > 0);
  CHECK(s.backing_loads > 0);
  cache->flush();
  for (int i = 0; i < 200; ++i) {  // everything reached the backing store
    const std::string key = "u" + std::to_string(i);
    CHECK(read_string(*disk, key) == std::string(900, 'c') + key);
  }
  // remove() goes through to the backing store.
  cache->remove("u7");
  CHECK(read_string(*disk, "u7") == "<absent>");
  CHECK(read_string(*cache, "u7") == "<absent>");
}

TEST_CASE("memory backend in front of another: writes since flush are what destruction saves",
          "[store][memory-cache]") {
  auto disk = make_memory_backend();
  {
    auto cache = make_memory_backend({.backing = disk});
    REQUIRE(cache->write("k", "cached", 0) != 0);
    CHECK(read_string(*disk, "k") == "<absent>");  // write-back: not there yet
  }
  CHECK(read_string(*disk, "k") == "cached");  // the destructor flushed
}

namespace {

// A backing store whose every write conflicts: it reports a version that it never
// matches (as a store does whose records another program keeps rewriting).
class AlwaysConflicting final : public StoreBackend {
 public:
  bool read(std::string_view, Visitor visit) override {
    ++reads;
    visit("theirs", 7);
    return true;
  }
  std::uint64_t write(std::string_view, std::string_view, std::uint64_t) override {
    ++writes;
    return 0;
  }
  void remove(std::string_view) override {}
  BackendStats stats() const override { return {}; }
  std::string name() const override { return "conflicting"; }
  int reads = 0, writes = 0;
};

}  // namespace

TEST_CASE("memory backend: a write-back that keeps conflicting ends in StoreError and keeps the blob",
          "[store][memory-cache]") {
  auto backing = std::make_shared<AlwaysConflicting>();
  auto cache = make_memory_backend({.byte_budget = std::uint64_t{1} << 20, .backing = backing, .shards = 1});
  std::uint64_t version = 0;
  CHECK(read_string(*cache, "k", &version) == "theirs");
  REQUIRE(cache->write("k", "mine", version) != 0);
  try {
    cache->flush();
    FAIL("flush() returned although every write-back conflicted");
  } catch (const StoreError& e) {
    CHECK(e.code() == StoreErrc::conflict);
    CHECK(std::string(e.what()).find("'k'") != std::string::npos);
  }
  CHECK(backing->writes == kWriteBackAttempts);  // bounded, not an endless loop under the shard's lock
  CHECK(read_string(*cache, "k") == "mine");  // kept in memory, still dirty
  CHECK_THROWS_MATCHES(cache->flush(), StoreError, has_code(StoreErrc::conflict));
  CHECK(backing->writes == 2 * kWriteBackAttempts);
}

TEST_CASE("memory backend: eviction keeps a refused blob and other writes go on", "[store][memory-cache]") {
  auto backing = std::make_shared<AlwaysConflicting>();
  // An entry costs key + 900 + kEntryOverheadBytes, so two never fit: every new key
  // makes the shard try to evict its least recently used blob.
  auto cache = make_memory_backend({.byte_budget = 2 * (900 + kEntryOverheadBytes), .backing = backing, .shards = 1});
  std::uint64_t version = 0;
  REQUIRE(read_string(*cache, "stuck", &version) == "theirs");
  REQUIRE(cache->write("stuck", std::string(900, 's'), version) != 0);
  // New keys push "stuck" out; its write-back is refused, yet none of these calls throws.
  int written = 0;
  for (int i = 0; i < 6; ++i) {
    std::uint64_t v = 0;
    const std::string key = "k" + std::to_string(i);
    read_string(*cache, key, &v);
    written += cache->write(key, std::string(900, 'x'), v) != 0;
  }
  CHECK(written == 6);
  CHECK(read_string(*cache, "stuck") == std::string(900, 's'));  // still in memory, not lost
  // flush() goes through every dirty blob and reports the refusals at the end.
  const int before = backing->writes;
  CHECK_THROWS_MATCHES(cache->flush(), StoreError, has_code(StoreErrc::conflict));
  // Every refused blob is kept dirty (stuck and k0..k5), and flush tried each of the 7
  // the full number of times: the first refusal did not stop it.
  CHECK(cache->stats().entries == 7);
  CHECK(backing->writes - before == 7 * kWriteBackAttempts);
}

namespace {

// A backing store (a standalone memory backend inside) whose writes and removes fail with
// StoreErrc::unavailable while `failing` is set, as a Redis server that went away.
class Failing final : public StoreBackend {
 public:
  bool read(std::string_view key, Visitor visit) override { return inner->read(key, visit); }
  std::uint64_t write(std::string_view key, std::string_view bytes, std::uint64_t expected) override {
    if (failing) throw StoreError(StoreErrc::unavailable, "segbloom: test store unavailable");
    return inner->write(key, bytes, expected);
  }
  void remove(std::string_view key) override {
    if (failing) throw StoreError(StoreErrc::unavailable, "segbloom: test store unavailable");
    inner->remove(key);
  }
  BackendStats stats() const override { return {}; }
  std::string name() const override { return "failing"; }
  std::shared_ptr<StoreBackend> inner = make_memory_backend({.shards = 1});
  bool failing = false;
};

}  // namespace

TEST_CASE("memory backend: a failing write-back of another blob never fails the call that evicts it",
          "[store][memory-cache]") {
  auto backing = std::make_shared<Failing>();
  // Two entries never fit (as above): each new key evicts the least recently used one.
  auto cache = make_memory_backend({.byte_budget = 2 * (900 + kEntryOverheadBytes), .backing = backing, .shards = 1});
  REQUIRE(backing->inner->write("carol", "c", 0) != 0);  // in the backing store only
  REQUIRE(cache->write("bob", std::string(900, 'b'), 0) != 0);  // dirty
  backing->failing = true;
  // Alice's write lands, though evicting bob fails to write him back.
  CHECK(cache->write("alice", std::string(900, 'a'), 0) != 0);
  CHECK(read_string(*cache, "bob") == std::string(900, 'b'));  // kept in memory, dirty
  // So does a read that loads carol from the backing store and evicts dirty alice.
  CHECK(read_string(*cache, "carol") == "c");
  CHECK(read_string(*cache, "alice") == std::string(900, 'a'));
  CHECK_THROWS_MATCHES(cache->flush(), StoreError, has_code(StoreErrc::unavailable));
  // forget() that cannot reach the backing store keeps the unflushed blob.
  CHECK_THROWS_MATCHES(cache->remove("alice"), StoreError, has_code(StoreErrc::unavailable));
  CHECK(read_string(*cache, "alice") == std::string(900, 'a'));
  backing->failing = false;
  cache->flush();
  CHECK(read_string(*backing->inner, "bob") == std::string(900, 'b'));
  CHECK(read_string(*backing->inner, "alice") == std::string(900, 'a'));
  cache->remove("alice");
  CHECK(read_string(*cache, "alice") == "<absent>");
  CHECK(read_string(*backing->inner, "alice") == "<absent>");
}

namespace {

// A backing store that refuses one key with an I/O error (as Redis answers WRONGTYPE for a
// key of another type under the prefix) and takes every other.
class OneBadKey final : public StoreBackend {
 public:
  bool read(std::string_view key, Visitor visit) override { return inner->read(key, visit); }
  std::uint64_t write(std::string_view key, std::string_view bytes, std::uint64_t expected) override {
    if (key == "poison") throw StoreError(StoreErrc::io, "segbloom: test store: WRONGTYPE");
    return inner->write(key, bytes, expected);
  }
  void remove(std::string_view key) override { inner->remove(key); }
  BackendStats stats() const override { return {}; }
  std::string name() const override { return "one bad key"; }
  std::shared_ptr<StoreBackend> inner = make_memory_backend({.shards = 1});
};

}  // namespace

// Until 2 Dec 2026 (afternoon) any error ended flush(): the same key failed first every
// time (most recently used first), and the destructor lost the blobs behind it.
TEST_CASE("memory backend: one key's I/O error does not keep flush() from the others", "[store][memory-cache]") {
  auto backing = std::make_shared<OneBadKey>();
  const std::size_t shards = GENERATE(1u, 4u);
  INFO("shards " << shards);
  {
    auto cache = make_memory_backend({.backing = backing, .shards = shards});
    for (const char* key : {"a", "b", "c"}) REQUIRE(cache->write(key, key, 0) != 0);
    REQUIRE(cache->write("poison", "p", 0) != 0);  // most recently used: first in its shard
    CHECK_THROWS_MATCHES(cache->flush(), StoreError, has_code(StoreErrc::io));
    for (const char* key : {"a", "b", "c"}) CHECK(read_string(*backing->inner, key) == key);
    CHECK(read_string(*cache, "poison") == "p");  // still dirty in memory
    REQUIRE(cache->write("d", "d", 0) != 0);
  }  // the destructor's flush writes "d" past the bad key
  CHECK(read_string(*backing->inner, "d") == "d");
  CHECK(read_string(*backing->inner, "poison") == "<absent>");
}

namespace {

// A backing store (a standalone memory backend inside) with a gate: after close(), the
// next call of the kind given (a write unless told) waits at it until open() (3 s at most)
// and then, when it was closed `failing`, throws StoreErrc::unavailable, as a Redis server
// that hangs. Tests see which key waits. Each write takes `latency` first.
class Gated final : public StoreBackend {
 public:
  enum class Call { read, write, remove };
  explicit Gated(std::chrono::microseconds latency = {}) : latency_(latency) {}
  bool read(std::string_view key, Visitor visit) override {
    pass_gate(key, Call::read);
    return inner->read(key, visit);
  }
  std::uint64_t write(std::string_view key, std::string_view bytes, std::uint64_t expected) override {
    std::this_thread::sleep_for(latency_);
    pass_gate(key, Call::write);
    return inner->write(key, bytes, expected);
  }
  void remove(std::string_view key) override {
    pass_gate(key, Call::remove);
    inner->remove(key);
  }
  BackendStats stats() const override { return {}; }
  std::string name() const override { return "gated"; }

  void close(bool failing, Call gated = Call::write) {
    std::lock_guard lock(mutex_);
    closed_ = armed_ = true;
    failing_ = failing;
    gated_ = gated;
  }
  void open() {  // also disarms a gate no call reached
    std::lock_guard lock(mutex_);
    closed_ = armed_ = false;
    changed_.notify_all();
  }
  // The key of the call waiting at the gate, once one does (empty after 3 s without one).
  std::string waiting_key() {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(3), [&] { return !waiting_key_.empty(); });
    return waiting_key_;
  }
  int writes() {
    std::lock_guard lock(mutex_);
    return writes_;
  }
  int reads() {
    std::lock_guard lock(mutex_);
    return reads_;
  }
  int removes() {
    std::lock_guard lock(mutex_);
    return removes_;
  }

  std::shared_ptr<StoreBackend> inner = make_memory_backend({.shards = 1});

 private:
  void pass_gate(std::string_view key, Call call) {
    std::unique_lock lock(mutex_);
    ++(call == Call::read ? reads_ : call == Call::write ? writes_ : removes_);
    if (!armed_ || gated_ != call) return;
    armed_ = false;
    waiting_key_ = std::string(key);
    changed_.notify_all();
    changed_.wait_for(lock, std::chrono::seconds(3), [&] { return !closed_; });
    waiting_key_.clear();
    if (failing_) throw StoreError(StoreErrc::unavailable, "segbloom: test store hangs");
  }

  const std::chrono::microseconds latency_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool closed_ = false, armed_ = false, failing_ = false;
  Call gated_ = Call::write;
  std::string waiting_key_;
  int writes_ = 0, reads_ = 0, removes_ = 0;
};

// The key waiting at the gate, which must be `expected`; otherwise the gate is opened and
// `thread` joined before the test fails (a REQUIRE that throws past a joinable thread
// would abort the whole binary).
void require_waiting(Gated& gate, const std::string& expected, std::thread& thread) {
  const std::string waiting = gate.waiting_key();
  if (waiting == expected) return;
  gate.open();
  thread.join();
  FAIL("'" << waiting << "' waits at the gate, not '" << expected << "'");
}

// read_string in another thread, waited for at most `seconds`: nullopt when it has not
// returned by then (its thread is left behind, detached, holding the backend), so that a
// call that would wait for ever fails the test instead of hanging it.
std::optional<std::string> read_within(std::shared_ptr<StoreBackend> backend, const std::string& key, double seconds) {
  auto result = std::make_shared<std::promise<std::string>>();
  std::future<std::string> answer = result->get_future();
  std::thread([backend, key, result] {
    try {
      result->set_value(read_string(*backend, key));
    } catch (...) {
      result->set_exception(std::current_exception());
    }
  }).detach();
  if (answer.wait_for(std::chrono::duration<double>(seconds)) != std::future_status::ready) return std::nullopt;
  return answer.get();
}

// Removes `key` from `cache` in another thread while `gate` (its backing store) hangs the
// removal and then fails it; returns the StoreError's code, none if remove() returned.
// (Asserted here, after the join: Catch2 2.x assertions are not thread-safe.)
std::optional<StoreErrc> remove_failing_at_gate(Gated& gate, StoreBackend& cache, const std::string& key) {
  gate.close(/*failing=*/true, Gated::Call::remove);
  std::optional<StoreErrc> error;
  std::thread remover([&] {
    try {
      cache.remove(key);
    } catch (const StoreError& e) {
      error = e.code();
    }
  });
  const std::string waiting = gate.waiting_key();
  gate.open();
  remover.join();
  REQUIRE(waiting == key);
  return error;
}

// How long `call` takes, in seconds.
template <class F>
double seconds_taken(F&& call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("memory backend: flush() writes back without the shard's lock and stops at a hung store",
          "[store][memory-cache]") {
  // Until 2 Dec 2026 flush() held the shard's lock through every write-back and went on
  // after failures: with a hung store, each cost attempts x timeouts and reads of cached
  // users of the shard waited for all of them (minutes).
  auto backing = std::make_shared<Gated>();
  auto cache = make_memory_backend({.backing = backing, .shards = 1});
  REQUIRE(cache->write("clean", "c", 0) != 0);
  cache->flush();
  for (int i = 0; i < 5; ++i) REQUIRE(cache->write("u" + std::to_string(i), "dirty" + std::to_string(i), 0) != 0);
  const int writes_before = backing->writes();
  backing->close(/*failing=*/true);
  std::thread flusher([&] {
    CHECK_THROWS_MATCHES(cache->flush(), StoreError, has_code(StoreErrc::unavailable));
  });
  const std::string hung = backing->waiting_key();
  REQUIRE(!hung.empty());
  // A cached user of the same shard, clean or the one being written back, reads at once;
  // and the hung user takes a write.
  std::string clean;
  CHECK(seconds_taken([&] { clean = read_string(*cache, "clean"); }) < 1.0);
  CHECK(clean == "c");
  std::uint64_t version = 0, written = 0;
  CHECK(seconds_taken([&] { read_string(*cache, hung, &version); }) < 1.0);
  CHECK(seconds_taken([&] { written = cache->write(hung, "newer", version); }) < 1.0);
  CHECK(written != 0);
  backing->open();
  flusher.join();
  // The first unavailable store stopped the flush: one write-back tried, not five.
  CHECK(backing->writes() - writes_before == 1);
  // Nothing was lost: the next flush writes every dirty user, the hung one as last written.
  cache->flush();
  for (int i = 0; i < 5; ++i) {
    const std::string key = "u" + std::to_string(i);
    CHECK(read_string(*backing->inner, key) == (key == hung ? "newer" : "dirty" + std::to_string(i)));
  }
  CHECK(backing->writes() - writes_before == 1 + 5);
  cache->flush();  // all clean now: nothing written again
  CHECK(backing->writes() - writes_before == 1 + 5);
  CHECK(cache->stats().write_conflicts == 0);
}

TEST_CASE("memory backend: a user written while flush() writes it back stays dirty, once",
          "[store][memory-cache]") {
  auto backing = std::make_shared<Gated>();
  auto cache = make_memory_backend({.backing = backing, .shards = 1});
  for (int i = 0; i < 3; ++i) REQUIRE(cache->write("u" + std::to_string(i), "first", 0) != 0);
  backing->close(/*failing=*/false);
  std::thread flusher([&] { cache->flush(); });
  const std::string hung = backing->waiting_key();
  REQUIRE(!hung.empty());
  std::uint64_t version = 0;
  read_string(*cache, hung, &version);
  REQUIRE(cache->write(hung, "second", version) != 0);
  backing->open();
  flusher.join();
  // The write-back stored the copy it took; the newer blob is still dirty, and the next
  // flush writes it (and only it) over that copy without a conflict.
  CHECK(read_string(*backing->inner, hung) == "first");
  const int writes_before = backing->writes();
  cache->flush();
  CHECK(backing->writes() - writes_before == 1);
  CHECK(read_string(*backing->inner, hung) == "second");
  CHECK(cache->stats().write_conflicts == 0);
  CHECK(cache->stats().backing_stores == 4);
}

TEST_CASE("memory backend: eviction passes over a user flush() is writing back", "[store][memory-cache]") {
  auto backing = std::make_shared<Gated>();
  // An entry costs key + 900 + kEntryOverheadBytes, so two never fit: every new key makes
  // the shard try to evict its least recently used blob.
  auto cache = make_memory_backend({.byte_budget = 2 * (900 + kEntryOverheadBytes), .backing = backing, .shards = 1});
  REQUIRE(cache->write("alice", std::string(900, '1'), 0) != 0);
  backing->close(/*failing=*/false);
  std::thread flusher([&] { cache->flush(); });
  REQUIRE(backing->waiting_key() == "alice");
  std::uint64_t version = 0;
  read_string(*cache, "alice", &version);
  REQUIRE(cache->write("alice", std::string(900, '2'), version) != 0);
  // Bob pushes alice out; had eviction written her back under the copy in flight, that
  // copy, older, would have been written over it (its conflict re-reads, and the cache wins).
  REQUIRE(cache->write("bob", std::string(900, 'b'), 0) != 0);
  backing->open();
  flusher.join();
  CHECK(read_string(*cache, "alice") == std::string(900, '2'));
  cache->flush();
  CHECK(read_string(*backing->inner, "alice") == std::string(900, '2'));
  CHECK(read_string(*backing->inner, "bob") == std::string(900, 'b'));
}

TEST_CASE("memory backend: remove() of a user flush() is writing back waits, and the user stays removed",
          "[store][memory-cache]") {
  auto backing = std::make_shared<Gated>();
  auto cache = make_memory_backend({.backing = backing, .shards = 1});
  REQUIRE(cache->write("alice", "a", 0) != 0);
  backing->close(/*failing=*/false);
  std::thread flusher([&] { cache->flush(); });
  REQUIRE(backing->waiting_key() == "alice");
  std::thread remover([&] { cache->remove("alice"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // remove() would have run by now
  backing->open();
  flusher.join();
  remover.join();
  // Had remove() gone first, the write-back in flight would have stored alice again.
  CHECK(read_string(*backing->inner, "alice") == "<absent>");
  CHECK(read_string(*cache, "alice") == "<absent>");
}

TEST_CASE("memory backend: a miss's load does not hold up the shard's other users", "[store][memory-cache]") {
  // Until 2 Dec 2026 a miss loaded under the shard's lock: with a hung store, every user of
  // the shard waited for the load's timeout.
  auto backing = std::make_shared<Gated>();
  REQUIRE(backing->inner->write("cold", "stored", 0) != 0);
  auto cache = make_memory_backend({.backing = backing, .shards = 1});
  REQUIRE(cache->write("warm", "w", 0) != 0);
  const int reads_before = backing->reads();
  backing->close(/*failing=*/false, Gated::Call::read);
  std::string first, second;
  std::thread loader([&] { first = read_string(*cache, "cold"); });
  REQUIRE(backing->waiting_key() == "cold");
  // A second read of the loading user waits for that load rather than loading again.
  std::atomic<bool> waiter_started{false}, waiter_done{false};
  std::thread waiter([&] {
    waiter_started = true;
    second = read_string(*cache, "cold");
    waiter_done = true;
  });
  while (!waiter_started) std::this_thread::yield();
  std::string warm;
  std::uint64_t version = 0;
  CHECK(seconds_taken([&] { warm = read_string(*cache, "warm", &version); }) < 1.0);
  CHECK(warm == "w");
  CHECK(seconds_taken([&] { CHECK(cache->write("warm", "w2", version) != 0); }) < 1.0);
  CHECK(seconds_taken([&] { CHECK(cache->write("new", "n", 0) != 0); }) < 1.0);  // a miss the store lacks
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the waiter would have loaded by now
  const int reads_while_loading = backing->reads();
  CHECK_FALSE(waiter_done);  // still waiting for the load at the gate
  backing->open();
  loader.join();
  waiter.join();
  CHECK(first == "stored");
  CHECK(second == "stored");
  CHECK(reads_while_loading - reads_before == 2);  // "cold" once and "new"
  CHECK(cache->stats().backing_loads == 1);
  cache->flush();
  CHECK(read_string(*backing->inner, "warm") == "w2");
}

TEST_CASE("memory backend: a failed load leaves the user loadable", "[store][memory-cache]") {
  auto backing = std::make_shared<Gated>();
  REQUIRE(backing->inner->write("cold", "stored", 0) != 0);
  auto cache = make_memory_backend({.backing = backing, .shards = 1});
  backing->close(/*failing=*/true, Gated::Call::read);
  std::thread loader([&] { CHECK_THROWS_MATCHES(read_string(*cache, "cold"), StoreError, has_code(StoreErrc::unavailable)); });
  REQUIRE(backing->waiting_key() == "cold");
  backing->open();
  loader.join();
  CHECK(read_string(*cache, "cold") == "stored");
  CHECK(cache->stats().entries == 1);
}

TEST_CASE("memory backend: eviction writes back without the shard's lock", "[store][memory-cache]") {
  // Until 2 Dec 2026 the eviction after a write wrote its dirty victims back under the
  // shard's lock: with a hung store, the shard's cached users waited for the timeout.
  auto backing = std::make_shared<Gated>();
  // An entry costs key + 900 + kEntryOverheadBytes, so two never fit.
  auto cache = make_memory_backend({.byte_budget = 2 * (900 + kEntryOverheadBytes), .backing = backing, .shards = 1});
  REQUIRE(cache->write("alice", std::string(900, '1'), 0) != 0);
  backing->close(/*failing=*/false);
  std::thread writer([&] { CHECK(cache->write("bob", std::string(900, 'b'), 0) != 0); });
  REQUIRE(backing->waiting_key() == "alice");
  // Bob is cached already and alice is still there, being written back: both read at once,
  // and alice takes a write, which keeps her (dirty) in memory.
  std::string bob, alice;
  std::uint64_t version = 0;
  CHECK(seconds_taken([&] { bob = read_string(*cache, "bob"); }) < 1.0);
  CHECK(bob == std::string(900, 'b'));
  CHECK(seconds_taken([&] { alice = read_string(*cache, "alice", &version); }) < 1.0);
  CHECK(alice == std::string(900, '1'));
  CHECK(seconds_taken([&] { CHECK(cache->write("alice", std::string(900, '2'), version) != 0); }) < 1.0);
  backing->open();
  writer.join();
  CHECK(read_string(*backing->inner, "alice") == std::string(900, '1'));  // the copy in flight
  cache->flush();
  CHECK(read_string(*backing->inner, "alice") == std::string(900, '2'));
  CHECK(read_string(*backing->inner, "bob") == std::string(900, 'b'));
  CHECK(cache->stats().write_conflicts == 0);
}

TEST_CASE("memory backend: a read of a cached user never waits for a write-back", "[store][memory-cache]") {
  // A shard left over its budget by a failed write-back: the first version of the unlocked
  // eviction evicted after every read, so each read of a cached user tried the write-back
  // again and waited for the store.
  auto backing = std::make_shared<Gated>();
  auto cache = make_memory_backend({.byte_budget = 2 * (900 + kEntryOverheadBytes), .backing = backing, .shards = 1});
  REQUIRE(cache->write("alice", std::string(900, 'a'), 0) != 0);
  backing->close(/*failing=*/true);
  std::thread writer([&] { CHECK(cache->write("bob", std::string(900, 'b'), 0) != 0); });
  REQUIRE(backing->waiting_key() == "alice");
  backing->open();
  writer.join();
  REQUIRE(cache->stats().entries == 2);  // alice kept, dirty: the shard is over its budget
  backing->close(/*failing=*/true);      // the next write-back would wait 3 s
  std::string alice, bob;
  CHECK(seconds_taken([&] { bob = read_string(*cache, "bob"); }) < 1.0);
  CHECK(seconds_taken([&] { alice = read_string(*cache, "alice"); }) < 1.0);
  CHECK(bob == std::string(900, 'b'));
  CHECK(alice == std::string(900, 'a'));
  backing->open();
  cache->flush();
  CHECK(read_string(*backing->inner, "alice") == std::string(900, 'a'));
  CHECK(read_string(*backing->inner, "bob") == std::string(900, 'b'));
}

TEST_CASE("memory backend: remove() of a user being loaded waits, and the user stays removed",
          "[store][memory-cache]") {
  auto backing = std::make_shared<Gated>();
  REQUIRE(backing->inner->write("cold", "stored", 0) != 0);
  auto cache = make_memory_backend({.backing = backing, .shards = 1});
  backing->close(/*failing=*/false, Gated::Call::read);
  std::thread loader([&] { read_string(*cache, "cold"); });
  REQUIRE(backing->waiting_key() == "cold");
  std::atomic<bool> remover_started{false}, removed{false};
  std::thread remover([&] {
    remover_started = true;
    cache->remove("cold");
    removed = true;
  });
  while (!remover_started) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // remove() would have run by now
  // remove() waits for the load: had it gone first, a load that read the store before the
  // removal would have cached the user again (this gate reads after it, so only the wait
  // shows it).
  CHECK_FALSE(removed);
  backing->open();
  loader.join();
  remover.join();
  CHECK(read_string(*cache, "cold") == "<absent>");
  CHECK(read_string(*backing->inner, "cold") == "<absent>");
}

TEST_CASE("memory backend: remove() does not hold up the shard's other users", "[store][memory-cache]") {
  // Until 2 Dec 2026 remove() called the backing store under the shard's lock: with a hung
  // store, every user of the shard waited for the removal's timeout.
  auto backing = std::make_shared<Gated>();
  auto cache = make_memory_backend({.byte_budget = 2 * (900 + kEntryOverheadBytes), .backing = backing, .shards = 1});
  REQUIRE(cache->write("alice", std::string(900, 'a'), 0) != 0);
  cache->flush();
  std::uint64_t alice_version = 0;
  read_string(*cache, "alice", &alice_version);
  REQUIRE(cache->write("alice", std::string(900, 'A'), alice_version) != 0);  // dirty
  REQUIRE(cache->write("bob", std::string(10, 'b'), 0) != 0);
  const int writes_before = backing->writes();
  backing->close(/*failing=*/false, Gated::Call::remove);
  std::thread remover([&] { cache->remove("alice"); });
  require_waiting(*backing, "alice", remover);
  // Another cached user reads and writes at once; a new user's write evicts past alice
  // (she stays, being removed, rather than being written back under the removal): the
  // one write-back is bob's.
  std::string bob;
  std::uint64_t version = 0;
  CHECK(seconds_taken([&] { bob = read_string(*cache, "bob", &version); }) < 1.0);
  CHECK(bob == std::string(10, 'b'));
  CHECK(seconds_taken([&] { CHECK(cache->write("bob", "b2", version) != 0); }) < 1.0);
  CHECK(seconds_taken([&] { CHECK(cache->write("carol", std::string(900, 'c'), 0) != 0); }) < 1.0);
  CHECK(backing->writes() - writes_before == 1);
  CHECK(read_string(*backing->inner, "bob") == "b2");
  // A read of alice waits for her removal, then finds her gone.
  std::atomic<bool> reader_started{false}, reader_done{false};
  std::string alice_read;
  std::thread reader([&] {
    reader_started = true;
    alice_read = read_string(*cache, "alice");
    reader_done = true;
  });
  while (!reader_started) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the read would have returned by now
  CHECK_FALSE(reader_done);
  backing->open();
  remover.join();
  reader.join();
  CHECK(alice_read == "<absent>");
  cache->flush();
  CHECK(read_string(*backing->inner, "alice") == "<absent>");
  CHECK(read_string(*backing->inner, "bob") == "b2");
  CHECK(read_string(*backing->inner, "carol") == std::string(900, 'c'));
  CHECK(backing->removes() == 1);
}

TEST_CASE("memory backend: a user not cached stays unloaded while being removed", "[store][memory-cache]") {
  // A load during the removal would read the blob the removal is about to delete and cache
  // it again: a user removed from the store but still in memory, written back at eviction.
  auto backing = std::make_shared<Gated>();
  REQUIRE(backing->inner->write("cold", "stored", 0) != 0);
  auto cache = make_memory_backend({.backing = backing, .shards = 1});
  backing->close(/*failing=*/false, Gated::Call::remove);
  std::thread remover([&] { cache->remove("cold"); });
  require_waiting(*backing, "cold", remover);
  std::atomic<bool> reader_started{false}, reader_done{false};
  std::string cold;
  std::thread reader([&] {
    reader_started = true;
    cold = read_string(*cache, "cold");
    reader_done = true;
  });
  while (!reader_started) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the read would have loaded by now
  CHECK_FALSE(reader_done);
  CHECK(backing->reads() == 0);
  backing->open();
  remover.join();
  reader.join();
  CHECK(cold == "<absent>");
  CHECK(cache->stats().entries == 0);
  cache->flush();
  CHECK(read_string(*backing->inner, "cold") == "<absent>");
}

TEST_CASE("memory backend: a failed remove() leaves the user as they were", "[store][memory-cache]") {
  auto backing = std::make_shared<Gated>();
  auto cache = make_memory_backend({.backing = backing, .shards = 1});
  REQUIRE(cache->write("alice", "a", 0) != 0);
  cache->flush();
  std::uint64_t version = 0;
  read_string(*cache, "alice", &version);
  const std::uint64_t written = cache->write("alice", "a2", version);  // dirty
  REQUIRE(written != 0);
  CHECK(remove_failing_at_gate(*backing, *cache, "alice") == StoreErrc::unavailable);
  // Had the failure left alice marked, this read would wait for ever.
  CHECK(read_within(cache, "alice", 3.0) == "a2");
  std::uint64_t after = 0;
  CHECK(read_string(*cache, "alice", &after) == "a2");
  CHECK(after == written);
  CHECK(cache->write("alice", "a3", after) != 0);  // and usable: the next write expects that version
  cache->flush();
  CHECK(read_string(*backing->inner, "alice") == "a3");
  cache->remove("alice");
  CHECK(read_string(*cache, "alice") == "<absent>");
  CHECK(read_string(*backing->inner, "alice") == "<absent>");
}

TEST_CASE("memory backend: a failed remove() of a user not cached leaves them loadable", "[store][memory-cache]") {
  auto backing = std::make_shared<Gated>();
  REQUIRE(backing->inner->write("cold", "stored", 0) != 0);
  auto cache = make_memory_backend({.backing = backing, .shards = 1});
  CHECK(remove_failing_at_gate(*backing, *cache, "cold") == StoreErrc::unavailable);
  // Had the failure left the key marked in flight, this read would wait for ever.
  CHECK(read_within(cache, "cold", 3.0) == "stored");
}

TEST_CASE("memory backend: flush() waits for the removal of a dirty user and does not store them again",
          "[store][memory-cache]") {
  auto backing = std::make_shared<Gated>();
  auto cache = make_memory_backend({.backing = backing, .shards = 1});
  REQUIRE(cache->write("alice", "a", 0) != 0);  // dirty, never written back
  backing->close(/*failing=*/false, Gated::Call::remove);
  std::thread remover([&] { cache->remove("alice"); });
  const std::string waiting = backing->waiting_key();
  const int writes_before = backing->writes();
  std::atomic<bool> flush_started{false}, flushed{false};
  std::thread flusher([&] {
    flush_started = true;
    cache->flush();
    flushed = true;
  });
  while (!flush_started) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the flush would have written alice by now
  const bool flushed_during_removal = flushed;
  const int writes_during_removal = backing->writes() - writes_before;
  backing->open();
  remover.join();
  flusher.join();
  REQUIRE(waiting == "alice");
  CHECK_FALSE(flushed_during_removal);
  CHECK(writes_during_removal == 0);
  // A write-back under the removal would have stored alice again after it (the gate is
  // before the inner store's removal, so only the counts above show it) or, racing the
  // drop, written from an entry freed under it.
  CHECK(backing->writes() == writes_before);
  CHECK(read_string(*backing->inner, "alice") == "<absent>");
  CHECK(read_string(*cache, "alice") == "<absent>");
}

TEST_CASE("memory backend: flush() racing writers, evictions and removes loses nothing", "[store][memory-cache]") {
  // Each thread owns its keys, so the last value it wrote (or its removal) is the truth:
  // what its every read returns, and what the backing store holds after the final flush.
  // The budget keeps about twenty blobs of the 48 keys: evictions write back and reload
  // all the time.
  auto backing = std::make_shared<Gated>(std::chrono::microseconds(30));
  auto cache = make_memory_backend({.byte_budget = 6000, .backing = backing, .shards = 2});
  constexpr int kThreads = 4, kKeys = 12, kOps = 1500;
  std::vector<std::map<std::string, std::string>> truth(kThreads);
  const auto expected = [&](int t, const std::string& key) {
    const auto it = truth[t].find(key);
    return it == truth[t].end() ? std::string("<absent>") : it->second;
  };
  std::atomic<int> wrong{0};
  std::atomic<bool> done{false};
  std::thread flusher([&] {
    while (!done) cache->flush();
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kOps; ++i) {
        const std::uint64_t r = segbloom::test::mix64(std::uint64_t(t) << 32 | std::uint64_t(i));
        const std::string key = "t" + std::to_string(t) + "k" + std::to_string(r % kKeys);
        if (r % 10 == 0) {
          cache->remove(key);
          truth[t].erase(key);
          continue;
        }
        const std::string value = key + ":" + std::to_string(i) + std::string(r % 300, 'x');
        for (;;) {  // a write after an eviction reloaded the key meets its backing version: read again
          std::uint64_t version = 0;
          wrong += read_string(*cache, key, &version) != expected(t, key);
          if (cache->write(key, value, version) != 0) break;
        }
        truth[t][key] = value;
      }
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  flusher.join();
  cache->flush();
  CHECK(cache->stats().evictions > 0);
  for (int t = 0; t < kThreads; ++t) {
    for (int k = 0; k < kKeys; ++k) {
      const std::string key = "t" + std::to_string(t) + "k" + std::to_string(k);
      wrong += read_string(*backing->inner, key) != expected(t, key);
      wrong += read_string(*cache, key) != expected(t, key);
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("memory backend: a blob larger than the budget is still held alone", "[store][memory-cache]") {
  auto b = make_memory_backend({.byte_budget = 100, .shards = 1});
  const std::string big(5000, 'z');
  REQUIRE(b->write("big", big, 0) != 0);
  CHECK(read_string(*b, "big") == big);
  REQUIRE(b->write("other", "o", 0) != 0);
  CHECK(read_string(*b, "big") == "<absent>");
}

#if SEGBLOOM_STORE_HAVE_LEVELDB
TEST_CASE("leveldb backend: compare-and-set contract, persistence", "[store]") {
  TempDir dir;
  {
    auto b = make_leveldb_backend({.path = dir / "db"});
    check_compare_and_set(*b);
    check_no_lost_increments(*b, 4, 300);
    CHECK(b->name() == "leveldb");
    REQUIRE(b->write("kept", "across reopen", 0) != 0);
  }
  auto b = make_leveldb_backend({.path = dir / "db"});
  CHECK(read_string(*b, "kept") == "across reopen");
  CHECK(read_string(*b, "counter0") != "<absent>");
}

TEST_CASE("leveldb backend: a value with a missing or zero version can be overwritten", "[store]") {
  // Values this backend never writes: too short for the 8-byte version, or a version field
  // of 0 ("absent" to write()) or 2^64 - 1. Until 4 Dec 2026 a field of 0 read as version 0
  // for a present key, and write(key, bytes, 0), "only if absent", replaced it.
  const std::vector<std::string> foreign = {"", "abc", "1234567", std::string(8, '\0'),
                                            std::string(8, '\0') + "someone else's value",
                                            std::string(8, '\xff') + "x"};
  TempDir dir;
  std::vector<std::pair<std::string, std::string>> values;
  for (std::size_t i = 0; i < foreign.size(); ++i) values.emplace_back("u" + std::to_string(i), foreign[i]);
  segbloom::test::put_raw_leveldb(dir / "db", values);
  auto b = make_leveldb_backend({.path = dir / "db"});
  for (std::size_t i = 0; i < foreign.size(); ++i) {
    INFO("foreign value " << i << " of " << foreign[i].size() << " bytes");
    const std::string user = "u" + std::to_string(i);
    std::uint64_t version = 0;
    CHECK(read_string(*b, user, &version) == foreign[i]);  // handed out whole
    CHECK(version != 0);
    CHECK(b->write(user, "x", 0) == 0);  // the value exists: "absent" does not match
    const std::uint64_t written = b->write(user, "new", version);
    CHECK(written != 0);
    CHECK(read_string(*b, user) == "new");
    CHECK(b->write(user, "stale", version) == 0);  // now a real version: the old one loses
  }
}

TEST_CASE("leveldb backend: a directory open in another process is a clear error", "[store]") {
  TempDir dir;
  const std::string path = dir / "db";
  Child holder({SEGBLOOM_STORE_WORKER, "hold-leveldb", path}, true, true);
  std::string line;
  REQUIRE(holder.read_line(line));
  REQUIRE(line == "ready");
  try {
    make_leveldb_backend({.path = path});
    FAIL("opening a locked LevelDB directory succeeded");
  } catch (const StoreError& e) {
    CHECK(e.code() == StoreErrc::locked);
    CHECK(std::string(e.what()).find(path) != std::string::npos);
  }
  holder.close_stdin();
  CHECK(holder.wait() == 0);
  auto reopened = make_leveldb_backend({.path = path});  // free again
  CHECK(read_string(*reopened, "x") == "<absent>");
}

TEST_CASE("leveldb backend: a second backend on one directory in this process is refused",
          "[store]") {
  TempDir dir;
  auto first = make_leveldb_backend({.path = dir / "db"});
  CHECK_THROWS_MATCHES(make_leveldb_backend({.path = dir / "db"}), StoreError,
                       Catch::Predicate<StoreError>(
                           [](const StoreError& e) { return e.code() == StoreErrc::locked; }));
}

TEST_CASE("leveldb backend: other failures to open are io errors", "[store]") {
  TempDir dir;
  CHECK_THROWS_MATCHES(
      make_leveldb_backend({.path = dir / "missing", .create_if_missing = false}), StoreError,
      Catch::Predicate<StoreError>([](const StoreError& e) { return e.code() == StoreErrc::io; }));
  CHECK_THROWS_AS(make_leveldb_backend({}), std::invalid_argument);
}

TEST_CASE("memory backend in front of LevelDB: everything survives eviction and reopen",
          "[store]") {
  TempDir dir;
  {
    auto disk = make_leveldb_backend({.path = dir / "db"});
    auto cache = make_memory_backend({.byte_budget = 4096, .backing = disk, .shards = 4});
    for (int i = 0; i < 300; ++i) REQUIRE(cache->write("u" + std::to_string(i), std::string(500, 'q'), 0) != 0);
    CHECK(cache->stats().evictions > 0);
  }  // destruction flushes what is still cached
  auto disk = make_leveldb_backend({.path = dir / "db"});
  for (int i = 0; i < 300; ++i) CHECK(read_string(*disk, "u" + std::to_string(i)) == std::string(500, 'q'));
}
#endif

#if SEGBLOOM_STORE_HAVE_REDIS
namespace {

// A unique key prefix per test and run, so that runs sharing one server never meet.
std::string unique_prefix(const std::string& test) {
  return "segbloom-test:" + std::to_string(::getpid()) + ":" + test + ":" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ":";
}

// A Redis backend on the tests' server, or null (after a warning) when there is none.
std::shared_ptr<StoreBackend> test_redis(RedisConfig config, const std::string& test,
                                         std::string* prefix = nullptr) {
  const std::string socket = segbloom::test::redis_socket_for_tests();
  if (socket.empty()) {
    WARN("redis-server not available and SEGBLOOM_REDIS_SOCKET unset: Redis test skipped");
    return nullptr;
  }
  config.unix_socket = socket;
  config.key_prefix = unique_prefix(test);
  if (prefix) *prefix = config.key_prefix;
  return make_redis_backend(config);
}

// One command on a connection of its own (to inspect or disturb the server).
std::string raw_redis(const std::vector<std::string>& words) {
  redisContext* c = redisConnectUnix(segbloom::test::redis_socket_for_tests().c_str());
  REQUIRE(c != nullptr);
  REQUIRE(c->err == 0);
  std::vector<const char*> argv;
  std::vector<std::size_t> sizes;
  for (const auto& w : words) {
    argv.push_back(w.data());
    sizes.push_back(w.size());
  }
  auto* reply = static_cast<redisReply*>(redisCommandArgv(c, int(argv.size()), argv.data(), sizes.data()));
  REQUIRE(reply != nullptr);
  std::string out = reply->type == REDIS_REPLY_INTEGER ? std::to_string(reply->integer)
                    : reply->str != nullptr            ? std::string(reply->str, reply->len)
                                                       : std::string();
  freeReplyObject(reply);
  redisFree(c);
  return out;
}

}  // namespace

TEST_CASE("redis backend: compare-and-set contract", "[store][redis]") {
  auto b = test_redis({}, "contract");
  if (!b) return;
  check_compare_and_set(*b);
  check_no_lost_increments(*b, 4, 200);
  CHECK(b->name() == "redis");
  CHECK(b->stats().writes > 0);
}

TEST_CASE("redis backend: a record with a missing or damaged version can be overwritten",
          "[store][redis]") {
  std::string prefix;
  auto b = test_redis({}, "foreign", &prefix);
  if (!b) return;
  // Versions the backend never writes: absent, zero, a leading zero, a sign, not a number,
  // 2^64 - 1 (the foreign token itself), beyond 2^64, and empty.
  const std::vector<std::string> damaged = {"<none>", "0", "05", "+5", "-5", "abc", "18446744073709551615",
                                            "18446744073709551616", "99999999999999999999999", ""};
  for (std::size_t i = 0; i < damaged.size(); ++i) {
    const std::string user = "u" + std::to_string(i);
    const std::string key = prefix + user;
    if (damaged[i] == "<none>") {
      raw_redis({"HSET", key, "d", "old"});
    } else {
      raw_redis({"HSET", key, "v", damaged[i], "d", "old"});
    }
    std::uint64_t version = 0;
    REQUIRE(read_string(*b, user, &version) == "old");
    CHECK(version != 0);
    CHECK(b->write(user, "x", 0) == 0);  // the record exists: "absent" does not match
    const std::uint64_t written = b->write(user, "new", version);
    CHECK(written != 0);
    CHECK(read_string(*b, user) == "new");
    CHECK(b->write(user, "stale", version) == 0);  // now a real version: the old one loses
  }
  // A hash with neither field (another program's) reads as absent, and "absent" writes it.
  raw_redis({"HSET", prefix + "bare", "other", "x"});
  CHECK(read_string(*b, "bare") == "<absent>");
  CHECK(b->write("bare", "new", 0) != 0);
  CHECK(read_string(*b, "bare") == "new");
  // A canonical version other than the current one still conflicts.
  REQUIRE(b->write("fresh", "a", 0) != 0);
  raw_redis({"HSET", prefix + "fresh", "v", "12345"});
  std::uint64_t version = 0;
  REQUIRE(read_string(*b, "fresh", &version) == "a");
  CHECK(version == 12345);
  CHECK(b->write("fresh", "b", 12346) == 0);
  CHECK(b->write("fresh", "b", 12345) != 0);
  // A memory backend in front writes such a record back instead of looping for ever.
  raw_redis({"HSET", prefix + "cached", "v", "007", "d", "old"});
  auto cache = make_memory_backend({.backing = b});
  std::uint64_t cached_version = 0;
  REQUIRE(read_string(*cache, "cached", &cached_version) == "old");
  REQUIRE(cache->write("cached", "new", cached_version) != 0);
  cache->flush();
  CHECK(read_string(*b, "cached") == "new");
}

TEST_CASE("redis backend: a compare-and-set sent again after its reply was lost reports success",
          "[store][redis]") {
  // run() sends the same EVALSHA again on a fresh connection when a reply is lost (a
  // timeout, a dropped connection); if the first send landed, the resend finds its own new
  // version. Both sends are made here with the backend's script, the first through write().
  std::string prefix;
  auto b = test_redis({}, "resend", &prefix);
  if (!b) return;
  const std::uint64_t landed = b->write("u", "one", 0);
  REQUIRE(landed != 0);
  const std::string script(store_detail::kCompareAndSetScript);
  const std::string key = prefix + "u";
  CHECK(raw_redis({"EVAL", script, "1", key, "", std::to_string(landed), "one", "0"}) == "1");
  // Any other write expecting the old state still conflicts, and nothing was overwritten.
  CHECK(raw_redis({"EVAL", script, "1", key, "", "12345", "two", "0"}) == "0");
  std::uint64_t version = 0;
  CHECK(read_string(*b, "u", &version) == "one");
  CHECK(version == landed);

  // Another writer wrote between the lost reply and the resend: the resend still finds its
  // version among the last four and reports success, without writing its (older) blob.
  const std::uint64_t second = b->write("u", "two", landed);
  REQUIRE(second != 0);
  CHECK(raw_redis({"EVAL", script, "1", key, "", std::to_string(landed), "one", "0"}) == "1");
  CHECK(read_string(*b, "u", &version) == "two");
  CHECK(version == second);
  // Three more writes keep the last four versions: `second` is still recognised, `landed`
  // (five writes back) is not, and the field never holds more than four.
  std::uint64_t last = second;
  for (const char* blob : {"three", "four", "five"}) {
    last = b->write("u", blob, last);
    REQUIRE(last != 0);
  }
  CHECK(raw_redis({"EVAL", script, "1", key, "", std::to_string(second), "two", "0"}) == "1");
  CHECK(raw_redis({"EVAL", script, "1", key, "", std::to_string(landed), "one", "0"}) == "0");
  const std::string recent = raw_redis({"HGET", key, "h"});
  CHECK(std::count(recent.begin(), recent.end(), ' ') == 3);
  CHECK(recent.rfind(std::to_string(last) + " ", 0) == 0);  // newest first
  CHECK(read_string(*b, "u") == "five");

  // A record written before the field existed (only 'v' and 'd') still recognises its
  // current version, and its next write starts the field.
  raw_redis({"HDEL", key, "h"});
  CHECK(raw_redis({"EVAL", script, "1", key, "", std::to_string(last), "five", "0"}) == "1");
  const std::uint64_t after = b->write("u", "six", last);
  REQUIRE(after != 0);
  CHECK(raw_redis({"HGET", key, "h"}) == std::to_string(after));
}

TEST_CASE("redis backend: key prefix, hash tag and TTL", "[store][redis]") {
  CHECK(redis_key(RedisConfig{.key_prefix = "p:", .hash_tag = true}, "alice") == "p:{alice}");
  CHECK(redis_key(RedisConfig{.key_prefix = "p:"}, "alice") == "p:alice");
  RedisConfig config;
  config.hash_tag = true;
  config.ttl = std::chrono::hours(1);
  std::string prefix;
  auto b = test_redis(config, "layout", &prefix);
  if (!b) return;
  const std::uint64_t v1 = b->write("alice", "blob", 0);
  REQUIRE(v1 != 0);
  const std::string key = prefix + "{alice}";
  CHECK(raw_redis({"EXISTS", key}) == "1");
  CHECK(raw_redis({"HGET", key, "d"}) == "blob");
  // Only "expires" (> 0) or "never" (-1) is checked: remaining milliseconds are a time.
  CHECK(std::stoll(raw_redis({"PTTL", key})) > 0);
  // Every write sets the TTL again: a key whose expiry was removed gets one back.
  REQUIRE(raw_redis({"PERSIST", key}) == "1");
  REQUIRE(raw_redis({"PTTL", key}) == "-1");
  REQUIRE(b->write("alice", "blob2", v1) != 0);
  CHECK(std::stoll(raw_redis({"PTTL", key})) > 0);
  // Without a TTL the key does not expire.
  std::string plain_prefix;
  auto plain = test_redis({}, "layout-plain", &plain_prefix);
  REQUIRE(plain->write("bob", "blob", 0) != 0);
  CHECK(raw_redis({"PTTL", plain_prefix + "bob"}) == "-1");
}

TEST_CASE("redis backend: a write with ttl 0 removes an expiry set under an earlier ttl", "[store][redis]") {
  // Yesterday's deployment expired users after an hour, today's keeps them (ttl 0). Until
  // 4 Dec 2026 HSET kept the old expiry and the script set none: users written under the
  // TTL went on expiring.
  RedisConfig expiring;
  expiring.ttl = std::chrono::hours(1);
  std::string prefix;
  auto before = test_redis(expiring, "ttl-to-zero", &prefix);
  if (!before) return;
  const std::uint64_t v1 = before->write("alice", "blob", 0);
  REQUIRE(v1 != 0);
  const std::string key = prefix + "alice";
  REQUIRE(std::stoll(raw_redis({"PTTL", key})) > 0);
  RedisConfig keeping;
  keeping.unix_socket = segbloom::test::redis_socket_for_tests();
  keeping.key_prefix = prefix;  // the same keys
  auto after = make_redis_backend(keeping);
  REQUIRE(after->write("alice", "blob2", v1) != 0);
  CHECK(raw_redis({"PTTL", key}) == "-1");
  CHECK(read_string(*after, "alice") == "blob2");
}

TEST_CASE("redis backend: a TTL out of range is refused before anything is written", "[store][redis]") {
  // Until 2 Dec 2026 any ttl >= 0 was accepted, and one of 10^17 ms or more made the script
  // store the blob and then fail at PEXPIRE (Redis does not undo a script's writes): the
  // call threw StoreErrc::io though the user had changed.
  RedisConfig config;
  config.unix_socket = "/nonexistent/redis.sock";  // checked before connecting
  config.ttl = kMaxRedisTtl + std::chrono::milliseconds(1);
  CHECK_THROWS_AS(make_redis_backend(config), std::invalid_argument);
  config.ttl = std::chrono::milliseconds(-1);
  CHECK_THROWS_AS(make_redis_backend(config), std::invalid_argument);
  config.ttl = kMaxRedisTtl;  // 100 years, the longest accepted
  std::string prefix;
  auto b = test_redis(config, "ttl-longest", &prefix);
  if (!b) return;
  REQUIRE(b->write("alice", "blob", 0) != 0);
  const long long remaining = std::stoll(raw_redis({"PTTL", prefix + "alice"}));
  CHECK(remaining > std::chrono::milliseconds(std::chrono::years(99)).count());
  // The script itself refuses a TTL that is not a decimal of at most 15 digits, before any
  // write: the key is not created.
  const std::string script(store_detail::kCompareAndSetScript);
  for (const std::string ttl : {"100000000000000000", "9223372036854775807", "1000000000000000", "-5", "1.5",
                                "abc", "", "07"}) {
    INFO("ttl argument '" << ttl << "'");
    const std::string key = prefix + "bad-ttl";
    CHECK(raw_redis({"EVAL", script, "1", key, "", "12345", "blob", ttl}).find("segbloom") != std::string::npos);
    CHECK(raw_redis({"EXISTS", key}) == "0");
  }
  CHECK(raw_redis({"EVAL", script, "1", prefix + "good-ttl", "", "12345", "blob", "999999999999999"}) == "1");
  CHECK(std::stoll(raw_redis({"PTTL", prefix + "good-ttl"})) > 0);
}

TEST_CASE("redis backend: unreachable server is a clear error after a bounded wait",
          "[store][redis]") {
  TempDir dir;
  RedisConfig config;
  config.unix_socket = dir / "nobody-listens.sock";
  config.connect_timeout = std::chrono::milliseconds(100);
  try {
    make_redis_backend(config);
    FAIL("connected to a socket nobody listens on");
  } catch (const StoreError& e) {
    CHECK(e.code() == StoreErrc::unavailable);
    CHECK(std::string(e.what()).find("nobody-listens.sock") != std::string::npos);
  }
  config.unix_socket.clear();
  config.host = "127.0.0.1";
  config.port = 1;  // nothing listens on port 1 here
  CHECK_THROWS_MATCHES(make_redis_backend(config), StoreError, has_code(StoreErrc::unavailable));
  config.attempts = 0;
  CHECK_THROWS_AS(make_redis_backend(config), std::invalid_argument);
}

namespace {

// A Unix socket that accepts connections into its backlog and never replies.
class SilentServer {
 public:
  explicit SilentServer(const std::string& path) : path_(path), fd_(::socket(AF_UNIX, SOCK_STREAM, 0)) {
    REQUIRE(fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 64) == 0);
  }
  ~SilentServer() { ::close(fd_); }
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_;
};

}  // namespace

TEST_CASE("redis backend: a server that never answers times out", "[store][redis]") {
  TempDir dir;
  SilentServer silent(dir / "silent.sock");
  RedisConfig config;
  config.unix_socket = silent.path();
  config.connect_timeout = std::chrono::milliseconds(100);
  config.command_timeout = std::chrono::milliseconds(100);
  config.attempts = 2;
  auto b = make_redis_backend(config);  // connecting works: the backlog takes it
  try {
    b->read("alice", [](std::string_view, std::uint64_t) {});
    FAIL("a read from a silent server returned");
  } catch (const StoreError& e) {
    CHECK(e.code() == StoreErrc::timeout);
    CHECK(std::string(e.what()).find("after 2 attempt(s)") != std::string::npos);
  }
  // Bounded by attempts, not by a clock: the first timeout reconnected once, the second
  // (the last of config.attempts) gave up.
  CHECK(b->stats().reconnects == std::uint64_t(config.attempts) - 1);
}

TEST_CASE("redis backend: concurrent first writes to a server that never answers each wait one bound",
          "[store][redis]") {
  // Until 4 Dec 2026 the script's SCRIPT LOAD ran under a mutex: the k-th of concurrent
  // first writers waited for the k - 1 loads before its own, k times the bound of one call.
  TempDir dir;
  SilentServer silent(dir / "silent.sock");
  RedisConfig config;
  config.unix_socket = silent.path();
  config.connect_timeout = std::chrono::milliseconds(100);
  config.command_timeout = std::chrono::milliseconds(100);
  config.attempts = 2;
  constexpr int kWriters = 12;  // within max_connections (16): none waits for the pool
  REQUIRE(std::size_t(kWriters) <= config.max_connections);
  auto b = make_redis_backend(config);
  const auto bound = config.attempts * (config.connect_timeout + config.command_timeout);
  std::vector<std::chrono::milliseconds> waited(kWriters);
  std::vector<int> timed_out(kWriters, 0);
  std::vector<std::thread> writers;
  for (int i = 0; i < kWriters; ++i) {
    writers.emplace_back([&, i] {
      const auto start = std::chrono::steady_clock::now();
      try {
        b->write("u" + std::to_string(i), "x", 0);
      } catch (const StoreError& e) {
        timed_out[i] = e.code() == StoreErrc::timeout;
      }
      waited[i] = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    });
  }
  for (auto& t : writers) t.join();
  // 3x the bound leaves room for a loaded machine; serialised, the last writers waited about 6x
  // (each load gives up after two command timeouts, half the bound).
  for (int i = 0; i < kWriters; ++i) {
    INFO("writer " << i << " waited " << waited[i].count() << " ms; the bound of one call is " << bound.count()
                   << " ms");
    CHECK(timed_out[i] == 1);
    CHECK(waited[i] < 3 * bound);
  }
}

TEST_CASE("redis backend: reconnects after the server drops the connection", "[store][redis]") {
  auto b = test_redis({}, "reconnect");
  if (!b) return;
  REQUIRE(b->write("alice", "v1", 0) != 0);
  // Close every other client's connection, the backend's pooled one included.
  CHECK(std::stoi(raw_redis({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"})) >= 1);
  CHECK(read_string(*b, "alice") == "v1");
  CHECK(b->stats().reconnects >= 1);
}

TEST_CASE("redis backend: after the server closes every pooled connection, the next calls all succeed",
          "[store][redis]") {
  // Until 2 Dec 2026 a retry took the next idle pooled connection, as dead as the first after
  // a restart, CLIENT KILL or idle timeout: with attempts = 2, calls failed in a row until the
  // dead connections were used up, though the server was up.
  auto b = test_redis({}, "stale-pool");
  if (!b) return;
  REQUIRE(b->write("alice", "v1", 0) != 0);
  // Several connections in the pool: while the server holds every command, each concurrent
  // read opens one of its own.
  constexpr int kConnections = 6;
  // 500 ms: time for the readers to start on a loaded machine (sanitizer builds), and
  // half their command timeout (a reader that timed out would reconnect).
  REQUIRE(raw_redis({"CLIENT", "PAUSE", "500", "ALL"}) == "OK");
  std::vector<std::thread> readers;
  for (int i = 0; i < kConnections; ++i) readers.emplace_back([&] { b->read("alice", [](std::string_view, std::uint64_t) {}); });
  for (auto& t : readers) t.join();
  const std::uint64_t reconnects_before = b->stats().reconnects;
  REQUIRE(std::stoi(raw_redis({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"})) >= kConnections);
  for (int call = 0; call < kConnections; ++call) {
    INFO("call " << call << " after the kill");
    CHECK(read_string(*b, "alice") == "v1");
  }
  // The first call noticed the drop and reconnected; the others found fresh connections.
  CHECK(b->stats().reconnects - reconnects_before == 1);
}

TEST_CASE("redis backend: the script is loaded again after SCRIPT FLUSH", "[store][redis]") {
  auto b = test_redis({}, "noscript");
  if (!b) return;
  const std::uint64_t v1 = b->write("alice", "v1", 0);
  REQUIRE(v1 != 0);
  raw_redis({"SCRIPT", "FLUSH"});
  CHECK(b->write("alice", "v2", v1) != 0);
  CHECK(read_string(*b, "alice") == "v2");
}

TEST_CASE("redis backend: two processes of four threads lose no increment", "[store][redis]") {
  const std::string socket = segbloom::test::redis_socket_for_tests();
  if (socket.empty()) {
    WARN("redis-server not available: skipped");
    return;
  }
  const std::string prefix = unique_prefix("counters");
  constexpr int kIncrements = 150;
  {
    Child a({SEGBLOOM_STORE_WORKER, "redis-counter", socket, prefix, "3", "4", std::to_string(kIncrements)}, false, true);
    Child b({SEGBLOOM_STORE_WORKER, "redis-counter", socket, prefix, "3", "4", std::to_string(kIncrements)}, false, true);
    CHECK(a.wait() == 0);
    CHECK(b.wait() == 0);
  }
  RedisConfig config;
  config.unix_socket = socket;
  config.key_prefix = prefix;
  auto backend = make_redis_backend(config);
  std::uint64_t total = 0;
  for (int k = 0; k < 3; ++k) total += std::stoull(read_string(*backend, "counter" + std::to_string(k)));
  CHECK(total == 2u * 4u * kIncrements);
}
#endif
