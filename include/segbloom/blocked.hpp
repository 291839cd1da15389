// segbloom: the blocked layout's probing, one 64-byte cache line per key per slice.
//
// A key's block is reduce_range(digest.low, blocks). Inside the block, probe i sets bit
//     position_i = (h * salt_i) >> 23    (9 bits: 0..511),   h = low 32 bits of digest.high
// with 48 fixed odd 32-bit salts (so k <= 48). Bit p of a block is bit p % 64 of its
// 64-bit word p / 64 (the BitCells order), which on a little-endian host is also bit
// p % 32 of its 32-bit word p / 32: the view the SIMD paths gather from.
//
// One function answers "are all k bits set?" in three implementations with identical
// answers: portable (scalar, one branch), AVX2 (8 probes per round) and AVX-512 (16 per
// round), both picking words out of the block held in registers. `contains` uses the
// widest one the CPU has, asked once at start-up, and is inlined into its caller: as
// intrinsics when the compiler itself targets AVX-512, else, for k <= 16, as inline
// assembly (AVX-512 or AVX2; the plain filter only, and not under a sanitizer). All stay
// callable for tests. Inserts set the k bits and count the new ones with `set` (portable,
// or AVX-512 building the whole mask in a register), batched inserts a group of keys with
// `set_group` (the same, or AVX2 building it in two). Batched lookups test a group of keys
// against every slice with one kernel call (`lookup_group`, at the end).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>

#include "segbloom/detail/batch.hpp"
#include "segbloom/detail/bits.hpp"
#include "segbloom/detail/prefetch.hpp"
#include "segbloom/detail/simd_level.hpp"
#include "segbloom/hashing.hpp"
#include "segbloom/probing.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SEGBLOOM_X86_SIMD 1
#endif

