// segbloom: the blocked layout's inserts. `set` sets a key's k bits in its block and
// counts the new ones (portable, or AVX-512 / AVX2 building the whole mask in one / two
// registers); `set_group` does it for a group of keys into one slice.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "segbloom/blocked/layout.hpp"
#include "segbloom/detail/bits.hpp"
#include "segbloom/detail/fixed_probes.hpp"
#include "segbloom/detail/simd_level.hpp"

namespace segbloom::blocked {

// set(block, h, k) sets the k bits and returns how many of them were clear (the slice's
// set-cell count grows by that much; a bit two probes share counts once). Portable, AVX2
// and AVX-512 forms leave the same block and return the same count.

using SetFn = std::uint64_t (*)(std::uint64_t*, std::uint32_t, unsigned) noexcept;

// Kernel instances by k (detail/fixed_probes.hpp).
using detail::by_probes;
using detail::for_each_probe;
using detail::table_by_probes;

// A set() form given its table: the instance for k, or the run-time one beyond 16.
template <const auto& kTable>
std::uint64_t set_by_probes(std::uint64_t* block, std::uint32_t h, unsigned k) noexcept {
  return by_probes(kTable, k)(block, h, k);
}

// One load, BTS (SBB counts the old bit) and store a probe. kFixedProbes as in
// for_each_probe: with k a constant, 9-10 instructions a probe where the loop over k took
// 13 (set() and set_group() pick the instance for the slice's k up to 16). Measured on a
// Zen 3 (AVX2, no AVX-512), per-key `insert` of u64 keys at p = 1 % (k = 10 in a growing
// filter's first slice), the old and new headers built into one program and alternating,
// medians of the rounds' ratios: 0.93-0.99 at 10^4 keys, 0.93-0.96 at 10^5, 0.90-0.98 at
// 10^6 (33 fewer instructions an insert). A mask built in AVX2 registers from rows and broadcast bits
// (the mask before kOneBit, k a constant too) was no faster than this there.
template <unsigned kFixedProbes>
inline std::uint64_t set_portable_k(std::uint64_t* block, std::uint32_t h, unsigned k) noexcept {
  std::uint64_t fresh = 0;
  for_each_probe<kFixedProbes>(k, [block, h, &fresh](unsigned i) {
    const unsigned p = position(h, i);
    detail::set_bit(block[p >> 6], p, fresh);
  });
  return fresh;
}

// k at run time (any k <= 48).
inline std::uint64_t set_portable(std::uint64_t* block, std::uint32_t h, unsigned k) noexcept {
  return set_portable_k<0>(block, h, k);
}

inline constexpr auto kSetPortableByProbes = table_by_probes<SetFn>(
    []<unsigned K>() { return &set_portable_k<K>; });

#ifdef SEGBLOOM_X86_SIMD
// kOneBit[p]: a block with only bit p set, for every p < 512 (32 KB, read-only). A probe's
// part of a key's mask is the entry at p * 64 = ((h * salt) >> 17) & 0x7FC0 bytes in: a
// multiply, a shift, an AND and one 64-byte OR with a memory operand (two 32-byte ones in
// AVX2). Measured where the L1D is 48 KB (Zen 5), which holds the table beside the blocks a
// batch streams through; where it is 32 KB (Zen 3, Skylake) the table alone fills it, and
// some of a key's k entries come from L2 (not measured there).
struct alignas(64) OneBit {
  std::uint64_t word[kWordsPerBlock];
};
alignas(64) inline constexpr auto kOneBit = [] {
  std::array<OneBit, 512> blocks{};
  for (unsigned p = 0; p < 512; ++p) blocks[p].word[p / 64] = std::uint64_t{1} << (p % 64);
  return blocks;
}();
// Probe i's entry for the in-block hash h.
inline const char* one_bit(std::uint32_t h, unsigned i) noexcept {
  return reinterpret_cast<const char*>(kOneBit.data()) + (((h * kSalt[i]) >> 17) & 0x7FC0);
}

// The sum of 4 lanes of 64 bits.
__attribute__((target("avx2"))) inline std::uint64_t sum_lanes(__m256i lanes) noexcept {
  const __m128i pair = _mm_add_epi64(_mm256_castsi256_si128(lanes), _mm256_extracti128_si256(lanes, 1));
  return static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_add_epi64(pair, _mm_unpackhi_epi64(pair, pair))));
}

