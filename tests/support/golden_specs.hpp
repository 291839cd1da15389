// The golden blobs in tests/data/: what each holds and the rule that built it, shared by
// the generator (tests/make_golden.cpp) and the test that loads them
// (tests/test_serialization.cpp).
//
// Keys: present_key(i, salt) for i < inserts, in order (support/stats.hpp); counting
// blobs then remove present_key(i, salt) for every i < inserts with i % remove_every == 0.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "segbloom/clock.hpp"
#include "segbloom/filter_kinds.hpp"
#include "segbloom/options.hpp"
#include "support/stats.hpp"

namespace segbloom::test {

struct GoldenSpec {
  std::string file;  // in tests/data/
  std::uint8_t kind = 0;
  Options options;
  std::uint64_t inserts = 0;
  std::uint64_t remove_every = 0;  // counting only; 0: no removals
  std::uint64_t salt = 0;
  std::int64_t seconds_per_insert = 0;  // timed filters: the clock advances after each insert

  bool removed(std::uint64_t i) const { return remove_every != 0 && i % remove_every == 0; }

  // Key i must be found: it was not removed and, in window mode, it is among the last
  // capacity * (W - 1) / W inserts, which rotation never drops.
  bool guaranteed(std::uint64_t i) const {
    const std::uint32_t w = options.max_slices;
    std::uint64_t kept = w == 0 ? inserts : options.capacity * (w - 1) / w;
    const std::int64_t lifetime = options.slice_lifetime.count();
    if (lifetime > 0) {  // and inserted less than a lifetime before the end
      kept = std::min(kept, static_cast<std::uint64_t>((lifetime - 1) / seconds_per_insert));
    }
    return !removed(i) && i + kept >= inserts;
  }
};

inline Options golden_options(std::uint64_t capacity, double rate, std::uint32_t window,
                              std::uint64_t seed, Layout layout = Layout::classic) {
  Options o;
  o.layout = layout;
  o.capacity = capacity;
  o.false_positive_rate = rate;
  o.max_slices = window;
  o.seed = seed;
  return o;
}

inline std::vector<GoldenSpec> golden_specs() {
  std::vector<GoldenSpec> specs;
  const std::pair<std::uint8_t, std::string> kinds[] = {
      {FilterKind<ScalableBloomFilter>::id, "scalable"},
      {FilterKind<CountingBloomFilter>::id, "counting"},
      {FilterKind<LevelDbCompatibleFilter>::id, "leveldb"},
  };
  for (const auto& [kind, name] : kinds) {
    const std::uint64_t salt = kind * 1000;
    specs.push_back({name + "_empty.sgbf", kind, golden_options(100, 0.01, 0, 1), 0, 0, salt});
    specs.push_back({name + "_one_slice.sgbf", kind, golden_options(200, 0.01, 0, 2), 150, 0, salt});
    // Growing from 32 items with growth 2: slices of 32, 64, 128, 256 items.
    specs.push_back({name + "_many_slices.sgbf", kind, golden_options(32, 0.01, 0, 3), 400, 0, salt});
    // Window of 3 slices of 20 items: 300 keys rotate it a dozen times.
    specs.push_back({name + "_rotated.sgbf", kind, golden_options(60, 0.01, 3, 4), 300, 0, salt});
  }
  const std::uint8_t counting = FilterKind<CountingBloomFilter>::id;
  specs.push_back({"counting_removed.sgbf", counting, golden_options(200, 0.01, 0, 5), 150, 3, 7});
  specs.push_back({"counting_removed_many.sgbf", counting, golden_options(32, 0.01, 0, 6), 300, 2, 8});
  // The blocked layout (kinds with the 128-bit digest only).
  const std::uint8_t scalable = FilterKind<ScalableBloomFilter>::id;
  const Layout blocked = Layout::blocked;
  specs.push_back({"scalable_blocked.sgbf", scalable, golden_options(64, 0.01, 0, 9, blocked), 500, 0, 9});
  specs.push_back({"scalable_blocked_rotated.sgbf", scalable, golden_options(90, 0.01, 3, 10, blocked), 400, 0, 10});
  specs.push_back({"counting_blocked_removed.sgbf", counting, golden_options(64, 0.01, 0, 11, blocked), 300, 4, 11});
  // Time windows (Options::slice_lifetime): one insert a second from kGoldenStart.
  Options timed = golden_options(50, 0.01, 0, 12);
  timed.slice_lifetime = std::chrono::seconds{100};
  specs.push_back({"scalable_timed.sgbf", scalable, timed, 400, 0, 12, 1});
  Options timed_window = golden_options(60, 0.01, 3, 13);
  timed_window.slice_lifetime = std::chrono::seconds{50};
  specs.push_back({"counting_timed_window.sgbf", counting, timed_window, 300, 5, 13, 1});
  // Slices the pattern floor closes before half full (4 slices of 125 items at 2.5e-5:
  // k 16, full at 0.49 of the bits), rotated a few times.
  specs.push_back({"scalable_floor.sgbf", scalable, golden_options(500, 1e-4, 4, 14), 1200, 0, 14});
  // Slices that probe by triple hashing (sizing.hpp; 4 slices of 25 items at 2.5e-4, k 12),
  // rotated a few times; counting ones with removals. From 2 Dec 2026.
  specs.push_back({"scalable_triple.sgbf", scalable, golden_options(100, 0.001, 4, 15), 400, 0, 15});
  specs.push_back({"counting_triple.sgbf", counting, golden_options(100, 0.001, 4, 16), 300, 3, 16});
  return specs;
}

// tests/data/legacy/ keeps, under the same names, the blobs of specs whose bytes changed
// when classic slices began to pay for their pattern floor (sizing.hpp, 1 Dec 2026: a slice
// that needs it closes a few cells earlier, with a few more bits). They must still load,
// answer and save again unchanged; make_golden never writes there.
inline constexpr const char* kLegacyGoldenDir = "legacy";

inline constexpr UnixSeconds kGoldenStart = 1'767'225'600;  // 2026-01-01 00:00:00 UTC

// Builds the filter a spec describes, by its rule. Its clock (timed filters) is a static
// ManualClock, left at the time of the last insert plus one step.
template <class F>
F build_golden(const GoldenSpec& spec) {
  static ManualClock clock;
  clock.set(kGoldenStart);
  F filter(spec.options, clock);
  for (std::uint64_t i = 0; i < spec.inserts; ++i) {
    filter.insert(present_key(i, spec.salt));
    clock.advance(std::chrono::seconds{spec.seconds_per_insert});
  }
  if constexpr (requires { filter.remove(std::uint64_t{}); }) {
    for (std::uint64_t i = 0; i < spec.inserts; ++i) {
      if (spec.removed(i)) filter.remove(present_key(i, spec.salt));
    }
  }
  return filter;
}

}  // namespace segbloom::test
