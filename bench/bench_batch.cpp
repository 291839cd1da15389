// Batched, prefetched lookups and the machine's memory limit (issue: speed to the
// hardware limit).
//
//   BM_batch_negative/<layout>/<slices>/<mode>   10^6 u64 keys at p = 1 %, held in one
//       slice or grown to 6 slices (growth 2); negative lookups one at a time
//       (mode 0: contains) or in batches of 512 (mode 1: contains_many). The question:
//       does a 6-slice filter cost well under 6 one-slice lookups when batched?
//   BM_batch_negative_concurrent/<layout>/<slices>/<mode>   the same filters as
//       ConcurrentScalableBloomFilter (its group lookup reads blocks with relaxed loads).
//   BM_user_filter/<layout>/<mode>   one user's filter as a feed keeps it: capacity 1000 at
//       p = 0.1 %, grown by 6000 items to 3 slices (22 KB blocked, 17 KB classic), in
//       cache; 512 absent candidates a request, asked one at a time (mode 0) or in one
//       contains_many (mode 1).
//       With the filter in cache, batches here are bound by instructions, not memory.
//   BM_grown_insert/<layout>/<mode>   inserts of new keys into the 6-slice filter above,
//       one at a time (mode 0: insert) or 512 a call (mode 1: insert_many). Each insert
//       first asks the 5 older slices. The filter is a copy, restored (untimed) every 128
//       calls, well before its newest slice fills.
//   BM_large_blocked/<mode>/keys:<n>   10^8 u64 keys, blocked layout at p = 1 % (~125 MB),
//       negative lookups single (0) or batched (1) of 2^22 absent keys taken in order,
//       so that no lookup finds its line in a cache, n keys a benchmark iteration (one
//       contains_many call when batched): 512, and 2048 and 8192 for batched lookups. Each call fills its prefetch pipeline before its first answer, which
//       the limit loop below (one pipeline for the whole run) never does: on an AMD EPYC
//       (Zen 5), 27 Nov 2026, 3.83-3.86 / 3.42-3.45 / 3.32-3.36 ns a key at 512 / 2048 /
//       8192 keys a call, i.e. about 270 ns a call on top of 3.3 ns a key.
//   BM_memory_limit/<bytes>/<ahead> the machine's own limit for the same access pattern:
//       random 64-byte lines of a buffer as large as that filter, allocated as the
//       filter's cells are (2 MiB aligned, huge pages advised), their indices computed
//       beforehand, in groups of 16 prefetched `ahead` groups before they are read. Batched
//       blocked lookups are compared with the fastest `ahead`. (Until 26 Nov 2026 BM_large_blocked
//       cycled through 2^16 keys, whose 4 MB of lines stayed in the 260 MB L3, and the
//       limit loop read each group right after prefetching it.)
// layout: 0 classic, 1 blocked. ns per key = 1e9 / items_per_second.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "bench_keys.hpp"
#include "segbloom/detail/aligned_words.hpp"
#include "segbloom/segbloom.hpp"

