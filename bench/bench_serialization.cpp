// segbloom benchmarks: serialization.
//
//   BM_serialize_<op>/<items>   p = 0.1 %, one slice sized for <items>, full to capacity
//     memcpy      copy of the blob's bytes into a new buffer of the same size: the peer
//     to_bytes    save into an envelope (one copy of the cells + XXH64)
//     from_bytes  load from an envelope (XXH64 + copy into the filter's cells + popcount)
//     view        FilterView over the blob (XXH64 + field checks, no copy)
//   bytes_per_second counts the blob's bytes, so the rows compare as GB/s.
//
//   BM_request_<path>/<layout>   the request path of a seen-items service: a 2 000-item
//   filter at p = 0.1 % (growing mode, defaults otherwise; layout classic or blocked)
//   stored as a blob; per iteration, open the blob and check 500 candidates (half of them
//   seen).
//     from_bytes_500  from_bytes<ScalableBloomFilter> + 500 contains
//     view_500        FilterView + 500 contains
//     view_batch_500  FilterView + contains_many of the 500
//     new_user_500    a new user's first request: construct the filter, insert_many the
//                     500 items shown, to_bytes (construction plans the slice's size: for
//                     the blocked layout, a sum over the Poisson load of its blocks)
//   Every row runs on the thread that built its blob, so capacity_bits and
//   blocked_capacity_bits answer from their per-thread memos, as they do in a service
//   that has planned these slices once.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "segbloom/filter_view.hpp"
#include "segbloom/serialization.hpp"

namespace {

using segbloom::FilterView;
using segbloom::ScalableBloomFilter;

std::uint64_t key(std::uint64_t i) { return i * 0x9E3779B97F4A7C15ull + 12345; }

ScalableBloomFilter filled(std::uint64_t items) {
  segbloom::Options o;
  o.capacity = items;
  o.false_positive_rate = 0.001;
  o.max_slices = 1;  // one slice: a blob that is almost all cells
  ScalableBloomFilter f(o);
  for (std::uint64_t i = 0; i < items; ++i) f.insert(key(i));
  return f;
}

const std::string& blob_of(std::uint64_t items) {
  static std::uint64_t cached_items = 0;
  static std::string blob;
  if (cached_items != items) {
    blob = segbloom::to_bytes(filled(items));
    cached_items = items;
  }
  return blob;
}

void BM_serialize_memcpy(benchmark::State& state) {
  const std::string& blob = blob_of(static_cast<std::uint64_t>(state.range(0)));
  for (auto _ : state) {
    std::unique_ptr<char[]> copy(new char[blob.size()]);
    std::memcpy(copy.get(), blob.data(), blob.size());
    benchmark::DoNotOptimize(copy.get());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * blob.size()));
}

