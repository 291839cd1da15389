// segbloom: the blocked layout's batch kernels. Each answers a group of keys against every
// blocked slice of a filter with one call (portable, AVX2 and AVX-512 forms, and one-slice
// forms of the two SIMD ones), prefetching a later group's blocks as it works.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "segbloom/blocked/contains.hpp"
#include "segbloom/blocked/layout.hpp"
#include "segbloom/detail/prefetch.hpp"

namespace segbloom::blocked {

// A batched lookup (lookup_many, lookup_many.hpp: both filters' contains_many) works on groups
// of keys. It answers each group with one call of a kernel (`lookup_group_for`: chosen once
// per process, with a fast path for one slice) that computes each key's probes once (the
// same in every slice) and tests them against its block in each slice, newest first,
// stopping at the first slice that holds it (a block address is one multiplication: cheaper
// to compute twice than to store). When the slices together are worth prefetching
// (detail::worth_prefetching: at least the core's L2 size, at most 2 MiB), groups are
// kGroup keys and group g + 2 has been hashed before group g is answered: the kernel
// prefetches its keys' blocks in every slice one key at a time as it works
// (`Lookahead`). Spread among the kernel's own work, the prefetches measured faster than
// all of a group's at once (10^8 keys: 5.9 -> 4.7 ns a lookup), and 128 keys ahead keep
// about as many reads in flight as memory needs (the first two groups are prefetched at
// once, `prefetch_group`, and from kPrefetchTwiceMinBytes of slices a second time just
// before the first answer). One indirect call per group, none per key or slice.
// Measured: bench/results/design-notes.md, "Batched lookups", and history.md.

// One blocked slice as the batch kernels see it. No default member initialisers: callers
// keep arrays of kMaxBlockedSlices of them on the stack, filled as far as used (the plain
// filter's insert_many once per group of 16 keys), and zeroing the 1.5 KB for every group
// cost the concurrent filter's batched lookups, which then filled one per group, 2.6 -> 3.5 ns
// a key.
struct SliceRef {
  const void* words;  // the first block; read only through the kernel's Loads
  std::uint64_t blocks;
  unsigned probes;
};

// The group size of batched lookups that prefetch (see lookup_many; the others take
// detail::kLookupGroup = 32): a hash call and a kernel call per 64 keys
// (lookup_many). Kernels take any n.
inline constexpr std::size_t kGroup = 64;

// Key d's block in a slice.
inline const void* block_in(const SliceRef& slice, const Digest128& d) noexcept {
  return static_cast<const unsigned char*>(slice.words) + block_of(d, slice.blocks) * kBlockBytes;
}

// Prefetches the n keys' blocks in each of the slices (the caller decides whether it is
// worth it: lookup_many, once per batch).
inline void prefetch_group(const SliceRef* slices, std::size_t count, const Digest128* digests,
                           std::size_t n) noexcept {
  for (std::size_t s = 0; s < count; ++s) {
    for (std::size_t i = 0; i < n; ++i) detail::prefetch(block_in(slices[s], digests[i]));
  }
}

// The blocks a group kernel prefetches while it works: those of a later group's keys in
// `slices` (all of the kernel's slices, or none when nothing is to be prefetched: see
// lookup_many), key i's as it answers its own key i. Kernels copy it into
// a local first: its fields are read only on the prefetch path (i < n, some slice to
// prefetch), and GCC does not hoist a load out of a loop that may skip it, so through the
// reference they were read again for each key.
struct Lookahead {
  const SliceRef* slices = nullptr;
  std::size_t count = 0;
  const Digest128* digests = nullptr;
  std::size_t n = 0;
};
inline void prefetch_key(const Lookahead& ahead, std::size_t i) noexcept {
  if (i >= ahead.n) return;
  for (std::size_t s = 0; s < ahead.count; ++s) detail::prefetch(block_in(ahead.slices[s], ahead.digests[i]));
}

// found[i] = some slice holds key i, for n keys (nothing past n is written); returns how
// many were found. Prefetches `ahead` on the way.
using LookupGroupFn = std::size_t (*)(const SliceRef* slices, std::size_t count,
                                      const Digest128* digests, std::size_t n,
                                      bool* found, const Lookahead& ahead) noexcept;

// The portable kernel. One slice: the single-key test per key, the slice's fields held
// in registers. More: a key's probes are turned once into the bits they need in each of
// the block's 8 words (a mask per distinct k among the slices: probe i's position does
// not depend on k, so a larger k's mask adds bits to a smaller one's), and each slice's
// test is then the block ANDNOT the mask, 4 pairs of words OR-ed into one branch: no
// multiplications, the same work for any k, in 128-bit vectors on any target (SSE2,
// NEON) through the compilers' vector extension (the headers need GCC or Clang anyway:
// unsigned __int128). Measured, SEGBLOOM_SIMD=portable, 10^6 u64 keys at 1 %, batched
// negatives, ns a key, against contains_portable per slice: 6 slices (k = 10..12) 51.6-53.4
// -> 28.0-28.3, one slice 8.1-8.4 -> 7.0-7.15 (bench/results/design-notes.md, "SIMD").
// The bits a key's first k probes need in its block, as 4 pairs of words.
struct BlockMask {
  WordPair pair[kWordsPerBlock / 2];
};

template <class Loads>
bool covers(const void* block, const BlockMask& mask) noexcept {
  WordPair missing{};
  for (unsigned q = 0; q < kWordsPerBlock / 2; ++q) {
    missing |= mask.pair[q] & ~Loads::pair(block, q);
  }
  return (missing[0] | missing[1]) == 0;
}

template <class Loads>
std::size_t lookup_group_portable(const SliceRef* slices, std::size_t count, const Digest128* digests,
                                  std::size_t n, bool* found, const Lookahead& ahead) noexcept {
  std::size_t hits = 0;
  const Lookahead lookahead = ahead;  // a local copy: see Lookahead
  if (count == 1) {  // ahead names this slice or none (Lookahead)
    const SliceRef slice = slices[0];
    const auto test = [&slice](const Digest128& d) {
      return contains_portable<Loads>(block_in(slice, d), in_block_hash(d), slice.probes);
    };
    // The prefetch written for one slice, in a loop of its own, as in lookup_one_avx2.
    const std::size_t later_n = lookahead.count != 0 ? std::min(n, lookahead.n) : 0;
    std::size_t i = 0;
    for (; i < later_n; ++i) {
      detail::prefetch(block_in(slice, lookahead.digests[i]));
      hits += found[i] = test(digests[i]);
    }
    for (; i < n; ++i) hits += found[i] = test(digests[i]);
    return hits;
  }
  // The slices' distinct k, ascending, and which of them each slice uses.
  unsigned ks[kMaxBlockedSlices];
  std::size_t distinct = 0;
  for (std::size_t s = 0; s < count; ++s) {
    if (std::find(ks, ks + distinct, slices[s].probes) == ks + distinct) ks[distinct++] = slices[s].probes;
  }
  std::sort(ks, ks + distinct);
  unsigned which[kMaxBlockedSlices];
  for (std::size_t s = 0; s < count; ++s) {
    which[s] = static_cast<unsigned>(std::find(ks, ks + distinct, slices[s].probes) - ks);
  }
  BlockMask masks[kMaxBlockedSlices];
  for (std::size_t i = 0; i < n; ++i) {
    prefetch_key(lookahead, i);
    const std::uint32_t h = in_block_hash(digests[i]);
    std::uint64_t words[kWordsPerBlock] = {};  // the bits of the first `probe` probes
    for (unsigned probe = 0, j = 0;; ++probe) {
      for (; j < distinct && ks[j] == probe; ++j) {
        for (unsigned q = 0; q < kWordsPerBlock / 2; ++q) masks[j].pair[q] = WordPair{words[2 * q], words[2 * q + 1]};
      }
      if (j == distinct) break;
      const unsigned p = position(h, probe);
      words[p >> 6] |= std::uint64_t{1} << (p & 63);
    }
    bool hit = false;
    for (std::size_t s = 0; s < count && !hit; ++s) hit = covers<Loads>(block_in(slices[s], digests[i]), masks[which[s]]);
    found[i] = hit;
    hits += hit;
  }
  return hits;
}

#ifdef SEGBLOOM_X86_SIMD
// Salts 0..7, each twice: two keys share one register, key a in the even lanes, key b
// in the odd ones (for k <= 8, where one key would leave half the lanes idle).
alignas(64) inline constexpr std::uint32_t kSaltPairs[16] = {
    kSalt[0], kSalt[0], kSalt[1], kSalt[1], kSalt[2], kSalt[2], kSalt[3], kSalt[3],
    kSalt[4], kSalt[4], kSalt[5], kSalt[5], kSalt[6], kSalt[6], kSalt[7], kSalt[7]};

// Tests keys a and b (k <= 8 probes) against their blocks (in registers) with one
// two-table permute (vpermt2d: index bit 4 picks key b's block for the odd lanes). Each
// key's answer is one vptestnmd over its lanes (the probes whose bit is clear) and one
// kortestw (none are): a 0/1 value straight from the flag. Testing the set bits once and
// comparing each key's lanes in scalar code took ~12 more instructions a pair, and GCC
// stored each answer as a byte store plus an AND of that byte in memory: batched lookups,
// 10^6 keys, one slice, 2.21-2.25 -> 1.66-1.71 ns (u64), 2.67-2.75 -> 2.13-2.36 (str16).
struct PairFound {
  unsigned a, b;  // 1: key a (b) found
};
__attribute__((target("avx512f"))) inline PairFound test_pair_avx512(
    __m512i block_a, __m512i block_b, std::uint32_t h_a, std::uint32_t h_b, __mmask16 lanes_a,
    __mmask16 lanes_b) noexcept {
  const __m512i h = _mm512_set1_epi64(static_cast<long long>(h_a | std::uint64_t{h_b} << 32));
  Probes512 p = probes_from_products(_mm512_mullo_epi32(h, _mm512_load_si512(kSaltPairs)));
  p.word = _mm512_or_si512(p.word, _mm512_set1_epi64(std::int64_t{16} << 32));
  const __m512i word = _mm512_maskz_permutex2var_epi32(kAll, block_a, p.word, block_b);
  const __mmask16 clear_a = _mm512_mask_testn_epi32_mask(lanes_a, word, p.bit);
  const __mmask16 clear_b = _mm512_mask_testn_epi32_mask(lanes_b, word, p.bit);
  return {_kortestz_mask16_u8(clear_a, clear_a), _kortestz_mask16_u8(clear_b, clear_b)};
}

// Where the one-slice kernels apply (one slice, k <= 8: lookup_pairs_avx512 below,
// lookup_one_avx2): lookup_group_for and the group kernels both ask.
inline bool takes_one_slice_kernel(const SliceRef* slices, std::size_t count) noexcept {
  return count == 1 && slices[0].probes <= 8;
}

// The common case of one slice with k <= 8 (count must be 1; kPrefetch: it prefetches
// ahead's keys in slices[0], which ahead must name; without it, ahead is ignored): two
// keys a round. A kernel of its own (lookup_group_for picks it), its prefetch written for
// one slice, so that its loop keeps everything in registers (as a branch of
// lookup_group_avx512 it did not: at 10^8 keys, 5.4 -> 4.7 ns a batched lookup).
template <bool kPrefetch, class Loads>
__attribute__((target("avx512f"))) inline std::size_t lookup_pairs_avx512(
    const SliceRef* slices, std::size_t count, const Digest128* digests, std::size_t n,
    bool* found, const Lookahead& ahead) noexcept {
  (void)count;
  const SliceRef slice = slices[0];
  const Digest128* const later = ahead.digests;
  const std::size_t later_n = kPrefetch ? ahead.n : 0;
  const auto lanes_a = static_cast<__mmask16>(0x5555u & ((1u << (2 * slice.probes)) - 1));
  const auto lanes_b = static_cast<__mmask16>(lanes_a << 1);
  std::size_t hits = 0, i = 0;
  for (; i + 1 < n; i += 2) {
    if constexpr (kPrefetch) {
      if (i + 1 < later_n) {
        detail::prefetch(block_in(slice, later[i]));
        detail::prefetch(block_in(slice, later[i + 1]));
      } else if (i < later_n) {
        detail::prefetch(block_in(slice, later[i]));
      }
    }
    const PairFound r = test_pair_avx512(Loads::whole(block_in(slice, digests[i])),
                                         Loads::whole(block_in(slice, digests[i + 1])),
                                         in_block_hash(digests[i]), in_block_hash(digests[i + 1]),
                                         lanes_a, lanes_b);
    found[i] = r.a != 0;
    found[i + 1] = r.b != 0;
    hits += r.a + r.b;
  }
  if (i < n) {
    if (kPrefetch && i < later_n) detail::prefetch(block_in(slice, later[i]));
    const bool hit = contains_avx512_words(Loads::whole(block_in(slice, digests[i])), in_block_hash(digests[i]),
                                           slice.probes);
    found[i] = hit;
    hits += hit;
  }
  return hits;
}

template <class Loads>
__attribute__((target("avx512f"))) inline std::size_t lookup_group_avx512(
    const SliceRef* slices, std::size_t count, const Digest128* digests, std::size_t n,
    bool* found, const Lookahead& ahead) noexcept {
  if (takes_one_slice_kernel(slices, count)) {
    return ahead.count != 0 ? lookup_pairs_avx512<true, Loads>(slices, count, digests, n, found, ahead)
                            : lookup_pairs_avx512<false, Loads>(slices, count, digests, n, found, ahead);
  }
  std::size_t hits = 0;
  const Lookahead lookahead = ahead;  // a local copy: see Lookahead
  __mmask16 lanes[kMaxBlockedSlices];
  bool wide = false;  // some slice has more than 16 probes (p below about 10^-5)
  for (std::size_t s = 0; s < count; ++s) {
    lanes[s] = lanes_avx512(std::min(slices[s].probes, 16u), 0);
    wide = wide || slices[s].probes > 16;
  }
  if (!wide) {
    for (std::size_t i = 0; i < n; ++i) {
      prefetch_key(lookahead, i);
      const Probes512 p = probes_avx512(in_block_hash(digests[i]), 0);
      bool hit = false;
      for (std::size_t s = 0; s < count && !hit; ++s) {
        hit = test_avx512_words(Loads::whole(block_in(slices[s], digests[i])), p, lanes[s]);
      }
      found[i] = hit;
      hits += hit;
    }
    return hits;
  }
  for (std::size_t i = 0; i < n; ++i) {
    prefetch_key(lookahead, i);
    const std::uint32_t h = in_block_hash(digests[i]);
    const Probes512 p = probes_avx512(h, 0);
    bool hit = false;
    for (std::size_t s = 0; s < count && !hit; ++s) {
      const __m512i words = Loads::whole(block_in(slices[s], digests[i]));
      hit = test_avx512_words(words, p, lanes[s]) &&
            (slices[s].probes <= 16 || contains_avx512_rounds_words(words, h, slices[s].probes, 16));
    }
    found[i] = hit;
    hits += hit;
  }
  return hits;
}

// Key d in one slice, its first 8 probes (lanes: lanes_avx2(k, 0)).
template <class Loads>
[[gnu::always_inline]] __attribute__((target("avx2"))) inline bool test_one_avx2(const SliceRef& slice,
                                                                                const Digest128& d,
                                                                                __m256 lanes) noexcept {
  __m256i low, high;
  Loads::halves(block_in(slice, d), low, high);
  return test_avx2_words(low, high, probes_avx2(in_block_hash(d), 0), lanes);
}

// The common case of one slice with k <= 8 on a CPU without AVX-512 (count must be 1;
// kPrefetch: it prefetches ahead's keys in slices[0], which ahead must name; without it,
// ahead is ignored), a kernel of its own like lookup_pairs_avx512: the slice's fields, its
// lane mask and the later keys held in registers, each answer taken from the flags, no
// loop over slices. Until 28 Nov 2026 a branch of lookup_group_avx2 that prefetched
// through prefetch_key, whose loop over the lookahead's slices read its fields from the
// stack: 18 instructions a key for one prefetch, 40 in all; now 8 and 30 (callgrind,
// 10^6 keys at 1 %, batched; 25.7 since the vtestps test and the two loops below).
template <bool kPrefetch, class Loads>
__attribute__((target("avx2"))) inline std::size_t lookup_one_avx2(const SliceRef* slices, std::size_t count,
                                                                   const Digest128* digests, std::size_t n,
                                                                   bool* found, const Lookahead& ahead) noexcept {
  (void)count;
  const SliceRef slice = slices[0];
  const Digest128* const later = ahead.digests;
  const std::size_t later_n = kPrefetch ? ahead.n : 0;
  const __m256 lanes = lanes_avx2(slice.probes, 0);
  std::size_t hits = 0;
  // Two loops, so that no key compares its index with later_n (2 instructions a key;
  // with the vtestps above, 29.6 -> 25.7 a key in this kernel, callgrind, 10^6 keys at 1 %; 0.97-0.98
  // of the time in one program alternating with the former kernel, in L1 and at 10^6 keys).
  // Adding up `found` after the loop instead of `hits` in it saved 2 more and took 5 % more
  // time in L1 (its vector loads wait for the byte stores just made).
  std::size_t i = 0;
  for (; i < std::min(n, later_n); ++i) {
    detail::prefetch(block_in(slice, later[i]));
    hits += found[i] = test_one_avx2<Loads>(slice, digests[i], lanes);
  }
  for (; i < n; ++i) hits += found[i] = test_one_avx2<Loads>(slice, digests[i], lanes);
  return hits;
}

template <class Loads>
__attribute__((target("avx2"))) inline std::size_t lookup_group_avx2(
    const SliceRef* slices, std::size_t count, const Digest128* digests, std::size_t n,
    bool* found, const Lookahead& ahead) noexcept {
  std::size_t hits = 0;
  // A local copy (see Lookahead), made before the one-slice branch: after it, GCC spilled
  // the key index of the loop over several slices (callgrind: 1.2 instructions a key more).
  const Lookahead lookahead = ahead;
  if (takes_one_slice_kernel(slices, count)) {
    return ahead.count != 0 ? lookup_one_avx2<true, Loads>(slices, count, digests, n, found, ahead)
                            : lookup_one_avx2<false, Loads>(slices, count, digests, n, found, ahead);
  }
  // The lanes of probes 0-7 in each slice, taken once a call: a slice that misses then costs
  // 19 instructions where it took 23 (k was compared in each slice before the test; the
  // vtestps test since: 223.8 -> 214.2 a key over 6 slices, callgrind). A
  // user's filter in cache (capacity 1000, 6000 items, 3 slices), 512 absent keys a call,
  // the old and new headers in one program alternating: 0.84-0.88 at p = 1 % and 0.1 %;
  // present keys 1.02 (Zen 3).
  __m256 lanes[kMaxBlockedSlices];
  for (std::size_t s = 0; s < count; ++s) lanes[s] = lanes_avx2(slices[s].probes, 0);
  for (std::size_t i = 0; i < n; ++i) {
    prefetch_key(lookahead, i);
    const std::uint32_t h = in_block_hash(digests[i]);
    const Probes256 p = probes_avx2(h, 0);
    bool hit = false;
    for (std::size_t s = 0; s < count && !hit; ++s) {
      __m256i low, high;
      Loads::halves(block_in(slices[s], digests[i]), low, high);
      const unsigned k = slices[s].probes;
      hit = test_avx2_words(low, high, p, lanes[s]) && (k <= 8 || contains_avx2_words(low, high, h, k, 8));
    }
    found[i] = hit;
    hits += hit;
  }
  return hits;
}
#endif

template <class Loads>
LookupGroupFn best_lookup_group() noexcept {
#ifdef SEGBLOOM_X86_SIMD
  const int level = best_contains_level();  // not kContainsLevel: may be asked before it is set
  if (level == 2) return &lookup_group_avx512<Loads>;
  if (level == 1) return &lookup_group_avx2<Loads>;
#endif
  return &lookup_group_portable<Loads>;
}

// The group kernel batched lookups use (chosen once per process), reading blocks with
// Loads (no default: a concurrent filter's caller must not get PlainLoads by omission).
template <class Loads>
LookupGroupFn lookup_group() noexcept {
  static const LookupGroupFn chosen = best_lookup_group<Loads>();
  return chosen;
}

// The kernel for these slices, `ahead` of which it will prefetch in (Lookahead::count):
// lookup_group(), or its one-slice kernel (lookup_pairs_avx512, lookup_one_avx2).
template <class Loads>
LookupGroupFn lookup_group_for([[maybe_unused]] const SliceRef* slices, [[maybe_unused]] std::size_t count,
                               [[maybe_unused]] std::size_t ahead) noexcept {
#ifdef SEGBLOOM_X86_SIMD
  if (takes_one_slice_kernel(slices, count)) {
    if (lookup_group<Loads>() == &lookup_group_avx512<Loads>) {
      return ahead != 0 ? &lookup_pairs_avx512<true, Loads> : &lookup_pairs_avx512<false, Loads>;
    }
    if (lookup_group<Loads>() == &lookup_group_avx2<Loads>) {
      return ahead != 0 ? &lookup_one_avx2<true, Loads> : &lookup_one_avx2<false, Loads>;
    }
  }
#endif
  return lookup_group<Loads>();
}

}  // namespace segbloom::blocked
