#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "segbloom/detail/bits.hpp"
#include "segbloom/hashing.hpp"
#include "segbloom/probing.hpp"
#include "segbloom/slice.hpp"
#include "support/stats.hpp"

using namespace segbloom;

namespace user {
struct VideoId {
  std::uint32_t shard;
  std::uint64_t local;
};
// Customisation point: hash a VideoId as its canonical text.
inline std::string segbloom_key(const VideoId& v) {
  return std::to_string(v.shard) + "/" + std::to_string(v.local);
}
}  // namespace user

TEST_CASE("integers hash from their little-endian bytes", "[hashing]") {
  const std::uint64_t value = 0x0102030405060708ull;
  const unsigned char le[8] = {8, 7, 6, 5, 4, 3, 2, 1};
  CHECK(hash_key(value, 0) == xxh3_digest(le, 8, 0));
  const std::uint32_t v32 = 0x0A0B0C0D;
  const unsigned char le32[4] = {0x0D, 0x0C, 0x0B, 0x0A};
  CHECK(hash_key(v32, 9) == xxh3_digest(le32, 4, 9));
  // Signed and unsigned of the same width and bits are the same key.
  CHECK(hash_key(std::int64_t{-1}, 0) == hash_key(~std::uint64_t{0}, 0));
  // Widths differ: uint32_t{7} and uint64_t{7} are different keys.
  CHECK_FALSE(hash_key(std::uint32_t{7}, 0) == hash_key(std::uint64_t{7}, 0));
  enum class Color : std::uint16_t { red = 0x0102 };
  const unsigned char le16[2] = {0x02, 0x01};
  CHECK(hash_key(Color::red, 0) == xxh3_digest(le16, 2, 0));
}

TEST_CASE("string-like keys and byte spans of the same bytes hash alike", "[hashing]") {
  const std::string s = "video:abc";
  const Digest128 d = xxh3_digest(s.data(), s.size(), 3);
  CHECK(hash_key(s, 3) == d);
  CHECK(hash_key(std::string_view(s), 3) == d);
  CHECK(hash_key(s.c_str(), 3) == d);
  CHECK(hash_key("video:abc", 3) == d);
  CHECK(hash_key(std::span<const char>(s.data(), s.size()), 3) == d);
  const std::vector<unsigned char> u(s.begin(), s.end());
  CHECK(hash_key(std::span<const unsigned char>(u), 3) == d);
  CHECK(hash_key(std::as_bytes(std::span<const char>(s.data(), s.size())), 3) == d);
  CHECK(hash_key(std::string_view{}, 0) == xxh3_digest("", 0, 0));
}

TEST_CASE("a char array is a C string within its bounds, never read past them", "[hashing]") {
  // A char array converts to std::string_view through const char*, whose strlen read a
  // char[16] holding 16 non-NUL bytes past its end (ASan: stack-buffer-overflow).
  char full[16];
  std::fill(std::begin(full), std::end(full), 'x');
  CHECK(hash_key(full, 1) == hash_key(std::string(16, 'x'), 1));
  const char short_id[8] = {'a', 'b', '\0', 'c', 'd', '\0', '\0', '\0'};
  CHECK(hash_key(short_id, 1) == hash_key(std::string("ab"), 1));
  CHECK(hash_key("abc", 1) == hash_key(std::string("abc"), 1));  // a literal, without its NUL
  // Every byte, NULs too, where the key is a byte array.
  std::array<char, 8> binary{};
  std::copy(std::begin(short_id), std::end(short_id), binary.begin());
  CHECK(hash_key(binary, 1) == xxh3_digest(short_id, 8, 1));
}

TEST_CASE("the customisation point hashes what segbloom_key returns", "[hashing]") {
  const user::VideoId v{3, 42};
  CHECK(hash_key(v, 0) == hash_key(std::string("3/42"), 0));
  static_assert(Key<user::VideoId>);
  struct NotAKey {};
  static_assert(!Key<NotAKey>);
  static_assert(!Key<double>);
}

