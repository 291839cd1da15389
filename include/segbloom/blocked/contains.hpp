// segbloom: the blocked layout's per-key test, "are all k bits of the key's block set?"
//
// Three implementations with identical answers: portable (scalar, one branch), AVX2 (8
// probes per round) and AVX-512 (16 per round), both picking words out of the block held
// in registers. `contains` (at the end) uses the widest one the CPU has, asked once at
// start-up, and is inlined into its caller: as intrinsics when the compiler itself targets
// AVX-512, else, for k <= 16, as inline assembly (AVX-512 or AVX2; the plain filter only,
// and not under a sanitizer). All stay callable for tests; the batch kernels
// (lookup_group.hpp) reuse the SIMD tests' pieces.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "segbloom/blocked/layout.hpp"
#include "segbloom/detail/bits.hpp"
#include "segbloom/detail/simd_level.hpp"

namespace segbloom::blocked {

// Tests all k bits and branches once: an early exit would cost a mispredicted branch
// on most negative lookups, more than the few extra tests within one cache line. Only
// the words the probes fall in are read.
template <class Loads>
bool contains_portable(const void* block, std::uint32_t h, unsigned k) noexcept {
  unsigned set = 0;
  for (unsigned i = 0; i < k; ++i) {
    const unsigned p = position(h, i);
    detail::count_bit(set, Loads::word(block, p >> 6), p);
  }
  return set == k;
}

// The SIMD paths never gather from memory. A block is 16 32-bit words, exactly one
// AVX-512 register (two AVX2 registers): it is loaded once and each probe's word is
// picked out of the register by a permute (vpermd: 3 cycles latency, one per cycle),
// where a 16-lane gather costs ~16 loads and ~20 cycles per round. Then each lane
// tests its bit: one vptestmd against (1 << (p % 32)).
//
// A key's positions depend only on its in-block hash h, never on the slice, so a
// batched lookup computes them once per key (a `Probes*` value: the first 16 or 8
// probes' word indices and bit masks) and tests them against the key's block in every
// slice: per slice one load-permute-test, whatever k (k <= 16 here: p >= 10^-4).
#ifdef SEGBLOOM_X86_SIMD

// --- AVX-512: 16 probes per round --------------------------------------------------

struct Probes512 {
  __m512i word;  // p >> 5: which of the block's 16 32-bit words (permute index)
  __m512i bit;   // 1 << (p & 31)
};

// Zero-masked forms with every lane on (kAll): the plain forms start from an undefined
// register, which GCC 12 warns about inside its own headers. Same instructions.
inline constexpr __mmask16 kAll = 0xFFFF;

// From the products x = h * salt_i: the word index p >> 5 = x >> 28, and the bit
// 1 << (p & 31) = rotate-left(1, p) (vprolvd takes its count mod 32: one instruction
// instead of an AND and a shift).
__attribute__((target("avx512f"))) inline Probes512 probes_from_products(__m512i x) noexcept {
  return {_mm512_maskz_srli_epi32(kAll, x, 28),
          _mm512_maskz_rolv_epi32(kAll, _mm512_set1_epi32(1), _mm512_maskz_srli_epi32(kAll, x, 23))};
}

// x = h * salt_i for the 16 probes of round `round` (16 probes a round).
__attribute__((target("avx512f"))) inline __m512i products_avx512(std::uint32_t h,
                                                                  unsigned round) noexcept {
  return _mm512_mullo_epi32(_mm512_set1_epi32(static_cast<int>(h)), _mm512_load_si512(kSalt + round));
}

__attribute__((target("avx512f"))) inline Probes512 probes_avx512(std::uint32_t h,
                                                                  unsigned round) noexcept {
  return probes_from_products(products_avx512(h, round));
}

// [n] = the mask of the n lowest lanes, n = 0..16.
inline constexpr auto kLowLanes = [] {
  std::array<std::uint16_t, 17> lanes{};
  for (unsigned n = 0; n <= 16; ++n) lanes[n] = static_cast<std::uint16_t>((1u << n) - 1);
  return lanes;
}();
// The lanes of round `round` (16 probes a round) that hold one of the k probes.
__attribute__((target("avx512f"))) inline __mmask16 lanes_avx512(unsigned k, unsigned round) noexcept {
  return kLowLanes[std::min(k - round, 16u)];
}

// True when the k (<= 16) probes in `p` are all set in the block (`words`, in a register):
// no lane of `lanes` finds its bit clear (vptestnmd, then kortest: one flag, no mask moved
// to a register).
__attribute__((target("avx512f"))) inline bool test_avx512_words(__m512i words, const Probes512& p,
                                                                 __mmask16 lanes) noexcept {
  const __m512i word = _mm512_maskz_permutexvar_epi32(kAll, p.word, words);
  return _mm512_mask_testn_epi32_mask(lanes, word, p.bit) == 0;
}

// [n] = 1 in the n lowest 32-bit lanes, 0 in the others, n = 0..16.
struct alignas(64) LaneOnes {
  std::uint32_t lane[16];
};
inline constexpr auto kLowLaneOnes = [] {
  std::array<LaneOnes, 17> ones{};
  for (unsigned n = 0; n <= 16; ++n) {
    for (unsigned i = 0; i < n; ++i) ones[n].lane[i] = 1;
  }
  return ones;
}();

// k > 16: rounds of 16 probes on the block in a register (`words`), from probe `first` (a
// multiple of 16: a batch kernel that has tested the first round already starts at 16).
// contains_avx512_rounds loads the block first; it is out of line, so that the one-round code
// below stays straight.
__attribute__((target("avx512f"))) inline bool contains_avx512_rounds_words(__m512i words, std::uint32_t h,
                                                                            unsigned k,
                                                                            unsigned first = 0) noexcept {
  for (unsigned r = first; r < k; r += 16) {
    if (!test_avx512_words(words, probes_avx512(h, r), lanes_avx512(k, r))) return false;
  }
  return true;
}
template <class Loads>
__attribute__((target("avx512f"), noinline)) bool contains_avx512_rounds(const void* block,
                                                                         std::uint32_t h, unsigned k) noexcept {
  return contains_avx512_rounds_words(Loads::whole(block), h, k);
}

// k <= 16 (every p >= 10^-4) is one round of straight-line code. Each lane's word is
// rotated right by p, bringing bit p % 32 down to bit 0; ANDNOT with the k-lane ones
// leaves a lane non-zero where a probe's bit is clear, and vptestmd + kortest turn that
// into one flag: 17 instructions from entry to return, where building 1 << p and a lane
// mask (vprolvd of a broadcast 1, the mask from kLowLanes, vptestnmd) took 19. Per-key
// negative lookups at 10^6 keys, p = 1 %: 5.6 -> 5.4 ns (best of 11, alternating builds).
// (`words`: the block, already in a register; k <= 16.)
__attribute__((target("avx512f"))) inline bool contains_avx512_words(__m512i words, std::uint32_t h,
                                                                     unsigned k) noexcept {
  const __m512i x = products_avx512(h, 0);
  const __m512i word = _mm512_maskz_permutexvar_epi32(kAll, _mm512_maskz_srli_epi32(kAll, x, 28), words);
  const __m512i bit0 = _mm512_maskz_rorv_epi32(kAll, word, _mm512_maskz_srli_epi32(kAll, x, 23));
  const __m512i clear = _mm512_maskz_andnot_epi32(kAll, bit0, _mm512_load_si512(&kLowLaneOnes[k]));
  return _mm512_mask_test_epi32_mask(kAll, clear, clear) == 0;
}
template <class Loads>
__attribute__((target("avx512f"))) bool contains_avx512(const void* block, std::uint32_t h,
                                                        unsigned k) noexcept {
  if (k <= 16) return contains_avx512_words(Loads::whole(block), h, k);
  return contains_avx512_rounds<Loads>(block, h, k);
}

// The same test for k <= 16 in assembly, for code the compiler does not build for AVX-512:
// there a `target("avx512f")` function cannot be inlined, so each per-key lookup called
// contains_avx512 (arguments in registers, a call, VZEROUPPER, the salts and lane ones
// loaded again). Inline assembly needs no target: GCC and Clang assemble any instruction
// and leave it to the caller (contains, below) to run it only where the CPU has AVX-512F.
// It uses zmm0 and zmm1 only and no mask register (a k register cannot be named as
// clobbered outside AVX-512 code, nor can zmm16-31): the 16 lanes are folded to one flag
// by an extract, an OR and VPTEST. VZEROUPPER at the end clears the upper halves it
// dirtied, so the caller's SSE code pays no transition on Intel CPUs; it clears those of
// every ymm register, so all 16 are declared clobbered (a caller built for AVX may hold
// values there; zmm16-31 and the k registers it leaves alone).
// Measured, per-key negative lookups at 10^6 u64 keys, p = 1 %, a loop of hash + test:
// called 3.9-4.0 ns, this 3.0-3.1 ns, the intrinsics inlined into an AVX-512 build 2.8-2.9.
// Needs k <= 16 and a CPU with AVX-512F.
inline bool contains_avx512_asm(const void* block, std::uint32_t h, unsigned k) noexcept {
  using Line = const char[64];  // 64 bytes read from memory: the block, the salts, the lane ones
  bool all_set;
  asm volatile(  // AT&T | Intel syntax
      "vpbroadcastd {%[h], %%zmm0|zmm0, %[h]}\n\t"
      "vpmulld {%[salt], %%zmm0, %%zmm0|zmm0, zmm0, %[salt]}\n\t"  // x = h * salt_i
      "vpsrld {$28, %%zmm0, %%zmm1|zmm1, zmm0, 28}\n\t"             // word p >> 5
      "vpsrld {$23, %%zmm0, %%zmm0|zmm0, zmm0, 23}\n\t"             // p (mod 32 below)
      "vpermd {%[block], %%zmm1, %%zmm1|zmm1, zmm1, %[block]}\n\t"  // each probe's word
      "vprorvd {%%zmm0, %%zmm1, %%zmm1|zmm1, zmm1, zmm0}\n\t"       // its bit to bit 0
      "vpandnd {%[ones], %%zmm1, %%zmm1|zmm1, zmm1, %[ones]}\n\t"   // non-zero: a clear bit
      "vextracti64x4 {$1, %%zmm1, %%ymm0|ymm0, zmm1, 1}\n\t"
      "vpor {%%ymm0, %%ymm1, %%ymm1|ymm1, ymm1, ymm0}\n\t"
      "vptest {%%ymm1, %%ymm1|ymm1, ymm1}\n\t"                       // ZF: no bit clear
      "vzeroupper"
      : "=@ccz"(all_set)
      : [h] "r"(h), [salt] "m"(*reinterpret_cast<Line*>(kSalt)),
        [block] "m"(*reinterpret_cast<Line*>(block)), [ones] "m"(*reinterpret_cast<Line*>(&kLowLaneOnes[k]))
      : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
  return all_set;
}

// --- AVX2: 8 probes per round ------------------------------------------------------

struct Probes256 {
  __m256i word;    // p >> 5, 0..15 (vpermd reads its low 3 bits)
  __m256i high;    // bit 31 set where the word is in the block's upper half (p >> 5 >= 8)
  __m256i to_top;  // 31 - p % 32: the left shift that moves the probe's bit to bit 31
};

// The product h * salt holds p in its top 9 bits, so its bit 31 already says which half
// the word is in, and blendvps selects by bit 31: the product is the selector as it is.
__attribute__((target("avx2"))) inline Probes256 probes_avx2(std::uint32_t h, unsigned round) noexcept {
  const __m256i salt = _mm256_load_si256(reinterpret_cast<const __m256i*>(kSalt + round));
  const __m256i product = _mm256_mullo_epi32(_mm256_set1_epi32(static_cast<int>(h)), salt);
  return {_mm256_srli_epi32(product, 28), product,
          _mm256_andnot_si256(_mm256_srli_epi32(product, 23), _mm256_set1_epi32(31))};
}

// The lanes of probes round..round + 7 that a key with k probes uses (k > round), as the
// sign bits of a vector: the mask test_avx2_words hands to vtestps.
__attribute__((target("avx2"))) inline __m256 lanes_avx2(unsigned k, unsigned round) noexcept {
  const int used = static_cast<int>(std::min(k - round, 8u));
  return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(used), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}

// True when the probes in `p` selected by `lanes` are all set in the block (`low_words`,
// `high_words`: its two halves, in registers). Each probe's word is picked from both
// halves, the right one kept, and shifted so that the probe's bit becomes the sign bit:
// 5 vector instructions per slice, and probes_avx2 3 besides the multiply (testing against
// 1 << p % 32 with an AND and a compare, the half mask made by two more shifts: 6 and 6).
// Measured on an AMD EPYC Zen 3, batched lookups in one process, alternating with that
// AND-and-compare test: 10^4 keys 10.05 -> 9.73 ns, 10^6 keys 12.35 -> 11.96 ns (negatives;
// positives 9.96 -> 9.81, 12.29 -> 12.05). The sign bits are then tested by one vtestps
// against the lanes that count (its carry flag: none of them clear), where vmovmskps, a
// NOT and a TEST took three instructions (callgrind: 2 fewer a key in lookup_one_avx2).
__attribute__((target("avx2"))) inline bool test_avx2_words(__m256i low_words, __m256i high_words,
                                                            const Probes256& p, __m256 lanes) noexcept {
  const __m256 low = _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(low_words, p.word));
  const __m256 high = _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(high_words, p.word));
  const __m256 word = _mm256_blendv_ps(low, high, _mm256_castsi256_ps(p.high));
  const __m256i at_top = _mm256_sllv_epi32(_mm256_castps_si256(word), p.to_top);
  return _mm256_testc_ps(_mm256_castsi256_ps(at_top), lanes) != 0;  // no lane of `lanes` clear
}

