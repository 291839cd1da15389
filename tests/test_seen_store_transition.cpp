// SeenStore under a change of options: each user moves lazily, on their next write, to a
// TransitionFilter that answers from both filters for the transition period; time
// windows (Options::slice_lifetime) through the store. Time comes from a ManualClock.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "segbloom/envelope.hpp"
#include "segbloom/memory_backend.hpp"
#include "segbloom/scalable_bloom_filter.hpp"
#include "segbloom/seen_store.hpp"
#include "segbloom/serialization.hpp"
#include "segbloom/transition_filter.hpp"
#include "segbloom/transition_serialization.hpp"
#include "support/rate_checks.hpp"
#include "support/stats.hpp"
#include "support/store_harness.hpp"
#if SEGBLOOM_STORE_HAVE_LEVELDB
#include "segbloom/leveldb_backend.hpp"
#endif

using namespace segbloom;
using namespace std::chrono_literals;
using segbloom::test::absent_key;
using segbloom::test::binomial_upper;
using segbloom::test::poisson_upper;
using segbloom::test::present_key;

namespace {

Options policy(double rate) {
  Options o = default_seen_filter_options();
  o.capacity = 2000;
  o.false_positive_rate = rate;
  return o;
}

std::vector<std::uint64_t> ids(std::uint64_t n, std::uint64_t salt) {
  std::vector<std::uint64_t> v(n);
  for (std::uint64_t i = 0; i < n; ++i) v[i] = present_key(i, salt);
  return v;
}

// The kind of filter stored for `user`.
std::uint8_t stored_kind(StoreBackend& backend, const std::string& user) {
  std::uint8_t kind = 0;
  backend.read(user, [&](std::string_view bytes, std::uint64_t) {
    kind = envelope::read_header(bytes, 0, LoadLimits{}).kind;
  });
  return kind;
}

std::shared_ptr<StoreBackend> test_backend(segbloom::test::TempDir& dir) {
#if SEGBLOOM_STORE_HAVE_LEVELDB
  return make_leveldb_backend({.path = dir / "db"});
#else
  (void)dir;
  return make_memory_backend();
#endif
}

}  // namespace

