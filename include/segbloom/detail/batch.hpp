// segbloom: what every filter's batch calls share: the argument check, the result loop,
// a group's flags taken 8 at a time, and the walk over a batch in groups, hashed and
// prefetched ahead.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>

namespace segbloom::detail {

// Throws std::invalid_argument unless `out` has one element per key (or is empty where
// the output is `optional`).
inline void check_batch_output(std::size_t keys, std::size_t out, bool optional) {
  if (out != keys && !(optional && out == 0)) {
    throw std::invalid_argument("segbloom: output span has " + std::to_string(out) +
                                " elements for " + std::to_string(keys) + " keys");
  }
}

// Records one batch result: out[i] = result when `out` is not empty; returns result as
// a count (0 or 1) to add up.
inline std::size_t record(std::span<bool> out, std::size_t i, bool result) noexcept {
  if (!out.empty()) out[i] = result;
  return result ? 1 : 0;
}

// out[i] = answer(i) for i < n; returns how many are true. The count stays in a register:
// a per-key `count +=` through a reference made GCC store it, and read again what the
// loop reached through references, after every key. So `answer` should capture by value
// what it reads (a slice's fields, the group's digests): a slice's relaxed atomic loads
// would make GCC assume that anything reached through a reference may have changed.
template <class Answer>
std::size_t answer_each(bool* out, std::size_t n, Answer&& answer) {
  std::size_t hits = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bool hit = answer(i);
    out[i] = hit;
    hits += hit;
  }
  return hits;
}

// The same for the i < n with !out[i] (keys an earlier slice did not hold): out[i] =
// answer(i); returns how many of those are true.
template <class Answer>
std::size_t answer_missing(bool* out, std::size_t n, Answer&& answer) {
  std::size_t hits = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (out[i]) continue;
    const bool hit = answer(i);
    out[i] = hit;
    hits += hit;
  }
  return hits;
}

// answer_missing when `only_missing`, else answer_each.
template <class Answer>
std::size_t answer_group(bool* out, std::size_t n, bool only_missing, Answer&& answer) {
  return only_missing ? answer_missing(out, n, answer) : answer_each(out, n, answer);
}

// Whether any of `slices` slices holds each key of a group, asking them newest first
// (slice `slices` - 1 is the newest): ask(s, only_missing) answers slice s about every key
// of the group (only_missing = false, the newest) or only about the keys no newer one
// holds (true), as Slice::contains_group, and returns how many it found. Returns how
// many keys are found. Needs slices >= 1.
template <class Ask>
std::size_t answer_newest_first(std::size_t slices, Ask&& ask) {
  std::size_t hits = ask(slices - 1, false);
  for (std::size_t s = slices - 1; s-- > 0;) hits += ask(s, true);
  return hits;
}

// --- A group's flags, 8 to a word ---------------------------------------------------
// Per-key flags of a batch group (seen, write, changed) are bool arrays, which the kernels
// read and write one key at a time; the bookkeeping around them goes 8 flags at a time, as
// the bytes of a 64-bit word: bool is one byte holding 0 or 1 in every ABI GCC and Clang
// build for; the bytes are copied (memcpy), never read through another type, and those
// written back are 0 or 1. A loop
// per key took a compare, a branch and a byte load or store a key. With these (fortieth
// round, Intel Xeon, one binary switching between the two, alternating, 4 processes each):
// blocked batched inserts 0.78-0.92 of the time, classic 0.84-0.98 (bench/results/
// design-notes.md, "Batched inserts into a blocked slice").
static_assert(sizeof(bool) == 1);
inline constexpr std::uint64_t kFlagBytes = 0x0101010101010101;  // bit 0 of each byte

// The number of bytes of `flag_bytes` whose bit 0 is set, the others being 0: their sum
// (at most 8) lands in the top byte of the product.
constexpr std::size_t count_flag_bytes(std::uint64_t flag_bytes) noexcept {
  return static_cast<std::size_t>(((flag_bytes & kFlagBytes) * kFlagBytes) >> 56);
}

// How many of flags[0..n) are true.
inline std::size_t count_true(const bool* flags, std::size_t n) noexcept {
  std::size_t count = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t bytes;
    std::memcpy(&bytes, flags + i, 8);
    count += count_flag_bytes(bytes);
  }
  for (; i < n; ++i) count += flags[i];
  return count;
}

