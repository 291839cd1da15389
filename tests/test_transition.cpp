// TransitionFilter and TransitionView: both filters answer during the period, writes go
// to the new one, the old one stops answering at the end and is dropped; no false
// negatives across the transition; serialization of the pair in every archive and the
// envelope, and refusal of damaged blobs. Time comes from a ManualClock.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <cereal/archives/binary.hpp>
#include <cereal/archives/json.hpp>
#include <cereal/archives/portable_binary.hpp>

#include <xxhash.h>

#include "segbloom/filter_view.hpp"
#include "segbloom/serialization.hpp"
#include "segbloom/transition_filter.hpp"
#include "segbloom/transition_serialization.hpp"
#include "segbloom/transition_view.hpp"
#include "support/rate_checks.hpp"
#include "support/stats.hpp"
#include "support/throws.hpp"
#include "support/corruption.hpp"

using namespace segbloom;
using namespace std::chrono_literals;
using segbloom::test::absent_key;
using segbloom::test::binomial_upper;
using segbloom::test::present_key;

namespace {

constexpr std::chrono::seconds kWeek = kDefaultTransitionPeriod;

Options options_of(std::uint64_t capacity, double rate, std::uint32_t window = 0,
                   std::uint64_t seed = 7) {
  Options o;
  o.capacity = capacity;
  o.false_positive_rate = rate;
  o.max_slices = window;
  o.seed = seed;
  return o;
}

template <class F>
F filled(const Options& o, std::uint64_t n, std::uint64_t salt, const Clock& clock) {
  F f(o, clock);
  for (std::uint64_t i = 0; i < n; ++i) f.insert(present_key(i, salt));
  return f;
}

// Keys present_key(i, salt) for i < n not found.
template <class T>
std::uint64_t missing(const T& filter, std::uint64_t n, std::uint64_t salt) {
  std::uint64_t count = 0;
  for (std::uint64_t i = 0; i < n; ++i) count += !filter.contains(present_key(i, salt));
  return count;
}

// A pair in transition: `before` keys (salt 1) in the previous filter, `during` keys
// (salt 2) written after the change, at clock time start + 1 day.
template <class F>
TransitionFilter<F> sample_pair(ManualClock& clock, std::uint64_t before, std::uint64_t during,
                                std::uint32_t window = 0) {
  auto pair = TransitionFilter<F>::begin(filled<F>(options_of(100, 0.01, window), before, 1, clock),
                                         options_of(200, 0.001, window), kWeek, clock);
  clock.advance(24h);
  for (std::uint64_t i = 0; i < during; ++i) pair.insert(present_key(i, 2));
  return pair;
}

template <class OArchive, class IArchive, class T>
T cereal_round_trip(const T& original, const Clock& clock) {
  std::stringstream stream;
  {
    OArchive ar(stream);
    ar(original);
  }
  T loaded(Options{}, clock);
  {
    IArchive ar(stream);
    ar(loaded);
  }
  return loaded;
}

// Same value, same answers for present and absent keys of both salts.
template <class A, class B>
void check_same_answers(const A& expected, const B& actual, std::uint64_t n) {
  std::uint64_t mismatches = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    for (const std::uint64_t salt : {1, 2}) {
      mismatches += expected.contains(present_key(i, salt)) != actual.contains(present_key(i, salt));
      mismatches += expected.contains(absent_key(i, salt)) != actual.contains(absent_key(i, salt));
    }
  }
  CHECK(mismatches == 0);
}

template <class T>
void check_same(const T& original, const T& loaded, std::uint64_t n) {
  REQUIRE(loaded == original);
  CHECK(loaded.transition_ends_at() == original.transition_ends_at());
  CHECK(loaded.transition_period() == original.transition_period());
  CHECK(loaded.in_transition() == original.in_transition());
  CHECK(loaded.size() == original.size());
  CHECK(loaded.options() == original.options());
  check_same_answers(original, loaded, n);
}

// TransitionView == the loaded pair, single and batched.
template <class T>
void check_view(const TransitionView& view, const T& pair, std::uint64_t n) {
  CHECK(view.kind() == FilterKind<T>::id);
  CHECK(view.in_transition() == pair.in_transition());
  CHECK(view.size() == pair.size());
  CHECK(view.current().options() == pair.options());
  check_same_answers(pair, view, n);
  std::vector<std::uint64_t> keys;
  for (std::uint64_t i = 0; i < n; ++i) {
    keys.push_back(present_key(i, 1));
    keys.push_back(present_key(i, 2));
    keys.push_back(absent_key(i, 1));
  }
  std::vector<char> from_view(keys.size());
  std::vector<char> from_pair(keys.size());
  bool found[300];
  std::size_t view_count = 0, pair_count = 0;
  for (std::size_t at = 0; at < keys.size(); at += 300) {
    const std::size_t len = std::min<std::size_t>(300, keys.size() - at);
    const std::span<const std::uint64_t> part(keys.data() + at, len);
    // Each batch must write every answer: the buffer starts with the wrong ones.
    for (std::size_t i = 0; i < len; ++i) found[i] = !pair.contains(part[i]);
    view_count += view.contains_many(part, std::span<bool>(found, len));
    for (std::size_t i = 0; i < len; ++i) from_view[at + i] = found[i];
    for (std::size_t i = 0; i < len; ++i) found[i] = !pair.contains(part[i]);
    pair_count += pair.contains_many(part, std::span<bool>(found, len));
    for (std::size_t i = 0; i < len; ++i) from_pair[at + i] = found[i];
  }
  CHECK(from_view == from_pair);
  CHECK(view_count == pair_count);
  std::uint64_t single_mismatches = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) single_mismatches += pair.contains(keys[i]) != static_cast<bool>(from_pair[i]);
  CHECK(single_mismatches == 0);
}

