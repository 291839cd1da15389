// segbloom demo: the simulated feed (see feed_simulation.hpp).
#include "feed_simulation.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "segbloom/clock.hpp"
#include "segbloom/errors.hpp"
#include "segbloom/filter_kinds.hpp"
#include "segbloom/filter_view.hpp"
#include "segbloom/seen_store.hpp"

namespace segbloom::cli {
namespace {

constexpr std::int64_t kDay = 86'400;

// Zipf(s) popularity by inverse-CDF lookup: rank r (0-based) has weight 1 / (r + 1)^s,
// so with s = 1 the top 1 % of a million videos draw about half of all proposals and
// the long tail is rarely proposed twice to the same user, as in real feeds.
class Zipf {
 public:
  Zipf(std::uint64_t n, double s) : cdf_(n) {
    double sum = 0;
    for (std::uint64_t r = 0; r < n; ++r) {
      sum += std::pow(static_cast<double>(r + 1), -s);
      cdf_[r] = sum;
    }
    for (double& x : cdf_) x /= sum;
  }
  std::uint64_t operator()(std::mt19937_64& rng) const {
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    const auto it = std::lower_bound(cdf_.begin(), cdf_.end(), u);
    return static_cast<std::uint64_t>(std::min<std::ptrdiff_t>(it - cdf_.begin(),
                                                               static_cast<std::ptrdiff_t>(cdf_.size()) - 1));
  }