void BM_serialize_to_bytes(benchmark::State& state) {
  const ScalableBloomFilter f = segbloom::from_bytes<ScalableBloomFilter>(
      blob_of(static_cast<std::uint64_t>(state.range(0))));
  std::size_t size = 0;
  for (auto _ : state) {
    const std::string blob = segbloom::to_bytes(f);
    size = blob.size();
    benchmark::DoNotOptimize(blob.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}

void BM_serialize_from_bytes(benchmark::State& state) {
  const std::string& blob = blob_of(static_cast<std::uint64_t>(state.range(0)));
  for (auto _ : state) {
    const ScalableBloomFilter f = segbloom::from_bytes<ScalableBloomFilter>(blob);
    benchmark::DoNotOptimize(f.slices().data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * blob.size()));
}

void BM_serialize_view(benchmark::State& state) {
  const std::string& blob = blob_of(static_cast<std::uint64_t>(state.range(0)));
  for (auto _ : state) {
    const FilterView view(blob);
    benchmark::DoNotOptimize(view.size());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * blob.size()));
}

#define SEGBLOOM_SERIALIZE_SIZES Arg(100'000)->Arg(1'000'000)->Arg(8'000'000)->Unit(benchmark::kMicrosecond)
BENCHMARK(BM_serialize_memcpy)->SEGBLOOM_SERIALIZE_SIZES;
BENCHMARK(BM_serialize_to_bytes)->SEGBLOOM_SERIALIZE_SIZES;
BENCHMARK(BM_serialize_from_bytes)->SEGBLOOM_SERIALIZE_SIZES;
BENCHMARK(BM_serialize_view)->SEGBLOOM_SERIALIZE_SIZES;
#undef SEGBLOOM_SERIALIZE_SIZES

// The request path: one user's filter and 500 candidates.
segbloom::Options user_options(segbloom::Layout layout) {
  segbloom::Options o;
  o.capacity = 2000;
  o.false_positive_rate = 0.001;
  o.layout = layout;
  return o;
}

struct Request {
  std::string blob;
  std::vector<std::uint64_t> candidates;
  explicit Request(segbloom::Layout layout) {
    ScalableBloomFilter f(user_options(layout));
    for (std::uint64_t i = 0; i < 2000; ++i) f.insert(key(i));
    blob = segbloom::to_bytes(f);
    for (std::uint64_t i = 0; i < 500; ++i) candidates.push_back(key(i % 2 == 0 ? i : 1'000'000 + i));
  }
};

const Request& request(segbloom::Layout layout) {
  static const Request classic(segbloom::Layout::classic), blocked(segbloom::Layout::blocked);
  return layout == segbloom::Layout::blocked ? blocked : classic;
}

void BM_request_from_bytes_500(benchmark::State& state, segbloom::Layout layout) {
  const Request& r = request(layout);
  for (auto _ : state) {
    const ScalableBloomFilter f = segbloom::from_bytes<ScalableBloomFilter>(r.blob);
    std::size_t seen = 0;
    for (const std::uint64_t c : r.candidates) seen += f.contains(c);
    benchmark::DoNotOptimize(seen);
  }
  state.counters["blob_bytes"] = static_cast<double>(r.blob.size());
}

void BM_request_view_500(benchmark::State& state, segbloom::Layout layout) {
  const Request& r = request(layout);
  for (auto _ : state) {
    const FilterView view(r.blob);
    std::size_t seen = 0;
    for (const std::uint64_t c : r.candidates) seen += view.contains(c);
    benchmark::DoNotOptimize(seen);
  }
  state.counters["blob_bytes"] = static_cast<double>(r.blob.size());
}

void BM_request_view_batch_500(benchmark::State& state, segbloom::Layout layout) {
  const Request& r = request(layout);
  bool found[500];
  for (auto _ : state) {
    const FilterView view(r.blob);
    benchmark::DoNotOptimize(view.contains_many(std::span<const std::uint64_t>(r.candidates),
                                                std::span<bool>(found, 500)));
  }
  state.counters["blob_bytes"] = static_cast<double>(r.blob.size());
}

void BM_request_new_user_500(benchmark::State& state, segbloom::Layout layout) {
  const Request& r = request(layout);
  const segbloom::Options options = user_options(layout);
  for (auto _ : state) {
    ScalableBloomFilter f(options);
    f.insert_many(std::span<const std::uint64_t>(r.candidates));
    std::string blob = segbloom::to_bytes(f);
    benchmark::DoNotOptimize(blob);
  }
}

#define SEGBLOOM_REQUEST(fn)                                                             \
  BENCHMARK_CAPTURE(fn, classic, segbloom::Layout::classic)->Unit(benchmark::kMicrosecond); \
  BENCHMARK_CAPTURE(fn, blocked, segbloom::Layout::blocked)->Unit(benchmark::kMicrosecond)
SEGBLOOM_REQUEST(BM_request_from_bytes_500);
SEGBLOOM_REQUEST(BM_request_view_500);
SEGBLOOM_REQUEST(BM_request_view_batch_500);
SEGBLOOM_REQUEST(BM_request_new_user_500);
#undef SEGBLOOM_REQUEST

}  // namespace
