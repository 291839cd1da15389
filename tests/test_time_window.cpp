// Time windows (Options::slice_lifetime): every key inserted within the last lifetime is
// found, slices expire on schedule, memory stays bounded, and all of it survives
// serialization. Time comes from a ManualClock.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cereal/archives/binary.hpp>
#include <cereal/archives/json.hpp>

#include "segbloom/segbloom.hpp"
#include "support/flaky_cells.hpp"
#include "support/rate_checks.hpp"
#include "support/stats.hpp"

using namespace segbloom;
using namespace std::chrono_literals;
using segbloom::test::absent_key;
using segbloom::test::poisson_upper;
using segbloom::test::present_key;

namespace {

Options timed_options(std::uint64_t capacity, std::chrono::seconds lifetime, std::uint32_t window = 0) {
  Options o;
  o.capacity = capacity;
  o.false_positive_rate = 0.01;
  o.max_slices = window;
  o.slice_lifetime = lifetime;
  return o;
}

// Inserts `per_step` keys every `step` seconds for `steps` steps and checks, after each
// step, that every key inserted less than a lifetime ago (and, in window mode, among the
// last capacity * (W - 1) / W inserts) is found. Returns the keys with their insert times.
template <class F>
std::deque<std::pair<std::uint64_t, UnixSeconds>> run_feed(F& f, ManualClock& clock,
                                                           std::uint64_t steps, std::uint64_t per_step,
                                                           std::chrono::seconds step,
                                                           std::uint64_t& missing,
                                                           std::uint64_t salt = 1) {
  const std::int64_t lifetime = f.options().slice_lifetime.count();
  const std::uint32_t window = f.options().max_slices;
  const std::uint64_t kept = window == 0 ? UINT64_MAX : f.options().capacity * (window - 1) / window;
  std::deque<std::pair<std::uint64_t, UnixSeconds>> recent;
  std::uint64_t next = 0;
  for (std::uint64_t s = 0; s < steps; ++s) {
    for (std::uint64_t j = 0; j < per_step; ++j) {
      const std::uint64_t key = present_key(next++, salt);
      f.insert(key);
      recent.emplace_back(key, clock.now());
    }
    clock.advance(step);
    while (!recent.empty() &&
           (clock.now() >= recent.front().second + lifetime || recent.size() > kept)) {
      recent.pop_front();
    }
    for (const auto& [key, at] : recent) missing += !f.contains(key);
  }
  return recent;
}

}  // namespace

TEST_CASE("a timed growing filter finds every key of the last lifetime and drops old slices",
          "[lifetime]") {
  ManualClock clock;
  // 30-day lifetime, 20 items a day: ~600 live items, slices of 200, 400, 800...
  ScalableBloomFilter f(timed_options(200, 30 * 24h), clock);
  std::uint64_t missing = 0;
  std::size_t most_slices = 0;
  for (int round = 0; round < 4; ++round) {  // 4 x 90 days
    run_feed(f, clock, 90, 20, 24h, missing, static_cast<std::uint64_t>(round) + 10);
    most_slices = std::max(most_slices, f.slice_count());
  }
  CHECK(missing == 0);
  CHECK(f.rotations() > 5);  // slices expired
  // Bounded: a lifetime of writes plus one more lifetime before expiry, never all 360
  // days of keys (7 200 items).
  CHECK(most_slices <= 4);
  CHECK(f.size() <= 3 * 30 * 20);
  // Sequence indices are reused, so the compound rate bound holds: distinct indices.
  std::uint64_t used = 0;
  for (const auto& s : f.slices()) {
    CHECK(((used >> s.shape().index) & 1) == 0);
    used |= std::uint64_t{1} << s.shape().index;
  }
  // Measured false-positive rate: under the target, and as the slices' fill predicts
  // (the live slices are far from full, so the target alone would pass a broken filter).
  segbloom::test::check_rate(f, f.options().false_positive_rate, 77);
}