void put(std::string& out, std::uint64_t value, unsigned bytes) {
  for (unsigned i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

std::string envelope_of(const std::string& payload, std::uint64_t kind) {
  std::string blob = "SGBF";
  put(blob, 1, 1);
  put(blob, kind, 1);
  put(blob, payload.size(), 8);
  put(blob, XXH64(payload.data(), payload.size(), 0), 8);
  return blob + payload;
}

// A transition payload written by hand from the documented layout.
struct RawTransition {
  std::uint64_t version = 1;
  std::uint64_t kind = 4;
  std::int64_t ends_at = 0;
  std::int64_t period = 0;
  std::uint64_t has_previous = 0;
  std::string current;
  std::optional<std::string> previous;
  std::optional<std::uint64_t> current_length;  // as stored, when not current.size()

  std::string payload() const {
    std::string p;
    put(p, 1, 1);
    put(p, version, 4);
    put(p, kind, 1);
    put(p, static_cast<std::uint64_t>(ends_at), 8);
    put(p, static_cast<std::uint64_t>(period), 8);
    put(p, has_previous, 1);
    put(p, current_length.value_or(current.size()), 8);
    p += current;
    if (previous) {
      put(p, previous->size(), 8);
      p += *previous;
    }
    return p;
  }
  std::string blob() const { return envelope_of(payload(), kind); }
};

template <class F>
RawTransition raw_of(const TransitionFilter<F>& pair) {
  RawTransition r;
  r.kind = FilterKind<TransitionFilter<F>>::id;
  r.ends_at = pair.transition_ends_at();
  r.period = pair.transition_period().count();
  r.has_previous = pair.previous() != nullptr;
  r.current = to_bytes(pair.current());
  if (pair.previous()) r.previous = to_bytes(*pair.previous());
  return r;
}

using ScalablePair = TransitionFilter<ScalableBloomFilter>;

// Refused by from_bytes and TransitionView with a message containing `what`.
void check_refused(const std::string& blob, const std::string& what, const Clock& clock,
                   const LoadLimits& limits = {}) {
  CHECK_FORMAT_ERROR(from_bytes<ScalablePair>(blob, limits, clock), what);
  CHECK_THROWS_AS(from_bytes<ScalablePair>(blob, limits, clock), FormatError);
  CHECK_FORMAT_ERROR(TransitionView(blob, limits, clock), what);
}

}  // namespace

TEMPLATE_TEST_CASE("both filters answer during the period, writes go to the new one, then the old "
                   "one is ignored and dropped",
                   "[transition]", ScalableBloomFilter, CountingBloomFilter, LevelDbCompatibleFilter) {
  using F = TestType;
  ManualClock clock;
  const UnixSeconds start = clock.now();
  const F old_filter = filled<F>(options_of(300, 0.01), 1000, 1, clock);
  const Options next = options_of(500, 0.001);
  auto pair = TransitionFilter<F>::begin(old_filter, next, kWeek, clock);

  CHECK(pair.in_transition());
  CHECK(pair.transition_ends_at() == start + kWeek.count());
  CHECK(pair.transition_period() == kWeek);
  REQUIRE(pair.previous() != nullptr);
  CHECK(*pair.previous() == old_filter);
  CHECK(pair.options() == next);
  CHECK(pair.current().size() == 0);
  CHECK(missing(pair, 1000, 1) == 0);

  // Writes: the new filter only. A key the old filter holds is not new, but is written.
  clock.advance(24h);
  std::uint64_t new_keys = 0;
  for (std::uint64_t i = 0; i < 800; ++i) new_keys += pair.insert(present_key(i, 2));
  CHECK(new_keys >= 800 - binomial_upper(800, 0.011));
  CHECK_FALSE(pair.insert(present_key(5, 1)));
  CHECK(pair.current().contains(present_key(5, 1)));
  CHECK(*pair.previous() == old_filter);
  CHECK(missing(pair.current(), 800, 2) == 0);
  CHECK(missing(pair, 1000, 1) == 0);
  CHECK(pair.size() == pair.current().size() + old_filter.size());

  // The last second of the period, then its end.
  clock.set(start + kWeek.count() - 1);
  CHECK(pair.in_transition());
  CHECK(missing(pair, 1000, 1) == 0);
  clock.advance(1s);
  CHECK_FALSE(pair.in_transition());
  REQUIRE(pair.previous() != nullptr);  // held, but never answers
  std::uint64_t mismatches = 0;
  std::uint64_t old_found = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const bool found = pair.contains(present_key(i, 1));
    mismatches += found != pair.current().contains(present_key(i, 1));
    old_found += found;
  }
  CHECK(mismatches == 0);
  CHECK(old_found <= 1 + binomial_upper(1000, 0.001));  // key 5 was written again
  CHECK(pair.contains(present_key(5, 1)));
  CHECK(pair.size() == pair.current().size());

  // The next write drops it.
  pair.insert(present_key(9999, 2));
  CHECK(pair.previous() == nullptr);
  CHECK(pair.transition_ends_at() == 0);
  CHECK(pair.transition_period() == 0s);
  CHECK(missing(pair, 800, 2) == 0);
  CHECK(pair.memory_bytes() < old_filter.memory_bytes() + pair.current().memory_bytes());
}

// insert_many of `keys` into `batched` against one insert per key into `single` (a copy of
// it): {results that differ, the batch's count, inserts that returned true}.
template <class Pair>
std::tuple<std::size_t, std::size_t, std::size_t> insert_many_against_single(Pair& batched, Pair& single,
                                                                            std::span<const std::uint64_t> keys) {
  std::unique_ptr<bool[]> flags(new bool[keys.size()]);
  const std::size_t count = batched.insert_many(keys, std::span<bool>(flags.get(), keys.size()));
  std::size_t differ = 0, expected = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const bool is_new = single.insert(keys[i]);
    expected += is_new;
    differ += flags[i] != is_new;
  }
  return {differ, count, expected};
}