// (`low_words`, `high_words`: the block's two halves, already in registers; from probe
// `first`, a multiple of 8, as contains_avx512_rounds_words.)
__attribute__((target("avx2"))) inline bool contains_avx2_words(__m256i low_words, __m256i high_words,
                                                                std::uint32_t h, unsigned k,
                                                                unsigned first = 0) noexcept {
  for (unsigned r = first; r < k; r += 8) {
    if (!test_avx2_words(low_words, high_words, probes_avx2(h, r), lanes_avx2(k, r))) return false;
  }
  return true;
}
template <class Loads>
__attribute__((target("avx2"))) bool contains_avx2(const void* block, std::uint32_t h,
                                                   unsigned k) noexcept {
  __m256i low, high;
  Loads::halves(block, low, high);
  return contains_avx2_words(low, high, h, k);
}

// One round of 8 probes for contains_avx2_asm, salts and lane ones read from the named
// operands SALT and ONES: leaves in register OUT the lanes whose bit is clear (ymm0 holds h
// in every lane). Each probe's word is picked from both halves of the block (vpermd uses
// the index's low 3 bits) and the right one kept by the sign of the product (bit 31 =
// index >= 8), shifted right by p % 32 (bits 23-27 of the product, by two shifts: no
// constant register), then ANDNOT with ones in the lanes in use.
#define SEGBLOOM_AVX2_PROBE_ROUND(SALT, ONES, OUT)                                \
  "vpmulld {%[" SALT "], %%ymm0, %%ymm1|ymm1, ymm0, %[" SALT "]}\n\t"           \
  "vpsrld {$28, %%ymm1, %%ymm2|ymm2, ymm1, 28}\n\t"                             \
  "vpermd {%[low], %%ymm2, %%ymm3|ymm3, ymm2, %[low]}\n\t"                      \
  "vpermd {%[high], %%ymm2, %%ymm2|ymm2, ymm2, %[high]}\n\t"                    \
  "vblendvps {%%ymm1, %%ymm2, %%ymm3, %%ymm3|ymm3, ymm3, ymm2, ymm1}\n\t"        \
  "vpslld {$4, %%ymm1, %%ymm1|ymm1, ymm1, 4}\n\t"                               \
  "vpsrld {$27, %%ymm1, %%ymm1|ymm1, ymm1, 27}\n\t"                             \
  "vpsrlvd {%%ymm1, %%ymm3, %%ymm3|ymm3, ymm3, ymm1}\n\t"                       \
  "vpandn {%[" ONES "], %%ymm3, %%" OUT "|" OUT ", ymm3, %[" ONES "]}\n\t"