namespace segbloom::blocked {

inline constexpr unsigned kWordsPerBlock = 8;
inline constexpr std::size_t kBlockBytes = kWordsPerBlock * sizeof(std::uint64_t);  // a cache line
inline constexpr std::size_t kMaxBlockedSlices = 64;  // = kMaxSlices (options.hpp)

// Salts for probes 0..47, padded to 64 with zeros so SIMD rounds may load 16 at a time.
alignas(64) inline constexpr std::uint32_t kSalt[64] = {
    0xd837115f, 0x026f4c85, 0x50a74cff, 0x73e1d037, 0x8f8de0e9, 0x3eb459c9, 0xf11fc8df, 0x0977e471,
    0x856980bb, 0x658ef30d, 0x2e7abed5, 0xab3e1d35, 0x7ad367d5, 0xc3c79559, 0xf99e6ae5, 0x1f99f50d,
    0x4c1d5c6b, 0xf1217709, 0x73d9c869, 0xd7bfc82d, 0xc059f535, 0x0dd6a32d, 0x9c86269b, 0xd9f0b7c1,
    0xa2729d41, 0xc1ace0d9, 0x4fa930d7, 0xdd1c84e5, 0xa380626b, 0xdaaf6ec5, 0xbe06f2fd, 0x0b1f3791,
    0x06744ffb, 0x48ecf043, 0xea3d9d21, 0xb99a14f9, 0x90cf3f1d, 0x2d4579ff, 0x151bc8cd, 0x3dd4d0f3,
    0x46d1d9af, 0x6f67594f, 0xaac30727, 0xfc1a4093, 0x539bc951, 0xc7836f95, 0x3de54e17, 0x5f1bfb25,
};

inline std::uint64_t block_of(const Digest128& digest, std::uint64_t blocks) noexcept {
  return reduce_range(digest.low, blocks);
}
inline std::uint32_t in_block_hash(const Digest128& digest) noexcept {
  return static_cast<std::uint32_t>(digest.high);
}
inline unsigned position(std::uint32_t h, unsigned i) noexcept {
  return static_cast<unsigned>((h * kSalt[i]) >> 23);
}

// Visits the k bit positions (0..511) of a key inside its block.
template <class Visit>
bool probe(std::uint32_t h, unsigned k, Visit&& visit) {
  for (unsigned i = 0; i < k; ++i) {
    if (!visit(position(h, i))) return false;
  }
  return true;
}

// How a kernel reads a block: every kernel is a template on it, so that the plain and the
// concurrent filter share them. PlainLoads: ordinary loads (no other thread writes a plain
// filter's slices). detail::RelaxedLoads (detail/concurrent_slice.hpp): loads that other
// threads' inserts may race with. Each gives word(block, w), the block's 64-bit word w;
// pair(block, q), words 2q and 2q + 1 as one WordPair; whole(block), the block in one
// AVX-512 register; halves(block, low, high), in two AVX2 registers; and
// kVectorLoadInAsm: whether the per-key tests in inline assembly (contains_avx512_asm,
// contains_avx2_asm) may read the block. Not under AddressSanitizer or ThreadSanitizer,
// which do not see memory read inside assembly. StoredLoads: blocks in a blob.
// Kernels take a block as a const void*: its words are read only through Loads.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SEGBLOOM_SANITIZED_LOADS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SEGBLOOM_SANITIZED_LOADS 1
#endif
#endif
#ifndef SEGBLOOM_SANITIZED_LOADS
#define SEGBLOOM_SANITIZED_LOADS 0
#endif
using WordPair = std::uint64_t __attribute__((vector_size(16)));  // GCC/Clang, any target
struct PlainLoads {
  static constexpr bool kVectorLoadInAsm = !SEGBLOOM_SANITIZED_LOADS;
  static std::uint64_t word(const void* block, unsigned w) noexcept {
    return static_cast<const std::uint64_t*>(block)[w];
  }
  static WordPair pair(const void* block, unsigned q) noexcept {
    WordPair words;  // one 16-byte load (built from two word loads, 6 slices took 4 % longer)
    std::memcpy(&words, static_cast<const unsigned char*>(block) + sizeof words * q, sizeof words);
    return words;
  }
#ifdef SEGBLOOM_X86_SIMD
  __attribute__((target("avx512f"))) static __m512i whole(const void* block) noexcept {
    return _mm512_loadu_si512(block);
  }
  __attribute__((target("avx2"))) static void halves(const void* block, __m256i& low,
                                                     __m256i& high) noexcept {
    const auto* const bytes = static_cast<const unsigned char*>(block);
    low = _mm256_loadu_si256(reinterpret_cast<const __m256i_u*>(bytes));
    high = _mm256_loadu_si256(reinterpret_cast<const __m256i_u*>(bytes + 32));
  }
#endif
};

// Blocks stored in a blob, read in place (FilterView's slices): at any address, words
// little-endian on every host (detail::load_le64). The vector loads are PlainLoads', which
// take any address (and exist only on x86, little-endian).
struct StoredLoads : PlainLoads {
  static std::uint64_t word(const void* block, unsigned w) noexcept {
    return detail::load_le64(static_cast<const unsigned char*>(block) + sizeof(std::uint64_t) * w);
  }
  static WordPair pair(const void* block, unsigned q) noexcept {
    if constexpr (std::endian::native == std::endian::little) {
      return PlainLoads::pair(block, q);
    } else {
      return WordPair{word(block, 2 * q), word(block, 2 * q + 1)};
    }
  }
};

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

// --- Inserts: a key's k bits set in its block ---------------------------------------
//
// set(block, h, k) sets the k bits and returns how many of them were clear (the slice's
// set-cell count grows by that much; a bit two probes share counts once). Portable and
// AVX-512 forms leave the same block and return the same count.

using SetFn = std::uint64_t (*)(std::uint64_t*, std::uint32_t, unsigned) noexcept;

// {instance<0>(), instance<1>(), ..., instance<16>()}: [k] = a kernel's instance for k
// probes, [0] = its instance for k at run time. by_probes(table, k) picks the one for k.
template <class Fn, class Instance, unsigned... K>
constexpr auto table_by_probes(Instance instance, std::integer_sequence<unsigned, K...>) noexcept {
  return std::array<Fn, sizeof...(K) + 1>{instance.template operator()<0>(),
                                          instance.template operator()<K + 1>()...};
}
template <class Table>
auto by_probes(const Table& table, unsigned k) noexcept {
  return table[k < table.size() ? k : 0];
}

// One load, BTS (SBB counts the old bit) and store a probe. kFixedProbes != 0: k is that
// constant, so the loop unrolls (asked for: GCC 12 at -O2 unrolls only k <= 2 by itself)
// and each salt is the immediate of its multiply, 9-10 instructions a probe where the loop
// over k took 13 (set() and set_group() pick the instance for the slice's k up to 16); 0:
// k from the argument. Measured on a Zen 3 (AVX2,
// no AVX-512), per-key `insert` of u64 keys at p = 1 % (k = 10 in a growing filter's first
// slice), the old and new headers built into one program and alternating, medians of the
// rounds' ratios: 0.93-0.99 at 10^4 keys, 0.93-0.96 at 10^5, 0.90-0.98 at 10^6 (33 fewer
// instructions an insert). A mask built in AVX2 registers (mask_avx2, k a constant too)
// was no faster than this.
template <unsigned kFixedProbes>
inline std::uint64_t set_portable_k(std::uint64_t* block, std::uint32_t h, unsigned k) noexcept {
  std::uint64_t fresh = 0;
  const auto set_probe = [block, h, &fresh](unsigned i) {
    const unsigned p = position(h, i);
    detail::set_bit(block[p >> 6], p, fresh);
  };
  if constexpr (kFixedProbes != 0) {
#pragma GCC unroll 16
    for (unsigned i = 0; i < kFixedProbes; ++i) set_probe(i);
  } else {
    for (unsigned i = 0; i < k; ++i) set_probe(i);
  }
  return fresh;
}

// k at run time (any k <= 48).
inline std::uint64_t set_portable(std::uint64_t* block, std::uint32_t h, unsigned k) noexcept {
  return set_portable_k<0>(block, h, k);
}

inline constexpr auto kSetPortableByProbes = table_by_probes<SetFn>(
    []<unsigned K>() { return &set_portable_k<K>; }, std::make_integer_sequence<unsigned, 16>{});

// The instance for k, or the run-time one beyond 16.
inline std::uint64_t set_portable_fixed(std::uint64_t* block, std::uint32_t h, unsigned k) noexcept {
  return by_probes(kSetPortableByProbes, k)(block, h, k);
}

#ifdef SEGBLOOM_X86_SIMD
// Rows for the insert kernel: [j] has all 64 bits of lane j set, the other lanes 0.
struct alignas(64) LaneRow {
  std::uint64_t lane[8];
};
inline constexpr auto kLaneRows = [] {
  std::array<LaneRow, 8> rows{};
  for (unsigned j = 0; j < 8; ++j) rows[j].lane[j] = ~std::uint64_t{0};
  return rows;
}();
// [b] = 1 << b.
alignas(64) inline constexpr auto kBitOf = [] {
  std::array<std::uint64_t, 64> bits{};
  for (unsigned b = 0; b < 64; ++b) bits[b] = std::uint64_t{1} << b;
  return bits;
}();
// Position p's row, p / 64 rows = p & 0x1C0 bytes in (one AND of the shifted product), and
// its bit in its 64-bit word, to be broadcast.
inline const char* lane_row(unsigned p) noexcept {
  return reinterpret_cast<const char*>(kLaneRows.data()) + (p & 0x1C0);
}
inline long long bit_in_word(unsigned p) noexcept { return static_cast<long long>(kBitOf[p & 63]); }

// The sum of 4 lanes of 64 bits.
__attribute__((target("avx2"))) inline std::uint64_t sum_lanes(__m256i lanes) noexcept {
  const __m128i pair = _mm_add_epi64(_mm256_castsi256_si128(lanes), _mm256_extracti128_si256(lanes, 1));
  return static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_add_epi64(pair, _mm_unpackhi_epi64(pair, pair))));
}