namespace {
// hash_keys over batches of every length 0..40 (whole and partial rounds of 8 or 4) must
// give every key XXH3-128 of its bytes, as the library computes it: 4- and 8-byte integers
// and byte arrays, and 16-byte byte arrays, take the AVX-512 path where the CPU has it (the
// AVX2 path where it has only that), other keys the per-key loop. (Integers' bytes are
// their memory on a little-endian host.)
template <class T>
std::uint64_t batch_disagreements(std::mt19937_64& rng, std::uint64_t seed) {
  std::uint64_t differ = 0;
  for (std::size_t n = 0; n <= 40; ++n) {
    std::vector<T> keys(n);
    for (auto& k : keys) {
      if constexpr (std::is_integral_v<T>) {
        k = static_cast<T>(rng());
      } else {
        for (auto& byte : k) byte = static_cast<typename T::value_type>(static_cast<unsigned char>(rng()));
      }
    }
    std::vector<Digest128> out(n + 1);
    out[n] = {0xdead, 0xbeef};  // the slot after the batch must stay untouched
    hash_keys(std::span<const T>(keys), seed, out.data());
    for (std::size_t i = 0; i < n; ++i) {
      const XXH128_hash_t expected = XXH3_128bits_withSeed(&keys[i], sizeof(T), seed);
      differ += !(out[i] == Digest128{expected.low64, expected.high64});
      differ += !(out[i] == hash_key(keys[i], seed));
    }
    differ += !(out[n] == Digest128{0xdead, 0xbeef});
  }
  return differ;
}
// A 64-bit mix (SplitMix64's finaliser): words of made-up arrays, from their index.
std::uint64_t mix64(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

TEST_CASE("batch hashing gives each key's own digest", "[hashing][batch]") {
  if (!detail::xxh3_batch_available()) {
    WARN("no AVX-512DQ/BW here (or SEGBLOOM_SIMD caps it): the 8-key paths are not exercised");
  }
  if (!detail::xxh3_batch_available() && !detail::xxh3_batch_avx2_available()) {
    WARN("no AVX2 either (or SEGBLOOM_SIMD caps it): no batch path is exercised");
  }
  static_assert(std::endian::native == std::endian::little, "the integer check reads their memory");
  std::mt19937_64 rng(11);
  std::uint64_t differ = 0;
  for (int trial = 0; trial < 500; ++trial) {
    // Seeds of every shape: small, 32-bit, full 64-bit (the seed's halves mix differently).
    const std::uint64_t seed = trial % 3 == 0 ? rng() : trial % 3 == 1 ? rng() >> 32 : trial - 2;  // 0, 3, ...
    differ += batch_disagreements<std::uint64_t>(rng, seed);
    differ += batch_disagreements<std::int64_t>(rng, seed);
    differ += batch_disagreements<std::uint32_t>(rng, seed);
    differ += batch_disagreements<std::int32_t>(rng, seed);
    differ += batch_disagreements<std::uint16_t>(rng, seed);
    differ += batch_disagreements<std::array<char, 16>>(rng, seed);
    differ += batch_disagreements<std::array<unsigned char, 16>>(rng, seed);
    differ += batch_disagreements<std::array<std::byte, 16>>(rng, seed);
    differ += batch_disagreements<std::array<char, 8>>(rng, seed);
    differ += batch_disagreements<std::array<std::byte, 4>>(rng, seed);
    differ += batch_disagreements<std::array<char, 12>>(rng, seed);  // key by key
  }
  CHECK(differ == 0);
  // Strings go key by key, with the same result.
  const std::vector<std::string> words{"a", "video:1", "", std::string(100, 'x')};
  std::vector<Digest128> out(words.size());
  hash_keys(std::span<const std::string>(words), 5, out.data());
  for (std::size_t i = 0; i < words.size(); ++i) CHECK(out[i] == hash_key(words[i], 5));
}

// Which keys hash_keys sends to the 8-key kernels: a change here loses their speed, not
// their answers, so the answers above cannot tell.
static_assert(detail::kBatchHashBytes<std::uint64_t> == 8 && detail::kBatchHashBytes<std::int32_t> == 4);
static_assert(detail::kBatchHashBytes<std::array<char, 16>> == 16);
static_assert(detail::kBatchHashBytes<std::array<unsigned char, 16>> == 16);
static_assert(detail::kBatchHashBytes<std::array<std::byte, 16>> == 16);
static_assert(detail::kBatchHashBytes<std::array<char, 8>> == 8);
static_assert(detail::kBatchHashBytes<std::array<std::byte, 4>> == 4);
static_assert(detail::kBatchHashBytes<std::uint16_t> == 0 && detail::kBatchHashBytes<bool> == 0);
static_assert(detail::kBatchHashBytes<std::array<char, 12>> == 0 && detail::kBatchHashBytes<std::string> == 0);
static_assert(detail::kBatchHashBytes<std::span<const char>> == 0);  // 16 bytes, but not the key's own

#ifdef SEGBLOOM_XXH3_BATCH
TEST_CASE("the 4-key AVX2 kernels hash whole rounds and leave the rest", "[hashing][batch]") {
  if (!detail::xxh3_batch_avx2_available()) {
    WARN("no AVX2 here (or SEGBLOOM_SIMD caps it): the kernels are not run");
    return;
  }
  std::mt19937_64 rng(19);
  std::vector<unsigned char> bytes(16 * 23);
  for (auto& b : bytes) b = static_cast<unsigned char>(rng());
  const Digest128 untouched{0x5eed, 0xfeed};
  for (const std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{1}, ~std::uint64_t{0}, rng()}) {
    std::vector<Digest128> sixteens(23, untouched), eights(23, untouched), fours(23, untouched);
    REQUIRE(detail::xxh3_16_many_avx2(bytes.data(), 23, seed, sixteens.data()) == 20);
    REQUIRE(detail::xxh3_4to8_many_avx2<8>(bytes.data(), 23, seed, eights.data()) == 20);
    REQUIRE(detail::xxh3_4to8_many_avx2<4>(bytes.data(), 23, seed, fours.data()) == 20);
    for (std::size_t i = 0; i < 23; ++i) {
      const XXH128_hash_t expected16 = XXH3_128bits_withSeed(bytes.data() + 16 * i, 16, seed);
      const XXH128_hash_t expected8 = XXH3_128bits_withSeed(bytes.data() + 8 * i, 8, seed);
      const XXH128_hash_t expected4 = XXH3_128bits_withSeed(bytes.data() + 4 * i, 4, seed);
      CHECK(sixteens[i] == (i < 20 ? Digest128{expected16.low64, expected16.high64} : untouched));
      CHECK(eights[i] == (i < 20 ? Digest128{expected8.low64, expected8.high64} : untouched));
      CHECK(fours[i] == (i < 20 ? Digest128{expected4.low64, expected4.high64} : untouched));
    }
  }
}

TEST_CASE("the 8-key kernels hash whole rounds and leave the rest", "[hashing][batch]") {
  if (!detail::xxh3_batch_available()) {
    WARN("no AVX-512DQ/BW here (or SEGBLOOM_SIMD caps it): the kernels are not run");
    return;
  }
  std::mt19937_64 rng(17);
  std::vector<unsigned char> bytes(16 * 21);
  for (auto& b : bytes) b = static_cast<unsigned char>(rng());
  const Digest128 untouched{0x5eed, 0xfeed};
  for (const std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{1}, ~std::uint64_t{0}, rng()}) {
    std::vector<Digest128> out(21, untouched);
    REQUIRE(detail::xxh3_16_many_avx512(bytes.data(), 21, seed, out.data()) == 16);
    std::vector<Digest128> eights(21, untouched);
    REQUIRE(detail::xxh3_4to8_many_avx512<8>(bytes.data(), 21, seed, eights.data()) == 16);
    for (std::size_t i = 0; i < 21; ++i) {
      const XXH128_hash_t expected = XXH3_128bits_withSeed(bytes.data() + 16 * i, 16, seed);
      const XXH128_hash_t expected8 = XXH3_128bits_withSeed(bytes.data() + 8 * i, 8, seed);
      CHECK(out[i] == (i < 16 ? Digest128{expected.low64, expected.high64} : untouched));
      CHECK(eights[i] == (i < 16 ? Digest128{expected8.low64, expected8.high64} : untouched));
    }
  }
}
#endif