// The k bits are gathered into one 512-bit mask in a register first, mask |= kOneBit[p]
// per probe at p (4 instructions where k is a constant: for_each_probe); then one OR
// writes the block and vpopcntq counts the new bits. The scalar form (set_portable)
// takes 9-13 instructions a probe and makes a later probe of the same word wait for an
// earlier one's store.
// kFixedProbes != 0: k is that constant (the loop unrolls; set() picks the instance for
// the slice's k up to 16); 0: k from the argument.
// Measured, 10^6 u64 keys in a 1.26 MB slice, k = 7, the kernel alone: scalar 12 ns
// (7.8 ns since it sets bits with BTS); 1 << (p - 64 j) in every lane j by vpsllvq, 4
// vector instructions a probe, 9.9 ns with k at run time, 8.2 ns with k fixed; rows,
// mask |= row[p / 64] & broadcast(1 << p % 64) in one vpternlogq after the row's load
// (7 instructions a probe), 6.5 ns. kOneBit (thirty-seventh round), benchmark binaries
// alternating with the rows', 3 processes each, p = 1 % and 0.1 %: batched inserts
// 0.83-0.91 of the time at 10^4 to 10^7 keys (u64 at 10^6 5.58 -> 4.88 ns), per-key
// inserts 0.80-0.96 at 10^4 and 10^6 keys (0.65-0.99 at 10^7, noisy rows). (Against the
// rows, the 16 probes' offsets from one vpmulld, read back by vpextrd, measured the same on
// the Zen 5; stored and reloaded, 0.97-1.06 of the rows' time. Per-key inserts take such
// offsets since the thirty-ninth round: mask_avx512_vector_offsets.)
template <unsigned kFixedProbes>
__attribute__((target("avx512f"), always_inline)) inline __m512i mask_avx512(std::uint32_t h, unsigned k) noexcept {
  __m512i mask = _mm512_setzero_si512();
  for_each_probe<kFixedProbes>(k, [h, &mask](unsigned i) __attribute__((target("avx512f"))) {
    mask = _mm512_or_si512(mask, _mm512_load_si512(one_bit(h, i)));
  });
  return mask;
}

// The same mask for k = kProbes <= 16, the probes' table offsets computed for all of them at
// once: one vpmulld of h by the first 8 (or 16) salts, a shift and an AND, each lane then
// read into a scalar register (vmovd, vpextrd) for its row's load, where mask_avx512 makes
// an imul, a shift and an AND a probe. Per-key inserts take it (set_avx512_k), batched ones
// not. Measured on the Intel Xeon (Emerald Rapids, thirty-ninth round), benchmark binaries
// alternating, three series of 3-6 processes each: per-key inserts 0.85-0.96 of the time at
// 10^6 keys (u64, p = 1 %: 16.3 -> 14.8 ns), 0.81-0.96 at 10^7, 6 slices 0.94, but
// 1.02-1.08x at 10^4 keys and k = 7 (0.98-1.04 at k = 10); batched inserts 1.08-1.19x at
// 10^4 keys, so set_group_avx512_k keeps mask_avx512. Other k, and AMD CPUs: not measured.
// (The lanes stored and read back as 4-byte loads took up to 1.99x: a 64-byte store is not
// forwarded to them.)
template <unsigned kProbes>
__attribute__((target("avx512f"), always_inline)) inline __m512i mask_avx512_vector_offsets(std::uint32_t h) noexcept {
  static_assert(kProbes >= 1 && kProbes <= 16);
  const char* const table = reinterpret_cast<const char*>(kOneBit.data());
  const auto row = [table](int offset) __attribute__((target("avx512f"))) {
    return _mm512_load_si512(table + static_cast<unsigned>(offset));
  };
  __m512i mask = _mm512_setzero_si512();
  if constexpr (kProbes <= 8) {
    __m256i offsets = _mm256_and_si256(
        _mm256_srli_epi32(_mm256_mullo_epi32(_mm256_set1_epi32(static_cast<int>(h)),
                                             _mm256_load_si256(reinterpret_cast<const __m256i*>(kSalt))),
                          17),
        _mm256_set1_epi32(0x7FC0));
    asm("" : "+v"(offsets));  // else GCC turns the lanes back into scalar multiplies
    [&]<unsigned... I>(std::integer_sequence<unsigned, I...>) __attribute__((target("avx512f"))) {
      // (Not _mm256_extract_epi32: without optimisation GCC 12 makes it a statement
      // expression, which a pack expansion cannot hold.)
      ((mask = _mm512_or_si512(mask, row(_mm_extract_epi32(_mm256_extracti128_si256(offsets, I / 4), I % 4)))), ...);
    }(std::make_integer_sequence<unsigned, kProbes>{});
  } else {
    // (Zero-masked shift and extracts: GCC 12's plain ones draw -Wuninitialized, as in sum_lanes_x8.)
    __m512i offsets = _mm512_and_si512(
        _mm512_maskz_srli_epi32(0xFFFF, _mm512_mullo_epi32(_mm512_set1_epi32(static_cast<int>(h)), _mm512_load_si512(kSalt)),
                                17),
        _mm512_set1_epi32(0x7FC0));
    asm("" : "+v"(offsets));
    [&]<unsigned... I>(std::integer_sequence<unsigned, I...>) __attribute__((target("avx512f"))) {
      ((mask = _mm512_or_si512(
            mask, row(_mm_extract_epi32(_mm512_maskz_extracti32x4_epi32(0xF, offsets, I / 4), I % 4)))),
       ...);
    }(std::make_integer_sequence<unsigned, kProbes>{});
  }
  return mask;
}

