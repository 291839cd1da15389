// segbloom: a segmented filter whose every slice is a valid LevelDB Bloom filter.
//
//   segbloom::Options opts;
//   opts.capacity = 100000;
//   opts.false_positive_rate = 0.01;
//   segbloom::LevelDbCompatibleFilter seen(opts);
//   seen.insert(std::string_view{"video:abc"});
//   std::string blob = seen.slice_blob(0);  // store it; LevelDB's policy reads it:
//   // leveldb::NewBloomFilterPolicy(10)->KeyMayMatch("video:abc", blob) == true
//
// Same segmented behaviour and options as ScalableBloomFilter (growing or window mode,
// half-full trigger, test-and-set insert; see segmented_filter.hpp), but keys are hashed
// and probed as LevelDB's built-in filter does (leveldb_format.hpp): one 32-bit hash with
// seed 0xbc9f1d34, positions h % bits advanced by rotr(h, 17). LevelDB's reader takes k
// from the blob's last byte, so any k in [1, 30] and any size are read correctly.
//
// Sizing. LevelDB's probes are weaker than independent ones: all k positions derive from
// one 32-bit h, and at the half-full trigger the measured rate exceeds the model fill^k
// by 1.1x on 2^17-bit slices and by up to 2.5x from 2^22 bits on (k 7 to 14, 2 * 10^6
// absent keys each; /tmp experiment, see the README section). So a slice takes
// k_i = ceil(-log2 p_i) + 2 probes, two more than ScalableBloomFilter's, which puts its
// rate at the trigger at <= 2.5 / 4 p_i = 0.63 p_i, and bits sized for that k as usual
// (capacity_bits): about 20 % more memory than ScalableBloomFilter at k ~ 10.
// estimated_false_positive_rate() still reports the model fill^k (plus the 32-bit hash's
// floor, below), so it reads low by the factor above; merged() refuses a union that would take a slice past its full point
// (merge.hpp), where the factor was never measured.
//
// Keys: a string key's bytes are what LevelDB hashes, so blobs answer LevelDB's
// KeyMayMatch for the same strings. Integer keys are hashed from their little-endian
// bytes (hashing.hpp); LevelDB must then be asked with those 8 (4, 2, 1) bytes.
//
// Limits, and what this filter does about them:
//  - 32-bit hash: an absent key shares its hash, hence all its probes, with one of n held
//    keys with probability n / 2^32. With the probe margin above, the filter's rate is
//    at most 0.63 p + N / 2^32 for N items held: within the target p while
//    N <= 0.37 p 2^32 (p = 1 %: 16 million items; p = 0.1 %: 1.6 million), and degrading
//    slowly beyond (+2.3e-4 per million items). For more items at small p, use
//    ScalableBloomFilter (128-bit digests).
//  - Options::seed is not used: the format fixes the hash and its seed. Two filters with
//    different seeds still compare unequal (the options differ). Options::layout must be
//    classic.
//  - k <= 30 (the format stores larger values as "match everything"). A slice that needs
//    k_i > 30 (p_i < 2^-28 ~ 3.7e-9) could not keep its rate, so it is refused: the
//    constructor throws std::invalid_argument when the first slice needs it, and in
//    growing mode an insert that would open such a slice throws std::length_error, as at
//    the 64-slice limit. (With p = 0.1 %, tightening 0.8 that is slice 49: out of reach
//    unless growth is close to 1.)
//  - A slice has at most 2^32 bits (512 MiB): LevelDB's positions are 32-bit, so a larger
//    slice would never reach its half-full trigger. Refused the same way. With default
//    options (capacity 1000, growth 2) that is slice 18, after about 260 million items.
//
// The whole state lives in SegmentedFilter (options, slices, rotations): copy, move,
// equality and generic serialization work as for every other kind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "segbloom/bit_cells.hpp"
#include "segbloom/hashing.hpp"
#include "segbloom/leveldb_format.hpp"
#include "segbloom/segmented_filter.hpp"
#include "segbloom/sizing.hpp"

namespace segbloom {

// LevelDB's hashing and probing as a probing scheme (see probing.hpp for the contract).
struct LevelDbScheme {
  using Digest = std::uint32_t;
  static constexpr unsigned kMaxProbes = leveldb_format::kMaxProbes;
  // Largest slice: LevelDB's positions are 32-bit.
  static constexpr std::uint64_t kMaxBits = std::uint64_t{1} << 32;
  // Its slices are full at half their bits, whatever the pattern floor (sizing.hpp): their
  // k + 2 probes leave (1/2)^k a quarter of p_i, and their size must stay the one
  // capacity_bits gives, which LevelDB blobs stored before carry.
  static constexpr bool kFullAtHalf = true;

