// segbloom benchmarks: the request path during a policy transition.
//
//   BM_transition_<path>   a user's pair: the previous filter (2 000 items, p = 0.1 %) and
//   the current one (500 items written since, p = 0.01 %), stored as one blob; per
//   iteration, open the blob and check 500 candidates (half of them seen, split between
//   the two filters). Compare with BM_request_* (bench_serialization.cpp): the same
//   request on a single 2 000-item filter.
//     from_bytes_500  from_bytes<TransitionFilter<ScalableBloomFilter>> + 500 contains
//     view_500        TransitionView + 500 contains
//     view_batch_500  TransitionView + contains_many of the 500
//     loaded_batch_500  contains_many on the pair already in memory (no load)
//   BM_transition_pair_batched_<negative|positive>/previous:<L>/current:<L>: a larger
//   pair in memory, as a global filter's policy change leaves it: the previous filter
//   holds 10^6 keys (p = 1 %), the current one 5 x 10^5 written since (p = 0.1 %);
//   layouts 0 classic, 1 blocked (a change may also change the layout). contains_many
//   in batches of 1024: absent keys, or present ones, half from each filter. Time per key.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "segbloom/transition_serialization.hpp"
#include "segbloom/transition_view.hpp"

namespace {

using Pair = segbloom::TransitionFilter<segbloom::ScalableBloomFilter>;

std::uint64_t key(std::uint64_t i) { return i * 0x9E3779B97F4A7C15ull + 777; }

struct TransitionRequest {
  std::string blob;
  std::vector<std::uint64_t> candidates;
  TransitionRequest() {
    segbloom::Options before;
    before.capacity = 2000;
    before.false_positive_rate = 0.001;
    segbloom::ScalableBloomFilter previous(before);
    for (std::uint64_t i = 0; i < 2000; ++i) previous.insert(key(i));
    segbloom::Options after = before;
    after.false_positive_rate = 0.0001;
    Pair pair = Pair::begin(std::move(previous), after);  // system clock: 7 days from now
    for (std::uint64_t i = 2000; i < 2500; ++i) pair.insert(key(i));
    blob = segbloom::to_bytes(pair);
    for (std::uint64_t i = 0; i < 500; ++i) {
      candidates.push_back(i % 2 == 0 ? key(i * 5) : key(1'000'000 + i));  // seen: i * 5 < 2500
    }
  }
};

const TransitionRequest& transition_request() {
  static const TransitionRequest r;
  return r;
}

void BM_transition_from_bytes_500(benchmark::State& state) {
  const TransitionRequest& r = transition_request();
  for (auto _ : state) {
    const Pair pair = segbloom::from_bytes<Pair>(r.blob);
    std::size_t seen = 0;
    for (const std::uint64_t c : r.candidates) seen += pair.contains(c);
    benchmark::DoNotOptimize(seen);
  }
  state.counters["blob_bytes"] = static_cast<double>(r.blob.size());
}

void BM_transition_view_500(benchmark::State& state) {
  const TransitionRequest& r = transition_request();
  for (auto _ : state) {
    const segbloom::TransitionView view(r.blob);
    std::size_t seen = 0;
    for (const std::uint64_t c : r.candidates) seen += view.contains(c);
    benchmark::DoNotOptimize(seen);
  }
  state.counters["blob_bytes"] = static_cast<double>(r.blob.size());
}

void BM_transition_view_batch_500(benchmark::State& state) {
  const TransitionRequest& r = transition_request();
  bool found[500];
  for (auto _ : state) {
    const segbloom::TransitionView view(r.blob);
    benchmark::DoNotOptimize(view.contains_many(std::span<const std::uint64_t>(r.candidates),
                                                std::span<bool>(found, 500)));
  }
  state.counters["blob_bytes"] = static_cast<double>(r.blob.size());
}

void BM_transition_loaded_batch_500(benchmark::State& state) {
  const TransitionRequest& r = transition_request();
  const Pair pair = segbloom::from_bytes<Pair>(r.blob);
  bool found[500];
  for (auto _ : state) {
    benchmark::DoNotOptimize(pair.contains_many(std::span<const std::uint64_t>(r.candidates),
                                                std::span<bool>(found, 500)));
  }
}

std::uint64_t mixed(std::uint64_t x) {  // distinct keys for distinct x
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

struct LargePair {
  std::unique_ptr<Pair> pair;
  std::vector<std::uint64_t> absent, present;
  LargePair(segbloom::Layout previous_layout, segbloom::Layout current_layout) {
    constexpr std::uint64_t kPrevious = 1'000'000, kCurrent = 500'000, kQueries = 1 << 20;
    segbloom::Options before;
    before.capacity = kPrevious;
    before.false_positive_rate = 0.01;
    before.layout = previous_layout;
    segbloom::ScalableBloomFilter previous(before);
    std::vector<std::uint64_t> keys(kPrevious);
    for (std::uint64_t i = 0; i < kPrevious; ++i) keys[i] = mixed(i);
    previous.insert_many(std::span<const std::uint64_t>(keys));
    segbloom::Options after = before;
    after.false_positive_rate = 0.001;
    after.layout = current_layout;
    pair = std::make_unique<Pair>(Pair::begin(std::move(previous), after));
    for (std::uint64_t i = 0; i < kCurrent; ++i) keys[i] = mixed(kPrevious + i);
    pair->insert_many(std::span<const std::uint64_t>(keys.data(), kCurrent));
    std::mt19937_64 rng(7);
    for (std::uint64_t i = 0; i < kQueries; ++i) {
      absent.push_back(mixed((std::uint64_t{1} << 40) + i));
      present.push_back(i % 2 ? mixed(rng() % kPrevious) : mixed(kPrevious + rng() % kCurrent));
    }
  }
};

template <bool kPresent>
void BM_transition_pair_batched(benchmark::State& state) {
  const auto layout = [](std::int64_t arg) { return arg ? segbloom::Layout::blocked : segbloom::Layout::classic; };
  static std::map<std::pair<std::int64_t, std::int64_t>, std::unique_ptr<LargePair>> pairs;
  auto& made = pairs[{state.range(0), state.range(1)}];
  if (!made) made = std::make_unique<LargePair>(layout(state.range(0)), layout(state.range(1)));
  const std::vector<std::uint64_t>& keys = kPresent ? made->present : made->absent;
  constexpr std::size_t kBatch = 1024;
  bool found[kBatch];
  std::size_t at = 0, hits = 0;
  for (auto _ : state) {
    hits += made->pair->contains_many(std::span<const std::uint64_t>(keys.data() + at, kBatch), std::span<bool>(found, kBatch));
    at = (at + kBatch) % keys.size();
  }
  benchmark::DoNotOptimize(hits);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
}

BENCHMARK(BM_transition_from_bytes_500)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_transition_view_500)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_transition_view_batch_500)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_transition_loaded_batch_500)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_transition_pair_batched, false)
    ->Name("BM_transition_pair_batched_negative")
    ->ArgNames({"previous", "current"})
    ->ArgsProduct({{0, 1}, {0, 1}});
BENCHMARK_TEMPLATE(BM_transition_pair_batched, true)
    ->Name("BM_transition_pair_batched_positive")
    ->ArgNames({"previous", "current"})
    ->ArgsProduct({{0, 1}, {0, 1}});

}  // namespace