TEST_CASE("a timed filter forgets keys within two lifetimes of their last insert", "[lifetime]") {
  ManualClock clock;
  ScalableBloomFilter f(timed_options(1000, 100s), clock);
  for (std::uint64_t i = 0; i < 500; ++i) f.insert(present_key(i, 2));
  clock.advance(150s);
  f.insert(present_key(1000, 2));  // a write 150 s later: the first slice closed, kept
  CHECK(f.slice_count() == 2);
  std::uint64_t found = 0;
  for (std::uint64_t i = 0; i < 500; ++i) found += f.contains(present_key(i, 2));
  CHECK(found == 500);  // closed at 100 s (its lifetime), expires at 200 s
  clock.advance(50s);   // 200 s after the first inserts
  CHECK(f.expire() == 1);
  CHECK(f.slice_count() == 1);
  CHECK(f.size() == 1);
  found = 0;
  for (std::uint64_t i = 0; i < 500; ++i) found += f.contains(present_key(i, 2));
  // Gone, but for false positives of a slice holding one key: expected far below 1 (a
  // Poisson bound; binomial_upper's floor of about 19 would pass a slice left half set).
  CHECK(found <= poisson_upper(500 * f.estimated_false_positive_rate()));
  CHECK(f.contains(present_key(1000, 2)));
  // Idle for two lifetimes: everything expires; the filter starts again empty.
  clock.advance(200s);
  CHECK(f.expire() == 1);
  CHECK(f.slice_count() == 1);
  CHECK(f.size() == 0);
  CHECK(f.slices().front().opened_at() == clock.now());
}

TEST_CASE("expiry that cannot allocate the slice to start again from leaves the filter as it was",
          "[lifetime]") {
  // When every slice has expired the filter starts again from one new slice. If that
  // cannot be allocated, expire() and the write that expires first throw std::bad_alloc
  // and change nothing.
  ManualClock clock;
  test::FlakyFilter f(timed_options(1000, 100s), clock);
  std::uint64_t i = 0;
  while (f.slice_count() < 3) f.insert(present_key(i++, 8));
  clock.advance(500s);  // every slice expired
  const test::FlakyFilter before = f;
  {
    const test::FailingAllocations failing;
    CHECK_THROWS_AS(f.expire(), std::bad_alloc);
    CHECK_THROWS_AS(f.insert(present_key(i, 8)), std::bad_alloc);
  }
  CHECK(f == before);
  CHECK(f.slice_count() == 3);
  CHECK(f.expire() == 3);
  CHECK(f.slice_count() == 1);
  CHECK(f.size() == 0);
  CHECK(f.rotations() == 3);
}

TEST_CASE("inserting a key again keeps it for a lifetime from the new insert", "[lifetime]") {
  ManualClock clock;
  ScalableBloomFilter f(timed_options(1000, 100s), clock);
  CHECK(f.insert(std::uint64_t{42}));
  clock.advance(90s);
  CHECK_FALSE(f.insert(std::uint64_t{42}));  // seen; still in the open slice
  clock.advance(20s);                        // 110 s: that slice closed at 100 s
  CHECK_FALSE(f.insert(std::uint64_t{42}));  // seen, and copied into the new slice
  CHECK(f.slice_count() == 2);
  clock.advance(95s);  // 205 s: the first slice expired
  f.expire();
  CHECK(f.slice_count() == 1);
  CHECK(f.contains(std::uint64_t{42}));  // refreshed at 110 s: kept until at least 210 s
}

TEST_CASE("a timed counting filter keeps a key's count in its slice, which expires on its own schedule",
          "[lifetime][counting]") {
  // Unlike the plain filter (above), the counting kind does not copy a key inserted again
  // into the newest slice: its whole count stays in one slice, so that remove is exact.
  ManualClock clock;
  const UnixSeconds start = clock.now();
  CountingBloomFilter f(timed_options(1000, 100s), clock);
  CHECK(f.insert(std::uint64_t{42}));  // counted in slice 0, open at start
  clock.advance(110s);                 // slice 0 stopped taking writes at start + 100 s
  CHECK(f.insert(std::uint64_t{43}));  // opens slice 1
  CHECK(f.slice_count() == 2);
  CHECK_FALSE(f.insert(std::uint64_t{42}));  // counted again in slice 0, not copied
  CHECK(f.count_estimate(std::uint64_t{42}) == 2);
  CHECK(f.stats().slices.back().items == 1);
  clock.set(start + 199);  // slice 0 expires at start + 200 s
  CHECK(f.expire() == 0);
  CHECK(f.contains(std::uint64_t{42}));
  clock.set(start + 200);
  CHECK(f.expire() == 1);
  CHECK_FALSE(f.contains(std::uint64_t{42}));  // gone with its slice, 90 s after its latest insert
  CHECK(f.contains(std::uint64_t{43}));
  // A remove that finds nothing changes nothing, but a timed filter's writes expire first.
  clock.advance(300s);
  CHECK_FALSE(f.remove(std::uint64_t{44}));
  CHECK(f.rotations() == 2);
  CHECK(f.size() == 0);
}