// The k bits are gathered into one 512-bit mask in a register first: per probe at p,
// mask |= row[p / 64] & broadcast(1 << p % 64): one vpternlogq, its broadcast read from
// kBitOf, after a plain load of the row, so each probe takes one instruction on the two
// ports that execute 512-bit arithmetic. Then one OR writes the block and vpopcntq counts the new
// bits. The scalar form (set_portable) takes ~13 instructions a probe and makes a later
// probe of the same word wait for an earlier one's store; building 1 << (p - 64 j) in
// every lane j with vpsllvq took 4 vector instructions a probe.
// kFixedProbes != 0: k is that constant (the loop unrolls; set() picks the instance for
// the slice's k up to 16); 0: k from the argument.
// Measured, 10^6 u64 keys in a 1.26 MB slice, k = 7, the kernel alone: scalar 12 ns
// (7.8 ns since it sets bits with BTS), vpsllvq with k at run time 9.9 ns, with k fixed
// 8.2 ns; the rows 6.5 ns per insert.
template <unsigned kFixedProbes>
__attribute__((target("avx512f,avx512vpopcntdq"))) inline std::uint64_t set_avx512_k(
    std::uint64_t* block, std::uint32_t h, unsigned k) noexcept {
  const unsigned probes = kFixedProbes != 0 ? kFixedProbes : k;
  __m512i mask = _mm512_setzero_si512();
  for (unsigned i = 0; i < probes; ++i) {
    const unsigned p = position(h, i);
    const __m512i row = _mm512_load_si512(lane_row(p));
    mask = _mm512_ternarylogic_epi64(mask, row, _mm512_set1_epi64(bit_in_word(p)), 0xF8);  // mask | (row & bit)
  }
  const __m512i old = _mm512_loadu_si512(block);
  _mm512_storeu_si512(block, _mm512_or_si512(old, mask));
  // New bits per lane (<= 64 each), summed over the 8 lanes.
  const __m512i fresh = _mm512_popcnt_epi64(_mm512_maskz_andnot_epi64(0xFF, old, mask));
  return sum_lanes(_mm256_add_epi64(_mm512_maskz_extracti64x4_epi64(0xF, fresh, 0),
                                    _mm512_maskz_extracti64x4_epi64(0xF, fresh, 1)));
}