  // `seed` is ignored: LevelDB's format always hashes with kBloomSeed.
  template <Key K>
  static Digest hash(const K& key, std::uint64_t /*seed*/) {
    return with_key_bytes(key, [](const void* data, std::size_t size) {
      return leveldb_format::hash(static_cast<const char*>(data), size, leveldb_format::kBloomSeed);
    });
  }

  template <class Visit>
  static bool probe(const Digest& digest, std::uint64_t cells, unsigned k, Visit&& visit) {
    return leveldb_format::probe(digest, cells, k, static_cast<Visit&&>(visit));
  }

  // Probes LevelDB's probing needs beyond ceil(-log2 p_i) to keep p_i (see above).
  static constexpr unsigned kExtraProbes = 2;

  // fill^k reads low for this probing, by a factor measured only up to the fill a slice's
  // own inserts reach (above). So merge refuses a union that takes a slice past it: there
  // the estimate bounds nothing, and the probes' margin is not room (merge.hpp).
  static constexpr bool kEstimateReadsLow = true;

  // Every probe derives from the key's 32-bit hash: the estimate adds the floor n / 2^32
  // (detail::digest_floor_excess in sizing.hpp; "Limits" above).
  static constexpr unsigned kDigestBits = 32;

  // The shape of a slice of this scheme: k_i = ceil(-log2 p_i) + kExtraProbes and bits
  // sized for it. Throws std::length_error for a slice the format cannot hold at its
  // rate: one that needs more than 30 probes or more than 2^32 bits.
  static SliceShape adjust_shape(const SliceShape& shape);

  // Throws std::length_error for a shape the format cannot hold: layout not classic,
  // k outside [1, 30] or more than 2^32 bits. Used on stored shapes (deserialization).
  static void check_shape(const SliceShape& shape);
};

class LevelDbCompatibleFilter : public SegmentedFilter<BitCells, LevelDbScheme> {
 public:
  // Also brings in the from_parts constructor (segmented_filter.hpp).
  using SegmentedFilter::SegmentedFilter;
  using SegmentedFilter::insert;         // test-and-set (segmented_filter.hpp)
  using SegmentedFilter::insert_digest;
  using SegmentedFilter::insert_many;

  // Throws std::invalid_argument when `options` are out of range (options.hpp) or their
  // first slice is beyond the format's limits (k > 30 or more than 2^32 bits). `clock`
  // times slices when options.slice_lifetime > 0 (segmented_filter.hpp).
  explicit LevelDbCompatibleFilter(const Options& options = {}, const Clock& clock = system_clock());

  // Slice i (0 = oldest) as a LevelDB filter blob: its bits / 8 bytes, bit j in bit j % 8
  // of byte j / 8 on any host, then the probe count. leveldb::FilterPolicy::KeyMayMatch
  // (and leveldb_format::key_may_match) answers true for every key in the slice.
  // Throws std::out_of_range when i >= slice_count().
  std::string slice_blob(std::size_t i) const;

  // Every slice's blob, oldest first.
  std::vector<std::string> slice_blobs() const;

  // Rebuilds a filter from the options it was made with and its blobs, oldest first
  // (slice i of a growing filter has the shape of slice i; window slices all have one
  // shape). `items`, when given, holds each slice's item count (one per blob); when
  // empty the counts are estimated from each slice's fill, n ~ -(m / k) ln(1 - fill)
  // (at least set bits / k), and size() is then approximate (lookups and growth do not
  // depend on it). `rotations` restores the window-mode counter. Throws
  // std::invalid_argument naming the first problem: invalid options, options with a slice
  // lifetime (blobs hold no open times: store a timed filter with to_bytes), no blobs or
  // too many, rotations for a filter that cannot have rotated (growing mode, or fewer than
  // max_slices blobs), a blob whose length or probe count is not what the options give that
  // slice, an items count of the wrong length, or an item count above 2^56 or below what
  // its blob's set bits need (set / k, rounded up): the checks from_bytes makes, so that
  // to_bytes of the result loads.
  static LevelDbCompatibleFilter from_blobs(const Options& options,
                                            std::span<const std::string_view> blobs,
                                            std::span<const std::uint64_t> items = {},
                                            std::uint64_t rotations = 0);
  static LevelDbCompatibleFilter from_blobs(const Options& options,
                                            std::span<const std::string> blobs,
                                            std::span<const std::uint64_t> items = {},
                                            std::uint64_t rotations = 0);

  // Item counts of every slice, oldest first: with slice_blobs(), all from_blobs needs
  // (without a slice lifetime).
  std::vector<std::uint64_t> slice_items() const;
};

}  // namespace segbloom