TEST_CASE("window mode with a lifetime rotates on whichever limit comes first", "[lifetime]") {
  ManualClock clock;
  SECTION("count first: many inserts in little time") {
    ScalableBloomFilter f(timed_options(3000, 3600s, 3), clock);
    std::uint64_t missing = 0;
    run_feed(f, clock, 60, 500, 1s, missing, 3);  // 30 000 keys in a minute
    CHECK(f.rotations() >= 10);
    CHECK(f.slice_count() <= 3);
    CHECK(missing == 0);  // the last capacity * (W - 1) / W keys, always
  }
  SECTION("time first: few inserts over a long time") {
    ScalableBloomFilter f(timed_options(3000, 10 * 24h, 3), clock);
    std::uint64_t missing = 0;
    run_feed(f, clock, 100, 5, 24h, missing, 4);  // 500 keys in 100 days
    CHECK(missing == 0);
    CHECK(f.rotations() >= 5);
    CHECK(f.slice_count() <= 3);
    CHECK(f.size() <= 3 * 10 * 5);
  }
}

TEST_CASE("counting, LevelDB-compatible and concurrent filters take a lifetime too", "[lifetime]") {
  ManualClock clock;
  CountingBloomFilter c(timed_options(100, 60s), clock);
  LevelDbCompatibleFilter l(timed_options(100, 60s), clock);
  std::uint64_t missing = 0;
  run_feed(c, clock, 50, 10, 10s, missing, 5);
  run_feed(l, clock, 50, 10, 10s, missing, 6);
  CHECK(missing == 0);
  CHECK(c.rotations() > 0);
  CHECK(l.rotations() > 0);
  CHECK(c.insert(std::uint64_t{7}));
  CHECK(c.remove(std::uint64_t{7}));
  CHECK_FALSE(c.contains(std::uint64_t{7}));
  // And the concurrent filter (more in test_concurrent.cpp, "[concurrent][lifetime]").
  ConcurrentScalableBloomFilter concurrent(timed_options(100, 60s), clock);
  run_feed(concurrent, clock, 50, 10, 10s, missing, 7);
  CHECK(missing == 0);
  CHECK(concurrent.rotations() > 0);
  Options beyond_leveldb = timed_options(100, 60s);
  beyond_leveldb.false_positive_rate = 1e-12;  // k > 30: outside LevelDB's format
  CHECK_THROWS_AS(LevelDbCompatibleFilter(beyond_leveldb, clock), std::invalid_argument);
}

TEST_CASE("slice_lifetime is validated", "[lifetime]") {
  CHECK_THROWS_AS(ScalableBloomFilter(timed_options(100, -1s)), std::invalid_argument);
  CHECK_THROWS_AS(ScalableBloomFilter(timed_options(100, kMaxSliceLifetime + 1s)), std::invalid_argument);
  CHECK_NOTHROW(ScalableBloomFilter(timed_options(100, kMaxSliceLifetime)));
}

TEST_CASE("a timed filter survives serialization and goes on expiring on schedule",
          "[lifetime][serialization]") {
  ManualClock clock;
  for (const std::uint32_t window : {0u, 4u}) {
    DYNAMIC_SECTION("max_slices " << window) {
      ScalableBloomFilter f(timed_options(100, 1000s, window), clock);
      std::uint64_t missing = 0;
      run_feed(f, clock, 30, 20, 100s, missing, 8);
      REQUIRE(f.slice_count() >= 2);
      const std::string blob = to_bytes(f);
      ScalableBloomFilter loaded = from_bytes<ScalableBloomFilter>(blob);
      CHECK(loaded == f);  // options (lifetime), open times and sequence indices kept
      CHECK(loaded.options().slice_lifetime == 1000s);
      loaded.set_clock(clock);
      // Cereal archives too.
      std::stringstream json;
      { cereal::JSONOutputArchive ar(json); ar(f); }
      ScalableBloomFilter from_json;
      { cereal::JSONInputArchive ar(json); ar(from_json); }
      CHECK(from_json == f);
      std::stringstream binary;
      { cereal::BinaryOutputArchive ar(binary); ar(f); }
      ScalableBloomFilter from_binary;
      { cereal::BinaryInputArchive ar(binary); ar(from_binary); }
      CHECK(from_binary == f);
      // The zero-copy view answers as the filter.
      const FilterView view(blob);
      CHECK(view.options() == f.options());
      for (std::uint64_t i = 0; i < 2000; ++i) {
        REQUIRE(view.contains(present_key(i, 8)) == f.contains(present_key(i, 8)));
        REQUIRE(view.contains(absent_key(i, 8)) == f.contains(absent_key(i, 8)));
      }
      // Both go on identically: same expiries, same slices.
      run_feed(f, clock, 30, 20, 100s, missing, 9);
      clock.advance(-3000s);
      run_feed(loaded, clock, 30, 20, 100s, missing, 9);
      CHECK(loaded == f);
      CHECK(missing == 0);
    }
  }
}