TEST_CASE("a pair's insert_many gives the results and bits of one insert per key", "[transition][batch]") {
  ManualClock clock(1'700'000'000);
  const std::uint32_t window = GENERATE(0u, 4u);
  INFO("window " << window);
  auto batched = sample_pair<ScalableBloomFilter>(clock, 300, 50, window);
  auto single = batched;
  // Keys of the previous filter (reported old), of the current one, new keys, and
  // repeats inside the batch; 1000 of them, not a multiple of the group size.
  std::vector<std::uint64_t> keys;
  for (std::uint64_t i = 0; i < 250; ++i) {
    keys.push_back(present_key(i, 1));
    keys.push_back(present_key(i % 60, 2));
    keys.push_back(absent_key(i, 3));
    keys.push_back(absent_key(i / 2, 3));
  }
  const auto [differ, count, expected] = insert_many_against_single(batched, single, std::span<const std::uint64_t>(keys));
  CHECK(differ == 0);
  CHECK(count == expected);
  CHECK(expected >= 125);  // the absent keys, once each
  CHECK(expected < keys.size());  // some keys were reported present
  // Growing mode forgets nothing: keys of either filter and every repeat were reported.
  if (window == 0) CHECK(expected < keys.size() / 2);
  CHECK(batched.current() == single.current());
  CHECK(batched.in_transition());
}

// A pair's batch against its single lookups: how many of `found` differ from contains, and
// how many keys contains finds.
template <class Pair>
std::pair<std::size_t, std::size_t> batch_against_single(const Pair& pair, std::span<const std::uint64_t> keys,
                                                         const bool* found) {
  std::size_t mismatches = 0, expected_count = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const bool expected = pair.contains(keys[i]);
    expected_count += expected;
    mismatches += found[i] != expected;
  }
  return {mismatches, expected_count};
}

