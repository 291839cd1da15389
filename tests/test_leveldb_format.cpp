// LevelDB's filter format, cross-checked byte for byte against the real LevelDB
// (Debian's libleveldb-dev): hash, create_filter, key_may_match, FilterBuilder, and the
// policy adapter.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>

#include "segbloom/leveldb_format.hpp"
#include "segbloom/leveldb_policy.hpp"
#include "support/stats.hpp"

namespace lf = segbloom::leveldb_format;

namespace {

std::unique_ptr<const leveldb::FilterPolicy> leveldb_policy(int bits_per_key) {
  return std::unique_ptr<const leveldb::FilterPolicy>(leveldb::NewBloomFilterPolicy(bits_per_key));
}

// Keys of 0 to 100 arbitrary bytes (every byte value, including >= 0x80).
std::vector<std::string> random_keys(std::size_t count, std::mt19937_64& rng,
                                     std::size_t max_length = 100) {
  std::uniform_int_distribution<std::size_t> length(0, max_length);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::string> keys(count);
  for (auto& key : keys) {
    key.resize(length(rng));
    for (auto& c : key) c = static_cast<char>(byte(rng));
  }
  return keys;
}

std::string leveldb_create(const leveldb::FilterPolicy& policy, const std::vector<std::string>& keys,
                           std::string prefix = {}) {
  std::vector<leveldb::Slice> slices(keys.begin(), keys.end());
  policy.CreateFilter(slices.data(), static_cast<int>(slices.size()), &prefix);
  return prefix;
}

std::string segbloom_create(const std::vector<std::string>& keys, int bits_per_key,
                            std::string prefix = {}) {
  std::vector<std::string_view> views(keys.begin(), keys.end());
  lf::create_filter(views, bits_per_key, &prefix);
  return prefix;
}

bool leveldb_match(const leveldb::FilterPolicy& policy, std::string_view key,
                   std::string_view filter) {
  return policy.KeyMayMatch(leveldb::Slice(key.data(), key.size()),
                            leveldb::Slice(filter.data(), filter.size()));
}

// One cross-check: same bytes (after a prefix that must stay untouched), and the same
// answers as LevelDB for every inserted key and for `absent` keys never inserted.
void cross_check(std::size_t size, int bits_per_key, std::mt19937_64& rng, std::size_t absent) {
  INFO("size " << size << ", bits_per_key " << bits_per_key);
  const auto policy = leveldb_policy(bits_per_key);
  const std::vector<std::string> keys = random_keys(size, rng);
  const std::string prefix = size % 2 ? std::string("\x01prefix\xff", 8) : std::string();
  const std::string theirs = leveldb_create(*policy, keys, prefix);
  const std::string ours = segbloom_create(keys, bits_per_key, prefix);
  REQUIRE(ours == theirs);
  const std::string_view filter = std::string_view(ours).substr(prefix.size());
  for (const auto& key : keys) {
    REQUIRE(lf::key_may_match(key, filter));
    REQUIRE(leveldb_match(*policy, key, filter));
  }
  std::size_t hits = 0;
  for (const auto& key : random_keys(absent, rng)) {
    const bool mine = lf::key_may_match(key, filter);
    REQUIRE(mine == leveldb_match(*policy, key, filter));
    hits += mine;
  }
  // A filter with at least one bit per key rejects some absent keys: at 1 bit per key
  // (k = 1) about e^-1 = 37 % of them. (At 0 bits per key, 64 bits fill up.)
  if (absent > 0 && size > 0 && bits_per_key > 0) CHECK(hits < absent);
}

// LevelDB's own length schedule: 1..10, 20..100, 200..1000, 2000..10000.
std::vector<std::size_t> length_schedule() {
  std::vector<std::size_t> lengths;
  for (std::size_t step = 1; step <= 1000; step *= 10) {
    for (std::size_t n = step; n <= step * 10; n += step) {
      if (lengths.empty() || lengths.back() != n) lengths.push_back(n);
    }
  }
  return lengths;
}

}  // namespace

TEST_CASE("hash matches LevelDB's published test vectors", "[leveldb][format]") {
  const auto h = [](std::initializer_list<unsigned char> bytes) {
    std::string s;
    for (auto b : bytes) s.push_back(static_cast<char>(b));
    return lf::hash(s.data(), s.size(), 0xbc9f1d34);
  };
  CHECK(lf::hash(nullptr, 0, 0xbc9f1d34) == 0xbc9f1d34u);
  CHECK(h({0x62}) == 0xef1345c4u);
  CHECK(h({0xc3, 0x97}) == 0x5b663814u);
  CHECK(h({0xe2, 0x99, 0xa5}) == 0x323c078fu);
  CHECK(h({0xe1, 0x80, 0xb9, 0x32}) == 0xed21633au);
  // A longer input from LevelDB's hash_test: 48 bytes, another seed.
  const unsigned char data5[48] = {
      0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
      0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  };
  CHECK(lf::hash(reinterpret_cast<const char*>(data5), sizeof data5, 0x12345678) == 0xf333dabbu);
  CHECK(lf::bloom_hash("") == 0xbc9f1d34u);
}

