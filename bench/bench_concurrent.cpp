// segbloom benchmarks: ConcurrentScalableBloomFilter from 1 and 2 threads at once, beside
// the plain ScalableBloomFilter from one thread.
//
// Names: BM_concurrent<-blocked>_<op>/u64/<items>/<p in ppm>/real_time/threads:<T> and
// BM_plain<-blocked>_insert/u64/<items>/<p in ppm> (the single-threaded plain filter, same
// loop); "-blocked": Options::layout = blocked, else classic. items: 10^6 (1.26 MB: about
// one core's L2, 1 MiB on the AMD EPYC Zen 5 of 27 Nov, 2 MiB on the earlier Sapphire
// Rapids) and 10^7 (12.6 MB: far beyond it, as a big global filter would be).
//   insert           a filter sized for <items> at p (one slice, max_slices = 1, as in
//                    bench_filter.cpp) built from empty with <items> new keys, items / T
//                    from each of the T threads: every run is one fill of the slice, from
//                    empty to about half full, whatever --benchmark_min_time. (Until 30 Nov 2026
//                    the rows ran as many inserts as Google Benchmark chose: at 10^7 items
//                    1 and 2 million, 10 % and 19 % of a fill, rotations=0 in every run;
//                    at 10^6 1.3 and 1.8 fills. An insert's cost depends on the fill, by
//                    0.90-1.23x between 0-10 % and 80-90 % of it, so each row measured its
//                    own part of the cycle.)
//   lookup_positive  keys of a filter of <items> keys, shuffled, each looked up with
//                    contains in batches of 1024 keys (lookup_batches.hpp, the plain
//                    filter's per-key loop); thread t starts at offset t * items / T,
//                    rounded down to a batch
//   lookup_negative  keys never inserted
// BM_concurrent_batched<-blocked>_lookup_<positive|negative>/u64/<items>/<p in ppm>: one
// thread, the lookups above through contains_many in batches of 1024 keys
// (lookup_batches.hpp): the concurrent filter's own batch path, which hashes and prefetches
// keys in groups as the plain filter's does.
// BM_concurrent_batched<-blocked>_insert/u64/<items>/<p in ppm>/real_time/threads:<T>: the
// insert rows' fill through insert_many, 1000 new keys a call, from 1 and 2 threads.
// BM_core_to_core/real_time/threads:2: the machine, not a filter: one cache line handed
// between the two threads' cores (below).
// BM_machine_scaling/real_time/threads:<T>: the machine too: how far two threads that
// share nothing scale at the moment (below), beside which to read the other rows' scaling.
// BM_shared_writes/ahead:<A>/real_time/threads:<T>: the machine again: how far locked ORs
// into one shared array of a 10^6-key slice's size scale, without and with a look ahead
// (below): the limit under the insert rows at 10^6 keys.
// items_per_second is the total over all threads per second of real time (UseRealTime:
// Google Benchmark divides by the mean of the threads' timed spans, so a thread the host
// stalls weighs a little less than in true wall-clock throughput), so the 2-thread /
// 1-thread ratio of items_per_second is the scaling.
//
// Why inserts scale less than lookups while the filter fits in L2: an insert sets bits
// with locked fetch_or, or in a hardware transaction where the CPU has RTM, and either
// needs its cache line in the writing core's cache in exclusive state; with two writers,
// about half of the lines an insert touches were last written by the other core and must
// move over first (lookups leave lines shared). insert_many hides most of that wait by
// prefetching a group ahead; a per-key insert cannot (BM_shared_writes measures both for
// bare locked ORs). Once the filter is larger than L2, lines come from L3 or memory in
// either case, and inserts scale like lookups (see the README's concurrency section for
// the numbers).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_keys.hpp"
#include "lookup_batches.hpp"
#include "segbloom/concurrent_filter.hpp"
#include "segbloom/scalable_bloom_filter.hpp"