// ORs `mask` into the block; returns the bits of `mask` that were clear.
__attribute__((target("avx512f"), always_inline)) inline __m512i newly_set_avx512(std::uint64_t* block,
                                                                                __m512i mask) noexcept {
  const __m512i old = _mm512_loadu_si512(block);
  _mm512_storeu_si512(block, _mm512_or_si512(old, mask));
  return _mm512_maskz_andnot_epi64(0xFF, old, mask);
}

// The sum of 8 lanes of 64 bits. (Masked extracts: GCC 12's _mm512_reduce_add_epi64 draws
// -Wuninitialized in a flattened caller, from its _mm256_undefined_si256.)
__attribute__((target("avx512f"), always_inline)) inline std::uint64_t sum_lanes_x8(__m512i lanes) noexcept {
  return sum_lanes(_mm256_add_epi64(_mm512_maskz_extracti64x4_epi64(0xF, lanes, 0),
                                    _mm512_maskz_extracti64x4_epi64(0xF, lanes, 1)));
}

template <unsigned kFixedProbes>
__attribute__((target("avx512f,avx512vpopcntdq"))) inline std::uint64_t set_avx512_k(
    std::uint64_t* block, std::uint32_t h, unsigned k) noexcept {
  __m512i mask;
  if constexpr (kFixedProbes != 0) {
    mask = mask_avx512_vector_offsets<kFixedProbes>(h);
  } else {
    mask = mask_avx512<0>(h, k);
  }
  // New bits per lane (<= 64 each), summed over the 8 lanes.
  return sum_lanes_x8(_mm512_popcnt_epi64(newly_set_avx512(block, mask)));
}

inline constexpr auto kSetAvx512ByProbes = table_by_probes<SetFn>(
    []<unsigned K>() { return &set_avx512_k<K>; });

inline bool has_set_avx512() noexcept {
  __builtin_cpu_init();  // may run during static initialisation (kSetAvx512 below)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq") &&
         detail::simd_cap() >= detail::kSimdAvx512;
}

// Asked once, at start-up, like kContainsLevel (false before: the portable loop, same bits).
inline const bool kSetAvx512 = has_set_avx512();

// The same mask in two AVX2 registers, the block's low and high 32 bytes: per probe two
// ORs from kOneBit. Why a mask rather than the portable loop: see mask_avx512.
struct BlockMaskAvx2 {
  __m256i low, high;
};
template <unsigned kFixedProbes>
__attribute__((target("avx2"))) inline BlockMaskAvx2 mask_avx2(std::uint32_t h, unsigned k) noexcept {
  BlockMaskAvx2 mask{_mm256_setzero_si256(), _mm256_setzero_si256()};
  for_each_probe<kFixedProbes>(k, [h, &mask](unsigned i) __attribute__((target("avx2"))) {
    const auto* const halves = reinterpret_cast<const __m256i*>(one_bit(h, i));
    mask.low = _mm256_or_si256(mask.low, _mm256_load_si256(halves));
    mask.high = _mm256_or_si256(mask.high, _mm256_load_si256(halves + 1));
  });
  return mask;
}

