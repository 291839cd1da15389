// The machine's floor under segbloom's design: for each operation that issue 8 sets a
// speed target for, the work no implementation of this design can skip, and nothing
// else. A target whose time lies below its floor cannot be met on this machine by any
// code; one above it can, in principle, and the gap is what the code costs.
//
// The unavoidable work of one operation:
//   - hash the key once with segbloom's 128-bit XXH3 (every position derives from it;
//     the filter's format fixes this hash), and
//   - touch the memory the operation must touch, at random places of an array as
//     large as the segbloom filter it stands for (10^6 keys at p = 1 %, one slice):
//       blocked insert          one 64-bit word read-modify-written in the key's line,
//                               in an array allocated and zeroed per build (the insert
//                               benchmark builds a filter from empty, too)
//       classic insert          k words read-modify-written (k = the filter's probes)
//       blocked lookups         one word of the key's line read
//       classic positive        k words read
//       classic negative        2 words read: at half fill a bit is clear with
//                               probability 1/2, so a negative lookup reads 2 words on
//                               average before it finds one
//   Positions are one multiply-shift each: cheaper than any real probe sequence.
// The loop is bench_filter.cpp's: batches of 1024 keys, answers summed per batch, so
// independent keys overlap as they do there.
//
// Names: BM_floor_<op>/<layout>/<keys>/1000000/10000, op = insert | lookup_positive |
// lookup_negative; layout = classic | blocked; keys = u64 | str16 (16 hex characters).
//
// One more, for the target that is a ratio between two of segbloom's own runs:
//   BM_floor_slices/<slices>   batched negative lookups of BM_batch_negative's filter
//       (bench_batch.cpp): one random line read per key in each of its slices (arrays
//       of the slices' own sizes), 16 keys hashed together (hash_keys; the batches' group
//       when this floor was written, kept so that runs stay comparable) and prefetched
//       one group ahead; unlike contains_many, only slices of 2 MiB or more are
//       prefetched (see BM_floor_slices). slices = 1 or 6.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include "bench_keys.hpp"
#include "lookup_batches.hpp"
#include "segbloom/segbloom.hpp"

namespace {

constexpr std::uint64_t kItems = 1'000'000;
constexpr double kRate = 0.01;
using bench::kLookupBatch;  // the lookup benchmarks' batch (lookup_batches.hpp)

using bench::make_key;
using bench::mix;
using bench::Str16;

segbloom::Digest128 digest_of(std::uint64_t k) { return segbloom::hash_key(k, 0); }
segbloom::Digest128 digest_of(const Str16& k) {
  return segbloom::hash_key(std::string_view(k.data(), k.size()), 0);
}

// The one-slice filter a floor stands for: its size in words, and its k.
segbloom::SliceShape shape_of(segbloom::Layout layout) {
  segbloom::Options o;
  o.capacity = kItems;
  o.false_positive_rate = kRate;
  o.max_slices = 1;
  o.layout = layout;
  return segbloom::slice_shape(o, 0);
}

template <class T>
const std::vector<T>& keys_for() {
  static const std::vector<T> keys = [] {
    std::vector<T> k(kItems);
    for (std::uint64_t i = 0; i < kItems; ++i) k[i] = make_key(i, static_cast<T*>(nullptr));
    return k;
  }();
  return keys;
}

// Word i of `words` for a digest's probe j: one multiply-shift.
std::uint64_t word_for(const segbloom::Digest128& d, unsigned j, std::uint64_t words) {
  return segbloom::reduce_range(d.low + j * d.high, words);
}
// Word of the key's 64-byte line (blocked): the line from the low half, the word in it
// from the high half.
std::uint64_t line_word(const segbloom::Digest128& d, std::uint64_t words) {
  return segbloom::reduce_range(d.low, words / 8) * 8 + (d.high & 7);
}

template <class T>
void floor_insert(benchmark::State& state, segbloom::Layout layout) {
  const std::vector<T>& keys = keys_for<T>();
  const segbloom::SliceShape shape = shape_of(layout);
  const std::uint64_t words = shape.bits / 64;
  const unsigned touches = layout == segbloom::Layout::blocked ? 1 : shape.probes;
  for (auto _ : state) {
    std::vector<std::uint64_t> array(words);  // allocated and zeroed, as a new filter's cells
    std::uint64_t* const w = array.data();
    for (const T& key : keys) {
      const segbloom::Digest128 d = digest_of(key);
      if (touches == 1) {
        w[line_word(d, words)] |= std::uint64_t{1} << (d.high >> 58);
      } else {
        for (unsigned j = 0; j < touches; ++j) w[word_for(d, j, words)] |= std::uint64_t{1} << (d.high >> 58);
      }
    }
    benchmark::DoNotOptimize(w);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kItems));
}

// Random words, so that no page is the shared zero page.
const std::vector<std::uint64_t>& filled_words(std::uint64_t words) {
  static std::vector<std::uint64_t> w;
  if (w.size() != words) {
    w.resize(words);
    for (std::uint64_t i = 0; i < words; ++i) w[i] = mix(i + 77);
  }
  return w;
}