namespace {

using bench::mix;

constexpr std::uint64_t kProbeKeys = 1 << 16;
constexpr std::size_t kBatch = 512;

std::vector<std::uint64_t> absent_keys() {
  std::vector<std::uint64_t> keys(kProbeKeys);
  for (std::uint64_t i = 0; i < kProbeKeys; ++i) keys[i] = mix((1ull << 62) + i);
  return keys;
}

// The options of filter_for's filters.
segbloom::Options filter_options(std::uint64_t items, segbloom::Layout layout, unsigned slices) {
  segbloom::Options o;
  o.false_positive_rate = 0.01;
  o.layout = layout;
  if (slices == 1) {
    o.capacity = items;
    o.max_slices = 1;
  } else {
    // Growth 2 from capacity c: 5 full slices hold 31 c, the 6th takes the rest.
    o.capacity = items / 50;
  }
  return o;
}

// Filters are built once per shape and kept for every repetition.
template <class Filter = segbloom::ScalableBloomFilter>
const Filter& filter_for(std::uint64_t items, segbloom::Layout layout, unsigned slices) {
  static std::map<std::tuple<std::uint64_t, int, unsigned>, std::unique_ptr<Filter>> cache;
  auto& slot = cache[{items, static_cast<int>(layout), slices}];
  if (!slot) {
    slot = std::make_unique<Filter>(filter_options(items, layout, slices));
    std::vector<std::uint64_t> chunk(1 << 16);
    for (std::uint64_t done = 0; done < items; done += chunk.size()) {
      const std::uint64_t n = std::min<std::uint64_t>(chunk.size(), items - done);
      for (std::uint64_t i = 0; i < n; ++i) chunk[i] = mix(done + i);
      slot->insert_many(std::span<const std::uint64_t>(chunk.data(), n));
    }
  }
  return *slot;
}

// The keys of `fresh` lookups: 2^22 absent keys (32 MB, read in order), so many that a
// batch's lines were last read 8192 batches before, long out of any cache. (Made in the
// loop until 27 Nov 2026, one mix() a key: 0.65 ns a key of the time measured, 0.09 ns
// where the compiler vectorises it, -march=x86-64-v4.)
constexpr std::uint64_t kFreshKeys = std::uint64_t{1} << 22;

// fresh: the keys come from the 2^22 fresh keys rather than the 2^16 absent keys. Both
// are never inserted: mix is a bijection and the inserted keys are mix(i), i < items.
template <class Filter>
void negative_lookups(benchmark::State& state, const Filter& f, bool batched, bool fresh = false,
                      std::size_t batch_size = kBatch) {
  static const std::vector<std::uint64_t> absent = absent_keys();
  static const std::vector<std::uint64_t> fresh_pool = [] {
    std::vector<std::uint64_t> keys(kFreshKeys);
    for (std::uint64_t i = 0; i < kFreshKeys; ++i) keys[i] = mix((std::uint64_t{3} << 62) + i);
    return keys;
  }();
  const std::vector<std::uint64_t>& keys = fresh ? fresh_pool : absent;
  std::unique_ptr<bool[]> found(new bool[batch_size]);
  std::size_t offset = 0;
  std::uint64_t hits = 0;
  for (auto _ : state) {
    const std::span<const std::uint64_t> batch(keys.data() + offset, batch_size);
    if (batched) {
      hits += f.contains_many(batch, std::span<bool>(found.get(), batch_size));
    } else {
      for (auto k : batch) hits += f.contains(k);
    }
    offset = (offset + batch_size) % keys.size();
  }
  benchmark::DoNotOptimize(hits);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch_size));
  state.counters["slices"] = static_cast<double>(f.slice_count());
  state.counters["bits_per_key"] = 8.0 * static_cast<double>(f.memory_bytes()) / static_cast<double>(f.size());
}

template <class Filter>
void batch_negative(benchmark::State& state) {
  const auto layout = static_cast<segbloom::Layout>(state.range(0));
  const auto slices = static_cast<unsigned>(state.range(1));
  const auto& f = filter_for<Filter>(1'000'000, layout, slices);
  if (f.slice_count() != slices) {
    state.SkipWithError("filter did not reach the intended slice count");
    return;
  }
  negative_lookups(state, f, state.range(2) != 0);
}
void BM_batch_negative(benchmark::State& state) { batch_negative<segbloom::ScalableBloomFilter>(state); }
void BM_batch_negative_concurrent(benchmark::State& state) {
  batch_negative<segbloom::ConcurrentScalableBloomFilter>(state);
}
BENCHMARK(BM_batch_negative)
    ->ArgNames({"layout", "slices", "batched"})
    ->ArgsProduct({{0, 1}, {1, 6}, {0, 1}});
BENCHMARK(BM_batch_negative_concurrent)
    ->ArgNames({"layout", "slices", "batched"})
    ->ArgsProduct({{0, 1}, {1, 6}, {0, 1}});

void BM_user_filter(benchmark::State& state) {
  static std::map<int, std::unique_ptr<segbloom::ScalableBloomFilter>> cache;
  auto& slot = cache[static_cast<int>(state.range(0))];
  if (!slot) {
    segbloom::Options o;
    o.capacity = 1000;
    o.false_positive_rate = 0.001;
    o.layout = static_cast<segbloom::Layout>(state.range(0));
    slot = std::make_unique<segbloom::ScalableBloomFilter>(o);
    for (std::uint64_t i = 0; i < 6000; ++i) slot->insert(mix(i));
  }
  if (slot->slice_count() != 3) {
    state.SkipWithError("filter did not reach the intended slice count");
    return;
  }
  negative_lookups(state, *slot, state.range(1) != 0);
}
BENCHMARK(BM_user_filter)->ArgNames({"layout", "batched"})->ArgsProduct({{0, 1}, {0, 1}});

void BM_grown_insert(benchmark::State& state) {
  constexpr std::size_t kCallsPerCopy = 128;  // 65 536 keys: the newest slice has room for ~260 000
  const auto& grown = filter_for(1'000'000, static_cast<segbloom::Layout>(state.range(0)), 6);
  if (grown.slice_count() != 6) {
    state.SkipWithError("filter did not reach the intended slice count");
    return;
  }
  const bool batched = state.range(1) != 0;
  segbloom::ScalableBloomFilter f = grown;
  std::vector<std::uint64_t> keys(kCallsPerCopy * kBatch);  // never inserted (mix is a bijection)
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = mix((std::uint64_t{2} << 62) + i);
  std::size_t call = 0;
  std::uint64_t inserted = 0;
  for (auto _ : state) {
    if (call == kCallsPerCopy) {
      state.PauseTiming();
      if (f.slice_count() != 6) {  // the inserts opened a slice: not the case measured
        state.SkipWithError("a 7th slice opened; restore the copy more often");
        state.ResumeTiming();
        break;
      }
      f = grown;
      call = 0;
      state.ResumeTiming();
    }
    const std::span<const std::uint64_t> batch(keys.data() + call * kBatch, kBatch);
    if (batched) {
      inserted += f.insert_many(batch);
    } else {
      for (auto k : batch) inserted += f.insert(k);
    }
    ++call;
  }
  benchmark::DoNotOptimize(inserted);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
  state.counters["slices"] = static_cast<double>(f.slice_count());
}
BENCHMARK(BM_grown_insert)->ArgNames({"layout", "batched"})->ArgsProduct({{0, 1}, {0, 1}});

