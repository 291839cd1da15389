// seen_videos: the main job. Simulates a short-video feed and serves it through one
// segbloom filter per user, next to an exact std::unordered_set per user as ground
// truth, and prints:
//   - repeats: items shown to a user who had already seen them (must be 0; in window
//     mode, items older than the remembered window may come back and are counted apart);
//   - wrongly skipped: unseen candidates the filter called "seen", against the target;
//   - bytes per user: the filter's memory against the exact set's (counted allocator);
//   - throughput of the filter's part of the work.
//
// Usage: seen_videos [--users N] [--requests N] [--catalog N] [--candidates N]
//                    [--shown N] [--capacity N] [--rate P] [--window W] [--seed S]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <memory>
#include <span>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "segbloom/segbloom.hpp"

namespace {

struct Config {
  std::uint64_t users = 2000;
  std::uint64_t requests = 400;    // feed requests per user over the simulation
  std::uint64_t catalog = 1'000'000;
  std::uint64_t candidates = 50;   // candidates the recommender proposes per request
  std::uint64_t shown = 8;         // items shown per request (the first unseen ones)
  std::uint64_t capacity = 2000;
  double rate = 0.001;
  std::uint32_t window = 0;
  std::uint64_t seed = 1;
};

bool parse(int argc, char** argv, Config& c) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return false;
    if (i + 1 >= argc) {
      std::fprintf(stderr, "seen_videos: %s needs a value\n", arg.c_str());
      return false;
    }
    const char* v = argv[++i];
    char* end = nullptr;
    errno = 0;
    const double number = std::strtod(v, &end);
    if (end == v || *end != '\0' || errno != 0 || number < 0) {
      std::fprintf(stderr, "seen_videos: %s: not a number: %s\n", arg.c_str(), v);
      return false;
    }
    const auto whole = static_cast<std::uint64_t>(number);
    if (arg == "--users") c.users = whole;
    else if (arg == "--requests") c.requests = whole;
    else if (arg == "--catalog") c.catalog = whole;
    else if (arg == "--candidates") c.candidates = whole;
    else if (arg == "--shown") c.shown = whole;
    else if (arg == "--capacity") c.capacity = whole;
    else if (arg == "--rate") c.rate = number;
    else if (arg == "--window") c.window = static_cast<std::uint32_t>(whole);
    else if (arg == "--seed") c.seed = whole;
    else {
      std::fprintf(stderr, "seen_videos: unknown option %s\n", arg.c_str());
      return false;
    }
  }
  if (c.users == 0 || c.catalog < 2 || c.candidates == 0) {
    std::fprintf(stderr, "seen_videos: --users, --candidates must be > 0, --catalog >= 2\n");
    return false;
  }
  return true;
}

// Zipf(1) popularity over the catalog, by inverse-CDF lookup: a few videos are shown to
// everyone, the long tail rarely, as in real feeds.
class Zipf {
 public:
  explicit Zipf(std::uint64_t n) : cdf_(n) {
    double sum = 0;
    for (std::uint64_t i = 0; i < n; ++i) cdf_[i] = (sum += 1.0 / static_cast<double>(i + 1));
    for (auto& x : cdf_) x /= sum;
  }
  template <class Rng>
  std::uint64_t operator()(Rng& rng) const {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    return static_cast<std::uint64_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
  }

 private:
  std::vector<double> cdf_;
};

// Counts the bytes an exact per-user set allocates.
inline std::uint64_t g_set_bytes = 0;
template <class T>
struct CountingAllocator {
  using value_type = T;
  CountingAllocator() = default;
  template <class U>
  CountingAllocator(const CountingAllocator<U>&) {}
  T* allocate(std::size_t n) {
    g_set_bytes += n * sizeof(T);
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) {
    g_set_bytes -= n * sizeof(T);
    std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const CountingAllocator<U>&) const { return true; }
};
// Ground truth per user: video id -> position in the user's history when last shown.
using ExactSet = std::unordered_set<std::uint64_t, std::hash<std::uint64_t>,
                                    std::equal_to<std::uint64_t>, CountingAllocator<std::uint64_t>>;
using ExactHistory =
    std::unordered_map<std::uint64_t, std::uint64_t, std::hash<std::uint64_t>,
                       std::equal_to<std::uint64_t>,
                       CountingAllocator<std::pair<const std::uint64_t, std::uint64_t>>>;

// Video ids are spread over 64 bits, as real ids are.
std::uint64_t video_id(std::uint64_t rank) { return (rank + 1) * 0x9E3779B97F4A7C15ull; }

}  // namespace