// k at run time (any k <= 48).
inline std::uint64_t set_avx512(std::uint64_t* block, std::uint32_t h, unsigned k) noexcept {
  return set_avx512_k<0>(block, h, k);
}

inline constexpr auto kSetAvx512ByProbes = table_by_probes<SetFn>(
    []<unsigned K>() { return &set_avx512_k<K>; }, std::make_integer_sequence<unsigned, 16>{});

// The instance for k, or the run-time one beyond 16.
inline std::uint64_t set_avx512_fixed(std::uint64_t* block, std::uint32_t h, unsigned k) noexcept {
  return by_probes(kSetAvx512ByProbes, k)(block, h, k);
}

inline bool has_set_avx512() noexcept {
  __builtin_cpu_init();  // may run during static initialisation (kSetAvx512 below)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq") &&
         detail::simd_cap() >= detail::kSimdAvx512;
}

// Asked once, at start-up, like kContainsLevel (false before: the portable loop, same bits).
inline const bool kSetAvx512 = has_set_avx512();

// The same mask in two AVX2 registers, the block's low and high 32 bytes: per probe the
// bit's broadcast and two AND-ORs (a row's half outside the probe's word is 0). Why a mask
// rather than the portable loop: see set_avx512_k.
struct BlockMaskAvx2 {
  __m256i low, high;
};
template <unsigned kFixedProbes>
__attribute__((target("avx2"))) inline BlockMaskAvx2 mask_avx2(std::uint32_t h, unsigned k) noexcept {
  const unsigned probes = kFixedProbes != 0 ? kFixedProbes : k;
  BlockMaskAvx2 mask{_mm256_setzero_si256(), _mm256_setzero_si256()};
  for (unsigned i = 0; i < probes; ++i) {
    const unsigned p = position(h, i);
    const auto* const row = reinterpret_cast<const __m256i*>(lane_row(p));
    const __m256i bit = _mm256_set1_epi64x(bit_in_word(p));
    mask.low = _mm256_or_si256(mask.low, _mm256_and_si256(_mm256_load_si256(row), bit));
    mask.high = _mm256_or_si256(mask.high, _mm256_and_si256(_mm256_load_si256(row + 1), bit));
  }
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
// bits (at most 128 each), which set_group_avx2_k adds up once per group.
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

// Batched inserts take the AVX2 kernel (set_group_avx2_k) where the CPU has AVX2 and not the
// AVX-512 one (no AVX-512, or AVX-512 without VPOPCNTDQ); asked once, at start-up.
inline bool has_set_group_avx2() noexcept {
  __builtin_cpu_init();
  return !kSetAvx512 && __builtin_cpu_supports("avx2") && detail::simd_cap() >= detail::kSimdAvx2;
}
inline const bool kSetGroupAvx2 = has_set_group_avx2();
#endif

// The implementation inserts use: with AVX-512 (VPOPCNTDQ) its instance for k, else the
// portable loop's; the CPU is asked once, at start-up. One indirect call per insert,
// through a table of instances (none when the compiler itself targets both). The AVX2
// mask (mask_avx2, newly_set_avx2) in a call for one key is no faster than the portable
// loop on a Zen 3 (see set_portable_k), so AVX2 serves batches only.
inline std::uint64_t set(std::uint64_t* block, std::uint32_t h, unsigned k) noexcept {
#if defined(SEGBLOOM_X86_SIMD) && defined(__AVX512F__) && defined(__AVX512VPOPCNTDQ__)
  return set_avx512_k<0>(block, h, k);
#elif defined(SEGBLOOM_X86_SIMD)
  return kSetAvx512 ? set_avx512_fixed(block, h, k) : set_portable_fixed(block, h, k);
#else
  return set_portable_fixed(block, h, k);
#endif
}

// --- Batched inserts: a group of keys into one slice ---------------------------------
//
// set_group(words, blocks, digests, n, k, write, changed): for each key i < n, in order,
// with write[i], sets its k bits in its block of `words` (`blocks` blocks) and
// changed[i] = some bit was clear; changed[i] = false for the others. Returns how many
// bits went from 0 to 1 in all. The same bits and answers as set() key by key (a key
// sees the bits of the keys before it), in one call per group: SegmentedFilter::
// insert_many uses it while the slice has room for the whole group. The AVX-512 form
// inlines set_avx512_k's instance for k (k <= 16; the run-time-k one above), the AVX2 form
// mask_avx2's, the portable form set_portable_k's.

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
    []<unsigned K>() { return &set_group_portable_k<K>; }, std::make_integer_sequence<unsigned, 16>{});