TEST_CASE("every key size gets XXH3-128 of its bytes", "[hashing]") {
  // 8- and 16-byte keys reach XXH3 by a path of their own (the size as a constant): every
  // size from 0 to 40, at unaligned addresses and several seeds, must give the library's
  // digest, through xxh3_digest and through a string key.
  std::mt19937_64 rng(5);
  std::array<char, 64> bytes{};
  for (auto& b : bytes) b = static_cast<char>(rng());
  for (std::size_t size = 0; size <= 40; ++size) {
    for (const std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{1}, rng()}) {
      const char* data = bytes.data() + 1 + size % 7;
      const XXH128_hash_t expected = XXH3_128bits_withSeed(data, size, seed);
      const Digest128 digest = xxh3_digest(data, size, seed);
      REQUIRE(digest.low == expected.low64);
      REQUIRE(digest.high == expected.high64);
      REQUIRE(hash_key(std::string_view(data, size), seed) == digest);
    }
  }
}

TEST_CASE("seeds give different digests", "[hashing]") {
  CHECK_FALSE(hash_key(std::uint64_t{1}, 0) == hash_key(std::uint64_t{1}, 1));
}

TEST_CASE("multiply-shift range reduction is uniform and in range", "[hashing][probing]") {
  CHECK(reduce_range(0, 1000) == 0);
  CHECK(reduce_range(~0ull, 1000) == 999);
  CHECK(reduce_range(1ull << 63, 1000) == 500);
  // Bucket counts of 10^6 digests over 100 buckets stay within 6 sigma of 10^4.
  std::array<int, 100> buckets{};
  for (std::uint64_t i = 0; i < 1'000'000; ++i) {
    ++buckets[reduce_range(hash_key(i, 0).low, 100)];
  }
  for (int b : buckets) {
    CHECK(b > 10000 - 600);
    CHECK(b < 10000 + 600);
  }
}

TEST_CASE("enhanced double hashing gives k probes, mostly distinct", "[probing]") {
  std::uint64_t repeats = 0;
  for (std::uint64_t key = 0; key < 10000; ++key) {
    std::vector<std::uint64_t> cells;
    DoubleHashingScheme::probe(hash_key(key, 0), 28800, 10, [&](std::uint64_t c) {
      cells.push_back(c);
      return true;
    });
    REQUIRE(cells.size() == 10);
    for (auto c : cells) REQUIRE(c < 28800);
    repeats += 10 - std::set<std::uint64_t>(cells.begin(), cells.end()).size();
  }
  // Expected repeats for random probes: 10000 * C(10,2) / 28800 ~= 15.6; the 1e-9 bound of
  // as many pairs at 1 / 28800 is 58.
  CHECK(static_cast<double>(repeats) <= segbloom::test::binomial_upper(10000 * 45, 1.0 / 28800));
  // probe stops at the first visit that returns false.
  int visits = 0;
  CHECK_FALSE(DoubleHashingScheme::probe(hash_key(1, 0), 1000, 10, [&](std::uint64_t) {
    return ++visits < 3;
  }));
  CHECK(visits == 3);
}