namespace {

constexpr double kRate = 0.01;
constexpr std::uint64_t kSeed = 0xc0c0a;

using bench::mix;

// Thread t's i-th new key: disjoint streams per thread and per run.
std::uint64_t new_key(std::uint64_t run, int thread, std::uint64_t i) {
  return mix(kSeed + (run << 52) + (static_cast<std::uint64_t>(thread) << 44) + i);
}
constexpr std::uint64_t kAbsentBase = std::uint64_t{1} << 62;

segbloom::Options options(std::uint64_t items, segbloom::Layout layout) {
  segbloom::Options o;
  o.capacity = items;
  o.false_positive_rate = kRate;
  o.max_slices = 1;
  o.layout = layout;
  return o;
}

// --- insert -----------------------------------------------------------------------

std::unique_ptr<segbloom::ConcurrentScalableBloomFilter> g_insert_filter;
std::uint64_t g_run = 0;

// One fill of a new filter, items / T new keys from each thread: by insert (keys_per_call
// 1) or by insert_many of keys_per_call keys, an iteration each.
void concurrent_fill(benchmark::State& state, std::uint64_t items, segbloom::Layout layout,
                     std::uint64_t keys_per_call) {
  if (state.thread_index() == 0) {  // the other threads wait at the loop's start barrier
    g_insert_filter = std::make_unique<segbloom::ConcurrentScalableBloomFilter>(options(items, layout));
    ++g_run;
  }
  const int thread = state.thread_index();
  std::vector<std::uint64_t> batch(keys_per_call);
  std::uint64_t i = 0;
  for (auto _ : state) {
    if (keys_per_call == 1) {
      benchmark::DoNotOptimize(g_insert_filter->insert(new_key(g_run, thread, i++)));
      continue;
    }
    for (std::uint64_t& key : batch) key = new_key(g_run, thread, i++);
    benchmark::DoNotOptimize(g_insert_filter->insert_many(std::span<const std::uint64_t>(batch)));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * keys_per_call));
  if (thread == 0) {  // after the loop's end barrier: every thread is done
    state.counters["rotations"] = static_cast<double>(g_insert_filter->rotations());
    g_insert_filter.reset();
  }
}

// insert_many's keys a call in the batched insert rows.
constexpr std::uint64_t kInsertBatch = 1000;  // divides items / T for 10^6 and 10^7, T = 1, 2

void plain_insert(benchmark::State& state, std::uint64_t items, segbloom::Layout layout) {
  segbloom::ScalableBloomFilter filter(options(items, layout));
  ++g_run;
  std::uint64_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(filter.insert(new_key(g_run, 0, i++)));
  state.SetItemsProcessed(state.iterations());
  state.counters["rotations"] = static_cast<double>(filter.rotations());
}

// --- lookups ----------------------------------------------------------------------

struct LookupData {
  explicit LookupData(const segbloom::Options& o) : filter(o) {}
  segbloom::ConcurrentScalableBloomFilter filter;
  std::vector<std::uint64_t> present;  // inserted keys, shuffled
  std::vector<std::uint64_t> absent;
};

// Built on first use by whichever thread of a run asks first (the others wait on the
// mutex); both layouts' for one number of items at a time, the previous ones freed (10^7
// keys take ~300 MB with their key arrays), so that runs shuffled by scripts/bench.sh do
// not rebuild them. Every thread of a run asks before its loop, when no other run is active.
const LookupData& lookup_data(std::uint64_t items, segbloom::Layout layout) {
  static std::mutex mutex;
  static std::uint64_t current_items = 0;
  static std::map<segbloom::Layout, std::unique_ptr<LookupData>> by_layout;
  const std::lock_guard<std::mutex> lock(mutex);
  if (current_items != items) {
    by_layout.clear();
    current_items = items;
  }
  std::unique_ptr<LookupData>& data = by_layout[layout];
  if (!data) {
    data = std::make_unique<LookupData>(options(items, layout));
    for (std::uint64_t i = 0; i < items; ++i) {
      data->present.push_back(mix(kSeed + i));
      data->absent.push_back(mix(kSeed + kAbsentBase + i));
    }
    data->filter.insert_many(std::span<const std::uint64_t>(data->present));
    std::shuffle(data->present.begin(), data->present.end(), std::mt19937_64(kSeed));
  }
  return *data;
}

// Per-key lookups in the plain filter's loop (bench_filter.cpp: contains for each key of
// a batch of 1024, the answers added up), so that the rows compare; each thread starts
// in its own part of the keys.
template <bool kPresent>
void concurrent_lookup(benchmark::State& state, std::uint64_t items, segbloom::Layout layout) {
  const LookupData& data = lookup_data(items, layout);
  const std::vector<std::uint64_t>& keys = kPresent ? data.present : data.absent;
  bench::lookup_batches(
      state, std::span<const std::uint64_t>(keys),
      [&data](std::span<const std::uint64_t> batch, std::span<bool>) {
        std::size_t sum = 0;
        for (std::uint64_t key : batch) sum += data.filter.contains(key);
        return sum;
      },
      static_cast<std::size_t>(state.thread_index()) * keys.size() / static_cast<std::size_t>(state.threads()));
  if (kPresent && state.thread_index() == 0) {
    std::uint64_t missing = 0;
    for (std::uint64_t key : keys) missing += !data.filter.contains(key);
    if (missing != 0) state.SkipWithError("false negative");
  }
}

