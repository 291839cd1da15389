// segbloom benchmarks: the core filter beside LevelDB's built-in Bloom filter and
// libbloom, in one binary, at equal bits per key.
//
// Names (scripts/bench_table.py parses them):
//   BM_<impl>_<op>/<keys>/<items>/<p in ppm>
//   impl   segbloom (classic layout, the default) | segbloom-blocked (Options::layout =
//          blocked: one 64-byte block per key) | leveldb | libbloom (peers only when
//          found at configure time)
//   op     insert           build a filter of <items> keys from empty, one insert()
//                           per key; time per key
//          insert_batched   the same with one insert_many() over all keys (LevelDB:
//                           CreateFilter, its only way in, so both its rows are equal;
//                           libbloom, which has no batch call: the same loop)
//          lookup_positive  keys that were inserted, in shuffled order, one contains()
//                           per key
//          lookup_negative  keys that were never inserted, one contains() per key
//          lookup_positive_batched, lookup_negative_batched
//                           the same keys through contains_many() (the peers have no
//                           batch call: their rows run the same per-key loop)
//   keys   u64 (std::uint64_t) | str16 (16-character hex strings, like video IDs)
//   items  10^4 (the filter fits in L1/L2), 10^6, 10^7; for the size plot also 10^5
//          and 10^8 (u64, 1 %, lookups only)
//   p      10000 ppm = 1 %, 1000 ppm = 0.1 %
//
// Lookup loop (the same for every implementation): each iteration answers a batch of
// 1024 consecutive keys of the key array, adding the answers up; the sum passes through
// DoNotOptimize once per batch. So no per-key barrier orders the lookups (a
// DoNotOptimize per key made the compiler materialise every answer, and made negative
// lookups look slower than positive ones), and the CPU may overlap independent lookups
// exactly as it would in a loop over candidates.
// Counters: items_per_second (ns/op = 1e9 / items_per_second), bits_per_key (filter
// bits / items), probes (k), fp_rate (fraction of the absent keys reported present) and
// fp_samples (how many absent keys: the first 10^6).
//
// Equal bits per key. segbloom runs as ONE slice sized for all items at rate p
// (capacity = items, max_slices = 1): a plain Bloom filter, as its peers are. Growing
// mode would give its first slice the rate p (1 - r) = 0.2 p at the default r = 0.8,
// about 2.3 bits per key more, and so compare a 0.2 p filter with p filters. The
// slice's actual size b = bits / items (p = 1 %: 10.10 to 10.25, k = 7; p = 0.1 %: 14.43
// to 14.61, k = 10; the larger values at 10^4 items, from segbloom's six-sigma fill
// margin, the rest from rounding k up) is handed to the peers: LevelDB takes an integer,
// round(b) (10 and 14, 1-3 % fewer bits; 15 at 10^4 items and 0.1 %); libbloom takes an
// error rate e and uses -ln e / ln^2 2 bits per key, so
// e = exp(-b ln^2 2) gives it b bits per key. segbloom-blocked is sized by its own
// rule for the same p (more bits per key than classic: the table shows both), so it
// is compared with the peers at equal target rate, not at equal memory.
//
// Setup is paid once: key arrays are made once per (key type, items) and each filter
// that lookups read is built once per (impl, key type, items, p), then reused by every
// repetition, also when repetitions run in shuffled order: data sets of up to 10^6
// keys stay alive together, a larger one alone (0.79 GB at peak for 10^7 string keys,
// 4.4 GB for 10^8 u64 keys, 2 Dec 2026).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <numbers>
#include <span>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "bench_keys.hpp"
#include "lookup_batches.hpp"
#include "segbloom/segbloom.hpp"

#ifdef SEGBLOOM_HAVE_LEVELDB
#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>
#endif
#ifdef SEGBLOOM_HAVE_LIBBLOOM
#include <bloom.h>
#endif