TEST_CASE("hash agrees with LevelDB for every length 0-64 and arbitrary bytes",
          "[leveldb][format]") {
  // LevelDB does not export its hash; its filters expose it. One key repeated 1000 times
  // at 40 bits per key gives 40 000 bits and 27 probes: the filter pins h mod 40 000 and
  // the whole probe walk, so a different hash gives different bytes.
  std::mt19937_64 rng(1);
  const auto policy = leveldb_policy(40);
  for (std::size_t length = 0; length <= 64; ++length) {
    for (int round = 0; round < 40; ++round) {
      std::string exact(length, '\0');
      for (auto& c : exact) c = static_cast<char>(rng() & 0xff);
      if (round == 0) std::memset(exact.data(), 0xff, length);  // every byte >= 0x80
      const std::vector<std::string> keys(1000, exact);
      INFO("length " << length << ", round " << round);
      REQUIRE(segbloom_create(keys, 40) == leveldb_create(*policy, keys));
    }
  }
}

TEST_CASE("create_filter writes LevelDB's bytes over its length schedule",
          "[leveldb][format]") {
  std::mt19937_64 rng(2);
  // The full schedule (0, 1..10, ..., 2000..10000) at bits_per_key values that cover
  // k = 1 (1 bit), the 64-bit minimum, LevelDB's default 10, and k = 30 (44 > 30 / 0.69).
  for (int bits_per_key : {0, 1, 2, 7, 10, 23, 40, 44}) {
    cross_check(0, bits_per_key, rng, 100);
    for (std::size_t n : length_schedule()) cross_check(n, bits_per_key, rng, 100);
  }
}

TEST_CASE("create_filter writes LevelDB's bytes for random sizes and bits per key",
          "[leveldb][format]") {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<std::size_t> size(0, 10'000);
  std::uniform_int_distribution<int> bits_per_key(1, 40);
  for (int round = 0; round < 120; ++round) cross_check(size(rng), bits_per_key(rng), rng, 300);
  // Every bits_per_key 1..40 at least once, at small sizes where the 64-bit floor and
  // byte rounding matter.
  for (int b = 1; b <= 40; ++b) {
    for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{13}}) {
      cross_check(n, b, rng, 50);
    }
  }
}

TEST_CASE("key_may_match agrees with LevelDB on LevelDB's blobs and on garbage",
          "[leveldb][format]") {
  std::mt19937_64 rng(4);
  const auto policy = leveldb_policy(10);  // KeyMayMatch reads k from the blob
  const std::vector<std::string> probes = random_keys(200, rng);

  SECTION("blobs made by LevelDB at other bits_per_key") {
    for (int b : {1, 5, 10, 20, 33}) {
      const auto maker = leveldb_policy(b);
      const std::string blob = leveldb_create(*maker, random_keys(500, rng));
      for (const auto& key : probes) {
        REQUIRE(lf::key_may_match(key, blob) == leveldb_match(*policy, key, blob));
      }
    }
  }
  SECTION("random bytes of every short length and random probe counts") {
    std::size_t matched = 0;
    std::size_t rejected = 0;
    for (std::size_t length = 0; length < 300; ++length) {
      std::string blob(length, '\0');
      for (auto& c : blob) c = static_cast<char>(rng() & 0xff);
      // Half of them carry a probe count LevelDB probes with (0..30), half a reserved one.
      if (length > 0 && length % 2 == 0) blob.back() = static_cast<char>(rng() % 31);
      for (const auto& key : probes) {
        const bool mine = lf::key_may_match(key, blob);
        REQUIRE(mine == leveldb_match(*policy, key, blob));
        (mine ? matched : rejected) += 1;
      }
    }
    CHECK(matched > 0);
    CHECK(rejected > 0);
  }
  SECTION("the reading rules") {
    CHECK_FALSE(lf::key_may_match("a", ""));
    CHECK_FALSE(lf::key_may_match("a", std::string_view("\x05", 1)));
    CHECK(lf::key_may_match("a", std::string_view("\0\0\0\0\0\0\0\0\x1f", 9)));  // k = 31
    CHECK(lf::key_may_match("a", std::string_view("\0\0\0\0\0\0\0\0\xff", 9)));  // k = 255
    CHECK(lf::key_may_match("a", std::string_view("\0\0\0\0\0\0\0\0\0", 9)));    // k = 0
    CHECK_FALSE(lf::key_may_match("a", std::string_view("\0\0\0\0\0\0\0\0\x1e", 9)));
  }
}

