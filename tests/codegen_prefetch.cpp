// Compiled with optimisation and disassembled by check_prefetch.py (tests/meson.build):
// each function below must still contain a prefetch instruction. GCC 12 deletes calls
// of functions that only call __builtin_prefetch (detail/prefetch.hpp), which left
// batched lookups of blocked filters without prefetches until 26 Nov 2026.
#include <cstddef>
#include <span>

#include "segbloom/blocked.hpp"
#include "segbloom/concurrent_filter.hpp"
#include "segbloom/counting_bloom_filter.hpp"
#include "segbloom/scalable_bloom_filter.hpp"
#include "segbloom/transition_filter.hpp"

extern "C" void segbloom_codegen_prefetch_group(const segbloom::blocked::SliceRef* slices,
                                                std::size_t count,
                                                const segbloom::Digest128* digests,
                                                std::size_t n) {
  segbloom::blocked::prefetch_group(slices, count, digests, n);
}

extern "C" std::size_t segbloom_codegen_contains_many(const segbloom::ScalableBloomFilter* filter,
                                                      const std::uint64_t* keys, bool* found,
                                                      std::size_t n) {
  return filter->contains_many(std::span<const std::uint64_t>(keys, n), std::span<bool>(found, n));
}

// Both filters' slices in one batch (detail/lookup_slices.hpp).
extern "C" std::size_t segbloom_codegen_transition_contains_many(
    const segbloom::TransitionFilter<segbloom::ScalableBloomFilter>* pair, const std::uint64_t* keys, bool* found,
    std::size_t n) {
  return pair->contains_many(std::span<const std::uint64_t>(keys, n), std::span<bool>(found, n));
}

// The concurrent filter's batches prefetch through ConcurrentSlice::prefetch (inserts, and
// lookups when all slices are classic) and blocked::lookup_many (lookups with a blocked slice).
extern "C" std::size_t segbloom_codegen_concurrent_contains_many(
    const segbloom::ConcurrentScalableBloomFilter* filter, const std::uint64_t* keys, bool* found,
    std::size_t n) {
  return filter->contains_many(std::span<const std::uint64_t>(keys, n), std::span<bool>(found, n));
}

extern "C" std::size_t segbloom_codegen_concurrent_insert_many(segbloom::ConcurrentScalableBloomFilter* filter,
                                                               const std::uint64_t* keys, std::size_t n) {
  return filter->insert_many(std::span<const std::uint64_t>(keys, n));
}

// The classic layout's k-line prefetches on their own (the functions above also hold the
// blocked layout's, so they would pass without these).
extern "C" void segbloom_codegen_classic_prefetch(const segbloom::ScalableBloomFilter::slice_type* slice,
                                                  const segbloom::Digest128* digest) {
  slice->prefetch_probes(*digest);
}

extern "C" void segbloom_codegen_concurrent_classic_prefetch(
    const segbloom::detail::ConcurrentSlice<segbloom::DoubleHashingScheme>* slice,
    const segbloom::Digest128* digest) {
  slice->prefetch_probes(*digest);
}

// Group inserts into a classic slice prefetch the next 8 keys' lines from the positions
// they mark (detail::mark_many_avx512): a bit array's (set_many) and counters' (a counting
// filter's insert_many).
extern "C" std::uint64_t segbloom_codegen_set_many(std::uint64_t* words, const segbloom::Digest128* digests,
                                                   std::size_t n, std::uint64_t cells, unsigned k, const bool* write,
                                                   bool* changed) {
  return segbloom::DoubleHashingScheme::set_many(words, digests, n, cells, k, write, changed, true);
}

extern "C" std::size_t segbloom_codegen_counting_insert_many(segbloom::CountingBloomFilter* filter,
                                                             const std::uint64_t* keys, std::size_t n) {
  return filter->insert_many(std::span<const std::uint64_t>(keys, n));
}
