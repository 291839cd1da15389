// SeenStore: the request path of a seen-items service, per backend.
//
// 200 users hold 2 000 items each (default filter options: window of 10 000, p = 0.001).
// A request is filter_unseen of 500 candidates (100 of them seen) for the next user, or
// take_unseen of the same 500 with limit 20 (a read and a compare-and-set write).
// Reported: requests per second (wall clock; Redis is I/O), and p50 / p99 latency in
// microseconds computed from every request's own timing in the run.
//
// Backends: 0 memory (standalone), 1 LevelDB (temporary directory), 2 Redis (needs a
// server: SEGBLOOM_REDIS_SOCKET=/path/to/redis.sock, else the case is skipped), 3 memory
// cache in front of LevelDB.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "segbloom/memory_backend.hpp"
#include "segbloom/seen_store.hpp"
#if SEGBLOOM_STORE_HAVE_LEVELDB
#include "segbloom/leveldb_backend.hpp"
#endif
#if SEGBLOOM_STORE_HAVE_REDIS
#include "segbloom/redis_backend.hpp"
#endif

namespace {

constexpr int kUsers = 200;
constexpr std::size_t kHeld = 2000;
constexpr std::size_t kCandidates = 500;
constexpr std::size_t kSeenCandidates = 100;

std::uint64_t item(std::uint64_t user, std::uint64_t i) {  // distinct per (user, i)
  std::uint64_t x = (user << 32 | i) + 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern = std::filesystem::temp_directory_path().string() + "/segbloom-bench-XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path.empty()) std::filesystem::remove_all(path, ignored);
  }
};

// A populated store per backend, built on first use and kept for the whole run; null
// (with the reason) when the backend is unavailable.
struct Populated {
  std::unique_ptr<TempDir> dir;
  std::unique_ptr<segbloom::SeenStore> store;
  std::string unavailable;
};

Populated make_populated(int backend) {
  Populated p;
  segbloom::SeenStoreOptions options;
  try {
    switch (backend) {
      case 0:
        options.backend = segbloom::make_memory_backend({.byte_budget = std::uint64_t{1} << 30});
        break;
#if SEGBLOOM_STORE_HAVE_LEVELDB
      case 1:
      case 3: {
        p.dir = std::make_unique<TempDir>();
        auto disk = segbloom::make_leveldb_backend({.path = p.dir->path + "/db"});
        options.backend = backend == 1 ? disk
                                       : segbloom::make_memory_backend(
                                             {.byte_budget = std::uint64_t{1} << 30, .backing = disk});
        break;
      }
#endif
#if SEGBLOOM_STORE_HAVE_REDIS
      case 2: {
        const char* socket = std::getenv("SEGBLOOM_REDIS_SOCKET");
        if (socket == nullptr || *socket == '\0') {
          p.unavailable = "set SEGBLOOM_REDIS_SOCKET to a running redis-server's Unix socket";
          return p;
        }
        segbloom::RedisConfig config;
        config.unix_socket = socket;
        config.key_prefix = "segbloom-bench:" + std::to_string(::getpid()) + ":";
        options.backend = segbloom::make_redis_backend(config);
        break;
      }
#endif
      default:
        p.unavailable = "backend not built (dependency not found)";
        return p;
    }
  } catch (const std::exception& e) {
    p.unavailable = e.what();
    return p;
  }
  p.store = std::make_unique<segbloom::SeenStore>(options);
  std::vector<std::uint64_t> held(kHeld);
  for (int user = 0; user < kUsers; ++user) {
    for (std::size_t i = 0; i < kHeld; ++i) held[i] = item(std::uint64_t(user), i);
    p.store->mark_seen(std::uint64_t(user), held);
  }
  return p;
}

Populated& populated(int backend) {
  static std::map<int, Populated> all;
  auto it = all.find(backend);
  if (it == all.end()) it = all.emplace(backend, make_populated(backend)).first;
  return it->second;
}

// Candidates for a request of `user`: kSeenCandidates held items, then fresh ones.
std::vector<std::uint64_t> candidates(int user, std::uint64_t request) {
  std::vector<std::uint64_t> out(kCandidates);
  for (std::size_t i = 0; i < kCandidates; ++i) {
    out[i] = i < kSeenCandidates ? item(std::uint64_t(user), (request * 37 + i * 13) % kHeld)
                                 : item(std::uint64_t(user) + 1'000'000, request * kCandidates + i);
  }
  return out;
}

double percentile(std::vector<double>& samples, double q) {
  if (samples.empty()) return 0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(samples.size() - 1));
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(k), samples.end());
  return samples[k];
}

template <bool kTake>
void BM_seen_store(benchmark::State& state) {
  Populated& p = populated(static_cast<int>(state.range(0)));
  if (!p.store) {
    state.SkipWithError(p.unavailable.c_str());
    return;
  }
  static std::uint64_t request = 0;
  std::vector<double> micros;
  std::size_t returned = 0;
  for (auto _ : state) {
    // Generating a batch takes about a microsecond; it is outside the latency samples.
    const int user = static_cast<int>(request % kUsers);
    const auto batch = candidates(user, request++);
    const auto start = std::chrono::steady_clock::now();
    const auto unseen = kTake ? p.store->take_unseen(std::uint64_t(user), batch, 20)
                              : p.store->filter_unseen(std::uint64_t(user), batch);
    micros.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    returned += unseen.size();
    benchmark::DoNotOptimize(unseen.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));  // requests/s
  state.counters["p50_us"] = percentile(micros, 0.50);
  state.counters["p99_us"] = percentile(micros, 0.99);
  state.counters["unseen_per_request"] =
      static_cast<double>(returned) / static_cast<double>(std::max<std::int64_t>(1, state.iterations()));
}

void backends(benchmark::internal::Benchmark* b) {
  b->ArgName("backend");
  for (int backend = 0; backend < 4; ++backend) b->Arg(backend);
  b->UseRealTime();
}

BENCHMARK_TEMPLATE(BM_seen_store, false)->Name("BM_seen_store_filter_unseen")->Apply(backends);
BENCHMARK_TEMPLATE(BM_seen_store, true)->Name("BM_seen_store_take_unseen")->Apply(backends);

}  // namespace