// k at run time (any k <= 48).
inline std::uint64_t set_group_portable(std::uint64_t* words, std::uint64_t blocks,
                                        const Digest128* digests, std::size_t n, unsigned k,
                                        const bool* write, bool* changed) noexcept {
  return set_group_portable_k<0>(words, blocks, digests, n, k, write, changed);
}

#ifdef SEGBLOOM_X86_SIMD
template <unsigned kFixedProbes>
__attribute__((target("avx512f,avx512vpopcntdq"))) inline std::uint64_t set_group_avx512_k(
    std::uint64_t* words, std::uint64_t blocks, const Digest128* digests, std::size_t n, unsigned k,
    const bool* write, bool* changed) noexcept {
  return set_each<&set_avx512_k<kFixedProbes>>(words, blocks, digests, n, k, write, changed);
}

inline constexpr auto kSetGroupAvx512ByProbes = table_by_probes<SetGroupFn>(
    []<unsigned K>() { return &set_group_avx512_k<K>; }, std::make_integer_sequence<unsigned, 16>{});

// The AVX2 form keeps the count in a vector until the group ends: a key's result needs
// only whether some bit was clear (vptest), and the sum of 4 lanes, which follows the
// block's load by ~25 cycles, no longer ends every key.
template <unsigned kFixedProbes>
__attribute__((target("avx2"))) inline std::uint64_t set_group_avx2_k(
    std::uint64_t* words, std::uint64_t blocks, const Digest128* digests, std::size_t n, unsigned k,
    const bool* write, bool* changed) noexcept {
  __m256i total = _mm256_setzero_si256();
  for (std::size_t i = 0; i < n; ++i) {
    if (!write[i]) {
      changed[i] = false;
      continue;
    }
    std::uint64_t* const block = words + block_of(digests[i], blocks) * kWordsPerBlock;
    const BlockMaskAvx2 fresh = newly_set_avx2(block, mask_avx2<kFixedProbes>(in_block_hash(digests[i]), k));
    const __m256i any = _mm256_or_si256(fresh.low, fresh.high);
    changed[i] = !_mm256_testz_si256(any, any);
    total = _mm256_add_epi64(total, count_avx2(fresh));
  }
  return sum_lanes(total);
}

inline constexpr auto kSetGroupAvx2ByProbes = table_by_probes<SetGroupFn>(
    []<unsigned K>() { return &set_group_avx2_k<K>; }, std::make_integer_sequence<unsigned, 16>{});