TEST_CASE("probe positions follow the closed form of enhanced double hashing", "[probing]") {
  // Probe i is (a + i b + (i^3 - i) / 6) mod m, a and b the two halves reduced into
  // [0, m): computed here in 128-bit arithmetic, independently of probe()'s recurrence
  // and its two ways of folding (steps that never reach m, and steps that wrap).
  std::uint64_t wrapping = 0, checked = 0;
  for (const std::uint64_t cells : {64ull, 128ull, 192ull, 4096ull, 1'000'000ull, (1ull << 40) + 64}) {
    for (const unsigned k : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 10u, 11u, 14u, 16u, 20u, 30u, 48u, 64u, 128u, 255u}) {
      for (std::uint64_t key = 0; key < 500; ++key) {
        const Digest128 d = hash_key(key * 977 + k, 3);
        const std::uint64_t a = reduce_range(d.low, cells), b = reduce_range(d.high, cells);
        unsigned i = 0;
        DoubleHashingScheme::probe(d, cells, k, [&](std::uint64_t cell) {
          const uint128 expected =
              (static_cast<uint128>(a) + static_cast<uint128>(i) * b +
               (static_cast<uint128>(i) * i * i - i) / 6) %
              cells;
          REQUIRE(cell == static_cast<std::uint64_t>(expected));
          ++i;
          return true;
        });
        REQUIRE(i == k);
        wrapping += b + k * (k - 1) / 2 >= cells;
        ++checked;
      }
    }
  }
  CHECK(wrapping > checked / 10);  // both ways of folding are exercised
  CHECK(wrapping < checked / 2);
}

TEST_CASE("all_set_in answers as the probe sequence does, for every k and size", "[probing]") {
  // Bit arrays at fill about 1/2 (so both answers are common and the first group of 4
  // passes and fails), k from 1 to 255 (below, at and past the first 4), sizes from the
  // smallest slice (64 bits, where positions and steps wrap every few probes) to 10^6 bits.
  std::mt19937_64 rng(2026);
  std::uint64_t found = 0, checked = 0, steps_fold = 0;
  for (const std::uint64_t cells : {64ull, 128ull, 192ull, 4096ull, 1'000'000ull}) {
    std::vector<std::uint64_t> words(cells / 64);
    for (auto& w : words) w = rng();  // about half the bits set
    for (const unsigned k : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u, 11u, 12u, 14u, 16u, 20u, 48u, 128u, 255u}) {
      for (std::uint64_t key = 0; key < 2000; ++key) {
        const Digest128 d = hash_key(key * 131 + k, 7);
        bool expected = true;
        DoubleHashingScheme::probe(d, cells, k, [&](std::uint64_t c) {
          expected = expected && ((words[c >> 6] >> (c & 63)) & 1) != 0;
          return true;
        });
        REQUIRE(DoubleHashingScheme::all_set_in([&words](std::uint64_t w) { return words[w]; }, d, cells, k) ==
                expected);
        found += expected;
        ++checked;
        // Keys whose steps b + i (i + 1) / 2 reach m take all_set_in's general path.
        steps_fold += reduce_range(d.high, cells) + k * (k - 1) / 2 >= cells;
      }
    }
  }
  // Both answers occur: the comparison above is not one-sided. Both of all_set_in's paths
  // (steps that never reach m, and steps that wrap) are taken often.
  CHECK(found > checked / 100);
  CHECK(found < checked / 2);
  CHECK(steps_fold > checked / 10);
  CHECK(steps_fold < checked / 2);
}

