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
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
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

BENCHMARK(BM_transition_from_bytes_500)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_transition_view_500)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_transition_view_batch_500)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_transition_loaded_batch_500)->Unit(benchmark::kMicrosecond);

}  // namespace
