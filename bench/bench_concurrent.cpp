// segbloom benchmarks: ConcurrentScalableBloomFilter from 1 and 2 threads at once, beside
// the plain ScalableBloomFilter from one thread.
//
// Names: BM_concurrent_<op>/u64/<items>/<p in ppm>/real_time/threads:<T> and
// BM_plain_insert/u64/<items>/<p in ppm> (the single-threaded plain filter, same loop).
//   insert           steady-state inserts of new keys into one shared filter sized for
//                    <items> at p (one slice, max_slices = 1, as in bench_filter.cpp):
//                    when the slice is half full it is cleared and filling starts over,
//                    so the fill averages what building a filter of <items> sees.
//   lookup_positive  keys of a filter of <items> keys, shuffled; thread t starts at
//                    offset t * items / T
//   lookup_negative  keys never inserted
// items_per_second is the total over all threads per second of wall time (UseRealTime),
// so the 2-thread / 1-thread ratio of items_per_second is the scaling.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "segbloom/concurrent_filter.hpp"
#include "segbloom/scalable_bloom_filter.hpp"

namespace {

constexpr std::uint64_t kItems = 1'000'000;
constexpr double kRate = 0.01;
constexpr std::uint64_t kSeed = 0xc0c0a;

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser: a bijection, keys never repeat
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Thread t's i-th new key: disjoint streams per thread and per run.
std::uint64_t new_key(std::uint64_t run, int thread, std::uint64_t i) {
  return mix(kSeed + (run << 52) + (static_cast<std::uint64_t>(thread) << 44) + i);
}
constexpr std::uint64_t kAbsentBase = std::uint64_t{1} << 62;

segbloom::Options options() {
  segbloom::Options o;
  o.capacity = kItems;
  o.false_positive_rate = kRate;
  o.max_slices = 1;
  return o;
}

// --- insert -----------------------------------------------------------------------

std::unique_ptr<segbloom::ConcurrentScalableBloomFilter> g_insert_filter;
std::uint64_t g_run = 0;

void BM_concurrent_insert(benchmark::State& state) {
  if (state.thread_index() == 0) {  // the other threads wait at the loop's start barrier
    g_insert_filter = std::make_unique<segbloom::ConcurrentScalableBloomFilter>(options());
    ++g_run;
  }
  const int thread = state.thread_index();
  std::uint64_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(g_insert_filter->insert(new_key(g_run, thread, i++)));
  }
  state.SetItemsProcessed(state.iterations());
  if (thread == 0) {  // after the loop's end barrier: every thread is done
    state.counters["rotations"] = static_cast<double>(g_insert_filter->rotations());
    g_insert_filter.reset();
  }
}

void BM_plain_insert(benchmark::State& state) {
  segbloom::ScalableBloomFilter filter(options());
  ++g_run;
  std::uint64_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(filter.insert(new_key(g_run, 0, i++)));
  state.SetItemsProcessed(state.iterations());
  state.counters["rotations"] = static_cast<double>(filter.rotations());
}

// --- lookups ----------------------------------------------------------------------

struct LookupData {
  segbloom::ConcurrentScalableBloomFilter filter{options()};
  std::vector<std::uint64_t> present;  // inserted keys, shuffled
  std::vector<std::uint64_t> absent;
};

const LookupData& lookup_data() {  // built on first use
  static const std::unique_ptr<LookupData> data = [] {
    auto d = std::make_unique<LookupData>();
    for (std::uint64_t i = 0; i < kItems; ++i) {
      d->present.push_back(mix(kSeed + i));
      d->absent.push_back(mix(kSeed + kAbsentBase + i));
      d->filter.insert(d->present.back());
    }
    std::shuffle(d->present.begin(), d->present.end(), std::mt19937_64(kSeed));
    return d;
  }();
  return *data;
}

template <bool kPresent>
void BM_concurrent_lookup(benchmark::State& state) {
  const LookupData& data = lookup_data();  // one thread builds it; the others wait for it
  const std::vector<std::uint64_t>& keys = kPresent ? data.present : data.absent;
  std::size_t i = static_cast<std::size_t>(state.thread_index()) * keys.size() /
                  static_cast<std::size_t>(state.threads());
  for (auto _ : state) {
    benchmark::DoNotOptimize(data.filter.contains(keys[i]));
    if (++i == keys.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  if (kPresent && state.thread_index() == 0) {
    std::uint64_t missing = 0;
    for (std::uint64_t key : keys) missing += !data.filter.contains(key);
    if (missing != 0) state.SkipWithError("false negative");
  }
}

BENCHMARK(BM_concurrent_insert)
    ->Name("BM_concurrent_insert/u64/1000000/10000")
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();
BENCHMARK(BM_plain_insert)->Name("BM_plain_insert/u64/1000000/10000");
BENCHMARK_TEMPLATE(BM_concurrent_lookup, true)
    ->Name("BM_concurrent_lookup_positive/u64/1000000/10000")
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_concurrent_lookup, false)
    ->Name("BM_concurrent_lookup_negative/u64/1000000/10000")
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

}  // namespace
