// segbloom: LevelDB's Bloom filter format ("leveldb.BuiltinBloomFilter2"), byte for byte.
//
// A LevelDB filter blob is
//     [ bit array: B bytes ][ k: 1 byte ]
// with bits = 8 B. Bit i of the array is bit i % 8 of byte i / 8. A key is hashed once
// with LevelDB's 32-bit murmur-like hash under seed 0xbc9f1d34; its k probe positions are
// h % bits, h += delta, ... with delta = rotate_right(h, 17), all in 32-bit arithmetic.
//
// Writing (LevelDB's built-in policy with `bits_per_key`): k = floor(bits_per_key * 0.69)
// clamped to [1, 30]; bits = max(n * bits_per_key, 64) rounded up to whole bytes. At 10
// bits per key that is k = 6 and a false-positive rate near 0.84 % (LevelDB's own test
// accepts up to 2 %).
//
// Reading (any writer): a blob shorter than 2 bytes matches no key; a probe count byte
// above 30 matches every key (LevelDB reserves those values for future encodings); k = 0
// matches every key, as LevelDB's reader does.
//
// Limits of the format: probe positions are 32-bit, so bits beyond 2^32 are never used;
// distinct keys share a 32-bit hash with probability 2^-32, which adds about n / 2^32 to
// the false-positive rate of a filter holding n keys (+0.02 % at one million keys, +1 % at
// 43 million).
//
// Thread safety: every function here is pure; a FilterBuilder needs exclusive access
// while it is written to.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "segbloom/probing.hpp"  // uint128

namespace segbloom::leveldb_format {

// The seed LevelDB's Bloom filter hashes keys with.
inline constexpr std::uint32_t kBloomSeed = 0xbc9f1d34;
// Largest probe count a filter may carry; larger values are reserved (match everything).
inline constexpr unsigned kMaxProbes = 30;
// Smallest bit array LevelDB's writer makes, whatever the number of keys.
inline constexpr std::size_t kMinBits = 64;
// The name LevelDB stores with every table that uses its built-in Bloom filter.
inline constexpr const char* kPolicyName = "leveldb.BuiltinBloomFilter2";

// LevelDB's 32-bit hash of n bytes, for every length and byte value. Trailing bytes are
// read as unsigned (LevelDB >= 1.18; some forks sign-extend bytes >= 0x80 and differ).
inline std::uint32_t hash(const char* data, std::size_t n, std::uint32_t seed) noexcept {
  constexpr std::uint32_t kMul = 0xc6a4a793;
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  // LevelDB mixes the length in as (n * kMul) mod 2^32.
  std::uint32_t h = seed ^ (static_cast<std::uint32_t>(n) * kMul);
  for (; n >= 4; n -= 4, p += 4) {
    // Little-endian word on any host; one load on x86-64.
    h += std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
         std::uint32_t{p[3]} << 24;
    h *= kMul;
    h ^= h >> 16;
  }
  switch (n) {
    case 3:
      h += std::uint32_t{p[2]} << 16;
      [[fallthrough]];
    case 2:
      h += std::uint32_t{p[1]} << 8;
      [[fallthrough]];
    case 1:
      h += std::uint32_t{p[0]};
      h *= kMul;
      h ^= h >> 24;
      break;
    default:
      break;
  }
  return h;
}

// The hash LevelDB's Bloom filter uses for a key.
inline std::uint32_t bloom_hash(std::string_view key) noexcept {
  return hash(key.data(), key.size(), kBloomSeed);
}

// Exact h % bits for a 32-bit h without a division per probe (Lemire, Kaser & Kurz,
// "Faster Remainder by Direct Computation", 2019): with M = floor((2^64 - 1) / d) + 1,
// h % d = ((M * h mod 2^64) * d) >> 64 for every 32-bit h and 1 <= d <= 2^32. A division
// costs 20-40 cycles, this two multiplications; M is computed once per filter and key.
// Sizes of 2^32 bits or more use d = 2^32, which gives h itself, as h % bits does there.
class Remainder32 {
 public:
  explicit Remainder32(std::uint64_t bits) noexcept
      : divisor_(bits < kLimit ? bits : kLimit), magic_(~std::uint64_t{0} / divisor_ + 1) {}