// ORs the mask into the block; returns the bits that went from 0 to 1.
__attribute__((target("avx2"))) inline BlockMaskAvx2 newly_set_avx2(std::uint64_t* block,
                                                                    const BlockMaskAvx2& mask) noexcept {
  auto* const halves = reinterpret_cast<__m256i*>(block);
  const __m256i old_low = _mm256_loadu_si256(halves), old_high = _mm256_loadu_si256(halves + 1);
  _mm256_storeu_si256(halves, _mm256_or_si256(old_low, mask.low));
  _mm256_storeu_si256(halves + 1, _mm256_or_si256(old_high, mask.high));
  return {_mm256_andnot_si256(old_low, mask.low), _mm256_andnot_si256(old_high, mask.high)};
}

// AVX2 has no vpopcntq: the bits are counted a nibble at a time by table (vpshufb), the
// halves' byte counts added (at most 16 a byte) and summed by vpsadbw into 4 lanes of 64
// bits (at most 128 each), which set_group_avx2_k adds up once per group and set_avx2_k
// once per key.
__attribute__((target("avx2"))) inline __m256i count_avx2(const BlockMaskAvx2& bits) noexcept {
  const __m256i nibble_bits = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,  //
                                               0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const auto count_bytes = [&](__m256i v) __attribute__((target("avx2"))) {
    return _mm256_add_epi8(_mm256_shuffle_epi8(nibble_bits, _mm256_and_si256(v, nibble)),
                           _mm256_shuffle_epi8(nibble_bits, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble)));
  };
  return _mm256_sad_epu8(_mm256_add_epi8(count_bytes(bits.low), count_bytes(bits.high)), _mm256_setzero_si256());
}

// Group inserts take the AVX2 kernel (set_group_avx2_k), and per-key ones on AMD CPUs
// set_avx2_k (kSetAvx2PerKey, below), where the CPU has AVX2 and not the AVX-512 ones (no
// AVX-512, or AVX-512 without VPOPCNTDQ); asked once, at start-up.
inline bool has_set_avx2() noexcept {
  __builtin_cpu_init();
  return !kSetAvx512 && __builtin_cpu_supports("avx2") && detail::simd_cap() >= detail::kSimdAvx2;
}
inline const bool kSetAvx2 = has_set_avx2();

// Per-key inserts on AMD CPUs since kOneBit (set_avx2_k; elsewhere the portable loop,
// which a call of the AVX2 kernel with the rows' mask did not beat on a Zen 3). Benchmark
// binaries alternating, 3 processes each, capped at AVX2 (SEGBLOOM_SIMD=avx2), per-key
// inserts at 10^4 and 10^6 keys against the portable loop: on the AMD EPYC Zen 5, 0.78-0.87
// of the time (0.82-0.92 at 10^7; u64 at 10^6 10.40 -> 8.26 ns); on the Intel Xeon
// (Emerald Rapids, 30 Nov 2026), 1.10-1.32x (0.94-0.96 at 10^6 keys and p = 0.1 %), so
// Intel CPUs keep the loop (kSetAvx2PerKey). Group inserts take the AVX2 kernel on both
// (Intel: 0.78-0.89 of the rows' kernel). Not measured on a CPU without AVX-512.
template <unsigned kFixedProbes>
__attribute__((target("avx2"))) inline std::uint64_t set_avx2_k(std::uint64_t* block, std::uint32_t h,
                                                               unsigned k) noexcept {
  return sum_lanes(count_avx2(newly_set_avx2(block, mask_avx2<kFixedProbes>(h, k))));
}
inline constexpr auto kSetAvx2ByProbes = table_by_probes<SetFn>(
    []<unsigned K>() { return &set_avx2_k<K>; });

// Whether per-key inserts take set_avx2_k: with kSetAvx2, on AMD CPUs (above).
inline bool has_set_avx2_per_key() noexcept {
  __builtin_cpu_init();
  return kSetAvx2 && __builtin_cpu_is("amd");
}
inline const bool kSetAvx2PerKey = has_set_avx2_per_key();
#endif