namespace {

// Absent keys for the false-positive rate: at p = 0.1 % about 1 000 false positives,
// so the measured rate is good to about +-3 % (one standard deviation). A data set holds
// at least this many absent keys, and as many as its present ones (negative lookups
// stream them).
constexpr std::uint64_t kAbsentKeys = 1'000'000;
constexpr std::uint64_t kSeed = 0x5e6b100f;

// Keys (bench_keys.hpp): present keys from inputs kSeed + i, absent keys from inputs
// kSeed + 2^62 + j, so the two never collide and never repeat.
using bench::make_key;
using bench::Str16;
constexpr std::uint64_t kAbsentBase = std::uint64_t{1} << 62;

// --- Key types ------------------------------------------------------------------

// What segbloom is given: the integer, or a view of the 16 characters.
std::uint64_t key_of(const std::uint64_t& k) { return k; }
std::string_view key_of(const Str16& k) { return {k.data(), k.size()}; }

// What the C-style peers are given: the key's bytes. For integers these are the
// little-endian bytes segbloom hashes too (x86-64 is little-endian). Unused when
// neither peer is installed.
[[maybe_unused]] const char* bytes_of(const std::uint64_t& k) {
  return reinterpret_cast<const char*>(&k);
}
[[maybe_unused]] const char* bytes_of(const Str16& k) { return k.data(); }
template <class T>
[[maybe_unused]] constexpr int kKeyBytes = static_cast<int>(sizeof(T));

template <class T>
constexpr const char* kKeysName = std::is_same_v<T, Str16> ? "str16" : "u64";

// --- Data sets --------------------------------------------------------------------

template <class T>
struct Dataset {
  std::uint64_t items = 0;
  std::vector<T> present;  // inserted, in insertion order
  std::vector<T> lookup;   // the same keys, shuffled: the positive-lookup order
  std::vector<T> absent;   // never inserted: max(items, kAbsentKeys)
#ifdef SEGBLOOM_HAVE_LEVELDB
  std::vector<leveldb::Slice> present_slices;  // made on first use (LevelDB's input)
#endif
};

template <class T>
std::shared_ptr<Dataset<T>> make_dataset(std::uint64_t items) {
  auto d = std::make_shared<Dataset<T>>();
  d->items = items;
  d->present.reserve(items);
  for (std::uint64_t i = 0; i < items; ++i) {
    d->present.push_back(make_key(kSeed + i, static_cast<T*>(nullptr)));
  }
  d->lookup = d->present;
  std::mt19937_64 rng(kSeed);
  std::shuffle(d->lookup.begin(), d->lookup.end(), rng);
  const std::uint64_t absent = std::max(items, kAbsentKeys);
  d->absent.reserve(absent);
  for (std::uint64_t j = 0; j < absent; ++j) {
    d->absent.push_back(make_key(kSeed + kAbsentBase + j, static_cast<T*>(nullptr)));
  }
  return d;
}

// Filter parameters: items, target rate, and segbloom's bits per key (the peers' size).
struct Params {
  std::uint64_t items = 0;
  double rate = 0;
  double bits_per_key = 0;
};

segbloom::Options segbloom_options(std::uint64_t items, double rate,
                                   segbloom::Layout layout = segbloom::Layout::classic) {
  segbloom::Options options;
  options.capacity = items;
  options.false_positive_rate = rate;
  options.max_slices = 1;  // one slice of `items` at rate p: a plain Bloom filter
  options.layout = layout;
  return options;
}

Params params_for(std::uint64_t items, double rate) {
  const segbloom::SliceShape shape = segbloom::slice_shape(segbloom_options(items, rate), 0);
  return {items, rate, static_cast<double>(shape.bits) / static_cast<double>(items)};
}

// --- The filters under test ---------------------------------------------------------
// Each implementation: Filter, prepare(dataset) (input conversion outside the timed
// region), build(dataset, params) -> unique_ptr<Filter>, contains(filter, key),
// bits(filter) and probes(filter).

template <segbloom::Layout kLayout>
struct SegbloomImpl {
  static constexpr const char* kName =
      kLayout == segbloom::Layout::classic ? "segbloom" : "segbloom-blocked";
  using Filter = segbloom::ScalableBloomFilter;

  template <class T>
  static void prepare(Dataset<T>&) {}

  template <class T>
  static std::unique_ptr<Filter> build(const Dataset<T>& d, const Params& params) {
    auto filter = std::make_unique<Filter>(segbloom_options(params.items, params.rate, kLayout));
    for (const T& key : d.present) filter->insert(key_of(key));
    if (filter->rotations() != 0) throw std::logic_error("segbloom: the slice overflowed");
    return filter;
  }

  // One insert_many over all keys.
  template <class T>
  static std::unique_ptr<Filter> build_batched(const Dataset<T>& d, const Params& params) {
    auto filter = std::make_unique<Filter>(segbloom_options(params.items, params.rate, kLayout));
    filter->insert_many(std::span<const T>(d.present));
    if (filter->rotations() != 0) throw std::logic_error("segbloom: the slice overflowed");
    return filter;
  }