  std::uint32_t operator()(std::uint32_t h) const noexcept {
    const std::uint64_t low = magic_ * h;
    return static_cast<std::uint32_t>((static_cast<uint128>(low) * divisor_) >> 64);
  }

 private:
  static constexpr std::uint64_t kLimit = std::uint64_t{1} << 32;
  std::uint64_t divisor_;  // in [1, 2^32]
  std::uint64_t magic_;
};

// Visits the k probe positions of hash h in a bit array of `bits` bits (bits >= 1):
// visit(position) -> bool, false stops. Returns false when a visit returned false.
template <class Visit>
bool probe(std::uint32_t h, std::uint64_t bits, unsigned k, Visit&& visit) {
  const Remainder32 remainder(bits);
  const std::uint32_t delta = std::rotr(h, 17);
  for (unsigned j = 0; j < k; ++j) {
    if (!visit(std::uint64_t{remainder(h)})) return false;
    h += delta;
  }
  return true;
}

// k for `bits_per_key`: floor(bits_per_key * 0.69) clamped to [1, 30].
unsigned probes_for_bits_per_key(int bits_per_key) noexcept;

// Bits of the array LevelDB's writer makes for `keys` keys: max(keys * bits_per_key, 64)
// rounded up to whole bytes. Throws std::invalid_argument for bits_per_key < 0 and
// std::length_error when keys * bits_per_key overflows.
std::size_t filter_bits(std::size_t keys, int bits_per_key);

// Appends to *dst the filter for `count` keys whose bloom_hash values hash_at(i) returns,
// exactly as LevelDB's built-in policy with `bits_per_key` does; leaves the bytes already
// in *dst untouched. The building block of create_filter and FilterBuilder.
template <class HashAt>
void append_filter(std::size_t count, int bits_per_key, std::string* dst, HashAt&& hash_at) {
  if (dst == nullptr) throw std::invalid_argument("segbloom: leveldb_format: dst is null");
  const std::size_t bits = filter_bits(count, bits_per_key);
  const unsigned k = probes_for_bits_per_key(bits_per_key);
  const std::size_t start = dst->size();
  dst->resize(start + bits / 8, '\0');
  dst->push_back(static_cast<char>(k));
  auto* array = reinterpret_cast<unsigned char*>(dst->data() + start);
  for (std::size_t i = 0; i < count; ++i) {
    probe(static_cast<std::uint32_t>(hash_at(i)), bits, k, [array](std::uint64_t position) {
      array[position / 8] = static_cast<unsigned char>(array[position / 8] | (1u << (position % 8)));
      return true;
    });
  }
}

// Appends to *dst exactly the bytes leveldb::NewBloomFilterPolicy(bits_per_key)->
// CreateFilter appends for these keys. bits_per_key: 0 or more (LevelDB's documented
// choice is 10); throws std::invalid_argument when negative or dst is null.
void create_filter(std::span<const std::string_view> keys, int bits_per_key, std::string* dst);

// LevelDB's KeyMayMatch: false means the key was certainly not among the keys the filter
// was made from; true means it probably was. Reads any well-formed blob, whoever wrote it,
// and answers for malformed ones as LevelDB does (see the top of this file).
bool key_may_match(std::string_view key, std::string_view filter) noexcept;

// Accumulates keys one at a time and finishes into a filter blob, for callers who do not
// hold all keys at once. Keeps 4 bytes per key (its hash), not the key.
//
//   segbloom::leveldb_format::FilterBuilder builder(10);
//   for (const auto& key : stream) builder.add(key);
//   std::string blob = builder.finish();   // same bytes as LevelDB's CreateFilter
class FilterBuilder {
 public:
  // Throws std::invalid_argument when bits_per_key < 0.
  explicit FilterBuilder(int bits_per_key = 10);

  void add(std::string_view key) { hashes_.push_back(bloom_hash(key)); }

  // Keys added since construction or the last finish/reset (repeats count each time).
  std::size_t size() const noexcept { return hashes_.size(); }
  int bits_per_key() const noexcept { return bits_per_key_; }

  // Appends the filter of the added keys to *dst and starts over with no keys.
  void finish(std::string* dst);
  std::string finish();

  // Drops the added keys.
  void reset() noexcept { hashes_.clear(); }

 private:
  int bits_per_key_;
  std::vector<std::uint32_t> hashes_;
};

}  // namespace segbloom::leveldb_format