TEST_CASE("timed blobs with bad time fields are refused", "[lifetime][serialization]") {
  ManualClock clock;
  ScalableBloomFilter f(timed_options(100, 1000s), clock);
  for (std::uint64_t i = 0; i < 350; ++i) f.insert(present_key(i, 11));  // 100 + 200 + ...
  REQUIRE(f.slice_count() == 3);
  const std::string blob = to_bytes(f);
  // Payload offsets (serialization.hpp): layout byte 23, lifetime 48, slice 0 at 65
  // (cells 8, probes 1, items 8, index 1 at 82, opened at 8 at 83).
  const std::size_t payload = envelope::kHeaderBytes;
  REQUIRE(static_cast<unsigned char>(blob[payload + 23]) == 0x80);
  const auto patched = [&](std::size_t offset, std::initializer_list<unsigned char> bytes) {
    std::string b = blob;
    std::size_t at = payload + offset;
    for (const unsigned char c : bytes) b[at++] = static_cast<char>(c);
    envelope::seal(b, FilterKind<ScalableBloomFilter>::id);
    return b;
  };
  const auto refused = [](const std::string& b, const char* why) {
    CHECK_THROWS_WITH(from_bytes<ScalableBloomFilter>(b), Catch::Contains(why));
    CHECK_THROWS_WITH(FilterView(b), Catch::Contains(why));
  };
  refused(patched(48, {0, 0, 0, 0, 0, 0, 0, 0}), "slice_lifetime 0 s");
  refused(patched(48, {0, 0, 0, 0, 0, 0, 0, 0x80}), "slice_lifetime");
  refused(patched(82, {64}), "sequence index 64");
  refused(patched(83, {0, 0, 0, 0, 0, 0, 0, 0x80}), "open time");
  // An older slice opened after a newer one: the filter never writes that (open_slice), and
  // the older slice would close, at the next one's open time, before it opened: its keys
  // expired a lifetime early (loaded until 3 Dec 2026). 2^40 in slice 0, 1.7e9 in slice 1.
  refused(patched(83, {0, 0, 0, 0, 0, 1, 0, 0}),
          "slice 1: open time 1700000000 before slice 0's 1099511627776; open times never decrease");
  std::vector<ScalableBloomFilter::slice_type> parts = f.slices();
  parts[1].set_opened_at(parts[0].opened_at() - 1);
  CHECK_THROWS_WITH(ScalableBloomFilter(from_parts, f.options(), parts, 0, clock),
                    Catch::Contains("slice 1: open time 1699999999 before slice 0's 1700000000"));
  // Slice 0 given slice 1's sequence index: the sizes no longer match the plan, or the
  // index repeats; refused either way.
  CHECK_THROWS_AS(from_bytes<ScalableBloomFilter>(patched(82, {1})), FormatError);
  CHECK_THROWS_AS(FilterView(patched(82, {1})), FormatError);
  // The flag cleared: the time fields are read as other fields; never accepted.
  CHECK_THROWS_AS(from_bytes<ScalableBloomFilter>(patched(23, {0})), FormatError);
  CHECK_THROWS_AS(FilterView(patched(23, {0})), FormatError);

  // Window slices are stored at sequence index 0; another loaded, and was saved back as 0
  // (until 2 Dec 2026).
  Options window = timed_options(100, 1000s);
  window.max_slices = 4;
  ScalableBloomFilter w(window, clock);
  for (std::uint64_t i = 0; i < 60; ++i) w.insert(present_key(i, 12));
  REQUIRE(w.slice_count() >= 2);
  std::string w_blob = to_bytes(w);
  REQUIRE(from_bytes<ScalableBloomFilter>(w_blob) == w);
  w_blob[payload + 82] = 5;
  envelope::seal(w_blob, FilterKind<ScalableBloomFilter>::id);
  refused(w_blob, "sequence index 5 in window mode");
}