  template <class T>
  static bool contains(const Filter& filter, const T& key) {
    return filter.contains(key_of(key));
  }

  // Str16 keys are byte spans to segbloom: the same 16 bytes, the same digest as the
  // string_view that contains() gets.
  template <class T>
  static std::size_t contains_many(const Filter& filter, std::span<const T> keys, bool* found) {
    return filter.contains_many(keys, std::span<bool>(found, keys.size()));
  }

  static double bits(const Filter& filter) {
    return static_cast<double>(filter.slices().front().shape().bits);
  }
  static double probes(const Filter& filter) { return filter.slices().front().shape().probes; }
};

#ifdef SEGBLOOM_HAVE_LEVELDB
struct LevelDbImpl {
  static constexpr const char* kName = "leveldb";
  struct Filter {
    std::unique_ptr<const leveldb::FilterPolicy> policy;
    std::string bytes;  // the filter, as LevelDB stores it in a table
    int bits_per_key = 0;
  };

  template <class T>
  static void prepare(Dataset<T>& d) {
    if (d.present_slices.size() == d.present.size()) return;
    d.present_slices.clear();
    d.present_slices.reserve(d.present.size());
    for (const T& key : d.present) d.present_slices.emplace_back(bytes_of(key), kKeyBytes<T>);
  }

  // Insert = CreateFilter over all keys (its only way in), divided by the key count.
  template <class T>
  static std::unique_ptr<Filter> build(const Dataset<T>& d, const Params& params) {
    auto filter = std::make_unique<Filter>();
    filter->bits_per_key = std::max(1, static_cast<int>(std::lround(params.bits_per_key)));
    filter->policy.reset(leveldb::NewBloomFilterPolicy(filter->bits_per_key));
    filter->policy->CreateFilter(d.present_slices.data(), static_cast<int>(d.present_slices.size()),
                                 &filter->bytes);
    return filter;
  }

  template <class T>
  static bool contains(const Filter& filter, const T& key) {
    return filter.policy->KeyMayMatch(leveldb::Slice(bytes_of(key), kKeyBytes<T>), filter.bytes);
  }

  // The last byte of LevelDB's filter holds k; the rest are the bits.
  static double bits(const Filter& filter) {
    return 8.0 * static_cast<double>(filter.bytes.size() - 1);
  }
  static double probes(const Filter& filter) {
    return static_cast<unsigned char>(filter.bytes.back());
  }
};
#endif

#ifdef SEGBLOOM_HAVE_LIBBLOOM
struct LibbloomImpl {
  static constexpr const char* kName = "libbloom";
  struct Filter {
    bloom b{};
    Filter() = default;
    Filter(const Filter&) = delete;
    Filter& operator=(const Filter&) = delete;
    ~Filter() { bloom_free(&b); }
  };

  template <class T>
  static void prepare(Dataset<T>&) {}

  // libbloom sizes itself with bpe = -ln(error) / ln^2 2; this error gives it b bits per key.
  static double error_for(double bits_per_key) {
    return std::exp(-bits_per_key * std::numbers::ln2 * std::numbers::ln2);
  }

  template <class T>
  static std::unique_ptr<Filter> build(const Dataset<T>& d, const Params& params) {
    auto filter = std::make_unique<Filter>();
    if (bloom_init(&filter->b, static_cast<int>(params.items), error_for(params.bits_per_key)) != 0) {
      throw std::runtime_error("libbloom: bloom_init failed");
    }
    for (const T& key : d.present) bloom_add(&filter->b, bytes_of(key), kKeyBytes<T>);
    return filter;
  }

  template <class T>
  static bool contains(const Filter& filter, const T& key) {
    // bloom_check only reads, but its C signature is not const.
    return bloom_check(const_cast<bloom*>(&filter.b), bytes_of(key), kKeyBytes<T>) == 1;
  }