TEST_CASE("all_set_many answers as all_set_in does, key by key, at every SIMD level", "[probing][batch]") {
  // The group test (where SEGBLOOM_SIMD allows, detail/double_hashing_simd.hpp tests 8 keys
  // at a time on AVX-512 CPUs, 4 on AVX2 CPUs; all_set_in key by key otherwise; the suite
  // runs at each cap) against all_set_in: every answer, every count, and with only_missing
  // the keys already found left alone. Words come from a reader (word i = a mix of i, ORed
  // to the fill asked), so that sizes up to and past m = 2^32, where the vectors' 32-bit
  // multiply-shift must stop, need no array. Fill 1/2 (most keys drop out at the first
  // exit: after 4 probes in groups of 4, after 5 in groups of 8), 15/16 (most go on, round
  // after round of 4 probes), and all set (every key to its last probe); k from 1 to 255
  // (below 4 the vectors are not used; short and full last rounds after either first exit;
  // at 40 and 255 steps wrap where m is small); groups of 1 to 35 keys (several groups of
  // 8, tails shorter than 4 and than 8). Keys already found: each with probability 1/3, and
  // in one group in 4 whole runs of 4 or 8 keys (a vector group skipped, or half of one).
  const auto mix = [](std::uint64_t x) { return mix64(x); };
  std::mt19937_64 rng(29);
  std::uint64_t checked = 0, found_total = 0, turned_down = 0, steps_wrap = 0, kept = 0, past_end = 0;
  for (const std::uint64_t cells : {64ull, 192ull, 4096ull, 77'888ull, 10'114'112ull, (1ull << 32) - 64,
                                    1ull << 32, (1ull << 40) + 64}) {
    for (const unsigned fill : {0u, 1u, 2u}) {  // a bit clear with probability 1/2, 1/16, never
      const auto word = [cells, fill, mix, &past_end](std::uint64_t i) {
        past_end += i >= cells / 64;
        if (fill == 2) return ~std::uint64_t{0};
        const std::uint64_t w = mix(i + cells);
        return fill == 0 ? w : w | mix(w) | mix(w + 1) | mix(w + 2);
      };
      for (const unsigned k : {1u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u, 11u, 13u, 14u, 16u, 40u, 255u}) {
        for (int group = 0; group < 20; ++group) {
          const std::size_t n = 1 + rng() % 35;
          std::vector<Digest128> digests(n);
          for (auto& d : digests) d = {rng(), rng()};
          for (const bool only_missing : {false, true}) {
            std::unique_ptr<bool[]> found(new bool[n]);
            std::vector<bool> before(n);
            for (std::size_t i = 0; i < n; ++i) found[i] = before[i] = only_missing && rng() % 3 == 0;
            if (only_missing && group % 4 == 0) {  // keys 0-7 found, or keys 4-7 (a vector's upper half)
              for (std::size_t i = group % 8 == 0 ? 0 : 4; i < std::min<std::size_t>(n, 8); ++i) found[i] = before[i] = true;
            }
            if (!only_missing) std::fill(found.get(), found.get() + n, true);  // every answer must be written
            const std::size_t hits =
                DoubleHashingScheme::all_set_many(word, digests.data(), n, cells, k, found.get(), only_missing);
            std::size_t expected_hits = 0;
            for (std::size_t i = 0; i < n; ++i) {
              if (before[i]) {
                REQUIRE(found[i]);  // a key a newer slice holds stays found, and is not counted
                ++kept;
                continue;
              }
              const bool alone = DoubleHashingScheme::all_set_in(word, digests[i], cells, k);
              REQUIRE(found[i] == alone);
              expected_hits += alone;
              found_total += alone;
              turned_down += !alone;
              steps_wrap += reduce_range(digests[i].high, cells) + k * (k - 1) / 2 >= cells;
              ++checked;
            }
            REQUIRE(hits == expected_hits);
          }
        }
      }
    }
  }
  CHECK(past_end == 0);  // no word read past the array
  // The inputs cover what they are meant to: both answers, keys already found, and keys
  // whose steps wrap, each often.
  CHECK(found_total > checked / 10);
  CHECK(turned_down > checked / 4);
  CHECK(kept > 1000);
  CHECK(steps_wrap > 1000);
}

