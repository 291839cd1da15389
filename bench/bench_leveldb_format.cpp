// LevelDB's filter format: segbloom's writer and reader beside LevelDB's own policy.
// Both produce the same bytes (tests/test_leveldb_format.cpp checks it), so any difference
// is implementation alone: segbloom replaces LevelDB's 64-bit division per probe
// (h % bits with a size_t divisor) by a multiply-based exact remainder.
//
// Names: BM_LevelDbFormat_<op>_<impl>/<keys>/<bits_per_key>
//   op     create  build one filter of <keys> keys (time per key)
//          match   key_may_match on that filter, half present and half absent keys
//   impl   segbloom | leveldb (only when LevelDB was found at configure time)
//   keys   100 (LevelDB's typical per-2KB-block filter), 10^4, 10^6 (beyond L2)
// Keys are 16-character hex strings, like video IDs.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "segbloom/leveldb_format.hpp"

#ifdef SEGBLOOM_HAVE_LEVELDB
#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>
#endif

namespace {

namespace lf = segbloom::leveldb_format;

// keys[0, n) are inserted; keys[n, 2n) are absent (checked to be distinct by construction:
// each key is a distinct 64-bit counter mixed by a bijection).
const std::vector<std::string>& keys_for(std::size_t n) {
  static std::map<std::size_t, std::vector<std::string>> cache;
  auto& keys = cache[n];
  if (keys.empty()) {
    keys.reserve(2 * n);
    for (std::uint64_t i = 0; i < 2 * n; ++i) {
      std::uint64_t x = (i + 0x5e6b100f) * 0x9E3779B97F4A7C15ull;
      x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
      x ^= x >> 31;
      static constexpr char kHex[] = "0123456789abcdef";
      std::string key(16, '0');
      for (int d = 0; d < 16; ++d) key[d] = kHex[(x >> (4 * d)) & 15];
      keys.push_back(std::move(key));
    }
  }
  return keys;
}

// Queries: present and absent keys interleaved in a fixed random order.
std::vector<std::string_view> queries_for(std::size_t n) {
  const auto& keys = keys_for(n);
  std::vector<std::string_view> queries(keys.begin(), keys.end());
  std::shuffle(queries.begin(), queries.end(), std::mt19937_64(7));
  return queries;
}

void BM_LevelDbFormat_create_segbloom(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const int bits_per_key = static_cast<int>(state.range(1));
  const auto& keys = keys_for(n);
  const std::vector<std::string_view> views(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(n));
  std::string filter;
  for (auto _ : state) {
    filter.clear();
    lf::create_filter(views, bits_per_key, &filter);
    benchmark::DoNotOptimize(filter.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

void BM_LevelDbFormat_match_segbloom(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const int bits_per_key = static_cast<int>(state.range(1));
  const auto& keys = keys_for(n);
  const std::vector<std::string_view> views(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(n));
  std::string filter;
  lf::create_filter(views, bits_per_key, &filter);
  const auto queries = queries_for(n);
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(lf::key_may_match(queries[i], filter));
    if (++i == queries.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

#ifdef SEGBLOOM_HAVE_LEVELDB
void BM_LevelDbFormat_create_leveldb(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::unique_ptr<const leveldb::FilterPolicy> policy(
      leveldb::NewBloomFilterPolicy(static_cast<int>(state.range(1))));
  const auto& keys = keys_for(n);
  const std::vector<leveldb::Slice> slices(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(n));
  std::string filter;
  for (auto _ : state) {
    filter.clear();
    policy->CreateFilter(slices.data(), static_cast<int>(n), &filter);
    benchmark::DoNotOptimize(filter.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

void BM_LevelDbFormat_match_leveldb(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::unique_ptr<const leveldb::FilterPolicy> policy(
      leveldb::NewBloomFilterPolicy(static_cast<int>(state.range(1))));
  const auto& keys = keys_for(n);
  const std::vector<leveldb::Slice> slices(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(n));
  std::string filter;
  policy->CreateFilter(slices.data(), static_cast<int>(n), &filter);
  const leveldb::Slice filter_slice(filter);
  std::vector<leveldb::Slice> queries;
  for (const auto q : queries_for(n)) queries.emplace_back(q.data(), q.size());
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(policy->KeyMayMatch(queries[i], filter_slice));
    if (++i == queries.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
#endif

void sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t n : {100, 10'000, 1'000'000}) b->Args({n, 10});
}

}  // namespace

// Peers side by side for each operation.
BENCHMARK(BM_LevelDbFormat_create_segbloom)->Apply(sizes);
#ifdef SEGBLOOM_HAVE_LEVELDB
BENCHMARK(BM_LevelDbFormat_create_leveldb)->Apply(sizes);
#endif
BENCHMARK(BM_LevelDbFormat_match_segbloom)->Apply(sizes);
#ifdef SEGBLOOM_HAVE_LEVELDB
BENCHMARK(BM_LevelDbFormat_match_leveldb)->Apply(sizes);
#endif