template <bool kPresent>
void concurrent_lookup_batched(benchmark::State& state, std::uint64_t items, segbloom::Layout layout) {
  const LookupData& data = lookup_data(items, layout);
  const std::vector<std::uint64_t>& keys = kPresent ? data.present : data.absent;
  bench::lookup_batches(state, std::span<const std::uint64_t>(keys),
                        [&data](std::span<const std::uint64_t> batch, std::span<bool> found) {
                          return data.filter.contains_many(batch, found);
                        });
}

// --- lookups beside a writer -----------------------------------------------------------
//
// BM_concurrent_mixed<-blocked>/u64/<items>/10000/writer:<0|1>: the feed's steady state, a
// reader asking while another thread inserts. A window of 4 slices for items keys in all
// (max_slices = 4: items / 4 keys a slice at p / 4, 1.3x the one-slice rows' memory) is
// filled with items keys; the
// benchmark's thread then looks up absent keys through contains_many in batches of 1024
// (lookup_batches.hpp), and with writer:1 a second thread, started before and stopped after
// the timed loop, inserts new keys through insert_many (1000 a call) all the while, so
// slices open and the oldest is cleared and reused as in a real window. writer:0 is the same
// reader on the same kind of filter alone. items_per_second is the reader's; the counter
// writer_keys_per_second the writer's (keys it inserted over the reader's timed span, about).
// A write invalidates the line in the reader's core, and a slice being cleared invalidates
// its every line: writer:1 / writer:0 of the reader's time is what the reader pays for them.
void concurrent_mixed(benchmark::State& state, std::uint64_t items, segbloom::Layout layout, bool writer) {
  segbloom::Options o = options(items, layout);
  o.max_slices = 4;
  segbloom::ConcurrentScalableBloomFilter filter(o);
  std::vector<std::uint64_t> keys(items);
  ++g_run;
  for (std::uint64_t i = 0; i < items; ++i) keys[i] = new_key(g_run, 0, i);
  filter.insert_many(std::span<const std::uint64_t>(keys));
  // The reader's keys, absent: a stream of their own (mix(kSeed + kAbsentBase + i) is the
  // filling stream's key for g_run = 1024).
  for (std::uint64_t i = 0; i < items; ++i) keys[i] = new_key(g_run, 63, i);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> written{0};
  std::thread writes;
  if (writer) {
    writes = std::thread([&filter, &stop, &written, run = g_run] {
      std::vector<std::uint64_t> batch(kInsertBatch);
      std::uint64_t i = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (std::uint64_t& key : batch) key = new_key(run, 1, i++);
        filter.insert_many(std::span<const std::uint64_t>(batch));
        written.store(i, std::memory_order_relaxed);
      }
    });
    while (written.load(std::memory_order_relaxed) == 0) {  // the writer is under way
    }
  }
  const std::uint64_t written_before = written.load(std::memory_order_relaxed);
  const auto start = std::chrono::steady_clock::now();
  bench::lookup_batches(state, std::span<const std::uint64_t>(keys),
                        [&filter](std::span<const std::uint64_t> batch, std::span<bool> found) {
                          return filter.contains_many(batch, found);
                        });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::uint64_t written_during = written.load(std::memory_order_relaxed) - written_before;
  stop.store(true, std::memory_order_relaxed);
  if (writes.joinable()) writes.join();
  state.counters["writer_keys_per_second"] = seconds > 0 ? static_cast<double>(written_during) / seconds : 0;
  state.counters["rotations"] = static_cast<double>(filter.rotations());
}

