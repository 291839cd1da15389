// segbloom benchmarks: the counting filter beside the plain filter at the same options.
//
// Names: BM_cbf_<impl>_<op>/<items>
//   impl   counting (CountingBloomFilter) | plain (ScalableBloomFilter)
//   op     insert           build a filter of <items> keys from empty; time per key
//          remove           remove every key of a full filter (counting only; the copy
//                           of the full filter is outside the timed region)
//          lookup_positive  keys that were inserted, in shuffled order
//          lookup_negative  keys that were never inserted
//          <op>_batched     the same through insert_many / contains_many over all keys
//                           (hashed in groups, lines prefetched: detail/prefetch.hpp)
//   items  10^4 (cells in L1/L2) and 10^6 (counting: 6.5 MB of counters, plain: 1.6 MB)
// Options: capacity = items, p = 1 %, growing mode (the defaults otherwise): one slice.
// Keys: std::uint64_t. Counters: items_per_second (ns/op = 1e9 / items_per_second) and
// bytes (the filter's memory_bytes()).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "segbloom/segbloom.hpp"

namespace {

// splitmix64's finaliser: a bijection, so present (i) and absent (2^62 + i) keys never
// collide.
std::uint64_t mix_key(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

segbloom::Options bench_options(std::uint64_t items) {
  segbloom::Options o;
  o.capacity = items;
  o.false_positive_rate = 0.01;
  return o;
}

struct KeySet {
  std::vector<std::uint64_t> present;   // insertion order
  std::vector<std::uint64_t> shuffled;  // the same keys, another order
  std::vector<std::uint64_t> absent;
};

const KeySet& keys_for(std::uint64_t items) {
  static std::map<std::uint64_t, std::unique_ptr<KeySet>> cache;
  auto& slot = cache[items];
  if (!slot) {
    slot = std::make_unique<KeySet>();
    for (std::uint64_t i = 0; i < items; ++i) {
      slot->present.push_back(mix_key(i));
      slot->absent.push_back(mix_key((std::uint64_t{1} << 62) + i));
    }
    slot->shuffled = slot->present;
    std::mt19937_64 rng(items);
    std::shuffle(slot->shuffled.begin(), slot->shuffled.end(), rng);
  }
  return *slot;
}

// A filter holding every present key, built once per (type, items).
template <class Filter>
const Filter& full_filter(std::uint64_t items) {
  static std::map<std::uint64_t, std::unique_ptr<Filter>> cache;
  auto& slot = cache[items];
  if (!slot) {
    slot = std::make_unique<Filter>(bench_options(items));
    for (auto k : keys_for(items).present) slot->insert(k);
  }
  return *slot;
}

template <class Filter, bool kBatched = false>
void BM_insert(benchmark::State& state) {
  const auto items = static_cast<std::uint64_t>(state.range(0));
  const KeySet& keys = keys_for(items);
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    Filter f(bench_options(items));
    if constexpr (kBatched) {
      benchmark::DoNotOptimize(f.insert_many(std::span<const std::uint64_t>(keys.present)));
    } else {
      for (auto k : keys.present) benchmark::DoNotOptimize(f.insert(k));
    }
    bytes = f.memory_bytes();
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * items));
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_remove(benchmark::State& state) {
  const auto items = static_cast<std::uint64_t>(state.range(0));
  const KeySet& keys = keys_for(items);
  const auto& full = full_filter<segbloom::CountingBloomFilter>(items);
  for (auto _ : state) {
    state.PauseTiming();
    segbloom::CountingBloomFilter f = full;
    state.ResumeTiming();
    for (auto k : keys.shuffled) benchmark::DoNotOptimize(f.remove(k));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * items));
  state.counters["bytes"] = static_cast<double>(full.memory_bytes());
}

template <class Filter, bool kPositive, bool kBatched = false>
void BM_lookup(benchmark::State& state) {
  const auto items = static_cast<std::uint64_t>(state.range(0));
  const KeySet& keys = keys_for(items);
  const Filter& f = full_filter<Filter>(items);
  const std::vector<std::uint64_t>& queries = kPositive ? keys.shuffled : keys.absent;
  std::unique_ptr<bool[]> answers(new bool[queries.size()]);
  for (auto _ : state) {
    std::uint64_t found = 0;
    if constexpr (kBatched) {
      found = f.contains_many(std::span<const std::uint64_t>(queries),
                              std::span<bool>(answers.get(), queries.size()));
    } else {
      for (auto k : queries) found += f.contains(k);
    }
    benchmark::DoNotOptimize(found);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * items));
  state.counters["bytes"] = static_cast<double>(f.memory_bytes());
}

using segbloom::CountingBloomFilter;
using segbloom::ScalableBloomFilter;

void items_args(benchmark::internal::Benchmark* b) {
  b->Arg(10'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);
}

BENCHMARK_TEMPLATE(BM_insert, CountingBloomFilter)->Name("BM_cbf_counting_insert")->Apply(items_args);
BENCHMARK_TEMPLATE(BM_insert, ScalableBloomFilter)->Name("BM_cbf_plain_insert")->Apply(items_args);
BENCHMARK(BM_remove)->Name("BM_cbf_counting_remove")->Apply(items_args);
BENCHMARK_TEMPLATE(BM_lookup, CountingBloomFilter, true)
    ->Name("BM_cbf_counting_lookup_positive")->Apply(items_args);
BENCHMARK_TEMPLATE(BM_lookup, ScalableBloomFilter, true)
    ->Name("BM_cbf_plain_lookup_positive")->Apply(items_args);
BENCHMARK_TEMPLATE(BM_lookup, CountingBloomFilter, false)
    ->Name("BM_cbf_counting_lookup_negative")->Apply(items_args);
BENCHMARK_TEMPLATE(BM_lookup, ScalableBloomFilter, false)
    ->Name("BM_cbf_plain_lookup_negative")->Apply(items_args);
BENCHMARK_TEMPLATE(BM_insert, CountingBloomFilter, true)->Name("BM_cbf_counting_insert_batched")->Apply(items_args);
BENCHMARK_TEMPLATE(BM_insert, ScalableBloomFilter, true)->Name("BM_cbf_plain_insert_batched")->Apply(items_args);
BENCHMARK_TEMPLATE(BM_lookup, CountingBloomFilter, true, true)
    ->Name("BM_cbf_counting_lookup_positive_batched")->Apply(items_args);
BENCHMARK_TEMPLATE(BM_lookup, ScalableBloomFilter, true, true)
    ->Name("BM_cbf_plain_lookup_positive_batched")->Apply(items_args);
BENCHMARK_TEMPLATE(BM_lookup, CountingBloomFilter, false, true)
    ->Name("BM_cbf_counting_lookup_negative_batched")->Apply(items_args);
BENCHMARK_TEMPLATE(BM_lookup, ScalableBloomFilter, false, true)
    ->Name("BM_cbf_plain_lookup_negative_batched")->Apply(items_args);

}  // namespace