template <class T>
void floor_lookup(benchmark::State& state, segbloom::Layout layout, bool positive) {
  const std::vector<T>& keys = keys_for<T>();
  const segbloom::SliceShape shape = shape_of(layout);
  const std::uint64_t words = shape.bits / 64;
  const std::uint64_t* const w = filled_words(words).data();
  const unsigned reads = layout == segbloom::Layout::blocked ? 1 : positive ? shape.probes : 2;
  std::size_t offset = 0;
  for (auto _ : state) {
    std::uint64_t sum = 0;
    for (std::size_t i = offset; i < offset + kLookupBatch; ++i) {
      const segbloom::Digest128 d = digest_of(keys[i]);
      if (reads == 1) {
        sum += w[line_word(d, words)] >> (d.high >> 58) & 1;
      } else {
        std::uint64_t all = 1;
        for (unsigned j = 0; j < reads; ++j) all &= w[word_for(d, j, words)] >> (d.high >> 58);
        sum += all & 1;
      }
    }
    benchmark::DoNotOptimize(sum);
    offset += kLookupBatch;
    if (offset + kLookupBatch > keys.size()) offset = 0;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kLookupBatch));
}

// --- Slices: BM_batch_negative's filter, one line per slice -------------------------

// The slices of BM_batch_negative's 6-slice filter (growth 2 from capacity 10^6 / 50,
// blocked) or its one-slice filter: their sizes in 64-byte lines, from the same sizing.
std::vector<std::uint64_t> slice_lines(unsigned slices) {
  segbloom::Options o;
  o.false_positive_rate = kRate;
  o.layout = segbloom::Layout::blocked;
  if (slices == 1) {
    o.capacity = kItems;
    o.max_slices = 1;
  } else {
    o.capacity = kItems / 50;
  }
  std::vector<std::uint64_t> lines;
  for (unsigned s = 0; s < slices; ++s) lines.push_back(segbloom::slice_shape(o, s).bits / 512);
  return lines;
}

void BM_floor_slices(benchmark::State& state) {
  const auto slices = static_cast<unsigned>(state.range(0));
  const std::vector<std::uint64_t> lines = slice_lines(slices);
  std::vector<std::vector<std::uint64_t>> arrays;
  std::vector<const std::uint64_t*> base;
  std::uint64_t bytes = 0;
  for (std::uint64_t n : lines) {
    arrays.emplace_back(n * 8);
    for (std::uint64_t i = 0; i < n * 8; ++i) arrays.back()[i] = mix(i);
    base.push_back(arrays.back().data());
    bytes += n * 64;
  }
  // Only slices of detail::kPrefetchMinBytes (2 MiB) or more are prefetched. contains_many
  // prefetches blocked slices from the core's L2 size (1 MiB on the AMD EPYC), but this
  // loop, with far less work a key for the CPU to overlap with its reads, measured faster
  // without: one 1.26 MB slice, 1.40-1.44 ns a key, 1.72-1.82 with its lines prefetched.
  // (detail::prefetch: GCC deletes a lambda that only calls __builtin_prefetch.)
  constexpr std::uint64_t kPrefetchLines = segbloom::detail::kPrefetchMinBytes / 64;
  constexpr std::size_t kGroup = 16, kBatch = 512;  // a group as above; BM_batch_negative's batch
  std::vector<std::uint64_t> keys(1 << 16);
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = mix((std::uint64_t{1} << 62) + i);
  std::array<segbloom::Digest128, kGroup> digests[2];
  std::size_t offset = 0;
  std::uint64_t sum = 0;
  const auto prefetch = [&](const segbloom::Digest128* d) {
    for (std::size_t s = 0; s < slices; ++s) {
      if (lines[s] < kPrefetchLines) continue;
      for (std::size_t i = 0; i < kGroup; ++i) {
        segbloom::detail::prefetch(base[s] + segbloom::reduce_range(d[i].low, lines[s]) * 8);
      }
    }
  };
  for (auto _ : state) {
    const std::span<const std::uint64_t> batch(keys.data() + offset, kBatch);
    segbloom::hash_keys(batch.subspan(0, kGroup), 0, digests[0].data());
    prefetch(digests[0].data());
    for (std::size_t g = 0; g < kBatch; g += kGroup) {
      const auto& now = digests[(g / kGroup) & 1];
      auto& next = digests[(g / kGroup + 1) & 1];
      if (g + kGroup < kBatch) {
        segbloom::hash_keys(batch.subspan(g + kGroup, kGroup), 0, next.data());
        prefetch(next.data());
      }
      for (std::size_t i = 0; i < kGroup; ++i) {
        std::uint64_t any = 0;
        for (std::size_t s = 0; s < slices; ++s) {
          any |= base[s][segbloom::reduce_range(now[i].low, lines[s]) * 8 + (now[i].high & 7)];
        }
        sum += any & 1;
      }
    }
    offset = (offset + kBatch) % keys.size();
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_floor_slices)->ArgName("slices")->Arg(1)->Arg(6);

const bool registered = [] {
  for (const auto layout : {segbloom::Layout::classic, segbloom::Layout::blocked}) {
    const std::string tag = layout == segbloom::Layout::blocked ? "blocked" : "classic";
    const std::string tail = "/1000000/10000";
    benchmark::RegisterBenchmark(("BM_floor_insert/" + tag + "/u64" + tail).c_str(), floor_insert<std::uint64_t>, layout);
    benchmark::RegisterBenchmark(("BM_floor_insert/" + tag + "/str16" + tail).c_str(), floor_insert<Str16>, layout);
    for (const bool positive : {true, false}) {
      const std::string op = positive ? "BM_floor_lookup_positive/" : "BM_floor_lookup_negative/";
      benchmark::RegisterBenchmark((op + tag + "/u64" + tail).c_str(), floor_lookup<std::uint64_t>, layout, positive);
      benchmark::RegisterBenchmark((op + tag + "/str16" + tail).c_str(), floor_lookup<Str16>, layout, positive);
    }
  }
  return true;
}();

}  // namespace