// The implementation inserts use: with AVX-512 (VPOPCNTDQ) its instance for k, else with
// AVX2 on an AMD CPU (kSetAvx2PerKey) its instance for k, else the portable loop's; the
// CPU is asked once, at start-up.
// One indirect call per insert, through a table of instances (none when the compiler
// itself targets AVX-512F and VPOPCNTDQ).
inline std::uint64_t set(std::uint64_t* block, std::uint32_t h, unsigned k) noexcept {
#if defined(SEGBLOOM_X86_SIMD) && defined(__AVX512F__) && defined(__AVX512VPOPCNTDQ__)
  return set_avx512_k<0>(block, h, k);
#elif defined(SEGBLOOM_X86_SIMD)
  if (kSetAvx512) return set_by_probes<kSetAvx512ByProbes>(block, h, k);
  if (kSetAvx2PerKey) return set_by_probes<kSetAvx2ByProbes>(block, h, k);
  return set_by_probes<kSetPortableByProbes>(block, h, k);
#else
  return set_by_probes<kSetPortableByProbes>(block, h, k);
#endif
}

// --- Batched inserts: a group of keys into one slice ---------------------------------
//
// set_group(words, blocks, digests, n, k, write, changed): for each key i < n, in order,
// with write[i], sets its k bits in its block of `words` (`blocks` blocks) and
// changed[i] = some bit was clear; changed[i] = false for the others (nothing past n is
// read or written: callers count a group's whole flag arrays on that,
// detail::count_true_and_not). Returns how many bits went from 0 to 1 in all. The same
// bits and answers as set() key by key (a key sees the bits of the keys before it), in
// one call per group: SegmentedFilter::insert_many uses it while the slice has room for
// the whole group. The AVX-512 form inlines mask_avx512's and newly_set_avx512's
// instances for k (k <= 16; the run-time-k ones above), the AVX2 form mask_avx2's, the
// portable form set_portable_k's.

using SetGroupFn = std::uint64_t (*)(std::uint64_t* words, std::uint64_t blocks,
                                     const Digest128* digests, std::size_t n, unsigned k,
                                     const bool* write, bool* changed) noexcept;

// The loop every form shares, around the one-key kernel `set_one` (inlined into the
// form that instantiates it: always_inline, and the forms carry the kernel's target).
template <SetFn set_one>
[[gnu::always_inline]] inline std::uint64_t set_each(std::uint64_t* words, std::uint64_t blocks,
                                                     const Digest128* digests, std::size_t n,
                                                     unsigned k, const bool* write,
                                                     bool* changed) noexcept {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t* const block = words + block_of(digests[i], blocks) * kWordsPerBlock;
    const std::uint64_t fresh = write[i] ? set_one(block, in_block_hash(digests[i]), k) : 0;
    changed[i] = fresh != 0;
    total += fresh;
  }
  return total;
}

// kFixedProbes as in set_portable_k. `insert_many` at SEGBLOOM_SIMD=portable on a Zen 3,
// measured as set_portable_k: 0.83-0.90 at 10^4 and 10^6 keys.
template <unsigned kFixedProbes>
inline std::uint64_t set_group_portable_k(std::uint64_t* words, std::uint64_t blocks,
                                          const Digest128* digests, std::size_t n, unsigned k,
                                          const bool* write, bool* changed) noexcept {
  return set_each<&set_portable_k<kFixedProbes>>(words, blocks, digests, n, k, write, changed);
}

inline constexpr auto kSetGroupPortableByProbes = table_by_probes<SetGroupFn>(
    []<unsigned K>() { return &set_group_portable_k<K>; });

// k at run time (any k <= 48).
inline std::uint64_t set_group_portable(std::uint64_t* words, std::uint64_t blocks,
                                        const Digest128* digests, std::size_t n, unsigned k,
                                        const bool* write, bool* changed) noexcept {
  return set_group_portable_k<0>(words, blocks, digests, n, k, write, changed);
}