// The AVX2 test for k <= 16 in assembly, for the reason and with the register rules of
// contains_avx512_asm (ymm0-4, VZEROUPPER, all 16 declared clobbered): two rounds of 8
// probes, the second only for k > 8. Needs k <= 16 and a CPU with AVX2.
// Measured at SEGBLOOM_SIMD=avx2, per-key lookups at 10^6 u64 keys, p = 1 %, against the
// call to contains_avx2: negatives 4.25 -> 4.0 ns, positives 4.45 -> 3.95.
inline bool contains_avx2_asm(const void* block, std::uint32_t h, unsigned k) noexcept {
  using Half = const char[32];  // 32 bytes read from memory
  const auto half = [](const void* p, unsigned i) -> Half& { return reinterpret_cast<Half*>(p)[i]; };
  bool all_set;
  asm volatile(  // AT&T | Intel syntax
      "vmovd {%[h], %%xmm0|xmm0, %[h]}\n\t"
      "vpbroadcastd {%%xmm0, %%ymm0|ymm0, xmm0}\n\t"
      SEGBLOOM_AVX2_PROBE_ROUND("salt0", "ones0", "ymm4")  // probes 0-7
      "cmp{l $8, %[k]|\t%[k], 8}\n\t"
      "jbe 1f\n\t"
      SEGBLOOM_AVX2_PROBE_ROUND("salt1", "ones1", "ymm3")  // probes 8-15
      "vpor {%%ymm3, %%ymm4, %%ymm4|ymm4, ymm4, ymm3}\n"
      "1:\n\t"
      "vptest {%%ymm4, %%ymm4|ymm4, ymm4}\n\t"  // ZF: no bit clear
      "vzeroupper"
      : "=@ccz"(all_set)
      : [h] "r"(h), [k] "r"(k), [low] "m"(half(block, 0)), [high] "m"(half(block, 1)),
        [salt0] "m"(half(kSalt, 0)), [salt1] "m"(half(kSalt, 1)), [ones0] "m"(half(&kLowLaneOnes[k], 0)),
        [ones1] "m"(half(&kLowLaneOnes[k], 1))
      : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
  return all_set;
}
#undef SEGBLOOM_AVX2_PROBE_ROUND
#endif

// The widest implementation this CPU runs: 2 AVX-512, 1 AVX2, 0 portable (so an
// ordinary build, without -mavx2, still uses AVX2 or AVX-512 where the CPU has them),
// within detail::simd_cap() (SEGBLOOM_SIMD).
inline int best_contains_level() noexcept {
#ifdef SEGBLOOM_X86_SIMD
  if (detail::avx512_allowed()) return 2;
  if (detail::avx2_allowed()) return 1;
#endif
  return 0;
}

// Asked once, at start-up. Lookups branch on it and call the kernel directly: a function
// pointer (an indirect call, behind the guard of a function-local static) cost ~1 ns more
// per lookup (10^6 keys, per-key lookups: 6.5 -> 5.5 ns, the test alone). Code that runs
// during static initialisation, before this is set, reads 0: the portable path, which
// gives the same answers.
inline const int kContainsLevel = best_contains_level();

// The implementation the lookup path uses. In a build that does not target AVX-512, for
// k <= 16: the AVX-512 or the AVX2 assembly, whichever the CPU runs; else a call (the
// SIMD functions, or the portable loop kept out of line: inlined beside the assembly, its
// registers pushed the caller's loop values to the stack, 3.0 -> 3.6 ns a lookup).
template <class Loads>
__attribute__((noinline)) bool contains_portable_call(const void* block, std::uint32_t h,
                                                      unsigned k) noexcept {
  return contains_portable<Loads>(block, h, k);
}
// always_inline: without it GCC 12 split this function (a ".part" clone), inlined only the
// AVX-512 branch and called the rest, so on a CPU with AVX2 and no AVX-512 every per-key
// lookup made a call around the AVX2 assembly. Measured on an AMD EPYC Zen 3 (AVX2 only),
// 10^6 keys, p = 1 %, alternating builds, 8 + 8 processes: per-key blocked u64 negatives
// 17.3-18.9 -> 9.8-16.0 ns (medians; this host's processes run in a slow and a fast mode,
// and each mode got faster: 10.2-10.6 -> 9.1-9.3 ns, 17.9-19.2 -> 15.9-16.8), positives
// 14.3-17.5 -> 12.9-13.1. The AVX-512 branch compiles to the same instructions as before.
template <class Loads>
[[gnu::always_inline]] inline bool contains(const void* block, std::uint32_t h,
                                            unsigned k) noexcept {
#if defined(SEGBLOOM_X86_SIMD) && defined(__AVX512F__)
  return contains_avx512<Loads>(block, h, k);  // the compiler targets it: inline, no dispatch
#elif defined(SEGBLOOM_X86_SIMD)
  if (kContainsLevel == 2) [[likely]] {
    if constexpr (Loads::kVectorLoadInAsm) {
      if (k <= 16) [[likely]] return contains_avx512_asm(block, h, k);
    }
    return contains_avx512<Loads>(block, h, k);
  }
  if (kContainsLevel == 1) {
    if constexpr (Loads::kVectorLoadInAsm) {
      if (k <= 16) return contains_avx2_asm(block, h, k);
    }
    return contains_avx2<Loads>(block, h, k);
  }
  return contains_portable_call<Loads>(block, h, k);
#else
  return contains_portable<Loads>(block, h, k);
#endif
}

}  // namespace segbloom::blocked