constexpr std::uint64_t kLargeItems = 100'000'000;

// The bytes of the cells of BM_large_blocked's filter (its one slice, sized by the
// library as filter_for sizes it: 125 576 448 at 10^8 keys): BM_memory_limit's buffer.
// (Until 2 Dec 2026 the buffer was 128 MiB, 7 % larger.)
std::int64_t large_filter_bytes() {
  const segbloom::SliceShape shape = segbloom::ScalableBloomFilter::planned_shape(
      filter_options(kLargeItems, segbloom::Layout::blocked, 1), 0);
  return static_cast<std::int64_t>(shape.bits / 8);
}

void BM_large_blocked(benchmark::State& state) {
  const auto& f = filter_for(kLargeItems, segbloom::Layout::blocked, 1);
  if (f.slice_count() != 1 || static_cast<std::int64_t>(f.slices().front().memory_bytes()) != large_filter_bytes()) {
    state.SkipWithError("the filter's cells differ in size from BM_memory_limit's buffer");
    return;
  }
  negative_lookups(state, f, state.range(0) != 0,
                   true, static_cast<std::size_t>(state.range(1)));
}
// Batch sizes must divide kFreshKeys (the offset wraps at its end).
BENCHMARK(BM_large_blocked)
    ->ArgNames({"batched", "keys"})
    ->Args({0, kBatch})
    ->Args({1, kBatch})
    ->Args({1, 2048})
    ->Args({1, 8192})
    ->Unit(benchmark::kNanosecond);

// Random 64-byte lines of a buffer, in groups of 16: each group's lines are prefetched
// `ahead` groups before they are read. No filter work at all: the machine's limit for the
// access pattern of batched blocked lookups, taken as the fastest of the `ahead` values
// (scripts/bench_table.py). The line indices are computed beforehand and read in order,
// as BM_large_blocked reads its keys. (Until 27 Nov 2026 each index was mix() of the one
// before, a chain of dependent multiplies that took 3.3 ns a line even with the buffer
// in L1.) On an AMD EPYC (Zen 5), 27 Nov 2026, indices made by mix() of a counter: 6.9 ns
// a line one group ahead, 5.3 two, 3.7 four, 2.6-3.0 eight, 2.7-3.0 twelve or sixteen;
// 1.4 ns with a 32 KiB buffer (no misses).
void BM_memory_limit(benchmark::State& state) {
  constexpr std::size_t kGroup = 16, kMaxAhead = 16;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const auto ahead = static_cast<std::size_t>(state.range(1));
  if (ahead < 1 || ahead > kMaxAhead) {
    state.SkipWithError("ahead must be 1..16");
    return;
  }
  const std::size_t lines = bytes / 64;
  segbloom::detail::AlignedWords buffer(lines * 8);  // as the filter's cells: huge pages
  std::fill(buffer.data(), buffer.data() + buffer.size(), 1);
  // The lines' word indices, read in order as BM_large_blocked reads its keys.
  std::vector<std::size_t> indices(kFreshKeys);
  for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = segbloom::reduce_range(mix(i), lines) * 8;
  std::uint64_t sum = 0;
  std::size_t next = 0;
  std::size_t ring[kMaxAhead + 1][kGroup];
  const auto request = [&](std::size_t* group) {
    for (std::size_t i = 0; i < kGroup; ++i) {
      group[i] = indices[next++ % kFreshKeys];
      segbloom::detail::prefetch(buffer.data() + group[i]);
    }
  };
  std::size_t g = 0;  // groups read so far; groups g + 1 .. g + ahead are requested
  for (std::size_t a = 0; a < ahead; ++a) request(ring[a]);
  for (auto _ : state) {
    for (std::size_t done = 0; done < kBatch; done += kGroup, ++g) {
      request(ring[(g + ahead) % (ahead + 1)]);
      for (const std::size_t i : ring[g % (ahead + 1)]) sum += buffer[i];
    }
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
}
BENCHMARK(BM_memory_limit)
    ->ArgNames({"bytes", "ahead"})
    ->ArgsProduct({{large_filter_bytes()}, {2, 4, 8, 16}});

}  // namespace