// How many i < kGroup have a[i] && !b[i].
template <std::size_t kGroup>
std::size_t count_true_and_not(const bool (&a)[kGroup], const bool (&b)[kGroup]) noexcept {
  static_assert(kGroup % 8 == 0);
  std::size_t count = 0;
  for (std::size_t i = 0; i < kGroup; i += 8) {
    std::uint64_t in_a, in_b;
    std::memcpy(&in_a, a + i, 8);
    std::memcpy(&in_b, b + i, 8);
    count += count_flag_bytes(in_a & ~in_b);
  }
  return count;
}

// out[i] = !in[i] || always, for every i < kGroup.
template <std::size_t kGroup>
void set_not_or(const bool (&in)[kGroup], bool always, bool (&out)[kGroup]) noexcept {
  static_assert(kGroup % 8 == 0);
  const std::uint64_t all = always ? kFlagBytes : 0;
  for (std::size_t i = 0; i < kGroup; i += 8) {
    std::uint64_t bytes;
    std::memcpy(&bytes, in + i, 8);
    bytes = ((bytes & kFlagBytes) ^ kFlagBytes) | all;
    std::memcpy(out + i, &bytes, 8);
  }
}

// The group size of batched calls: 16 keys are hashed, then their lines prefetched in
// every slice (16 x slices reads in flight), then inserted (into a newest slice with room
// for all 16, the group at once: SegmentedFilter::insert_group, CountingBloomFilter::insert_group)
// or answered.
inline constexpr std::size_t kBatchGroup = 16;

// The group size of batched lookups that answer a group per slice in one call
// (Slice::contains_group, ConcurrentSlice::contains_group, blocked::lookup_many where it
// does not prefetch): 32 keys, which spreads each call's fixed work (the hash call, each
// slice's set-up) over twice as many keys and leaves more reads to overlap. AMD EPYC Zen
// 5, 29 Nov 2026, benchmark binaries with 16, 32 and 64 alternating, 3 processes each,
// 32 against 16: classic batched lookups at 10^4-10^6 keys 0.83-0.93 of the time (u64
// negatives at 10^6 5.8 -> 5.4 ns), at 10^7 (prefetched) 0.89-1.04; the user's 3-slice
// filter 0.95; one small blocked slice 0.86-0.93; 64 no better than 32. Inserts keep 16:
// with 32, classic inserts at 10^7 keys took 1.03-1.08x the time (blocked ones gained).
inline constexpr std::size_t kLookupGroup = 32;

// Walks `count` keys in groups of kGroupSize (default kBatchGroup), kAhead groups
// ahead. prepare(start, n, digests, first) hashes the n keys from `start` into `digests`
// and prefetches their lines; use(start, n, digests, later) answers them once the kAhead
// groups after them have been prepared, so that their lines arrive while earlier groups
// are worked on. `later` holds the digests of the group prepared just before (kAhead
// groups later; empty near the end). A caller may prefetch `later` one key at a time as
// it works instead of all at once in prepare: spread among other work, prefetches
// measured faster (blocked/lookup_group.hpp, lookup_pairs_avx512). Its prepare then prefetches only
// when `first`, true for the first kAhead groups, which are never passed as `later`.
// `use` may change the filter (inserts): a prefetch is only a hint.
template <class Digest, std::size_t kAhead = 1, std::size_t kGroupSize = kBatchGroup, class Prepare,
          class Use>
void for_each_group_ahead(std::size_t count, Prepare&& prepare, Use&& use) {
  static_assert(kAhead >= 1);
  constexpr std::size_t kRing = kAhead + 1;
  // Cache-line aligned: the vector tests load 4 or 8 digests at a time (64 or 128 bytes),
  // which on a 16-byte boundary would straddle a line more often than not.
  alignas(64) std::array<Digest, kGroupSize> groups[kRing];
  const auto size_at = [count](std::size_t start) { return std::min(kGroupSize, count - start); };
  std::size_t prepared = 0;  // keys prepared so far
  for (std::size_t g = 0; g < kAhead && prepared < count; ++g, prepared += kGroupSize) {
    prepare(prepared, size_at(prepared), groups[g].data(), true);
  }
  for (std::size_t start = 0, g = 0; start < count; start += kGroupSize, ++g) {
    std::span<const Digest> later;
    if (prepared < count) {
      Digest* const slot = groups[(g + kAhead) % kRing].data();
      later = {slot, size_at(prepared)};
      prepare(prepared, later.size(), slot, false);
      prepared += kGroupSize;
    }
    use(start, size_at(start), static_cast<const Digest*>(groups[g % kRing].data()), later);
  }
}

}  // namespace segbloom::detail