TEST_CASE("all_set_many and all_set_in on packed 4-bit counters, at every SIMD level", "[probing][batch]") {
  // kCellBits = 4 (a counting filter's cells: counter c in bits 4 (c % 16) and up of word
  // c / 16; a probe is set when its counter is not 0): all_set_in<4> against the counters
  // read one by one along probe(), and all_set_many<4> (8 or 4 keys at a time in vectors
  // where SEGBLOOM_SIMD allows) against all_set_in<4>. Counters zero with probability 1/2,
  // about 1/16, or never (values 1 to 15, so that a test of one bit of the four fails);
  // m from 64 (steps wrap) to past 2^32 (no vectors).
  const auto mix = [](std::uint64_t x) { return mix64(x); };
  std::mt19937_64 rng(31);
  std::uint64_t checked = 0, found_total = 0, past_end = 0;
  for (const std::uint64_t cells : {64ull, 208ull, 77'888ull, 10'114'112ull, (1ull << 32) + 64}) {
    for (const unsigned fill : {0u, 1u, 2u}) {
      const auto word = [cells, fill, mix, &past_end](std::uint64_t i) {
        past_end += i >= cells / 16;
        const std::uint64_t w = mix(i * 3 + cells), zero = mix(w);
        std::uint64_t counters = 0;
        for (unsigned j = 0; j < 16; ++j) {
          std::uint64_t c = (w >> (4 * j)) & 15;
          if (fill == 0 && ((zero >> j) & 1) != 0) c = 0;  // zero with probability 1/2
          if (fill == 2 && c == 0) c = 1 + j % 15;         // never zero
          counters |= c << (4 * j);
        }
        return counters;
      };
      for (const unsigned k : {1u, 4u, 5u, 7u, 8u, 9u, 13u, 40u}) {
        for (int group = 0; group < 12; ++group) {
          const std::size_t n = 1 + rng() % 35;
          std::vector<Digest128> digests(n);
          for (auto& d : digests) d = {rng(), rng()};
          std::unique_ptr<bool[]> found(new bool[n]);
          std::fill(found.get(), found.get() + n, true);
          const std::size_t hits = DoubleHashingScheme::all_set_many<4>(word, digests.data(), n, cells, k, found.get(), false);
          std::size_t expected_hits = 0;
          for (std::size_t i = 0; i < n; ++i) {
            bool expected = true;
            DoubleHashingScheme::probe(digests[i], cells, k, [&](std::uint64_t c) {
              expected = expected && ((word(c >> 4) >> (4 * (c & 15))) & 15) != 0;
              return true;
            });
            REQUIRE(DoubleHashingScheme::all_set_in<4>(word, digests[i], cells, k) == expected);
            REQUIRE(found[i] == expected);
            expected_hits += expected;
            found_total += expected;
            ++checked;
          }
          REQUIRE(hits == expected_hits);
        }
      }
    }
  }
  CHECK(past_end == 0);
  CHECK(found_total > checked / 10);
  CHECK(found_total < checked * 3 / 4);
}

TEST_CASE("set_many sets the bits and gives the results of one insert after another, at every SIMD level",
          "[probing][batch]") {
  // The group insert (where SEGBLOOM_SIMD allows, positions 8 keys at a time on AVX-512
  // CPUs; key by key otherwise; the suite runs at each cap) against probe() setting each
  // key's bits in turn in a second array: the same words, results and count. Groups of 1 to
  // 35 keys (several groups of 8, tails); keys written already, keys repeated within a group
  // (the later copy must report no change, as the earlier one set its bits), keys not to be
  // written; k from 1 to 40 (every k of an instance of its own, 1 to 16, then 17 and 32 on
  // the vectors' run-time k, 33 and 40 past their 32 probes); small m, where many
  // keys' steps reach m (their lanes go key by key), up to 10^7 bits; every other group
  // with the next keys' lines prefetched.
  std::mt19937_64 rng(32);
  std::uint64_t checked = 0, changed_total = 0, repeats = 0, skipped = 0, steps_wrap = 0;
  unsigned in_vectors = 0;  // (m, k) cases that took the vectors
  for (const std::uint64_t cells : {64ull, 192ull, 4096ull, 77'888ull, 10'114'112ull}) {
    for (const unsigned k : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u, 11u, 12u, 13u, 14u, 15u, 16u, 17u, 32u, 33u, 40u}) {
      in_vectors += DoubleHashingScheme::set_many_in_vectors(cells, k);
      std::vector<std::uint64_t> grouped(cells / 64), single(cells / 64);
      std::vector<Digest128> earlier;
      for (int group = 0; group < 40; ++group) {
        const std::size_t n = 1 + rng() % 35;
        std::vector<Digest128> digests(n);
        std::unique_ptr<bool[]> write(new bool[n]), changed(new bool[n]);
        for (std::size_t i = 0; i < n; ++i) {
          const unsigned kind = rng() % 8;
          digests[i] = kind == 0 && i > 0                 ? digests[rng() % i]  // repeated in the group
                       : kind == 1 && !earlier.empty() ? earlier[rng() % earlier.size()]
                                                       : Digest128{rng(), rng()};
          write[i] = rng() % 5 != 0;
          changed[i] = !write[i];  // every result must be written
        }
        const std::uint64_t total =
            DoubleHashingScheme::set_many(grouped.data(), digests.data(), n, cells, k, write.get(), changed.get(),
                                          group % 2 == 0);  // with the lines prefetched or not: the same
        std::uint64_t expected_total = 0;
        for (std::size_t i = 0; i < n; ++i) {
          std::uint64_t newly = 0;
          if (write[i]) {
            DoubleHashingScheme::probe(digests[i], cells, k, [&](std::uint64_t c) {
              detail::set_bit(single[c >> 6], c, newly);
              return true;
            });
          }
          REQUIRE(changed[i] == (newly != 0));
          expected_total += newly;
          changed_total += newly != 0;
          repeats += write[i] && newly == 0;
          skipped += !write[i];
          steps_wrap += reduce_range(digests[i].high, cells) + k * (k - 1) / 2 >= cells;
          ++checked;
          earlier.push_back(digests[i]);
        }
        REQUIRE(total == expected_total);
        REQUIRE(grouped == single);
      }
    }
  }
  // Each case occurs often: keys that set bits, written keys that set none, keys left out,
  // and keys whose steps reach m.
  CHECK(changed_total > checked / 4);
  CHECK(repeats > checked / 20);
  CHECK(skipped > checked / 10);
  CHECK(steps_wrap > 1000);
  // Where the CPU and SEGBLOOM_SIMD allow AVX-512, every m and k up to 32 took the vectors
  // (the instances for k = 1-16 and the one for k at run time); elsewhere none did.
  CHECK(in_vectors == (detail::avx512_allowed() ? 5u * 18u : 0u));
}

TEST_CASE("a classic slice's insert sets the bits probe() gives, for every k", "[probing][filter]") {
  // Slice::add_if_new on classic bits takes an instance of the probe loop for its k (1-16,
  // unrolled; detail::with_fixed_probes) or the loop (k > 16): against probe() key by key
  // into a second array, the same words and results, including keys whose steps reach m
  // (small m) and keys inserted again.
  std::mt19937_64 rng(41);
  std::uint64_t checked = 0, repeats = 0, steps_wrap = 0;
  for (const std::uint64_t cells : {64ull, 192ull, 4096ull, 77'888ull}) {
    for (unsigned k = 1; k <= 20; ++k) {
      SliceShape shape;
      shape.layout = Layout::classic;
      shape.capacity = 1000;
      shape.false_positive_rate = 0.01;
      shape.probes = k;
      shape.bits = cells;
      Slice<BitCells, DoubleHashingScheme> slice(shape);
      std::vector<std::uint64_t> single(cells / 64);
      std::vector<Digest128> earlier;
      for (int i = 0; i < 300; ++i) {
        const Digest128 d = i % 6 == 5 ? earlier[rng() % earlier.size()] : Digest128{rng(), rng()};
        std::uint64_t newly = 0;
        DoubleHashingScheme::probe(d, cells, k, [&](std::uint64_t c) {
          detail::set_bit(single[c >> 6], c, newly);
          return true;
        });
        REQUIRE(slice.add_if_new(d) == (newly != 0));
        repeats += newly == 0;
        steps_wrap += reduce_range(d.high, cells) + k * (k - 1) / 2 >= cells;
        ++checked;
        earlier.push_back(d);
      }
      const auto words = slice.cells().words();
      REQUIRE(std::vector<std::uint64_t>(words.begin(), words.end()) == single);
    }
  }
  CHECK(repeats > checked / 10);
  CHECK(steps_wrap > 1000);
}

namespace {
// A scheme with the documented members only (probing.hpp): no probe<kFixedProbes>.
struct PlainScheme {
  using Digest = Digest128;
  static constexpr unsigned kMaxProbes = DoubleHashingScheme::kMaxProbes;
  template <Key K>
  static Digest hash(const K& key, std::uint64_t seed) {
    return DoubleHashingScheme::hash(key, seed);
  }
  template <class Visit>
  static bool probe(const Digest& d, std::uint64_t cells, unsigned k, Visit&& visit) {
    return DoubleHashingScheme::probe(d, cells, k, visit);
  }
};
}  // namespace

TEST_CASE("a slice over a scheme without instances by k inserts through its probe()", "[probing][filter]") {
  // Slice::mark_cells takes the instances only where the scheme has them; a user's scheme
  // with the documented probe() compiles and sets the same bits.
  SliceShape shape;
  shape.capacity = 1000;
  shape.false_positive_rate = 0.01;
  shape.probes = 7;
  shape.bits = 77'888;
  Slice<BitCells, PlainScheme> plain(shape);
  Slice<BitCells, DoubleHashingScheme> instanced(shape);
  std::mt19937_64 rng(43);
  for (int i = 0; i < 1000; ++i) {
    const Digest128 d{rng(), rng()};
    REQUIRE(plain.add_if_new(d) == instanced.add_if_new(d));
  }
  const auto a = plain.cells().words(), b = instanced.cells().words();
  CHECK(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  CHECK(plain.cells().set_count() > 3000);
}

TEST_CASE("the probe loop's instances by k visit probe()'s positions and stop where it stops", "[probing]") {
  // with_fixed_probes picks instance k for k = 1-16 and the run-time one (0) otherwise; and
  // probe<K> visits the positions probe<0> visits, in order, stopping at the same probe when
  // visit says so (Slice inserts never stop early; lookups might).
  for (unsigned k = 0; k <= 20; ++k) {
    CHECK(detail::with_fixed_probes(k, [](auto fixed) { return decltype(fixed)::value; }) ==
          (k >= 1 && k <= 16 ? k : 0u));
  }
  std::mt19937_64 rng(42);
  std::uint64_t compared = 0;
  const auto check_k = [&](auto fixed) {
    constexpr unsigned K = decltype(fixed)::value;
    for (const std::uint64_t cells : {64ull, 4096ull, 10'114'112ull}) {
      for (int i = 0; i < 200; ++i) {
        const Digest128 d{rng(), rng()};
        for (unsigned stop = 0; stop <= K; ++stop) {  // visit returns false at probe `stop` (K: never)
          std::vector<std::uint64_t> expected, got;
          const bool expected_all = DoubleHashingScheme::probe(d, cells, K, [&](std::uint64_t c) {
            expected.push_back(c);
            return expected.size() != stop + 1;
          });
          const bool got_all = DoubleHashingScheme::probe<K>(d, cells, K, [&](std::uint64_t c) {
            got.push_back(c);
            return got.size() != stop + 1;
          });
          REQUIRE(got == expected);
          REQUIRE(got_all == expected_all);
          REQUIRE(got_all == (stop == K));
          ++compared;
        }
      }
    }
    return 0;
  };
  [&]<unsigned... K>(std::integer_sequence<unsigned, K...>) {
    (check_k(std::integral_constant<unsigned, K + 1>{}), ...);
  }(std::make_integer_sequence<unsigned, 16>{});
  CHECK(compared == 3 * 200 * (16 * 17 / 2 + 16));
}

TEST_CASE("mark_many asks for the lines of the cells it marks, and only with prefetch", "[probing][batch]") {
  // line_of(p) is called for each probe of each key of the whole groups of 8 that the
  // vectors take (where set_many_in_vectors), only when the caller asks for prefetches, and
  // only with positions of the slice's cells that are probes of those keys (or 0, the
  // positions of a key whose steps reach m, which one() marks instead). The cells marked are
  // the same either way. Small slices with k = 32 make many keys' steps reach m.
  std::mt19937_64 rng(36);
  std::uint64_t asked_total = 0;
  for (const std::uint64_t cells : {4096ull, 77'888ull, 10'114'112ull}) {
    for (const unsigned k : {4u, 7u, 13u, 32u}) {
      for (const std::size_t n : {std::size_t{5}, std::size_t{16}, std::size_t{35}}) {
        std::vector<Digest128> digests(n);
        for (Digest128& d : digests) d = {rng(), rng()};
        std::unique_ptr<bool[]> write(new bool[n]), changed(new bool[n]);
        std::set<std::uint64_t> probes;  // every probe of the keys the vectors mark
        std::uint64_t vector_keys = 0;
        for (std::size_t i = 0; i < n; ++i) {
          write[i] = rng() % 6 != 0;
          const bool wraps = reduce_range(digests[i].high, cells) + k * (k - 1) / 2 >= cells;
          if (i >= n / 8 * 8) continue;
          ++vector_keys;
          if (wraps) probes.insert(0);  // its positions after the first
          DoubleHashingScheme::probe(digests[i], cells, k, [&](std::uint64_t c) { return probes.insert(c), true; });
        }
        std::vector<std::uint64_t> marked[2];
        for (const bool prefetch : {false, true}) {
          std::vector<std::uint64_t>& cells_marked = marked[prefetch];
          std::uint64_t asked = 0, outside = 0, not_a_probe = 0;
          std::vector<char> line(1);
          const auto mark_key = [&](auto&& positions) {
            positions([&](std::uint64_t c) { cells_marked.push_back(c); });
            return std::uint64_t{1};
          };
          const auto line_of = [&](std::uint64_t c) {
            ++asked;
            outside += c >= cells;
            not_a_probe += probes.count(c) == 0;
            return static_cast<const void*>(line.data());
          };
          DoubleHashingScheme::mark_many(digests.data(), n, cells, k, write.get(), changed.get(), mark_key, line_of,
                                         prefetch);
          INFO("cells " << cells << ", k " << k << ", n " << n << ", prefetch " << prefetch);
          CHECK(outside == 0);
          CHECK(not_a_probe == 0);
          if (!prefetch || !DoubleHashingScheme::set_many_in_vectors(cells, k)) {
            CHECK(asked == 0);
          } else {
            CHECK(asked == vector_keys * k);
          }
          asked_total += asked;
        }
        CHECK(marked[0] == marked[1]);
      }
    }
  }
#ifdef SEGBLOOM_DOUBLE_HASHING_SIMD
  if (detail::avx512_allowed()) CHECK(asked_total > 0);
#endif
}

TEST_CASE("count_bit and set_bit read and set bit i % 64, and count", "[probing][bits]") {
  // The x86-64 forms are BT + ADC and BTS + SBB; compare them with shifts, for every
  // bit number (also past 63, which wrap: probe positions are passed whole) and both
  // values of the bit.
  std::mt19937_64 rng(64);
  std::uint64_t set_seen = 0, clear_seen = 0;
  for (int round = 0; round < 200; ++round) {
    const std::uint64_t word = rng();
    for (std::uint64_t i = 0; i < 256; ++i) {
      const std::uint64_t bit = (word >> (i % 64)) & 1;
      unsigned count = 5;
      detail::count_bit(count, word, i);
      REQUIRE(count == 5 + bit);

      std::uint64_t w = word, clear_count = 7;
      detail::set_bit(w, i, clear_count);
      REQUIRE(w == (word | std::uint64_t{1} << (i % 64)));
      REQUIRE(clear_count == 7 + (1 - bit));
      (bit != 0 ? set_seen : clear_seen) += 1;
    }
  }
  CHECK(set_seen > 20000);  // both values of the bit were exercised, about half each
  CHECK(clear_seen > 20000);
}
