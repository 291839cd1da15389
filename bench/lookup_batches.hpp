// The loop of the lookup benchmarks (bench_filter.cpp, bench_concurrent.cpp's batched
// rows): the same batches, so that their rows compare.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace bench {

inline constexpr std::size_t kLookupBatch = 1024;

// Each iteration answers the next kLookupBatch of `keys` (wrapping around; the first
// batch starts at `first` rounded down to a batch, e.g. each thread's own part) with
// answer(batch, found), which fills `found` and returns how many it found, and adds up
// the answers; lookups are independent, so this measures throughput. Sets
// items_per_second and the counter "found": the found share, 1 for keys that are present
// (no false negatives), about p for absent ones.
template <class T, class Answer>
void lookup_batches(benchmark::State& state, std::span<const T> keys, Answer&& answer,
                    std::size_t first = 0) {
  const std::size_t span = keys.size() / kLookupBatch * kLookupBatch;
  if (span == 0) {
    state.SkipWithError("fewer keys than one lookup batch");
    return;
  }
  std::unique_ptr<bool[]> found(new bool[kLookupBatch]);
  std::size_t offset = first / kLookupBatch * kLookupBatch % span, total = 0;
  for (auto _ : state) {
    const std::size_t sum =
        answer(keys.subspan(offset, kLookupBatch), std::span<bool>(found.get(), kLookupBatch));
    benchmark::DoNotOptimize(sum);
    total += sum;
    offset += kLookupBatch;
    if (offset == span) offset = 0;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kLookupBatch));
  state.counters["found"] = benchmark::Counter(  // averaged over threads, not summed
      static_cast<double>(total) /
          static_cast<double>(std::max<std::int64_t>(1, state.iterations()) * kLookupBatch),
      benchmark::Counter::kAvgThreads);
}

}  // namespace bench