 private:
  std::vector<double> cdf_;
};

// Video ids spread over 64 bits, as real ids are (an odd multiplier: one id per rank).
std::uint64_t video_id(std::uint64_t rank) { return (rank + 1) * 0x9E3779B97F4A7C15ull; }

Phase phase_of(const FeedConfig& c, std::uint32_t day) {
  if (day < c.transition_day) return Phase::before;
  if (day - c.transition_day < c.transition_days) return Phase::during;
  return Phase::after;
}

// What one user was really shown: video -> time it was last shown.
struct Truth {
  std::unordered_map<std::uint64_t, UnixSeconds> shown;
  UnixSeconds moved_at = -1;  // first write under the new policy; -1: not yet
};

// Stored bytes and policy of every user, from their blobs.
void survey(const FeedConfig& c, StoreBackend& backend, DayStats& day) {
  std::uint64_t bytes = 0;
  for (std::uint64_t u = 0; u < c.users; ++u) {
    bool plain = false;
    double rate = 0;
    const bool found = backend.read(demo_user(u), [&](std::string_view blob, std::uint64_t) {
      bytes += blob.size();
      try {
        const FilterView view(blob);
        plain = view.kind() == FilterKind<ScalableBloomFilter>::id;
        rate = view.options().false_positive_rate;
      } catch (const FormatError&) {
        plain = false;  // a kind FilterView does not read: the transition pair
      }
    });
    if (!found) {
      ++day.policy.none;
    } else if (plain && rate == c.rate) {
      ++day.policy.old_policy;
    } else if (plain && rate == c.new_rate) {
      ++day.policy.new_policy;
    } else {
      ++day.policy.in_transition;
    }
  }
  day.blob_bytes_per_user = static_cast<double>(bytes) / static_cast<double>(c.users);
}

}  // namespace

const char* phase_name(Phase phase) noexcept {
  switch (phase) {
    case Phase::before: return "before";
    case Phase::during: return "during";
    case Phase::after: return "after";
  }
  return "?";
}

std::string demo_user(std::uint64_t index) { return "demo-user-" + std::to_string(index); }

void validate(const FeedConfig& c) {
  const auto need = [](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(what);
  };
  need(c.users >= 1 && c.users <= 10'000'000, "--users must be in [1, 10^7]");
  need(c.days >= 1 && c.days <= 3650, "--days must be in [1, 3650]");
  need(c.requests_per_day >= 1 && c.requests_per_day <= 10'000,
       "--requests-per-day must be in [1, 10000]");
  need(c.candidates >= 1 && c.candidates <= 100'000, "--candidates must be in [1, 100000]");
  need(c.shown >= 1, "--shown must be at least 1");
  need(c.catalog >= 1 && c.catalog <= 100'000'000, "--catalog must be in [1, 10^8]");
  need(std::isfinite(c.zipf) && c.zipf >= 0 && c.zipf <= 10, "--zipf must be in [0, 10]");
  need(c.rate > 0 && c.rate < 1, "--rate must be in (0, 1)");
  need(c.new_rate > 0 && c.new_rate < 1, "--new-rate must be in (0, 1)");
  need(c.transition_day >= 1, "--transition-day must be at least 1");
  need(c.transition_days <= 3650, "--transition-period must be at most 3650 days");
  // A user's first slice: 10^7 items (12 MB at 0.1 %) is far past any feed's user, and
  // keeps an absurd value from allocating every user's filter at it.
  need(c.capacity >= 1 && c.capacity <= 10'000'000, "--capacity must be in [1, 10^7]");
}

std::vector<DayStats> run_feed(const FeedConfig& c, std::shared_ptr<StoreBackend> backend,
                               const std::function<void(const DayStats&)>& on_day) {
  validate(c);
  ManualClock clock;
  SeenStoreOptions store_options;
  store_options.backend = std::move(backend);
  store_options.filter.capacity = c.capacity;
  store_options.filter.max_slices = 0;  // growing: remembers every video shown
  store_options.filter.false_positive_rate = c.rate;
  store_options.clock = &clock;
  store_options.transition_period = std::chrono::hours(24) * c.transition_days;
  auto store = std::make_unique<SeenStore>(store_options);
  for (std::uint64_t u = 0; u < c.users; ++u) store->forget(demo_user(u));

  std::vector<std::string> keys(c.users);
  for (std::uint64_t u = 0; u < c.users; ++u) keys[u] = demo_user(u);
  std::vector<Truth> truth(c.users);
  std::vector<std::uint64_t> order(c.users);
  std::iota(order.begin(), order.end(), std::uint64_t{0});

  const Zipf popularity(c.catalog, c.zipf);
  std::mt19937_64 rng(c.seed);
  const UnixSeconds start = clock.now();
  const UnixSeconds period = static_cast<UnixSeconds>(store_options.transition_period.count());
  bool moved = false;  // the store was reopened with the new policy

  std::vector<std::uint64_t> candidates(c.candidates);
  std::vector<std::uint64_t> in_request;  // distinct candidates of this request so far
  std::vector<DayStats> days;
  for (std::uint32_t d = 0; d < c.days; ++d) {
    DayStats day;
    day.day = d;
    day.phase = phase_of(c, d);
    day.target = day.phase == Phase::before ? c.rate
                 : day.phase == Phase::during ? c.rate + c.new_rate  // both filters answer
                                              : c.new_rate;
    if (d == c.transition_day) {  // the policy change: same backend, new filter options
      store_options.filter.false_positive_rate = c.new_rate;
      store = std::make_unique<SeenStore>(store_options);
      moved = true;
    }
    for (std::uint32_t r = 0; r < c.requests_per_day; ++r) {
      clock.set(start + d * kDay + r * (kDay / c.requests_per_day));
      const UnixSeconds now = clock.now();
      std::shuffle(order.begin(), order.end(), rng);
      for (const std::uint64_t u : order) {
        for (auto& id : candidates) id = video_id(popularity(rng));
        const auto t0 = std::chrono::steady_clock::now();
        const std::vector<std::uint64_t> taken =
            store->take_unseen(keys[u], std::span<const std::uint64_t>(candidates), c.shown);
        day.store_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++day.requests;

        Truth& t = truth[u];
        if (moved && t.moved_at < 0 && !taken.empty()) t.moved_at = now;  // the store wrote
        // Check every candidate the store read: up to the last one shown, or all of them.
        in_request.clear();
        std::size_t next = 0;  // taken[next] is the next shown video expected in order
        for (const std::uint64_t id : candidates) {
          if (taken.size() == c.shown && next == taken.size()) break;  // the store stopped here
          if (std::find(in_request.begin(), in_request.end(), id) != in_request.end()) continue;
          in_request.push_back(id);
          const bool shown_now = next < taken.size() && taken[next] == id;
          next += shown_now;
          const auto before = t.shown.find(id);
          if (before == t.shown.end()) {
            ++day.unseen_checked;
            day.wrongly_skipped += !shown_now;
          } else if (shown_now) {
            const bool dropped_with_old_policy =
                t.moved_at >= 0 && before->second < t.moved_at && now >= t.moved_at + period;
            ++(dropped_with_old_policy ? day.forgotten : day.repeats);
          } else {
            ++day.seen_skipped;
          }
        }
        if (next != taken.size()) {
          throw std::logic_error("segbloom demo: take_unseen returned videos out of candidate order");
        }
        for (const std::uint64_t id : taken) t.shown[id] = now;
        day.shown += taken.size();
      }
    }
    std::uint64_t distinct = 0;
    for (const Truth& t : truth) distinct += t.shown.size();
    day.id_bytes_per_user = 8.0 * static_cast<double>(distinct) / static_cast<double>(c.users);
    survey(c, store->backend(), day);
    days.push_back(day);
    if (on_day) on_day(day);
  }
  return days;
}

}  // namespace segbloom::cli