// --- the machine: one cache line between the two threads' cores ---------------------
//
// BM_core_to_core/real_time/threads:2: the two threads hand one cache line back and forth
// (each waits for the other's store, then stores); ns per one-way transfer = 1e9 /
// items_per_second. Inserts from two threads into a filter that fits in L2 move about
// half their lines between the cores (see the top of the file), so their scaling follows
// this number, which on a VM depends on where the host places its virtual CPUs. On the
// AMD EPYC Zen 5, 27 Nov 2026: 200-220 ns at 08:20-08:25 UTC, when 2-thread inserts at
// 10^6 keys took 98 ns (classic) and 64 ns (blocked) against 50 and 57 ns from one thread;
// 38-39 ns at 08:27, when 2-thread classic inserts took 30.0-30.5 ns.
struct alignas(64) Baton {  // alone on its cache line
  std::atomic<std::uint64_t> value{0};
};
Baton g_baton;

void core_to_core(benchmark::State& state) {
  if (state.threads() != 2) {  // one thread alone would wait for ever
    state.SkipWithError("BM_core_to_core needs 2 threads");
    return;
  }
  constexpr std::uint64_t kHandoffs = 1000;  // round trips per iteration
  const std::uint64_t mine = static_cast<std::uint64_t>(state.thread_index());  // 0 or 1
  std::uint64_t step = 0;  // both threads run the same iterations, so their steps agree
  if (mine == 0) g_baton.value.store(0, std::memory_order_relaxed);  // before the start barrier
  for (auto _ : state) {
    for (std::uint64_t i = 0; i < kHandoffs; ++i, step += 2) {
      // Thread 0 moves the baton from even to odd, thread 1 from odd to even.
      while (g_baton.value.load(std::memory_order_acquire) != step + mine) {
      }
      g_baton.value.store(step + mine + 1, std::memory_order_release);
    }
  }
  if (mine == 0) state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kHandoffs * 2));
}

// --- the machine: how far two threads that share nothing scale -----------------------
//
// BM_machine_scaling/real_time/threads:1 and :2: each thread mixes a counter (splitmix64's
// finaliser, a cheap stand-in for a key's hash) and reads a random word of its own 1 MiB
// array (in its core's L2, as a lookup into a filter of 10^6 keys finds its lines), 8
// items an iteration. Nothing is shared, so on two idle physical cores it would scale
// about 2x. Where 2 threads / 1 thread reads otherwise, the host (other guests on the
// same physical cores, a lower clock when both are busy) slowed the 2-thread row (below
// 2x) or the 1-thread row (above), as it may slow any row here. Intel Xeon (Emerald Rapids),
// 30 Nov 2026: 1.37x in the 19:33 run of scripts/bench.sh; 0.94x-2.80x (median 1.65x)
// across the 16 processes of bench_paired.py --concurrent.
void machine_scaling(benchmark::State& state) {
  constexpr std::size_t kWords = (std::size_t{1} << 20) / sizeof(std::uint64_t);
  std::vector<std::uint64_t> words(kWords);
  for (std::size_t i = 0; i < kWords; ++i) words[i] = mix(i + (static_cast<std::uint64_t>(state.thread_index()) << 32));
  constexpr std::uint64_t kLanes = 8;
  std::uint64_t sum = 0;
  std::uint64_t i = 0;
  for (auto _ : state) {
    for (std::uint64_t lane = 0; lane < kLanes; ++lane, ++i) sum += words[mix(i) & (kWords - 1)];
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kLanes));
}

// --- the machine: writes into lines both cores write ---------------------------------
//
// BM_shared_writes/ahead:<A>/real_time/threads:<T>: each thread sets one bit of a random
// word of one shared array of 1.28 MB (about the slice of a 10^6-key filter at p = 1 %) with
// a locked fetch_or, the least a concurrent insert writes, 8 keys an iteration. ahead:0
// asks for nothing in advance, as a per-key insert cannot; ahead:16 prefetches the line of
// the key 16 further on, as insert_many prefetches a group of 16 ahead. One thread finds its
// lines in its own L2; with two, each write takes its line into the writer's core, so about
// half the lines a thread writes are in the other core, and a write waits for its line.
// What it shows: how far writes into a slice that fits in L2 can scale on the machine at
// all, without and with a look ahead. Intel Xeon (Emerald Rapids), 1 Dec 2026, 16 processes
// of bench_paired.py --concurrent: 2 threads / 1 thread 1.26x (0.98x-1.60x) without the
// prefetch (8.4 ns a key from one thread), 1.93x (1.73x-2.27x) with it.
constexpr std::size_t kSharedLines = 20'000;
std::uint64_t* g_shared_words = nullptr;

