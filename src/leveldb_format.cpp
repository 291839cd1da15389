#include "segbloom/leveldb_format.hpp"

#include <limits>
#include <string>

namespace segbloom::leveldb_format {
namespace {

void check_bits_per_key(int bits_per_key) {
  if (bits_per_key < 0) {
    throw std::invalid_argument("segbloom: leveldb_format: bits_per_key = " +
                                std::to_string(bits_per_key) + " is negative; allowed: 0 or more");
  }
}

}  // namespace

unsigned probes_for_bits_per_key(int bits_per_key) noexcept {
  // LevelDB rounds 0.69 ~ ln 2 times bits_per_key down, to save a little probing.
  const double k = bits_per_key * 0.69;
  if (!(k >= 1)) return 1;
  if (k >= kMaxProbes) return kMaxProbes;
  return static_cast<unsigned>(k);
}

std::size_t filter_bits(std::size_t keys, int bits_per_key) {
  check_bits_per_key(bits_per_key);
  const auto per_key = static_cast<std::size_t>(bits_per_key);
  // Leave room for rounding up to whole bytes below.
  if (per_key != 0 && keys > (std::numeric_limits<std::size_t>::max() - 7) / per_key) {
    throw std::length_error("segbloom: leveldb_format: " + std::to_string(keys) + " keys at " +
                            std::to_string(bits_per_key) + " bits per key overflow the filter size");
  }
  std::size_t bits = keys * per_key;
  if (bits < kMinBits) bits = kMinBits;
  return (bits + 7) / 8 * 8;
}

void create_filter(std::span<const std::string_view> keys, int bits_per_key, std::string* dst) {
  append_filter(keys.size(), bits_per_key, dst,
                [keys](std::size_t i) { return bloom_hash(keys[i]); });
}

bool key_may_match(std::string_view key, std::string_view filter) noexcept {
  if (filter.size() < 2) return false;
  const auto* array = reinterpret_cast<const unsigned char*>(filter.data());
  const unsigned k = array[filter.size() - 1];
  if (k > kMaxProbes) return true;  // reserved encodings: LevelDB treats them as a match
  const std::uint64_t bits = static_cast<std::uint64_t>(filter.size() - 1) * 8;
  return probe(bloom_hash(key), bits, k, [array](std::uint64_t position) {
    return ((array[position / 8] >> (position % 8)) & 1u) != 0;
  });
}

FilterBuilder::FilterBuilder(int bits_per_key) : bits_per_key_(bits_per_key) {
  check_bits_per_key(bits_per_key);
}

void FilterBuilder::finish(std::string* dst) {
  append_filter(hashes_.size(), bits_per_key_, dst, [this](std::size_t i) { return hashes_[i]; });
  hashes_.clear();
}

std::string FilterBuilder::finish() {
  std::string blob;
  finish(&blob);
  return blob;
}

}  // namespace segbloom::leveldb_format