#endif

// The implementation batched inserts use: the AVX-512 instance for k where the CPU has
// it (asked once, kSetAvx512), else the AVX2 one (kSetGroupAvx2), else the portable
// loop's instance for k.
inline std::uint64_t set_group(std::uint64_t* words, std::uint64_t blocks, const Digest128* digests,
                               std::size_t n, unsigned k, const bool* write, bool* changed) noexcept {
#if defined(SEGBLOOM_X86_SIMD)
  if (kSetAvx512) return by_probes(kSetGroupAvx512ByProbes, k)(words, blocks, digests, n, k, write, changed);
  if (kSetGroupAvx2) return by_probes(kSetGroupAvx2ByProbes, k)(words, blocks, digests, n, k, write, changed);
#endif
  return by_probes(kSetGroupPortableByProbes, k)(words, blocks, digests, n, k, write, changed);
}

// --- Batches: many keys against every blocked slice ----------------------------------
//
// A batched lookup (lookup_many, at the end: both filters' contains_many) works on groups
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
// Measured: see the README's performance section.

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

// found[i] = some slice holds key i, for n keys; returns how many were found.
// Prefetches `ahead` on the way.
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
// -> 28.0-28.3, one slice 8.1-8.4 -> 7.0-7.15 (README, "Blocked layout").
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

// --- A batch of lookups: both filters' contains_many -------------------------------

// How far ahead lookup_many hashes keys when it prefetches: 2 groups of kGroup (64) keys. Memory at
// random needs about 30 reads in flight to reach its limit: the limit loop on an AMD
// EPYC (Zen 5), 128 MB, a line in 6.9 / 5.3 / 3.7 / 3.0 ns at 16 / 32 / 64 / 128 lines
// ahead. Lookups at 10^8 keys (BM_large_blocked/batched:1, alternating builds), groups
// of 16 keys 2 / 4 / 6 / 8 / 12 groups ahead: 7.7, 5.6, 4.9, 4.7-4.9, 4.9-5.3 ns a key
// with the keys made in the timed loop (0.64 ns of each), 4.2-4.4 with them read from
// an array; 128 keys ahead in groups of 32 / 64: 3.96-3.99 / 3.81-3.92 ns (fewer calls
// of the hash and the kernel), 192 in groups of 64: 3.93-4.12 ns. One group of 16 ahead
// with a group's prefetches all at once, until 27 Nov 2026: 9.6-10.2 ns. Without
// prefetches: groups of detail::kLookupGroup (16 until 29 Nov 2026, 32 since: 0.86-0.93 of
// the time at 10^4 keys on the Zen 5), one ahead (more only cost: 10^6 keys, 2.83 -> 2.98 ns).
inline constexpr std::size_t kPrefetchGroupsAhead = 2;

// From this size of the slices together, the blocks of the groups hashed before the first
// is answered (the first 128 keys, in every slice) are prefetched twice: as each group is
// hashed, and again just before the first group is answered. On an AMD EPYC Zen 3 guest
// (28 Nov 2026) many of the first prefetches of a call did not bring their line in time: of
// a burst of 96 or 128 random lines, those past about the 64th came from memory again when
// read 5 us later. One process alternating with one prefetch, medians of the per-round
// ratios (ranges over 2-4 runs of 30-40 rounds), one slice: 10^8 keys at 32 / 64 / 128 /
// 256 / 512 / 2048 keys a call 0.76-0.79 / 0.69-0.70 / 0.66-0.78 / 0.77-0.80 / 0.86-0.89 /
// 0.96-0.98 (so not only bursts past 64 lines gain); 10^7 keys (12.6 MB) at 128 / 256 / 512
// / 2048: 0.61 / 0.77 / 0.92 / 1.00; 10^6 keys (1.26 MB, from L3): 1.02-1.07 at 128, 0.98-1.01
// from 512. The floor lies between those two sizes; where exactly the second prefetch stops
// paying was not measured. One prefetch, whether as each group is hashed (as before) or only
// just before the first answer, gained nothing; shorter first bursts (groups of 16 two ahead)
// gained about as much on the Zen 3 but are slower where bursts are kept (the Zen 5 figures
// above).
inline constexpr std::uint64_t kPrefetchTwiceMinBytes = std::uint64_t{8} << 20;