TEST_CASE("the system clock tells Unix seconds", "[lifetime][clock]") {
  // system_clock() reads the coarse wall clock (the last timer tick, a few ms behind):
  // its seconds must be std::chrono::system_clock's, at most one behind across a tick.
  const auto unix_now = [] {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
  for (int i = 0; i < 1000; ++i) {
    const UnixSeconds before = unix_now(), read = system_clock().now(), after = unix_now();
    REQUIRE(read >= before - 1);
    REQUIRE(read <= after);
  }
}

TEST_CASE("filters without a lifetime never read the clock and store no times", "[lifetime]") {
  struct CountingClock final : Clock {
    mutable std::uint64_t reads = 0;
    UnixSeconds now() const noexcept override { return ++reads, 1'000; }
  } clock;
  Options o;
  o.capacity = 100;
  ScalableBloomFilter f(o, clock);
  for (std::uint64_t i = 0; i < 1000; ++i) f.insert(present_key(i, 12));
  CHECK(f.expire() == 0);
  CHECK(clock.reads == 0);
  for (const auto& s : f.slices()) CHECK(s.opened_at() == 0);
  CHECK((static_cast<unsigned char>(to_bytes(f)[envelope::kHeaderBytes + 23]) & 0x80) == 0);
}

TEST_CASE("a view given a clock skips the slices the next write would drop",
          "[lifetime][serialization]") {
  ManualClock clock;
  ScalableBloomFilter f(timed_options(1000, 100s), clock);
  for (std::uint64_t i = 0; i < 500; ++i) f.insert(present_key(i, 13));
  clock.advance(150s);
  f.insert(std::uint64_t{5});  // the first slice closed at 100 s: expires at 200 s
  const std::string blob = to_bytes(f);
  clock.advance(60s);
  const FilterView plain(blob);
  const FilterView timed(blob, LoadLimits{}, clock);
  CHECK(f.expire() == 1);
  std::uint64_t plain_found = 0;
  for (std::uint64_t i = 0; i < 500; ++i) {
    plain_found += plain.contains(present_key(i, 13));
    REQUIRE(timed.contains(present_key(i, 13)) == f.contains(present_key(i, 13)));
    REQUIRE(timed.contains(absent_key(i, 13)) == f.contains(absent_key(i, 13)));
  }
  CHECK(plain_found == 500);  // without a clock: the stored filter's answers
  CHECK(timed.contains(std::uint64_t{5}));
  // Batched: the same answers, and none at all once every slice has expired.
  std::vector<std::uint64_t> keys;
  for (std::uint64_t i = 0; i < 500; ++i) {
    keys.push_back(present_key(i, 13));
    keys.push_back(absent_key(i, 13));
  }
  keys.push_back(5);
  const std::unique_ptr<bool[]> found(new bool[keys.size()]);
  const std::span<bool> out(found.get(), keys.size());
  std::size_t expected_count = 0;
  std::uint64_t mismatches = 0;
  timed.contains_many(std::span<const std::uint64_t>(keys), out);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    mismatches += found[i] != f.contains(keys[i]);
    expected_count += f.contains(keys[i]);
  }
  CHECK(mismatches == 0);
  CHECK(expected_count >= 1);
  clock.advance(1000s);  // past both slices' lifetimes
  const FilterView expired(blob, LoadLimits{}, clock);
  CHECK(expired.slice_count() == 2);
  std::fill(out.begin(), out.end(), true);
  CHECK(expired.contains_many(std::span<const std::uint64_t>(keys), out) == 0);
  CHECK(std::count(out.begin(), out.end(), true) == 0);
  CHECK_FALSE(expired.contains(std::uint64_t{5}));
}

// A clock that steps back (or another server's, behind the one that wrote the blob) opens
// the next slice no earlier than the newest opened: a slice's close time is the next one's
// open time, so an earlier one would end the lifetime of keys written at the later time.
TEMPLATE_TEST_CASE("a clock that steps back never expires a key written at a later time",
                   "[lifetime]", ScalableBloomFilter, ConcurrentScalableBloomFilter) {
  for (const std::uint32_t window : {0u, 3u}) {
    INFO("max_slices " << window);
    const UnixSeconds t = 1'000'000;
    ManualClock clock(t);
    TestType f(timed_options(300, 3600s, window), clock);
    REQUIRE(f.insert(std::uint64_t{42}));
    clock.set(t - 3600);  // a lifetime behind
    std::uint64_t next = 0;
    while (f.slice_count() < 2) f.insert(present_key(next++, 21));
    clock.set(t);  // the second key 42 was written at
    f.insert(std::uint64_t{7});
    CHECK(f.contains(std::uint64_t{42}));
    clock.set(t + 3599);
    f.insert(std::uint64_t{8});
    CHECK(f.contains(std::uint64_t{42}));  // a lifetime from its insert
    for (const auto& s : f.stats().slices) CHECK(s.opened_at >= t);
  }
}

// A clock before 1970 or past the year 36800 (kLatestTime) is taken as those bounds: no
// overflow of open time + lifetime (UBSan builds), and the filter's own loader takes
// what it writes.
TEMPLATE_TEST_CASE("a clock out of range is clamped to the times a filter can store",
                   "[lifetime][serialization]", ScalableBloomFilter, ConcurrentScalableBloomFilter) {
  for (const UnixSeconds reading : {std::numeric_limits<UnixSeconds>::min(), UnixSeconds{-1},
                                    kLatestTime + 1, std::numeric_limits<UnixSeconds>::max() - 60}) {
    INFO("clock " << reading);
    ManualClock clock(reading);
    TestType f(timed_options(100, 30 * 86400s), clock);
    for (std::uint64_t i = 0; i < 300; ++i) f.insert(present_key(i, 22));
    std::uint64_t missing = 0;
    for (std::uint64_t i = 0; i < 300; ++i) missing += !f.contains(present_key(i, 22));
    CHECK(missing == 0);  // nothing expired between writes at one clamped time
    CHECK(f.rotations() == 0);
    const UnixSeconds expected = reading < 0 ? 0 : kLatestTime;
    for (const auto& s : f.stats().slices) CHECK(s.opened_at == expected);
    std::string blob;
    if constexpr (std::is_same_v<TestType, ScalableBloomFilter>) {
      blob = to_bytes(f);
    } else {
      blob = to_bytes(f.to_plain());
    }
    const auto loaded = from_bytes<ScalableBloomFilter>(blob);
    CHECK(loaded.size() == 300);
  }
}

// The loaders refuse open times that decrease from the oldest slice to the newest: every
// filter the library writes keeps them in order (a slice opens no earlier than the newest:
// open_slice, and the concurrent filter's open_timed; expiry drops the oldest), through
// rotations, expiries and a clock that steps back, so each round-trips.
TEMPLATE_TEST_CASE("timed filters round-trip through rotations, expiries and a clock that steps back",
                   "[lifetime][serialization]", ScalableBloomFilter, CountingBloomFilter, LevelDbCompatibleFilter,
                   ConcurrentScalableBloomFilter) {
  for (const std::uint32_t window : {0u, 3u}) {
    INFO("max_slices " << window);
    ManualClock clock(1'000'000);
    TestType f(timed_options(200, 3000s, window), clock);
    std::uint64_t next = 0;
    for (int step = 0; step < 40; ++step) {
      INFO("step " << step);
      for (int i = 0; i < 60; ++i) f.insert(present_key(next++, 31));
      clock.advance(step % 7 == 6 ? -3500s : 700s);  // now and then another server's clock, behind
      const auto plain = [&] {
        if constexpr (std::is_same_v<TestType, ConcurrentScalableBloomFilter>) {
          return f.to_plain();
        } else {
          return f;
        }
      }();
      for (std::size_t i = 1; i < plain.slice_count(); ++i) {
        REQUIRE(plain.slices()[i].opened_at() >= plain.slices()[i - 1].opened_at());
      }
      using Plain = std::remove_cvref_t<decltype(plain)>;
      const std::string blob = to_bytes(plain);
      REQUIRE(from_bytes<Plain>(blob) == plain);
      REQUIRE(FilterView(blob).size() == plain.size());
    }
    CHECK(f.rotations() > 0);
  }
}
