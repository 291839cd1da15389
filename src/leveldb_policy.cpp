#include "segbloom/leveldb_policy.hpp"

#include <cstddef>
#include <string_view>

#include "segbloom/leveldb_format.hpp"

namespace segbloom {

LevelDbFilterPolicy::LevelDbFilterPolicy(int bits_per_key) : bits_per_key_(bits_per_key) {
  (void)leveldb_format::filter_bits(0, bits_per_key);  // throws when negative
}

const char* LevelDbFilterPolicy::Name() const { return leveldb_format::kPolicyName; }

void LevelDbFilterPolicy::CreateFilter(const leveldb::Slice* keys, int n, std::string* dst) const {
  const std::size_t count = n > 0 ? static_cast<std::size_t>(n) : 0;
  leveldb_format::append_filter(count, bits_per_key_, dst, [keys](std::size_t i) {
    return leveldb_format::hash(keys[i].data(), keys[i].size(), leveldb_format::kBloomSeed);
  });
}

bool LevelDbFilterPolicy::KeyMayMatch(const leveldb::Slice& key,
                                      const leveldb::Slice& filter) const {
  return leveldb_format::key_may_match(std::string_view(key.data(), key.size()),
                                       std::string_view(filter.data(), filter.size()));
}

std::unique_ptr<const leveldb::FilterPolicy> new_leveldb_filter_policy(int bits_per_key) {
  return std::make_unique<const LevelDbFilterPolicy>(bits_per_key);
}

}  // namespace segbloom