#ifdef SEGBLOOM_X86_SIMD
// The loop of the forms that keep their count of new bits in a vector until the group
// ends (AVX-512, AVX2, which flatten it with their `mark`): mark(block, h, total) sets a
// key's bits, adds how many were clear to `total`, and returns whether any was. (`total`
// by reference: a vector passed or returned by value to a function without the vector's
// target draws GCC's -Wpsabi.)
template <class Total, class Mark>
[[gnu::always_inline]] inline void set_each_counted(std::uint64_t* words, std::uint64_t blocks,
                                                    const Digest128* digests, std::size_t n, const bool* write,
                                                    bool* changed, Total& total, const Mark& mark) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    if (!write[i]) {
      changed[i] = false;
      continue;
    }
    changed[i] = mark(words + block_of(digests[i], blocks) * kWordsPerBlock, in_block_hash(digests[i]), total);
  }
}

// As the AVX2 form below, the count stays in a vector until the group ends: a key's result
// is whether some bit was clear (vptestmq), where set_avx512_k's sum of 8 lanes (4
// dependent steps after the popcount) had ended every key (thirty-sixth round; insert_many
// 0.93-0.98 of the time at 10^4 and 10^6 keys, u64 at 10^6 5.99 -> 5.77 ns).
template <unsigned kFixedProbes>
__attribute__((target("avx512f,avx512vpopcntdq"), flatten)) inline std::uint64_t set_group_avx512_k(
    std::uint64_t* words, std::uint64_t blocks, const Digest128* digests, std::size_t n, unsigned k,
    const bool* write, bool* changed) noexcept {
  const auto mark = [k](std::uint64_t* block, std::uint32_t h, __m512i& total)
                        __attribute__((target("avx512f,avx512vpopcntdq"))) {
    const __m512i fresh = newly_set_avx512(block, mask_avx512<kFixedProbes>(h, k));
    total = _mm512_add_epi64(total, _mm512_popcnt_epi64(fresh));
    return _mm512_test_epi64_mask(fresh, fresh) != 0;
  };
  __m512i total = _mm512_setzero_si512();
  set_each_counted(words, blocks, digests, n, write, changed, total, mark);
  return sum_lanes_x8(total);
}

inline constexpr auto kSetGroupAvx512ByProbes = table_by_probes<SetGroupFn>(
    []<unsigned K>() { return &set_group_avx512_k<K>; });

// The AVX2 form keeps the count in a vector until the group ends: a key's result needs
// only whether some bit was clear (vptest), and the sum of 4 lanes, which follows the
// block's load by ~25 cycles, no longer ends every key.
template <unsigned kFixedProbes>
__attribute__((target("avx2"), flatten)) inline std::uint64_t set_group_avx2_k(
    std::uint64_t* words, std::uint64_t blocks, const Digest128* digests, std::size_t n, unsigned k,
    const bool* write, bool* changed) noexcept {
  const auto mark = [k](std::uint64_t* block, std::uint32_t h, __m256i& total)
                        __attribute__((target("avx2"))) {
    const BlockMaskAvx2 fresh = newly_set_avx2(block, mask_avx2<kFixedProbes>(h, k));
    const __m256i any = _mm256_or_si256(fresh.low, fresh.high);
    total = _mm256_add_epi64(total, count_avx2(fresh));
    return !_mm256_testz_si256(any, any);
  };
  __m256i total = _mm256_setzero_si256();
  set_each_counted(words, blocks, digests, n, write, changed, total, mark);
  return sum_lanes(total);
}

inline constexpr auto kSetGroupAvx2ByProbes = table_by_probes<SetGroupFn>(
    []<unsigned K>() { return &set_group_avx2_k<K>; });
#endif

// The implementation batched inserts use: the AVX-512 instance for k where the CPU has
// it (asked once, kSetAvx512), else the AVX2 one (kSetAvx2), else the portable
// loop's instance for k.
inline std::uint64_t set_group(std::uint64_t* words, std::uint64_t blocks, const Digest128* digests,
                               std::size_t n, unsigned k, const bool* write, bool* changed) noexcept {
#if defined(SEGBLOOM_X86_SIMD)
  if (kSetAvx512) return by_probes(kSetGroupAvx512ByProbes, k)(words, blocks, digests, n, k, write, changed);
  if (kSetAvx2) return by_probes(kSetGroupAvx2ByProbes, k)(words, blocks, digests, n, k, write, changed);
#endif
  return by_probes(kSetGroupPortableByProbes, k)(words, blocks, digests, n, k, write, changed);
}

}  // namespace segbloom::blocked