TEST_CASE("SeenStore moves a user to new options on their next write, through a transition",
          "[store][transition]") {
  segbloom::test::TempDir dir;
  ManualClock clock;
  const auto backend = test_backend(dir);
  const auto old_items = ids(1500, 1);
  {
    SeenStore store({.backend = backend, .filter = policy(0.001), .clock = &clock});
    store.mark_seen("alice", old_items);
    store.mark_seen("bob", old_items);
  }
  REQUIRE(stored_kind(*backend, "alice") == FilterKind<ScalableBloomFilter>::id);

  SeenStore store({.backend = backend, .filter = policy(0.0001), .clock = &clock,
                   .transition_period = 7 * 24h});
  // A read moves nobody: the old filter answers as before.
  CHECK(store.filter_unseen("alice", old_items).empty());
  CHECK(stored_kind(*backend, "alice") == FilterKind<ScalableBloomFilter>::id);

  // alice's next write opens the new filter beside the old one.
  clock.advance(24h);
  const auto new_items = ids(500, 2);
  store.mark_seen("alice", new_items);
  CHECK(stored_kind(*backend, "alice") == FilterKind<TransitionFilter<ScalableBloomFilter>>::id);
  CHECK(stored_kind(*backend, "bob") == FilterKind<ScalableBloomFilter>::id);  // not written
  CHECK(store.filter_unseen("alice", old_items).empty());  // the old filter still answers
  CHECK(store.filter_unseen("alice", new_items).empty());
  backend->read("alice", [&](std::string_view bytes, std::uint64_t) {
    const auto pair = from_bytes<TransitionFilter<ScalableBloomFilter>>(bytes, LoadLimits{}, clock);
    CHECK(pair.in_transition());
    CHECK(pair.options() == policy(0.0001));
    REQUIRE(pair.previous() != nullptr);
    CHECK(pair.previous()->options() == policy(0.001));
    CHECK(pair.transition_ends_at() == clock.now() + 7 * 86400);
  });

  // Within the period a write keeps the pair; after it the old filter is dropped.
  clock.advance(6 * 24h);
  store.mark_seen("alice", ids(10, 3));
  CHECK(stored_kind(*backend, "alice") == FilterKind<TransitionFilter<ScalableBloomFilter>>::id);
  CHECK(store.filter_unseen("alice", old_items).empty());
  clock.advance(25h);
  // The period is over: the old filter never answers, even before the next write.
  const auto forgotten = store.filter_unseen("alice", old_items);
  CHECK(forgotten.size() >= old_items.size() - binomial_upper(old_items.size(), 0.0001));
  store.mark_seen("alice", ids(10, 4));
  CHECK(stored_kind(*backend, "alice") == FilterKind<ScalableBloomFilter>::id);
  backend->read("alice", [&](std::string_view bytes, std::uint64_t) {
    CHECK(from_bytes<ScalableBloomFilter>(bytes).options() == policy(0.0001));
  });
  CHECK(store.filter_unseen("alice", new_items).empty());  // written to the new filter

  // The new filter meets the new target: check_rate on the stored filter (absent keys
  // sized from its estimate, here the 3 * 10^7 cap: 6 sigma is ~25 % of the ~650 hits),
  // and the store answers exactly as that filter does.
  std::string blob;
  backend->read("alice", [&](std::string_view bytes, std::uint64_t) { blob.assign(bytes); });
  const auto stored = from_bytes<ScalableBloomFilter>(blob);
  REQUIRE(stored.options() == policy(0.0001));
  segbloom::test::check_rate(stored, 0.0001, 5);
  std::vector<std::uint64_t> absent(200'000), expected_unseen;
  for (std::uint64_t i = 0; i < absent.size(); ++i) {
    absent[i] = absent_key(i, 6);
    if (!stored.contains(absent[i])) expected_unseen.push_back(absent[i]);
  }
  const bool agrees = store.filter_unseen("alice", absent) == expected_unseen;  // not 200 000 ids in a report
  CHECK(agrees);
}

TEST_CASE("SeenStore: a new seed applies to new users; a stored user keeps theirs and still moves",
          "[store][transition]") {
  ManualClock clock;
  const auto backend = make_memory_backend();
  const auto old_items = ids(1000, 11);
  Options before = policy(0.001);
  before.seed = 7;
  SeenStore({.backend = backend, .filter = before, .clock = &clock}).mark_seen("carol", old_items);

  Options after = policy(0.0001);
  after.seed = 8;
  SeenStore store({.backend = backend, .filter = after, .clock = &clock});
  const auto new_items = ids(100, 12);
  // Until 1 Dec 2026 this threw std::invalid_argument (a transition keeps the seed) on every write.
  store.mark_seen("carol", new_items);
  CHECK(store.filter_unseen("carol", old_items).empty());
  CHECK(store.filter_unseen("carol", new_items).empty());
  Options moved_to = after;
  moved_to.seed = 7;
  backend->read("carol", [&](std::string_view bytes, std::uint64_t) {
    const auto pair = from_bytes<TransitionFilter<ScalableBloomFilter>>(bytes, LoadLimits{}, clock);
    CHECK(pair.in_transition());
    CHECK(pair.options() == moved_to);  // the new rate, the old seed
  });
  // After the period the user stays on their seed: no second transition.
  clock.advance(8 * 24h);
  store.mark_seen("carol", ids(10, 13));
  store.mark_seen("carol", ids(10, 14));
  CHECK(stored_kind(*backend, "carol") == FilterKind<ScalableBloomFilter>::id);
  backend->read("carol", [&](std::string_view bytes, std::uint64_t) {
    CHECK(from_bytes<ScalableBloomFilter>(bytes).options() == moved_to);
  });
  // A new user gets the new seed.
  store.mark_seen("dave", new_items);
  backend->read("dave", [&](std::string_view bytes, std::uint64_t) {
    CHECK(from_bytes<ScalableBloomFilter>(bytes).options() == after);
  });
}

TEST_CASE("no user is shown a repeat across a transition", "[store][transition]") {
  segbloom::test::TempDir dir;
  ManualClock clock;
  const auto backend = test_backend(dir);
  constexpr int kUsers = 40;
  constexpr int kDays = 11;  // to the end of the transition (items only in the old
                            // filter may come back after it, by design)
  std::vector<std::unordered_set<std::uint64_t>> truth(kUsers);
  std::mt19937_64 rng(7);
  std::uint64_t repeats = 0;
  std::uint64_t shown = 0;
  for (int day = 0; day < kDays; ++day) {
    // Day 4: the policy changes (0.1 % -> 0.01 %); each user's 7-day transition starts
    // at their first write of day 4 and runs to the start of day 11.
    SeenStore store({.backend = backend, .filter = policy(day < 4 ? 0.001 : 0.0001),
                     .clock = &clock, .transition_period = 7 * 24h});
    for (int user = 0; user < kUsers; ++user) {
      for (int request = 0; request < 5; ++request) {
        std::vector<std::uint64_t> candidates(30);
        for (auto& c : candidates) c = rng() % 3000;  // a small catalog: many repeats proposed
        for (const std::uint64_t item : store.take_unseen(std::uint64_t(user), candidates, 6)) {
          repeats += !truth[user].insert(item).second;
          ++shown;
        }
      }
    }
    clock.advance(24h);
  }
  CHECK(shown > 4000);
  CHECK(repeats == 0);
}

TEST_CASE("a timed seen filter forgets what a user saw a lifetime ago", "[store][lifetime]") {
  segbloom::test::TempDir dir;
  ManualClock clock;
  Options timed = policy(0.001);
  timed.max_slices = 0;
  timed.slice_lifetime = 30 * 24h;  // "not in the last 30 days"
  const auto backend = test_backend(dir);
  SeenStore store({.backend = backend, .filter = timed, .clock = &clock});
  const auto first = ids(300, 6);
  store.mark_seen("carol", first);
  clock.advance(29 * 24h);
  store.mark_seen("carol", ids(10, 7));
  CHECK(store.filter_unseen("carol", first).empty());  // within 30 days: all seen
  clock.advance(32 * 24h);                              // 61 days: past two lifetimes
  store.mark_seen("carol", ids(10, 8));
  // That write dropped every slice (the one opened at day 0 expired at day 60), so the
  // stored filter holds only its 10 items, and it alone answers for `first`.
  std::string blob;
  backend->read("carol", [&](std::string_view bytes, std::uint64_t) { blob.assign(bytes); });
  const auto stored = from_bytes<ScalableBloomFilter>(blob);
  CHECK(stored.size() == 10);
  std::uint64_t false_positives = 0;
  for (const auto id : first) false_positives += stored.contains(id);
  const auto unseen = store.filter_unseen("carol", first);
  CHECK(unseen.size() == first.size() - false_positives);
  // 10 items in a slice sized for 2 000 (estimate ~7e-9): about 2e-6 hits expected among
  // the 300, where binomial_upper's floor would still allow 19. The exact 1e-9 quantile:
  const double mean = double(first.size()) * stored.estimated_false_positive_rate();
  INFO("expected false positives " << mean);
  CHECK(false_positives <= poisson_upper(mean));
}