void shared_writes(benchmark::State& state, unsigned ahead) {
  std::unique_ptr<segbloom::detail::AlignedWords> owned;  // 64-byte aligned, as a slice's words
  if (state.thread_index() == 0) {  // the other threads wait at the loop's start barrier
    owned = std::make_unique<segbloom::detail::AlignedWords>(kSharedLines * 8);
    g_shared_words = owned->data();
  }
  // Thread t's i-th key: its line from the low half of mix, its word and bit from the high bits.
  const std::uint64_t base = kSeed + (static_cast<std::uint64_t>(state.thread_index()) << 44);
  const auto line_of = [](std::uint64_t h) {
    return static_cast<std::size_t>(((h & 0xFFFFFFFF) * kSharedLines) >> 32);
  };
  constexpr std::uint64_t kLanes = 8;
  std::uint64_t i = 0;
  for (auto _ : state) {
    std::uint64_t* const words = g_shared_words;
    for (std::uint64_t lane = 0; lane < kLanes; ++lane, ++i) {
      if (ahead != 0) segbloom::detail::prefetch(words + line_of(mix(base + i + ahead)) * 8);
      const std::uint64_t h = mix(base + i);
      std::atomic_ref<std::uint64_t>(words[line_of(h) * 8 + (h >> 61)])
          .fetch_or(std::uint64_t{1} << (h >> 55 & 63), std::memory_order_relaxed);
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kLanes));
  if (state.thread_index() == 0) g_shared_words = nullptr;  // after the end barrier; `owned` frees it
}

const bool registered = [] {
  benchmark::RegisterBenchmark("BM_core_to_core", core_to_core)->Threads(2)->UseRealTime();
  for (const unsigned ahead : {0u, 16u}) {
    benchmark::RegisterBenchmark(("BM_shared_writes/ahead:" + std::to_string(ahead)).c_str(), shared_writes, ahead)
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("BM_machine_scaling", machine_scaling)->Threads(1)->Threads(2)->UseRealTime();
  for (const std::uint64_t items : {1'000'000ull, 10'000'000ull}) {
    for (const auto layout : {segbloom::Layout::classic, segbloom::Layout::blocked}) {
      const std::string tag = layout == segbloom::Layout::blocked ? "-blocked" : "";
      const std::string tail = "/u64/" + std::to_string(items) + "/10000";
      for (const std::uint64_t keys_per_call : {std::uint64_t{1}, kInsertBatch}) {
        const std::string name = (keys_per_call == 1 ? "BM_concurrent" : "BM_concurrent_batched") + tag + "_insert" + tail;
        for (int threads : {1, 2}) {
          benchmark::RegisterBenchmark(name.c_str(), concurrent_fill, items, layout, keys_per_call)
              ->Threads(threads)
              ->Iterations(static_cast<benchmark::IterationCount>(items / keys_per_call) / threads)  // one fill a run
              ->UseRealTime();
        }
      }
      benchmark::RegisterBenchmark(("BM_plain" + tag + "_insert" + tail).c_str(), plain_insert, items, layout)
          ->Iterations(static_cast<benchmark::IterationCount>(items));
      for (int threads : {1, 2}) {
        benchmark::RegisterBenchmark(("BM_concurrent" + tag + "_lookup_positive" + tail).c_str(),
                                     concurrent_lookup<true>, items, layout)
            ->Threads(threads)
            ->UseRealTime();
        benchmark::RegisterBenchmark(("BM_concurrent" + tag + "_lookup_negative" + tail).c_str(),
                                     concurrent_lookup<false>, items, layout)
            ->Threads(threads)
            ->UseRealTime();
      }
      benchmark::RegisterBenchmark(("BM_concurrent_batched" + tag + "_lookup_positive" + tail).c_str(),
                                   concurrent_lookup_batched<true>, items, layout);
      benchmark::RegisterBenchmark(("BM_concurrent_batched" + tag + "_lookup_negative" + tail).c_str(),
                                   concurrent_lookup_batched<false>, items, layout);
      if (items == 1'000'000) {
        for (const bool writer : {false, true}) {
          benchmark::RegisterBenchmark(
              ("BM_concurrent_mixed" + tag + tail + "/writer:" + (writer ? "1" : "0")).c_str(), concurrent_mixed,
              items, layout, writer)
              ->UseRealTime();
        }
      }
    }
  }
  return true;
}();

}  // namespace