  static double bits(const Filter& filter) { return filter.b.bits; }
  static double probes(const Filter& filter) { return filter.b.hashes; }
};
#endif

// --- Caches: data sets and their filters, built once --------------------------------

template <class Impl>
struct Built {
  std::unique_ptr<typename Impl::Filter> filter;
  double bits_per_key = 0;
  double probes = 0;
  double fp_rate = 0;
  double fp_samples = 0;  // absent keys the rate was measured over
  std::string error;  // not empty: a false negative or a failed build
};

// Data sets of up to 10^6 keys stay alive together (tens of MB in all), so that
// repetitions run in shuffled order (scripts/bench.sh) do not rebuild them; a larger one
// is kept alone (10^8 keys take about 4.4 GB with their filters).
constexpr std::uint64_t kSharedItems = 1'000'000;

struct CacheEntry {
  std::uint64_t items = 0;
  std::shared_ptr<void> dataset;
  std::map<std::string, std::shared_ptr<void>> filters;  // "<impl>/<p>" for that data set
};

std::map<std::string, CacheEntry>& cache() {  // by "<keys>/<items>"
  static std::map<std::string, CacheEntry> c;
  return c;
}

template <class T>
CacheEntry& cache_entry(std::uint64_t items) {
  auto& c = cache();
  const std::string tag = std::string(kKeysName<T>) + "/" + std::to_string(items);
  auto it = c.find(tag);
  if (it == c.end()) {
    const bool large_cached =
        std::any_of(c.begin(), c.end(), [](const auto& e) { return e.second.items > kSharedItems; });
    if (items > kSharedItems || large_cached) c.clear();  // free them before making the next
    it = c.emplace(tag, CacheEntry{items, make_dataset<T>(items), {}}).first;
  }
  return it->second;
}

template <class T>
Dataset<T>& dataset(std::uint64_t items) {
  return *std::static_pointer_cast<Dataset<T>>(cache_entry<T>(items).dataset);
}

// The filter that lookups read, built once, checked for false negatives, and measured
// for its false-positive rate over all absent keys.
template <class Impl, class T>
const Built<Impl>& built(std::uint64_t items, const Params& params) {
  CacheEntry& entry = cache_entry<T>(items);
  Dataset<T>& d = *std::static_pointer_cast<Dataset<T>>(entry.dataset);
  std::shared_ptr<void>& slot = entry.filters[std::string(Impl::kName) + "/" + std::to_string(params.rate)];
  if (!slot) {
    auto b = std::make_shared<Built<Impl>>();
    try {
      Impl::prepare(d);
      b->filter = Impl::build(d, params);
      b->bits_per_key = Impl::bits(*b->filter) / static_cast<double>(params.items);
      b->probes = Impl::probes(*b->filter);
      for (const T& key : d.present) {
        if (!Impl::contains(*b->filter, key)) {
          b->error = std::string(Impl::kName) + ": false negative";
          break;
        }
      }
      std::uint64_t false_positives = 0;
      const std::span<const T> sampled(d.absent.data(), kAbsentKeys);
      for (const T& key : sampled) false_positives += Impl::contains(*b->filter, key);
      b->fp_samples = static_cast<double>(sampled.size());
      b->fp_rate = static_cast<double>(false_positives) / b->fp_samples;
    } catch (const std::exception& e) {
      b->error = e.what();
    }
    slot = b;
  }
  return *std::static_pointer_cast<Built<Impl>>(slot);
}

template <class Impl>
void set_counters(benchmark::State& state, const Built<Impl>& b) {
  state.counters["bits_per_key"] = b.bits_per_key;
  state.counters["probes"] = b.probes;
  state.counters["fp_rate"] = b.fp_rate;
  state.counters["fp_samples"] = b.fp_samples;
}

// --- The benchmarks ---------------------------------------------------------------

// Builds a filter of all the data set's keys: with the implementation's batch call
// where it has one and `batched` is asked for, else key by key.
template <class Impl, class T>
std::unique_ptr<typename Impl::Filter> build_filter(const Dataset<T>& d, const Params& params,
                                                    bool batched) {
  if constexpr (requires { Impl::build_batched(d, params); }) {
    if (batched) return Impl::build_batched(d, params);
  }
  return Impl::build(d, params);
}

// How many of `keys` the filter reports: through its batch call where it has one and
// kBatched asks for it, else one lookup per key. A template parameter, not a run-time flag,
// so that each loop is compiled alone: with both in one function, a change to
// contains_many moved the per-key rows by 5 % (eleventh round).
template <class Impl, class T, bool kBatched>
std::size_t count_found(const typename Impl::Filter& filter, std::span<const T> keys, bool* found) {
  if constexpr (kBatched && requires { Impl::contains_many(filter, keys, found); }) {
    return Impl::contains_many(filter, keys, found);
  } else {
    std::size_t sum = 0;
    for (const T& key : keys) sum += Impl::contains(filter, key);
    return sum;
  }
}

template <class Impl, class T, bool kBatched>
void bench_insert(benchmark::State& state, std::uint64_t items, double rate) {
  Dataset<T>& d = dataset<T>(items);
  const Params params = params_for(items, rate);
  const Built<Impl>& b = built<Impl, T>(items, params);
  if (!b.error.empty()) {
    state.SkipWithError(b.error.c_str());
    return;
  }
  // Each iteration builds a whole filter: allocation, every insert, destruction.
  for (auto _ : state) {
    auto filter = build_filter<Impl>(d, params, kBatched);
    benchmark::DoNotOptimize(filter.get());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(items));
  set_counters(state, b);
}

// Batches of the key array (bench::lookup_batches), answered by the filter.
template <class Impl, class T, bool kPresent, bool kBatched>
void bench_lookup(benchmark::State& state, std::uint64_t items, double rate) {
  Dataset<T>& d = dataset<T>(items);
  const Built<Impl>& b = built<Impl, T>(items, params_for(items, rate));
  if (!b.error.empty()) {
    state.SkipWithError(b.error.c_str());
    return;
  }
  const typename Impl::Filter& filter = *b.filter;
  const std::vector<T>& keys = kPresent ? d.lookup : d.absent;
  // Absent keys: as many as present ones, so both lookups stream a key array of the same
  // size (10^8 u64 keys: 800 MB each). Until 2 Dec 2026 the absent keys were at most
  // 10^6 (8 MB, in L3) while the positives streamed all items.
  const std::span<const T> streamed(keys.data(), items);
  bench::lookup_batches(state, streamed, [&filter](std::span<const T> batch, std::span<bool> found) {
    return count_found<Impl, T, kBatched>(filter, batch, found.data());
  });
  set_counters(state, b);
}

template <class Impl, class T>
void register_impl(const std::string& op, std::uint64_t items, std::uint32_t ppm) {
  const double rate = ppm / 1e6;
  const std::string name = std::string("BM_") + Impl::kName + "_" + op + "/" + kKeysName<T> +
                           "/" + std::to_string(items) + "/" + std::to_string(ppm);
  benchmark::internal::Benchmark* bm = nullptr;
  if (op == "insert") {
    bm = benchmark::RegisterBenchmark(name.c_str(), bench_insert<Impl, T, false>, items, rate);
  } else if (op == "insert_batched") {
    bm = benchmark::RegisterBenchmark(name.c_str(), bench_insert<Impl, T, true>, items, rate);
  } else if (op == "lookup_positive") {
    bm = benchmark::RegisterBenchmark(name.c_str(), bench_lookup<Impl, T, true, false>, items, rate);
  } else if (op == "lookup_negative") {
    bm = benchmark::RegisterBenchmark(name.c_str(), bench_lookup<Impl, T, false, false>, items, rate);
  } else if (op == "lookup_positive_batched") {
    bm = benchmark::RegisterBenchmark(name.c_str(), bench_lookup<Impl, T, true, true>, items, rate);
  } else {
    bm = benchmark::RegisterBenchmark(name.c_str(), bench_lookup<Impl, T, false, true>, items, rate);
  }
  bm->Unit(benchmark::kNanosecond);
}

template <class T>
void register_keys() {
  constexpr bool kU64 = std::is_same_v<T, std::uint64_t>;
  for (const std::uint64_t items :
       {10'000ull, 100'000ull, 1'000'000ull, 10'000'000ull, 100'000'000ull}) {
    // 10^5 and 10^8 only for the size plot: u64 keys, 1 %, lookups.
    const bool plot_only = items == 100'000 || items == 100'000'000;
    if (plot_only && !kU64) continue;
    for (const std::uint32_t ppm : {10'000u, 1'000u}) {
      if (plot_only && ppm != 10'000) continue;
      for (const std::string op : {"insert", "insert_batched", "lookup_positive", "lookup_negative",
                                   "lookup_positive_batched", "lookup_negative_batched"}) {
        if (plot_only && op.starts_with("insert")) continue;
        register_impl<SegbloomImpl<segbloom::Layout::classic>, T>(op, items, ppm);
        register_impl<SegbloomImpl<segbloom::Layout::blocked>, T>(op, items, ppm);
#ifdef SEGBLOOM_HAVE_LEVELDB
        register_impl<LevelDbImpl, T>(op, items, ppm);
#endif
#ifdef SEGBLOOM_HAVE_LIBBLOOM
        register_impl<LibbloomImpl, T>(op, items, ppm);
#endif
      }
    }
  }
}

const bool registered = [] {
  register_keys<std::uint64_t>();
  register_keys<Str16>();
  return true;
}();

}  // namespace