TEMPLATE_TEST_CASE("a pair's contains_many answers as contains, through each filter's batch path",
                   "[transition][batch]", ScalableBloomFilter, CountingBloomFilter, LevelDbCompatibleFilter) {
  // The current filter answers the whole batch, the previous one the keys it misses,
  // from the digests of the first pass: every layout pair (a policy change may change the
  // layout), a grown previous filter, batch lengths around the groups (32, 64 for the
  // blocked kernel), and the period over (the previous filter no longer answers).
  ManualClock clock(1'700'000'000);
  const Layout before = GENERATE(Layout::classic, Layout::blocked);
  const Layout after = GENERATE(Layout::classic, Layout::blocked);
  Options old_options = options_of(300, 0.01);
  old_options.layout = before;
  Options new_options = options_of(500, 0.001);
  new_options.layout = after;
  // LevelDB's format has no blocked layout: its filters stay classic.
  if (std::is_same_v<TestType, LevelDbCompatibleFilter>) old_options.layout = new_options.layout = Layout::classic;
  auto pair = TransitionFilter<TestType>::begin(filled<TestType>(old_options, 2'000, 1, clock), new_options, kWeek, clock);
  auto twin = pair;  // takes the same keys one insert at a time
  std::vector<std::uint64_t> added;  // current filter's keys, some already in the previous one
  for (std::uint64_t i = 0; i < 400; ++i) {
    added.push_back(present_key(i, 2));
    if (i % 8 == 0) added.push_back(present_key(i, 1));
  }
  const auto [insert_mismatches, inserted_count, twin_count] =
      insert_many_against_single(pair, twin, std::span<const std::uint64_t>(added));
  CHECK(insert_mismatches == 0);
  CHECK(inserted_count == twin_count);
  CHECK(inserted_count <= 400);  // the previous filter's 50 keys are not new
  CHECK(pair.current() == twin.current());
  INFO("layouts " << static_cast<int>(old_options.layout) << " -> " << static_cast<int>(new_options.layout) << ", "
                  << pair.previous()->slice_count() << " previous slices");
  REQUIRE(pair.previous()->slice_count() >= 3);
  const std::string blob = to_bytes(pair);  // the stored pair answers the same batches (TransitionView)
  std::vector<std::uint64_t> keys;  // previous only, current only, absent
  for (std::uint64_t i = 0; i < 1'500; ++i) keys.push_back(i % 3 == 0 ? present_key(i, 1) : i % 3 == 1 ? present_key(i % 400, 2) : absent_key(i, 1));
  std::unique_ptr<bool[]> found(new bool[keys.size()]);
  std::unique_ptr<bool[]> viewed(new bool[keys.size()]);
  for (const bool period_over : {false, true}) {
    if (period_over) clock.advance(kWeek);
    REQUIRE(pair.in_transition() == !period_over);
    const TransitionView view(blob, {}, clock);
    REQUIRE(view.in_transition() == !period_over);
    std::size_t mismatches = 0, count_mismatches = 0, hits = 0, offset = 0, view_mismatches = 0;
    for (const std::size_t length : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{32}, std::size_t{33},
                                     std::size_t{65}, std::size_t{300}, std::size_t{1'000}}) {
      const std::span<const std::uint64_t> batch(keys.data() + offset % 500, length);
      std::fill_n(found.get(), length, !period_over);  // every answer must be written
      std::fill_n(viewed.get(), length, !period_over);
      const std::size_t count = pair.contains_many(batch, std::span<bool>(found.get(), length));
      const auto [differ, expected_count] = batch_against_single(pair, batch, found.get());
      mismatches += differ;
      count_mismatches += count != expected_count;
      count_mismatches += view.contains_many(batch, std::span<bool>(viewed.get(), length)) != expected_count;
      view_mismatches += !std::equal(found.get(), found.get() + length, viewed.get());
      for (std::size_t i = 0; i < length; ++i) view_mismatches += view.contains(batch[i]) != found[i];
      hits += expected_count;
      offset += length;
    }
    CHECK(mismatches == 0);
    CHECK(count_mismatches == 0);
    CHECK(view_mismatches == 0);
    // In transition both present thirds are found; after it, the current filter's third.
    CHECK(hits + 10 >= (period_over ? 1 : 2) * offset / 3);  // a third of each batch, give or take a key
    CHECK(hits <= (period_over ? 1 : 2) * offset / 3 + offset / 10);
  }
}

TEST_CASE("a pair's contains_many asks more slices than one filter may hold", "[transition][batch]") {
  // Two full windows of kMaxSlices (64) slices: 128 slices in one batch (detail::kMaxAskedSlices),
  // through the blocked kernel and the classic group test, loaded and viewed.
  ManualClock clock(1'700'000'000);
  const Layout layout = GENERATE(Layout::classic, Layout::blocked);
  Options o = options_of(4'000, 0.01, kMaxSlices);
  o.layout = layout;
  constexpr std::uint64_t kFilled = 12'000;  // each window's 64 slices opened
  auto pair = TransitionFilter<ScalableBloomFilter>::begin(filled<ScalableBloomFilter>(o, kFilled, 1, clock), o, kWeek, clock);
  for (std::uint64_t i = 0; i < kFilled; ++i) pair.insert(present_key(i, 2));
  REQUIRE(pair.previous()->slice_count() + pair.current().slice_count() == 2 * kMaxSlices);  // the most a batch asks
  std::vector<std::uint64_t> keys;
  for (std::uint64_t i = 0; i < 1'500; ++i) {
    keys.push_back(i % 3 == 0 ? present_key(kFilled - 1 - i, 1) : i % 3 == 1 ? present_key(kFilled - 1 - i, 2) : absent_key(i, 1));
  }
  std::unique_ptr<bool[]> found(new bool[keys.size()]);
  const std::size_t count = pair.contains_many(std::span<const std::uint64_t>(keys), std::span<bool>(found.get(), keys.size()));
  const auto [mismatches, expected_count] = batch_against_single(pair, keys, found.get());
  CHECK(mismatches == 0);
  CHECK(count == expected_count);
  CHECK(expected_count >= 2 * keys.size() / 3 - 1);  // the newest keys of both windows
  // The stored pair asks the same 128 slices, over the blob (TransitionView).
  const std::string blob = to_bytes(pair);
  const TransitionView view(blob, {}, clock);
  std::unique_ptr<bool[]> viewed(new bool[keys.size()]);
  CHECK(view.contains_many(std::span<const std::uint64_t>(keys), std::span<bool>(viewed.get(), keys.size())) == count);
  CHECK(std::equal(found.get(), found.get() + keys.size(), viewed.get()));
}

TEST_CASE("finish_if_due, change_options and their refusals", "[transition]") {
  ManualClock clock;
  const Options first = options_of(100, 0.01);
  ScalablePair pair(first, clock);
  CHECK_FALSE(pair.in_transition());
  CHECK(pair.previous() == nullptr);
  CHECK_FALSE(pair.finish_if_due());
  for (std::uint64_t i = 0; i < 100; ++i) pair.insert(present_key(i, 1));

  CHECK_FALSE(pair.change_options(first));  // nothing to change
  CHECK(pair.previous() == nullptr);

  Options second = options_of(100, 0.001);
  CHECK_THROWS_AS(pair.change_options(second, -1s), std::invalid_argument);
  CHECK_THROWS_AS(pair.change_options(second, kMaxTransitionPeriod + 1s), std::invalid_argument);
  Options reseeded = second;
  reseeded.seed = 8;
  CHECK_THROWS_MATCHES(pair.change_options(reseeded), std::invalid_argument, segbloom::test::MessageContains("keeps the seed"));
  Options bad = second;
  bad.false_positive_rate = 2;
  CHECK_THROWS_AS(pair.change_options(bad), std::invalid_argument);
  CHECK(pair.previous() == nullptr);  // every refusal changed nothing
  CHECK(pair.options() == first);

  REQUIRE(pair.change_options(second, 3600s));
  CHECK(pair.in_transition());
  CHECK(pair.transition_ends_at() == clock.now() + 3600);
  CHECK(missing(pair, 100, 1) == 0);

  // A second change during the transition would cut it short: refused, naming the end.
  Options third = options_of(100, 0.0001);
  CHECK_THROWS_AS(pair.change_options(third), std::logic_error);
  CHECK_THROWS_MATCHES(pair.change_options(third), std::logic_error, segbloom::test::MessageContains(std::to_string(clock.now() + 3600)));
  CHECK_FALSE(pair.change_options(second));  // already there
  CHECK(pair.options() == second);

  clock.advance(3600s);
  CHECK_FALSE(pair.in_transition());
  REQUIRE(pair.change_options(third, 60s));  // drops the old pair's previous first
  REQUIRE(pair.previous() != nullptr);
  CHECK(pair.previous()->options() == second);
  clock.advance(60s);
  CHECK(pair.finish_if_due());
  CHECK(pair.previous() == nullptr);
  CHECK_FALSE(pair.finish_if_due());

  // A period of 0: the previous filter never answers.
  auto instant = ScalablePair::begin(ScalableBloomFilter(first, clock), second, 0s, clock);
  CHECK(instant.previous() == nullptr);
  CHECK_THROWS_AS(ScalablePair::begin(ScalableBloomFilter(first, clock), reseeded, kWeek, clock),
                  std::invalid_argument);

  // A refused begin leaves the filter moved into it as it was, so the caller can retry.
  ScalableBloomFilter kept(first, clock);
  kept.insert(std::uint64_t{99});
  const ScalableBloomFilter copy = kept;
  Options invalid = second;
  invalid.false_positive_rate = 2;
  CHECK_THROWS_AS(ScalablePair::begin(std::move(kept), reseeded, kWeek, clock), std::invalid_argument);
  CHECK_THROWS_AS(ScalablePair::begin(std::move(kept), second, -1s, clock), std::invalid_argument);
  CHECK_THROWS_AS(ScalablePair::begin(std::move(kept), invalid, kWeek, clock), std::invalid_argument);
  CHECK(kept == copy);  // NOLINT(bugprone-use-after-move): the point of the check
  const auto retried = ScalablePair::begin(std::move(kept), second, kWeek, clock);
  CHECK(retried.contains(std::uint64_t{99}));
  // An lvalue is copied.
  const auto from_copy = ScalablePair::begin(copy, second, kWeek, clock);
  CHECK(from_copy.contains(std::uint64_t{99}));
  CHECK(copy.size() == 1);

  // A clock out of range is read as filters read it, within [0, 2^40] (filter_time): near the
  // end of time the period ends a week after 2^40, not in the past (the previous filter
  // dropped at once) nor at INT64_MAX, which no loader takes; before 1970, a week after 0.
  // Either pair round-trips.
  for (const UnixSeconds reading : {std::numeric_limits<UnixSeconds>::max() - 10, std::numeric_limits<UnixSeconds>::min()}) {
    INFO("clock " << reading);
    ManualClock odd(reading);
    const auto at_end = ScalablePair::begin(ScalableBloomFilter(first, odd), second, kWeek, odd);
    CHECK(at_end.in_transition());
    CHECK(at_end.transition_ends_at() == (reading > 0 ? kLatestTime : 0) + kWeek.count());
    CHECK(from_bytes<ScalablePair>(to_bytes(at_end), {}, odd) == at_end);
    CHECK(TransitionView(to_bytes(at_end), {}, odd).in_transition());
  }
}

TEMPLATE_TEST_CASE("no false negatives for keys inserted before and during the transition",
                   "[transition]", ScalableBloomFilter, CountingBloomFilter, LevelDbCompatibleFilter) {
  using F = TestType;
  ManualClock clock;
  // Growing filters that grow several slices on each side of the change.
  auto pair = TransitionFilter<F>(options_of(500, 0.01), clock);
  constexpr std::uint64_t kBefore = 20'000;
  constexpr std::uint64_t kDuring = 20'000;
  for (std::uint64_t i = 0; i < kBefore; ++i) pair.insert(present_key(i, 11));
  REQUIRE(pair.change_options(options_of(1000, 0.001)));
  const UnixSeconds ends = pair.transition_ends_at();

  // Inserts spread over the period, a day at a time; after each day every key inserted
  // so far is found (some during-keys repeat before-keys: test-and-set says "seen").
  std::uint64_t lost_before = 0;
  std::uint64_t lost_during = 0;
  for (int day = 0; day < 7; ++day) {
    const std::uint64_t from = kDuring * static_cast<std::uint64_t>(day) / 7;
    const std::uint64_t to = kDuring * static_cast<std::uint64_t>(day + 1) / 7;
    for (std::uint64_t i = from; i < to; ++i) pair.insert(present_key(i, 12));
    for (std::uint64_t i = 0; i < to; ++i) lost_during += !pair.contains(present_key(i, 12));
    if (clock.now() < ends) lost_before += missing(pair, kBefore, 11);
    clock.advance(24h);
    if (day == 3) {  // a reload in the middle of the period: both filters come back
      pair = from_bytes<TransitionFilter<F>>(to_bytes(pair), {}, clock);
      REQUIRE(pair.in_transition());
      lost_before += missing(pair, kBefore, 11);
    }
  }
  CHECK(lost_before == 0);
  CHECK(lost_during == 0);
  CHECK_FALSE(pair.in_transition());
  CHECK(missing(pair, kDuring, 12) == 0);

  // After a round trip through the envelope and the end of the period.
  const auto loaded = from_bytes<TransitionFilter<F>>(to_bytes(pair), {}, clock);
  CHECK(loaded.previous() == nullptr);  // due: dropped at load
  CHECK(missing(loaded, kDuring, 12) == 0);
  pair.finish_if_due();
  CHECK(pair == loaded);
}

TEMPLATE_TEST_CASE("the false-positive rate meets the new target after the period", "[transition]",
                   ScalableBloomFilter, CountingBloomFilter, LevelDbCompatibleFilter) {
  using F = TestType;
  ManualClock clock;
  const double p_old = 0.01;
  const double p_new = 0.001;
  auto pair = TransitionFilter<F>::begin(filled<F>(options_of(2000, p_old), 6000, 21, clock),
                                         options_of(2000, p_new), kWeek, clock);
  for (std::uint64_t i = 0; i < 6000; ++i) pair.insert(present_key(i, 22));
  constexpr std::uint64_t kProbes = 200'000;
  std::uint64_t during = 0;
  for (std::uint64_t i = 0; i < kProbes; ++i) during += pair.contains(absent_key(i, 23));
  // Either filter may answer: at most the sum of the two targets.
  CHECK(during <= binomial_upper(kProbes, p_old + p_new));
  // Both filters really answer: the pair finds exactly the keys either filter finds,
  // among them some only the old one does.
  std::uint64_t either = 0, old_only = 0;
  for (std::uint64_t i = 0; i < kProbes; ++i) {
    const bool in_old = pair.previous()->contains(absent_key(i, 23));
    const bool in_new = pair.current().contains(absent_key(i, 23));
    either += in_old || in_new;
    old_only += in_old && !in_new;
  }
  INFO("found by the old filter only " << old_only);
  CHECK(during == either);
  CHECK(old_only > 0);

  clock.advance(kWeek);
  std::uint64_t after = 0;
  for (std::uint64_t i = 0; i < kProbes; ++i) after += pair.contains(absent_key(i, 23));
  INFO("during " << during << ", after " << after << " of " << kProbes);
  CHECK(after <= binomial_upper(kProbes, p_new));
  CHECK(after < during);
  CHECK(missing(pair, 6000, 22) == 0);
  // The current filter alone, against its own estimate too (LevelDB's probes have their
  // own, looser model: test_leveldb_filter.cpp).
  if constexpr (!std::is_same_v<F, LevelDbCompatibleFilter>) segbloom::test::check_rate(pair.current(), p_new, 24);
}

TEMPLATE_TEST_CASE("round trips: every archive and the envelope, in and out of transition",
                   "[transition]", ScalableBloomFilter, CountingBloomFilter, LevelDbCompatibleFilter) {
  using F = TestType;
  using Pair = TransitionFilter<F>;
  ManualClock clock;
  const std::uint64_t n = 600;
  std::vector<std::pair<std::string, Pair>> cases;
  cases.emplace_back("in transition", sample_pair<F>(clock, 500, 400));
  cases.emplace_back("window filters", sample_pair<F>(clock, 500, 400, 3));
  cases.emplace_back("no transition", Pair(filled<F>(options_of(100, 0.01), 300, 2, clock), clock));
  cases.emplace_back("empty", Pair(options_of(50, 0.05), clock));
  for (const auto& [name, original] : cases) {
    DYNAMIC_SECTION(name) {
      const Pair binary = cereal_round_trip<cereal::BinaryOutputArchive, cereal::BinaryInputArchive>(original, clock);
      check_same(original, binary, n);
      const Pair portable = cereal_round_trip<cereal::PortableBinaryOutputArchive,
                                              cereal::PortableBinaryInputArchive>(original, clock);
      check_same(original, portable, n);
      const Pair json = cereal_round_trip<cereal::JSONOutputArchive, cereal::JSONInputArchive>(original, clock);
      check_same(original, json, n);

      const std::string blob = to_bytes(original);
      CHECK(blob.size() == 53 + to_bytes(original.current()).size() +
                               (original.previous() ? 8 + to_bytes(*original.previous()).size() : 0));
      const Pair enveloped = from_bytes<Pair>(blob, {}, clock);
      check_same(original, enveloped, n);
      CHECK(to_bytes(enveloped) == blob);
      check_view(TransitionView(blob, {}, clock), original, n);

      std::stringstream stream;
      to_stream(stream, original);
      to_stream(stream, original);
      check_same(original, from_stream<Pair>(stream, {}, clock), n);
      check_same(original, from_stream<Pair>(stream, {}, clock), n);

      // The loaded pair goes on exactly as the original, and its period ends on time.
      Pair a = original;
      Pair b = portable;
      for (std::uint64_t i = 0; i < 500; ++i) REQUIRE(a.insert(present_key(i, 3)) == b.insert(present_key(i, 3)));
      REQUIRE(a == b);
      if (original.in_transition()) {
        clock.set(original.transition_ends_at() - 1);
        CHECK(b.in_transition());
        // Saved now and loaded once the period is over: the previous filter is dropped.
        const std::string late = to_bytes(b);
        clock.advance(1s);
        CHECK_FALSE(b.in_transition());
        const Pair after = from_bytes<Pair>(late, {}, clock);
        CHECK(after.previous() == nullptr);
        CHECK(after.current() == b.current());
        const TransitionView view(late, {}, clock);
        CHECK(view.previous() == nullptr);
        CHECK(view.transition_ends_at() == original.transition_ends_at());
        check_same_answers(after, view, n);
        check_same_answers(b, after, n);  // b ignores its previous filter already
      }
    }
  }
}

TEST_CASE("transition blobs are told apart from single filters", "[transition]") {
  ManualClock clock;
  const ScalablePair pair = sample_pair<ScalableBloomFilter>(clock, 100, 100);
  const std::string blob = to_bytes(pair);
  const std::string single = to_bytes(pair.current());
  CHECK(envelope::read_header(blob, 0, {}).kind == 4);
  CHECK(is_transition_kind(4));
  CHECK(is_transition_kind(6));
  CHECK_FALSE(is_transition_kind(1));
  CHECK_FALSE(is_transition_kind(7));
  CHECK(kind_name(4) == "segbloom::TransitionFilter<segbloom::ScalableBloomFilter>");
  CHECK(kind_name(5) == FilterKind<TransitionFilter<CountingBloomFilter>>::name);
  CHECK(kind_name(6) == FilterKind<TransitionFilter<LevelDbCompatibleFilter>>::name);
  CHECK(kind_name(7) == "unknown kind");
  CHECK(FilterKind<TransitionFilter<LevelDbCompatibleFilter>>::id == 6);

  CHECK_FORMAT_ERROR(from_bytes<ScalableBloomFilter>(blob), "holds a segbloom::TransitionFilter<segbloom::ScalableBloomFilter> (kind 4)");
  CHECK_FORMAT_ERROR(from_bytes<ScalablePair>(single, {}, clock),
                    "not a segbloom::TransitionFilter<segbloom::ScalableBloomFilter>");
  CHECK_FORMAT_ERROR(TransitionView(single, {}, clock), "read it with FilterView");
  CHECK_THROWS_AS(FilterView(blob), FormatError);  // a pair is never read as one filter
  CHECK_FORMAT_ERROR(from_bytes<TransitionFilter<CountingBloomFilter>>(blob, {}, clock),
                    "not a segbloom::TransitionFilter<segbloom::CountingBloomFilter> (kind 5)");
}

TEST_CASE("transition payload checks name what is wrong", "[transition]") {
  ManualClock clock;
  const ScalablePair pair = sample_pair<ScalableBloomFilter>(clock, 200, 200);
  const RawTransition good = raw_of(pair);
  REQUIRE(good.blob() == to_bytes(pair));  // the documented layout, byte for byte
  REQUIRE(from_bytes<ScalablePair>(good.blob(), {}, clock) == pair);

  RawTransition r = good;
  r.version = 2;
  check_refused(r.blob(), "transition archive version 2 is newer", clock);
  r.version = 0;
  check_refused(r.blob(), "transition archive version 0", clock);

  r = good;
  r.has_previous = 2;
  check_refused(r.blob(), "has_previous is 2", clock);
  r = good;
  r.period = -1;
  check_refused(r.blob(), "transition period of -1 s out of range", clock);
  r = good;
  r.period = kMaxTransitionPeriod.count() + 1;
  check_refused(r.blob(), "out of range", clock);
  r = good;
  r.has_previous = 0;
  r.previous.reset();
  check_refused(r.blob(), "without a previous filter", clock);
  r.ends_at = 0;
  r.period = 0;
  CHECK(from_bytes<ScalablePair>(r.blob(), {}, clock).previous() == nullptr);  // valid

  // An end a pair cannot write (transition_end: a reading within [0, 2^40] plus the period):
  // INT64_MAX kept the previous filter answering, and change_options throwing, for good;
  // both loaded until 3 Dec 2026.
  r = good;
  r.ends_at = std::numeric_limits<std::int64_t>::max();
  check_refused(r.blob(), "transition end time (ends_at) 9223372036854775807 out of range", clock);
  r.ends_at = -5;
  check_refused(r.blob(), "transition end time (ends_at) -5 out of range; allowed with a previous filter", clock);
  r.ends_at = kLatestTime + good.period + 1;
  check_refused(r.blob(), "out of range; allowed with a previous filter: [0, 2^40 + period]", clock);
  r.ends_at = kLatestTime + good.period;  // the latest a pair writes
  CHECK(from_bytes<ScalablePair>(r.blob(), {}, clock).in_transition());
  CHECK(TransitionView(r.blob(), {}, clock).in_transition());
  CHECK_THROWS_WITH(ScalablePair(from_parts, pair.current(), *pair.previous(), -5, pair.transition_period(), clock),
                    Catch::Contains("transition end time -5 out of range"));

  // Lengths: beyond the bytes left; trailing bytes; a previous filter missing.
  r = good;
  r.current_length = good.current.size() + good.previous->size() + 100;
  check_refused(r.blob(), "current filter: truncated", clock);
  r = good;
  r.current_length = 3;  // the rest no longer parses as fields
  check_refused(r.blob(), "segbloom: ", clock);
  r = good;
  r.previous = *r.previous + "x";
  check_refused(r.blob(), "previous filter: 1 unexpected bytes after the payload", clock);
  r = good;
  check_refused(envelope_of(r.payload() + "zz", 4), "2 unexpected bytes after the last filter", clock);
  r = good;
  r.previous.reset();  // has_previous = 1 without one
  check_refused(r.blob(), "truncated", clock);

  // Inner envelopes: damaged, of another kind, with other seeds.
  r = good;
  r.current[40] ^= 1;
  check_refused(r.blob(), "current filter: checksum mismatch", clock);
  r = good;
  r.kind = 5;  // a counting pair holding scalable filters
  CHECK_FORMAT_ERROR(from_bytes<TransitionFilter<CountingBloomFilter>>(r.blob(), {}, clock),
                    "current filter: the blob holds a segbloom::ScalableBloomFilter");
  CHECK_FORMAT_ERROR(TransitionView(r.blob(), {}, clock), "current filter: the blob holds a segbloom::ScalableBloomFilter");
  r = good;
  r.previous = to_bytes(CountingBloomFilter(options_of(100, 0.01), clock));
  check_refused(r.blob(), "previous filter: the blob holds a segbloom::CountingBloomFilter", clock);
  r = good;
  r.previous = to_bytes(ScalableBloomFilter(options_of(100, 0.01, 0, 8), clock));
  check_refused(r.blob(), "keeps the seed", clock);
  r = good;
  r.current = to_bytes(pair);  // a pair nested in a pair
  check_refused(r.blob(), "current filter: the blob holds a segbloom::TransitionFilter", clock);
}

TEST_CASE("LoadLimits bound both filters together", "[transition]") {
  ManualClock clock;
  // Two filters of about 10 KB of bits each.
  auto pair = ScalablePair::begin(filled<ScalableBloomFilter>(options_of(5000, 0.01), 10, 1, clock),
                                  options_of(8000, 0.01), kWeek, clock);
  const std::uint64_t current_payload = to_bytes(pair.current()).size() - envelope::kHeaderBytes;
  const std::uint64_t previous_cells = pair.previous()->slices().front().cells().words().size_bytes();
  const std::string blob = to_bytes(pair);
  LoadLimits enough;
  enough.max_bytes = current_payload + previous_cells;
  CHECK(from_bytes<ScalablePair>(blob, enough, clock) == pair);
  CHECK_NOTHROW(TransitionView(blob, enough, clock));
  LoadLimits short_by_one_word = enough;
  short_by_one_word.max_bytes -= 8;
  check_refused(blob, "previous filter: ", clock, short_by_one_word);
  LoadLimits tiny;
  tiny.max_bytes = 1000;
  check_refused(blob, "above LoadLimits::max_bytes", clock, tiny);  // the outer envelope
  // The current filter alone above the limits.
  RawTransition alone = raw_of(ScalablePair(pair.current(), clock));
  LoadLimits below_current;
  below_current.max_bytes = pair.current().slices().front().cells().words().size_bytes() - 8;
  check_refused(alone.blob(), "current filter: slice 0: declares", clock, below_current);

  // A declared inner length far above the limits is refused from the number alone.
  RawTransition r = raw_of(pair);
  r.current_length = std::uint64_t{1} << 40;
  check_refused(r.blob(), "above the", clock);
  std::istringstream stream(r.payload());
  ScalablePair target(Options{}, clock);
  cereal::PortableBinaryInputArchive ar(stream);
  CHECK_FORMAT_ERROR(ar(target), "the LoadLimits allow");
  CHECK(target == ScalablePair(Options{}, clock));  // unchanged
}

TEST_CASE("bare Cereal archives and JSON are checked as well", "[transition]") {
  ManualClock clock;
  const ScalablePair pair = sample_pair<ScalableBloomFilter>(clock, 200, 200);
  std::stringstream out;
  {
    cereal::JSONOutputArchive ar(out);
    ar(cereal::make_nvp("pair", pair));
  }
  const std::string json = out.str();
  const auto load = [&clock](const std::string& text) {
    std::istringstream in(text);
    cereal::JSONInputArchive ar(in);
    ScalablePair loaded(Options{}, clock);
    ar(cereal::make_nvp("pair", loaded));
    return loaded;
  };
  REQUIRE(load(json) == pair);
  const auto replace_after = [&json](const std::string& field, const std::string& value) {
    return test::replace_after(json, field, value);
  };
  CHECK_FORMAT_ERROR(load(replace_after("\"has_previous\": ", "300")), "has_previous out of range");
  CHECK_FORMAT_ERROR(load(replace_after("\"kind\": ", "1")), "not a segbloom::TransitionFilter");
  CHECK_FORMAT_ERROR(load(replace_after("\"current\": ", "\"U0dCRg==\"")), "current filter: truncated");
  CHECK_FORMAT_ERROR(load(replace_after("\"current\": ", "\"U0dCRg=!\"")), "not canonical base64");
  CHECK_THROWS_AS(load(replace_after("\"ends_at\": ", "\"x\"")), FormatError);

  // A portable archive cut anywhere: FormatError, and the target unchanged.
  std::stringstream bin;
  {
    cereal::PortableBinaryOutputArchive ar(bin);
    ar(pair);
  }
  const std::string bytes = bin.str();
  for (std::size_t n = 5; n < bytes.size(); n += 7) {
    std::istringstream cut(bytes.substr(0, n));
    cereal::PortableBinaryInputArchive ar(cut);
    ScalablePair target(options_of(10, 0.1), clock);
    const ScalablePair before = target;
    REQUIRE_THROWS_AS(ar(target), FormatError);
    REQUIRE(target == before);
  }
}

// Every truncation and single-bit flip of a transition blob: refused with FormatError,
// never a crash; flips behind a recomputed outer checksum: from_bytes and the view
// agree, and an accepted pair still holds every key of its current filter.
TEMPLATE_TEST_CASE("every truncation and bit flip of a transition blob is refused", "[transition]",
                   ScalableBloomFilter, CountingBloomFilter, LevelDbCompatibleFilter) {
  using F = TestType;
  using Pair = TransitionFilter<F>;
  ManualClock clock;
  const Pair pair = sample_pair<F>(clock, 60, 40);
  const std::string blob = to_bytes(pair);
  for (std::size_t n = 0; n < blob.size(); ++n) {
    const std::string_view cut(blob.data(), n);
    REQUIRE_THROWS_AS(from_bytes<Pair>(cut, {}, clock), FormatError);
    REQUIRE_THROWS_AS(TransitionView(cut, {}, clock), FormatError);
  }
  std::uint64_t refused = 0;
  test::for_each_bit_flip(blob, [&](const std::string& flipped) {
    try {
      (void)from_bytes<Pair>(flipped, {}, clock);
    } catch (const FormatError&) {
      ++refused;
    }
    REQUIRE_THROWS_AS(TransitionView(flipped, {}, clock), FormatError);
  });
  CHECK(refused == blob.size() * 8);  // the outer checksum and header checks see every flip

  std::uint64_t both_loaded = 0, both_refused = 0;
  for (std::size_t byte = envelope::kHeaderBytes; byte < blob.size(); byte += byte < 120 ? 1 : 17) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string damaged = blob;
      damaged[byte] = static_cast<char>(damaged[byte] ^ (1 << bit));
      envelope::seal(damaged, FilterKind<Pair>::id);
      std::optional<Pair> loaded;
      std::optional<TransitionView> view;
      try {
        loaded.emplace(from_bytes<Pair>(damaged, {}, clock));
      } catch (const FormatError&) {
      }
      try {
        view.emplace(damaged, LoadLimits{}, clock);
      } catch (const FormatError&) {
      }
      INFO("byte " << byte << " bit " << bit);
      REQUIRE(loaded.has_value() == view.has_value());
      if (loaded) {
        REQUIRE(missing(loaded->current(), 40, 2) == 0);
        check_same_answers(*loaded, *view, 100);
        ++both_loaded;
      } else {
        ++both_refused;
      }
    }
  }
  CHECK(both_refused > 0);
  CHECK(both_loaded > 0);  // e.g. ends_at and period bits
}

TEST_CASE("the inner filters run on the pair's clock, with their kind's own checks", "[transition]") {
  ManualClock clock;
  Options timed = options_of(100, 0.01);
  timed.slice_lifetime = 3600s;
  auto pair = ScalablePair::begin(ScalableBloomFilter(timed), timed, kWeek, clock);  // system clock before
  CHECK(&pair.clock() == &clock);
  CHECK(&pair.current().clock() == &clock);
  CHECK(&pair.previous()->clock() == &clock);
  CHECK(pair.current().slices().front().opened_at() == clock.now());
  const auto loaded = from_bytes<ScalablePair>(to_bytes(pair), {}, clock);
  CHECK(&loaded.current().clock() == &clock);
  CHECK(&loaded.previous()->clock() == &clock);
  ManualClock other;
  pair.set_clock(other);
  CHECK(&pair.current().clock() == &other);
  CHECK(&pair.previous()->clock() == &other);

  // LevelDB's format holds at most 30 probes: options needing more are refused.
  using LevelDbPair = TransitionFilter<LevelDbCompatibleFilter>;
  const Options too_tight = options_of(100, 1e-10);
  CHECK_THROWS_AS(LevelDbPair(too_tight, clock), std::invalid_argument);
  LevelDbPair l(options_of(100, 0.01), clock);
  CHECK_THROWS_AS(l.change_options(too_tight), std::invalid_argument);
  CHECK(l.previous() == nullptr);
}

// A timed previous filter takes no writes, so the pair's writes expire its slices for it,
// as a write to it would: the pair then answers as a TransitionView on the same clock,
// which skips expired slices, and keeps every key of the last lifetime.
TEST_CASE("a timed previous filter's slices expire during the period", "[transition][lifetime]") {
  ManualClock clock;
  Options timed = options_of(1000, 0.01);
  timed.slice_lifetime = 86400s;
  ScalableBloomFilter old(timed, clock);
  for (std::uint64_t i = 0; i < 200; ++i) old.insert(present_key(i, 31));  // day 0
  clock.advance(86400s);
  for (std::uint64_t i = 0; i < 200; ++i) old.insert(present_key(i, 32));  // day 1: a second slice
  REQUIRE(old.slice_count() == 2);
  Options next = timed;
  next.false_positive_rate = 0.001;
  auto pair = ScalablePair::begin(std::move(old), next, kWeek, clock);
  clock.advance(86400s + 3600s);  // day 2 + 1 h: the day-0 slice expired, the day-1 one not
  // A load, finish_if_due() and a change to the same options keep it, as a plain filter's
  // load does: only a write drops it.
  CHECK(from_bytes<ScalablePair>(to_bytes(pair), {}, clock) == pair);
  CHECK_FALSE(pair.finish_if_due());
  CHECK_FALSE(pair.change_options(next));
  CHECK(pair.previous()->slice_count() == 2);
  REQUIRE(pair.insert(std::uint64_t{1}));
  REQUIRE(pair.in_transition());
  CHECK(pair.previous()->slice_count() == 1);
  const std::string blob = to_bytes(pair);
  const TransitionView view(blob, LoadLimits{}, clock);
  std::uint64_t day0_found = 0, day1_missing = 0, disagree = 0;
  for (std::uint64_t i = 0; i < 200; ++i) {
    day0_found += pair.contains(present_key(i, 31));
    day1_missing += !pair.contains(present_key(i, 32));
    disagree += pair.contains(present_key(i, 31)) != view.contains(present_key(i, 31));
    disagree += pair.contains(absent_key(i, 31)) != view.contains(absent_key(i, 31));
  }
  CHECK(day1_missing == 0);
  CHECK(day0_found <= 10);  // false positives only: 200 keys at ~1 % (both filters)
  CHECK(disagree == 0);
  // Test-and-set agrees: a key of the expired slice is new again (unless a false positive).
  std::uint64_t new_again = 0;
  for (std::uint64_t i = 0; i < 200; ++i) new_again += pair.insert(present_key(i, 31));
  CHECK(new_again >= 190);
  // Past both lifetimes of the day-1 slice, the previous filter answers nothing.
  clock.advance(2 * 86400s);
  REQUIRE(pair.in_transition());
  pair.insert(std::uint64_t{2});
  CHECK(pair.previous()->size() == 0);
}