int main(int argc, char** argv) {
  Config c;
  if (!parse(argc, argv, c)) {
    std::fprintf(stderr,
                 "usage: seen_videos [--users N] [--requests N] [--catalog N] [--candidates N]\n"
                 "                   [--shown N] [--capacity N] [--rate P] [--window W] [--seed S]\n");
    return 2;
  }
  segbloom::Options options;
  options.capacity = c.capacity;
  options.false_positive_rate = c.rate;
  options.max_slices = c.window;
  try {
    segbloom::validate(options);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "seen_videos: %s\n", e.what());
    return 2;
  }

  const Zipf popularity(c.catalog);
  std::vector<segbloom::ScalableBloomFilter> filters(c.users, segbloom::ScalableBloomFilter(options));
  std::vector<ExactHistory> truth(c.users);
  std::vector<std::uint64_t> history_length(c.users, 0);
  // Window mode promises the most recent capacity * (W-1) / W items; growing mode all.
  const std::uint64_t remembered =
      c.window ? c.capacity * (c.window - 1) / c.window : ~std::uint64_t{0};
  std::mt19937_64 rng(c.seed);

  std::uint64_t checked_unseen = 0, wrongly_skipped = 0, shown_total = 0;
  std::uint64_t repeats = 0, expired_repeats = 0;
  std::uint64_t filter_ops = 0;
  std::chrono::nanoseconds filter_time{0};
  std::vector<std::uint64_t> candidates(c.candidates);
  std::unique_ptr<bool[]> seen(new bool[c.candidates]);
  std::vector<std::uint64_t> to_show;

  // Requests interleave users, as a server sees them.
  for (std::uint64_t r = 0; r < c.requests; ++r) {
    for (std::uint64_t u = 0; u < c.users; ++u) {
      for (auto& id : candidates) id = video_id(popularity(rng));
      const auto t0 = std::chrono::steady_clock::now();
      filters[u].contains_many(std::span<const std::uint64_t>(candidates),
                               std::span<bool>(seen.get(), c.candidates));
      std::uint64_t shown = 0;
      to_show.clear();
      for (std::uint64_t i = 0; i < c.candidates && shown < c.shown; ++i) {
        if (!seen[i] && std::find(to_show.begin(), to_show.end(), candidates[i]) == to_show.end()) {
          to_show.push_back(candidates[i]);
          ++shown;
        }
      }
      for (auto id : to_show) filters[u].insert(id);
      filter_time += std::chrono::steady_clock::now() - t0;
      filter_ops += c.candidates + to_show.size();

      // Ground truth, outside the timed part.
      for (std::uint64_t i = 0; i < c.candidates; ++i) {
        if (truth[u].count(candidates[i]) == 0) {  // never shown to this user
          ++checked_unseen;
          wrongly_skipped += seen[i];
        }
      }
      for (auto id : to_show) {
        const std::uint64_t now = history_length[u]++;
        const auto [it, first_time] = truth[u].try_emplace(id, now);
        if (!first_time) {
          // Shown again: a defect if it was within the remembered window.
          (now - it->second <= remembered ? repeats : expired_repeats) += 1;
          it->second = now;
        }
        ++shown_total;
      }
    }
  }

  std::uint64_t filter_bytes = 0, items = 0, slices = 0;
  for (const auto& f : filters) {
    filter_bytes += f.memory_bytes();
    items += f.size();
    slices += f.slice_count();
  }
  // What an exact std::unordered_set<std::uint64_t> of each user's items would take
  // (only items the filter still holds count in window mode: its window, not all).
  std::uint64_t set_bytes = 0;
  for (std::uint64_t u = 0; u < c.users; ++u) {
    const std::uint64_t before = g_set_bytes;
    ExactSet exact;
    for (const auto& [id, when] : truth[u]) {
      if (history_length[u] - when <= std::min(remembered, filters[u].size())) exact.insert(id);
    }
    set_bytes += g_set_bytes - before;
  }
  const double measured = checked_unseen ? static_cast<double>(wrongly_skipped) / checked_unseen : 0;
  const double seconds = std::chrono::duration<double>(filter_time).count();

  std::printf("segbloom seen_videos: %llu users, %llu requests each, %llu candidates, Zipf(1) over "
              "%llu videos\n",
              (unsigned long long)c.users, (unsigned long long)c.requests,
              (unsigned long long)c.candidates, (unsigned long long)c.catalog);
  std::printf("filter: capacity %llu, target rate %.4g, %s\n", (unsigned long long)c.capacity, c.rate,
              c.window ? ("window of " + std::to_string(c.window) + " slices").c_str()
                       : "growing");
  std::printf("  items shown                  %llu (%.0f per user, %.2f slices per user)\n",
              (unsigned long long)shown_total, double(shown_total) / c.users,
              double(slices) / c.users);
  std::printf("  repeats shown                %llu (must be 0)\n", (unsigned long long)repeats);
  if (c.window) {
    std::printf("  re-shown after the window   %llu (older than the last %llu items: allowed)\n",
                (unsigned long long)expired_repeats, (unsigned long long)remembered);
  }
  std::printf("  wrongly skipped              %llu of %llu unseen candidates = %.4f %% (target %.4f %%)\n",
              (unsigned long long)wrongly_skipped, (unsigned long long)checked_unseen,
              100 * measured, 100 * c.rate);
  std::printf("  bytes per user, segbloom     %.0f\n", double(filter_bytes) / c.users);
  std::printf("  bytes per user, unordered_set %.0f (%.1fx the filter)\n",
              double(set_bytes) / c.users, double(set_bytes) / double(filter_bytes));
  std::printf("  bits per item held           %.1f\n", 8.0 * double(filter_bytes) / double(items));
  std::printf("  filter throughput            %.1f M ops/s (%.0f ns per lookup or insert)\n",
              filter_ops / seconds / 1e6, seconds * 1e9 / filter_ops);
  // Machine-readable summary for scripts and tests.
  std::printf("RESULT repeats=%llu wrongly_skipped_rate=%.6g target=%.6g bytes_per_user=%.1f "
              "set_bytes_per_user=%.1f\n",
              (unsigned long long)repeats, measured, c.rate, double(filter_bytes) / c.users,
              double(set_bytes) / c.users);
  return repeats == 0 ? 0 : 1;
}
