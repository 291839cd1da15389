// segbloom: the blocked layout, one 64-byte cache line per key per slice: where a key's
// bits are, and how the kernels read a block.
//
// A key's block is reduce_range(digest.low, blocks). Inside the block, probe i sets bit
//     position_i = (h * salt_i) >> 23    (9 bits: 0..511),   h = low 32 bits of digest.high
// with 48 fixed odd 32-bit salts (so k <= 48). Bit p of a block is bit p % 64 of its
// 64-bit word p / 64 (the BitCells order), which on a little-endian host is also bit
// p % 32 of its 32-bit word p / 32: the view the SIMD paths gather from.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "segbloom/detail/bits.hpp"
#include "segbloom/hashing.hpp"
#include "segbloom/probing.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SEGBLOOM_X86_SIMD 1
#endif

namespace segbloom::blocked {

inline constexpr unsigned kWordsPerBlock = 8;
inline constexpr std::size_t kBlockBytes = kWordsPerBlock * sizeof(std::uint64_t);  // a cache line
// = 2 * kMaxSlices (options.hpp): a batch asks at most two filters' slices at once (a
// transition pair, detail/lookup_slices.hpp).
inline constexpr std::size_t kMaxBlockedSlices = 128;

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

}  // namespace segbloom::blocked