// Answers n keys against the blocked slices slices[0, count) (newest first, taken once for
// the whole batch; count <= kMaxBlockedSlices) with the kernel lookup_group_for picks, and
// returns how many were found. hash(start, len, digests) writes the digests of keys
// [start, start + len). found[i] = some slice holds key i; then also(digests, len,
// group_found) may add what other slices hold (the plain filter's classic ones) and
// returns how many it added. When the slices together are at least the size from which a
// blocked slice is prefetched (detail::worth_prefetching: the core's L2 size, at most
// 2 MiB), keys go in
// groups of kGroup, hashed kPrefetchGroupsAhead groups ahead, and the kernel prefetches
// their blocks in every slice as it works (Lookahead; in slices of kPrefetchTwiceMinBytes
// or more together, the first groups' blocks are prefetched twice); otherwise in groups of
// detail::kLookupGroup, hashed one group ahead. Every slice, not only those as large as L2
// on their own: small slices that fit in L2 alone do not once the others' lines stream
// through it, and a prefetch of a line that is still there costs one instruction. Until
// 28 Nov 2026 only slices as large as L2 were; BM_batch_negative's 6 slices (37 KB to
// 1.4 MB, 2.7 MB in all) on an AMD EPYC Zen 3 (L2 512 KiB, the 4 smallest 597 KB
// together), in one process, alternating: 7 of 7 series faster, medians 48.2 / 48.9 /
// 46.7 / 49.7 / 48.6 / 55.6 / 56.6 -> 46.5 / 46.0 / 45.9 / 47.0 / 43.6 / 54.1 / 54.4 ns.
template <class Loads, class Hash, class Also>
std::size_t lookup_many(const SliceRef* slices, std::size_t count, std::size_t n, bool* found, Hash&& hash,
                        Also&& also) {
  std::uint64_t bytes = 0;
  for (std::size_t s = 0; s < count; ++s) bytes += slices[s].blocks * kBlockBytes;
  const std::size_t prefetched_count = detail::worth_prefetching(bytes, true) ? count : 0;
  const bool first_groups_twice = bytes >= kPrefetchTwiceMinBytes;
  const LookupGroupFn lookup = lookup_group_for<Loads>(slices, count, prefetched_count);
  std::size_t hits = 0;
  const auto walk = [&]<bool kPrefetch>() {
    constexpr std::size_t kAhead = kPrefetch ? kPrefetchGroupsAhead : 1;
    constexpr std::size_t kGroupSize = kPrefetch ? kGroup : detail::kLookupGroup;
    std::array<std::span<const Digest128>, kAhead> first_groups{};  // hashed before any answer
    std::size_t first_count = 0;
    detail::for_each_group_ahead<Digest128, kAhead, kGroupSize>(
        n,
        [&](std::size_t start, std::size_t len, Digest128* digests, bool first) {
          hash(start, len, digests);
          if constexpr (kPrefetch) {
            if (first) {  // the first kAhead groups: first_count stays below kAhead
              prefetch_group(slices, count, digests, len);
              first_groups[first_count++] = {digests, len};
            }
          }
        },
        [&](std::size_t start, std::size_t len, const Digest128* digests, std::span<const Digest128> later) {
          // Nothing to prefetch: an empty Lookahead. GCC compiles each kernel's loop twice,
          // for keys to prefetch and for none, and this picks the second (at the avx2 cap, 6
          // slices, 12.0-12.4 -> 10.5-10.8 ns a key; 4 % slower at AVX-512: README).
          Lookahead ahead;
          if constexpr (kPrefetch) {
            if (start == 0 && first_groups_twice) {  // their blocks again (kPrefetchTwiceMinBytes)
              for (const auto& group : first_groups) prefetch_group(slices, count, group.data(), group.size());
            }
            ahead = {slices, count, later.data(), later.size()};
          }
          hits += lookup(slices, count, digests, len, found + start, ahead);
          hits += also(digests, len, found + start);
        });
  };
  if (prefetched_count != 0) {
    walk.template operator()<true>();
  } else {
    walk.template operator()<false>();
  }
  return hits;
}

}  // namespace segbloom::blocked