TEST_CASE("LevelDB's bloom quality checks hold for segbloom's writer", "[leveldb][format]") {
  // LevelDB's bloom_test: 4-byte little-endian integer keys i, absent keys i + 10^9,
  // 10 bits per key; each filter's rate over 10 000 absent keys is at most 2 %, and
  // filters over 1.25 % ("mediocre") are at most a fifth of the others.
  const auto key_of = [](std::uint32_t i) {
    std::string s(4, '\0');
    for (int b = 0; b < 4; ++b) s[b] = static_cast<char>((i >> (8 * b)) & 0xff);
    return s;
  };
  int mediocre = 0;
  int good = 0;
  for (std::size_t n : length_schedule()) {
    std::vector<std::string> keys;
    for (std::uint32_t i = 0; i < n; ++i) keys.push_back(key_of(i));
    const std::string filter = segbloom_create(keys, 10);
    CHECK(filter.size() <= n * 10 / 8 + 40);
    for (const auto& key : keys) REQUIRE(lf::key_may_match(key, filter));
    int hits = 0;
    for (std::uint32_t i = 0; i < 10'000; ++i) hits += lf::key_may_match(key_of(i + 1'000'000'000), filter);
    const double rate = hits / 10'000.0;
    INFO("length " << n << ", rate " << rate);
    CHECK(rate <= 0.02);
    (rate > 0.0125 ? mediocre : good) += 1;
  }
  INFO("good " << good << ", mediocre " << mediocre);
  CHECK(mediocre * 5 <= good);
}

TEST_CASE("FilterBuilder finishes into create_filter's bytes", "[leveldb][format]") {
  std::mt19937_64 rng(5);
  const std::vector<std::string> keys = random_keys(3000, rng);
  lf::FilterBuilder builder(12);
  CHECK(builder.bits_per_key() == 12);
  for (const auto& key : keys) builder.add(key);
  CHECK(builder.size() == keys.size());
  std::string blob = "keep";
  builder.finish(&blob);
  CHECK(blob == segbloom_create(keys, 12, "keep"));
  CHECK(builder.size() == 0);  // finish starts over
  CHECK(builder.finish() == segbloom_create({}, 12));
  builder.add("x");
  builder.reset();
  CHECK(builder.size() == 0);
}

TEST_CASE("leveldb_format rejects bad arguments with documented exceptions",
          "[leveldb][format]") {
  const std::vector<std::string_view> keys{"a", "b"};
  std::string dst;
  CHECK_THROWS_AS(lf::create_filter(keys, -1, &dst), std::invalid_argument);
  CHECK_THROWS_AS(lf::create_filter(keys, 10, nullptr), std::invalid_argument);
  CHECK_THROWS_AS(lf::FilterBuilder(-3), std::invalid_argument);
  CHECK_THROWS_AS(lf::filter_bits(SIZE_MAX / 2, 10), std::length_error);
  CHECK(dst.empty());
  CHECK(lf::filter_bits(0, 10) == 64);
  CHECK(lf::filter_bits(7, 10) == 72);
  CHECK(lf::probes_for_bits_per_key(0) == 1);
  CHECK(lf::probes_for_bits_per_key(10) == 6);
  CHECK(lf::probes_for_bits_per_key(44) == 30);
  CHECK(lf::probes_for_bits_per_key(1000) == 30);
}

TEST_CASE("Remainder32 equals h % bits for every size the format can have",
          "[leveldb][format]") {
  std::mt19937_64 rng(6);
  const std::uint64_t edges[] = {1, 2, 3, 7, 8, 64, 65, 1000, 4096, 0x7fffffff, 0x80000000,
                                 0xfffffffe, 0xffffffff, 0x100000000, 0x100000001,
                                 0x200000000, ~std::uint64_t{0} / 8 * 8};
  std::vector<std::uint64_t> sizes(std::begin(edges), std::end(edges));
  for (int i = 0; i < 200; ++i) sizes.push_back(1 + rng() % 0x200000000);
  for (const std::uint64_t bits : sizes) {
    const lf::Remainder32 remainder(bits);
    for (int i = 0; i < 2000; ++i) {
      const auto h = static_cast<std::uint32_t>(i < 4 ? std::uint32_t{0} - i : rng());
      INFO("bits " << bits << ", h " << h);
      REQUIRE(remainder(h) == h % bits);
    }
  }
}

TEST_CASE("the FilterPolicy adapter is interchangeable with LevelDB's", "[leveldb][format]") {
  std::mt19937_64 rng(7);
  for (int b : {1, 10, 40}) {
    const auto theirs = leveldb_policy(b);
    const auto ours = segbloom::new_leveldb_filter_policy(b);
    CHECK(std::string(ours->Name()) == theirs->Name());
    CHECK(std::string(ours->Name()) == "leveldb.BuiltinBloomFilter2");
    const std::vector<std::string> keys = random_keys(2000, rng);
    const std::string blob = leveldb_create(*theirs, keys, "x");
    CHECK(leveldb_create(*ours, keys, "x") == blob);
    for (const auto& key : random_keys(500, rng)) {
      REQUIRE(leveldb_match(*ours, key, blob) == leveldb_match(*theirs, key, blob));
    }
    std::string none = "y";
    ours->CreateFilter(nullptr, 0, &none);
    std::string none_theirs = "y";
    theirs->CreateFilter(nullptr, 0, &none_theirs);
    CHECK(none == none_theirs);
  }
  CHECK_THROWS_AS(segbloom::LevelDbFilterPolicy(-1), std::invalid_argument);
}
